"""``ccbench compare``: a scenario's TCP flows simulated and with the kernel's own TCP through the emulator,
side by side, and the figure of both."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from ccbench.core.errors import CcbenchError
from ccbench.core.png import write_figure
from ccbench.formats.emulator import INTERVAL_S, emu_binary, finish_run
from ccbench.report.suite import mean_ci95
from ccbench.simulate.api import run, validate
from ccbench.simulate.plot import _binned, _finish, _FlowStyle
from ccbench.simulate.results import Result, load

__all__ = ["Comparison", "EmulationError", "SeedComparison", "Spread", "compare", "default_out", "run_compare",
           "run_compare_seeds"]


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


class EmulationError(CcbenchError):
    """The emulator failed, or a flow's kernel TCP reported nothing."""


@dataclass
class Comparison:
    """What :func:`run_compare` found: the TCP flows (index and summary entry) and, per flow, the kernel's
    sink and bulk reports; the compared rows (metric, simulated, emulated); the emulator's summary section."""

    flows: list[tuple[int, dict[str, Any]]]
    kernel: list[tuple[dict[str, Any], dict[str, Any]]]
    rows: list[tuple[str, Any, Any]]
    emulator: dict[str, Any]
    out: Path


#: The HyStart row's metric; the detectors of each side follow it in parentheses.
HYSTART = "HyStart exit cwnd"


def forwarder_overrides(scenario: Path, overrides: Sequence[str]) -> list[str]:
    """``forwarder = "emulator"`` for each link that ends a flow's path or reverse path (as ``overrides``
    leave the scenario): the emulator runs a path's links on its virtual clock and its forwarder sends a
    packet once, when it leaves the last of them."""
    import tomllib

    s = tomllib.loads(validate(scenario, set=overrides))
    last = {route[-1] for f in s.get("flows", []) for route in (f.get("path"), f.get("reverse")) if route}
    return [f'links.{i}.forwarder="emulator"' for i, link in enumerate(s.get("links", [])) if link["id"] in last]


def default_out(scenario: Path) -> Path:
    """Where compare writes when not told: ``results/SCENARIO-compare``."""
    return Path("results") / f"{scenario.stem}-compare"


