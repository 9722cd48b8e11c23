"""A run's web page, ``report.html`` in its result directory: figures the browser draws from the run's data.

The page carries its data as JSON in a ``<script type="application/json">``
element (so it opens from ``file://``, where a page cannot fetch files) and
loads the charting library from ``assets/`` beside it, copied there from the
package: the page never reaches the network.

The charting library is uPlot (MIT licence, about 50 KB minified, no
dependencies), installed from the npm registry by ``make build`` (pinned in
``web/package-lock.json``) and copied into ``ccbench/_web/``. It draws to a
canvas and stays fast with 100 000+ points per series; it brings drag to
zoom, a legend that reads out the values under the cursor and toggles series
on click, and cursor sync between charts. Plotly or Vega-Lite would do the
same at 1-3 MB; Chart.js draws a tenth as many points in the same time.

Each figure is a list of series on one shared time column. A figure with more
samples than the page needs is decimated here, not in the browser: the run's
time is cut into buckets (:data:`BUCKETS`, fewer when a figure has many series)
and each bucket of each series keeps its minimum and maximum, in the order
they occurred, so peaks and dips survive and a 240 s run at 1 Gbit/s embeds a
few hundred KB.
No matplotlib is involved: writing the page costs Polars group-bys.
"""

from __future__ import annotations

import html
import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from ccbench.results import Result

__all__ = ["ASSETS", "BUCKETS", "PAGE_FILE", "assets_dir", "page_data", "write_page"]

PAGE_FILE = "report.html"
#: Files of the charting library a page loads, from ``assets/`` beside it.
ASSETS = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE")
ASSETS_DIR = "assets"
#: Buckets per series at most: a min and a max each, about two points per pixel column of a wide screen.
BUCKETS = 2000
#: Points a figure holds at most over all its series: figures with many flows get fewer buckets.
_FIGURE_POINTS = 32_000
#: The smallest number of buckets a figure gets, however many series it has.
_MIN_BUCKETS = 200

# matplotlib's tab10, so a flow has the colour it has in the PNG plots
_FLOW_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
_LINK_COLORS = ["#000000", "#808080", "#8b4513", "#556b2f", "#483d8b", "#008b8b"]

_JS = Path(__file__).with_name("js")


def assets_dir() -> Path | None:
    """Where the build put the charting library (``ccbench/_web``), or None if it is missing."""
    d = Path(__file__).with_name("_web")
    return d if all((d / name).is_file() for name in ASSETS) else None


def write_page(result: Result, directory: Path) -> Path:
    """Write ``report.html`` and ``assets/`` into a result directory being written; return the page's path.

    Without the built assets the page is still written, and says how to get them.
    """
    src = assets_dir()
    if src is not None:
        dest = directory / ASSETS_DIR
        dest.mkdir(exist_ok=True)
        for name in ASSETS:
            _link_or_copy(src / name, dest / name)
    page = directory / PAGE_FILE
    page.write_text(page_html(result, assets=src is not None), encoding="utf-8")
    return page


def _link_or_copy(src: Path, dest: Path) -> None:
    # A hard link costs no space for the hundreds of runs of a suite; a copy across file systems.
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def page_html(result: Result, *, assets: bool = True) -> str:
    """The page: headline, the figures (drawn by the browser) and the run's summary tables."""
    from ccbench.results import result_html

    s = result.summary
    title = f"{s.get('scenario', 'run')} (seed {s.get('seed')})"
    data = json.dumps(page_data(result), separators=(",", ":"), allow_nan=False)
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
        f"<script>{(_JS / 'run.js').read_text(encoding='utf-8')}</script>",
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


def page_data(result: Result) -> dict[str, Any]:
    """What the page draws: ``{"duration", "warmup", "charts": [{"id", "title", "unit", "x", "series"}]}``,
    each series ``{"label", "group", "color", "dash", "y"}`` with ``y`` aligned on the chart's ``x``
    (``null`` where the series has no point)."""
    import polars as pl

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

    def per_flow(table: str, column: str) -> list[tuple[pl.LazyFrame, dict[str, Any]]]:
        lf = _column(t.lazy(table), "flow", column)
        return [(lf.filter(pl.col("k") == i), flow(i)) for i in range(len(flows))]

    charts = []
    rate = "throughput_mbps" if "throughput_mbps" in t.lazy("flow_series").collect_schema().names() else "goodput_mbps"
    charts.append(_chart("throughput", "Throughput per flow (payload received in any order)", "Mbit/s",
                         per_flow("flow_series", rate), duration))
    charts.append(_chart("goodput", "Goodput per flow (in-order delivery)", "Mbit/s",
                         per_flow("flow_series", "goodput_mbps"), duration))
    charts.append(_chart("cwnd", "Congestion window", "packets", per_flow("flow_series", "cwnd_pkts"), duration))

    rtt: list[tuple[pl.LazyFrame, dict[str, Any]]] = []
    samples = _column(t.lazy("rtt"), "flow", "rtt_ms")
    srtt = _column(t.lazy("flow_series"), "flow", "srtt_ms")
    for i in range(len(flows)):
        rtt.append((samples.filter(pl.col("k") == i), flow(i, " samples")))
        rtt.append((srtt.filter(pl.col("k") == i), flow(i, " sRTT", [6, 3])))
    pings = _column(t.lazy("probes"), "probe", "rtt_ms")
    for j in range(len(probes)):
        rtt.append((pings.filter(pl.col("k") == j),
                    {"label": f"{probes[j]} (probe)", "group": f"probe {j}",
                     "color": _FLOW_COLORS[(len(flows) + j) % len(_FLOW_COLORS)], "dash": [2, 2]}))
    charts.append(_chart("rtt", "RTT: per-ACK samples and the sender's sRTT (dashed), pings", "ms", rtt, duration))

    sojourn = t.lazy("sojourn")
    if "class" not in sojourn.collect_schema().names():
        sojourn = sojourn.with_columns(pl.lit(0, pl.UInt32).alias("class"))
    sojourn = sojourn.select("time_s", (pl.col("link").cast(pl.Int64) * 2 + pl.col("class")).alias("k"),
                             pl.col("sojourn_ms").alias("v"))
    delay = []
    for k in range(len(links)):
        for cls in ((0, 1) if k in two_queue else (0,)):
            label = _name(links, k) + ((" L" if cls else " C") if k in two_queue else "")
            delay.append((sojourn.filter(pl.col("k") == 2 * k + cls),
                          {"label": label, "group": f"link {k}", "color": _LINK_COLORS[k % len(_LINK_COLORS)],
                           "dash": [6, 3] if cls else None}))
    charts.append(_chart("queue_delay", "Queue delay per link (sojourn time of each dequeued packet)", "ms",
                         delay, duration))
    backlog = _column(t.lazy("link_series"), "link", "backlog_pkts")
    charts.append(_chart("backlog", "Backlog per link", "packets",
                         [(backlog.filter(pl.col("k") == k),
                           {"label": _name(links, k), "group": f"link {k}",
                            "color": _LINK_COLORS[k % len(_LINK_COLORS)], "dash": None})
                          for k in range(len(links))], duration))
    if media:
        target = _column(t.lazy("media_series"), "flow", "target_mbps")
        tx = _column(t.lazy("media_series"), "flow", "tx_mbps")
        parts = []
        for i in media:
            parts += [(target.filter(pl.col("k") == i), flow(i, " target", [6, 3])),
                      (tx.filter(pl.col("k") == i), flow(i, " sent"))]
        charts.append(_chart("media", "Media (SCReAM): encoder target and transmitted RTP rate", "Mbit/s",
                             parts, duration))
    return {"duration": duration, "warmup": float(s.get("warmup_s") or 0.0),
            "charts": [c for c in charts if c["series"]]}


