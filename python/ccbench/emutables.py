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
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["LINK_RECORD", "RECORD", "convert"]

RECORD = np.dtype([("t_ns", "<u8"), ("sojourn_ns", "<u8"), ("stage", "<u2"), ("dir", "u1"), ("class", "u1"),
                   ("flow", "<u4"), ("size", "<u4")])
LINK_RECORD = np.dtype([("t_ns", "<u8"), ("stage", "<u2"), ("dir", "u1"), ("pad", "V5"), ("backlog_pkts", "<u8"),
                        ("backlog_bytes", "<u8"), ("drops", "<u8"), ("marks", "<u8"), ("tx_bytes", "<u8")])
INTERVAL_S = 0.1


def convert(out: str | os.PathLike[str]) -> list[Path]:
    """Write the Parquet tables from ``out/packets.bin`` (see the module docs); the paths written."""
    root = Path(out)
    raw = root / "packets.bin"
    if not raw.is_file():
        return []
    emu = json.loads((root / "summary.json").read_text()).get("emulator") or {}
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
