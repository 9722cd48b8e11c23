"""The cross-run figures of a suite's ``report.html``, as data the browser draws with uPlot.

The same figures as :mod:`ccbench.report.suite_plots` draws as PNGs, from the same
statistics (:mod:`ccbench.report.suite_stats`), without matplotlib: per run, boxes of
each flow's goodput and RTT samples, CDFs of queue delay, ping RTT and the
flows' goodputs, totals per run, and with a seed axis boxes over the seeds.

Each run is read once for all figures and reduced at once (quartiles, 1001
quantiles of a per-packet table), so the report never holds every run's
samples. A run's summary carries the RTT and queue-delay quartiles and 1001
quantiles (from the engine's streaming histograms, within 0.1 %), so those
figures read no per-packet table; results written before the summary had
them are reduced from their tables. A CDF is embedded on one grid of at most :data:`CDF_POINTS` delays
shared by its runs: each run contributes its own quantiles to the grid (so a
steep curve keeps its shape next to a wide one) and each curve is the run's
ECDF at every grid point, so the hover read-out gives every run's fraction at
the delay under the cursor.

The page's data is ``{"runs": [...], "charts": [...]}``; ``runs`` names the
runs (the Runs table's number and the run's label), and each chart is one of
three kinds:

- ``box``: x is the run (or configuration) index; each series has per run
  ``[p5, q1, median, q3, p95]`` or null and the x position of its box.
- ``cdf``: a shared ``x`` grid and per series (run) ``y``, the fraction ≤ x.
- ``bars``: per series one value per run; ``stacked`` series are drawn on
  top of each other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ccbench.core.arrays import unique

if TYPE_CHECKING:
    import polars as pl

from ccbench.report.suite_stats import (
    MAX_FLOW_BOXES,
    ProjectedRun,
    RunData,
    after_warmup,
    box,
    box_stats,
    busiest_link,
    flow_kind,
    groups,
    mean,
    p99_latency,
    read_table,
    sorted_quantiles,
    window_goodput,
)
from ccbench.report.suite_stats import kind_color as stats_kind_color

__all__ = ["CDF_POINTS", "figures_data", "kind_color", "run_stats"]

#: Points of each CDF curve at most (the grid its runs share).
CDF_POINTS = 500
#: Probabilities a run's per-packet samples are reduced to: the ECDF is read from them within 0.001.
_FINE = np.linspace(0.0, 1.0, 1001)

# matplotlib's tab10 and the named colours plot_suite uses, so a kind has its PNG colour
_TAB = {"tab:blue": "#1f77b4", "tab:orange": "#ff7f0e", "tab:green": "#2ca02c", "tab:red": "#d62728",
        "tab:purple": "#9467bd", "tab:brown": "#8c564b", "tab:pink": "#e377c2", "tab:gray": "#7f7f7f",
        "tab:olive": "#bcbd22", "tab:cyan": "#17becf", "darkgoldenrod": "#b8860b", "teal": "#008080",
        "indigo": "#4b0082", "crimson": "#dc143c"}
_CYCLE = list(_TAB.values())[:10]
_DASHES: list[list[int] | None] = [None, [6, 3], [2, 2], [6, 2, 2, 2]]  # "-", "--", ":", "-." of the PNGs


def kind_color(kind: str) -> str:
    """A flow kind's colour as hex, the one :func:`ccbench.report.suite_plots.kind_color` names."""
    return _TAB[stats_kind_color(kind)]


