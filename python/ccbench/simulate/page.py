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
dips survive and a 240 s run at 1 Gbit/s embeds under 1 MB. No matplotlib is
involved, and for a run just simulated no Polars and no file read either:
the core hands over the per-packet tables' minimum and maximum per fine
bucket and the series tables whole (``Result.page_buckets``,
``Tables.arrays``). Otherwise (a result loaded from disk, a series table too
large to keep) writing the page costs a pass of NumPy through each table,
read in batches of a million rows (so a per-packet table is never held whole).
"""

from __future__ import annotations

import functools
import html
import json
import math
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccbench.core.png import write_figure

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    #: A table the page draws from: its columns as arrays when it is whole in memory, else a scan.
    Table = Mapping[str, np.ndarray] | pl.LazyFrame

    from ccbench.simulate.results import Result, Tables

__all__ = ["ASSETS", "ASSETS_DIR", "BUCKETS", "JS_DIR", "PAGE_FIGURES", "PAGE_FILE", "RUN_PAGE_MODULES", "assets_dir", "copy_assets", "page_data", "result_html",
           "write_page"]

PAGE_FILE = "report.html"
#: What writing a page imports (NumPy: 70 ms or more), for a command to load while the core simulates.
RUN_PAGE_MODULES = ("numpy", "ccbench.core.arrays", "base64")
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
    return {**data, "charts": [{**c, "x": c["x"].tolist(),
                                "series": [{**sr, "y": [None if v != v else v for v in sr["y"].tolist()]}
                                           for sr in c["series"]]}
                               for c in data["charts"]]}


def _encoded(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """:func:`page_data` as the page embeds it: the figures as JSON with each ``x`` and ``y`` the index
    of a column, and the columns as lines of base64: times as little-endian float64, values
    (four significant figures) as float32, NaN where a series has no point; run.js turns them back
    into arrays. Kept out of the JSON text, the columns cost next to nothing to write, where the same
    numbers as JSON took most of a short run's page."""
    import base64

    import numpy as np

    columns: list[str] = []

    def column(a: np.ndarray, dtype: str) -> int:
        columns.append(base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii"))
        return len(columns) - 1

    charts = [{**c, "x": column(c["x"], "<f8"), "series": [{**sr, "y": column(sr["y"], "<f4")} for sr in c["series"]]}
              for c in data["charts"]]
    return {**data, "charts": charts}, columns


def _page(result: Result, figures: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """:func:`page_data` with ``x`` and ``y`` as float64 arrays, NaN where a series has no point."""
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

    def queues() -> Table:
        """The sojourn table with one key per queue: link * 2 + class (DualPI2's L queue is class 1)."""
        table = _per_packet(t, "sojourn", ["time_s", "link", "class", "sojourn_ms"])
        if isinstance(table, Mapping):
            import numpy as np

            cls = table["class"].astype(np.int64) if "class" in table else 0
            return {**table, "queue": table["link"].astype(np.int64) * 2 + cls} if "link" in table else table
        import polars as pl

        if "class" not in table.collect_schema().names():
            table = table.with_columns(pl.lit(0, pl.UInt32).alias("class"))
        return table.with_columns(queue=pl.col("link").cast(pl.Int64) * 2 + pl.col("class"))

    sojourn = Source(queues, "queue", "sojourn_ms", result.page_buckets.get("sojourn"))
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
    srtt = Source(_until_stop(series, [math.inf if x is None else float(x) for x in stops]), "flow", "srtt_ms")
    pings = Source(probe_rtt, "probe", "rtt_ms")
    parts: list[Part] = [(delivery, i, flow(i, " delivery rate")) for i in range(len(flows))]
    right: list[Part] = [(srtt, i, {**flow(i, " TCP RTT", [6, 3]), "axis": "right"}) for i in range(len(flows))]
    right += [(pings, j, {"label": f"{probes[j]} ICMP RTT", "group": f"probe {j}", "axis": "right",
                          "color": _FLOW_COLORS[(len(flows) + j) % len(_FLOW_COLORS)], "dash": None})
              for j in range(len(probes))]
    chart = _chart("delivery_with_rtt", "Delivery rate and RTT (flent tcp_delivery_with_rtt)", "Mbit/s",
                   parts + right, duration)
    import numpy as np

    right_ys = [sr["y"][np.isfinite(sr["y"])] for sr in chart["series"] if sr.get("axis") == "right"]
    highest = max((float(y.max()) for y in right_ys if len(y)), default=0.0)
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
    """Those of ``columns`` a series table has: as the core handed it over (arrays, no Polars),
    else read from its file once; one of more than a batch's rows (many flows, a long run) as a
    scan, read in batches as the per-packet tables are."""
    arrays = t.arrays(name, columns)
    if arrays is not None:
        return arrays
    import polars as pl

    got = t.read(name, columns, _BATCH_ROWS)
    return got if isinstance(got, pl.LazyFrame) else {c: got[c].to_numpy() for c in got.columns}


def _per_packet(t: Tables, name: str, columns: Sequence[str]) -> Table:
    """A per-packet table to read: its arrays when the core handed it over (a short run's, drawn raw),
    else a scan of its file."""
    arrays = t.arrays(name, columns)
    return arrays if arrays is not None else t.lazy(name)


def _names(table: Table) -> list[str]:
    return list(table) if isinstance(table, Mapping) else table.collect_schema().names()


def _until_stop(series: Table, stops: Sequence[float]) -> Table:
    """The flow series' rows up to each flow's stop (a flow past the list: all of them)."""
    import numpy as np

    if not {"time_s", "flow"} <= set(_names(series)):
        return series
    if isinstance(series, Mapping):
        flow = series["flow"].astype(np.int64)
        until = np.full(len(flow), math.inf)
        known = flow < len(stops)
        until[known] = np.asarray(stops, dtype=np.float64)[flow[known]]
        keep = series["time_s"] <= until
        return {c: a[keep] for c, a in series.items()}
    import polars as pl

    until = pl.col("flow").replace_strict(list(range(len(stops))), list(stops), default=math.inf,
                                          return_dtype=pl.Float64)
    return series.filter(pl.col("time_s") <= until)


class Source:
    """One table's ``time_s``, ``k`` (an id: flow, link, queue) and ``v`` (a value column), read in
    batches of at most :data:`_BATCH_ROWS` rows (a small table in one), NaN dropped; ``rows`` is its
    row count before NaN are dropped. A small table is read once however many figures draw from it.

    ``buckets``: the core's minimum and maximum per fine bucket of this table (``Result.page_buckets``,
    ``{"rows", "keys": {k: (lo bytes, hi bytes)}}``); then the table is read only if drawn raw.
    """

    def __init__(self, table: Table | Callable[[], Table], key: str, value: str,
                 buckets: Mapping[str, Any] | None = None) -> None:
        import numpy as np

        self.key, self.value = key, value
        self._whole: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.fine: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
        self._table = table
        if buckets is not None:  # the core's buckets: the table is read only if drawn raw
            self.rows = int(buckets["rows"])
            self.fine = {int(k): (np.frombuffer(lo, "<f8"), np.frombuffer(hi, "<f8"))
                         for k, (lo, hi) in buckets["keys"].items()}
            return
        q = self._load()
        if q is None:
            self.rows = 0
        elif isinstance(q, Mapping):
            self.rows = len(q["time_s"])
        else:
            # one read for a small table: it is whole if it has no more than a batch's rows
            head = q.head(_BATCH_ROWS + 1).collect()
            if head.height <= _BATCH_ROWS:
                self.rows, self._whole = head.height, _arrays(head)
            else:
                import polars as pl

                self.rows = int(q.select(pl.len()).collect().item())

    def _load(self) -> pl.LazyFrame | Mapping[str, Any] | None:
        """The table: arrays (kept whole, NaN dropped), a scan of the three columns, or None if it
        lacks one of them."""
        import numpy as np

        table = self._table() if callable(self._table) else self._table
        key, value = self.key, self.value
        if isinstance(table, Mapping):  # whole in memory: no query
            if not {"time_s", key, value} <= set(table):
                return None
            t, k, v = (np.asarray(table["time_s"], np.float64), np.asarray(table[key]).astype(np.int64),
                       np.asarray(table[value], np.float64))
            keep = np.isfinite(v)
            self._whole = (t, k, v) if keep.all() else (t[keep], k[keep], v[keep])
            return table
        import polars as pl

        if not {"time_s", key, value} <= set(table.collect_schema().names()):
            return None
        return table.select(pl.col("time_s").cast(pl.Float64), pl.col(key).cast(pl.Int64).alias("k"),
                            pl.col(value).cast(pl.Float64).alias("v"))

    def batches(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(time, key, value) arrays, NaN values dropped."""
        if self._whole is not None:
            yield self._whole
            return
        q = self._load()
        if self._whole is not None:
            yield self._whole
        elif q is not None:
            for df in q.collect_batches(chunk_size=_BATCH_ROWS):
                yield _arrays(df)


def _arrays(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    t, k, v = (df[c].to_numpy(allow_copy=True) for c in ("time_s", "k", "v"))
    keep = np.isfinite(v)
    return (t, k, v) if keep.all() else (t[keep], k[keep], v[keep])


#: A figure's series: the source it comes from, its key there, and how it is drawn (label, group, colour, dash).
Part = tuple[Source, int, dict[str, Any]]


def _chart(cid: str, title: str, unit: str, parts: Sequence[Part], duration: float) -> dict[str, Any]:
    """One figure: its series on one time column, raw if the figure has few enough points, else decimated.

    Decimated, each series keeps each bucket's minimum (at the bucket's start) and maximum (at its
    middle): fixed times, so a figure's series share their time column. The per-packet tables are
    read in batches, so a table of tens of millions of rows is never held whole.
    """
    import numpy as np

    from ccbench.core.arrays import unique

    empty = {"id": cid, "title": title, "unit": unit, "x": np.empty(0), "series": []}
    if not parts:
        return empty
    sources = list({id(src): src for src, _, _ in parts}.values())
    wanted = max(_MIN_BUCKETS, min(BUCKETS, _FIGURE_POINTS // (2 * max(1, len(parts)))))
    buckets = next(d for d in range(wanted, 0, -1) if BUCKETS % d == 0)  # merges whole fine buckets
    # Raw points only while the figure's time column stays within the budget: series sampled at
    # different times (per-ACK RTT of several flows) would otherwise make it a sparse union.
    raw = sum(src.rows for src in sources) <= 2 * buckets
    span = duration if duration > 0 else 1.0
    keys = {id(src): sorted({k for s, k, _ in parts if s is src}) for src in sources}
    if not raw:
        return _decimated(empty, parts, sources, keys, buckets, span)
    points: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}  # (source, key) -> (times, values)
    for src in sources:
        points.update({(id(src), k): tv for k, tv in _raw(src, keys[id(src)]).items()})
    if not points:
        return empty
    x = unique(np.concatenate([t for t, _ in points.values()]))
    series = []
    for src, k, meta in parts:
        if (id(src), k) not in points:
            continue  # nothing to draw (a flow with no RTT samples)
        t, v = points[(id(src), k)]
        at = np.searchsorted(x, t)
        # a series with several samples at one (rounded) time draws their mean
        n = np.bincount(at, minlength=len(x))
        with np.errstate(invalid="ignore", divide="ignore"):
            y = _sig_figs(np.bincount(at, weights=v, minlength=len(x)) / n, 4)
        series.append({**meta, "y": y})
    return {"id": cid, "title": title, "unit": unit, "x": x, "series": series}


def _raw(src: Source, keys: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each key's samples as they are, times to the microsecond."""
    import numpy as np

    chunks: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in keys}
    for t, k, v in src.batches():
        for key in keys:
            m = k == key
            if m.any():
                chunks[key].append((np.round(t[m], 6), v[m]))
    return {key: (np.concatenate([t for t, _ in c]), np.concatenate([v for _, v in c]))
            for key, c in chunks.items() if c}


def _decimated(empty: dict[str, Any], parts: Sequence[Part], sources: list[Source], keys: Mapping[int, list[int]],
               buckets: int, span: float) -> dict[str, Any]:
    """:func:`_chart` decimated (``empty``: the figure without series; ``keys``: each source's keys,
    by its id): every series on the same bucket times, so the time column is the times any series
    has a value at, and each series' values are its row there (NaN where it has none)."""
    import numpy as np

    rows: dict[tuple[int, int], np.ndarray] = {}  # (source, key) -> values on the bucket times
    for src in sources:
        rows.update({(id(src), k): row for k, row in _min_max(src, keys[id(src)], buckets, span).items()})
    drawn = [(id(src), k, meta) for src, k, meta in parts if (id(src), k) in rows]  # a flow with no samples: none
    if not drawn:
        return empty
    width = span / buckets
    b = np.arange(buckets + 1)
    times = np.round(np.column_stack([b * width, b * width + width / 2]).ravel(), 6)
    present = np.logical_or.reduce([np.isfinite(row) for row in rows.values()])
    # + 0.0: a -0.0 reads as 0.0, as a sum of one sample does in the raw path
    y = _sig_figs(np.stack([rows[(s, k)][present] for s, k, _ in drawn]) + 0.0, 4)
    return {**empty, "x": times[present], "series": [{**meta, "y": y[i]} for i, (_, _, meta) in enumerate(drawn)]}


def _min_max(src: Source, keys: list[int], buckets: int, span: float) -> dict[int, np.ndarray]:
    """Each key's minimum (at a bucket's start) and maximum (at its middle) in each of ``buckets``
    (the fine buckets, :data:`BUCKETS` over the run and one more for its last instant, merged
    ``BUCKETS // buckets`` at a time) over ``span`` s, interleaved; NaN in a bucket without samples. A key
    without any sample is left out."""
    import numpy as np

    fine = src.fine if src.fine is not None else _fine_min_max(src, keys, span)
    have = [k for k in keys if k in fine]
    if not have:
        return {}
    m = BUCKETS // buckets
    lo = np.stack([fine[k][0] for k in have])
    hi = np.stack([fine[k][1] for k in have])
    lo = np.concatenate([_merge(np.minimum, lo[:, :BUCKETS], m), lo[:, BUCKETS:]], axis=1)
    hi = np.concatenate([_merge(np.maximum, hi[:, :BUCKETS], m), hi[:, BUCKETS:]], axis=1)
    v = np.stack([lo, hi], axis=2).reshape(len(have), 2 * (buckets + 1))
    empty = np.repeat(~np.isfinite(lo), 2, axis=1)
    v[empty] = np.nan
    return {k: v[i] for i, k in enumerate(have) if not empty[i].all()}


def _merge(op: np.ufunc, a: np.ndarray, m: int) -> np.ndarray:
    """``op`` over each run of ``m`` columns of ``a``, as ``reduce`` along a reshaped axis but as m
    whole-array steps (NumPy reduces a short inner axis slowly)."""
    parts = a.reshape(a.shape[0], -1, m)
    out = parts[:, :, 0].copy()
    for j in range(1, m):
        op(out, parts[:, :, j], out=out)
    return out


def _fine_min_max(src: Source, keys: list[int], duration: float) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each key's minimum and maximum per fine bucket, from the table: what the core gives a run that
    wrote its tables as it went (``ccbench_core::metrics::extremes``), bin for bin."""
    import numpy as np

    slots = BUCKETS + 1  # a sample at the run's very end falls in one more bucket
    width = duration / BUCKETS
    lo = np.full(len(keys) * slots, np.inf)
    hi = np.full(len(keys) * slots, -np.inf)
    for t, k, v in src.batches():
        if not len(k):
            continue
        pos = np.full(max(int(k.max()), keys[-1]) + 1, -1, dtype=np.int64)  # ids are >= 0
        pos[keys] = np.arange(len(keys)) * slots
        row = pos[k]
        keep = row >= 0
        at = row + np.clip(np.floor(t / width).astype(np.int64), 0, BUCKETS)
        if not keep.all():
            at, v = at[keep], v[keep]
        np.minimum.at(lo, at, v)
        np.maximum.at(hi, at, v)
    return {key: (lo[n * slots:(n + 1) * slots], hi[n * slots:(n + 1) * slots]) for n, key in enumerate(keys)}


def _sig_figs(y: np.ndarray, digits: int) -> np.ndarray:
    """``y`` rounded to ``digits`` significant figures (NaN stays NaN)."""
    import numpy as np

    out = y.copy()
    nz = np.isfinite(y) & (y != 0)
    v = y[nz]
    # The scale 10 ** (digits - 1 - exponent) looked up, not raised: a power per point took half the time.
    scale = _powers_of_ten()[_POW10_ZERO + digits - 1 - np.floor(np.log10(np.abs(v))).astype(np.intp)]
    out[nz] = np.round(v * scale) / scale
    return out


#: Index of 10 ** 0 in :func:`_powers_of_ten`: finite non-zero doubles have exponents of -324 to 308.
_POW10_ZERO = 340


@functools.cache
def _powers_of_ten() -> np.ndarray:
    """``10.0 ** k`` for k from -340 to 340, each as NumPy's power gives it (inf beyond 308)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return 10.0 ** np.arange(-_POW10_ZERO, _POW10_ZERO + 1, dtype=np.float64)


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
