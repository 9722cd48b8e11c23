"""A suite as planned: its axes, overrides and report, and the runs it expands into.

Suite files are read into these by :mod:`ccbench.plan.suite_file`, which documents their format.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ccbench import _core
from ccbench.core.errors import ScenarioError, from_native, problem_text
from ccbench.plan.expr import Expr
from ccbench.simulate.api import toml_value
from ccbench.simulate.results import RUN_PLOTS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "RUN_PLOTS",
    "PLOT_TITLES",
    "SEED_BOX",
    "SUITE_PLOTS",
    "Axis",
    "ColumnSpec",
    "Override",
    "PlannedRun",
    "Point",
    "ReportSpec",
    "Suite",
    "SuiteError",
    "SuiteSet",
    "TableSpec",
    "axis_warnings",
    "format_value",
    "value_key",
]

Scalar = str | int | float | bool

DEFAULT_RUN_PLOTS: tuple[str, ...] = ()  # drawing one takes as long as many runs: only when asked (or `ccbench plot`)
#: The axis whose runs a report's tables aggregate (mean and 95 % interval) instead of splitting by it.
SEED_AXIS = "seed"
#: The cross-run plot a report adds for a suite with a seed axis of 2+ values.
SEED_BOX = "seed_box"
#: Title of each cross-run plot in a report, in report order (the plots themselves: ccbench.report.suite_plots.PLOTS).
PLOT_TITLES = {
    "goodput_box": "Goodput per flow (box plot)",
    "rtt_box": "RTT per flow and ping (box plot)",
    "delay_cdf": "Queue delay and ping RTT (CDF)",
    "goodput_cdf": "Goodput per flow (CDF over flows)",
    "totals": "Totals per run",
    SEED_BOX: "Across seeds (box plot per configuration)",
}
#: The cross-run PNGs a suite may ask for in ``[report] suite_plots`` (seed_box: with a seed axis of 2+ values).
SUITE_PLOTS = tuple(PLOT_TITLES)
#: None by default: report.html draws the cross-run figures in the browser, matplotlib only when asked.
DEFAULT_SUITE_PLOTS: tuple[str, ...] = ()

_FORMAT = re.compile(r"(?P<pre>[^{}]*)\{(?::(?P<spec>[^{}]*))?\}(?P<post>[^{}]*)")
HASH_CHARS = 12

#: Axis name -> the value keys (see :func:`value_key`) a point may have on that axis.
Selection = Mapping[str, frozenset[str]]


class SuiteError(ScenarioError):
    """A suite file is wrong; ``problems`` name file, line, col and key like scenario errors."""


# --- the model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    """One ``key.path=value`` override and where it was written."""

    text: str
    origin: str = "--set"  # the suite key it came from, e.g. "axes[1].set.fifo"
    file: str | None = None
    line: int | None = None

    @property
    def key(self) -> str:
        return self.text.split("=", 1)[0].strip()


@dataclass(frozen=True)
class Axis:
    name: str
    label: str
    values: tuple[Scalar, ...]
    overrides: Mapping[str, tuple[Override, ...]]  # by value_key(value)
    labels: Mapping[str, str] = field(default_factory=dict)

    def label_of(self, value: Scalar) -> str:
        return self.labels.get(value_key(value), value_key(value))

    def find(self, value: Any) -> Scalar | None:
        """The axis value whose text is that of ``value`` (so 2 finds 2 and "2")."""
        k = value if isinstance(value, str) else value_key(value)
        return next((v for v in self.values if value_key(v) == k), None)


@dataclass(frozen=True)
class TableSpec:
    title: str
    rows: str
    cols: str | None
    cell: Expr | None
    format: str | None = None
    where: Mapping[str, Scalar] = field(default_factory=dict)
    #: Explicit columns, each its own expression over the same run (e.g. a
    #: flow's goodput while 0, 1, ... 4 other flows compete), instead of an
    #: axis; with the values of an optional reference row (a fair share).
    columns: tuple[tuple[str, Expr, float | None], ...] = ()
    reference: str | None = None
    #: Published values to compare with, cell by cell: per row value (its
    #: text), one number per column (or None); and where they come from.
    published: tuple[tuple[str, tuple[float | None, ...]], ...] = ()
    published_source: str | None = None


@dataclass(frozen=True)
class ColumnSpec:
    title: str
    cell: Expr
    format: str | None = None


@dataclass(frozen=True)
class ReportSpec:
    tables: tuple[TableSpec, ...] = ()
    columns: tuple[ColumnSpec, ...] = ()
    plots: tuple[str, ...] = DEFAULT_RUN_PLOTS
    suite_plots: tuple[str, ...] = DEFAULT_SUITE_PLOTS
    # [[report.bounds]]: (where, {"throughput": (lo, hi), "rtt": (lo, hi | "Nx")}), later entries win
    bounds: tuple[tuple[Selection, Mapping[str, tuple[float, float | str]]], ...] = ()
    # figures each run's page draws in the browser besides its own (PAGE_FIGURES)
    page_figures: tuple[str, ...] = ()

    def figures(self, values: Mapping[str, Scalar]) -> dict[str, dict[str, Any]]:
        """The per-run plots besides timeseries.png, with the axis bounds for a run with these axis values."""
        if "delivery_with_rtt" not in self.plots:
            return {}
        return {"delivery_with_rtt": self.bounds_for(values)}

    def page(self, values: Mapping[str, Scalar]) -> dict[str, dict[str, Any]]:
        """The figures a run's page adds, with the axis bounds for a run with these axis values."""
        return {name: self.bounds_for(values) for name in self.page_figures}

    def bounds_for(self, values: Mapping[str, Scalar]) -> dict[str, Any]:
        """The delivery_with_rtt axis bounds (``throughput``, ``rtt``) for a run with these axis values."""
        options: dict[str, Any] = {}
        for sel, b in self.bounds:
            if _matches(sel, values):
                options.update(b)
        return options


