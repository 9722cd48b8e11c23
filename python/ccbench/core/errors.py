"""Exceptions ccbench raises on purpose.

Everything a user can cause is a :class:`ScenarioError` that names the file,
line and key; the CLI prints it without a traceback and exits 2. Anything else
the simulator reports is a :class:`SimulationError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["CcbenchError", "ResultError", "ScenarioError", "ScenarioWarning", "SimulationError", "Terminated",
           "from_native", "problem_text"]


class CcbenchError(Exception):
    """Base of every error ccbench raises on purpose."""


class ScenarioError(CcbenchError):
    """The scenario (file, text or overrides) is wrong; nothing was simulated.

    ``str(err)`` is the full message, one line per problem, each like
    ``fq.toml:14:9: links[1].rate: expected a rate like "100Mbit", got "100MB"``.
    ``problems`` holds the same problems as dicts with keys ``file``, ``line``
    (1-based or None), ``col`` (1-based or None), ``key`` and ``message``;
    ``file``, ``line``, ``col`` and ``key`` are those of the first problem.
    """

    def __init__(self, message: str, problems: Sequence[Mapping[str, Any]] = ()) -> None:
        # Both go into args so the exception survives pickling (sweep workers).
        super().__init__(message, [dict(p) for p in problems])
        self.problems: list[dict[str, Any]] = self.args[1]
        first = self.problems[0] if self.problems else {}
        self.file: str | None = first.get("file")
        self.line: int | None = first.get("line")
        self.col: int | None = first.get("col")
        self.key: str | None = first.get("key")

    def __str__(self) -> str:
        return str(self.args[0])


class ScenarioWarning(UserWarning):
    """A legal scenario value that is probably not meant (``"100Mbps"`` is
    800 Mbit/s, as in tc). ``str(w)`` is ``file:line:col: key: message``."""


def problem_text(p: Mapping[str, Any]) -> str:
    """A core problem dict as one line: ``file:line:col: key: message``."""
    where = str(p.get("file") or "<string>")
    if p.get("line"):
        where += f":{p['line']}" + (f":{p['col']}" if p.get("col") else "")
    key = f" {p['key']}:" if p.get("key") else ""
    return f"{where}:{key} {p.get('message')}"


class SimulationError(CcbenchError):
    """The simulator failed on a scenario it had accepted (a bug in ccbench)."""


class ResultError(CcbenchError):
    """A result or suite directory's file is damaged (``summary.json`` that is
    not JSON, say); the message names the file."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, a batch scheduler, CI) while a command runs: raised
    like Ctrl-C's KeyboardInterrupt, so that everything a run holds on disk is
    cleaned up on the way out; the command then exits 143 (128 + SIGTERM)."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__("terminated")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextmanager
def from_native() -> Iterator[None]:
    """Re-raise the native module's exceptions as this module's classes.

    The native chain is dropped: it carries no Python frames worth showing.
    """
    from ccbench import _core  # late: the native module may import this one

    try:
        yield
    except _core.ScenarioError as e:
        message = str(e.args[0]) if e.args else "invalid scenario"
        problems = e.args[1] if len(e.args) > 1 else []
        raise ScenarioError(message, problems) from None
    except _core.SimulationError as e:
        raise SimulationError(str(e.args[0]) if e.args else "simulation failed") from None
