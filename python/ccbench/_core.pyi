"""Typed mirror of the native module built from crates/ccbench-py (internal).

Use the public API in :mod:`ccbench` instead; it converts these exceptions
and decodes the tables.
"""

from collections.abc import Callable
from typing import Literal, TypedDict

DType = Literal["f64", "u32", "u64", "i64"]
# column name -> (dtype, little-endian packed values); all columns of a table are equally long
Table = dict[str, tuple[DType, bytes]]

class Problem(TypedDict):
    file: str
    line: int | None
    col: int | None
    key: str
    message: str

class RunOutput(TypedDict):
    summary: str  # summary.json text
    scenario: str  # resolved scenario TOML, every default filled in
    tables: dict[str, Table]
    warnings: list[Problem]  # legal values probably not meant ("100Mbps" = 800 Mbit/s)

class ScenarioError(Exception):
    """args = (message: str, problems: list[Problem])."""

    args: tuple[str, list[Problem]]

class SimulationError(Exception):
    """args = (message: str,)."""

def run(text: str, path: str | None, overrides: list[str],
        progress: Callable[[float, float], object] | None = None) -> RunOutput:
    """Simulate a scenario; releases the GIL. `path` only names the text in errors.
    `progress(now_s, end_s)` is called each time simulated time advances by another thousandth of the run."""

def warnings(text: str, path: str | None, overrides: list[str]) -> list[Problem]:
    """The scenario's warnings, or raise ScenarioError."""

def validate(text: str, path: str | None, overrides: list[str]) -> str:
    """Return the resolved scenario TOML, or raise ScenarioError."""

def version() -> str: ...

class Cost(TypedDict):
    memory: float  # bytes the run is estimated to hold (without its tables when streamed)
    disk: float  # bytes of tables (and pcap records) a streamed run writes, before compression
    events: float
    packets: float
    state: float  # bytes the built links and flows hold before any packet moves

def estimate(text: str, path: str | None = None, overrides: list[str] = ..., streamed: bool = False) -> Cost:
    """The scenario's estimated cost as the limits check it, or raise ScenarioError."""

def file_name(id: str) -> str:
    """A file name (no extension) for an id: plain ids as they are, other bytes as %XX."""
