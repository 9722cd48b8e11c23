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
side a metric expression of :mod:`ccbench.expr` (a numeric axis's name is its
value, so ``sum(goodput_mbps) / rate >= 0.9`` works). Each run records the
left side's number; a run without data or whose expression fails is
"unknown". A point with N seeds holds if at least ``confidence`` of them
hold, fails if too few can still hold, and is unknown otherwise.

The search runs on the grid of axis values (1 to 3 axes are practical; any
number works) as :mod:`ccbench.gridsearch` describes: a coarse design, then
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
``sampled``), ``explore.json`` and ``boundary.html`` (the cells as tables, a
sampled cell linking to its run), plus ``boundary.png`` for two axes.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import sys
import time
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from ccbench.api import toml_value
from ccbench.errors import CcbenchError
from ccbench.expr import Expr, ExprError, evaluate, parse as parse_expr
from ccbench.gridsearch import Cell, SearchResult, full_grid, search
from ccbench.suite import PlannedRun, Suite, SuiteError, _write_toml, parse_suite

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


@dataclass(frozen=True)
class Property:
    """``left OP right``: whether a run satisfies it, and the left side's number."""

    text: str
    left: Expr
    op: str
    right: Expr

    @classmethod
    def parse(cls, text: str) -> Property:
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
                op = next((o for o in _OPS if text.startswith(o, i)), None)
                if op:
                    found.append((i, op))
                    i += len(op)
                    continue
            i += 1
        if len(found) != 1:
            raise ExprError(f"a property is one comparison EXPR OP EXPR (OP: {' '.join(_OPS)}), "
                            f"found {len(found)} operators")
        at, op = found[0]
        return cls(text, parse_expr(text[:at].strip()), op, parse_expr(text[at + len(op):].strip()))

    def check(self, run: Any, values: Mapping[str, Any]) -> tuple[bool | None, float | None]:
        a = evaluate(self.left, run, values)
        b = evaluate(self.right, run, values)
        if a is None or b is None or math.isnan(a) or math.isnan(b):
            return None, a
        holds = {"<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b, "<": a < b, ">": a > b}[self.op]
        return holds, a


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
    started: float = field(default_factory=time.time)
    records: dict[str, Any] = field(default_factory=dict)  # key -> RunRecord, every round
    rows: list[dict[str, Any]] = field(default_factory=list)
    round_of: dict[Cell, int] = field(default_factory=dict)
    interrupted: bool = False

    def planned(self, cell: Cell, seed: int) -> PlannedRun:
        return self.ex.suite.plan_values({**self.ex.values(cell), "seed": seed})

    def __call__(self, cells: list[Cell]) -> dict[Cell, bool | None]:
        from ccbench.report import StoredRun
        from ccbench.sweep import RUNS_DIR, _sweep

        if self.interrupted:
            raise _Stop
        plan = {(c, s): self.planned(c, s) for c in cells for s in self.ex.seeds}
        round_no = 1 + max(self.round_of.values(), default=-1)
        results, interrupted = _sweep(self.ex.name, [(self.ex.suite, list(plan.values()), self.root)], self.jobs,
                                      True, None, [], self.progress, self.console, self.started,
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
            console: Any = None) -> pl.DataFrame:
    """Run an exploration into ``out`` (default ``results/<name>``) and return its sampled points
    (:func:`load_explore`). Running it again reuses every finished run. Raises ExploreError for a wrong
    file and ExploreInterrupted on Ctrl-C (what finished is written; run again to continue)."""
    from ccbench.sweep import RUNS_DIR, _locked
    from ccbench.workers import cores

    ex = read_exploration(source, seeds=seeds, budget=budget)
    root = Path(out) if out is not None else Path("results") / ex.name
    (root / RUNS_DIR).mkdir(parents=True, exist_ok=True)
    runner = _Runner(ex, root, max(1, jobs or cores()), progress, console)
    cell_budget = None if ex.budget is None else max(1, ex.budget // len(ex.seeds))
    with _locked(root):
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


def _write(ex: Exploration, root: Path, runner: _Runner, res: SearchResult, stopped: bool) -> None:
    from ccbench.sweep import _Manifest, write_atomic

    manifest = _Manifest(root, ex.suite, list(runner.records.values()), [], f"{runner.jobs} jobs", runner.started)
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
    if len(ex.axes) == 2:
        _heatmap(ex, res, root / "boundary.png")


def _dtype(values: Sequence[Any]) -> Any:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pl.Int64
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pl.Float64
    return pl.Boolean if all(isinstance(v, bool) for v in values) else pl.String


def _link(ex: Exploration, runner: _Runner, cell: Cell) -> str | None:
    """The first seed's run of a sampled cell."""
    values = ex.values(cell)
    for r in runner.rows:
        if all(r[k] == v for k, v in values.items()):
            return f"{r['dir']}/report.html"
    return None


def _page(ex: Exploration, res: SearchResult, runner: _Runner) -> str:
    """Cells as HTML tables: the first axis down, the second across, one table per value of the others."""
    colour = {True: "#7fc97f", False: "#f0027f", None: "#bbbbbb"}
    a0 = ex.axes[0]
    a1 = ex.axes[1] if len(ex.axes) > 1 else None
    rest = ex.axes[2:]
    out = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(ex.name)}</title>",
           "<style>td{width:1.6em;height:1.6em;text-align:center;font:11px sans-serif}"
           "td.i{opacity:.45}th{font:11px sans-serif}a{color:#000;text-decoration:none}</style>",
           f"<h1>{html.escape(ex.name)}</h1><p>{html.escape(ex.description)}</p>",
           f"<p>property <code>{html.escape(ex.prop.text)}</code>, {len(ex.seeds)} seed(s), holds if at least "
           f"{ex.confidence} hold. Sampled {len(res.sampled)} of {res.size} cells ({res.fraction:.0%}). "
           "Solid: sampled (links to the first seed's run); faded: inferred. Green: holds, pink: fails, "
           "grey: unknown.</p>"]
    import itertools

    for fixed in itertools.product(*(range(len(a.values)) for a in rest)):
        if rest:
            out.append("<h2>" + ", ".join(f"{a.name} = {html.escape(str(a.values[i]))}"
                                           for a, i in zip(rest, fixed)) + "</h2>")
        head = "".join(f"<th>{html.escape(str(v))}</th>" for v in (a1.values if a1 else [""]))
        out.append(f"<table><tr><th>{html.escape(a0.name)} \\ {html.escape(a1.name if a1 else '')}</th>{head}</tr>")
        for i, v0 in enumerate(a0.values):
            row = [f"<tr><th>{html.escape(str(v0))}</th>"]
            for j in range(len(a1.values) if a1 else 1):
                cell = (i,) + ((j,) if a1 else ()) + tuple(fixed)
                lab = res.label(cell)
                mark = {True: "✓", False: "✗", None: "?"}[lab]
                if cell in res.sampled:
                    link = _link(ex, runner, cell)
                    body = f"<a href='{link}'>{mark}</a>" if link else mark
                    row.append(f"<td style='background:{colour[lab]}'>{body}</td>")
                else:
                    row.append(f"<td class='i' style='background:{colour[lab]}'></td>")
            out.append("".join(row) + "</tr>")
        out.append("</table>")
    return "\n".join(out) + "\n"


