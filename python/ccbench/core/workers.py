"""Worker processes for sweeps, per-run plots and reports.

Workers are forked from one ``forkserver`` (``spawn`` where there is none)
that has ccbench's sweep modules imported, and its plotting and report
modules where the command draws static figures: forking it takes
milliseconds, importing them (Polars, matplotlib) about half a second or
more. This module imports nothing heavy, so a command can start the
forkserver (:func:`start_early`) before it imports the modules that load and
plan its work, and the forkserver's imports overlap that instead of
following it.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

__all__ = ["cores", "in_workers", "mp_context", "run_scope", "start_early", "wait_first", "worker_init"]

#: What the forkserver imports before it forks any worker: what a run needs (its page draws with NumPy).
PRELOAD = ["ccbench.sweep.runner", "ccbench.simulate.page", "numpy"]
#: And for work that draws static figures: matplotlib alone takes ~0.4 s to import, which a sweep
#: without a PNG (every built-in suite's default) would wait for before its first run.
PRELOAD_PLOTS = ["ccbench.simulate.plot", "ccbench.report.suite_plots", "ccbench.report.suite"]
_preload = list(PRELOAD)


def cores() -> int:
    """CPU cores this process may use (the default number of jobs)."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return int(count() or 1)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def mp_context() -> Any:
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_preload)
        return ctx
    return mp.get_context("spawn")


def start_early(jobs: int | None = None, *, plots: bool = False) -> None:
    """Start the forkserver now if work will go to more than one process (``jobs``,
    default: the cores), so that its imports run while this process prepares the
    work it will hand out; with ``plots`` it imports the plotting modules too. A
    no-op once it runs (a worker that draws later imports matplotlib itself)."""
    if plots:
        _preload[len(PRELOAD):] = PRELOAD_PLOTS
    if (jobs or cores()) > 1 and mp_context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def in_workers(fn: Callable[[Any], Any], items: Sequence[Any], jobs: int) -> Iterator[tuple[Any, Any]]:
    """``(item, fn(item))`` for each item as it finishes, ``jobs`` at a time.

    More than one at a time runs in worker processes forked from the forkserver
    (plotting modules preloaded where the command started it for plots); they
    ignore Ctrl-C, which reaches this process alone, and leaving the iterator
    early cancels what has not started. ``fn`` must be a module-level function
    and items plain data.
    """
    if jobs <= 1 or len(items) <= 1:
        for item in items:
            yield item, fn(item)
        return
    pool = ProcessPoolExecutor(min(jobs, len(items)), mp_context=mp_context(), initializer=worker_init,
                               initargs=(os.getpid(),))
    try:
        futures = {pool.submit(fn, item): item for item in items}
        pending = set(futures)
        while pending:
            done = wait_first(pool, pending)
            pending -= done
            for fut in done:
                yield futures[fut], fut.result()  # an item that failed fails the whole, as it would here
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def wait_first(pool: ProcessPoolExecutor, futures: Iterable[Future[Any]], timeout: float = 0.5) -> set[Future[Any]]:
    """Those of ``futures`` done after waiting at most ``timeout`` seconds for the first.

    It also makes sure the pool notices a worker that died. CPython's pool wakes its manager
    thread before it starts the worker a submit adds, so the manager can be left watching the
    older workers alone; a worker killed then (out of memory, SIGKILL) would fail its run only
    when another run ends, or never if none is running. Waking the manager again makes it look.
    """
    from multiprocessing.connection import wait as ready

    done, _ = wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
    if not done:
        processes = list((getattr(pool, "_processes", None) or {}).values())
        wakeup = getattr(pool, "_executor_manager_thread_wakeup", None)
        if wakeup is not None and ready([p.sentinel for p in processes], timeout=0):  # one has exited
            with pool._shutdown_lock:  # type: ignore[attr-defined]  # as submit() wakes it
                wakeup.wakeup()
    return done


def worker_init(parent: int) -> None:
    # What the worker inherits from the forkserver (its imports) is never garbage: kept out of the
    # collector, the worker's first full collection does not walk it and copy every page it touches.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    signal.signal(signal.SIGTERM, _on_sigterm)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="ccbench-exit-with-parent").start()


#: A run is in progress in this worker (:func:`run_scope`).
_in_run = False
#: This worker's run has been told to stop and is removing its files.
_stopping = False


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM in a worker (sent to the whole process group by ``timeout``, a
    scheduler, or by the sweep abandoning its runs): a run in progress is
    stopped as by Ctrl-C, so it removes its files, then the worker exits; an
    idle worker exits at once. A worker usually gets two (the group's, then
    the sweep's own): the second must not cut the first's clean-up short."""
    global _stopping
    if _in_run:
        if _stopping:
            return
        from ccbench.core.errors import Terminated

        _stopping = True
        raise Terminated(signum)
    os._exit(128 + signum)


@contextmanager
def run_scope() -> Iterator[None]:
    """One run in a worker: SIGTERM stops it cleanly (its ``with`` blocks remove
    what it wrote), and the worker exits once it is out; in the main process,
    the exception goes on to the caller."""
    global _in_run
    from ccbench.core.errors import Terminated

    _in_run = True
    try:
        yield
    except Terminated as e:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # a pool worker
            os._exit(e.exit_code)
        raise
    finally:
        _in_run = False


def _exit_with(parent: int) -> None:
    """End this worker once the sweep's process is gone (killed with SIGKILL, say).

    Pool workers would otherwise wait for work forever, and keep the dead
    process's stdout and stderr open.
    """
    while _alive(parent):
        time.sleep(1.0)
    os._exit(1)


def _alive(pid: int) -> bool:
    if os.path.isdir("/proc/self"):  # Linux: a killed process is a zombie until its parent reaps it
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in (b"Z", b"X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True
