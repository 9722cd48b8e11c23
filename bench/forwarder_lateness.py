"""How late ccbench-emu's forwarder sends what falls due: the table behind `forwarder = "emulator"`.

    E=target/release/ccbench-emu
    sudo $E run SCENARIO.toml -o DIR --pcap --pcap-link bottleneck --pcap-link return \\
        --server "$E tcp-sink 5201 > DIR/sink.json" --flow "ID=$E tcp-bulk 10.201.0.2:5201 cubic 30 > DIR/bulk.json"
    .venv/bin/python bench/forwarder_lateness.py DIR/fwd.pcap:DIR/bottleneck.pcap DIR/rev.pcap:DIR/return.pcap

Each pair is a direction's capture as the forwarder sent it (`--pcap`: wall-clock
stamps taken after each send) and the capture of that direction's last link
(`--pcap-link`: each frame's departure on the emulator's virtual clock), frame
for frame in the same order (a path of one link per direction). A frame's
lateness is the difference less the smallest (0.05th percentile: the clocks'
offset); frames sent within 2 µs of the one before went out on the same
wake-up, whose lateness is its first frame's. Printed: the wake-ups'
lateness at the percentiles of `crates/ccbench-core/src/forwarder.rs`, the
middle 85 % of each capture (10 %-95 % of its frames).
"""

from __future__ import annotations

import struct
import sys

import numpy as np

PERCENTILES = [0, 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 98, 99, 99.5, 99.8, 99.9, 99.95, 99.98, 99.99, 99.995, 99.999]


def stamps(path: str) -> np.ndarray:
    """Each record's time stamp in ns (classic pcap, µs or ns resolution)."""
    with open(path, "rb") as f:
        data = f.read()
    nano = struct.unpack_from("<I", data)[0] == 0xA1B23C4D
    out, at = [], 24
    while at + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from("<IIII", data, at)
        out.append(sec * 1_000_000_000 + frac * (1 if nano else 1000))
        at += 16 + incl
    return np.array(out, dtype=np.int64)


def wake_lateness(sent_pcap: str, due_pcap: str) -> np.ndarray:
    """Lateness (µs) of each wake-up that sent frames of this direction."""
    sent, due = stamps(sent_pcap), stamps(due_pcap)
    n = min(len(sent), len(due))
    sent, due = sent[:n], due[:n]
    late = sent - due
    late = (late - np.percentile(late, 0.05)) / 1e3
    keep = slice(int(0.10 * n), int(0.95 * n))
    sent, late = sent[keep], late[keep]
    first = np.r_[True, np.diff(sent) > 2000]
    return late[first]


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    w = np.concatenate([wake_lateness(*pair.split(":")) for pair in sys.argv[1:]])
    print(f"{len(w)} wake-ups; mean {w.mean():.1f} us")
    for p, v in zip(PERCENTILES, np.percentile(w, PERCENTILES)):
        print(f"    ({p}, {max(v, 0.0):.1f}),")


if __name__ == "__main__":
    main()
