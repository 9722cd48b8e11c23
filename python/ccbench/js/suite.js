// A suite report's cross-run figures (ccbench.suite_figures): one uPlot chart per figure of the
// embedded data. Box charts have a run (or configuration) per x position and draw their boxes in a
// draw hook; the legend reads out the hovered run's median and quartiles. CDF charts share one
// x grid per chart; bar charts stack flow kinds. window.ccbenchCharts lists the charts (tests read it).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ccbench-suite-data").textContent);
  var box = document.getElementById("suite-charts");
  var charts = [];
  window.ccbenchCharts = charts;
  if (typeof uPlot === "undefined") {
    var note = document.createElement("p");
    note.className = "missing";
    note.id = "ccbench-missing";
    note.textContent = "The charting library (assets/uPlot.iife.min.js) did not load: run `make build`, then `ccbench report` on this directory.";
    box.appendChild(note);
    return;
  }

  function number(v) {
    if (v == null) return "—";
    var a = Math.abs(v);
    return a >= 100 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
  }
  function width() {
    return Math.max(480, box.clientWidth - 8);
  }
  // x ticks of a run axis: the Runs table's numbers (the labels are long); the read-out names the run.
  function names(c) {
    return c.axis === "config" ? data.configs : data.runs;
  }
  function runAxis(c) {
    var list = names(c);
    var step = Math.max(1, Math.ceil(list.length / 40));
    return {
      label: c.axis === "config" ? "configuration" : "run (# of the Runs table)",
      splits: function () {
        var out = [];
        for (var i = 0; i < list.length; i += step) out.push(i);
        return out;
      },
      values: function (u, splits) { return splits.map(function (i) { return String(i + 1); }); },
    };
  }
  function runSeries(c) {
    var list = names(c);
    return { label: c.axis === "config" ? "configuration" : "run",
             value: function (u, v) { return v == null || list[v] == null ? "—" : (v + 1) + ": " + list[v]; } };
  }
  function runRange(n) {
    return function () { return [-0.6, n - 0.4]; };
  }

  // Boxes as plot_suite draws them: q1–q3 box, median line, whiskers to p5/p95 with caps, seeds as dots.
  function drawBoxes(c) {
    return function (u) {
      var ctx = u.ctx, px = uPlot.pxRatio, half = c.width / 2;
      ctx.save();
      ctx.beginPath();
      ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
      ctx.clip();
      ctx.lineWidth = px;
      c.series.forEach(function (s, k) {
        if (!u.series[k + 1].show) return;
        s.stats.forEach(function (st, i) {
          if (st == null || s.pos[i] == null) return;
          var x = s.pos[i];
          var x0 = u.valToPos(x - half, "x", true), x1 = u.valToPos(x + half, "x", true);
          var xm = u.valToPos(x, "x", true), cap = (x1 - x0) / 4;
          var y = function (v) { return u.valToPos(v, "y", true); };
          ctx.fillStyle = s.color;
          ctx.strokeStyle = "#000";
          ctx.fillRect(x0, y(st[3]), x1 - x0, y(st[1]) - y(st[3]));
          ctx.strokeRect(x0, y(st[3]), x1 - x0, y(st[1]) - y(st[3]));
          ctx.beginPath();
          ctx.moveTo(xm, y(st[1])); ctx.lineTo(xm, y(st[0]));
          ctx.moveTo(xm, y(st[3])); ctx.lineTo(xm, y(st[4]));
          ctx.moveTo(xm - cap, y(st[0])); ctx.lineTo(xm + cap, y(st[0]));
          ctx.moveTo(xm - cap, y(st[4])); ctx.lineTo(xm + cap, y(st[4]));
          ctx.moveTo(x0, y(st[2])); ctx.lineTo(x1, y(st[2]));
          ctx.stroke();
          (s.dots && s.dots[i] || []).forEach(function (v) {
            ctx.beginPath();
            ctx.fillStyle = "#000";
            ctx.arc(xm, y(v), 2 * px, 0, 2 * Math.PI);
            ctx.fill();
          });
        });
      });
      ctx.restore();
    };
  }

  function boxChart(c) {
    var n = names(c).length, top = 0;
    var x = [];
    for (var i = 0; i < n; i++) x.push(i);
    var series = [runSeries(c)], ys = [];
    c.series.forEach(function (s) {
      s.stats.forEach(function (st, i) {
        if (st == null) return;
        top = Math.max(top, st[4]);
        (s.dots && s.dots[i] || []).forEach(function (v) { top = Math.max(top, v); });
      });
      ys.push(s.stats.map(function (st) { return st ? st[2] : null; }));
      series.push({ label: s.label, stroke: s.color, fill: s.color, paths: function () { return null; },
                    points: { show: false },
                    value: function (u, v, si, idx) {
                      var st = idx == null ? null : s.stats[idx];
                      return st ? number(st[2]) + " (" + number(st[1]) + "–" + number(st[3]) + ")" : "—";
                    } });
    });
    return { opts: { scales: { x: { time: false, range: runRange(n) },
                               y: { range: function () { return [0, top > 0 ? top * 1.05 : 1]; } } },
                     axes: [runAxis(c), { label: c.unit, size: 60 }], series: series,
                     cursor: { points: { show: false } }, hooks: { draw: [drawBoxes(c)] } },
             data: [x].concat(ys) };
  }

  function cdfChart(c) {
    var series = [{ label: c.unit, value: function (u, v) { return number(v); } }];
    var paths = c.step ? uPlot.paths.stepped({ align: 1 }) : undefined;
    c.series.forEach(function (s) {
      series.push({ label: s.label, stroke: s.color, width: 1.4, dash: s.dash || undefined, paths: paths,
                    value: function (u, v) { return v == null ? "—" : v.toFixed(3); } });
    });
    var xScale = { time: false };
    if (c.log) { xScale.distr = 4; xScale.asinh = 1; } // a bloated FIFO next to an AQM: log-like, zero allowed
    return { opts: { scales: { x: xScale, y: { range: [0, 1] } },
                     axes: [{ label: c.unit + (c.log ? ", log scale" : "") }, { label: "cumulative probability", size: 60 }],
                     series: series },
             data: [c.x].concat(c.series.map(function (s) { return s.y; })) };
  }

  function barChart(c) {
    var n = names(c).length, x = [];
    for (var i = 0; i < n; i++) x.push(i);
    var ys = c.series.map(function (s) { return s.y; });
    var drawn = ys;
    if (c.stacked) { // each series drawn at the sum of it and those below; the tallest first, so all show
      var sums = x.map(function () { return 0; });
      drawn = ys.map(function (y) {
        return y.map(function (v, i) { sums[i] += v || 0; return sums[i]; });
      });
    }
    var order = c.stacked ? drawn.map(function (_, k) { return k; }).reverse() : drawn.map(function (_, k) { return k; });
    var top = 0;
    drawn.forEach(function (y) { y.forEach(function (v) { if (v != null) top = Math.max(top, v); }); });
    var series = [runSeries(c)];
    order.forEach(function (k) {
      var s = c.series[k];
      series.push({ label: s.label, stroke: "#000", fill: s.color, width: 0.5,
                    paths: uPlot.paths.bars({ size: [c.stacked ? 0.6 : 0.36, 80], align: s.align || 0 }),
                    points: { show: false },
                    value: function (u, v, si, idx) { return idx == null ? "—" : number(ys[k][idx]); } });
    });
    return { opts: { scales: { x: { time: false, range: runRange(n) },
                               y: { range: function () { return [0, top > 0 ? top * 1.05 : 1]; } } },
                     axes: [runAxis(c), { label: c.unit, size: 60 }], series: series,
                     cursor: { points: { show: false } } },
             data: [x].concat(order.map(function (k) { return drawn[k]; })) };
  }

  var kinds = { box: boxChart, cdf: cdfChart, bars: barChart };
  data.charts.forEach(function (c) {
    var el = document.createElement("figure");
    el.className = "chart";
    el.id = "chart-" + c.id;
    box.appendChild(el);
    var made = kinds[c.kind](c);
    var opts = made.opts;
    opts.title = c.kind === "cdf" ? c.title : c.title + " (" + c.unit + ")";
    opts.width = width();
    opts.height = 300;
    var u = new uPlot(opts, made.data, el);
    charts.push(u);
  });

  var pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      charts.forEach(function (u) { u.setSize({ width: width(), height: 300 }); });
    });
  });
})();
