"""Explorations: where a property of a scenario stops holding, found without running a whole grid.

An exploration file holds an ``[explore]`` table::

    [explore]
    name = "cubic-buffer-rtt"              # results go to results/<name>/ (default: the file's stem)
    description = "..."
    base = "../examples/cubic.toml"        # a scenario file relative to this one, or an [explore.base] table
    set = ['duration="3s"']                # fixed overrides (optional)
    property = 'utilization(link="bottleneck") >= 0.9'
    seeds = 3                              # runs per point, seeds 1..N (default 1)
    confidence = 2                         # a point holds if >= 2 of its 3 seeds do (default: all of them)
    budget = 200                           # stop after this many runs (optional)
    coarse = 4                             # stride of the first design, in cells (default 4)

    [[explore.axis]]
    name = "buffer"                        # default: the key's last part
    key = "links.bottleneck.qdisc.limit"   # a key path as --set takes it (or a list: each gets the value)
    range = [10, 400]                      # with scale = "linear" (default) or "log" and
    cells = 16                             #   cells = grid points, or step = spacing (a factor for log)
    integer = true                         # round values to integers (optional)

    [[explore.axis]]
    key = "links.bottleneck.delay"
    range = [2, 100]
    scale = "log"
    cells = 16
    unit = "ms"                            # written as "12.5ms" (a string); the property sees the number

    # or a discrete axis, in order: values = ["cubic", "reno", "prague"]

``property`` is ``EXPR OP EXPR`` with OP one of ``<= < >= > == !=`` and each
side a metric expression of :mod:`ccbench.plan.expr` (a numeric axis's name is its
value, so ``sum(goodput_mbps) / rate >= 0.9`` works), or such comparisons
joined by ``and`` and ``or`` (``and`` first). Each run records the first
comparison's left side as its number; a run without data or whose expression fails is
"unknown". A point with N seeds holds if at least ``confidence`` of them
hold, fails if too few can still hold, and is unknown otherwise.

The search runs on the grid of axis values (1 to 3 axes are practical; any
number works) as :mod:`ccbench.plan.gridsearch` describes: a coarse design, then
bisection of the boxes whose corners disagree down to single cells, then
tracing of boundaries that slipped between samples. Each round is a batch
of runs through the suite machinery (:mod:`ccbench.sweep`): worker
processes, one directory per run keyed by its resolved scenario, and a
finished run is never redone. Since the rounds depend only on the runs'
results, running an interrupted exploration again replays the finished
rounds from disk and continues where it stopped.

Writes into its directory: ``runs/<key>/`` and ``suite.json`` as a sweep
does, ``points.parquet`` and ``points.csv`` (a row per run: axis values,
seed, round, ``value`` = the left side's number, ``holds``), ``cells.csv``
(a row per grid cell: axis values, ``class`` true/false/unknown,
``sampled``), ``explore.json`` and ``boundary.html`` (the exploration's page:
a map of the cells per slice, a sampled cell linking to its run, the cells
beside the boundary outlined, and every run in a sortable table), plus
``boundary.png`` (a panel per slice) for two axes or more.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from ccbench.core.errors import CcbenchError
from ccbench.core.modules import make_callable
from ccbench.plan.expr import Expr, ExprError, evaluate
from ccbench.plan.expr import parse as parse_expr
from ccbench.plan.gridsearch import Cell, SearchResult, full_grid, search
from ccbench.plan.manifest import RUNS_DIR
from ccbench.plan.suite import PlannedRun, Suite, SuiteError
from ccbench.plan.suite_file import parse_suite
from ccbench.plan.toml_text import _write_toml
from ccbench.simulate.api import toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Exploration", "ExploreAxis", "Property", "explore", "load_explore", "read_exploration"]

_KEYS = ("name", "description", "base", "set", "axis", "property", "seeds", "confidence", "budget", "coarse")
_AXIS_KEYS = ("name", "key", "range", "scale", "cells", "step", "values", "unit", "integer")
_OPS = ("<=", ">=", "==", "!=", "<", ">")
POINTS = "points.parquet"


class ExploreError(SuiteError):
    """An exploration file is wrong (a ScenarioError: the CLI prints it and exits 2)."""

    def __init__(self, file: str, message: str, key: str = "") -> None:
        super().__init__(f"{file}: {key + ': ' if key else ''}{message}",
                         [{"file": file, "line": None, "col": None, "key": key, "message": message}])


def _top_level(text: str, words: tuple[str, ...]) -> list[tuple[int, str]]:
    """Where each of ``words`` occurs outside quotes and parentheses: (index, word)."""
    depth, quote, found = 0, "", []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            w = next((w for w in words if text.startswith(w, i)), None)
            if w:
                found.append((i, w))
                i += len(w)
                continue
        i += 1
    return found


def _split(text: str, word: str) -> list[str]:
    """``text`` cut at each top-level `` word `` (a whole word between blanks, or at either end)."""
    text = f" {text} "
    cuts = [i for i, _ in _top_level(text, (f" {word} ",))]
    edges = [0] + [x for i in cuts for x in (i, i + len(word) + 2)] + [len(text)]
    return [text[edges[k]:edges[k + 1]].strip() for k in range(0, len(edges), 2)]


@dataclass(frozen=True)
class Comparison:
    """``left OP right`` on one run."""

    left: Expr
    op: str
    right: Expr

    @classmethod
    def parse(cls, text: str) -> Comparison:
        found = _top_level(text, _OPS)
        if len(found) != 1:
            raise ExprError(f"{text!r}: a comparison is EXPR OP EXPR (OP: {' '.join(_OPS)}), "
                            f"found {len(found)} operators")
        at, op = found[0]
        return cls(parse_expr(text[:at].strip()), op, parse_expr(text[at + len(op):].strip()))

    def check(self, run: Any, values: Mapping[str, Any]) -> tuple[bool | None, float | None]:
        a = evaluate(self.left, run, values)
        b = evaluate(self.right, run, values)
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            return None, a
        return {"<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b, "<": a < b, ">": a > b}[self.op], a


def _all(parts: Sequence[bool | None]) -> bool | None:
    """Three-valued and: false if any is false, unknown if any is unknown."""
    return False if False in parts else None if None in parts else True


def _any(parts: Sequence[bool | None]) -> bool | None:
    return True if True in parts else None if None in parts else False


@dataclass(frozen=True)
class Property:
    """Comparisons joined by ``and`` / ``or`` (``and`` binds first; no brackets around them): whether
    a run satisfies it, and the first comparison's left side as its number. A comparison that cannot be
    evaluated is unknown: ``unknown and false`` is false, ``unknown or true`` is true."""

    text: str
    any_of: tuple[tuple[Comparison, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Property:
        groups = [_split(g, "and") for g in _split(text.strip(), "or")]
        if any(not c for g in groups for c in g):
            raise ExprError(f"{text!r}: `and` / `or` need a comparison on each side")
        return cls(text, tuple(tuple(Comparison.parse(c) for c in g) for g in groups))

    def check(self, run: Any, values: Mapping[str, Any]) -> tuple[bool | None, float | None]:
        value: float | None = None
        ors = []
        for group in self.any_of:
            ands = []
            for c in group:
                holds, v = c.check(run, values)
                if c is self.any_of[0][0]:
                    value = v
                ands.append(holds)
            ors.append(_all(ands))
        return _any(ors), value


@dataclass(frozen=True)
class ExploreAxis:
    name: str
    keys: tuple[str, ...]  # every key gets the value (a jitter on both directions)
    values: tuple[Any, ...]
    unit: str | None = None

    def override(self) -> dict[str, Any]:
        """The suite axis that writes this axis's values."""
        value = f'"{{value}}{self.unit}"' if self.unit else "{value}"
        if self.unit or len(self.keys) > 1 or any(isinstance(v, str) for v in self.values):
            if not self.unit and any(isinstance(v, str) for v in self.values):
                value = '"{value}"'
            return {"name": self.name, "values": list(self.values), "set": [f"{k}={value}" for k in self.keys]}
        return {"name": self.name, "values": list(self.values), "key": self.keys[0]}


