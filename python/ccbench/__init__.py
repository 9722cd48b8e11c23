"""ccbench: deterministic packet-level simulation of congestion control and AQM.

Example::

    import ccbench
    res = ccbench.run("scenario.toml", duration="10s", links__0__rate="50Mbit")
    res.flows.select("id", "goodput_mbps", "rtt_p99_ms")   # Polars DataFrame
    res.save("results/scenario")                           # scenario.toml, summary.json, *.parquet, plot
    ccbench.load("results/scenario").summary["jain"]
    df = ccbench.sweep("scenario.toml", axes={"links.0.rate": ["10Mbit", "50Mbit"]}, seeds=3)
    df = ccbench.load_suite("results/scenario-sweep")     # one row per run x flow
    df = ccbench.explore("explore.toml", "results/x")     # where a property stops holding (sampled runs)

The simulator is the native module ``ccbench._core``; this package reads
scenarios, turns its columns into Polars tables, and writes, plots and shows
results.
"""

from typing import Any

from ccbench._core import version as _native_version
from ccbench.core import errors
from ccbench.core.errors import CcbenchError, ScenarioError, SimulationError
from ccbench.simulate.api import run, validate
from ccbench.simulate.results import Result, load

__version__: str = _native_version()


def __getattr__(name: str) -> Any:
    """``sweep`` and ``load_suite`` load on first use: ``ccbench run`` needs neither.

    ``ccbench.sweep`` is both the package of sweeps and, called,
    :func:`ccbench.sweep.frame.sweep`; ``ccbench.explore`` is both the module
    :mod:`ccbench.sweep.explore` and, called, its :func:`explore`.
    """
    if name == "sweep":
        import ccbench.sweep

        return ccbench.sweep
    if name in ("explore", "load_explore"):
        from ccbench.sweep import explore

        return explore if name == "explore" else explore.load_explore
    if name == "load_suite":
        from ccbench.sweep.frame import load_suite

        return load_suite
    raise AttributeError(f"module 'ccbench' has no attribute {name!r}")

__all__ = [
    "CcbenchError",
    "Result",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "errors",
    "explore",
    "load",
    "load_explore",
    "load_suite",
    "run",
    "sweep",
    "validate",
]
