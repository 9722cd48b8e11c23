// A suite report's tables (ccbench.report): a click on a header sorts the rows by that column
// (again: the other way), and the box above a table keeps the rows whose text contains what is typed.
// Numeric cells carry their value in data-v, so "9.5" sorts before "10" and "—" sorts last.
(function () {
  "use strict";
  function key(cell) {
    if (cell === undefined) return { num: false, v: "" };
    var v = cell.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(Number(v))) return { num: true, v: Number(v) };
    var text = cell.textContent.trim();
    var n = /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : NaN; // row numbers and plain counts
    return isNaN(n) ? { num: false, v: text } : { num: true, v: n };
  }
  function compare(a, b) {
    if (a.num && b.num) return a.v - b.v;
    if (a.num !== b.num) return a.num ? -1 : 1; // numbers before text ("—", "failed")
    return a.v < b.v ? -1 : a.v > b.v ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.classList.add("sort");
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var down = th.getAttribute("aria-sort") === "ascending";
        table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var c = compare(key(a.cells[col]), key(b.cells[col]));
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); }); // a stable sort: ties keep their order
      });
    });
    var filter = table.parentNode.previousElementSibling;
    if (filter !== null && filter.classList.contains("filter")) {
      filter.addEventListener("input", function () {
        var q = filter.value.trim().toLowerCase();
        Array.prototype.forEach.call(body.rows, function (r) {
          r.hidden = q !== "" && r.textContent.toLowerCase().indexOf(q) < 0;
        });
      });
    }
  });
})();