@dataclass(frozen=True)
class Exploration:
    name: str
    description: str
    file: str
    text: str
    suite: Suite  # axes = the exploration's axes (every grid value) and "seed"
    axes: tuple[ExploreAxis, ...]
    prop: Property
    seeds: tuple[int, ...]
    confidence: int
    budget: int | None = None
    coarse: int = 4

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.values) for a in self.axes)

    def values(self, cell: Cell) -> dict[str, Any]:
        return {a.name: a.values[i] for a, i in zip(self.axes, cell)}

    def verdict(self, outcomes: Sequence[bool | None]) -> bool | None:
        """A point's label from its seeds' outcomes (see the module docs)."""
        yes = sum(o is True for o in outcomes)
        unknown = sum(o is None for o in outcomes)
        if yes >= self.confidence:
            return True
        if yes + unknown < self.confidence:
            return False
        return None


def _grid(a: Mapping[str, Any], file: str, at: str) -> tuple[Any, ...]:
    if "values" in a:
        values = a["values"]
        if not isinstance(values, list) or not values or "range" in a:
            raise ExploreError(file, "`values` must be a non-empty list, instead of `range`", at)
        return tuple(values)
    rng = a.get("range")
    if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                           for v in rng) and rng[0] < rng[1]):
        raise ExploreError(file, "expected `range = [lo, hi]` with lo < hi, or `values = [...]`", at)
    lo, hi = float(rng[0]), float(rng[1])
    scale = a.get("scale", "linear")
    if scale not in ("linear", "log") or (scale == "log" and lo <= 0):
        raise ExploreError(file, 'scale is "linear" or "log" (log needs lo > 0)', at)
    if ("cells" in a) == ("step" in a):
        raise ExploreError(file, "give the resolution as `cells = N` or `step = S`", at)
    if "cells" in a:
        n = a["cells"]
        if not isinstance(n, int) or not 2 <= n <= 10_000:
            raise ExploreError(file, "cells must be an integer from 2 to 10000", at)
    else:
        step = a["step"]
        if not isinstance(step, (int, float)) or step <= (1 if scale == "log" else 0):
            raise ExploreError(file, "step must be > 0 (a factor > 1 for a log scale)", at)
        span = math.log(hi / lo) / math.log(step) if scale == "log" else (hi - lo) / step
        n = int(math.floor(span + 1e-9)) + 1
        if n < 2 or n > 10_000:
            raise ExploreError(file, f"step gives {n} cells (2 to 10000 allowed)", at)
        hi = lo * step ** (n - 1) if scale == "log" else lo + step * (n - 1)
    if scale == "log":
        raw = [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]
    else:
        raw = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    if a.get("integer"):
        values: list[Any] = [int(round(v)) for v in raw]
    else:
        values = [float(f"{v:.4g}") for v in raw]  # readable keys; 4 digits is finer than any step here
        values = [int(v) if v == int(v) and all(isinstance(x, int) for x in rng) else v for v in values]
    if len(set(values)) != len(values):
        raise ExploreError(file, "values repeat after rounding: fewer cells or a wider range", at)
    return tuple(values)


