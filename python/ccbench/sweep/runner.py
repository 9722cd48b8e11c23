"""Run a suite: its planned runs in parallel, each saved as it finishes, resumable.

A sweep of suite ``NAME`` into ``OUT`` writes::

    OUT/NAME/suite.json           the manifest: suite text, axes, every run's key, status,
                                  error and wall time, ccbench version, git commit, executor
    OUT/NAME/runs/<key>/          one result directory per run (Result.save), key =
                                  "<axis>=<value>,...-<hash>", hash = first 12 hex digits of
                                  the sha256 of the resolved scenario (ccbench.validate)
    OUT/NAME/report.md, report.html, plots/     the report (ccbench.report.suite)

A run directory is complete once it holds ``summary.json`` (Result.save
writes it last and renames the directory into place), so ``resume=True``
skips exactly the runs whose directory is complete: an interrupted sweep
redoes nothing finished, and a changed suite reruns only the runs whose
resolved scenario changed (their key changed). Without ``resume`` every run
is redone. A run that fails — invalid overrides, a simulator error, a worker
that died — is recorded in suite.json with its message and the others go
on. suite.json is rewritten atomically as runs finish (at most once a
second) and at the end; the run directories, not suite.json, decide what is
finished.

Executor
--------
Local runs use worker *processes* (``concurrent.futures.ProcessPoolExecutor``
with the ``forkserver`` start method, ``spawn`` where there is none), not
threads. The core releases the GIL while simulating, but a run is more than
the simulation: decoding its columns, writing Parquet and above all drawing
its plot with matplotlib hold the GIL and take longer than the simulation
itself for short runs (a 30 s, 100 Mbit/s run simulates in ~0.2 s and saves
in ~0.7 s), so threads would serialize most of the work. Processes also keep
one run's memory and any crash away from the others, and make Ctrl-C simple:
workers ignore SIGINT and the main process decides. ``fork`` is avoided
because the parent has threads (rich's refresher, Polars' pool). The
forkserver preloads ccbench, so workers start in milliseconds after the
first pool. ``jobs=1`` runs in this process (no pool).

Ctrl-C stops submitting, lets the runs in progress finish (a second Ctrl-C
abandons them), keeps everything finished, writes suite.json and the report,
and raises :class:`SweepInterrupted`; the CLI then prints the ``--resume``
command and exits 130.

Dask
----
``dask="local"`` starts a ``distributed.LocalCluster`` (``jobs`` worker
processes, one thread each); any other string is a scheduler address; a
``distributed.Client`` is used as it is. Each run is one task calling
:func:`execute`; the worker simulates, saves into its own temporary
directory and returns the files, which this process writes into the same
layout as a local sweep. Workers need only ``pip install ccbench`` (plus
``distributed``), no shared file system.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccbench.core.errors import CcbenchError, SimulationError, Terminated
from ccbench.core.files import OLD_DIR, SUMMARY_FILE, check_free_space, work_dir
from ccbench.core.preload import preload
from ccbench.core.workers import cores, mp_context, run_scope, wait_first, worker_init
from ccbench.plan.manifest import MANIFEST, RUNS_DIR, ManifestWriter, RunRecord, read_manifest, write_set_manifest
from ccbench.plan.suite import PlannedRun, Suite, SuiteSet
from ccbench.plan.suite_file import load_suite
from ccbench.simulate.api import estimate, run
from ccbench.simulate.results import _replace_dir, _replaceable

__all__ = ["MANIFEST", "RunRecord", "SweepInterrupted", "SweepResult", "execute", "read_manifest", "run_suite"]

#: What rendering the report imports that the sweep does not: loaded on a thread during the sweep.
REPORT_MODULES = ("ccbench.report.suite", "ccbench.report.suite_figures")

Task = dict[str, Any]  # {"key", "scenario" (resolved TOML), "dir" (str or None), "plot" (bool), "figures", "page"}
Outcome = dict[str, Any]  # {"key", "ok", "error", "wall_s", "files" (relative path -> bytes, or None)}


@dataclass
class SweepResult:
    """What a sweep did: where, each run's record, whether it was interrupted, the report."""

    dir: Path
    runs: list[RunRecord]
    interrupted: bool = False
    report: Path | None = None
    wall_s: float = 0.0
    parts: list[SweepResult] = field(default_factory=list)  # a suite of suites: each part's own result

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.runs)

    @property
    def ok(self) -> int:
        return self.count("ok")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def pending(self) -> int:
        return self.count("pending")

    @property
    def reused(self) -> int:
        return sum(r.reused for r in self.runs)


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep; ``result`` holds what finished (kept on disk)."""

    def __init__(self, result: SweepResult) -> None:
        super().__init__("sweep interrupted")
        self.result = result


# --- one run (runs in a worker) ----------------------------------------------------------------


def execute(task: Task) -> Outcome:
    """Simulate one resolved scenario and save it; never raises except on Ctrl-C.

    With ``task["dir"]`` the result directory is written there; without it
    (Dask) it is written to a temporary directory and its files are returned.
    """
    t0 = time.perf_counter()
    files = None
    try:
        with run_scope():
            if task.get("dir"):
                check_free_space(task["dir"], estimate(task["scenario"], streamed=True)["disk"])
                with work_dir(task["dir"]) as work:
                    result = run(task["scenario"], spill_dir=work)
                    result.save(task["dir"], plot=task.get("plot", True), figures=task.get("figures"), work=work,
                                page=task.get("page"))
            else:
                with tempfile.TemporaryDirectory(prefix="ccbench-run-") as tmp:
                    result = run(task["scenario"], spill_dir=tmp)
                    saved = result.save(Path(tmp) / "run", plot=task.get("plot", True), figures=task.get("figures"),
                                        page=task.get("page"))
                    files = {p.relative_to(saved).as_posix(): p.read_bytes()
                             for p in sorted(saved.rglob("*")) if p.is_file()}  # the page's assets/ too
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a run's failure of any kind is recorded, not raised
        return {"key": task["key"], "ok": False, "error": describe_error(e), "wall_s": time.perf_counter() - t0,
                "files": None}
    return {"key": task["key"], "ok": True, "error": None, "wall_s": time.perf_counter() - t0, "files": files}


def describe_error(e: BaseException) -> str:
    """A run's error as one message: ccbench's own errors as they are, others with where they arose."""
    if isinstance(e, SimulationError):
        return f"simulation failed: {e}"
    if isinstance(e, CcbenchError):
        return str(e)
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror or e}"
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {e}{where}"


# --- the sweep ---------------------------------------------------------------------------------


def run_suite(
    suite: Suite | SuiteSet | str | os.PathLike[str],
    out: str | os.PathLike[str] = "results",
    *,
    jobs: int | None = None,
    resume: bool = False,
    dask: Any = None,
    set: Iterable[str] = (),
    progress: bool = True,
    report: bool = True,
    console: Any = None,
    into: str | os.PathLike[str] | None = None,
) -> SweepResult:
    """Run every planned run of a suite into ``out/<suite name>/`` (see the module docs),
    or into ``into`` itself when it is given (``ccbench suite run -o DIR``).

    A suite of suites runs its parts' runs in one pool, each part into
    ``out/<suite name>/<part name>/`` with its own suite.json and report; the
    suite's own directory gets a suite.json naming the parts and a report
    that shows them one after another.

    ``suite`` is a :class:`~ccbench.plan.suite.Suite`, a suite file or a built-in
    suite's name; ``set`` adds overrides to every run; ``jobs`` defaults to
    the number of usable cores; ``dask`` is None (local), ``"local"``, a
    scheduler address or a ``distributed.Client``. Raises SuiteError for a
    wrong suite, SweepInterrupted on Ctrl-C; failed runs are in the result.

    Worker processes import the main module, as with any multiprocessing:
    in a script, call this under ``if __name__ == "__main__":``.
    """
    started = time.time()
    t0 = time.perf_counter()
    if not isinstance(suite, (Suite, SuiteSet)):
        suite = load_suite(suite)
    set = [set] if isinstance(set, str) else list(set)
    if set:
        suite = suite.with_overrides(set)
    jobs = max(1, jobs or cores())
    root = Path(into) if into is not None else Path(out) / suite.name
    if isinstance(suite, SuiteSet):
        units = [(part, part.plan(), root / part.name) for part in suite.parts]
    else:
        units = [(suite, suite.plan(), root)]
    for _, _, r in units:
        (r / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for r in ([root] if isinstance(suite, SuiteSet) else []) + [r for _, _, r in units]:
            stack.enter_context(_locked(r))
        if isinstance(suite, SuiteSet):
            write_set_manifest(root, suite, set, started)
        if report:  # the report's code and NumPy (0.1 s or more) load while the runs go
            preload(REPORT_MODULES)
        results, interrupted = _sweep(suite.name, units, jobs, resume, dask, set, progress, console, started, t0)
        if isinstance(suite, SuiteSet):
            result = SweepResult(root, [r for res in results for r in res.runs], interrupted, None,
                                 time.perf_counter() - t0, parts=results)
        else:
            result = results[0]
        if report:
            from ccbench.report.suite import ConsoleProgress, render

            try:
                # After Ctrl-C only the tables (fast); `ccbench report DIR` draws the plots later.
                if progress:
                    with ConsoleProgress(console) as bar:
                        result.report = render(root, plots=not interrupted, progress=bar, jobs=jobs)
                else:
                    result.report = render(root, plots=not interrupted, jobs=jobs)
            except KeyboardInterrupt:  # the runs are safe; `ccbench report` renders it later
                raise SweepInterrupted(result) from None
    if interrupted:
        raise SweepInterrupted(result)
    return result


Unit = tuple[Suite, Sequence[PlannedRun], Path]  # a suite, its plan, its result directory


def _sweep(name: str, units: Sequence[Unit], jobs: int, resume: bool, dask: Any, overrides: Sequence[str],
           progress: bool, console: Any, started: float, t0: float) -> tuple[list[SweepResult], bool]:
    """Run the plans of one suite or of a suite of suites' parts in one pool; each unit keeps its manifest."""
    manifests: list[ManifestWriter] = []
    tasks: list[Task] = []
    for i, (suite, plan, root) in enumerate(units):
        runs_dir = root / RUNS_DIR
        _tidy(runs_dir)
        previous = {r.key: r for r in (read_manifest(root).runs if (root / MANIFEST).is_file() else [])}
        records, unit_tasks = _records(plan, runs_dir, resume, previous, plot="timeseries" in suite.report.plots,
                                       figures=suite.report.figures, page=suite.report.page)
        tasks += [{**t, "unit": i} for t in unit_tasks]
        manifests.append(ManifestWriter(root, suite, records, overrides, "", started))
    if dask is not None:
        executor = f"dask ({dask if isinstance(dask, str) else type(dask).__name__})"
    else:
        executor = "this process" if min(jobs, len(tasks)) <= 1 else f"{min(jobs, len(tasks))} worker processes"
    for m in manifests:
        m.executor = executor
        m.save()

    all_records = [r for m in manifests for r in m.records.values()]
    bar = _Progress(name, len(tasks), sum(r.reused for r in all_records), console, enabled=progress,
                    failed=[r for r in all_records if r.status == "failed"])

    def on_done(task: Task, outcome: Outcome) -> None:
        manifest = manifests[task["unit"]]
        rec = manifest.records[task["key"]]
        if outcome["ok"] and outcome.get("files") is not None:
            try:
                _write_run(Path(task["dir"]), outcome["files"])
            except OSError as e:
                outcome = {**outcome, "ok": False, "error": describe_error(e)}
        rec.status = "ok" if outcome["ok"] else "failed"
        rec.error = outcome["error"]
        rec.wall_s = round(outcome["wall_s"], 6)
        bar.advance(rec)
        manifest.save(throttle=True)

    interrupted = False
    with bar:
        try:
            if not tasks:
                pass
            elif dask is not None:
                interrupted = _run_dask(tasks, dask, jobs, on_done, bar.stopping)
            elif min(jobs, len(tasks)) <= 1:
                interrupted = _run_serial(tasks, on_done, bar.stopping)
            else:
                interrupted = _run_processes(tasks, min(jobs, len(tasks)), on_done, bar.stopping)
        except KeyboardInterrupt:  # outside a backend's own handling, e.g. while a cluster starts
            interrupted = True
        finally:
            if interrupted:  # every run has stopped: clear what one that could not clean up left
                for _, _, root in units:
                    _tidy(root / RUNS_DIR)
            for m in manifests:
                m.finish(time.perf_counter() - t0, interrupted)
    return [SweepResult(m.path.parent, list(m.records.values()), interrupted, None, m.wall_s)
            for m in manifests], interrupted


