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

from ccbench import errors
from ccbench._core import version as _native_version
from ccbench.api import run, validate
from ccbench.errors import CcbenchError, ScenarioError, SimulationError
from ccbench.results import Result, load

__version__: str = _native_version()


def __getattr__(name: str) -> Any:
    """``sweep`` and ``load_suite`` load on first use: ``ccbench run`` needs neither.

    ``ccbench.sweep`` is both the module of sweeps and, called,
    :func:`ccbench.frame.sweep` (ccbench/sweep.py makes itself callable).
    """
    if name == "sweep":
        import ccbench.sweep

        return ccbench.sweep
    if name in ("explore", "load_explore"):
        import ccbench.explore

        return ccbench.explore if name == "explore" else ccbench.explore.load_explore
    if name == "load_suite":
        from ccbench.frame import load_suite

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