def read_exploration(source: str | os.PathLike[str] | Mapping[str, Any], *, seeds: int | None = None,
                     budget: int | None = None) -> Exploration:
    """An exploration file (or its parsed TOML, with or without the ``explore`` level), checked."""
    if isinstance(source, Mapping):
        data, text, path, file = dict(source), None, None, "<explore>"
    else:
        path = Path(source)
        file = str(source)
        try:
            text = path.read_text(encoding="utf-8")
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ExploreError(file, f"not TOML: {e}") from None
    d = data.get("explore", data)
    if not isinstance(d, dict):
        raise ExploreError(file, "expected an [explore] table")
    unknown = sorted(set(d) - set(_KEYS))
    if unknown:
        raise ExploreError(file, f"unknown key {unknown[0]!r} (allowed: {', '.join(_KEYS)})", f"explore.{unknown[0]}")
    name = d.get("name") or (path.stem if path else "explore")
    raw_axes = d.get("axis")
    if not isinstance(raw_axes, list) or not raw_axes or not all(isinstance(a, dict) for a in raw_axes):
        raise ExploreError(file, "expected one or more [[explore.axis]] tables", "explore.axis")
    axes = []
    for i, a in enumerate(raw_axes):
        at = f"explore.axis[{i}]"
        bad = sorted(set(a) - set(_AXIS_KEYS))
        if bad:
            raise ExploreError(file, f"unknown key {bad[0]!r} (allowed: {', '.join(_AXIS_KEYS)})", at)
        key = a.get("key")
        keys = [key] if isinstance(key, str) else key
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            raise ExploreError(file, "missing `key` (a scenario key path as --set takes it, or a list of them)", at)
        axis_name = a.get("name") or re.sub(r"[^A-Za-z0-9_-]", "_", keys[0].split(".")[-1])
        if axis_name == "seed" or any(x.name == axis_name for x in axes):
            raise ExploreError(file, f"axis name {axis_name!r} is taken", at)
        axes.append(ExploreAxis(axis_name, tuple(keys), _grid(a, file, at), a.get("unit")))
    if not isinstance(d.get("property"), str):
        raise ExploreError(file, "missing `property` (e.g. 'utilization(link=\"bottleneck\") >= 0.9')", "explore.property")
    try:
        prop = Property.parse(d["property"])
    except ExprError as e:
        raise ExploreError(file, f"property: {e}", "explore.property") from None
    n_seeds = seeds if seeds is not None else d.get("seeds", 1)
    if not isinstance(n_seeds, int) or not 1 <= n_seeds <= 1000:
        raise ExploreError(file, "seeds must be an integer from 1 to 1000", "explore.seeds")
    conf = d.get("confidence", "all")
    conf_n = {"all": n_seeds, "majority": n_seeds // 2 + 1}.get(conf, conf) if isinstance(conf, str) else conf
    if not isinstance(conf_n, int) or isinstance(conf_n, bool) or not 1 <= conf_n:
        raise ExploreError(file, 'confidence is a number of seeds, "all" or "majority"', "explore.confidence")
    conf_n = min(conf_n, n_seeds)
    budget = budget if budget is not None else d.get("budget")
    if budget is not None and (not isinstance(budget, int) or budget < 1):
        raise ExploreError(file, "budget must be a positive number of runs", "explore.budget")
    coarse = d.get("coarse", 4)
    if not isinstance(coarse, int) or coarse < 1:
        raise ExploreError(file, "coarse must be a positive number of cells", "explore.coarse")
    base = d.get("base")
    if isinstance(base, str) and path is not None:
        base = str((path.parent / base).resolve()) if not Path(base).is_absolute() else base
    suite_doc: dict[str, Any] = {"name": name, "description": d.get("description", ""),
                                 "set": list(d.get("set", [])), "seeds": n_seeds,
                                 "axes": [a.override() for a in axes]}
    lines = [f"{k} = {toml_value(v)}" for k, v in suite_doc.items() if k != "axes"]
    if isinstance(base, dict):
        body = "\n".join(lines) + "\n" + "".join(
            "\n[[axes]]\n" + _write_toml(a) for a in suite_doc["axes"]) + "\n[base]\n" + _write_toml(base, "base.")
    else:
        body = "\n".join(lines + [f"base = {toml_value(base) if base is not None else '0'}"]) + "\n" + "".join(
            "\n[[axes]]\n" + _write_toml(a) for a in suite_doc["axes"])
    suite = parse_suite(body, file)
    assert isinstance(suite, Suite)
    return Exploration(name, d.get("description", ""), file, text or json.dumps(data), suite, tuple(axes), prop,
                       tuple(range(1, n_seeds + 1)), conf_n, budget, coarse)


# --- running ------------------------------------------------------------------------------------


@dataclass
class _Runner:
    """Runs a batch of cells (every seed of each) through the sweep machinery and labels them."""

    ex: Exploration
    root: Path
    jobs: int
    progress: bool
    console: Any = None
    dask: Any = None  # a distributed.Client, or None for the local worker pool
    started: float = field(default_factory=time.time)
    records: dict[str, Any] = field(default_factory=dict)  # key -> RunRecord, every round
    rows: list[dict[str, Any]] = field(default_factory=list)
    round_of: dict[Cell, int] = field(default_factory=dict)
    interrupted: bool = False

    def planned(self, cell: Cell, seed: int) -> PlannedRun:
        return self.ex.suite.plan_values({**self.ex.values(cell), "seed": seed})

    def __call__(self, cells: list[Cell]) -> dict[Cell, bool | None]:
        from ccbench.report.suite import StoredRun
        from ccbench.sweep.runner import _sweep

        if self.interrupted:
            raise _Stop
        plan = {(c, s): self.planned(c, s) for c in cells for s in self.ex.seeds}
        round_no = 1 + max(self.round_of.values(), default=-1)
        results, interrupted = _sweep(self.ex.name, [(self.ex.suite, list(plan.values()), self.root)], self.jobs,
                                      True, self.dask, [], self.progress, self.console, self.started,
                                      time.perf_counter())
        for rec in results[0].runs:
            self.records[rec.key] = rec
        labels: dict[Cell, bool | None] = {}
        for c in cells:
            self.round_of[c] = round_no
            outcomes = []
            for s in self.ex.seeds:
                p = plan[(c, s)]
                rec = self.records[p.key]
                holds, value, error = None, None, rec.error
                if rec.status == "ok":
                    try:
                        holds, value = self.ex.prop.check(StoredRun(self.root / RUNS_DIR / p.key), p.values)
                    except (ExprError, OSError, ValueError) as e:
                        error = f"property: {e}"
                outcomes.append(holds)
                self.rows.append({**self.ex.values(c), "seed": s, "run": p.key, "dir": f"{RUNS_DIR}/{p.key}",
                                  "round": round_no, "status": rec.status, "value": value, "holds": holds,
                                  "error": error})
            labels[c] = self.ex.verdict(outcomes)
        if interrupted:
            self.interrupted = True
            raise _Stop
        return labels


class _Stop(Exception):
    """Ctrl-C during a round: the search stops, what finished is written out."""


class ExploreInterrupted(KeyboardInterrupt):
    def __init__(self, out: Path) -> None:
        super().__init__("exploration interrupted")
        self.out = out


def explore(source: str | os.PathLike[str] | Mapping[str, Any], out: str | os.PathLike[str] | None = None, *,
            jobs: int | None = None, seeds: int | None = None, budget: int | None = None, progress: bool = False,
            console: Any = None, dask: Any = None) -> pl.DataFrame:
    """Run an exploration into ``out`` (default ``results/<name>``) and return its sampled points
    (:func:`load_explore`). Running it again reuses every finished run. ``dask`` runs each round's runs
    on a Dask cluster as :func:`ccbench.sweep.run_suite` does (``"local"``, a scheduler address or a
    ``distributed.Client``; one cluster serves every round). Raises ExploreError for a wrong file and
    ExploreInterrupted on Ctrl-C (what finished is written; run again to continue)."""
    from contextlib import ExitStack

    from ccbench.core.workers import cores
    from ccbench.sweep.runner import _locked

    ex = read_exploration(source, seeds=seeds, budget=budget)
    root = Path(out) if out is not None else Path("results") / ex.name
    (root / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    n_jobs = max(1, jobs or cores())
    cell_budget = None if ex.budget is None else max(1, ex.budget // len(ex.seeds))
    with _locked(root), ExitStack() as owned:
        runner = _Runner(ex, root, n_jobs, progress, console, _dask_client(dask, n_jobs, owned))
        stopped = False
        labels: dict[Cell, bool | None] = {}

        def classify(cells: list[Cell]) -> dict[Cell, bool | None]:
            got = runner(cells)
            labels.update(got)
            return got

        try:
            res = search(ex.shape, classify, coarse=ex.coarse, budget=cell_budget)
        except _Stop:
            stopped = True
            res = SearchResult(ex.shape, dict(labels), {}, dict(runner.round_of))
        _write(ex, root, runner, res, stopped)
    if stopped:
        raise ExploreInterrupted(root)
    return load_explore(root)


def _dask_client(dask: Any, jobs: int, owned: Any) -> Any:
    """One client for every round: ``"local"`` starts a LocalCluster of ``jobs`` workers, an address
    connects; whatever is started here is closed with ``owned``."""
    if dask is None or not isinstance(dask, str):
        return dask
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise CcbenchError("--dask needs the distributed package: pip install distributed") from None
    if dask == "local":
        cluster = owned.enter_context(LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                                   dashboard_address=None))
        return owned.enter_context(Client(cluster))
    return owned.enter_context(Client(dask))


def _write(ex: Exploration, root: Path, runner: _Runner, res: SearchResult, stopped: bool) -> None:
    from ccbench.core.files import write_atomic
    from ccbench.plan.manifest import ManifestWriter

    executor = f"{runner.jobs} jobs" if runner.dask is None else f"dask ({type(runner.dask).__name__})"
    manifest = ManifestWriter(root, ex.suite, list(runner.records.values()), [], executor, runner.started)
    manifest.finish(time.time() - runner.started, stopped)
    axes = [a.name for a in ex.axes]
    schema = {**{a.name: _dtype(a.values) for a in ex.axes},
              "seed": pl.Int64, "run": pl.String, "dir": pl.String, "round": pl.Int64, "status": pl.String,
              "value": pl.Float64, "holds": pl.Boolean, "error": pl.String}
    points = pl.DataFrame(runner.rows, schema=schema).sort([*axes, "seed"])
    points.write_parquet(root / ".points.tmp.parquet")
    os.replace(root / ".points.tmp.parquet", root / POINTS)
    points.write_csv(root / "points.csv")
    cells = []
    for c in full_grid(ex.shape):
        lab = res.label(c)
        cells.append({**ex.values(c), "class": "unknown" if lab is None else str(lab).lower(),
                      "sampled": c in res.sampled})
    pl.DataFrame(cells, schema={**{a: schema[a] for a in axes}, "class": pl.String, "sampled": pl.Boolean}
                 ).write_csv(root / "cells.csv")
    doc = {"name": ex.name, "description": ex.description, "file": ex.file, "text": ex.text,
           "property": ex.prop.text, "seeds": len(ex.seeds), "confidence": ex.confidence, "budget": ex.budget,
           "coarse": ex.coarse, "axes": [{"name": a.name, "keys": list(a.keys), "values": list(a.values), "unit": a.unit}
                                         for a in ex.axes],
           "grid_cells": res.size, "sampled_cells": len(res.sampled), "runs": len(runner.rows),
           "fraction": round(res.fraction, 4), "budget_exhausted": res.exhausted, "interrupted": stopped}
    write_atomic(root / "explore.json", json.dumps(doc, indent=1) + "\n")
    write_atomic(root / "boundary.html", _page(ex, res, runner))
    if len(ex.axes) >= 2:
        _heatmap(ex, res, root / "boundary.png")


def _dtype(values: Sequence[Any]) -> Any:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pl.Int64
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pl.Float64
    return pl.Boolean if all(isinstance(v, bool) for v in values) else pl.String


def _seed_rows(ex: Exploration, runner: _Runner) -> dict[Cell, list[dict[str, Any]]]:
    """Each sampled cell's runs (one row per seed), from the runner's rows."""
    index = {a.name: {v: i for i, v in enumerate(a.values)} for a in ex.axes}
    out: dict[Cell, list[dict[str, Any]]] = {}
    for r in runner.rows:
        out.setdefault(tuple(index[a.name][r[a.name]] for a in ex.axes), []).append(r)
    return out


def _on_boundary(res: SearchResult, cell: Cell) -> bool:
    """A neighbour along some axis is classified otherwise."""
    lab = res.label(cell)
    for d in range(len(cell)):
        for step in (-1, 1):
            n = cell[:d] + (cell[d] + step,) + cell[d + 1:]
            if 0 <= n[d] < res.shape[d] and res.label(n) != lab:
                return True
    return False


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _label(a: ExploreAxis) -> str:
    """An axis's name with its unit: "jitter (ms)"."""
    return a.name + (f" ({a.unit})" if a.unit else "")


def _slice(axes: Sequence[ExploreAxis], fixed: Sequence[int]) -> str:
    """Which slice a map shows: "delay = 10 ms, ..."."""
    return ", ".join(f"{a.name} = {_fmt(a.values[i])}{' ' + a.unit if a.unit else ''}" for a, i in zip(axes, fixed))


def _verdict(holds: bool | None) -> str:
    return "holds" if holds else "fails" if holds is False else "unknown"


_MAP_CSS = """
table.map { border-collapse: collapse; margin: 0.4em 0 1em; }
table.map td { width: 1.7em; height: 1.7em; padding: 0; border: 1px solid #fff; text-align: center; font-size: 11px; }
table.map th { font-weight: normal; font-size: 11px; padding: 0 0.3em; white-space: nowrap; }
table.map th.axis { font-weight: 600; }
table.map td a { display: block; width: 100%; height: 100%; line-height: 1.7em; color: #000; text-decoration: none; }
td.holds { background: #7fc97f; } td.fails { background: #f0027f; } td.unknown { background: #bbb; }
td.inferred { opacity: 0.4; } td.edge { outline: 2px solid #333; outline-offset: -2px; }
td.split a::after { content: "±"; }
"""


def _page(ex: Exploration, res: SearchResult, runner: _Runner) -> str:
    """The exploration's report page: the map (the last two axes across and up, one map per value of
    the others; sampled cells link to their runs), then every run as a sortable table."""
    import itertools

    from ccbench.report.suite import _e, _html_foot, _html_head

    seeds = _seed_rows(ex, runner)
    ax = ex.axes[0] if len(ex.axes) == 1 else ex.axes[-2]  # across
    ay = None if len(ex.axes) == 1 else ex.axes[-1]  # up
    rest = ex.axes[:-2] if len(ex.axes) > 1 else ()

    parts = _html_head(f"{ex.name}: exploration", ex.description)
    parts.append(f"<style>{_MAP_CSS}</style>")
    meta = [("property", ex.prop.text),
            ("seeds", f"{len(ex.seeds)} per point; a point holds if at least {ex.confidence} hold"),
            ("sampled", f"{len(res.sampled)} of {res.size} points ({res.fraction:.0%}), {len(runner.rows)} runs"
             + (", budget spent" if res.exhausted else "")),
            ("axes", "; ".join(f"{_label(a)}: {', '.join(_fmt(v) for v in a.values)}" for a in ex.axes))]
    parts.append('<table class="meta"><tbody>' + "".join(
        f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in meta) + "</tbody></table>")
    parts.append("<h2>Map</h2>")
    parts.append('<p class="legend">Green: the property holds; pink: it fails; grey: unknown (no data, or the '
                 "seeds too split to decide). Solid cells were run (a click opens the first seed's run; ± marks "
                 "seeds that disagreed); faded cells are inferred from the runs around them. An outlined cell "
                 "has a neighbour of the other class: the boundary runs through or beside it, to within one "
                 "cell.</p>")
    for fixed in itertools.product(*(range(len(a.values)) for a in rest)):
        if rest:
            parts.append(f"<h3>{_e(_slice(rest, fixed))}</h3>")
        rows = []
        for j in (reversed(range(len(ay.values))) if ay else [None]):
            row = [f"<th>{_e(_fmt(ay.values[j])) if ay else ''}</th>"]
            for i in range(len(ax.values)):
                cell = tuple(fixed) + ((i, j) if ay else (i,))
                lab = res.label(cell)
                cls = [_verdict(lab)]
                at = {a.name: a.values[k] for a, k in zip(ex.axes, cell)}
                title = ", ".join(f"{k} = {_fmt(v)}" for k, v in at.items())
                body = ""
                if cell in res.sampled:
                    runs = seeds.get(cell, [])
                    held = [r["holds"] for r in runs]
                    if len(set(held)) > 1:
                        cls.append("split")
                    title += "; " + "; ".join(
                        f"seed {r['seed']}: {_fmt(r['value']) if r['value'] is not None else r['status']}"
                        f" ({_verdict(r['holds'])})"
                        for r in runs)
                    if runs:
                        body = f'<a href="{_e(runs[0]["dir"])}/report.html"></a>'
                else:
                    cls.append("inferred")
                    title += "; inferred"
                if _on_boundary(res, cell):
                    cls.append("edge")
                row.append(f'<td class="{" ".join(cls)}" title="{_e(title)}" '
                           f'data-cell="{_e(json.dumps(at))}">{body}</td>')
            rows.append("<tr>" + "".join(row) + "</tr>")
        foot = "<tr><th></th>" + "".join(f"<th>{_e(_fmt(v))}</th>" for v in ax.values) + "</tr>"
        label_y = f'<tr><th class="axis">{_e(_label(ay))}</th></tr>' if ay else ""
        parts.append(f'<table class="map">{label_y}{"".join(rows)}{foot}'
                     f'<tr><th></th><th class="axis" colspan="{len(ax.values)}">{_e(_label(ax))}</th>'
                     "</tr></table>")
    parts.append("<h2>Runs</h2>")
    head = "".join(f"<th>{_e(h)}</th>" for h in [*(_label(a) for a in ex.axes), "seed", "value",
                                                 "holds", "round", "run"])
    body = []
    for r in sorted(runner.rows, key=lambda r: (r["round"], [str(r[a.name]) for a in ex.axes], r["seed"])):
        cells = [f'<td data-v="{r[a.name]!r}">{_e(_fmt(r[a.name]))}</td>' if isinstance(r[a.name], (int, float))
                 else f"<td>{_e(r[a.name])}</td>" for a in ex.axes]
        value = r["value"]
        cells += [f"<td>{r['seed']}</td>",
                  f'<td data-v="{value!r}">{_e(_fmt(value))}</td>' if isinstance(value, float) and math.isfinite(value)
                  else f'<td class="missing" title="{_e(r["error"] or "")}">{_e(r["status"])}</td>',
                  f"<td>{_verdict(r['holds'])}</td>",
                  f"<td>{r['round']}</td>", f'<td><a href="{_e(r["dir"])}/report.html">{_e(r["run"][:12])}</a></td>']
        body.append("<tr>" + "".join(cells) + "</tr>")
    parts.append('<input type="search" class="filter" placeholder="filter rows" aria-label="filter rows">'
                 f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
                 f'<tbody>{"".join(body)}</tbody></table></div>')
    return "\n".join(parts + _html_foot()) + "\n"


def _heatmap(ex: Exploration, res: SearchResult, path: Path) -> None:
    """The map as a static figure: the last two axes across and up, one panel per value of the others
    (at most 12 panels; more axes than that make no figure)."""
    import itertools

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ccbench.core.png import save_figure

    *rest, a0, a1 = ex.axes
    slices = list(itertools.product(*(range(len(a.values)) for a in rest)))
    if len(slices) > 12:
        return
    cols = min(3, len(slices))
    rows = -(-len(slices) // cols)
    fig, axs = plt.subplots(rows, cols, figsize=(2 + 4.2 * cols, 0.6 + 3.8 * rows), squeeze=False, sharey=True)
    for k, fixed in enumerate(slices):
        ax = axs[k // cols][k % cols]
        grid = np.full((len(a0.values), len(a1.values)), np.nan)
        for i, j in itertools.product(range(len(a0.values)), range(len(a1.values))):
            lab = res.label(tuple(fixed) + (i, j))
            grid[i, j] = np.nan if lab is None else float(lab)
        ax.imshow(grid.T, origin="lower", cmap="RdYlGn", vmin=0, vmax=1, alpha=0.55, aspect="auto")
        for val, marker, colour in ((True, "o", "darkgreen"), (False, "x", "darkred"), (None, "s", "grey")):
            pts = [c[-2:] for c, lab in res.sampled.items() if lab is val and c[:-2] == tuple(fixed)]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, c=colour, s=18,
                           label=f"sampled: {_verdict(val)}")
        ax.set_xticks(range(len(a0.values)), [_fmt(v) for v in a0.values], rotation=90, fontsize=7)
        ax.set_yticks(range(len(a1.values)), [_fmt(v) for v in a1.values], fontsize=7)
        ax.set_xlabel(_label(a0))
        if k % cols == 0:
            ax.set_ylabel(_label(a1))
        if rest:
            ax.set_title(_slice(rest, fixed), fontsize=9)
    for k in range(len(slices), rows * cols):
        axs[k // cols][k % cols].set_visible(False)
    handles, labels = axs[0][0].get_legend_handles_labels()
    for ax in axs.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, fontsize=7, loc="upper right")
    fig.suptitle(f"{ex.prop.text}\n{len(res.sampled)} of {res.size} cells sampled; shaded cells inferred",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.9 if cols == 1 else 0.93, 1))
    save_figure(fig, path, 110)
    plt.close(fig)


def load_explore(directory: str | os.PathLike[str]) -> pl.DataFrame:
    """An exploration directory's sampled runs: a row per run (axis values, seed, run, dir, round,
    status, value, holds, error)."""
    path = Path(directory) / POINTS
    if not path.is_file():
        raise FileNotFoundError(2, f"not an exploration directory (no {POINTS})", str(directory))
    return pl.read_parquet(path)


def builtin_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "explorations"


def resolve_source(source: str) -> str:
    """A file, or a built-in exploration by name."""
    if not Path(source).is_file() and re.fullmatch(r"[A-Za-z0-9._-]+", source):
        builtin = builtin_dir() / f"{source.removesuffix('.toml')}.toml"
        if builtin.is_file():
            return str(builtin)
    if not Path(source).is_file():
        names = ", ".join(sorted(p.stem for p in builtin_dir().glob("*.toml")))
        raise CcbenchError(f"{source}: no such exploration file or built-in exploration (built-in: {names})")
    return source


make_callable(__name__, explore)
