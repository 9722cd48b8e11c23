"""ccbench's engine against htsim (Broadcom/csg-htsim) on B1's physics, side by side,
and on B2's and B3's with the models htsim has (Reno, drop-tail).

    HTSIM_SRC=<a checkout of github.com/Broadcom/csg-htsim> make bench-htsim
    (ROUNDS=5 alternated rounds; CACHEGRIND=1 adds instruction and cache-miss counts)

htsim is built from HTSIM_SRC (its sim/ folder) into target/htsim together with
bench/htsim/b1_htsim.cpp: B1's dumbbell (100 Mbit/s, 25 ms, 5 NewReno flows, a
drop-tail FIFO of 208 full frames, 60 s, statistics after 10 s). ccbench runs
the same physics from bench/htsim/b1-reno-htsim.toml (a segment at a time, an
ACK per segment, hosts without timing noise) with the optimized bench binary
(`make build`), and also with Linux's TCP defaults and as a whole `ccbench run`.
The same program with other arguments runs B2's physics (10 Mbit/s, 20 ms, one
flow, a FIFO of 1000) and B3's (1 Gbit/s, 20 ms, 50 flows, a FIFO of about a
BDP, 10 s after 2 s), both with Reno and drop-tail, against
bench/htsim/b2-reno-htsim.toml and b3-reno-htsim.toml.
Each round runs every variant once, rotating the order; the table gives
medians of each tool's own timing. With CACHEGRIND=1, valgrind's cachegrind
counts instructions and simulated cache misses per event and per packet
leaving the bottleneck (this machine's PMU may not be readable by perf).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "htsim"
WORK = Path(os.environ.get("HTSIM_WORK", ROOT / "target" / "htsim"))
BENCH = ROOT / "target" / "opt" / "release" / "bench"
CLI = ROOT / ".venv" / "bin" / "ccbench"
MATCHED, LINUX = HERE / "b1-reno-htsim.toml", HERE / "b1-reno-linux.toml"
#: The other dumbbells: htsim's arguments (its queue counts the packet being
#: serialized, so one more than the pfifo limit) and the matched scenario.
PEERS = {
    "B2": (["-flows", "1", "-mbps", "10", "-oneway_us", "10000", "-qpkts", "1001"], HERE / "b2-reno-htsim.toml"),
    "B3": (["-flows", "50", "-mbps", "1000", "-oneway_us", "10000", "-qpkts", "1652", "-secs", "10", "-warmup", "2"],
           HERE / "b3-reno-htsim.toml"),
}
NO_SAMPLES = ["metrics.rtt_samples=false", "metrics.sojourn_every=1000000000"]


def build() -> Path:
    src = Path(os.environ.get("HTSIM_SRC") or sys.exit("set HTSIM_SRC to a checkout of Broadcom/csg-htsim"))
    shutil.rmtree(WORK / "sim", ignore_errors=True)
    shutil.copytree(src / "sim", WORK / "sim")
    subprocess.run(["make", "-s", "-j2", "libhtsim.a"], cwd=WORK / "sim", check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    exe = WORK / "b1_htsim"
    subprocess.run(["g++", "-std=c++11", "-O3", "-I", str(WORK / "sim"), str(HERE / "b1_htsim.cpp"),
                    "-L", str(WORK / "sim"), "-lhtsim", "-o", str(exe)], check=True)
    return exe


def htsim(exe: Path, wrap: list[str] | None = None, args: tuple[str, ...] = ()) -> dict:
    out = subprocess.run([*(wrap or []), str(exe), *args], capture_output=True, text=True, check=True).stdout
    d = json.loads(out.strip().splitlines()[-1])
    return {"wall_s": d["wall_s"], "events": d["events"], "packets": d["bottleneck_tx_pkts"],
            "goodput": d["goodput_mbps_total"]}


def engine(scenario: Path, *over: str, wrap: list[str] | None = None, spill: int | None = None) -> dict:
    env = {**os.environ, **({"CCBENCH_BENCH_SPILL": str(spill)} if spill else {})}
    out = subprocess.run([*(wrap or []), str(BENCH), str(scenario), *over], capture_output=True, text=True,
                         check=True, env=env).stdout
    wall, events, _, packets, _, goodput, _ = out.split("\t")[:7]
    return {"wall_s": float(wall), "events": int(events), "packets": int(packets), "goodput": float(goodput)}


def cli() -> dict:
    """The whole `ccbench run` process, Python start-up and Parquet output included."""
    out = WORK / "runs" / "cli"
    t0 = time.perf_counter()
    subprocess.run([str(CLI), "run", str(MATCHED), "-o", str(out)], check=True, capture_output=True)
    wall = time.perf_counter() - t0
    s = json.loads((out / "summary.json").read_text())
    link = next(x for x in s["links"] if x["id"] == "bottleneck")
    return {"wall_s": wall, "events": s["engine"].get("events"), "packets": link["tx_packets"],
            "goodput": sum(f["goodput_mbps"] for f in s["flows"])}


def cachegrind(run) -> dict:
    """Instructions and simulated D1/LL misses of one run (valgrind's cachegrind)."""
    stats = WORK / "cachegrind.out"
    got = run([shutil.which("valgrind") or "valgrind", "--tool=cachegrind", "--cache-sim=yes",
               f"--cachegrind-out-file={stats}"])
    lines = stats.read_text().splitlines()
    field = {line.split(":")[0]: line.split()[1:] for line in lines if line.startswith(("events:", "summary:"))}
    counts = dict(zip(field["events"], map(int, field["summary"])))
    return {**got, "Ir": counts["Ir"], "D1_miss": counts["D1mr"] + counts["D1mw"],
            "LL_miss": counts["DLmr"] + counts["DLmw"] + counts.get("ILmr", 0)}


def main() -> None:
    exe = build()
    variants = {
        "htsim -O3": lambda wrap=None: htsim(exe, wrap),
        "ccbench engine (matched)": lambda wrap=None: engine(MATCHED, wrap=wrap),
        "ccbench engine, per-packet samples off": lambda wrap=None: engine(MATCHED, *NO_SAMPLES, wrap=wrap),
        # As `ccbench run` drives it: tables handed out in 1 MiB chunks (to a sink that hands each back at once).
        "ccbench engine, tables in 1 MiB chunks": lambda wrap=None: engine(MATCHED, wrap=wrap, spill=1 << 20),
        "ccbench engine, Linux TCP defaults": lambda wrap=None: engine(LINUX, wrap=wrap),
        "`ccbench run` (process)": lambda wrap=None: cli(),
    }
    for name, (args, scenario) in PEERS.items():
        variants[f"{name}: htsim -O3"] = lambda wrap=None, a=tuple(args): htsim(exe, wrap, a)
        variants[f"{name}: ccbench engine (matched)"] = lambda wrap=None, s=scenario: engine(s, wrap=wrap)
        variants[f"{name}: ccbench engine, tables in 1 MiB chunks"] = (
            lambda wrap=None, s=scenario: engine(s, wrap=wrap, spill=1 << 20))
    rounds = int(os.environ.get("ROUNDS", "5"))
    times: dict[str, list[float]] = {k: [] for k in variants}
    last: dict[str, dict] = {}
    names = list(variants)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            last[k] = variants[k]()
            times[k].append(last[k]["wall_s"])
    print("| | wall (s) | vs htsim | ns per bottleneck packet | events | goodput Mbit/s |")
    print("|---|---|---|---|---|---|")
    for k in names:
        peer = k.split(": ")[0] + ": " if ": " in k else ""
        base = statistics.median(times[f"{peer}htsim -O3"])
        t = statistics.median(times[k])
        print(f"| {k} | {t:.3f} | {t / base:.2f}× | {t / last[k]['packets'] * 1e9:.0f} | "
              f"{last[k]['events'] or 0:,} | {last[k]['goodput']:.2f} |")
    if os.environ.get("CACHEGRIND") == "1":
        print("\n| | instructions per event | per bottleneck packet | D1 misses per packet | LL misses per packet |")
        print("|---|---|---|---|---|")
        for k in names[:3]:
            c = cachegrind(lambda wrap, k=k: variants[k](wrap))
            print(f"| {k} | {c['Ir'] / c['events']:.0f} | {c['Ir'] / c['packets']:.0f} | "
                  f"{c['D1_miss'] / c['packets']:.2f} | {c['LL_miss'] / c['packets']:.3f} |")


if __name__ == "__main__":
    main()
