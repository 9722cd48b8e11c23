"""Run and validate scenarios from Python.

A scenario is given as a path (``str`` or ``os.PathLike``) to a TOML file or as
the TOML text itself. Overrides change it before it is checked, exactly like
the CLI's ``--set key.path=value``:

- ``set=["links.0.rate=50Mbit", ...]`` passes strings through unchanged;
- keyword overrides name the key path with ``__`` for each dot and give the
  value as a Python value rendered as TOML: ``duration="10s"`` becomes
  ``duration="10s"``, ``links__0__rate="50Mbit"`` becomes
  ``links.0.rate="50Mbit"``, ``flows__1__ecn=True`` becomes
  ``flows.1.ecn=true``; lists and dicts become TOML arrays and inline tables;
- ``seed=N`` is ``seed=N``.

They are applied in that order, so a later one wins.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ccbench import _core
from ccbench.core.errors import ScenarioError, ScenarioWarning, from_native, problem_text
from ccbench.simulate.results import Result, decode_tables

__all__ = ["Source", "estimate", "overrides", "run", "toml_value", "validate"]

Source = str | os.PathLike[str]

#: Bytes of a table the core buffers before writing them out as a row group
#: with ``spill_dir`` (42 000 sojourn rows: 5 s of a 100 Mbit/s link; a series
#: at 1/16 of it, ~700 rows). It checks every 65536 events, and a table's groups
#: grow to 1/1024 of what it wrote before, so a file has a few thousand at most.
SPILL_BYTES = 1 << 20


def run(scenario: Source, *, seed: int | None = None, set: Iterable[str] | None = None,
        progress: Callable[[float, float], None] | None = None, spill_dir: str | os.PathLike[str] | None = None,
        **kw: Any) -> Result:
    """Simulate a scenario and return its :class:`~ccbench.simulate.results.Result`.

    ``progress(now_s, end_s)``, if given, is called each time the simulated
    clock has advanced by another thousandth of the run (the same simulated
    times on every machine, however fast). Legal but suspicious values (a ``"100Mbps"``
    rate) are reported as :class:`~ccbench.errors.ScenarioWarning`.

    With ``spill_dir`` (an existing directory), the core writes every table
    there as ``<table>.parquet``, a row group of ``SPILL_BYTES`` or more at
    a time while the run goes, so memory stays flat however long the run is. The
    result reads a table from its file when it is first looked up, and
    :meth:`~ccbench.simulate.results.Result.save` links or copies the files. The
    directory must outlive the result's use. The tables then do not count
    against ``limits.memory``.

    Raises ScenarioError for anything wrong with the scenario or overrides
    (including a run that outgrows ``limits.memory``: nothing is returned),
    FileNotFoundError/OSError if the file cannot be read, and
    SimulationError if the simulator itself fails.
    """
    text, path = read_source(scenario)
    ov = overrides(set, kw, seed)
    with from_native():
        # Warned before running, so that they are seen even if the run fails.
        spill = None if spill_dir is None else os.fspath(spill_dir)
        _warn(_core.warnings(text, path, ov, spill is not None))
        out = _core.run(text, path, ov, progress, spill, SPILL_BYTES)
    files = {name: Path(p) for name, p in out["files"].items()}
    if files:  # the core wrote every table; those it also handed over (what a page draws) decode on first use
        return Result(out["summary"], out["scenario"], {}, files, out.get("page_buckets"), native=out["tables"])
    return Result(out["summary"], out["scenario"], decode_tables(out["tables"]), files, out.get("page_buckets"))


def _warn(problems: Sequence[Mapping[str, Any]]) -> None:
    for p in problems:
        warnings.warn(ScenarioWarning(problem_text(p)), stacklevel=3)


def validate(scenario: Source, *, seed: int | None = None, set: Iterable[str] | None = None,
             streamed: bool = False, **kw: Any) -> str:
    """Check a scenario without running it; return it resolved as TOML (every default filled in).

    ``streamed``: check it for a run whose tables go to disk as it goes
    (``run(spill_dir=…)``, ``ccbench run``, suites), so that their size does
    not count against ``limits.memory``.
    """
    text, path = read_source(scenario)
    with from_native():
        ov = overrides(set, kw, seed)
        resolved = _core.validate(text, path, ov, streamed)
        _warn(_core.warnings(text, path, ov, streamed))
    return resolved


def estimate(scenario: Source, *, seed: int | None = None, set: Iterable[str] | None = None,
             streamed: bool = False, **kw: Any) -> dict[str, float]:
    """What a scenario is estimated to cost, as ``[limits]`` checks it:
    ``memory`` and ``disk`` (bytes; ``disk`` is what a run that writes its
    tables as it goes writes, before compression, ``memory`` leaves those
    tables out when ``streamed``), ``events``, ``packets`` and ``state`` (bytes
    the links and flows hold before any packet moves). Raises ScenarioError
    as :func:`validate` does (also for a scenario over its limits)."""
    text, path = read_source(scenario)
    with from_native():
        return dict(_core.estimate(text, path, overrides(set, kw, seed), streamed))


def read_source(scenario: Source) -> tuple[str, str | None]:
    """(TOML text, file name for messages) of a path or of TOML text.

    A string is TOML text only if it has a line break, or is one line that
    reads as ``key = value`` and names no file (no ``/``, not ending in
    ``.toml``). Anything else is a path even if no such file exists, so a
    typo in a file name — also one with ``=`` in it, such as a sweep's
    ``runs/rate=10Mbit-…/scenario.toml`` — says "no such file" rather than
    failing to parse as TOML. A file must be a regular file or a pipe of at
    most 16 MiB (:func:`ccbench.core.files.read_input`).
    """
    from ccbench.core.files import read_input

    if isinstance(scenario, str) and not _looks_like_path(scenario):
        return scenario, None
    path = os.fspath(scenario)
    data = read_input(path, "scenario")
    try:
        return data.decode("utf-8"), path
    except UnicodeDecodeError as e:
        msg = f"not UTF-8 text (byte {e.start})"
        problem = {"file": path, "line": None, "col": None, "key": "", "message": msg}
        raise ScenarioError(f"{path}: {msg}", [problem]) from None


def _looks_like_path(s: str) -> bool:
    if os.path.isfile(s):
        return True
    if "\n" in s or not s.strip():
        return False
    one_line_toml = re.match(r'\s*[A-Za-z0-9_."\'-]+\s*=', s) is not None
    return not one_line_toml or "/" in s or os.sep in s or s.rstrip().endswith(".toml")


def overrides(set: Iterable[str] | None, kw: Mapping[str, Any], seed: int | None = None) -> list[str]:
    """The ``key.path=value`` strings for the core (see the module docs); the core checks them."""
    if isinstance(set, str):
        set = [set]  # one override, not its characters
    out = list(set or [])
    out += [f"{key.replace('__', '.')}={toml_value(value)}" for key, value in kw.items()]
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        out.append(f"seed={seed}")
    return out


def toml_value(value: Any) -> str:
    """A Python value written as a TOML value (strings quoted; bools, numbers, lists, dicts)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if value != value else repr(value)  # repr gives inf, -inf, 1e-06: all TOML
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{_toml_string(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as a TOML value")


def _toml_string(s: str) -> str:
    escaped = []
    for ch in s:
        if ch in '"\\':
            escaped.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            escaped.append(f"\\u{ord(ch):04x}")
        else:
            escaped.append(ch)
    return '"' + "".join(escaped) + '"'

