"""The SCReAM test record's Tests 1-3, run with SCReAM's own code and kernel Prague flows through ccbench's path.

    sudo .venv/bin/python bench/scream_record_real.py --scream DIR [--tests 1,2,3] [--points 5,25] [--repeat 1]
        [-o tests/data/scream_record_real.json]

The schedule of the ``scream-test-record*`` suites (SCReAM alone for 20 s,
then one TCP Prague flow more every 20 s up to four, 100 s) on their path
(100 Mbit/s DualPI2 with min_qlen_step 2, the RTT on the feedback path),
with the real BW test tool at each test's commit (Test 1: 994f9a4 by
microburst interval at 25 ms; Tests 2 and 3: 76a298a by RTT, -rand 0 and
50) and the kernel's TCP running bench/kernel_prague's port of the model's
Prague v0.6 (``make kernel-prague`` first; docs/scream-real.md). Each
phase's window is the suite's: 15 s from 5 s after the change. Written per
test and point: SCReAM's rate and the Prague flows' together in each window
(packets leaving the bottleneck, 1400 and 1500 IP bytes each), the
bottleneck's CE marks per packet, the emulator's timer lateness, and the
published cell. ``--table`` prints the recorded code against a fresh model
run and the record.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

import polars as pl

import ccbench
from scream_real import BASE, MEDIA_BYTES, MEDIA_TUPLE, PRAGUE_HOST, ROOT, TCP_BYTES, command, emulate, kernel_ready

#: The suite's windows: 15 s from 5 s after each change.
PHASES = [(20.0 * k + 5.0, 20.0 * k + 20.0) for k in range(5)]
#: The record's tests (test-record.md): SCReAM's Mbit/s with 0..4 Prague flows at each point of its
#: axis. Test 1 (2024-10-28, SCReAM 994f9a4): the microburst interval (ms) at 25 ms; Tests 2 and 3
#: (2024-10-31, 76a298a): the RTT (ms), with -rand 0 and 50.
TESTS = {
    1: {"version": "994f9a4", "rand": 0, "axis": "microburst_ms",
        "published": {0.25: [71, 56, 46, 39, 28], 0.5: [75, 60, 48, 40, 30], 1.0: [68, 56, 44, 38, 30],
                      2.0: [41, 31, 29, 29, 26]}},
    2: {"version": "76a298a", "rand": 0, "axis": "rtt_ms",
        "published": {5: [79, 52, 40, 29, 20], 10: [78, 58, 40, 28, 22], 25: [78, 60, 48, 38, 29],
                      50: [76, 60, 43, 35, 30], 100: [71, 54, 32, 25, 18]}},
    3: {"version": "76a298a", "rand": 50, "axis": "rtt_ms",
        "published": {5: [70, 48, 30, 25, 18], 10: [68, 50, 36, 28, 18], 25: [68, 50, 44, 32, 25],
                      50: [66, 46, 38, 30, 23], 100: [64, 48, 38, 26, 21]}},
}
PRAGUE_FLOWS = 4

PRAGUE = """\
[[flows]]
id = "prague{k}"
cc = "prague"
cc_params = {{ version = "v0.6" }}
start = "{start}s"
path = ["bottleneck"]
reverse = ["feedback"]
"""


def path_of(test: int, point: float) -> tuple[float, float]:
    """(RTT ms, microburst interval ms) of a test's point."""
    return (25, point) if TESTS[test]["axis"] == "microburst_ms" else (point, 0.5)


def scenario(test: int, point: float) -> str:
    """scream_real's path and SCReAM flow for 100 s (without the sender's log), with the Prague flows."""
    starts = [20 * k for k in range(1, PRAGUE_FLOWS + 1)]
    rtt, mb = path_of(test, point)
    return BASE.format(
        name=name(test, point), secs=100, log="", rtt=rtt, mb=mb, rand=TESTS[test]["rand"],
        version=TESTS[test]["version"], rx_ip="10.201.0.1",
        tcp="".join(PRAGUE.format(k=k, start=s) for k, s in enumerate(starts, 1)),
        tcp_server="".join(f", 'exec \"$CCB_EMU\" tcp-sink {5200 + k} bpf_prague > /dev/null'" for k in range(1, len(starts) + 1)),
        tcp_client="".join(f", prague{k} = '{PRAGUE_HOST}sleep {s}; exec \"$CCB_EMU\" tcp-bulk $CCB_SERVER_IP:{5200 + k} "
                      f"bpf_prague {100 - s} > /dev/null'" for k, s in enumerate(starts, 1)))


def phase_rates(sojourn: pl.DataFrame, scream: int, prague: list[int]) -> list[dict]:
    """Per phase window: SCReAM's and the Prague flows' Mbit/s leaving the bottleneck (link 0)."""
    out = []
    for lo, hi in PHASES:
        d = sojourn.filter((pl.col("link") == 0) & (pl.col("time_s") >= lo) & (pl.col("time_s") < hi))
        n = d.group_by("flow").len()
        count = dict(zip(n["flow"].to_list(), n["len"].to_list()))
        mbps = lambda pkts, size: round(pkts * size * 8 / (hi - lo) / 1e6, 3)  # noqa: E731
        out.append({"scream_mbps": mbps(count.get(scream, 0), MEDIA_BYTES),
                    "prague_mbps": mbps(sum(count.get(f, 0) for f in prague), TCP_BYTES)})
    return out


