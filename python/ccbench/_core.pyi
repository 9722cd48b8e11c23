"""Typed mirror of the native module built from crates/ccbench-py (internal).

Use the public API in :mod:`ccbench` instead; it converts these exceptions
and decodes the tables.
"""

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

class ScenarioError(Exception):
    """args = (message: str, problems: list[Problem])."""

    args: tuple[str, list[Problem]]

class SimulationError(Exception):
    """args = (message: str,)."""

def run(text: str, path: str | None, overrides: list[str]) -> RunOutput:
    """Simulate a scenario; releases the GIL. `path` only names the text in errors."""

def validate(text: str, path: str | None, overrides: list[str]) -> str:
    """Return the resolved scenario TOML, or raise ScenarioError."""

def version() -> str: ...
