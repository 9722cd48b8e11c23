"""A run's web page, ``report.html`` in its result directory: figures the browser draws from the run's data.

The page carries its data as JSON in a ``<script type="application/json">``
element (so it opens from ``file://``, where a page cannot fetch files), its
time and value columns beside it as base64 of float64 and float32 (written
in microseconds where the same numbers as JSON text took a short run's page
most of its time), and loads the charting library from ``assets/`` beside
it, copied there from the package: the page never reaches the network.

The charting library is uPlot (MIT licence, about 50 KB minified, no
dependencies), installed from the npm registry by ``make build`` (pinned in
``web/package-lock.json``) and copied into ``ccbench/_web/``. It draws to a
canvas and brings drag to zoom, a legend that reads out the values under the
cursor and toggles series on click, and cursor sync between charts. Its
published benchmark (166 650 points, in its README) renders in 34 ms from a
48 KB library, where Chart.js 4 takes 38 ms from 254 KB with five times the
script time on mouse moves, and Plotly.js 310 ms from 3.6 MB.

Each figure is a list of series on one shared time column. A figure with more
samples than the page needs is decimated here, not in the browser: the run's
time is cut into buckets (:data:`BUCKETS`, fewer when a figure has many series)
and each bucket of each series keeps its minimum and maximum, so peaks and
dips survive and a 240 s run at 1 Gbit/s embeds under 1 MB. The arrays are
the core's work (``ccbench_core::metrics::chart``, ``ccbench._core.page_chart``):
no NumPy, no matplotlib, and for a run just simulated no Polars and no file
read either: the core hands over the per-packet tables' minimum and maximum
per fine bucket and the series tables whole (``Result.page_buckets``,
``Tables.native``). A result loaded from disk has its tables read with Polars,
a large one in batches of a million rows (so a per-packet table is never
held whole).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccbench.core.png import write_figure

if TYPE_CHECKING:
    import polars as pl

    #: A table the page draws from: the core's columns ``{name: (dtype, bytes)}`` when it handed the
    #: table over, else the table read (Polars) or a scan of its file.
    Table = Mapping[str, tuple[str, bytes]] | pl.DataFrame | pl.LazyFrame

    from ccbench.simulate.results import Result, Tables

__all__ = ["ASSETS", "ASSETS_DIR", "BUCKETS", "JS_DIR", "PAGE_FIGURES", "PAGE_FILE", "RUN_PAGE_MODULES", "assets_dir", "copy_assets", "page_data", "result_html",
           "write_page"]

PAGE_FILE = "report.html"
#: What writing a page imports, for a command to load while the core simulates (no NumPy: the core makes the arrays).
RUN_PAGE_MODULES = ("array", "base64", "html")
#: Files of the charting library a page loads, from ``assets/`` beside it.
ASSETS = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE")
ASSETS_DIR = "assets"
#: Buckets per series at most: a min and a max each, about two points per pixel column of a wide screen.
#: A figure with more series gets a divisor of it (whole fine buckets merged); the core's page
#: buckets (``ccbench_core::metrics::extremes::FINE``) are these.
BUCKETS = 2000
#: Points a figure holds at most over all its series: figures with many flows get fewer buckets.
_FIGURE_POINTS = 32_000
#: The smallest number of buckets a figure gets, however many series it has.
_MIN_BUCKETS = 200
#: Figures a page draws when asked (``write_page(figures=...)``), beside those it always draws.
PAGE_FIGURES = ("delivery_with_rtt",)
#: Rows of a table read at a time (three 8-byte columns: 24 MB).
_BATCH_ROWS = 1_000_000

# matplotlib's tab10, so a flow has the colour it has in the PNG plots
_FLOW_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_LINK_COLORS = ["#000000", "#808080", "#8b4513", "#556b2f", "#483d8b", "#008b8b"]

#: The package's folders beside the subpackages: the pages' scripts, and the charting library the build puts there.
JS_DIR = Path(__file__).resolve().parents[1] / "js"
_WEB_DIR = Path(__file__).resolve().parents[1] / "_web"


def assets_dir() -> Path | None:
    """Where the build put the charting library (``ccbench/_web``), or None if it is missing."""
    d = _WEB_DIR
    return d if all((d / name).is_file() for name in ASSETS) else None


def write_page(result: Result, directory: Path, figures: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """Write ``report.html`` and ``assets/`` into a result directory being written; return the page's path.

    ``figures`` adds figures to the page (:data:`PAGE_FIGURES`) with their options, e.g.
    ``{"delivery_with_rtt": {"rtt": (20, 70)}}``. Without the built assets the page is still
    written, and says how to get them.
    """
    have = copy_assets(directory)
    page = directory / PAGE_FILE
    page.write_text(page_html(result, assets=have, figures=figures), encoding="utf-8")
    return page


def copy_assets(directory: Path) -> bool:
    """Put the charting library into ``directory/assets/`` (for a page there); False if it is not built."""
    src = assets_dir()
    if src is None:
        return False
    dest = directory / ASSETS_DIR
    dest.mkdir(exist_ok=True)
    for name in ASSETS:
        _link_or_copy(src / name, dest / name)
    return True


def _link_or_copy(src: Path, dest: Path) -> None:
    # A hard link costs no space for the hundreds of runs of a suite; a copy across file systems.
    dest.unlink(missing_ok=True)  # a page written again
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def page_html(result: Result, *, assets: bool = True, figures: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The page: headline, the figures (drawn by the browser) and the run's summary tables."""
    import html
    s = result.summary
    title = f"{s.get('scenario', 'run')} (seed {s.get('seed')})"
    figures_json, columns = _encoded(_page(result, figures))
    data = json.dumps(figures_json, separators=(",", ":"), allow_nan=False)
    data = data.replace("</", "<\\/")  # a flow named "</script>" must not end the element
    missing = ("" if assets else
               '<p class="missing" id="ccbench-missing">The charting library is missing: this ccbench was '
               "installed without its web assets. Run <code>make build</code> (npm installs uPlot into "
               "<code>python/ccbench/_web/</code>), then <code>ccbench run</code> again or save the result "
               "again. The run's data is complete in the Parquet files beside this page.</p>")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)} — ccbench run</title>",
        f'<link rel="stylesheet" href="{ASSETS_DIR}/uPlot.min.css">' if assets else "",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(str(s.get('scenario', 'run')))}</h1>",
        f'<p class="sub">seed {html.escape(str(s.get("seed")))}, {s.get("duration_s")} s simulated. '
        "Drag across a figure to zoom (all figures follow), double-click to zoom out; click a legend entry "
        "to hide or show that series in every figure.</p>",
        missing,
        '<div id="charts"></div>',
        "<h2>Summary</h2>",
        result_html(result, plot=False),
        f'<script src="{ASSETS_DIR}/uPlot.iife.min.js"></script>' if assets else "",
        f'<script type="application/json" id="ccbench-data">{data}</script>',
        f'<script type="text/plain" id="ccbench-columns">{chr(10).join(columns)}</script>',
        f"<script>{(JS_DIR / 'run.js').read_text(encoding='utf-8')}</script>",
        "</body></html>",
    ]) + "\n"


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 90em;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } .sub { color: #555; }
.missing { background: #fff3cd; border: 1px solid #e0c46c; padding: 0.6em; }
figure.chart { margin: 0.8em 0; } .uplot .u-title { font-size: 1em; font-weight: 600; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #e4e4e4; text-align: right; white-space: nowrap; }
.ccbench-result { overflow-x: auto; }
"""


# --- the data -----------------------------------------------------------------------------------


def page_data(result: Result, figures: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """What the page draws: ``{"duration", "warmup", "charts": [{"id", "title", "unit", "x", "series"}]}``,
    each series ``{"label", "group", "color", "dash", "y"}`` with ``y`` aligned on the chart's ``x``
    (``None`` where the series has no point). A chart with a right axis has ``"right": {"unit", "range"}``
    and its series there ``"axis": "right"``; ``"range"`` fixes an axis (``[bottom, top]``).
    ``figures`` adds the :data:`PAGE_FIGURES` it names, first."""
    data = _page(result, figures)
    return {**data, "charts": [{**c, "x": _floats(c["x"]),
                                "series": [{**_meta(sr), "y": [None if v != v else v for v in _floats(sr["y"])]}
                                           for sr in c["series"]]}
                               for c in data["charts"]]}


def _encoded(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """:func:`page_data` as the page embeds it: the figures as JSON with each ``x`` and ``y`` the index
    of a column, and the columns as lines of base64: times as little-endian float64, values
    (four significant figures) as float32, NaN where a series has no point; run.js turns them back
    into arrays. Kept out of the JSON text, the columns cost next to nothing to write, where the same
    numbers as JSON took most of a short run's page."""
    import base64

    columns: list[str] = []

    def column(b: bytes) -> int:
        columns.append(base64.b64encode(b).decode("ascii"))
        return len(columns) - 1

    charts = [{**c, "x": column(c["x"]), "series": [{**_meta(sr), "y": column(sr["y32"])} for sr in c["series"]]}
              for c in data["charts"]]
    return {**data, "charts": charts}, columns


#: What a drawn series carries beside what the page shows: its values as float32 and its largest value.
_PRIVATE = ("y32", "max")


def _meta(series: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in series.items() if k not in _PRIVATE}


def _floats(b: bytes) -> list[float]:
    """Little-endian float64 bytes as a list."""
    from array import array

    a = array("d")
    a.frombytes(b)
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


def _page(result: Result, figures: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """:func:`page_data` with ``x`` and each series' ``y`` as float64 bytes, NaN where a series has no
    point (and its values as float32, ``y32``, and the largest, ``max``)."""
    s = result.summary
    duration = float(s.get("duration_s") or 0.0)
    flows = [str(f.get("id")) for f in s.get("flows", [])]
    links = [str(link.get("id")) for link in s.get("links", [])]
    probes = [str(p.get("id")) for p in s.get("probes", [])]
    media = [i for i, f in enumerate(s.get("flows", [])) if f.get("kind") == "media"]
    two_queue = {i for i, link in enumerate(s.get("links", [])) if link.get("sojourn_l_ms") is not None}
    t = result.tables

    def flow(i: int, suffix: str = "", dash: list[int] | None = None) -> dict[str, Any]:
        return {"label": _name(flows, i) + suffix, "group": f"flow {i}",
                "color": _FLOW_COLORS[i % len(_FLOW_COLORS)], "dash": dash}

    series = _series(t, "flow_series", ["time_s", "flow", "throughput_mbps", "goodput_mbps", "cwnd_pkts", "srtt_ms"])
    probe_rtt = _series(t, "probes", ["time_s", "probe", "rtt_ms"])

    def per_flow(column: str) -> list[Part]:
        src = Source(series, "flow", column)
        return [(src, i, flow(i)) for i in range(len(flows))]

    charts = []
    rate = "throughput_mbps" if "throughput_mbps" in _names(series) else "goodput_mbps"
    for name, options in (figures or {}).items():
        if name not in PAGE_FIGURES:
            raise ValueError(f"unknown page figure {name!r} (known: {', '.join(PAGE_FIGURES)})")
        stops = [f.get("stop_s") for f in s.get("flows", [])]
        charts.append(_delivery_chart(series, probe_rtt, rate, flows, probes, stops, flow, duration, **options))
    charts.append(_chart("throughput", "Throughput per flow (payload received in any order)", "Mbit/s",
                         per_flow(rate), duration))
    charts.append(_chart("goodput", "Goodput per flow (in-order delivery)", "Mbit/s",
                         per_flow("goodput_mbps"), duration))
    charts.append(_chart("cwnd", "Congestion window", "packets", per_flow("cwnd_pkts"), duration))

    rtt: list[Part] = []
    samples = Source(lambda: _per_packet(t, "rtt", ["time_s", "flow", "rtt_ms"]), "flow", "rtt_ms",
                     result.page_buckets.get("rtt"))
    srtt = Source(series, "flow", "srtt_ms")
    for i in range(len(flows)):
        rtt += [(samples, i, flow(i, " samples")), (srtt, i, flow(i, " sRTT", [6, 3]))]
    pings = Source(probe_rtt, "probe", "rtt_ms")
    rtt += [(pings, j, {"label": f"{probes[j]} (probe)", "group": f"probe {j}",
                        "color": _FLOW_COLORS[(len(flows) + j) % len(_FLOW_COLORS)], "dash": [2, 2]})
            for j in range(len(probes))]
    charts.append(_chart("rtt", "RTT: per-ACK samples and the sender's sRTT (dashed), pings", "ms", rtt, duration))

    sojourn = Source(lambda: _per_packet(t, "sojourn", ["time_s", "link", "class", "sojourn_ms"]), "link",
                     "sojourn_ms", result.page_buckets.get("sojourn"), class_key=True)
    delay = []
    for k in range(len(links)):
        for cls in ((0, 1) if k in two_queue else (0,)):
            label = _name(links, k) + ((" L" if cls else " C") if k in two_queue else "")
            delay.append((sojourn, 2 * k + cls, {"label": label, "group": f"link {k}",
                                                 "color": _LINK_COLORS[k % len(_LINK_COLORS)],
                                                 "dash": [6, 3] if cls else None}))
    charts.append(_chart("queue_delay", "Queue delay per link (sojourn time of each dequeued packet)", "ms",
                         delay, duration))
    backlog = Source(_series(t, "link_series", ["time_s", "link", "backlog_pkts"]), "link", "backlog_pkts")
    charts.append(_chart("backlog", "Backlog per link", "packets",
                         [(backlog, k, {"label": _name(links, k), "group": f"link {k}",
                                        "color": _LINK_COLORS[k % len(_LINK_COLORS)], "dash": None})
                          for k in range(len(links))], duration))
    if media:
        media_series = _series(t, "media_series", ["time_s", "flow", "target_mbps", "tx_mbps"])
        target = Source(media_series, "flow", "target_mbps")
        tx = Source(media_series, "flow", "tx_mbps")
        parts: list[Part] = []
        for i in media:
            parts += [(target, i, flow(i, " target", [6, 3])), (tx, i, flow(i, " sent"))]
        charts.append(_chart("media", "Media (SCReAM): encoder target and transmitted RTP rate", "Mbit/s",
                             parts, duration))
    return {"duration": duration, "warmup": float(s.get("warmup_s") or 0.0),
            "charts": [c for c in charts if c["series"]]}


def _delivery_chart(series: Table, probe_rtt: Table, rate: str, flows: Sequence[str],
                    probes: Sequence[str], stops: Sequence[Any], flow: Any, duration: float,
                    throughput: tuple[float, float] | None = None,
                    rtt: tuple[float, float | str] | None = None) -> dict[str, Any]:
    """flent's ``tcp_delivery_with_rtt`` as the SCE/L4S reports drew it: each flow's delivery rate
    (left axis), its sRTT (dashed, until the flow stops) and each probe's RTT (right axis).
    ``throughput`` and ``rtt`` fix the axes (Mbit/s, ms), the top of ``rtt`` possibly ``"Nx"``:
    (highest RTT − bottom) · N + bottom, as :func:`ccbench.simulate.plot.delivery_with_rtt` reads it."""
    delivery = Source(series, "flow", rate)
    srtt = Source(series, "flow", "srtt_ms", until=[math.inf if x is None else float(x) for x in stops])
    pings = Source(probe_rtt, "probe", "rtt_ms")
    parts: list[Part] = [(delivery, i, flow(i, " delivery rate")) for i in range(len(flows))]
    right: list[Part] = [(srtt, i, {**flow(i, " TCP RTT", [6, 3]), "axis": "right"}) for i in range(len(flows))]
    right += [(pings, j, {"label": f"{probes[j]} ICMP RTT", "group": f"probe {j}", "axis": "right",
                          "color": _FLOW_COLORS[(len(flows) + j) % len(_FLOW_COLORS)], "dash": None})
              for j in range(len(probes))]
    chart = _chart("delivery_with_rtt", "Delivery rate and RTT (flent tcp_delivery_with_rtt)", "Mbit/s",
                   parts + right, duration)
    highest = max((sr["max"] for sr in chart["series"] if sr.get("axis") == "right" and sr["max"] is not None),
                  default=0.0)
    rtt_range: list[float] | None = None
    if rtt is not None:
        lo, hi = float(rtt[0]), rtt[1]
        top = (max(highest, lo + 1e-3) - lo) * float(hi.rstrip("x")) + lo if isinstance(hi, str) else float(hi)
        rtt_range = [lo, top]
    chart["range"] = list(throughput) if throughput is not None else None
    chart["right"] = {"unit": "ms", "range": rtt_range}
    return chart


def _name(names: Sequence[str], i: int) -> str:
    return names[i] if i < len(names) else f"#{i}"


def _series(t: Tables, name: str, columns: Sequence[str]) -> Table:
    """Those of ``columns`` a series table has: as the core handed it over (no Polars), else read
    from its file once; one of more than a batch's rows (many flows, a long run) as a scan, read
    in batches as the per-packet tables are."""
    native = t.native(name, columns)
    return native if native is not None else t.read(name, columns, _BATCH_ROWS)


def _per_packet(t: Tables, name: str, columns: Sequence[str]) -> Table:
    """A per-packet table to read: as the core handed it over (a short run's, drawn raw), else a
    scan of its file."""
    native = t.native(name, columns)
    return native if native is not None else t.lazy(name)


def _names(table: Table) -> list[str]:
    return list(table) if isinstance(table, Mapping) else table.collect_schema().names()


class Source:
    """One table's ``time_s``, ``key`` (an id: flow, link) and ``value`` columns as a figure draws
    them; ``rows`` is its row count. With ``class_key`` the key is ``key · 2 + class`` (a link's
    queue: DualPI2's L queue is class 1); ``until`` drops each key's rows after its time there
    (a flow past the list keeps all). A table read from a file is read once however many figures
    draw from it, in batches of at most :data:`_BATCH_ROWS` rows when larger.

    ``buckets``: the core's minimum and maximum per fine bucket of this table (``Result.page_buckets``,
    ``{"rows", "keys": {k: (lo bytes, hi bytes)}}``); then the table is read only if drawn raw.
    """

    def __init__(self, table: Table | Callable[[], Table], key: str, value: str,
                 buckets: Mapping[str, Any] | None = None, *, class_key: bool = False,
                 until: Sequence[float] | None = None) -> None:
        self.key, self.value, self._table = key, value, table
        self.cls = "class" if class_key else None
        self.until = list(until) if until is not None else None
        self.fine: dict[int, tuple[bytes, bytes]] | None = None
        self._whole: tuple[Any, ...] | None = None  # the row columns, once read
        if buckets is not None:  # the core's buckets: the table is read only if drawn raw
            self.rows = int(buckets["rows"])
            self.fine = {int(k): (lo, hi) for k, (lo, hi) in buckets["keys"].items()}
            return
        table = self._load()
        if table is None:
            self.rows = 0
        elif isinstance(table, Mapping):
            self.rows = len(table["time_s"][1]) // 8
        else:
            # one read for a small table: it is whole if it has no more than a batch's rows
            head = table.head(_BATCH_ROWS + 1).collect()
            if head.height <= _BATCH_ROWS:
                self.rows, self._whole = head.height, self._columns(head)
            else:
                import polars as pl

                self.rows = int(table.select(pl.len()).collect().item())

    def _load(self) -> pl.LazyFrame | Mapping[str, tuple[str, bytes]] | None:
        """The table: the core's columns, a scan of the columns drawn, or None if it lacks one of them."""
        table = self._table() if callable(self._table) else self._table
        wanted = ["time_s", self.key, self.value]
        names = _names(table)
        if not set(wanted) <= set(names):
            return None
        cls = [self.cls] if self.cls in names else []
        if isinstance(table, Mapping):  # whole in memory: no query
            n = len(table["time_s"][1]) // 8
            queue = (table[self.cls] if cls else ("u32", bytes(4 * n))) if self.cls else None  # no class: 0
            self._whole = (table["time_s"], table[self.key], table[self.value], queue)
            return table
        return table.lazy().select(*wanted, *cls)

    def _columns(self, df: pl.DataFrame) -> tuple[Any, ...]:
        if self.cls is None:
            cls = None
        else:  # no class column: 0
            cls = _column_bytes(df, self.cls, "i64") if self.cls in df.columns else ("i64", bytes(8 * df.height))
        return (_column_bytes(df, "time_s", "f64"), _column_bytes(df, self.key, "i64"),
                _column_bytes(df, self.value, "f64"), cls)

    def arg(self, raw: bool, keys: Sequence[int], span: float) -> tuple[Any, ...]:
        """The source as ``ccbench._core.page_chart`` takes it: its rows, or fine buckets of them."""
        if not raw and self.fine is not None:
            return ("fine", self.fine)
        if self._whole is None:
            q = self._load()
            if q is None:
                return ("rows", ("f64", b""), ("i64", b""), ("f64", b""), None, None)
            if self._whole is None and raw:  # a scan of a few rows
                self._whole = self._columns(q.collect())
            elif self._whole is None:  # a scan, read a batch at a time
                from ccbench import _core

                acc = _core.PageFine(list(keys), span)
                for df in q.collect_batches(chunk_size=_BATCH_ROWS):
                    acc.add(*self._columns(df), self.until)
                self.fine = acc.finish()
                return ("fine", self.fine)
        return ("rows", *self._whole, self.until)


def _column_bytes(df: pl.DataFrame, name: str, kind: str) -> tuple[str, bytes]:
    """A Polars column as ``(kind, little-endian bytes)`` (kind "f64" or "i64")."""
    import polars as pl

    s = df.get_column(name).cast(pl.Float64 if kind == "f64" else pl.Int64)
    return kind, s.to_numpy().astype("<f8" if kind == "f64" else "<i8", copy=False).tobytes()


#: A figure's series: the source it comes from, its key there, and how it is drawn (label, group, colour, dash).
Part = tuple[Source, int, dict[str, Any]]


def _chart(cid: str, title: str, unit: str, parts: Sequence[Part], duration: float) -> dict[str, Any]:
    """One figure: its series on one time column, raw if the figure has few enough points, else decimated
    (``ccbench_core::metrics::chart``).

    Decimated, each series keeps each bucket's minimum (at the bucket's start) and maximum (at its
    middle): fixed times, so a figure's series share their time column. The per-packet tables are
    read in batches, so a table of tens of millions of rows is never held whole.
    """
    from ccbench import _core

    empty = {"id": cid, "title": title, "unit": unit, "x": b"", "series": []}
    if not parts:
        return empty
    sources = list({id(src): src for src, _, _ in parts}.values())
    wanted = max(_MIN_BUCKETS, min(BUCKETS, _FIGURE_POINTS // (2 * max(1, len(parts)))))
    buckets = next(d for d in range(wanted, 0, -1) if BUCKETS % d == 0)  # merges whole fine buckets
    # Raw points only while the figure's time column stays within the budget: series sampled at
    # different times (per-ACK RTT of several flows) would otherwise make it a sparse union.
    raw = sum(src.rows for src in sources) <= 2 * buckets
    span = duration if duration > 0 else 1.0
    index = {id(src): i for i, src in enumerate(sources)}
    keys = {id(src): sorted({k for s, k, _ in parts if s is src}) for src in sources}
    x, drawn = _core.page_chart([(index[id(src)], k) for src, k, _ in parts],
                                [src.arg(raw, keys[id(src)], span) for src in sources], raw, buckets, span)
    series = [{**meta, "y": d[0], "y32": d[1], "max": d[2]} for (_, _, meta), d in zip(parts, drawn) if d is not None]
    return {**empty, "x": x, "series": series} if series else empty


def result_html(result: Result, *, plot: bool = True) -> str:
    """A run as HTML: headline, summary tables and (with ``plot``) timeseries.png inline."""
    import base64
    import html
    import io

    s = result.summary
    head = (f"<b>{html.escape(str(s.get('scenario')))}</b> seed {s.get('seed')}, "
            f"{s.get('duration_s')} s simulated")
    if s.get("warmup_s"):
        head += f", first {s['warmup_s']} s warm-up (left out of the statistics)"
    parts = [f"<div class=\"ccbench-result\"><p>{head}</p>"]
    for title in ("flows", "links", "probes"):
        columns, rows = result.summary_table(title)
        if not rows:
            continue
        cells = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_html_value(v))}</td>" for v in row) + "</tr>"
                       for row in rows)
        parts.append(f"<p><b>{title}</b></p><table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>")
    if plot:
        buf = io.BytesIO()
        write_figure(result.plot(), buf, dpi=80)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        parts.append(f'<img alt="time series of {html.escape(str(s.get("scenario")))}" '
                     f'src="data:image/png;base64,{data}">')
    parts.append("</div>")
    return "".join(parts)


def _html_value(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
