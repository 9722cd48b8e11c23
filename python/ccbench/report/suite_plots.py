"""Plots across the runs of a suite, flent-like: box plots, CDFs and totals.

Each function takes the finished runs as ``(label, run)`` pairs, where a run
has ``summary`` (summary.json) and ``table(name)`` (a Polars DataFrame, see
:mod:`ccbench.simulate.results`), and returns a matplotlib Figure built without pyplot
(Agg, no window, no global state), like :mod:`ccbench.simulate.plot`.

- ``goodput_box``: per run, one box per TCP flow of its goodput samples
  (``flow_series``, one per sample interval).
- ``rtt_box``: per run, one box per TCP flow of its RTT samples and one per
  ping probe.
- ``delay_cdf``: CDFs, one line per run, of the queue delay at each run's
  busiest link and of the ping RTT (flow RTT if a run has no ping).
- ``goodput_cdf``: CDFs, one line per run, of the flows' goodputs (each
  flow's mean over its active time after the warm-up): how evenly a run
  shares, also with 50 flows.
- ``totals``: per run, goodput delivered over the window from the warm-up's
  end to the run's end, stacked by flow kind, and mean and 99th percentile
  latency (ping, else flow RTT).

- ``seed_box`` (drawn by a report whenever its suite has a ``seed`` axis
  with 2+ values): per configuration (the other axes' values), one box over
  its seeds of the delivered goodput (one window, all flows) and one of the
  99th percentile latency (ping, else the TCP flows' highest).

Boxes show the quartiles and the median, whiskers the 5th and 95th
percentiles, no outliers. Samples before the run's warm-up are left out, as
the summary leaves them out. Statistics come from Polars, so a run with a
million samples costs a quantile, not a million points. A flow's color is
its kind's (CUBIC, Reno, ping, ...) everywhere, in lighter shades for the
second, third, ... flow of a kind in a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ccbench.plan.suite import SEED_BOX
from ccbench.report.suite_stats import KIND_COLORS, RunData, Runs, flow_kind, kind_color
from ccbench.report.suite_stats import ProjectedRun as _ProjectedRun
from ccbench.report.suite_stats import after_warmup as _after_warmup
from ccbench.report.suite_stats import box_stats as _box_stats
from ccbench.report.suite_stats import busiest_link as _busiest_link
from ccbench.report.suite_stats import groups as _groups
from ccbench.report.suite_stats import mean as _mean
from ccbench.report.suite_stats import p99_latency as _p99_latency
from ccbench.report.suite_stats import read_table as _table
from ccbench.report.suite_stats import sorted_quantiles as _sorted_quantiles
from ccbench.report.suite_stats import window_goodput as _window_goodput

__all__ = ["KIND_COLORS", "PLOTS", "SEED_BOX", "delay_cdf", "goodput_box", "goodput_cdf", "kind_color", "rtt_box", "seed_box",
           "totals"]


_RUN_STYLES = ["-", "--", ":", "-."]


def _shade(color: str, i: int) -> tuple[float, float, float]:
    """The i-th shade of a color: 0 is the color, later ones mix in white."""
    r, g, b = to_rgb(color)
    t = min(0.7, 0.4 * i)
    return (r + (1 - r) * t, g + (1 - g) * t, b + (1 - b) * t)


# --- figures ------------------------------------------------------------------------------------


def goodput_box(runs: Runs) -> Figure:
    """Goodput samples per flow per run (Mbit/s)."""
    groups = [_groups(run, "flow_series", "flow", "goodput_mbps", "flows") for _, run in runs]
    return _boxes(runs, groups, "goodput (Mbit/s)", "Goodput per sample interval")


def rtt_box(runs: Runs) -> Figure:
    """RTT samples per flow and per ping probe per run (ms)."""
    groups = [_groups(run, "rtt", "flow", "rtt_ms", "flows") + _groups(run, "probes", "probe", "rtt_ms", "probes")
              for _, run in runs]
    return _boxes(runs, groups, "RTT (ms)", "RTT samples (TCP flows and ping)")


def _boxes(runs: Runs, groups: list[list[tuple[str, str, Any]]], ylabel: str, title: str) -> Figure:
    per_run = max((len(g) for g in groups), default=1) or 1
    fig = Figure(figsize=(_width(len(runs), per_run), 5), layout="constrained")
    ax = fig.subplots()
    shades: dict[tuple[str, str], tuple[float, float, float]] = {}  # (kind, flow name) -> color
    count_by_kind: dict[str, int] = {}
    width = 0.8 / per_run
    boxes: list[tuple[dict[str, Any], float, tuple[float, float, float]]] = []
    for i, g in enumerate(groups):
        for j, (name, kind, stats) in enumerate(g):
            if stats is None:
                continue
            if (kind, name) not in shades:
                shades[(kind, name)] = _shade(kind_color(kind), count_by_kind.get(kind, 0))
                count_by_kind[kind] = count_by_kind.get(kind, 0) + 1
            boxes.append((stats, i - 0.4 + width * (j + 0.5), shades[(kind, name)]))
    drawn = bool(boxes)
    if drawn:
        _draw_boxes(ax, boxes, width * 0.85)
    _run_axis(ax, runs)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}; box: quartiles, whiskers: 5th–95th percentile", fontsize="medium")
    if not drawn:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center", va="center", color="grey")
    else:
        ax.set_ylim(bottom=0)
        handles = [Patch(facecolor=c, edgecolor="black", label=f"{name} ({kind})" if name != kind else name)
                   for (kind, name), c in shades.items()]
        ax.legend(handles=handles[:16], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    return fig


def _draw_boxes(ax: Axes, boxes: Sequence[tuple[Mapping[str, Any], float, Any]], width: float) -> None:
    """Boxes (``bxp``'s statistics, x position, face color), drawn as ``bxp`` draws them — a box from
    q1 to q3, a median line, whiskers to whislo/whishi with caps half the box wide — but as three
    collections: ``bxp`` makes six artists per box, and a report of many runs has hundreds of boxes."""
    half = width / 2
    rects, whiskers, medians = [], [], []
    for st, x, _ in boxes:
        rects.append([(x - half, st["q1"]), (x + half, st["q1"]), (x + half, st["q3"]), (x - half, st["q3"])])
        whiskers += [[(x, st["q1"]), (x, st["whislo"])], [(x, st["q3"]), (x, st["whishi"])],
                     [(x - half / 2, st["whislo"]), (x + half / 2, st["whislo"])],
                     [(x - half / 2, st["whishi"]), (x + half / 2, st["whishi"])]]
        medians.append([(x - half, st["med"]), (x + half, st["med"])])
    ax.add_collection(LineCollection(whiskers, colors="black", linewidths=1.0, zorder=2))
    ax.add_collection(PolyCollection(rects, facecolors=[c for _, _, c in boxes], edgecolors="black",
                                     linewidths=1.0, zorder=2))
    ax.add_collection(LineCollection(medians, colors="black", linewidths=1.0, zorder=2))
    ax.autoscale_view()


def delay_cdf(runs: Runs) -> Figure:
    """CDF of queue delay at each run's busiest link, and of ping RTT (else flow RTT)."""
    legend = _RunLegend(runs)
    fig = Figure(figsize=legend.figsize(10.0), layout="constrained")
    queue_ax, rtt_ax = fig.subplots(1, 2)
    probes_everywhere = all(bool(run.summary.get("probes")) for _, run in runs)
    for n, (label, run) in enumerate(runs):
        color, style = f"C{n % 10}", _RUN_STYLES[(n // 10) % len(_RUN_STYLES)]
        link = _busiest_link(run)
        if link is not None:
            sojourn = _table(run, "sojourn", ["time_s", "link", "sojourn_ms"])
            _cdf(queue_ax, _after_warmup(sojourn, run).filter(pl.col("link") == link)["sojourn_ms"], label, color,
                 style)
        rtts = (_table(run, "probes", ["time_s", "rtt_ms"]) if probes_everywhere
                else _table(run, "rtt", ["time_s", "rtt_ms"]))
        _cdf(rtt_ax, _after_warmup(rtts, run)["rtt_ms"] if "rtt_ms" in rtts.columns else pl.Series([]),
             label, color, style)
    queue_ax.set_xlabel("queue delay at the busiest link (ms)")
    rtt_ax.set_xlabel("ping RTT (ms)" if probes_everywhere else "TCP RTT samples (ms)")
    _wide_range_log(queue_ax, symlog=True)
    _wide_range_log(rtt_ax, symlog=False)
    for ax in (queue_ax, rtt_ax):
        ax.set_ylabel("cumulative probability")
        ax.set_ylim(0, 1)
        ax.grid(True, alpha=0.3)
        if not ax.lines:
            ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center", va="center", color="grey")
    if rtt_ax.lines:
        legend.draw(rtt_ax)
    return fig


def _wide_range_log(ax: Axes, *, symlog: bool) -> None:
    """A log time axis when the lines span more than 20x (a bloated FIFO next to an AQM), as flent does."""
    xs = [float(x) for line in ax.lines for x in np.asarray(line.get_xdata(), dtype=float)]
    positive = [x for x in xs if x > 0]
    if not positive or max(positive) / max(min(positive), 0.1) <= 20:
        return
    if symlog:  # queue delays include zeros
        ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
    else:
        ax.set_xscale("log")
    ax.set_xlabel(ax.get_xlabel() + ", log scale")


_CDF_PROBS = np.linspace(0.0, 1.0, 201)


def _cdf(ax: Axes, values: pl.Series, label: str, color: str, style: str) -> None:
    """The empirical CDF at 201 probabilities: one vectorised quantile call, not 201."""
    values = values.drop_nulls()
    if values.dtype.is_float():
        values = values.drop_nans()
    if values.len() == 0:
        return
    ax.plot(_sorted_quantiles(np.sort(values.cast(pl.Float64).to_numpy()), _CDF_PROBS), _CDF_PROBS, color=color,
            linestyle=style, label=label, lw=1.4)


def goodput_cdf(runs: Runs) -> Figure:
    """Per run, the CDF of its flows' goodputs (TCP and media flows; each over its active time)."""
    legend = _RunLegend(runs)
    fig = Figure(figsize=legend.figsize(6.0), layout="constrained")
    ax = fig.subplots()
    for n, (label, run) in enumerate(runs):
        flows = [f for f in run.summary.get("flows", []) or [] if f.get("kind") != "ping"]
        values = pl.Series([float(f["goodput_mbps"]) for f in flows if isinstance(f.get("goodput_mbps"), (int, float))],
                           dtype=pl.Float64)
        xs = np.sort(values.to_numpy())
        if xs.size == 0:
            continue
        # A step per flow: the fraction of flows with at most this goodput.
        ax.step(np.concatenate(([xs[0]], xs)), np.arange(xs.size + 1) / xs.size, where="post",
                color=f"C{n % 10}", linestyle=_RUN_STYLES[(n // 10) % len(_RUN_STYLES)], label=label, lw=1.4)
    ax.set_xlabel("goodput per flow (Mbit/s)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    if not ax.lines:
        ax.text(0.5, 0.5, "no flows", transform=ax.transAxes, ha="center", va="center", color="grey")
    else:
        legend.draw(ax)
    return fig


def totals(runs: Runs) -> Figure:
    """Per run: goodput stacked by flow kind, and mean and p99 latency."""
    fig = Figure(figsize=(_width(len(runs), 1.5), 7.5), layout="constrained")
    tput, lat = fig.subplots(2, 1, sharex=True)
    kinds: dict[str, None] = {}
    sums: list[dict[str, float]] = []
    for _, run in runs:
        by_kind: dict[str, float] = {}
        flows = run.summary.get("flows", []) or []
        for k in dict.fromkeys(flow_kind(f) for f in flows):
            kinds.setdefault(k)
            ids = {i for i, f in enumerate(flows) if flow_kind(f) == k}
            by_kind[k] = _window_goodput(run, ids)
        sums.append(by_kind)
    xs = list(range(len(runs)))
    bottom = [0.0] * len(runs)
    for k in kinds:
        heights = [s.get(k, 0.0) for s in sums]
        tput.bar(xs, heights, bottom=bottom, color=kind_color(k), label=k, width=0.6)
        bottom = [b + h for b, h in zip(bottom, heights)]
    tput.set_ylabel("total goodput (Mbit/s)")
    tput.set_xlabel("delivered from the warm-up's end to the run's end", fontsize="small")
    tput.set_title("Totals per run", fontsize="medium")
    if kinds:
        tput.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", title="flow kind")
    means, p99s, source = [], [], set()
    for _, run in runs:
        probes = run.summary.get("probes", []) or []
        entries, what = (probes, "ping RTT") if probes else (run.summary.get("flows", []) or [], "TCP RTT")
        source.add(what)
        means.append(_mean([(e.get("rtt_ms") or {}).get("mean") for e in entries]))
        p99s.append(max([v for e in entries if (v := (e.get("rtt_ms") or {}).get("p99")) is not None], default=0.0))
    lat.bar([x - 0.18 for x in xs], means, width=0.36, color=kind_color("ping"), label="mean")
    lat.bar([x + 0.18 for x in xs], p99s, width=0.36, color=_shade(kind_color("ping"), 2), label="99th percentile",
            edgecolor="black", lw=0.5)
    lat.set_ylabel(f"{' / '.join(sorted(source)) or 'RTT'} (ms)")
    lat.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    for ax in (tput, lat):
        ax.grid(True, axis="y", alpha=0.3)
    _run_axis(lat, runs)
    return fig


def seed_box(groups: Sequence[tuple[str, Sequence[RunData]]]) -> Figure:
    """Per configuration, boxes over its seeds: delivered goodput, and p99 latency (ping, else TCP RTT)."""
    from ccbench.report.run_metrics import window_goodput_mbps

    fig = Figure(figsize=(_width(len(groups), 1.0), 7.5), layout="constrained")
    tput, lat = fig.subplots(2, 1, sharex=True)
    for i, (_, runs) in enumerate(groups):
        goodputs = [v for run in runs if (v := window_goodput_mbps(_ProjectedRun(run))) is not None]
        p99s = [v for run in runs if (v := _p99_latency(run)) is not None]
        for ax, values, color in ((tput, goodputs, kind_color("cubic")), (lat, p99s, kind_color("ping"))):
            stats = _box_stats(np.asarray(values, dtype=float), str(i))
            if stats is None:
                continue
            _draw_boxes(ax, [(stats, i, _shade(color, 1))], 0.5)
            ax.plot([i] * len(values), values, ".", color="black", ms=3)  # each seed's value
    n = max((len(runs) for _, runs in groups), default=0)
    tput.set_ylabel("goodput (Mbit/s)")
    tput.set_title(f"Across {n} seeds per configuration; box: quartiles, whiskers: 5th–95th percentile, "
                   "dots: seeds", fontsize="medium")
    lat.set_ylabel("99th percentile latency (ms)")
    for ax in (tput, lat):
        ax.grid(True, axis="y", alpha=0.3)
        ax.set_ylim(bottom=0)
    _run_axis(lat, [(label, None) for label, _ in groups])  # type: ignore[misc]
    lat.set_xlabel("configuration")
    return fig


class _RunLegend:
    """A legend of one line per run beside the plots, and a figure sized to hold both: the
    labels of a large suite ("downstream 100 Mbit/s / 12 ms / up to 2 Prague / 0", 36 of them)
    otherwise squeeze the plots or are cut off."""

    ROWS = 24  # entries per legend column
    CHAR_IN = 0.075  # inches per character of a "small" label (an estimate: DejaVu Sans at 8.3 pt)

    def __init__(self, runs: Runs) -> None:
        self.ncol = max(1, math.ceil(len(runs) / self.ROWS))
        longest = max((len(label) for label, _ in runs), default=0)
        self.width = self.ncol * (self.CHAR_IN * longest + 0.8)
        self.rows = math.ceil(len(runs) / self.ncol)

    def figsize(self, plots_width: float) -> tuple[float, float]:
        return min(40.0, plots_width + self.width), max(5.0, 0.2 * self.rows + 1.0)

    def draw(self, ax: Axes) -> None:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", ncol=self.ncol)


def _width(n_runs: int, per_run: float) -> float:
    return min(40.0, max(8.0, 1.5 + 0.35 * n_runs * max(1.0, per_run * 0.6)))


def _run_axis(ax: Axes, runs: Runs) -> None:
    ax.set_xticks(range(len(runs)))
    long = max((len(label) for label, _ in runs), default=0) > 8 or len(runs) > 8
    ax.set_xticklabels([label for label, _ in runs], rotation=45 if long else 0, ha="right" if long else "center",
                       fontsize="small")
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.set_xlabel("run")


#: name -> function of every cross-run plot, in report order (their titles: ccbench.plan.suite.PLOT_TITLES).
PLOTS: dict[str, Callable[[Runs], Figure]] = {
    "goodput_box": goodput_box,
    "rtt_box": rtt_box,
    "delay_cdf": delay_cdf,
    "goodput_cdf": goodput_cdf,
    "totals": totals,
}
