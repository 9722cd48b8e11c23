"""The live emulator's per-packet records as the simulator's Parquet tables.

``ccbench-emu`` writes ``packets.bin`` into its output directory: one
28-byte little-endian record per packet dequeued by each link (time and
sojourn in ns, the link's index in its direction, the direction and whether
the link is the last of the packet's route, the queue class, the flow's
index among the flows that direction saw, the frame's bytes). :func:`convert`
turns it into

- ``sojourn.parquet`` (``time_s, link, flow, class, sojourn_ms``), the
  simulator's table: ``link`` numbers the forward links, then the reverse
  ones, as ``summary.json``'s ``emulator.fwd.links`` and ``.rev.links`` list
  them; ``flow`` numbers ``emulator.fwd.flows``, then ``.rev.flows``;
- ``flow_series.parquet`` (``time_s, flow, throughput_mbps,
  delivered_bytes``): what each flow's packets delivered out of the last
  link of their route, per 100 ms, i.e. the receiver's view through the
  emulator;
- ``link_series.parquet`` (``time_s, link, backlog_pkts, backlog_bytes,
  tx_bytes, drops, marks``; counters cumulative) from ``links.bin``, the
  links' state every 100 ms;

and removes the raw files. Times count from the forwarder's start.

It also gives ``summary.json`` the simulator's ``duration_s``, ``flows`` and
``links`` sections (:func:`simulator_sections`), so ``ccbench show``, the
plots and :func:`ccbench.load` read an emulated run as they read a
simulated one: each flow is a 5-tuple the emulator carried, named after
its client host's scenario flow (``long tcp 36610>5202``), with the frame
bytes it delivered out of its route's last link (``delivered_bytes``) and
their rate over its active span (``throughput_mbps``, first to last
delivery; Ethernet and IP headers included, so not goodput); each link
has the forwarder's counters and sojourn statistics (10 µs resolution).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ccbench.core.errors import CcbenchError

__all__ = ["LINK_RECORD", "RECORD", "convert", "simulator_sections"]

RECORD = np.dtype([("t_ns", "<u8"), ("sojourn_ns", "<u8"), ("stage", "<u2"), ("dir", "u1"), ("class", "u1"),
                   ("flow", "<u4"), ("size", "<u4")])
LINK_RECORD = np.dtype([("t_ns", "<u8"), ("stage", "<u2"), ("dir", "u1"), ("pad", "V5"), ("backlog_pkts", "<u8"),
                        ("backlog_bytes", "<u8"), ("drops", "<u8"), ("marks", "<u8"), ("tx_bytes", "<u8")])
INTERVAL_S = 0.1


def convert(out: str | os.PathLike[str], scenario_toml: str | None = None) -> list[Path]:
    """Write the Parquet tables from ``out/packets.bin`` (see the module docs); the paths written.

    With ``scenario_toml`` (the resolved scenario the run emulated) also
    ``scenario.toml``, and the summary's ``seed`` from it.
    """
    root = Path(out)
    raw = root / "packets.bin"
    if not raw.is_file():
        return []
    summary = json.loads((root / "summary.json").read_text())
    emu = summary.get("emulator") or {}
    n_links = [len((emu.get(d) or {}).get("links", [])) for d in ("fwd", "rev")]
    n_flows = [len((emu.get(d) or {}).get("flows", [])) for d in ("fwd", "rev")]
    rec = np.fromfile(raw, dtype=RECORD)
    rev = (rec["dir"] & 1) == 1
    link = rec["stage"].astype(np.uint32) + np.where(rev, n_links[0], 0).astype(np.uint32)
    flow = np.where(rec["flow"] == np.uint32(0xFFFFFFFF), rec["flow"],
                    rec["flow"] + np.where(rev, n_flows[0], 0).astype(np.uint32))
    sojourn = pl.DataFrame({
        "time_s": rec["t_ns"] / 1e9,
        "link": link,
        "flow": flow,
        "class": rec["class"].astype(np.uint32),
        "sojourn_ms": rec["sojourn_ns"] / 1e6,
    }).sort("time_s")
    written = [root / "sojourn.parquet"]
    sojourn.write_parquet(written[0])
    # The receiver's view: packets leaving the last link of their route.
    last = (rec["dir"] & 2) != 0
    leaving = pl.DataFrame({"time_s": rec["t_ns"][last] / 1e9, "flow": flow[last],
                            "bytes": rec["size"][last].astype(np.uint64)})
    series = (
        leaving.with_columns(bin=(pl.col("time_s") / INTERVAL_S).floor().cast(pl.Int64))
        .group_by("flow", "bin").agg(pl.col("bytes").sum())
        .sort("flow", "bin")
        .with_columns(time_s=(pl.col("bin") + 1) * INTERVAL_S,
                      throughput_mbps=pl.col("bytes") * 8 / INTERVAL_S / 1e6,
                      delivered_bytes=pl.col("bytes").cum_sum().over("flow"))
        .select("time_s", "flow", "throughput_mbps", "delivered_bytes")
    )
    written.append(root / "flow_series.parquet")
    series.write_parquet(written[1])
    summary.update(simulator_sections(summary, leaving))
    if scenario_toml is not None:
        import tomllib

        from ccbench.simulate.results import SCENARIO_FILE

        (root / SCENARIO_FILE).write_text(scenario_toml, encoding="utf-8")
        summary["seed"] = tomllib.loads(scenario_toml).get("seed")
    (root / "summary.json").write_text(json.dumps(summary, indent=2))
    raw.unlink()
    links = root / "links.bin"
    if links.is_file():
        ls = np.fromfile(links, dtype=LINK_RECORD)
        idx = ls["stage"].astype(np.uint32) + np.where(ls["dir"] == 1, n_links[0], 0).astype(np.uint32)
        frame = pl.DataFrame({"time_s": ls["t_ns"] / 1e9, "link": idx,
                              **{c: ls[c] for c in ("backlog_pkts", "backlog_bytes", "tx_bytes", "drops", "marks")}})
        written.append(root / "link_series.parquet")
        frame.sort("link", "time_s").write_parquet(written[-1])
        links.unlink()
    return written


def simulator_sections(summary: dict[str, Any], leaving: pl.DataFrame) -> dict[str, Any]:
    """``duration_s``, ``flows``, ``links`` and ``probes`` in the simulator's shape from an emulated
    run's summary and its packets leaving their routes (``time_s, flow, bytes``), see the module docs."""
    emu = summary.get("emulator") or {}
    host_of = {h["ip"]: h["flow"] for h in summary.get("hosts", [])}
    flows = []
    per_flow = {int(r["flow"]): r for r in leaving.group_by("flow").agg(
        pl.col("bytes").sum(), pl.col("time_s").min().alias("first"), pl.col("time_s").max().alias("last"),
        pl.len().alias("n")).iter_rows(named=True)}
    names = [*(emu.get("fwd") or {}).get("flows", []), *(emu.get("rev") or {}).get("flows", [])]
    for i, name in enumerate(names):
        r = per_flow.get(i)
        span = r["last"] - r["first"] if r else 0.0
        flows.append({"id": _flow_name(name, host_of), "kind": name.split()[0], "tuple": name,
                      "delivered_bytes": int(r["bytes"]) if r else 0,
                      "throughput_mbps": r["bytes"] * 8 / span / 1e6 if r and r["n"] > 1 and span > 0 else None})
    links = []
    for d in ("fwd", "rev"):
        for st in (emu.get(d) or {}).get("links", []):
            rate = st["rate_bps"] / 1e6 if st["rate_bps"] > 0 else None  # 0: unlimited
            links.append({"id": st["link"], "qdisc": st["qdisc"], "direction": d, "rate_mbps": rate,
                          "utilization": st["utilization"] if rate is not None else None,
                          "sojourn_ms": {k: st[f"sojourn_{k}_ms"] for k in ("mean", "p50", "p90", "p99", "max")},
                          "drops": st["drops_overlimit"] + st["drops_aqm"], "marks": st["marks"], "lost": st["lost"],
                          "arrivals": st["arrivals"], "tx_packets": st["tx_pkts"]})
    return {"duration_s": emu.get("duration_s"), "warmup_s": 0.0, "flows": flows, "links": links, "probes": []}


