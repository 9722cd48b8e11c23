"""Suite files: a base scenario, a matrix of overrides, and the report to show.

A suite expands into one scenario per combination of its axes' values; each
is the base scenario with ``key.path=value`` overrides applied, exactly like
``ccbench run --set`` (array elements by index or ``id``; values are TOML,
falling back to a string). Example::

    name = "rtt-fairness"                  # results go to <out>/<name>/; default: the file's stem
    description = "2 CUBIC flows, RTT ratio 1/2/4/8 x FIFO/CoDel/FQ-CoDel"
    base = "scenario.toml"                 # a scenario file, relative to this file (or [base] below)
    set = ['duration="30s"']               # fixed overrides for every run (optional)

    [[axes]]                               # axes expand in order: the first varies slowest
    name = "ratio"
    label = "RTT ratio"                    # table headings (default: the name)
    values = [1, 2, 4, 8]                  # strings, integers, floats or booleans
    format = "{value}x"                    # how a value is shown (or labels = { "1" = "1:1" })
    [axes.set]                             # per value (keyed by the value as text): its overrides
    "1" = ['flows.long.access_delay="0ms"']
    "2" = ['flows.long.access_delay="10ms"']
    "4" = ['flows.long.access_delay="30ms"']
    "8" = ['flows.long.access_delay="70ms"']

    [[axes]]
    name = "qdisc"
    values = ["pfifo", "fq_codel"]
    labels = { pfifo = "FIFO", fq_codel = "FQ-CoDel" }
    set = ['links.bottleneck.qdisc={ kind = "{value}" }']   # one list for every value: {value} is replaced

    [[axes]]
    name = "tcp"
    values = [1, 2, 4]
    key = "flows.cubic.count"              # short for set = ["flows.cubic.count={value}"]
    format = "{value} TCP"

    seeds = 5                              # optional: a last axis "seed" = 1..5 (or seeds = [1, 7, 9])

    exclude = [{ qdisc = "pfifo", tcp = [2, 4] }]   # optional: combinations not to run (each entry
                                           # names axes and a value or list; a point matching all is left out)

    [[when]]                               # optional: overrides for the points matching `where`,
    where = { qdisc = "fq_codel", ratio = [4, 8] }  # applied after the axes' own; {axis} in
    set = ['duration="60s"', 'flows.cubic.count={tcp}']   # them is the point's value on that axis

    [report]
    plots = ["timeseries"]                 # per run (default: none; `ccbench plot DIR` draws them later)
    suite_plots = ["totals", "seed_box"]   # across runs as PNGs (default: none; report.html draws them all),
                                           # of goodput_box, rtt_box, delay_cdf, goodput_cdf, totals, seed_box

    [[report.tables]]
    title = "Goodput ratio, short-RTT / long-RTT flow"
    rows = "qdisc"                         # an axis
    cols = "ratio"                         # an axis (optional: one column)
    cell = 'ratio(goodput_mbps, "short", "long")'   # a metric expression: see ccbench.plan.expr
    format = "{:.2f}"                      # one {} or {:spec} field, text around it allowed
    where = { tcp = 1 }                    # fix other axes (optional); axes left free get one table each
    # Instead of cols/cell: columns = [{ label = "1 TCP", cell = '...', reference = 50 }, ...]
    # (one expression each, all over the same run; reference = a fair-share row).
    # published = { source = "where from", rows = { "1" = [0.8, 0.7, 0.6, 0.5] } }   # optional: per
    #   row value, one number per column; the report adds "<title>: ccbench vs published" with each
    #   cell's error, the RMS error per column and over all cells, and each column's window.

    [[report.columns]]                     # extra columns of the per-run table (optional)
    title = "ping p99 (ms)"
    cell = 'rtt_p99_ms(probe="ping")'

An axis named ``seed`` (``seeds = N`` makes one) is aggregated over by every
table that does not show it as ``rows``, ``cols`` or in ``where``: a cell is
the mean over the seeds ± the half-width of its 95 % confidence interval
(Student's t, t·s/√n), and the report adds a box plot per configuration
across the seeds (``plots/seed_box.png``).

Instead of ``base = "file"``, a ``[base]`` table holds the scenario inline
(``[[base.links]]``, ``[[base.flows]]``, ...); errors in it point into the
suite file.

One axis value may set several keys (give it a list). ``{value}`` is replaced
by the value's text as written in the suite (``10Mbit``, ``4``, ``true``); with
``key =`` the value is written as TOML (strings quoted). Overrides apply in the
order: fixed ``set``, ``--set`` from the command line, then each axis in order.

A suite of suites lists its parts instead of a base and axes: each part is a
suite file (relative to this one) run into ``<out>/<name>/<part name>/`` with
its own report, and the suite's report.md/report.html put the parts' tables
one after another::

    name = "sce-l4s"
    parts = ["sce-l4s/s1.toml", { suite = "sce-l4s/s2.toml", only = { arch = "l4s" }, set = ['...'] }]

``only`` keeps the points whose axis values are among those given (as
``--only`` does on the command line), ``set`` adds fixed overrides.

Every problem in a suite file is reported at once, each naming
``file:line:col: key``, as a :class:`SuiteError` (a ScenarioError, so the CLI
prints it without a traceback and exits 2). Line numbers are found by scanning
the file's statements (``tomllib`` gives none). A run whose overrides do not
fit the base scenario does not stop the suite: it is planned as a failed run
whose message points at the override's line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from ccbench.plan.expr import Expr, ExprError
from ccbench.plan.expr import parse as parse_expr
from ccbench.plan.suite import (
    DEFAULT_RUN_PLOTS,
    DEFAULT_SUITE_PLOTS,
    RUN_PLOTS,
    SEED_AXIS,
    SUITE_PLOTS,
    Axis,
    ColumnSpec,
    Override,
    ReportSpec,
    Scalar,
    Selection,
    Suite,
    SuiteError,
    SuiteSet,
    TableSpec,
    _problem_line,
    _selection,
    _show,
    format_value,
    value_key,
)
from ccbench.plan.toml_text import Key, _inline_base, _key_text, _Locator
from ccbench.simulate.api import toml_value
from ccbench.simulate.page import PAGE_FIGURES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["builtin_suites", "load_suite", "parse_suite"]

_SUITE_KEYS = ("name", "description", "base", "set", "axes", "seeds", "exclude", "when", "report")
_SET_KEYS = ("name", "description", "parts")
_PART_KEYS = ("suite", "only", "set")
_WHEN_KEYS = ("where", "set")
_AXIS_KEYS = ("name", "label", "values", "key", "set", "labels", "format")
_REPORT_KEYS = ("tables", "columns", "plots", "page_figures", "suite_plots", "bounds")
_BOUNDS_KEYS = ("where", "throughput", "rtt")
_TABLE_KEYS = ("title", "rows", "cols", "cell", "format", "where", "columns", "reference", "published")
_PUBLISHED_KEYS = ("source", "rows")
_TABLE_COLUMN_KEYS = ("label", "cell", "reference")
_COLUMN_KEYS = ("title", "cell", "format")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

# --- built-in suites --------------------------------------------------------------------------


def _builtin_dir() -> Path:
    return Path(str(resources.files("ccbench") / "suites"))


def builtin_suites() -> list[tuple[str, str]]:
    """(name, description) of each built-in suite, by name."""
    out = []
    for path in sorted(_builtin_dir().glob("*.toml")):
        with open(path, "rb") as f:
            data = tomllib.load(f)
        out.append((str(data.get("name", path.stem)), str(data.get("description", ""))))
    return out


def load_suite(source: str | os.PathLike[str], *, read_base: bool = True) -> Suite | SuiteSet:
    """A suite file, or a built-in suite by name (see :func:`builtin_suites`)."""
    path = Path(source)
    if not path.is_file() and isinstance(source, str) and re.fullmatch(r"[A-Za-z0-9._-]+", source):
        builtin = _builtin_dir() / f"{source}.toml"
        if builtin.is_file():
            path = builtin
        elif not source.endswith(".toml"):
            names = ", ".join(n for n, _ in builtin_suites())
            raise SuiteError(f"{source}: no such suite file or built-in suite (built-in: {names})",
                             [{"file": source, "line": None, "col": None, "key": "", "message": "no such suite"}])
    from ccbench.core.files import read_input

    data = read_input(path, "suite")  # OSError (no such file, a device, too large) is the caller's to report
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SuiteError(f"{path}: not UTF-8 text (byte {e.start})",
                         [{"file": str(path), "line": None, "col": None, "key": "", "message": "not UTF-8"}]) from None
    label = f"suites/{path.name}" if path.parent == _builtin_dir() else str(source)
    return parse_suite(text, label, path=path, read_base=read_base)


# --- reading and checking --------------------------------------------------------------------


def parse_suite(text: str, file: str = "<suite>", *, path: Path | None = None,
                read_base: bool = True, parts: bool = True) -> Suite | SuiteSet:
    """Read and check a suite's text; ``path`` (the file) anchors a relative ``base``.

    With ``read_base=False`` the base scenario is not read (enough to render a
    report from stored results). With ``parts=False`` (a part of a suite of
    suites) a suite of suites is refused before its own parts are read, so
    parts that name each other in a loop are an error, not a recursion.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col = _toml_error_position(str(e))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise SuiteError(f"{file}:{line}:{col}: {message}" if line else f"{file}: {message}",
                         [{"file": file, "line": line, "col": col, "key": "", "message": message}]) from None
    reader = _Reader(text, file, path, data)
    if "parts" in data and not parts:
        message = "a part must be a suite with axes, not a suite of suites"
        raise SuiteError(f"{file}: {message}", [{"file": file, "line": None, "col": None, "key": "parts", "message": message}])
    return reader.read_set(read_base) if "parts" in data else reader.read(read_base)


