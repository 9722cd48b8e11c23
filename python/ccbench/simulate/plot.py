"""Flent-like time-series figure of one run: throughput, congestion window,
RTT, queue delay (per queue for DualPI2) and, when anything was CE-marked, CE
fraction and α.

Up to 16 flows each get their own color and legend entry. Beyond that (50
CUBIC flows, say) flows are colored by group — the id before the copy
number, ``cubic`` for ``cubic.1`` … ``cubic.50`` — and the legend has one
entry per group with its flow count, so it stays readable.

Figures are built on matplotlib's object API with no pyplot, so nothing ever
opens a window or touches global figure state; PNGs render through Agg.
Dense per-packet tables (RTT, sojourn) are binned with Polars before plotting
so a million samples cost a group-by, not a million line vertices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from ccbench.simulate.results import Result

__all__ = ["delivery_with_rtt", "timeseries"]

_COLORS = [f"C{i}" for i in range(10)]  # flows, then probes
_LINK_COLORS = ["black", "tab:gray", "saddlebrown", "darkolivegreen", "darkslateblue", "darkcyan"]
_MAX_LEGEND = 16


def timeseries(result: Result) -> Figure:
    """Three stacked panels sharing the time axis; each flow keeps its color throughout."""
    s = result.summary
    duration = float(s.get("duration_s") or 0.0)
    width = bin_width(duration)
    flows = [f["id"] for f in s.get("flows", [])]
    probes = [p["id"] for p in s.get("probes", [])]
    links = [link["id"] for link in s.get("links", [])]

    series = result.tables["flow_series"]
    marked = "ce_fraction" in series.columns and bool(series["ce_fraction"].fill_nan(None).drop_nulls().max() or 0)
    # Fixed margins, legends in the right-hand 20 %: the constrained layout cost a
    # third of the figure's drawing time.
    fig = Figure(figsize=(10, 13.5 if marked else 11))
    fig.subplots_adjust(left=0.08, right=0.79, bottom=0.05, top=0.95, hspace=0.12)
    axes = fig.subplots(5 if marked else 4, 1, sharex=True)
    ncols = []
    tput, cwnd, rtt, queue = axes[:4]
    fig.suptitle(f"{s.get('scenario', '')} (seed {s.get('seed')}, {duration:g} s)")
    style = _FlowStyle(flows + probes)

    # Payload received per interval in any order: bounded by the link, unlike
    # in-order goodput, which jumps when a loss recovery releases held data.
    rate = "throughput_mbps" if "throughput_mbps" in series.columns else "goodput_mbps"
    for i, part in _parts(series, "flow"):
        tput.plot(part["time_s"], part[rate], color=style.color(i), label=style.label(i))
    ncols += [_finish(tput, f"{rate.removesuffix('_mbps')} (Mbit/s)", series.is_empty(), "flows")]

    style.new_panel()
    for i, part in _parts(series.filter(pl.col("cwnd_pkts").is_not_nan()) if "cwnd_pkts" in series.columns
                          else series.clear(), "flow"):
        cwnd.plot(part["time_s"], part["cwnd_pkts"], color=style.color(i), label=style.label(i))
    ncols += [_finish(cwnd, "cwnd (packets)", series.is_empty() or "cwnd_pkts" not in series.columns, "flows")]

    samples = _binned(result.tables.lazy("rtt"), "flow", "rtt_ms", width)
    style.new_panel()
    for i, part in _parts(samples, "flow"):
        rtt.plot(part["time_s"], part["mean"], color=style.color(i), label=style.label(i))
    # Media flows have no per-ACK RTT samples: draw SCReAM's sRTT instead.
    media = {i for i, f in enumerate(s.get("flows", [])) if f.get("kind") == "media"}
    for i, part in _parts(series.filter(pl.col("flow").is_in(list(media))), "flow"):
        rtt.plot(part["time_s"], part["srtt_ms"], color=style.color(i), ls="--", label=style.label(i, " (sRTT)"))
    pings = result.tables["probes"]
    for j, part in _parts(pings, "probe"):
        rtt.plot(part["time_s"], part["rtt_ms"], color=style.color(len(flows) + j), lw=0.8,
                 marker=".", ms=3, label=style.label(len(flows) + j, " (probe)"))
    ncols += [_finish(rtt, "RTT (ms)", samples.is_empty() and pings.is_empty(), f"flow RTT: {_ms(width)} means")]

    # Two-queue qdiscs (DualPI2) get one line per queue: C solid, L dashed.
    two_queue = {i for i, link in enumerate(s.get("links", [])) if link.get("sojourn_l_ms") is not None}
    raw = result.tables.lazy("sojourn")
    if "class" not in raw.collect_schema().names():
        raw = raw.with_columns(pl.lit(0, pl.UInt32).alias("class"))
    sojourn = _binned(raw.with_columns(key=pl.col("link") * 2 + pl.col("class")), "key", "sojourn_ms", width)
    for key, part in _parts(sojourn, "key"):
        k, cls = divmod(key, 2)
        color = _LINK_COLORS[k % len(_LINK_COLORS)]
        label = _name(links, k) + ((" L" if cls else " C") if k in two_queue else "")
        queue.fill_between(part["time_s"], part["mean"], part["max"], color=color, alpha=0.2, lw=0)
        queue.plot(part["time_s"], part["mean"], color=color, ls="--" if cls else "-", label=label)
    ncols += [_finish(queue, "queue delay (ms)", sojourn.is_empty(), f"links: {_ms(width)} mean,\nmax shaded")]

    if marked:
        ce = axes[4]
        style.new_panel()
        for i, part in _parts(series, "flow"):
            ce.plot(part["time_s"], part["ce_fraction"], color=style.color(i), label=style.label(i))
            if part["alpha"].fill_nan(None).drop_nulls().len():
                ce.plot(part["time_s"], part["alpha"], color=style.color(i), ls=":", label=style.label(i, " α"))
        ncols += [_finish(ce, "CE fraction / α", False, "flows (α dotted)")]

    warmup = float(s.get("warmup_s") or 0.0)
    if duration > 0:
        warmup = min(warmup, duration)  # a label outside the axes would collapse the layout
    if warmup > 0:  # the summary's statistics leave this span out
        for ax in axes:
            ax.axvspan(0, warmup, color="grey", alpha=0.08, lw=0)
        tput.annotate("warm-up", (warmup / 2, 1), xycoords=("data", "axes fraction"), xytext=(0, -2),
                      textcoords="offset points", ha="center", va="top", fontsize="small", color="grey")
    axes[-1].set_xlabel("time (s)")
    if max(ncols) > 1:  # two-column legends need more room on the right
        fig.subplots_adjust(right=0.66)
    if duration > 0:
        queue.set_xlim(0, duration)
    return fig


def bin_width(duration_s: float) -> float:
    """Seconds per bin: 100 ms, widened so a long run still has at most ~500 bins per line."""
    return max(0.1, duration_s / 500)


def _binned(table: pl.LazyFrame, key: str, value: str, width: float) -> pl.DataFrame:
    """Mean and max of ``value`` per ``key`` per time bin, stamped at the bin centre (one
    query over a per-packet table, which need not be loaded: see ``Tables.lazy``)."""
    return (
        table.group_by(key, (pl.col("time_s") // width).alias("bin"))
        .agg(pl.col(value).mean().alias("mean"), pl.col(value).max().alias("max"))
        .sort(key, "bin")
        .with_columns(time_s=(pl.col("bin") + 0.5) * width)
        .collect()
    )


def _parts(df: pl.DataFrame, key: str) -> list[tuple[int, pl.DataFrame]]:
    """Rows of each id, in id order, sorted by time."""
    if df.is_empty():
        return []
    groups = df.sort(key, "time_s").partition_by(key, as_dict=True)
    return sorted(((int(k[0]), part) for k, part in groups.items()), key=lambda kv: kv[0])


def _finish(ax: Axes, ylabel: str, empty: bool, legend_title: str) -> int:
    """Label, grid and legend (right of the panel) an axes; the legend's number of columns (0: none)."""
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if empty:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center", va="center", color="grey")
        return 0
    ax.set_ylim(bottom=0)
    handles, labels = ax.get_legend_handles_labels()
    if not 0 < len(handles) <= _MAX_LEGEND:
        return 0
    ncol = 1 + len(handles) // 11
    ax.legend(handles, labels, title=legend_title, loc="upper left", bbox_to_anchor=(1.01, 1),
              fontsize="small", title_fontsize="small", ncol=ncol)
    return ncol


