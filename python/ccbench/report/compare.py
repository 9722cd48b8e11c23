"""``ccbench compare``'s figure: a scenario simulated beside the kernel's TCP through the emulator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl
from matplotlib.figure import Figure

from ccbench.formats.emulator import INTERVAL_S
from ccbench.simulate.plot import _binned, _finish, _FlowStyle

if TYPE_CHECKING:
    from ccbench.simulate.results import Result

__all__ = ["compare"]


def compare(sim: Result, emu: Result, kernel: list[dict[str, Any]], ports: list[int],
            link: str | None) -> Figure:
    """``ccbench compare``'s figure: each TCP flow simulated (solid) and as the kernel's TCP through the
    emulator (dashed): throughput, cwnd and sRTT, and the queue delay at ``link``, on the simulation's clock.

    ``kernel[k]`` is flow k's ``tcp-bulk`` report (its ``tcp_info`` trace) and ``ports[k]`` the server port
    its connection used; ``sim.summary["flows"]`` in the same order first lists those TCP flows by ``id``.
    Emulated times are shifted so that the first flow's first packet lines up with its start.
    """
    s = sim.summary
    names = [f["id"] for f in kernel]
    by_id = {f["id"]: (i, f) for i, f in enumerate(s.get("flows", []))}
    style = _FlowStyle(names)
    fig = Figure(figsize=(10, 11))
    fig.subplots_adjust(left=0.08, right=0.76, bottom=0.05, top=0.94, hspace=0.12)
    tput, cwnd, rtt, queue = fig.subplots(4, 1, sharex=True)
    fig.suptitle(f"{s.get('scenario', '')}: simulated (solid) vs kernel TCP through the emulator (dashed)")
    series, emu_series = sim.tables["flow_series"], emu.tables["flow_series"]
    # Emulated flows: the data direction of connection k is the one to server port ports[k].
    emu_flow = {}
    for j, f in enumerate(emu.summary.get("flows", [])):
        dst = str(f.get("tuple", "")).rpartition(":")[2]
        if dst.isdigit() and int(dst) in ports:
            emu_flow[ports.index(int(dst))] = j
    starts = [float(by_id[n][1].get("start_s") or 0.0) if n in by_id else 0.0 for n in names]
    first = dict(emu_series.group_by("flow").agg(pl.col("time_s").min()).iter_rows())
    # flow_series stamps a bin's end: one interval after its first packet.
    firsts = [first[j] - INTERVAL_S - starts[k] for k, j in emu_flow.items() if j in first]
    shift = min(firsts) if firsts else 0.0
    for k, name in enumerate(names):
        color = style.color(k)
        if name in by_id:
            mine = series.filter(pl.col("flow") == by_id[name][0])
            rate = "throughput_mbps" if "throughput_mbps" in mine.columns else "goodput_mbps"
            tput.plot(mine["time_s"], mine[rate], color=color, label=f"{name} simulated")
            for ax, col in ((cwnd, "cwnd_pkts"), (rtt, "srtt_ms")):
                if col in mine.columns:
                    part = mine.filter(pl.col(col).is_not_nan())
                    ax.plot(part["time_s"], part[col], color=color, label=f"{name} simulated")
        if k in emu_flow:
            theirs = emu_series.filter(pl.col("flow") == emu_flow[k])
            tput.plot(theirs["time_s"] - shift, theirs["throughput_mbps"], color=color, ls="--", label=f"{name} kernel")
        trace = (kernel[k].get("bulk") or {}).get("trace") or {}
        cols, rows = trace.get("columns", []), trace.get("rows", [])
        if rows and {"time_s", "cwnd", "srtt_ms"} <= set(cols):
            t = [r[cols.index("time_s")] + starts[k] for r in rows]
            cwnd.plot(t, [r[cols.index("cwnd")] for r in rows], color=color, ls="--", label=f"{name} kernel")
            rtt.plot(t, [r[cols.index("srtt_ms")] for r in rows], color=color, ls="--", label=f"{name} kernel")
    if link is not None:
        for res, ls, label, dt in ((sim, "-", "simulated", 0.0), (emu, "--", "emulated", shift)):
            ids = [x["id"] for x in res.summary.get("links", [])]
            if link in ids:
                mean = _binned(res.tables.lazy("sojourn").filter(pl.col("link") == ids.index(link)), "link", "sojourn_ms",
                               0.1)
                queue.plot(mean["time_s"] - dt, mean["mean"], color="black", ls=ls, label=f"{link} {label}")
    for ax, ylabel, title in ((tput, "throughput (Mbit/s)", "flows"), (cwnd, "cwnd (packets)", "flows"),
                              (rtt, "sRTT (ms)", "flows"), (queue, "queue delay (ms)", "100 ms means")):
        _finish(ax, ylabel, not ax.lines, title)
    queue.set_xlabel("time (s)")
    duration = float(s.get("duration_s") or 0.0)
    if duration > 0:
        queue.set_xlim(0, duration)
    return fig