def _flow_name(name: str, host_of: dict[str, str]) -> str:
    """``tcp 10.201.0.11:36610 > 10.201.0.2:5202`` -> ``long tcp 36610>5202`` (``long``: the client host's flow)."""
    parts = name.split()
    if len(parts) != 4 or parts[2] != ">":
        return name
    (src, sport), (dst, dport) = (_endpoint(p) for p in (parts[1], parts[3]))
    host = host_of.get(src) or host_of.get(dst)
    ends = f"{sport}>{dport}" if sport and dport else f"{src}>{dst}"
    return f"{host} {parts[0]} {ends}" if host else f"{parts[0]} {ends}"


def _endpoint(text: str) -> tuple[str, str | None]:
    addr, colon, port = text.rpartition(":")
    return (addr, port) if colon else (text, None)


def emu_binary() -> str:
    """The `ccbench-emu` binary: $CCBENCH_EMU, then PATH, then this checkout's target/."""
    import shutil

    if env := os.environ.get("CCBENCH_EMU"):
        return env
    if found := shutil.which("ccbench-emu"):
        return found
    root = Path(__file__).resolve().parents[3]  # python/ccbench/formats/ in a checkout
    for profile in ("release", "debug"):
        cand = root / "target" / profile / "ccbench-emu"
        if cand.is_file():
            return str(cand)
    raise CcbenchError("ccbench-emu not found: build it with `cargo build --release -p ccbench-emu` "
                       "(or set CCBENCH_EMU to its path)")


def finish_run(out: Path, scenario: Path, overrides: Sequence[str]) -> None:
    """An emulated run's directory as a simulated one's: tables, summary sections, scenario.toml, timeseries.png."""
    from ccbench.simulate.api import validate
    from ccbench.simulate.results import PLOT_FILE, load

    if convert(out, validate(scenario, set=list(overrides), streamed=True)):
        load(out).plot(out / PLOT_FILE)  # not when the forwarder recorded nothing (did not start)