@dataclass(frozen=True)
class Point:
    """One combination of axis values and the overrides it makes."""

    values: Mapping[str, Scalar]
    overrides: tuple[Override, ...]
    slug: str


@dataclass(frozen=True)
class PlannedRun:
    """A point checked by the core: its resolved scenario and the result key, or why it is invalid."""

    key: str  # result directory name: <slug>-<hash>
    hash: str
    values: Mapping[str, Scalar]
    overrides: tuple[Override, ...]
    scenario: str | None  # resolved TOML (every default filled in); None if invalid
    error: str | None = None


def _fill(o: Override, values: Mapping[str, Scalar]) -> Override:
    """A [[when]] override with each ``{axis}`` replaced by the point's value on that axis."""
    text = o.text
    for name, v in values.items():
        text = text.replace("{" + name + "}", value_key(v))
    return o if text == o.text else replace(o, text=text)


def _selection(axes: Sequence[Axis], raw: Mapping[str, Any],
               ) -> tuple[dict[str, frozenset[str]], list[tuple[str, str]]]:
    """``{ axis = value | [values] }`` as a Selection, and the problems: (axis name, message)
    for each axis that does not exist and each value that is not one of its axis's."""
    out: dict[str, frozenset[str]] = {}
    problems: list[tuple[str, str]] = []
    for name, given in raw.items():
        axis = next((a for a in axes if a.name == name), None)
        if axis is None:
            problems.append((name, f"no axis {name!r} (axes: {', '.join(a.name for a in axes)})"))
            continue
        keys: set[str] = set()
        for v in given if isinstance(given, (list, tuple)) else [given]:
            found = axis.find(v)
            if found is None:
                allowed = ", ".join(value_key(x) for x in axis.values)
                problems.append((name, f"{_show(v)} is not a value of axis {name!r} ({allowed})"))
            else:
                keys.add(value_key(found))
        out[name] = frozenset(keys)
    return out, problems


