"""Imports made on a thread while the work that precedes their use goes on.

The core runs without the GIL (``ccbench._core.run`` takes it only every
20 ms, to hand over progress and check for Ctrl-C), and a sweep's runs go in
worker processes, so the modules a command needs afterwards load meanwhile
on another core: the run page's and the summary's code (rich) during
``ccbench run``'s simulation, the report's (NumPy, matplotlib) during a
sweep. An import holds the GIL, so it is free only while the core runs.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable

__all__ = ["preload"]


def preload(modules: Iterable[str]) -> threading.Thread:
    """Start importing ``modules`` (in order) on a daemon thread; returns it."""
    thread = threading.Thread(target=_load, args=(tuple(modules),), name="ccbench-preload", daemon=True)
    thread.start()
    return thread


def _load(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the command's own import raises it again, where it is reported
            return
