"""`make bench-ns3`: ns-3 3.44 and ccbench side by side on the anchor scenarios S1–S4.

Builds both (ns-3 from PyPI into ``target/ns3/.venv``, ``bench/ns3/dumbbell.cc`` compiled
against the wheel's headers and libraries; ccbench's ``make build``: the extension behind
the ``.venv`` CLI and the ``bench`` binary, both profile-guided), then runs, for each
repetition and scenario in turn (alternated, so load changes on a shared machine hit all
three alike):

* ns-3: ``dumbbell`` with the scenario's options (wall time of the process);
* the ccbench engine: ``target/opt/release/bench SCENARIO [overrides]`` (wall time the
  engine reports: parse, build, run, summary; no Python, no outputs);
* ``ccbench run`` with default outputs (wall time of the CLI process: Python start-up,
  imports, run, Parquet, summary table).

It prints one table of medians (wall times, ratios, bottleneck packets per wall second)
and one of physics side by side (goodput per flow, utilisation, queue delay mean/p99),
flagging differences over 10 %, and writes everything to ``target/ns3/bench-ns3.json``.

Environment: ``REPS`` (default 3), ``QUICK=1`` (simulated time and warm-up / 10: a smoke
test), ``SCEN="S1 S3"`` (a subset), ``CCBENCH`` (the CLI, default ``.venv/bin/ccbench``).
Python standard library only, so any python3 runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "ns3"
NS3_VERSION = "3.44.post0"
NS3_LIBS = ["core", "network", "internet", "traffic-control", "point-to-point", "applications"]
FLAG = 0.10  # relative difference flagged in the physics table

# name: (ccbench scenario, ns-3 options, simulated s, warm-up s)
SCENARIOS = {
    "S1": ("bench/b1-cubic-fq_codel.toml", "--nFlows=5 --cc=cubic --bw=100 --rtt=25 --aqm=fqcodel", 60, 10),
    "S2": ("bench/s2-cubic-dctcp.toml",
           "--nFlows=2 --cc=cubic,dctcp --ecn=1 --bw=100 --rtt=25 --aqm=fqcodel-l4s --ceThreshold=1", 60, 10),
    "S3": ("bench/b2-cubic-pfifo.toml", "--nFlows=1 --cc=cubic --bw=10 --rtt=20 --aqm=fifo --fifoPkts=1000", 60, 10),
    "S4": ("bench/b3-50cubic-1g.toml", "--nFlows=50 --cc=cubic --bw=1000 --rtt=20 --aqm=fqcodel", 10, 2),
}


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def build_ns3() -> Path:
    py = WORK / ".venv" / "bin" / "python"
    probe = f"import importlib.metadata as m; assert m.version('ns3') == '{NS3_VERSION}'"
    if not py.is_file() or subprocess.run([str(py), "-c", probe], capture_output=True).returncode != 0:
        print(f"installing ns3=={NS3_VERSION} into {WORK / '.venv'}", flush=True)
        sh([sys.executable, "-m", "venv", str(WORK / ".venv")])
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"ns3=={NS3_VERSION}"], check=True)
    purelib = sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ns3 = Path(purelib) / "ns3"
    if not (ns3 / "include" / "ns3" / "core-module.h").is_file():
        raise SystemExit(f"the ns3 wheel has no headers under {ns3}")
    src, exe = ROOT / "bench" / "ns3" / "dumbbell.cc", WORK / "build" / "dumbbell"
    if not exe.is_file() or exe.stat().st_mtime < src.stat().st_mtime:
        print(f"compiling {src.relative_to(ROOT)}", flush=True)
        exe.parent.mkdir(parents=True, exist_ok=True)
        # The wheel was built with NS3_LOG_ENABLE and NS3_ASSERT_ENABLE: define them too, so
        # inline header code matches the libraries. --no-as-needed keeps every library
        # linked (TypeIds register when a library loads).
        sh(["g++", "-std=c++20", "-O2", "-DNS3_LOG_ENABLE", "-DNS3_ASSERT_ENABLE", f"-I{ns3 / 'include'}",
            str(src), "-o", str(exe), f"-L{ns3 / 'lib64'}", f"-Wl,-rpath,{ns3 / 'lib64'}", "-Wl,--no-as-needed",
            *[f"-lns3.44-{lib}" for lib in NS3_LIBS]])
    return exe


def build_ccbench() -> tuple[Path, Path]:
    env = {**os.environ, "CARGO_BUILD_JOBS": os.environ.get("CARGO_BUILD_JOBS", "1")}
    subprocess.run(["make", "-s", "build"], cwd=ROOT, check=True, env=env)  # the extension and the bench binary
    return ROOT / "target" / "opt" / "release" / "bench", Path(os.environ.get("CCBENCH", ROOT / ".venv" / "bin" / "ccbench"))


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return wall, p.stdout


def ns3_run(exe: Path, name: str, quick: bool) -> tuple[float, dict]:
    _, opts, sim, warm = SCENARIOS[name]
    div = 10 if quick else 1
    wall, out = timed([str(exe), f"--name={name}", *opts.split(), f"--simTime={sim / div:g}",
                       f"--warmup={warm / div:g}"])
    res = json.loads(out.split("RESULT ", 1)[1])
    return wall, {
        "goodput_mbps": [f["goodput_mbps"] for f in res["flows"]],
        "utilization": res["link_util"],
        "qdelay_mean_ms": res["qdelay_mean_ms"],
        "qdelay_p99_ms": res["qdelay_p99_ms"],
        "bottleneck_pkts": res["pkts_sent"],
        "events": res["events"],
    }


def overrides(name: str, quick: bool) -> list[str]:
    if not quick:
        return []
    _, _, sim, warm = SCENARIOS[name]
    return [f'duration="{sim * 100:g}ms"', f'metrics.warmup="{warm * 100:g}ms"']


def engine_run(bench: Path, name: str, quick: bool) -> float:
    _, out = timed([str(bench), SCENARIOS[name][0], *overrides(name, quick)])
    return float(out.split("\t")[0])  # the engine's own wall time (parse, build, run, summary)


def cli_run(cli: Path, name: str, quick: bool) -> tuple[float, dict]:
    out_dir = WORK / "ccbench-out" / name
    sets = [a for o in overrides(name, quick) for a in ("--set", o)]
    wall, _ = timed([str(cli), "run", SCENARIOS[name][0], "-o", str(out_dir), *sets])
    s = json.loads((out_dir / "summary.json").read_text())
    bn = next(link for link in s["links"] if link["id"] == "bottleneck")
    return wall, {
        "goodput_mbps": [f["goodput_mbps"] for f in s["flows"] if f["kind"] != "ping"],
        "utilization": bn["utilization"],
        "qdelay_mean_ms": bn["sojourn_ms"]["mean"],
        "qdelay_p99_ms": bn["sojourn_ms"]["p99"],
        "bottleneck_pkts": bn["tx_packets"],
        "events": s["engine"]["events"],
    }


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b)) if max(abs(a), abs(b)) > 0 else 0.0


def physics_rows(name: str, ns3: dict, cc: dict) -> list[dict]:
    rows = []
    gn, gc = ns3["goodput_mbps"], cc["goodput_mbps"]
    if len(gn) <= 5:
        pairs = [(f"goodput flow {i} Mbit/s", a, b) for i, (a, b) in enumerate(zip(gn, gc))]
    else:
        pairs = [("goodput min/flow Mbit/s", min(gn), min(gc)), ("goodput mean/flow Mbit/s",
                 statistics.mean(gn), statistics.mean(gc)), ("goodput max/flow Mbit/s", max(gn), max(gc))]
    pairs += [("goodput total Mbit/s", sum(gn), sum(gc)),
              ("utilisation %", 100 * ns3["utilization"], 100 * cc["utilization"]),
              ("queue delay mean ms", ns3["qdelay_mean_ms"], cc["qdelay_mean_ms"]),
              ("queue delay p99 ms", ns3["qdelay_p99_ms"], cc["qdelay_p99_ms"])]
    for what, a, b in pairs:
        rows.append({"scenario": name, "quantity": what, "ns3": a, "ccbench": b, "rel_diff": rel(a, b),
                     "flagged": rel(a, b) > FLAG})
    return rows


def main() -> None:
    quick = os.environ.get("QUICK", "0") == "1"
    reps = int(os.environ.get("REPS", "3"))
    names = os.environ.get("SCEN", " ".join(SCENARIOS)).split()
    ns3_exe = build_ns3()
    bench, cli = build_ccbench()
    times: dict[str, dict[str, list[float]]] = {n: {"ns3": [], "engine": [], "cli": []} for n in names}
    physics: dict[str, tuple[dict, dict]] = {}
    for r in range(1, reps + 1):
        for n in names:
            w3, p3 = ns3_run(ns3_exe, n, quick)
            we = engine_run(bench, n, quick)
            wc, pc = cli_run(cli, n, quick)
            times[n]["ns3"].append(w3)
            times[n]["engine"].append(we)
            times[n]["cli"].append(wc)
            physics[n] = (p3, pc)  # deterministic on both sides: every repetition is the same
            print(f"rep {r} {n}: ns-3 {w3:.2f} s, engine {we:.3f} s, ccbench run {wc:.3f} s", flush=True)

    speed, phys = [], []
    for n in names:
        med = {k: statistics.median(v) for k, v in times[n].items()}
        p3, pc = physics[n]
        speed.append({"scenario": n, "quick": quick, "reps": reps, **{f"{k}_wall_s": v for k, v in med.items()},
                      **{f"{k}_walls_s": v for k, v in times[n].items()},
                      "ns3_over_engine": med["ns3"] / med["engine"], "ns3_over_cli": med["ns3"] / med["cli"],
                      "cli_over_engine": med["cli"] / med["engine"],
                      "ns3_pkts_per_wall_s": p3["bottleneck_pkts"] / med["ns3"],
                      "engine_pkts_per_wall_s": pc["bottleneck_pkts"] / med["engine"],
                      "cli_pkts_per_wall_s": pc["bottleneck_pkts"] / med["cli"],
                      "ns3_events": p3["events"], "ccbench_events": pc["events"]})
        phys += physics_rows(n, p3, pc)

    mode = "QUICK (simulated time / 10)" if quick else "full"
    print(f"\n## ns-3 {NS3_VERSION} vs ccbench, {mode}, median of {reps} alternated repetitions\n")
    print("| scen | ns-3 s | engine s | ccbench run s | ns-3/engine | ns-3/run | run/engine "
          "| bottleneck pkts/wall-s (k): ns-3 / engine / run |")
    print("|---|---|---|---|---|---|---|---|")
    for s in speed:
        print(f"| {s['scenario']} | {s['ns3_wall_s']:.2f} | {s['engine_wall_s']:.3f} | {s['cli_wall_s']:.3f} "
              f"| {s['ns3_over_engine']:.0f}× | {s['ns3_over_cli']:.0f}× | {s['cli_over_engine']:.1f}× "
              f"| {s['ns3_pkts_per_wall_s'] / 1e3:.0f} / {s['engine_pkts_per_wall_s'] / 1e3:.0f} / "
              f"{s['cli_pkts_per_wall_s'] / 1e3:.0f} |")
    print(f"\n| scen | quantity | ns-3 | ccbench | diff | |\n|---|---|---|---|---|---|")
    for p in phys:
        print(f"| {p['scenario']} | {p['quantity']} | {p['ns3']:.3f} | {p['ccbench']:.3f} "
              f"| {100 * p['rel_diff']:.1f} % | {'**> 10 %**' if p['flagged'] else ''} |")
    out = WORK / ("bench-ns3-quick.json" if quick else "bench-ns3.json")
    meta = {"ns3": NS3_VERSION, "cpus": len(os.sched_getaffinity(0)), "python": sys.version.split()[0],
            "platform": sysconfig.get_platform(), "gxx": shutil.which("g++")}
    out.write_text(json.dumps({"meta": meta, "speed": speed, "physics": phys}, indent=1))
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