def _name(names: Sequence[str], i: int) -> str:
    return names[i] if i < len(names) else f"#{i}"


def _column(lf: pl.LazyFrame, key: str, value: str) -> pl.LazyFrame:
    """``time_s``, ``k`` (the id column) and ``v`` (the value, NaN dropped) of a table; empty if it lacks them."""
    import polars as pl

    have = lf.collect_schema().names()
    if not {"time_s", key, value} <= set(have):
        return pl.LazyFrame(schema={"time_s": pl.Float64, "k": pl.Int64, "v": pl.Float64})
    return (lf.select("time_s", pl.col(key).cast(pl.Int64).alias("k"), pl.col(value).cast(pl.Float64).alias("v"))
            .filter(pl.col("v").is_not_null() & pl.col("v").is_not_nan()))


def _chart(cid: str, title: str, unit: str, parts: Sequence[tuple[pl.LazyFrame, dict[str, Any]]],
           duration: float) -> dict[str, Any]:
    """One figure: its series' points, each decimated if it has more than two per bucket, on one time column."""
    import polars as pl

    frames = pl.collect_all([lf.select("time_s", "v") for lf, _ in parts])
    kept = [(df, meta) for df, (_, meta) in zip(frames, parts) if not df.is_empty()]
    if not kept:
        return {"id": cid, "title": title, "unit": unit, "x": [], "series": []}
    buckets = max(_MIN_BUCKETS, min(BUCKETS, _FIGURE_POINTS // (2 * len(kept))))
    end = max(duration, max(float(df["time_s"].max()) for df, _ in kept))  # type: ignore[arg-type]
    width = end / buckets if end > 0 else 1.0
    # Raw points only while the figure's time column stays within the budget: series sampled at
    # different times (per-ACK RTT of several flows) would otherwise make it a sparse union.
    raw = sum(df.height for df, _ in kept) <= 2 * buckets
    longs = [(df if raw else _min_max(df, width)).with_columns(s=pl.lit(n, pl.Int32)) for n, (df, _) in enumerate(kept)]
    long = pl.concat(longs).with_columns(pl.col("time_s").round(6))
    wide = (long.group_by("time_s", "s").agg(pl.col("v").mean())
            .pivot(on="s", index="time_s", values="v", sort_columns=True).sort("time_s"))
    series = []
    for n, (_, meta) in enumerate(kept):
        y = wide[str(n)].round_sig_figs(4).to_list() if str(n) in wide.columns else []
        series.append({**meta, "y": [None if v is None or math.isnan(v) else v for v in y]})
    return {"id": cid, "title": title, "unit": unit, "x": wide["time_s"].to_list(), "series": series}


def _min_max(df: pl.DataFrame, width: float) -> pl.DataFrame:
    """Each bucket's minimum and maximum, in the order they occurred, at the bucket's start and middle
    (fixed times, so the series of a figure share their time column)."""
    import polars as pl

    b = (pl.col("time_s") // width).cast(pl.Int64)
    agg = (df.with_columns(b=b).group_by("b", maintain_order=True)
           .agg(lo=pl.col("v").min(), hi=pl.col("v").max(),
                lo_first=pl.col("v").arg_min() <= pl.col("v").arg_max()))
    first = pl.when(pl.col("lo_first")).then(pl.col("lo")).otherwise(pl.col("hi"))
    second = pl.when(pl.col("lo_first")).then(pl.col("hi")).otherwise(pl.col("lo"))
    return pl.concat([
        agg.select(time_s=pl.col("b") * width, v=first),
        agg.select(time_s=pl.col("b") * width + width / 2, v=second),
    ]).sort("time_s")