def _shade(color: str, i: int) -> str:
    """The i-th shade of a colour, as plot_suite shades the second, third ... flow of a kind."""
    t = min(0.7, 0.4 * i)
    rgb = [int(color[k:k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * t):02x}" for c in rgb)


# --- per run ------------------------------------------------------------------------------------


def _summary_boxes(summary: Mapping[str, Any], entries: str, field: str = "rtt_ms") -> list[tuple[str, str, Any]] | None:
    """Each flow's or probe's box of ``field`` from the summary's percentiles (as :func:`groups` gives
    it from the samples): the RTT of TCP flows and probes (a media flow has no RTT samples), or every
    flow's ``interval_goodput_mbps``; None where the summary cannot say (written before it had them,
    or more flows than get a box of their own)."""
    items = summary.get(entries, []) or []
    stats = [e.get(field) or {} for e in items]
    if len(items) > MAX_FLOW_BOXES or any("p25" not in st for st in stats):
        return None
    boxes = []
    for e, st in zip(items, stats):
        name, kind = str(e.get("id")), flow_kind(e) if entries == "flows" else "ping"
        sampled = (field != "rtt_ms" or entries == "probes" or e.get("kind") == "tcp") and st.get("p50") is not None
        boxes.append((name, kind, box(name, [st[k] for k in ("p5", "p25", "p50", "p75", "p95")], st["mean"])
                      if sampled else None))
    return boxes if any(b is not None for _, _, b in boxes) else []


def _quantiles_from_tables(run: RunData, link: int | None, out: dict[str, Any]) -> None:
    """The CDFs' quantiles of a run whose summary lacks them, from its per-packet tables."""
    import polars as pl

    queue = None
    if link is not None:
        sojourn = after_warmup(read_table(run, "sojourn", ["time_s", "link", "sojourn_ms"]), run)
        if "sojourn_ms" in sojourn.columns:
            queue = _fine_quantiles(sojourn.filter(pl.col("link") == link)["sojourn_ms"])
    out["queue_q"] = queue
    for key, table in (("ping_q", "probes"), ("flow_rtt_q", "rtt")):
        df = after_warmup(read_table(run, table, ["time_s", "rtt_ms"]), run)
        out[key] = _fine_quantiles(df["rtt_ms"]) if "rtt_ms" in df.columns else None


def _fine_quantiles(values: pl.Series) -> list[float] | None:
    import polars as pl

    values = values.drop_nulls()
    if values.dtype.is_float():
        values = values.drop_nans()
    if values.len() == 0:
        return None
    return sorted_quantiles(np.sort(values.cast(pl.Float64).to_numpy()), _FINE).tolist()


def _stats(st: Mapping[str, Any] | None) -> list[float] | None:
    return None if st is None else [float(st[k]) for k in ("whislo", "q1", "med", "q3", "whishi")]


def run_stats(run: RunData) -> dict[str, Any]:
    """Everything the figures need of one run, reduced: a few KB however long the run."""
    from ccbench.report.run_metrics import window_goodput_mbps

    s = run.summary
    flows = s.get("flows", []) or []
    probes = s.get("probes", []) or []
    rtt = _summary_boxes(s, "flows")
    if rtt is None:
        rtt = groups(run, "rtt", "flow", "rtt_ms", "flows")
    ping = _summary_boxes(s, "probes")
    if ping is None:
        ping = groups(run, "probes", "probe", "rtt_ms", "probes")
    goodput = _summary_boxes(s, "flows", "interval_goodput_mbps")
    if goodput is None:
        goodput = groups(run, "flow_series", "flow", "goodput_mbps", "flows")
    out: dict[str, Any] = {
        "goodput": [(n, k, _stats(st)) for n, k, st in goodput],
        "rtt": [(n, k, _stats(st)) for n, k, st in rtt + ping],
        "probes": bool(probes),
    }
    link = busiest_link(run)
    quantiles = s.get("quantiles")
    if isinstance(quantiles, Mapping):
        curves = quantiles.get("sojourn_ms") or []
        out["queue_q"] = (curves[link] or None) if link is not None and link < len(curves) else None
        out["ping_q"] = quantiles.get("probe_rtt_ms") or None
        out["flow_rtt_q"] = quantiles.get("tcp_rtt_ms") or None
    else:
        _quantiles_from_tables(run, link, out)
    out["flow_goodputs"] = sorted(float(f["goodput_mbps"]) for f in flows if f.get("kind") != "ping"
                                  and isinstance(f.get("goodput_mbps"), (int, float)))
    kinds = list(dict.fromkeys(flow_kind(f) for f in flows))
    warmup, duration = float(s.get("warmup_s") or 0.0), float(s.get("duration_s") or 0.0)
    out["by_kind"] = {k: (window_goodput(run, {i for i, f in enumerate(flows) if flow_kind(f) == k})
                          if duration > warmup else 0.0) for k in kinds}
    entries, out["latency_source"] = (probes, "ping RTT") if probes else (flows, "TCP RTT")
    out["mean_ms"] = mean([(e.get("rtt_ms") or {}).get("mean") for e in entries])
    out["p99_ms"] = max([v for e in entries if (v := (e.get("rtt_ms") or {}).get("p99")) is not None], default=0.0)
    out["window_goodput"] = window_goodput_mbps(ProjectedRun(run))
    out["p99_latency"] = p99_latency(run)
    return out


# --- the figures --------------------------------------------------------------------------------


def figures_data(runs: Sequence[tuple[str, Mapping[str, Any]]],
                 seeds: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = ()) -> dict[str, Any]:
    """The page's figures from each run's :func:`run_stats` (``(label, stats)`` in report order) and,
    with a seed axis, each configuration's runs' stats (``(label, [stats, ...])``)."""
    labels = [label for label, _ in runs]
    stats = [st for _, st in runs]
    charts: list[dict[str, Any]] = []
    if runs:
        charts.append(_box("goodput_box", "Goodput per sample interval, per flow", "Mbit/s",
                           [st["goodput"] for st in stats]))
        charts.append(_box("rtt_box", "RTT samples per flow and ping", "ms", [st["rtt"] for st in stats]))
        charts.append(_cdf("queue_cdf", "Queue delay at each run's busiest link (CDF)", "queue delay (ms)",
                           labels, [st["queue_q"] for st in stats], _FINE))
        pings = all(st["probes"] for st in stats)
        charts.append(_cdf("rtt_cdf", ("Ping" if pings else "TCP") + " RTT (CDF)",
                           ("ping" if pings else "TCP") + " RTT (ms)", labels,
                           [st["ping_q" if pings else "flow_rtt_q"] for st in stats], _FINE))
        charts.append(_cdf("goodput_cdf", "Goodput per flow (CDF over each run's flows)", "goodput per flow (Mbit/s)",
                           labels, [st["flow_goodputs"] or None for st in stats], None))
        charts += _totals(stats)
    if seeds:
        charts += _seed_boxes(seeds)
    charts = [c for c in charts if c["series"]]
    return {"runs": labels, "configs": [label for label, _ in seeds], "charts": charts}


def _box(cid: str, title: str, unit: str, per_run: Sequence[Sequence[tuple[str, str, list[float] | None]]]
         ) -> dict[str, Any]:
    """One series per flow (kind and name), as plot_suite colours them; each run's boxes side by side."""
    n = len(per_run)
    slots = max((len(g) for g in per_run), default=1) or 1
    width = 0.8 / slots
    series: dict[tuple[str, str], dict[str, Any]] = {}
    shades: dict[str, int] = {}
    for i, g in enumerate(per_run):
        for j, (name, kind, st) in enumerate(g):
            if st is None:
                continue
            if (kind, name) not in series:
                series[(kind, name)] = {"label": name if name in (kind, f"{kind} (all)") else f"{name} ({kind})",
                                        "color": _shade(kind_color(kind), shades.get(kind, 0)),
                                        "stats": [None] * n, "pos": [None] * n}
                shades[kind] = shades.get(kind, 0) + 1
            series[(kind, name)]["stats"][i] = _round(st)
            series[(kind, name)]["pos"][i] = round(i - 0.4 + width * (j + 0.5), 4)
    return {"id": cid, "kind": "box", "title": title + "; box: quartiles, whiskers: 5th–95th percentile",
            "unit": unit, "axis": "run", "width": round(width * 0.85, 4), "series": list(series.values())}


def _cdf(cid: str, title: str, xlabel: str, labels: Sequence[str], curves: Sequence[list[float] | None],
         probs: np.ndarray | None) -> dict[str, Any]:
    """Curves on one grid: ``curves`` are each run's quantiles at ``probs`` or, with ``probs`` None,
    its sorted samples (an exact step ECDF, for a few flows' goodputs)."""
    have = [(n, np.asarray(c, dtype=float)) for n, c in enumerate(curves) if c]
    if not have:
        return {"id": cid, "kind": "cdf", "series": []}
    per_run = max(2, CDF_POINTS // len(have))
    picks = []
    for _, c in have:
        idx = unique(np.linspace(0, c.size - 1, min(c.size, per_run)).round().astype(int))
        picks.append(c[idx])
    grid = unique(np.concatenate(picks))
    if grid.size > CDF_POINTS:  # many runs: thin by rank, keeping both ends
        grid = grid[unique(np.linspace(0, grid.size - 1, CDF_POINTS).round().astype(int))]
    top = float(grid[-1])
    grid = unique(np.asarray(_round(grid.tolist()), dtype=float))  # the fractions are those at the x drawn
    if grid[-1] < top:  # rounded below the largest sample: every curve ends at 1 one digit further
        grid[-1] = grid[-1] + 10.0 ** (math.floor(math.log10(top)) - 3)
    series = []
    for n, c in have:
        if probs is None:  # samples: the fraction of them ≤ x
            y = np.searchsorted(c, grid, side="right") / c.size
        else:
            y = _ecdf(c, probs, grid)
        series.append({"label": labels[n], "color": _CYCLE[n % 10], "dash": _DASHES[(n // 10) % len(_DASHES)],
                       "y": [round(float(v), 4) for v in y]})
    positive = grid[grid > 0]
    # delays as plot_suite draws them: log-like when they span > 20x (a bloated FIFO next to an AQM)
    wide = probs is not None and positive.size > 0 and positive.max() / max(positive.min(), 0.1) > 20
    return {"id": cid, "kind": "cdf", "title": title, "unit": xlabel, "x": grid.tolist(),
            "log": bool(wide), "step": probs is None, "series": series}


def _ecdf(q: np.ndarray, probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The fraction of samples ≤ x from their quantiles ``q`` at ``probs``: the quantile function
    inverted, linear between quantiles, and right-continuous where quantiles tie (a queue empty 30 %
    of the time has 0.3 at 0 ms, where ``np.interp`` over tied points may give 0)."""
    k = np.searchsorted(q, x, side="right")  # quantiles ≤ x
    inside = (k > 0) & (k < q.size)
    lo = np.clip(k - 1, 0, q.size - 1)
    hi = np.clip(k, 0, q.size - 1)
    span = np.where(inside, q[hi] - q[lo], 1.0)
    frac = np.where(inside, (x - q[lo]) / span, 0.0)
    y = probs[lo] + frac * (probs[hi] - probs[lo])
    return np.where(k == 0, 0.0, np.where(k >= q.size, 1.0, y))


def _totals(stats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    kinds = list(dict.fromkeys(k for st in stats for k in st["by_kind"]))
    goodput = [{"label": k, "color": kind_color(k), "y": [_round1(st["by_kind"].get(k)) for st in stats]}
               for k in kinds]
    source = " / ".join(sorted({st["latency_source"] for st in stats})) or "RTT"
    ping = kind_color("ping")
    latency = [{"label": "mean", "color": ping, "align": -1, "y": [_round1(st["mean_ms"]) for st in stats]},
               {"label": "99th percentile", "color": _shade(ping, 2), "align": 1,
                "y": [_round1(st["p99_ms"]) for st in stats]}]
    return [{"id": "totals_goodput", "kind": "bars", "stacked": True, "axis": "run",
             "title": "Total goodput per run by flow kind (from the warm-up's end to the run's end)",
             "unit": "Mbit/s", "series": goodput},
            {"id": "totals_latency", "kind": "bars", "stacked": False, "axis": "run",
             "title": f"Latency per run: mean and 99th percentile ({source})", "unit": "ms", "series": latency}]


def _seed_boxes(seeds: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[dict[str, Any]]:
    n = max((len(rs) for _, rs in seeds), default=0)
    out = []
    for cid, key, label, unit, kind in (("seed_goodput", "window_goodput", "goodput", "Mbit/s", "cubic"),
                                        ("seed_latency", "p99_latency", "99th percentile latency", "ms", "ping")):
        stats: list[list[float] | None] = []
        dots: list[list[float]] = []
        for _, rs in seeds:
            values = [float(v) for st in rs if isinstance(v := st.get(key), (int, float)) and math.isfinite(v)]
            stats.append(_round(_stats(box_stats(np.asarray(values, dtype=float), ""))) if values else None)
            dots.append(_round(values))
        series = [{"label": label, "color": _shade(kind_color(kind), 1), "stats": stats,
                   "pos": list(range(len(seeds))), "dots": dots}] if any(stats) else []
        out.append({"id": cid, "kind": "box", "axis": "config", "unit": unit, "width": 0.5, "series": series,
                    "title": f"{label.capitalize()} across {n} seeds per configuration; box: quartiles, "
                             "whiskers: 5th–95th percentile, dots: seeds"})
    return out


def _round(values: Any) -> Any:
    """Four significant digits: the page need not carry more, and a float's repr is long."""
    if values is None:
        return None
    return [None if v is None else float(f"{v:.4g}") for v in values]


def _round1(v: float | None) -> float | None:
    return None if v is None else float(f"{v:.4g}")