def _matches(sel: Selection, values: Mapping[str, Scalar]) -> bool:
    return all(name in values and value_key(values[name]) in keys for name, keys in sel.items())


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    file: str  # names the suite in messages
    text: str  # the suite file's text
    base_text: str | None  # the base scenario's TOML (None when read without the base)
    base_file: str | None  # names the base in messages
    fixed: tuple[Override, ...]
    axes: tuple[Axis, ...]
    report: ReportSpec
    excludes: tuple[Selection, ...] = ()  # points matching one of these are left out
    whens: tuple[tuple[Selection, tuple[Override, ...]], ...] = ()  # extra overrides where a point matches
    only: Selection = field(default_factory=dict)  # keep only the points matching this

    def axis(self, name: str) -> Axis:
        return next(a for a in self.axes if a.name == name)

    def with_overrides(self, overrides: Iterable[str]) -> Suite:
        """The suite with command-line overrides added after its fixed ones."""
        extra = tuple(Override(o) for o in ([overrides] if isinstance(overrides, str) else overrides))
        return replace(self, fixed=self.fixed + extra)

    def restricted(self, only: Mapping[str, Any]) -> Suite:
        """The suite with only the points whose axis values are among ``only``'s
        (axis name -> a value or a list of values; values as written in the suite,
        numbers may be given as text). Raises SuiteError for an unknown axis or value."""
        given, problems = _selection(self.axes, only)
        if problems:
            name, message = problems[0]
            raise SuiteError(f"{self.file}: {message}",
                             [{"file": self.file, "line": None, "col": None, "key": name, "message": message}])
        sel = dict(self.only)
        for name, keys in given.items():
            sel[name] = sel[name] & keys if name in sel else keys
        return replace(self, only=sel)

    @property
    def size(self) -> int:
        """How many runs the suite has: the product of its axes' lengths, less what
        ``exclude`` and ``only`` leave out (computed, enumerated only when they are used)."""
        if not self.excludes and not self.only:
            return math.prod(len(a.values) for a in self.axes)
        return sum(1 for _ in self._combos())

    def _runs(self, values: Mapping[str, Scalar]) -> bool:
        """Whether the point with these axis values is one the suite runs (not excluded, within ``only``)."""
        return not any(_matches(x, values) for x in self.excludes) and _matches(self.only, values)

    def _combos(self) -> Iterator[dict[str, Scalar]]:
        for combo in itertools.product(*(a.values for a in self.axes)):
            values = {a.name: v for a, v in zip(self.axes, combo)}
            if self._runs(values):
                yield values

    def _overrides(self, values: Mapping[str, Scalar]) -> tuple[Override, ...]:
        own = tuple(o for a in self.axes for o in a.overrides[value_key(values[a.name])])
        extra = tuple(_fill(o, values) for sel, os in self.whens if _matches(sel, values) for o in os)
        return self.fixed + own + extra

    def _slug(self, values: Mapping[str, Scalar]) -> str:
        return ",".join(f"{a.name}={_slug(value_key(values[a.name]))}" for a in self.axes) or "run"

    def points(self) -> list[Point]:
        """Every combination of axis values, the first axis varying slowest (no core calls)."""
        return list(self.iter_points())

    def iter_points(self) -> Iterator[Point]:
        """:meth:`points` one at a time."""
        for values in self._combos():
            yield Point(values, self._overrides(values), self._slug(values))

    def axis_points(self) -> Iterator[Point]:
        """One point per axis value, the other axes at the first values that make a
        point the suite runs: what per-value checks (warnings) need, in sum rather
        than product of the axis sizes."""
        seen: set[tuple[str, ...]] = set()
        for i, axis in enumerate(self.axes or [None]):
            for v in (axis.values if axis else [None]):
                choices = [[v] if j == i else list(a.values) for j, a in enumerate(self.axes)]
                values = next((d for d in ({a.name: c for a, c in zip(self.axes, combo)}
                                           for combo in itertools.product(*choices)) if self._runs(d)), None)
                if values is None:
                    continue
                overrides = self._overrides(values)
                key = tuple(o.text for o in overrides)
                if key in seen:
                    continue
                seen.add(key)
                yield Point(values, overrides, self._slug(values))

    def plan(self) -> list[PlannedRun]:
        """Resolve every point with the core; key each run by a hash of its resolved scenario.

        Raises SuiteError if the base scenario (with the fixed overrides) is
        itself invalid; a point whose own overrides fail is planned with its error.
        """
        return list(self.iter_plan())

    def iter_plan(self) -> Iterator[PlannedRun]:
        """:meth:`plan` one run at a time (a dry run of a huge suite starts printing at once)."""
        if self.base_text is None:
            raise ValueError(f"suite {self.name!r} was read without its base scenario")
        try:
            _resolve(self.base_text, self.base_file, self.fixed)
        except ScenarioError as e:
            raise SuiteError(str(e), e.problems) from None
        for p in self.iter_points():
            yield self._planned(p)

    def plan_values(self, values: Mapping[str, Scalar]) -> PlannedRun:
        """The planned run of one combination of axis values, whether or not the suite would run it
        (an exploration picks its own points)."""
        if self.base_text is None:
            raise ValueError(f"suite {self.name!r} was read without its base scenario")
        return self._planned(Point(dict(values), self._overrides(values), self._slug(values)))

    def _planned(self, p: Point) -> PlannedRun:
        assert self.base_text is not None
        try:
            resolved = _resolve(self.base_text, self.base_file, p.overrides)
        except ScenarioError as e:
            lines = "\n".join(o.text for o in p.overrides)
            digest = _hash(f"invalid\n{self.base_text}\n{lines}")
            return PlannedRun(f"{p.slug}-{digest}", digest, p.values, p.overrides, None, str(e))
        digest = _hash(resolved)
        return PlannedRun(f"{p.slug}-{digest}", digest, p.values, p.overrides, resolved)


