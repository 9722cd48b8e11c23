"""Per-run plots drawn after the runs: ``ccbench plot DIR...``.

Sweeps draw per-run plots only when the suite's ``[report] plots`` asks for
them (drawing one takes about as long as many runs simulate); any finished
run can get them later, from its stored tables. A result directory gets
``<kind>.png`` for each kind asked (``timeseries`` by default); a suite
directory (or a suite of suites') gets them for every finished run, with
the suite's ``[[report.bounds]]`` on ``delivery_with_rtt``, in parallel
worker processes, and its report is rendered again to link them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ccbench.core.png import save_figure
from ccbench.core.workers import in_workers
from ccbench.plan.manifest import MANIFEST, read_manifest
from ccbench.plan.suite_file import parse_suite
from ccbench.simulate.results import SUMMARY_FILE

__all__ = ["draw", "draw_one", "kinds_of", "plan"]

#: (run directory, {plot kind: its options})
Job = tuple[Path, dict[str, dict[str, Any]]]


def plan(dirs: Sequence[Path], kinds: Sequence[str]) -> tuple[list[Job], list[Path]]:
    """The runs to draw and the suite directories whose reports link them.

    Raises FileNotFoundError naming a directory that is neither a finished
    result directory nor a suite's.
    """
    from ccbench.report.suite import part_dirs

    jobs: list[Job] = []
    suites: list[Path] = []
    for d in dirs:
        if (d / SUMMARY_FILE).is_file():
            jobs.append((d, {k: {} for k in kinds}))
        elif (d / MANIFEST).is_file():
            parts = part_dirs(d)
            for part in parts if parts is not None else [d]:
                jobs += _suite_jobs(part, kinds)
            suites.append(d)  # a suite of suites' report renders its parts' too
        else:
            raise FileNotFoundError(2, f"neither a result directory (no {SUMMARY_FILE}) nor a suite's (no {MANIFEST})",
                                    str(d))
    return jobs, suites


def _suite_jobs(root: Path, kinds: Sequence[str]) -> list[Job]:
    manifest = read_manifest(root)
    data = manifest.data
    suite = parse_suite(data.get("suite_text", ""), data.get("suite_file", "<suite>"), read_base=False)
    jobs = []
    for rec in manifest.runs:
        run = root / rec.dir
        if (run / SUMMARY_FILE).is_file():
            bounds = suite.report.bounds_for(rec.values)
            jobs.append((run, {k: bounds if k == "delivery_with_rtt" else {} for k in kinds}))
    return jobs


def draw(jobs: Sequence[Job], jobs_at_once: int = 1, on_done: Callable[[Path], None] = lambda _: None) -> None:
    """Draw every job's plots, ``jobs_at_once`` runs at a time (worker processes when more than one)."""
    for _, run in in_workers(draw_one, jobs, jobs_at_once):
        on_done(run)


def draw_one(job: Job) -> Path:
    """Write ``<kind>.png`` into the run's directory for each kind, each file replaced whole."""
    from ccbench.simulate import plot
    from ccbench.simulate.results import load

    run, kinds = job
    result = load(run)
    for kind, options in kinds.items():
        save_figure(getattr(plot, kind)(result, **options), run / f"{kind}.png", dpi=110)
    return run


def kinds_of(names: Sequence[str]) -> list[str]:
    """The kinds asked for, each once, in order (``timeseries`` when none)."""
    return list(dict.fromkeys(names)) or ["timeseries"]