LOCK = ".lock"


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One sweep at a time per suite directory (another would delete this one's temporary runs).

    An OS lock (``fcntl.flock`` on ``root/.lock``): exactly one of two sweeps
    started at the same instant gets it, and it goes away with its process,
    however that ends, so a killed sweep leaves nothing to clean up. The file
    holds the holder's process id, for the message.
    """
    import fcntl

    path = root / LOCK
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            who = f"process {holder}" if holder.isdigit() else "another process"
            raise CcbenchError(f"{root}: another sweep ({who}) is writing here; wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _records(plan: Sequence[PlannedRun], runs_dir: Path, resume: bool, previous: Mapping[str, RunRecord],
             *, plot: bool, figures: Callable[[Mapping[str, Any]], dict[str, Any]] = lambda _: {},
             page: Callable[[Mapping[str, Any]], dict[str, Any]] = lambda _: {},
             ) -> tuple[list[RunRecord], list[Task]]:
    records, tasks = [], []
    for p in plan:
        rec = RunRecord(p.key, dict(p.values), [o.text for o in p.overrides], p.hash)
        records.append(rec)
        if p.scenario is None:
            rec.status, rec.error = "failed", p.error
        elif resume and (runs_dir / p.key / SUMMARY_FILE).is_file():
            rec.status, rec.reused = "ok", True
            rec.wall_s = previous[p.key].wall_s if p.key in previous else None
        else:
            tasks.append({"key": p.key, "scenario": p.scenario, "dir": str(runs_dir / p.key), "plot": plot,
                          "figures": figures(p.values), "page": page(p.values)})
    return records, tasks


def _tidy(runs_dir: Path) -> None:
    """Clear what a killed sweep left: temporary run directories, and put back a result set aside mid-replace."""
    for p in runs_dir.iterdir():
        if ".tmp-spill-" in p.name and p.is_dir():  # a run's work directory (ccbench.core.files.work_dir)
            target = runs_dir / p.name[1:].split(".tmp-spill-")[0]
            if not target.exists() and (p / OLD_DIR / SUMMARY_FILE).is_file():
                os.replace(p / OLD_DIR, target)
            shutil.rmtree(p, ignore_errors=True)
        elif ".tmp-" in p.name and p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        elif ".old-" in p.name and p.is_dir():
            target = runs_dir / p.name.split(".old-")[0]
            if not target.exists() and (p / SUMMARY_FILE).is_file():
                os.replace(p, target)
            else:
                shutil.rmtree(p, ignore_errors=True)


def _write_run(target: Path, files: Mapping[str, bytes]) -> None:
    """A result directory from its files, atomically and summary.json last, as Result.save does."""
    if target.exists() and not _replaceable(target):
        raise FileExistsError(17, "exists and is not a ccbench result directory", str(target))
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        for name, data in files.items():
            if name != SUMMARY_FILE:
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)  # assets/
                (tmp / name).write_bytes(data)
        (tmp / SUMMARY_FILE).write_bytes(files[SUMMARY_FILE])
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --- progress ----------------------------------------------------------------------------------


class _Progress:
    """A rich progress bar: runs done of those to do, failures, elapsed time and ETA."""

    def __init__(self, name: str, total: int, reused: int, console: Any, *, enabled: bool,
                 failed: Sequence[RunRecord] = ()) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from ccbench.core.term import console as terminal

        self.console = console or terminal(stderr=True, highlight=False)
        self.enabled = enabled
        self.failed = len(failed)  # runs that failed before running (invalid overrides) count too
        self.early = list(failed)
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed", style="red"), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn(), console=self.console, disable=not enabled,
        )
        label = name + (f" ({reused} done before)" if reused else "")
        self.task = self.progress.add_task(label, total=total, failed=self.failed)

    def __enter__(self) -> _Progress:
        self.progress.start()
        if self.enabled:
            for rec in self.early:
                first = (rec.error or "").splitlines()[0] if rec.error else ""
                self.progress.console.print(f"failed: {rec.key}: {first}", style="red", markup=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def advance(self, rec: RunRecord) -> None:
        if rec.status == "failed":
            self.failed += 1
            first = (rec.error or "").splitlines()[0] if rec.error else ""
            if self.enabled:
                self.progress.console.print(f"failed: {rec.key}: {first}", style="red", markup=False)
        self.progress.update(self.task, advance=1, failed=self.failed)

    def stopping(self, running: int) -> None:
        if not self.enabled:
            return
        msg = "interrupted"
        if running:
            msg += f": waiting for the {running} running run{'s' if running > 1 else ''} (Ctrl-C again to abandon)"
        self.progress.console.print(msg, style="yellow", markup=False)
        self.progress.update(self.task, description="stopping")


# --- executors ---------------------------------------------------------------------------------

OnDone = Callable[[Task, Outcome], None]
OnStopping = Callable[[int], None]


def _run_serial(tasks: Sequence[Task], on_done: OnDone, on_stopping: OnStopping) -> bool:
    """In this process, one after the other; Ctrl-C interrupts the run in progress (nothing of it is kept)."""
    try:
        for task in tasks:
            on_done(task, execute(task))
    except KeyboardInterrupt:
        on_stopping(0)
        return True
    return False


def _run_processes(tasks: Sequence[Task], jobs: int, on_done: OnDone, on_stopping: OnStopping) -> bool:
    """At most ``jobs`` runs in worker processes at a time; a pool a worker died in is replaced."""
    queue = deque(tasks)
    while queue:
        inflight: dict[Future[Outcome], Task] = {}
        pool = ProcessPoolExecutor(jobs, mp_context=mp_context(), initializer=worker_init, initargs=(os.getpid(),))
        try:
            try:
                _pump(pool, queue, inflight, jobs, on_done)
            except KeyboardInterrupt as e:
                on_stopping(len(inflight))
                if isinstance(e, Terminated):  # no time to let runs finish: they remove their files and exit
                    _terminate(pool)
                    return True
                try:
                    queue.clear()
                    _pump(pool, queue, inflight, jobs, on_done)
                except KeyboardInterrupt:
                    _terminate(pool)
                return True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return False


def _pump(pool: ProcessPoolExecutor, queue: deque[Task], inflight: dict[Future[Outcome], Task], jobs: int,
          on_done: OnDone) -> None:
    """Keep ``jobs`` runs going until the queue is empty and all finished, or the pool broke."""
    broken = False
    while inflight or (queue and not broken):
        while queue and not broken and len(inflight) < jobs:
            task = queue.popleft()
            inflight[pool.submit(execute, task)] = task
        done = wait_first(pool, inflight)
        for fut in done:
            task = inflight.pop(fut)
            try:
                outcome = fut.result()
            except BrokenProcessPool as e:
                broken = True
                outcome = {"key": task["key"], "ok": False, "wall_s": 0.0, "files": None,
                           "error": f"worker process died while this run was in progress ({e}); "
                                    "if it was not this run's fault, --resume runs it again"}
            on_done(task, outcome)


def _terminate(pool: ProcessPoolExecutor) -> None:
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()


def _run_dask(tasks: Sequence[Task], dask: Any, jobs: int, on_done: OnDone, on_stopping: OnStopping) -> bool:
    """Each run a Dask task; files come back to this process (no shared file system needed)."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise CcbenchError("--dask needs the distributed package: pip install distributed") from None
    owned: list[Any] = []
    try:
        if isinstance(dask, Client):
            client = dask
        elif dask == "local":
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
            owned.append(cluster)
            client = Client(cluster)
            owned.append(client)
        else:
            client = Client(dask)
            owned.append(client)
        futures = {}
        for task in tasks:
            remote = {**task, "dir": None}
            key = f"ccbench-{task['key']}-{os.urandom(4).hex()}"  # unique: a rerun is a new task
            futures[client.submit(execute, remote, pure=False, key=key)] = task
        try:
            for fut in as_completed(list(futures)):
                task = futures[fut]
                try:
                    outcome = fut.result()
                except Exception as e:  # a lost worker fails the run, not the sweep
                    outcome = {"key": task["key"], "ok": False, "wall_s": 0.0, "files": None,
                               "error": f"dask task failed: {describe_error(e)}"}
                on_done(task, outcome)
        except KeyboardInterrupt:
            on_stopping(0)
            client.cancel([f for f in futures if not f.done()])
            return True
        return False
    finally:
        for thing in reversed(owned):
            thing.close()


def resume_command(suite: str, out: str | os.PathLike[str], *, jobs: int | None = None, dask: str | None = None,
                   overrides: Sequence[str] = (), only: Sequence[str] = ()) -> str:
    """The command line that resumes a sweep."""
    import shlex

    words = ["ccbench", "suite", "run", suite, "--resume", "-o", str(out)]
    if jobs:
        words += ["-j", str(jobs)]
    if dask:
        words += ["--dask", dask]
    for o in overrides:
        words += ["--set", o]
    for o in only:
        words += ["--only", o]
    return " ".join(shlex.quote(w) for w in words)