def _color(i: int) -> str:
    return _COLORS[i % len(_COLORS)]


def flow_group(name: str) -> str:
    """A flow's group: its id without the copy number ``count`` adds (``cubic.7`` -> ``cubic``)."""
    base, dot, tail = name.rpartition(".")
    return base if dot and tail.isdigit() else name


class _FlowStyle:
    """Color and legend label per flow (then probe) index: one each up to _MAX_LEGEND, else per group."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.grouped = len(names) > _MAX_LEGEND
        groups = [flow_group(n) for n in names]
        order = list(dict.fromkeys(groups))
        self.group = {i: order.index(g) for i, g in enumerate(groups)}
        self.size = {g: groups.count(g) for g in order}
        self.groups = groups
        self.labelled: set[tuple[int, str]] = set()

    def new_panel(self) -> None:
        """Legend entries start again: each panel labels each group once."""
        self.labelled.clear()

    def color(self, i: int) -> str:
        return _color(self.group.get(i, i) if self.grouped else i)

    def label(self, i: int, suffix: str = "") -> str:
        if not self.grouped:
            return _name(self.names, i) + suffix
        g = self.groups[i] if i < len(self.groups) else f"#{i}"
        if (self.group.get(i, i), suffix) in self.labelled:
            return "_nolegend_"  # one legend entry per group
        self.labelled.add((self.group.get(i, i), suffix))
        n = self.size.get(g, 1)
        return f"{g} ({n} flows){suffix}" if n > 1 else g + suffix


def _name(names: list[str], i: int) -> str:
    return names[i] if i < len(names) else f"#{i}"


def _ms(width_s: float) -> str:
    return f"{width_s * 1000:g} ms"


def delivery_with_rtt(result: Result, throughput: tuple[float, float] | None = None,
                      rtt: tuple[float, float | str] | None = None) -> Figure:
    """flent's ``tcp_delivery_with_rtt``: per-flow delivery rate (left axis) and the
    ICMP and per-flow TCP RTT (right axis) against time, as the SCE/L4S reports drew them.

    ``throughput`` and ``rtt`` fix the axes (Mbit/s, ms); the top of ``rtt`` may
    be ``"Nx"``: (highest RTT − bottom) · N + bottom, the reports' rule for
    queues too deep for a fixed axis.
    """
    s = result.summary
    duration = float(s.get("duration_s") or 0.0)
    flows = [f["id"] for f in s.get("flows", [])]
    probes = [p["id"] for p in s.get("probes", [])]
    style = _FlowStyle(flows + probes)
    # Fixed margins: the constrained layout would take half of this plot's drawing time.
    fig = Figure(figsize=(10, 5.5))
    fig.subplots_adjust(left=0.07, right=0.74, bottom=0.1, top=0.92)
    ax = fig.subplots()
    right = ax.twinx()
    fig.suptitle(f"{s.get('scenario', '')}: delivery rate and RTT (seed {s.get('seed')}, {duration:g} s)")
    series = result.tables["flow_series"]
    rate = "throughput_mbps" if "throughput_mbps" in series.columns else "goodput_mbps"
    for i, part in _parts(series, "flow"):
        ax.plot(part["time_s"], part[rate], color=style.color(i), label=style.label(i, " delivery rate"))
    highest = 0.0
    stops = [f.get("stop_s") for f in s.get("flows", [])]
    for i, part in _parts(series.filter(pl.col("srtt_ms").is_not_nan()) if "srtt_ms" in series.columns
                          else series.clear(), "flow"):
        if i < len(stops) and stops[i] is not None:  # sRTT holds its last value once a flow stops
            part = part.filter(pl.col("time_s") <= stops[i])
        right.plot(part["time_s"], part["srtt_ms"], color=style.color(i), ls="--", lw=0.9,
                   label=style.label(i, " TCP RTT"))
        highest = max(highest, float(part["srtt_ms"].max() or 0.0))
    for j, part in _parts(result.tables["probes"], "probe"):
        right.plot(part["time_s"], part["rtt_ms"], color=style.color(len(flows) + j), lw=0.8,
                   label=style.label(len(flows) + j, " ICMP RTT"))
        highest = max(highest, float(part["rtt_ms"].max() or 0.0))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("delivery rate (Mbit/s)")
    right.set_ylabel("RTT (ms)")
    ax.grid(True, alpha=0.3)
    if throughput is not None:
        ax.set_ylim(*throughput)
    else:
        ax.set_ylim(bottom=0)
    if rtt is not None:
        lo, hi = rtt
        if isinstance(hi, str):
            hi = (max(highest, lo + 1e-3) - lo) * float(hi.rstrip("x")) + lo
        right.set_ylim(lo, hi)
    if duration > 0:
        ax.set_xlim(0, duration)
    handles = ax.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    if 0 < len(handles[0]) + len(more[0]) <= 2 * _MAX_LEGEND:
        ax.legend(handles[0] + more[0], handles[1] + more[1], loc="upper left", bbox_to_anchor=(1.08, 1),
                  fontsize="small")
    return fig