def run_compare(scenario: Path, out: Path | None, overrides: Sequence[str], *, no_rt: bool = False,
                forwarder: bool = False) -> Comparison:
    """``ccbench compare``: run SCENARIO's TCP flows simulated and with the kernel's own TCP through the
    emulator into OUT (default ``results/SCENARIO-compare``), and write OUT/compare.png and compare.json.
    With ``forwarder`` the simulated side releases packets where they leave a path as the emulator's
    forwarder does (``forwarder = "emulator"`` on each path's last link).

    Raises CcbenchError for a scenario compare cannot run, EmulationError when the emulation fails.
    """
    # The kernel's counters cover the whole run, so the simulation's must too.
    sim_set = [*overrides, 'metrics.warmup="0s"', *(forwarder_overrides(scenario, overrides) if forwarder else [])]
    result = run(scenario, set=sim_set)
    sim = result.summary
    flows = [(i, f) for i, f in enumerate(sim["flows"]) if f["kind"] == "tcp"]
    if not flows:
        raise CcbenchError(f"{scenario}: compare needs a TCP flow")
    # The kernel's TCP has RFC 3168 ECN (tcp_ecn = 1 in the flow's own namespace; the server's
    # default 2 accepts it) but not the other modes a simulated flow may use.
    other = [f"{f['id']}: {f['ecn']!r}" for _, f in flows if f["ecn"] not in ("off", "classic")]
    if other:
        raise CcbenchError(f"{scenario}: compare runs TCP flows with ecn false or \"classic\", not {', '.join(other)}")
    duration = float(sim["duration_s"])
    out = out or default_out(scenario)
    emu = emu_binary()
    series = result.tables["flow_series"]
    ports = [5201 + k for k in range(len(flows))]  # flow k's connection, to tell the emulated flows apart
    with tempfile.TemporaryDirectory(prefix="ccbench-compare-") as tmp:
        argv = [emu, "run", str(scenario), "-o", str(out)]
        for k, (_, f) in enumerate(flows):
            port, start = ports[k], float(f.get("start_s") or 0.0)
            secs = float(f.get("stop_s") or duration) - start
            argv += ["--server", f"exec {emu} tcp-sink {port} > {tmp}/sink-{k}.json"]
            ecn_on = "sysctl -qw net.ipv4.tcp_ecn=1 || exit 1; " if f["ecn"] == "classic" else ""
            argv += ["--flow", f"{f['id']}={ecn_on}sleep {start:g}; exec {emu} tcp-bulk 10.201.0.2:{port} "
                               f"{f['cc']} {secs:g} > {tmp}/bulk-{k}.json"]
        for o in overrides:
            argv += ["--set", o]
        if no_rt:
            argv.append("--no-rt")
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise EmulationError(f"emulation failed: {proc.stderr.strip()}")
        kernel = []
        for k in range(len(flows)):
            try:
                kernel.append(tuple(json.loads(Path(tmp, f"{name}-{k}.json").read_text().strip().splitlines()[-1])
                                    for name in ("sink", "bulk")))
            except (OSError, ValueError, IndexError):
                raise EmulationError(f"emulation failed: flow {flows[k][1]['id']} reported nothing\n{proc.stderr.strip()}") from None
    finish_run(out, scenario, overrides)
    emu_sum = json.loads((out / "summary.json").read_text())["emulator"]
    emu_links = {link["link"]: link for link in emu_sum["fwd"]["links"]}
    sim_links = [link for link in sim["links"] if link["id"] in emu_links]
    bott = max(sim_links, key=lambda link: link["sojourn_ms"]["mean"] or 0.0)["id"] if sim_links else None

    def active_goodput(i: int, f: dict[str, Any]) -> float:
        """Mean goodput over the flow's active time (a later flow's is not diluted by the time before it)."""
        start, stop = float(f.get("start_s") or 0.0), float(f.get("stop_s") or duration)
        mine = series.filter((series["flow"] == i) & (series["time_s"] > start) & (series["time_s"] <= stop))
        return float(mine["goodput_mbps"].mean()) if mine.height else float(f["goodput_mbps"])

    sim_good = [active_goodput(i, f) for i, f in flows]
    emu_good = [sink["goodput_mbps"] for sink, _ in kernel]
    several = len(flows) > 1
    rows = []
    for k, ((_, f), (sink, bulk)) in enumerate(zip(flows, kernel)):
        name = (lambda m: f"{f['id']} {m}") if several else (lambda m: m)
        rows += [(name("goodput Mbit/s"), sim_good[k], emu_good[k])]
        if several:
            rows += [(name("share"), sim_good[k] / sum(sim_good), emu_good[k] / sum(emu_good))]
        rows += [(name("retransmits"), f["retransmits"], bulk["retransmits"]),
                 (name("sRTT mean ms"), f["rtt_ms"]["mean"], bulk["srtt_mean_ms"])]
        sim_exit, kernel_exit = f.get("hystart"), bulk.get("hystart")
        if sim_exit or kernel_exit:  # the detectors in the label: simulated / kernel
            by = " / ".join((e or {}).get("by", "none") for e in (sim_exit, kernel_exit))
            rows.append((name(f"{HYSTART} ({by})"), (sim_exit or {}).get("cwnd"), (kernel_exit or {}).get("cwnd")))
    if bott is not None:
        sim_link = next(link for link in sim["links"] if link["id"] == bott)
        rows.append((f"{bott} queue delay mean ms", sim_link["sojourn_ms"]["mean"], emu_links[bott]["sojourn_mean_ms"]))
    kernel_flows = [{"id": f["id"], "bulk": bulk} for (_, f), (_, bulk) in zip(flows, kernel)]
    write_figure(compare(result, load(out), kernel_flows, ports, bott), out / "compare.png", dpi=110)
    (out / "compare.json").write_text(json.dumps(
        {"flow": flows[0][1]["id"], "cc": flows[0][1]["cc"], "kernel_cc": kernel[0][1]["cc"], "simulated_set": sim_set,
         "flows": [{"id": f["id"], "cc": f["cc"], "kernel_cc": bulk["cc"], "sink": sink, "bulk": bulk}
                   for (_, f), (sink, bulk) in zip(flows, kernel)],
         "rows": [{"metric": n, "simulated": a, "emulated": b} for n, a, b in rows]}, indent=2))
    return Comparison(flows, kernel, rows, emu_sum, out)