def name(test: int, point: float) -> str:
    """A case's name: ``record-25ms`` (Test 2), ``record3-25ms``, ``record1-mb0.5``."""
    if test == 1:
        return f"record1-mb{point}"
    return f"record{'' if test == 2 else test}-{point}ms"


def point(case: dict) -> float:
    """A recorded case's point on its test's axis."""
    return case[TESTS[case["test"]]["axis"]]


def measure(test: int, at: float, scream_dir: Path) -> dict:
    summary, sojourn = emulate(name(test, at), scenario(test, at), scream_dir / TESTS[test]["version"])
    index = {f["tuple"]: i for i, f in enumerate(summary["flows"])}
    scream = index[MEDIA_TUPLE]
    prague = [i for t, i in index.items() if t.startswith("tcp ")]
    fwd = summary["emulator"]["fwd"]
    link = fwd["links"][0]
    return {"phases": phase_rates(sojourn, scream, prague),
            "ce_fraction": round(link["marks"] / max(1, link["tx_pkts"]), 5),
            "timer_late_mean_us": round(fwd["timer_late_mean_us"], 1),
            "timer_late_max_us": round(fwd["timer_late_max_us"], 1)}


def model(case: dict) -> dict:
    """The simulator on a recorded case's scenario (it ignores ``[commands]``), measured as the code was."""
    res = ccbench.run(case["scenario"])
    ids = [f["id"] for f in res.summary["flows"]]
    link = next(x for x in res.summary["links"] if x["id"] == "bottleneck")
    return {"phases": phase_rates(res.tables["sojourn"], ids.index("scream"),
                                  [i for i, f in enumerate(ids) if f.startswith("prague")]),
            "ce_fraction": link["marks"] / max(1, link["tx_packets"])}


def table(path: Path) -> str:
    """Markdown: per test, point (RTT or microburst interval) and phase, SCReAM's Mbit/s as the record / the code here / the model, and Prague's."""
    rows = ["| test, point | " + " | ".join(f"{n} TCP: record / code / model (Prague code / model)" for n in range(5)) + " |",
            "|---" * 6 + "|"]
    for case in json.loads(path.read_text())["cases"]:
        sim = model(case)
        cells = [f"{pub} / {c['scream_mbps']:.1f} / {m['scream_mbps']:.1f}"
                 + (f" ({c['prague_mbps']:.1f} / {m['prague_mbps']:.1f})" if n else "")
                 for n, (pub, c, m) in enumerate(zip(case["published"], case["phases"], sim["phases"]))]
        rows.append(f"| Test {case['test']}, {point(case)} ms | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scream", type=Path, help="directory of built SCReAM commits (docs/scream-real.md)")
    ap.add_argument("--tests", default="1,2,3", help="the record's tests: 1 (microburst interval), 2, 3 (-rand 50)")
    ap.add_argument("--points", help="the points of each test's axis to run (default: all it published)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point")
    ap.add_argument("-o", "--out", type=Path, default=ROOT / "tests" / "data" / "scream_record_real.json")
    ap.add_argument("--table", action="store_true", help="print the recorded cases against the model and stop")
    a = ap.parse_args()
    if a.table:
        print(table(a.out))
        return
    if a.scream is None:
        ap.error("--scream DIR is needed to run the code")
    if not kernel_ready("bpf_prague"):
        ap.error("the kernel's Prague is not ready: make kernel-prague")
    key = lambda c: (c["test"], point(c))  # noqa: E731
    old = {key(c): c for c in json.loads(a.out.read_text())["cases"]} if a.out.is_file() else {}
    todo = [(int(t), float(p) if t == "1" else int(p)) for t in a.tests.split(",")
            for p in (a.points.split(",") if a.points else TESTS[int(t)]["published"])]
    for test, at in todo:
        runs = [measure(test, at, a.scream) for _ in range(a.repeat)]
        phases = [{k: round(sum(r["phases"][p][k] for r in runs) / len(runs), 3) for k in runs[0]["phases"][p]}
                  for p in range(len(PHASES))]
        version = TESTS[test]["version"]
        rtt, mb = path_of(test, at)
        old[(test, at)] = {
            "test": test, "rtt_ms": rtt, "microburst_ms": mb, "commit": version, "scenario": scenario(test, at),
            "command": command(name(test, at), version, kernel_prague=True),
            "windows_s": PHASES, "published": TESTS[test]["published"][at], "phases": phases,
            "ce_fraction": round(sum(r["ce_fraction"] for r in runs) / len(runs), 5),
            "timer_late_mean_us": max(r["timer_late_mean_us"] for r in runs),
            "date": datetime.date.today().isoformat(), "runs": runs}
        print(json.dumps({k: v for k, v in old[(test, at)].items() if k != "scenario"}), flush=True)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps({"cases": [old[k] for k in sorted(old)]}, indent=1) + "\n")

if __name__ == "__main__":
    main()
