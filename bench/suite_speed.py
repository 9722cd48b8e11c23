"""Where a suite's time goes: sweep wall, engine time, Python per run, report render.

    python bench/suite_speed.py --ccbench A=/path/to/ccbench --ccbench B=/path/to/ccbench \
        [--reps 2] [--jobs 2] SUITE...

For each suite and repetition, each ccbench (alternating which goes first, so a
slow spell of a shared machine hits both) runs ``suite run SUITE -j JOBS`` into a
fresh directory, then ``report DIR`` on it. Read from the result files:

- sweep: suite.json ``wall_s`` (the runs, without start-up and report);
- sim: the sum of each run's summary.json ``engine.wall_s``;
- per-run overhead: the mean over runs of the run's wall time (suite.json)
  minus its engine time: building, saving, the run page, the worker hand-off;
- report: the wall time of ``ccbench report DIR`` alone (a process, start-up included).

Prints one JSON line per measurement and a table of medians at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def manifests(root: Path) -> list[Path]:
    """suite.json files holding runs: the suite's own, or each part's for a suite of suites."""
    top = json.loads((root / "suite.json").read_text())
    if "parts" in top:
        return [root / p / "suite.json" for p in top["parts"] if (root / p / "suite.json").is_file()]
    return [root / "suite.json"]


def measure(ccbench: str, suite: str, jobs: int, work: Path) -> dict[str, Any]:
    out = work / "out"
    t0 = time.perf_counter()
    subprocess.run([ccbench, "suite", "run", suite, "-o", f"{out}/", "-j", str(jobs)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    command = time.perf_counter() - t0
    root = next(p for p in out.iterdir() if (p / "suite.json").is_file())
    # a suite of suites runs its parts in one pool: its sweep is the longest part's
    sweep = max(float(json.loads(m.read_text())["wall_s"]) for m in manifests(root))
    sim, overheads = 0.0, []
    for m in manifests(root):
        for r in json.loads(m.read_text())["runs"]:
            summary = m.parent / r["dir"] / "summary.json"
            if r.get("status") != "ok" or not summary.is_file():
                continue
            engine = float(json.loads(summary.read_text())["engine"]["wall_s"])
            sim += engine
            overheads.append(float(r["wall_s"]) - engine)
    t0 = time.perf_counter()
    subprocess.run([ccbench, "report", str(root), "-j", str(jobs)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = time.perf_counter() - t0
    pngs = len(list(root.rglob("*.png")))
    return {"runs": len(overheads), "command_s": command, "sweep_s": sweep, "sim_s": sim,
            "overhead_s": statistics.mean(overheads) if overheads else 0.0, "report_s": report, "pngs": pngs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suites", nargs="+")
    ap.add_argument("--ccbench", action="append", required=True, help="NAME=PATH of a ccbench executable")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    sides = [tuple(x.split("=", 1)) for x in args.ccbench]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for suite in args.suites:
        for rep in range(args.reps):
            order = sides if rep % 2 == 0 else sides[::-1]
            for name, exe in order:
                work = Path(tempfile.mkdtemp(prefix="suite-speed-"))
                try:
                    m = measure(exe, suite, args.jobs, work)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                rows.setdefault((suite, name), []).append(m)
                print(json.dumps({"suite": suite, "side": name, "rep": rep, **m}), flush=True)
    print("| suite | runs | side | sweep s | sim s | per-run overhead s (% of sim per run) | report s (% of sweep) | PNGs |")
    print("|---|---|---|---|---|---|---|---|")
    for (suite, name), ms in rows.items():
        med = {k: statistics.median(m[k] for m in ms) for k in ("sweep_s", "sim_s", "overhead_s", "report_s")}
        per_run_sim = med["sim_s"] / max(1, ms[0]["runs"])
        print(f"| `{suite}` | {ms[0]['runs']} | {name} | {med['sweep_s']:.2f} | {med['sim_s']:.2f} | "
              f"{med['overhead_s']:.3f} ({100 * med['overhead_s'] / per_run_sim:.0f} %) | "
              f"{med['report_s']:.2f} ({100 * med['report_s'] / med['sweep_s']:.0f} %) | {ms[0]['pngs']} |")


if __name__ == "__main__":
    main()