def _toml_error_position(message: str) -> tuple[int | None, int | None]:
    m = re.search(r"at line (\d+), column (\d+)", message)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


class _Reader:
    def __init__(self, text: str, file: str, path: Path | None, data: dict[str, Any]) -> None:
        self.text = text
        self.file = file
        self.path = path
        self.data = data
        self.locator = _Locator(text)
        self.problems: list[dict[str, Any]] = []

    # -- problems --

    def problem(self, key: Key, message: str) -> None:
        line, col = self.locator.find(key)
        self.problems.append({"file": self.file, "line": line, "col": col, "key": _key_text(key), "message": message})

    def unknown(self, table: Mapping[str, Any], allowed: Sequence[str], at: Key) -> None:
        for k in table:
            if k not in allowed:
                self.problem((*at, k), f"unknown key (allowed: {', '.join(allowed)})")

    def string(self, table: Mapping[str, Any], name: str, at: Key, *, required: bool = False) -> str | None:
        v = table.get(name)
        if v is None:
            if required:
                self.problem(at, f"missing `{name}`")
            return None
        if not isinstance(v, str):
            self.problem((*at, name), f"expected a string, got {_show(v)}")
            return None
        return v

    def strings(self, v: Any, at: Key) -> list[str]:
        """A string or a list of strings."""
        if isinstance(v, str):
            return [v]
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            return list(v)
        self.problem(at, f"expected a list of \"key.path=value\" strings, got {_show(v)}")
        return []

    def overrides(self, texts: Sequence[str], at: Key) -> tuple[Override, ...]:
        line, _ = self.locator.find(at)
        out = []
        for t in texts:
            if "=" not in t or not t.split("=", 1)[0].strip():
                self.problem(at, f"expected key.path=value, got {t!r}")
                continue
            out.append(Override(t, _key_text(at), self.file, line))
        return tuple(out)

    def expression(self, text: str | None, at: Key) -> Expr | None:
        if text is None:
            return None
        try:
            return parse_expr(text)
        except ExprError as e:
            self.problem(at, f"{e} in {text!r}")
            return None

    def format(self, table: Mapping[str, Any], at: Key) -> str | None:
        fmt = self.string(table, "format", at)
        if fmt is None:
            return None
        try:
            format_value(1.0, fmt)
        except ValueError as e:
            self.problem((*at, "format"), str(e))
            return None
        return fmt

    # -- sections --

    def read(self, read_base: bool) -> Suite:
        d = self.data
        self.unknown(d, _SUITE_KEYS, ())
        name = self.string(d, "name", ())
        if name is None:
            name = self.path.stem if self.path is not None else "suite"
        elif not _NAME.fullmatch(name):
            self.problem(("name",), f"{name!r} must be letters, digits, '.', '_' or '-' (it names a directory)")
        description = self.string(d, "description", ()) or ""
        fixed = self.overrides(self.strings(d["set"], ("set",)), ("set",)) if "set" in d else ()
        base_text, base_file = self.base(read_base)
        axes = self.axes()
        seeds = self.seeds(axes)
        if seeds is not None:
            axes.append(seeds)
        excludes = self.excludes(axes)
        whens = self.whens(axes)
        report = self.report(axes)
        if self.problems:
            raise SuiteError("\n".join(_problem_line(p) for p in self.problems), self.problems)
        return Suite(name, description, self.file, self.text, base_text, base_file, fixed, tuple(axes), report,
                     tuple(excludes), tuple(whens))

    def read_set(self, read_base: bool) -> SuiteSet:
        """A suite of suites: ``parts`` instead of a base and axes."""
        d = self.data
        self.unknown(d, _SET_KEYS, ())
        name = self.string(d, "name", ()) or (self.path.stem if self.path is not None else "suite")
        if not _NAME.fullmatch(name):
            self.problem(("name",), f"{name!r} must be letters, digits, '.', '_' or '-' (it names a directory)")
        description = self.string(d, "description", ()) or ""
        raw = d["parts"]
        if not isinstance(raw, list) or not raw:
            self.problem(("parts",), "expected a non-empty list of suite files or { suite = ..., only = ..., set = ... }")
            raw = []
        parts: list[Suite] = []
        for i, entry in enumerate(raw):
            at: Key = ("parts", i)
            if isinstance(entry, str):
                entry = {"suite": entry}
            if not isinstance(entry, dict):
                self.problem(at, f"expected a suite file name or a table, got {_show(entry)}")
                continue
            self.unknown(entry, _PART_KEYS, at)
            ref = self.string(entry, "suite", at, required=True)
            if ref is None:
                continue
            anchor = self.path.parent if self.path is not None else Path()
            target = anchor / ref
            text = self.read_file(target, (*at, "suite"), "suite")
            if text is None:
                continue
            label = _builtin_label(target) or _display_path(target)
            try:
                part = parse_suite(text, label, path=target, read_base=read_base, parts=False)
            except SuiteError as e:
                if any(p.get("key") == "parts" and p.get("file") == label for p in e.problems):
                    self.problem((*at, "suite"), f"{ref}: a part must be a suite with axes, not a suite of suites")
                else:
                    self.problems += e.problems
                continue
            assert isinstance(part, Suite)
            if "set" in entry:
                part = replace(part, fixed=part.fixed + self.overrides(self.strings(entry["set"], (*at, "set")),
                                                                        (*at, "set")))
            if "only" in entry:
                sel = self.selection(entry["only"], (*at, "only"), list(part.axes))
                part = replace(part, only=sel)
            if any(p.name == part.name for p in parts):
                self.problem(at, f"two parts are named {part.name!r} (each part's results go to a directory of its name)")
                continue
            parts.append(part)
        if self.problems:
            raise SuiteError("\n".join(_problem_line(p) for p in self.problems), self.problems)
        return SuiteSet(name, description, self.file, self.text, tuple(parts))

    def read_file(self, target: Path, at: Key, what: str) -> str | None:
        """A file this suite names (its base scenario, a part), or None with the problem recorded at ``at``."""
        from ccbench.core.files import read_input

        try:
            return read_input(target, what).decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            reason = "no such file" if isinstance(e, FileNotFoundError) else getattr(e, "strerror", None) or str(e)
            self.problem(at, f"cannot read {what} {str(target)!r}: {reason}")
            return None

    def selection(self, raw: Any, at: Key, axes: list[Axis]) -> dict[str, frozenset[str]]:
        """``{ axis = value | [values] }``: each axis must exist and each value be one of its values."""
        if not isinstance(raw, dict) or not raw:
            self.problem(at, "expected a table of axis = value or [values], e.g. { qdisc = \"pfifo\" }")
            return {}
        out, problems = _selection(axes, raw)
        for name, message in problems:
            self.problem((*at, name), message)
        return out

    def excludes(self, axes: list[Axis]) -> list[Selection]:
        raw = self.data.get("exclude", [])
        if not isinstance(raw, list):
            self.problem(("exclude",), "expected a list of { axis = value | [values], ... } tables")
            return []
        return [self.selection(x, ("exclude", i), axes) for i, x in enumerate(raw)]

    def whens(self, axes: list[Axis]) -> list[tuple[Selection, tuple[Override, ...]]]:
        raw = self.data.get("when", [])
        if not isinstance(raw, list) or not all(isinstance(w, dict) for w in raw):
            self.problem(("when",), "expected [[when]] tables with `where` and `set`")
            return []
        out = []
        for i, w in enumerate(raw):
            at: Key = ("when", i)
            self.unknown(w, _WHEN_KEYS, at)
            if "where" not in w or "set" not in w:
                self.problem(at, "a [[when]] needs `where` (axis values) and `set` (overrides)")
                continue
            sel = self.selection(w["where"], (*at, "where"), axes)
            out.append((sel, self.overrides(self.strings(w["set"], (*at, "set")), (*at, "set"))))
        return out

    def base(self, read_base: bool) -> tuple[str | None, str | None]:
        base = self.data.get("base")
        if base is None:
            self.problem((), "missing `base` (a scenario file, or an inline [base] table)")
            return None, None
        if isinstance(base, str):
            if not read_base:
                return None, None
            anchor = self.path.parent if self.path is not None else Path()
            target = anchor / base
            text = self.read_file(target, ("base",), "scenario")
            if text is None:
                return None, None
            shown = _display_path(target)
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:  # every run would fail on it: refuse the suite
                line, col = _toml_error_position(str(e))
                message = "not a TOML scenario: " + re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
                self.problems.append({"file": shown, "line": line, "col": col, "key": "", "message": message})
                return None, None
            return text, shown
        if isinstance(base, dict):
            return (_inline_base(self.text, base), self.file) if read_base else (None, None)
        self.problem(("base",), f"expected a scenario file name or a [base] table, got {_show(base)}")
        return None, None

    def axes(self) -> list[Axis]:
        raw = self.data.get("axes", [])
        if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
            self.problem(("axes",), "expected [[axes]] tables")
            return []
        out: list[Axis] = []
        for i, a in enumerate(raw):
            at: Key = ("axes", i)
            self.unknown(a, _AXIS_KEYS, at)
            name = self.string(a, "name", at, required=True)
            if name is not None and not _AXIS_NAME.fullmatch(name):
                self.problem((*at, "name"), f"{name!r} must be letters, digits, '_' or '-', starting with a letter")
                name = None
            if name is not None and any(x.name == name for x in out):
                self.problem((*at, "name"), f"duplicate axis name {name!r}")
                name = None
            values = a.get("values")
            if values is None:
                self.problem(at, "missing `values`")
                values = []
            elif not isinstance(values, list) or not values:
                self.problem((*at, "values"), "expected a non-empty list of values")
                values = []
            elif not all(isinstance(v, (str, int, float, bool)) for v in values):
                self.problem((*at, "values"), "values must be strings, numbers or booleans")
                values = []
            keys = [value_key(v) for v in values]
            dups = sorted({k for k in keys if keys.count(k) > 1})
            if dups:
                self.problem((*at, "values"), f"duplicate value {dups[0]!r}")
            overrides = self.axis_overrides(a, at, values)
            labels = self.axis_labels(a, at, values)
            label = self.string(a, "label", at) or name or ""
            if name is not None:
                out.append(Axis(name, label, tuple(values), overrides, labels))
        return out

    def seeds(self, axes: list[Axis]) -> Axis | None:
        """``seeds = N`` (seeds 1..N) or ``seeds = [..]``: a last axis named ``seed`` that sets ``seed``."""
        if "seeds" not in self.data:
            return None
        raw = self.data["seeds"]
        if isinstance(raw, bool) or not isinstance(raw, (int, list)):
            self.problem(("seeds",), f"expected a number of seeds or a list of seeds, got {_show(raw)}")
            return None
        values = list(range(1, raw + 1)) if isinstance(raw, int) else raw
        if isinstance(raw, int) and not 1 <= raw <= 10_000:
            self.problem(("seeds",), f"{raw} seeds: allowed 1 to 10000")
            return None
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            self.problem(("seeds",), "expected a non-empty list of seeds (integers >= 0)")
            return None
        if len(set(values)) != len(values):
            self.problem(("seeds",), "duplicate seed")
            return None
        if any(a.name == SEED_AXIS for a in axes):
            self.problem(("seeds",), "the suite already has an axis named \"seed\"; give seeds one way")
            return None
        line, _ = self.locator.find(("seeds",))
        overrides = {value_key(v): (Override(f"seed={v}", "seeds", self.file, line),) for v in values}
        return Axis(SEED_AXIS, "seed", tuple(values), overrides, {value_key(v): f"seed {v}" for v in values})

    def axis_overrides(self, a: Mapping[str, Any], at: Key, values: list[Scalar]) -> dict[str, tuple[Override, ...]]:
        key = self.string(a, "key", at)
        sets = a.get("set")
        if key is None and sets is None:
            self.problem(at, "an axis needs `key` (the scenario key it sets) or `set` (overrides per value)")
        by_value: dict[str, tuple[Override, ...]] = {value_key(v): () for v in values}
        if key is not None:
            line, _ = self.locator.find((*at, "key"))
            for v in values:
                origin = _key_text((*at, "key"))
                by_value[value_key(v)] += (Override(f"{key}={toml_value(v)}", origin, self.file, line),)
        if isinstance(sets, dict):
            for k in sets:
                if k not in by_value:
                    self.problem((*at, "set", k), f"{k!r} is not one of the axis values ({', '.join(by_value)})")
            for k in by_value:
                if k not in sets:
                    self.problem((*at, "set"), f"no overrides for value {k!r} (give every value an entry)")
                    continue
                texts = [t.replace("{value}", k) for t in self.strings(sets[k], (*at, "set", k))]
                by_value[k] += self.overrides(texts, (*at, "set", k))
        elif sets is not None:
            templates = self.strings(sets, (*at, "set"))
            for k in by_value:
                by_value[k] += self.overrides([t.replace("{value}", k) for t in templates], (*at, "set"))
        return by_value

    def axis_labels(self, a: Mapping[str, Any], at: Key, values: list[Scalar]) -> dict[str, str]:
        keys = [value_key(v) for v in values]
        fmt = self.string(a, "format", at)
        if fmt is not None and "{value}" not in fmt:
            self.problem((*at, "format"), "must contain {value}, e.g. \"{value} TCP\"")
            fmt = None
        labels = {k: fmt.replace("{value}", k) if fmt else k for k in keys}
        given = a.get("labels")
        if given is None:
            return labels
        if not isinstance(given, dict):
            self.problem((*at, "labels"), "expected a table: value = \"label\"")
            return labels
        for k, v in given.items():
            if k not in labels:
                self.problem((*at, "labels", k), f"{k!r} is not one of the axis values ({', '.join(keys)})")
            elif not isinstance(v, str):
                self.problem((*at, "labels", k), f"expected a string, got {_show(v)}")
            else:
                labels[k] = v
        return labels

    def report(self, axes: list[Axis]) -> ReportSpec:
        r = self.data.get("report", {})
        if not isinstance(r, dict):
            self.problem(("report",), "expected a [report] table")
            return ReportSpec()
        self.unknown(r, _REPORT_KEYS, ("report",))
        plots = self.plot_list(r, "plots", RUN_PLOTS, DEFAULT_RUN_PLOTS)
        page_figures = self.plot_list(r, "page_figures", PAGE_FIGURES, ())
        suite_plots = self.plot_list(r, "suite_plots", SUITE_PLOTS, DEFAULT_SUITE_PLOTS)
        bounds = self.bounds(r, axes)
        tables = []
        for i, t in enumerate(self.table_list(r, "tables")):
            spec = self.table(t, ("report", "tables", i), axes)
            if spec is not None:
                tables.append(spec)
        columns = []
        for i, c in enumerate(self.table_list(r, "columns")):
            at: Key = ("report", "columns", i)
            self.unknown(c, _COLUMN_KEYS, at)
            title = self.string(c, "title", at, required=True)
            cell = self.expression(self.string(c, "cell", at, required=True), (*at, "cell"))
            fmt = self.format(c, at)
            if title is not None and cell is not None:
                columns.append(ColumnSpec(title, cell, fmt))
        return ReportSpec(tuple(tables), tuple(columns), plots, suite_plots, tuple(bounds), page_figures)

    def bounds(self, r: Mapping[str, Any], axes: list[Axis]) -> list[tuple[Selection, dict[str, Any]]]:
        """``[[report.bounds]]``: axis limits of the delivery_with_rtt figure (PNG and run page) for the runs
        matching ``where``."""
        raw = r.get("bounds", [])
        if not isinstance(raw, list) or not all(isinstance(b, dict) for b in raw):
            self.problem(("report", "bounds"), "expected [[report.bounds]] tables")
            return []
        out = []
        for i, b in enumerate(raw):
            at: Key = ("report", "bounds", i)
            self.unknown(b, _BOUNDS_KEYS, at)
            sel = self.selection(b["where"], (*at, "where"), axes) if "where" in b else {}
            limits: dict[str, Any] = {}
            for name in ("throughput", "rtt"):
                if name not in b:
                    continue
                v = b[name]
                top_ok = (lambda x: _is_num(x) or (name == "rtt" and isinstance(x, str)
                                                   and re.fullmatch(r"[0-9.]+x", x) is not None))
                if not (isinstance(v, list) and len(v) == 2 and _is_num(v[0]) and top_ok(v[1])
                        and (isinstance(v[1], str) or v[1] > v[0])):
                    allowed = "[bottom, top]" + (' or [bottom, "3x"] (top = (highest - bottom) x 3 + bottom)'
                                                 if name == "rtt" else "")
                    self.problem((*at, name), f"expected {allowed}, got {_show(v)}")
                    continue
                limits[name] = (float(v[0]), v[1] if isinstance(v[1], str) else float(v[1]))
            out.append((sel, limits))
        return out

    def plot_list(self, r: Mapping[str, Any], name: str, allowed: tuple[str, ...],
                  default: tuple[str, ...]) -> tuple[str, ...]:
        if name not in r:
            return default
        v = r[name]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self.problem(("report", name), f"expected a list of plot names ({', '.join(allowed)})")
            return allowed
        for x in v:
            if x not in allowed:
                self.problem(("report", name), f"unknown plot {x!r} (known: {', '.join(allowed)})")
        return tuple(x for x in v if x in allowed)

    def table_list(self, r: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
        v = r.get(name, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) for x in v):
            self.problem(("report", name), f"expected [[report.{name}]] tables")
            return []
        return v

    def table(self, t: Mapping[str, Any], at: Key, axes: list[Axis]) -> TableSpec | None:
        self.unknown(t, _TABLE_KEYS, at)
        names = [a.name for a in axes]
        title = self.string(t, "title", at, required=True)
        rows = self.string(t, "rows", at, required=True)
        cols = self.string(t, "cols", at)
        columns = self.table_columns(t, at)
        reference = self.string(t, "reference", at)
        if columns and (cols is not None or "cell" in t):
            self.problem((*at, "columns"), "a table has either `columns` or `cols`/`cell`, not both")
        for k, v in (("rows", rows), ("cols", cols)):
            if v is not None and v not in names:
                self.problem((*at, k), f"{v!r} is not an axis (axes: {', '.join(names) or 'none'})")
        if rows is not None and rows == cols:
            self.problem((*at, "cols"), "rows and cols must be different axes")
        cell = self.expression(self.string(t, "cell", at, required=not columns), (*at, "cell"))
        fmt = self.format(t, at)
        where: dict[str, Scalar] = {}
        raw_where = t.get("where", {})
        if not isinstance(raw_where, dict):
            self.problem((*at, "where"), "expected a table: axis = value")
            raw_where = {}
        for k, v in raw_where.items():
            axis = next((a for a in axes if a.name == k), None)
            if axis is None:
                self.problem((*at, "where", k), f"{k!r} is not an axis (axes: {', '.join(names) or 'none'})")
            elif k in (rows, cols):
                self.problem((*at, "where", k), f"{k!r} is already the table's rows or cols")
            elif axis.find(v) is None:
                shown = ", ".join(value_key(x) for x in axis.values)
                self.problem((*at, "where", k), f"{_show(v)} is not a value of axis {k!r} ({shown})")
            else:
                found = axis.find(v)
                assert found is not None
                where[k] = found
        if title is None or rows is None or (cell is None and not columns) or rows not in names:
            return None
        if cols is not None and cols not in names:
            return None
        ncols = len(columns) if columns else len(next(a for a in axes if a.name == cols).values) if cols else 1
        rows_axis = next(a for a in axes if a.name == rows)
        published, source = self.published(t, at, rows_axis, ncols)
        return TableSpec(title, rows, cols, cell, fmt, where, columns, reference, published, source)

    def published(self, t: Mapping[str, Any], at: Key, rows_axis: Axis,
                  ncols: int) -> tuple[tuple[tuple[str, tuple[float | None, ...]], ...], str | None]:
        """`published = { source = "...", rows = { "<row value>" = [numbers per column] } }`."""
        if "published" not in t:
            return (), None
        p = t["published"]
        pat: Key = (*at, "published")
        if not isinstance(p, dict):
            self.problem(pat, 'expected { source = "...", rows = { "<row value>" = [numbers] } }')
            return (), None
        self.unknown(p, _PUBLISHED_KEYS, pat)
        source = self.string(p, "source", pat, required=True)
        raw = p.get("rows", {})
        if not isinstance(raw, dict) or not raw:
            self.problem((*pat, "rows"), 'expected a table: "<row value>" = [one number per column]')
            return (), source
        out = []
        for k, v in raw.items():
            found = rows_axis.find(k)
            if found is None:
                shown = ", ".join(value_key(x) for x in rows_axis.values)
                self.problem((*pat, "rows", k), f"{k!r} is not a value of axis {rows_axis.name!r} ({shown})")
                continue
            ok = isinstance(v, list) and all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
                                             for x in v)
            if not ok or len(v) != ncols:
                self.problem((*pat, "rows", k), f"expected a list of {ncols} numbers (one per column), got {_show(v)}")
                continue
            out.append((value_key(found), tuple(None if x is None else float(x) for x in v)))
        return tuple(out), source

    def table_columns(self, t: Mapping[str, Any], at: Key) -> tuple[tuple[str, Expr, float | None], ...]:
        raw = t.get("columns", [])
        if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
            self.problem((*at, "columns"), 'expected a list of { label = "...", cell = "..." } tables')
            return ()
        out = []
        for i, c in enumerate(raw):
            where = (*at, "columns", i)
            self.unknown(c, _TABLE_COLUMN_KEYS, where)
            label = self.string(c, "label", where, required=True)
            cell = self.expression(self.string(c, "cell", where, required=True), (*where, "cell"))
            ref = c.get("reference")
            if ref is not None and (isinstance(ref, bool) or not isinstance(ref, (int, float))):
                self.problem((*where, "reference"), f"expected a number, got {_show(ref)}")
                ref = None
            if label is not None and cell is not None:
                out.append((label, cell, None if ref is None else float(ref)))
        return tuple(out)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _builtin_label(p: Path) -> str | None:
    """``suites/<path>`` for a file among the built-in suites, else None."""
    try:
        return "suites/" + p.resolve().relative_to(_builtin_dir().resolve()).as_posix()
    except ValueError:
        return None


def _display_path(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)
