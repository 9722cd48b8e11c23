"""How much of the SCReAM test record's gap each testbed factor explains.

    .venv/bin/python bench/scream_factors.py [--jobs 2] [--variants NAME,...] [-o FILE.json]

Runs the three test-record suites (Test 1: microburst interval, Test 2: RTT,
Test 3: RTT with ``-rand 50``; 70 cells) once as the suites configure them and
once per factor changed on its own, and scores SCReAM's mean bitrate per
phase against the published tables: cells within 20 % and 15 %, mean absolute
and RMS error (Mbit/s), and the bias of each test. The measurement window is a
factor of the reading, not of the run: it is scored from the baseline runs
with each window. docs/fidelity.md (section 4.5) has the table this prints.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import ccbench
from ccbench.plan.expr import evaluate
from ccbench.plan.suite_file import load_suite

SUITES = ("scream-test-record-1", "scream-test-record", "scream-test-record-3")
TEST_OF = {"scream-test-record-1": "Test 1", "scream-test-record": "Test 2", "scream-test-record-3": "Test 3"}
PHASES = 5  # 0..4 Prague flows, 20 s each

#: The testbed's HTB (test-record.md's tc script: htb rate 100mbit ceil 100mbit, dualpi2 as the class's
#: child, on an ifb at the receiver's ingress): the ifb itself has no line rate, the class shapes.
_HTB = 'links.bottleneck.qdisc={{ kind = "htb", rate = "100Mbit", burst = "{burst}", cburst = "{burst}", ' \
       'child = {{ kind = "dualpi2", min_qlen_step = 2 }} }}'

#: name -> (what it changes, --set overrides applied to every run of the three suites)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "baseline": ("as the suites configure it", []),
    "prague-v0.7": ("Prague v0.7 (today's tree) instead of v0.6 (the 2024 testbed's 5.15 kernel)",
                    ['flows.prague.cc_params.version="v0.7"']),
    "dualpi2-mainline": ("DualPI2 step rule of mainline (min_qlen_step 0) instead of L4STeam 2024's (2)",
                         ["links.bottleneck.qdisc.min_qlen_step=0"]),
    "htb": ("HTB 100 Mbit with tc's default burst (1600 B) on a 10 Gbit/s ifb, instead of a 100 Mbit/s link",
            ['links.bottleneck.rate="10Gbit"', _HTB.format(burst="1600b")]),
    "htb-64k": ("the same HTB with a 64 kB burst (one GRO aggregate of TCP at the ifb ingress)",
                ['links.bottleneck.rate="10Gbit"', _HTB.format(burst="64kb")]),
    "feedback-1ms": ("receiver feedback every 1 ms instead of the tool's 5 ms",
                     ['flows.scream.media.feedback_interval="1ms"']),
    "feedback-10ms": ("receiver feedback every 10 ms", ['flows.scream.media.feedback_interval="10ms"']),
}

#: name -> (what it reads, (from, to) seconds within each 20 s phase)
WINDOWS: dict[str, tuple[str, tuple[float, float]]] = {
    "window-suite": ("15 s from 5 s after each change (the suites' cells)", (5.0, 20.0)),
    "window-last5": ("the last 5 s of each phase", (15.0, 20.0)),
    "window-whole": ("the whole 20 s phase", (0.0, 20.0)),
}


def _one(job: tuple[str, str, str, str, list[str]]) -> tuple[str, str, str, list[list[float | None]]]:
    """Run one planned scenario with a variant's overrides; SCReAM's mean bitrate per phase per window."""
    variant, suite, row, scenario, overrides = job
    run = ccbench.run(scenario, set=overrides)
    out = []
    for _, (a, b) in WINDOWS.values():
        out.append([evaluate(f'mean_goodput(flow="scream", from={20 * k + a}, to={20 * k + b})', run)
                    for k in range(PHASES)])
    return variant, suite, row, out


def _published() -> dict[str, dict[str, tuple[float, ...]]]:
    return {name: dict(load_suite(name).report.tables[0].published) for name in SUITES}


def score(model: dict[tuple[str, str], list[float | None]], published: dict[str, dict[str, tuple[float, ...]]],
          ) -> dict[str, object]:
    """Cells within 20 % / 15 %, MAE and RMS (Mbit/s) over every cell, and the bias per test."""
    errs: list[float] = []
    rel: list[float] = []
    bias: dict[str, list[float]] = {}
    for (suite, row), cells in model.items():
        for got, want in zip(cells, published[suite][row]):
            if got is None:
                continue
            errs.append(got - want)
            rel.append(abs(got - want) / want)
            bias.setdefault(TEST_OF[suite], []).append(got - want)
    return {
        "cells": len(errs),
        "within_20": sum(r <= 0.20 for r in rel),
        "within_15": sum(r <= 0.15 for r in rel),
        "mae": statistics.fmean(abs(e) for e in errs),
        "rms": math.sqrt(statistics.fmean(e * e for e in errs)),
        "bias": {t: statistics.fmean(v) for t, v in sorted(bias.items())},
    }


def measure(names: list[str], jobs: int = 2) -> tuple[list[tuple[str, str, dict[str, object]]], dict]:
    """Each variant's score (and each window's, from the baseline runs), and every cell."""
    if "baseline" not in names:
        names = ["baseline", *names]
    work = []
    for suite_name in SUITES:
        suite = load_suite(suite_name)
        rows = suite.report.tables[0].rows
        for planned in suite.plan():
            row = str(planned.values[rows])
            for v in names:
                work.append((v, suite_name, row, planned.scenario, VARIANTS[v][1]))
    cells: dict[str, dict[tuple[str, str], list[float | None]]] = {}
    with ProcessPoolExecutor(jobs) as pool:
        for variant, suite_name, row, per_window in pool.map(_one, work):
            for w, values in zip(WINDOWS, per_window):
                cells.setdefault(f"{variant}/{w}", {})[(suite_name, row)] = values
    published = _published()
    results = [(v, VARIANTS[v][0], score(cells[f"{v}/window-suite"], published)) for v in names]
    for w in list(WINDOWS)[1:]:
        results.append((w, WINDOWS[w][0], score(cells[f"baseline/{w}"], published)))
    return results, cells


def row(name: str, what: str, s: dict[str, object]) -> str:
    """One line of the markdown table docs/fidelity.md shows."""
    b = s["bias"]
    assert isinstance(b, dict)
    return (f"| {name} | {what} | {s['within_20']}/{s['cells']} | {s['within_15']}/{s['cells']} | "
            f"{s['mae']:.1f} | {s['rms']:.1f} | {b['Test 1']:+.1f} / {b['Test 2']:+.1f} / {b['Test 3']:+.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    ap.add_argument("-o", "--out", type=Path, help="write every cell and score as JSON")
    args = ap.parse_args(argv)
    names = [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant {unknown[0]!r} (known: {', '.join(VARIANTS)})")
    results, cells = measure(names, args.jobs)
    print("| factor | changed | within 20 % | within 15 % | MAE | RMS | bias T1 / T2 / T3 (Mbit/s) |")
    print("|---|---|---|---|---|---|---|")
    for name, what, s in results:
        print(row(name, what, s))
    if args.out:
        args.out.write_text(json.dumps({
            "scores": {name: s for name, _, s in results},
            "cells": {k: {f"{s}/{r}": v for (s, r), v in c.items()} for k, c in cells.items()},
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