@dataclass(frozen=True)
class SuiteSet:
    """A suite of suites: its parts' runs share one pool; each part goes to ``<out>/<name>/<part>/``."""

    name: str
    description: str
    file: str
    text: str
    parts: tuple[Suite, ...]
    # Parts a restriction left out: (part name, the restricting axes it lacks).
    skipped: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def with_overrides(self, overrides: Iterable[str]) -> SuiteSet:
        return replace(self, parts=tuple(p.with_overrides(overrides) for p in self.parts))

    def restricted(self, only: Mapping[str, Any], *, missing: str = "skip") -> SuiteSet:
        """The parts restricted to the points with the given axis values.

        A part without one of the named axes has no point with that value:
        with ``missing="skip"`` (what ``--only`` does) it is left out and
        listed in ``skipped`` with the axes it lacks; with ``missing="keep"``
        it is restricted only on the axes it has (a few points of every part,
        as the smoke tests take them). A part with none of the given values
        runs nothing. Raises SuiteError for an axis or a value no part has,
        and when every part is skipped."""
        if missing not in ("skip", "keep"):
            raise ValueError(f"missing={missing!r}: expected 'skip' or 'keep'")
        for name, given in only.items():
            axes = [a for p in self.parts for a in p.axes if a.name == name]
            if not axes:
                raise SuiteError(f"{self.file}: no part has an axis {name!r}",
                                 [{"file": self.file, "line": None, "col": None, "key": name, "message": "no such axis"}])
            for v in given if isinstance(given, (list, tuple)) else [given]:
                if all(a.find(v) is None for a in axes):
                    raise SuiteError(f"{self.file}: no part's axis {name!r} has the value {v!r}",
                                     [{"file": self.file, "line": None, "col": None, "key": name,
                                       "message": f"no value {v!r}"}])
        parts, skipped = [], list(self.skipped)
        for p in self.parts:
            names = {a.name for a in p.axes}
            lacks = tuple(name for name in only if name not in names)
            if lacks and missing == "skip":
                skipped.append((p.name, lacks))
                continue
            sel: dict[str, list[Any]] = {}
            for name, given in only.items():
                axis = next((a for a in p.axes if a.name == name), None)
                if axis is not None:
                    sel[name] = [v for v in (given if isinstance(given, (list, tuple)) else [given])
                                 if axis.find(v) is not None]
            parts.append(p.restricted(sel))
        if not parts:
            axes = ", ".join(repr(n) for n in only)
            message = f"no part has every axis of {axes}: each would be skipped"
            raise SuiteError(f"{self.file}: {message}",
                             [{"file": self.file, "line": None, "col": None, "key": next(iter(only)), "message": message}])
        return replace(self, parts=tuple(parts), skipped=tuple(skipped))

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)


def value_key(value: Scalar) -> str:
    """An axis value as text: strings as written, other values as TOML (2, 0.5, true)."""
    return value if isinstance(value, str) else toml_value(value)


