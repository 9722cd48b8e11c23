"""Running suites: their runs in worker processes or on Dask (:mod:`.runner`), sweeps from
Python as one frame (:mod:`.frame`), and explorations that choose their runs (:mod:`.explore`).

``ccbench.sweep`` is both this package and, called, :func:`ccbench.sweep.frame.sweep`.
Its runner's main names are here too, loaded on first use.
"""

from __future__ import annotations

from typing import Any

from ccbench.core.modules import make_callable

__all__ = ["MANIFEST", "RunRecord", "SweepInterrupted", "SweepResult", "execute", "read_manifest", "run_suite"]


def _sweep(*args: Any, **kw: Any) -> Any:
    from ccbench.sweep.frame import sweep

    return sweep(*args, **kw)


def __getattr__(name: str) -> Any:
    if name in ("MANIFEST", "RunRecord", "read_manifest"):
        from ccbench.plan import manifest

        return getattr(manifest, name)
    if name in ("SweepInterrupted", "SweepResult", "execute", "run_suite"):
        from ccbench.sweep import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


make_callable(__name__, _sweep)
