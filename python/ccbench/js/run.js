// A run page's figures (ccbench.runpage): one uPlot chart per figure of the embedded data.
// The charts share the cursor and the x range, and a legend click hides or shows a series'
// group (a flow, a link) in every chart. window.ccbenchCharts lists the charts (tests read it).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ccbench-data").textContent);
  // The figures name their columns by index; each column is a line of base64 of little-endian
  // floats (ccbench.simulate.page._encoded): times float64, values float32 (four significant
  // figures, rounded back to them here), NaN where a series has no point.
  var columns = document.getElementById("ccbench-columns").textContent.split("\n");
  function column(index, Floats, digits) {
    var bin = atob(columns[index]), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var f = new Floats(bytes.buffer), out = new Array(f.length);
    for (var j = 0; j < f.length; j++) out[j] = f[j] !== f[j] ? null : digits ? +f[j].toPrecision(digits) : f[j];
    return out;
  }
  data.charts.forEach(function (c) {
    c.x = column(c.x, Float64Array, 0);
    c.series.forEach(function (s) { s.y = column(s.y, Float32Array, 7); });
  });
  var box = document.getElementById("charts");
  var charts = [];
  window.ccbenchCharts = charts;
  if (typeof uPlot === "undefined") {
    var note = document.getElementById("ccbench-missing");
    if (note === null) {
      note = document.createElement("p");
      note.className = "missing";
      note.textContent = "The charting library (assets/uPlot.iife.min.js) did not load: run `make build` and save the run again.";
      box.appendChild(note);
    }
    return;
  }
  var groups = new Map(); // chart -> group of each series (index 0: time)
  var following = false; // set while one chart's change is applied to the others

  function number(u, v) {
    if (v == null) return "—";
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
  }
  function width() {
    return Math.max(480, box.clientWidth - 8);
  }

  function followScale(u, key) {
    if (key !== "x" || following) return;
    following = true;
    var min = u.scales.x.min, max = u.scales.x.max;
    charts.forEach(function (o) { if (o !== u) o.setScale("x", { min: min, max: max }); });
    following = false;
  }

  function followSeries(u, i, opts) {
    if (following || i == null || opts.show === undefined) return;
    var group = groups.get(u)[i];
    following = true;
    charts.forEach(function (o) {
      groups.get(o).forEach(function (g, j) {
        if (j > 0 && g === group && o.series[j].show !== opts.show) o.setSeries(j, { show: opts.show });
      });
    });
    following = false;
  }

  data.charts.forEach(function (c) {
    var el = document.createElement("figure");
    el.className = "chart";
    el.id = "chart-" + c.id;
    box.appendChild(el);
    var series = [{ label: "time (s)", value: function (u, v) { return v == null ? "—" : v.toFixed(3); } }];
    c.series.forEach(function (s) {
      series.push({ label: s.label, stroke: s.color, width: 1.25, spanGaps: true, scale: s.axis === "right" ? "r" : "y",
                    dash: s.dash || undefined, value: number });
    });
    // A fixed range ([bottom, top], e.g. a report's axis bounds) or uPlot's own.
    function range(fixed) {
      return fixed ? function () { return [fixed[0], fixed[1]]; } : undefined;
    }
    var scales = { x: { time: false, range: function (u, min, max) { return [min, max]; } }, y: { range: range(c.range) } };
    var axes = [{ label: "time (s)" }, { label: c.unit, size: 60 }];
    if (c.right) {
      scales.r = { range: range(c.right.range) };
      axes.push({ scale: "r", side: 1, label: c.right.unit, size: 60, grid: { show: false } });
    }
    var opts = {
      title: c.title + (c.right ? "" : " (" + c.unit + ")"),
      width: width(),
      height: c.right ? 320 : 240,
      cursor: { sync: { key: "ccbench-run" }, drag: { x: true, y: false } },
      scales: scales,
      axes: axes,
      series: series,
      hooks: { setScale: [followScale], setSeries: [followSeries] },
    };
    var u = new uPlot(opts, [c.x].concat(c.series.map(function (s) { return s.y; })), el);
    groups.set(u, [null].concat(c.series.map(function (s) { return s.group; })));
    charts.push(u);
  });

  var pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      charts.forEach(function (u) { u.setSize({ width: width(), height: u.height }); });
    });
  });
})();