def format_value(value: float | None, fmt: str | None) -> str:
    """A cell's number with a table's ``format`` ("{:.2f}", "{:.1%} busy"); default ~3 significant digits."""
    if value is None:
        return "—"
    if fmt is None:
        if value != value or abs(value) in (float("inf"),):
            return str(value)
        digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2 if abs(value) >= 1 else 3
        return f"{value:.{digits}f}"
    m = _FORMAT.fullmatch(fmt)
    if not m:
        raise ValueError(f"format {fmt!r} must hold one {{}} or {{:spec}} field")
    return m["pre"] + format(value, m["spec"] or "") + m["post"]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def _slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "_"
    return s[:40]


def _resolve(text: str, file: str | None, overrides: Sequence[Override]) -> str:
    """ccbench.validate on text with a file label; override problems point at the suite line that wrote them."""
    try:
        with from_native():
            # streamed: suite runs write their tables to disk as they go
            resolved: str = _core.validate(text, file or "<base>", [o.text for o in overrides], True)
            return resolved
    except ScenarioError as e:
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            doc = {}
        problems = [_blame(p, overrides, doc) for p in e.problems]
        raise ScenarioError("\n".join(_problem_line(p) for p in problems), problems) from None


def _blame(problem: Mapping[str, Any], overrides: Sequence[Override], doc: Mapping[str, Any]) -> dict[str, Any]:
    """A problem caused by an override, moved to the suite line that wrote the override.

    The core names an override it could not apply by its own key (file
    "--set"), and a value it rejected by the scenario key path
    (``links[0].rate``), located in the base; the override's key is turned
    into that form (ids to indices) to find which override set it.
    """
    p = dict(problem)
    if p.get("file") == "--set":
        source = next((o for o in overrides if o.key == p.get("key")), None)
        if source is None or source.file is None:
            return p
        return {**p, "file": source.file, "line": source.line, "col": None, "key": source.origin,
                "message": f"{source.text}: {p.get('message')}"}
    key = str(p.get("key") or "")
    source = next((o for o in reversed(overrides) if o.file is not None and key
                   and _covers(_scenario_key(o.key, doc), key)), None)
    if source is None:
        return p
    at = f"{p.get('file')}:{p.get('line')}" if p.get("line") else str(p.get("file"))
    return {**p, "file": source.file, "line": source.line, "col": None, "key": source.origin,
            "message": f"{source.text}: {key}: {p.get('message')} (in the base at {at})"}


def _scenario_key(key: str, doc: Mapping[str, Any]) -> str:
    """An override key (``links.bottleneck.rate``) as the core names the value (``links[0].rate``)."""
    out = ""
    node: Any = doc
    for part in key.split("."):
        if isinstance(node, list):
            idx = int(part) if part.isdigit() else next(
                (i for i, x in enumerate(node) if isinstance(x, dict) and x.get("id") == part), None)
            if idx is None or idx >= len(node):
                return ""
            out += f"[{idx}]"
            node = node[idx]
        else:
            out += ("." if out else "") + part
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _covers(override_key: str, problem_key: str) -> bool:
    return bool(override_key) and (problem_key == override_key or problem_key.startswith(override_key + ".")
                                   or problem_key.startswith(override_key + "["))


def _problem_line(p: Mapping[str, Any]) -> str:
    where = str(p.get("file") or "<suite>")
    if p.get("line"):
        where += f":{p['line']}"
        if p.get("col"):
            where += f":{p['col']}"
    key = f" {p['key']}:" if p.get("key") else ""
    return f"{where}:{key} {p.get('message')}"


def _show(v: Any) -> str:
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    return toml_value(v) if isinstance(v, (str, int, float, bool)) else type(v).__name__


def axis_warnings(suite: Suite) -> list[str]:
    """Each distinct scenario warning of a suite's axis values once, located
    at the suite line that wrote the value when an axis or ``set`` did."""
    doc = tomllib.loads(suite.base_text)
    seen: list[str] = []
    for p in suite.axis_points():  # each axis value once, not every combination
        try:
            found = _core.warnings(suite.base_text, suite.base_file or "<base>", [o.text for o in p.overrides], True)
        except Exception:  # invalid points are reported by the run itself
            continue
        for w in found:
            line = problem_text(_blame(w, p.overrides, doc))
            if line not in seen:
                seen.append(line)
    return seen