def _heatmap(ex: Exploration, res: SearchResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ccbench.sweep import save_figure

    a0, a1 = ex.axes
    grid = np.full(ex.shape, np.nan)
    for c in full_grid(ex.shape):
        lab = res.label(c)
        grid[c] = np.nan if lab is None else float(lab)
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.imshow(grid.T, origin="lower", cmap="RdYlGn", vmin=0, vmax=1, alpha=0.55, aspect="auto")
    for val, marker, colour in ((True, "o", "darkgreen"), (False, "x", "darkred"), (None, "s", "grey")):
        pts = [c for c, lab in res.sampled.items() if lab is val]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, c=colour, s=18,
                       label=f"sampled: {'holds' if val else 'fails' if val is False else 'unknown'}")
    ax.set_xticks(range(len(a0.values)), [str(v) for v in a0.values], rotation=90, fontsize=7)
    ax.set_yticks(range(len(a1.values)), [str(v) for v in a1.values], fontsize=7)
    ax.set_xlabel(a0.name + (f" ({a0.unit})" if a0.unit else ""))
    ax.set_ylabel(a1.name + (f" ({a1.unit})" if a1.unit else ""))
    ax.set_title(f"{ex.prop.text}\n{len(res.sampled)} of {res.size} cells sampled; shaded cells inferred",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
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
    return Path(__file__).parent / "explorations"


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


class _CallableModule(types.ModuleType):
    """``ccbench.explore`` is both this module and, called, :func:`explore` (importing the module
    makes it the package's attribute, so the function has to be reachable through it)."""

    def __call__(self, *args: Any, **kw: Any) -> pl.DataFrame:
        return explore(*args, **kw)


sys.modules[__name__].__class__ = _CallableModule