# --- several seeds -----------------------------------------------------------------------------

#: A metric over the seeds: the mean, the half-width of its 95 % interval (None for one value), the values.
Spread = tuple[float, float | None, list[float]]


@dataclass
class SeedComparison:
    """What :func:`run_compare_seeds` found: one :class:`Comparison` per seed, and the compared rows over
    them (metric, simulated, emulated), a side's :data:`Spread` or None where no seed had a value."""

    seeds: list[int]
    runs: list[Comparison]
    rows: list[tuple[str, Spread | None, Spread | None]]
    out: Path


def run_compare_seeds(scenario: Path, out: Path | None, overrides: Sequence[str], seeds: int, *,
                      no_rt: bool = False, forwarder: bool = False) -> SeedComparison:
    """``ccbench compare --seeds N``: :func:`run_compare` at seeds 1..N, each into OUT/seed=K, and each
    metric's mean and 95 % interval over them on both sides, written to OUT/compare.json.

    The emulated path draws its random elements (netem's jitter and loss) from the seed as the simulation
    does, so one seed compares one realisation of them; the interval says how far the next would move.
    """
    if any(o.partition("=")[0].strip() == "seed" for o in overrides):
        raise CcbenchError("--seeds runs seeds 1..N: leave out --set seed=")
    out = out or default_out(scenario)
    numbers = list(range(1, seeds + 1))
    runs = [run_compare(scenario, out / f"seed={s}", [*overrides, f"seed={s}"], no_rt=no_rt, forwarder=forwarder)
            for s in numbers]
    # A HyStart row's label names each side's detectors, which may differ from seed to seed: the rows
    # are matched without them, and the label counts them.
    table: dict[str, tuple[list[Any], list[Any]]] = {}
    detectors: dict[str, tuple[list[str], list[str]]] = {}
    for c in runs:
        for name, a, b in c.rows:
            key, by = _split_hystart(name)
            sim, emu = table.setdefault(key, ([], []))
            sim.append(a)
            emu.append(b)
            if by is not None:
                for side, label in zip(detectors.setdefault(key, ([], [])), by):
                    side.append(label)
    rows = []
    for key, (sim, emu) in table.items():
        name = f"{key} ({_tally(detectors[key][0])} / {_tally(detectors[key][1])})" if key in detectors else key
        rows.append((name, _spread(sim), _spread(emu)))
    (out / "compare.json").write_text(json.dumps(
        {"seeds": numbers, "runs": [f"seed={s}" for s in numbers],
         "rows": [{"metric": n, **_side("simulated", a), **_side("emulated", b)} for n, a, b in rows]}, indent=2))
    return SeedComparison(numbers, runs, rows, out)


def _split_hystart(name: str) -> tuple[str, tuple[str, str] | None]:
    """A row's metric without the HyStart row's detectors, and those (simulated, kernel)."""
    head, sep, tail = name.rpartition(f"{HYSTART} (")
    if not sep:
        return name, None
    sim, _, kernel = tail.removesuffix(")").partition(" / ")
    return head + HYSTART, (sim, kernel)


def _tally(labels: Sequence[str]) -> str:
    """``ack train ×3, delay ×2``: each label with how many seeds gave it, most first."""
    return ", ".join(f"{label} ×{n}" for label, n in Counter(labels).most_common())


def _spread(values: Sequence[Any]) -> Spread | None:
    nums = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
    if not nums:
        return None
    mean, half = mean_ci95(nums)
    return mean, half, nums


def _side(side: str, s: Spread | None) -> dict[str, Any]:
    if s is None:
        return {side: None, f"{side}_ci95": None, f"{side}_each": []}
    return {side: s[0], f"{side}_ci95": s[1], f"{side}_each": s[2]}
