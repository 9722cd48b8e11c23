"""Suite reports: ``report.md`` and a self-contained ``report.html`` from stored results.

:func:`render` reads a sweep's directory — ``suite.json`` and each finished
run's ``summary.json`` (and, for interval metrics and plots, its Parquet
tables) — and writes beside them::

    report.md       Markdown: run metadata, the suite's tables, one row per run
    report.html     the same as a web page in one file: inline CSS and script, no
                    CDN; tables sort on a header click and filter by a text box;
                    each run row links to the run's own page (runs/<key>/report.html,
                    ccbench.simulate.page) and to its PNG plots when the suite draws them
                    or ``ccbench plot`` has; the cross-run plots are embedded (PNG
                    data URIs)
    plots/*.png     the cross-run plots (ccbench.report.suite_plots)

A table of the report spec has one row per value of its ``rows`` axis and one
column per value of its ``cols`` axis, headed by the values' labels
("1 TCP", "2 TCP", ...); each cell is the ``cell`` metric expression
(:mod:`ccbench.plan.expr`) on the run with those values. Axes that are neither
rows, cols nor fixed by ``where`` give one table per combination of their
values. A cell says "failed" for a run that failed, "not run" for a run not
run yet, "—" where the run has no data for it, and "error" for an
expression it cannot evaluate (the messages follow the table).

Everything is recomputed from the files, so ``ccbench report DIR``
re-renders a report at any time, also of an interrupted sweep.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

from ccbench.core.files import write_atomic
from ccbench.core.png import save_figure
from ccbench.core.workers import in_workers, start_early
from ccbench.plan.expr import ExprError, evaluate
from ccbench.plan.manifest import MANIFEST, Manifest, RunRecord, read_manifest
from ccbench.plan.suite import (
    PLOT_TITLES,
    RUN_PLOTS,
    SEED_AXIS,
    SEED_BOX,
    Scalar,
    Suite,
    TableSpec,
    format_value,
    value_key,
)
from ccbench.plan.suite_file import parse_suite
from ccbench.report.run_metrics import RunColumn, run_columns
from ccbench.report.run_metrics import legend as legend_of
from ccbench.simulate.page import ASSETS_DIR, JS_DIR, PAGE_FILE, copy_assets
from ccbench.simulate.results import SUMMARY_FILE, read_summary

__all__ = ["Cell", "Grid", "Report", "StoredRun", "StoredRuns", "build", "render"]

PLOTS_DIR = "plots"

#: Per-packet tables: read again when needed rather than kept (a long run's are hundreds of MB).
_UNCACHED = frozenset({"sojourn", "rtt", "capture"})


class StoredRun:
    """One finished run read lazily from its result directory (what expressions and plots read).

    ``table(name, columns)`` reads only those columns (a Polars lazy scan with
    projection), so a report that needs a table's time and one counter never
    loads the per-packet columns it does not use; reads are cached, except
    of the per-packet tables (sojourn, rtt, capture).
    """

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._tables: dict[tuple[str, tuple[str, ...] | None], pl.DataFrame] = {}
        self._pinned = False

    @cached_property
    def summary(self) -> dict[str, Any]:
        return read_summary(self.dir)

    def table(self, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        key = (name, tuple(columns) if columns is not None else None)
        if key in self._tables:
            return self._tables[key]
        import polars as pl  # a table read is what needs Polars; a report that reads none never loads it

        path = self.dir / f"{name}.parquet"
        held = self._held(name, columns)
        if held is not None:
            df = held if columns is None else held.select([c for c in columns if c in held.columns])
        elif path.is_file():
            scan = pl.scan_parquet(path)
            if columns is not None:
                have = scan.collect_schema().names()
                scan = scan.select([c for c in columns if c in have])
            df = scan.collect()
        else:
            from ccbench.simulate.results import SCHEMA  # Polars' types: made on first use

            schema = SCHEMA.get(name, {})
            df = pl.DataFrame(schema={c: t for c, t in schema.items() if columns is None or c in columns})
        if self._pinned or name not in _UNCACHED:
            self._tables[key] = df
        return df

    def _held(self, name: str, columns: Sequence[str] | None) -> pl.DataFrame | None:
        """A cached read of ``name`` that has every one of ``columns`` (the whole table for None)."""
        whole = self._tables.get((name, None))
        if whole is not None or columns is None:
            return whole
        want = set(columns)
        return next((df for (n, cols), df in self._tables.items() if n == name and cols is not None
                     and want <= set(cols)), None)

    @contextmanager
    def pinned(self) -> Iterator[StoredRun]:
        """Within the block the per-packet tables are kept too (one run's reduction reads them
        several times); after it they are dropped again."""
        self._pinned = True
        try:
            yield self
        finally:
            self._pinned = False
            self._tables = {k: df for k, df in self._tables.items() if k[0] not in _UNCACHED}

    def forget(self) -> None:
        """Drop the cached tables (between plots, so a report holds one plot's data at a time)."""
        self._tables.clear()


@dataclass
class Cell:
    text: str
    value: float | None = None
    status: str = "ok"  # ok, failed, pending, error, missing; "label" for text such as an axis value
    note: str = ""  # the error, for failed and error cells


@dataclass
class Grid:
    """One rendered table."""

    title: str
    subtitle: str  # the values of the axes this table fixes, or ""
    corner: str
    columns: list[str]
    rows: list[tuple[str, list[Cell]]]
    notes: list[str] = field(default_factory=list)
    legend: list[str] = field(default_factory=list)  # what each column is, shown under the table
    #: Explanations shown under the table (not errors).
    captions: list[str] = field(default_factory=list)
    #: Root-mean-square error over the cells with both values (comparison grids).
    rms: float | None = None


@dataclass
class Report:
    """Everything a report shows, before it is written as Markdown or HTML."""

    meta: list[tuple[str, str]]
    tables: list[Grid]
    runs: Grid
    run_links: list[dict[str, str]]  # per run row: plot name -> path relative to the report
    errors: list[tuple[str, str]]  # (run key, error) of failed runs
    plots: list[tuple[str, str, Path]]  # (name, title, png path)
    title: str
    description: str
    #: The cross-run figures the page draws (ccbench.report.suite_figures), or None when not computed.
    figures: dict[str, Any] | None = None


class Progress(Protocol):
    """What :func:`build` reports while it works: ``start(total)``, then ``step(what)`` per unit done."""

    def start(self, total: int) -> None: ...

    def step(self, what: str) -> None: ...


class _Quiet:
    def start(self, total: int) -> None:
        pass

    def step(self, what: str) -> None:
        pass


class ConsoleProgress:
    """A rich progress bar on stderr ("report ━━━━ 7/17 plot delay_cdf"), shown only on a terminal."""

    def __init__(self, console: Any = None, label: str = "report") -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        from ccbench.core.term import console as terminal
        from rich.progress import Progress as Bar

        self.bar = Bar(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                       TimeElapsedColumn(), console=console or terminal(stderr=True, highlight=False), transient=True)
        self.task = self.bar.add_task("", total=None)

    def __enter__(self) -> ConsoleProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, total: int) -> None:
        self.bar.update(self.task, total=total, completed=0)

    def step(self, what: str) -> None:
        self.bar.update(self.task, advance=1, description=what)


def build(suite_dir: str | os.PathLike[str], *, plots: bool = True, progress: Progress | None = None,
          jobs: int = 1, figures: bool = True) -> Report:
    """Compute a report from a sweep's directory; with ``plots`` also draw the plots/*.png the suite asks
    for, ``jobs`` at a time; with ``figures`` the data of the figures report.html draws.

    ``progress`` hears of each run read and each plot drawn. Ctrl-C
    (KeyboardInterrupt) stops between steps, which are small: a run's
    columns (only those needed) or one plot.
    """
    progress = progress or _Quiet()
    report, todo = _build(Path(suite_dir), plots, progress, count_plots=True, figures=figures, jobs=jobs)
    _draw_all(todo, jobs, progress)
    return report


def _build(root: Path, plots: bool, progress: Progress, *, count_plots: bool,
           figures: bool = True, jobs: int = 1) -> tuple[Report, list[FigureJob]]:
    """The report's tables and the figures it shows (not drawn yet: the returned jobs draw them)."""
    manifest = read_manifest(root)
    data = manifest.data
    suite = parse_suite(data.get("suite_text", ""), data.get("suite_file", "<suite>"), read_base=False)
    stored = StoredRuns({})
    for r in manifest.runs:  # the run directories decide: suite.json may lag behind a killed sweep
        finished = (root / r.dir / SUMMARY_FILE).is_file()
        if finished and r.status != "failed":
            r.status = "ok"
            stored[r.key] = StoredRun(root / r.dir)
        elif r.status == "ok":
            r.status = "pending"
    todo = _plots(suite, manifest.runs, stored, root) if plots else []
    progress.start(len(manifest.runs) + (len(todo) if count_plots else 0))
    with stored.planning():  # what the tables and the Runs table's columns ask of each run, read per run
        for spec in suite.report.tables:
            _grids(suite, spec, manifest.runs, stored)
        for rec in manifest.runs:
            for c in suite.report.columns:
                _cell(rec, stored, c.cell, c.format)
    tables = [g for spec in suite.report.tables for g in _grids(suite, spec, manifest.runs, stored)]
    runs_grid, links = _runs_grid(suite, manifest.runs, stored, root, progress)
    pngs = [(name, PLOT_TITLES[name], path) for name, path, _ in todo]
    errors = [(r.key, r.error or "") for r in manifest.runs if r.status == "failed"]
    drawn = _figure_data(suite, manifest.runs, stored, jobs) if figures else None
    return Report(_meta(data, manifest, stored), tables, runs_grid, links, errors, pngs,
                  data.get("suite", suite.name), data.get("description", suite.description), drawn), todo


def render(suite_dir: str | os.PathLike[str], *, plots: bool = True, progress: Progress | None = None,
           jobs: int = 1) -> Path:
    """Write report.md, report.html and (with ``plots``) plots/ into a sweep's directory; return report.html's path.

    ``jobs`` > 1 draws that many plots at a time in worker processes.

    Without ``plots`` the plots already in plots/ are kept but not shown. A
    suite of suites' directory gets each part's report in the part's
    directory and, in its own, one report of all the parts' tables.
    """
    root = Path(suite_dir)
    parts = part_dirs(root)
    if plots and any(_asks_for_pngs(d) for d in (parts if parts is not None else [root])):
        start_early(jobs, plots=True)  # the workers' matplotlib import overlaps the tables; no PNG, no workers
    if parts is not None:
        return _render_set(root, read_manifest(root).data, parts, plots=plots, progress=progress, jobs=jobs)
    report = build(root, plots=plots, progress=progress, jobs=jobs)
    write_atomic(root / "report.md", markdown(report))
    write_atomic(root / "report.html", to_html(report, root, assets=copy_assets(root)))
    return root / "report.html"


def _asks_for_pngs(root: Path) -> bool:
    data = read_manifest(root).data
    suite = parse_suite(data.get("suite_text", ""), data.get("suite_file", "<suite>"), read_base=False)
    return bool(suite.report.suite_plots)


def part_dirs(suite_dir: str | os.PathLike[str]) -> list[Path] | None:
    """The part directories of a suite of suites' result directory (those that exist), or None for a plain suite."""
    root = Path(suite_dir)
    data = read_manifest(root).data
    if "parts" not in data:
        return None
    return [root / name for name in data["parts"] if (root / name / MANIFEST).is_file()]


def _render_set(root: Path, data: Mapping[str, Any], parts: Sequence[Path], *, plots: bool,
                progress: Progress | None, jobs: int) -> Path:
    title, description = data.get("suite", root.name), data.get("description", "")
    progress = progress or _Quiet()
    reports, todo = [], []
    for part in parts:
        rep, figures = _build(part, plots, progress, count_plots=False, jobs=jobs)
        reports.append((part.name, rep))
        todo += figures
    progress.start(len(todo))
    _draw_all(todo, jobs, progress)  # all parts' figures in one pool: no part waits for another's last one
    for name, rep in reports:
        write_atomic(root / name / "report.md", markdown(rep))
        write_atomic(root / name / "report.html", to_html(rep, root / name, assets=copy_assets(root / name)))
    md = [f"# {title}", ""] + ([description, ""] if description else [])
    md += [f"Parts: {', '.join(f'[{n}]({n}/report.md)' for n, _ in reports)}.", ""]
    for name, rep in reports:
        body = markdown(rep).splitlines()
        md += [("#" + line if line.startswith("#") else line) for line in body]
        md += ["", f"Full report of this part: [{name}/report.html]({name}/report.html)", ""]
    write_atomic(root / "report.md", "\n".join(md).rstrip() + "\n")
    html = _html_head(title, description)
    html.append("<ul>" + "".join(f'<li><a href="#{_e(n)}">{_e(r.title)}</a>'
                                 + (f": {_e(r.description)}" if r.description else "") + "</li>"
                                 for n, r in reports) + "</ul>")
    for name, rep in reports:
        html.append(f'<h2 id="{_e(name)}">{_e(rep.title)}</h2>')
        if rep.description:
            html.append(f"<p>{_e(rep.description)}</p>")
        html.append(f'<p><a href="{_e(name)}/report.html">full report: plots, every run</a></p>')
        html += _html_tables(rep.tables, "h3")
        if rep.errors:
            html.append(f"<p>{len(rep.errors)} failed run(s): see the part's report.</p>")
    html += _html_foot()
    write_atomic(root / "report.html", "\n".join(html) + "\n")
    return root / "report.html"


# --- computing tables ---------------------------------------------------------------------------


def run_label(suite: Suite, values: Mapping[str, Any]) -> str:
    return " / ".join(a.label_of(values[a.name]) for a in suite.axes if a.name in values) or "run"


class StoredRuns(dict[str, StoredRun]):
    """The finished runs by key, each (run, expression) evaluated once.

    Within :meth:`planning` the report's tables only list what they ask of each run; when the block
    ends each run's expressions are evaluated together, the run's per-packet tables read once for
    all of them (and then dropped), and the tables built after it find their values here.
    """

    def __init__(self, runs: Mapping[str, StoredRun]) -> None:
        super().__init__(runs)
        self._values: dict[tuple[str, int], Any] = {}
        self._wanted: dict[str, dict[int, tuple[Any, Mapping[str, Any]]]] | None = None

    @contextmanager
    def planning(self) -> Iterator[None]:
        self._wanted = {}
        try:
            yield
        finally:
            wanted, self._wanted = self._wanted, None
        for key, exprs in wanted.items():
            with self[key].pinned():
                for eid, (expr, values) in exprs.items():
                    self._values[(key, eid)] = self._evaluate(key, expr, values)

    def value(self, record: RunRecord, expr: Any) -> Any:
        """``expr`` over the run of ``record``, or the ExprError it raised (None while planning)."""
        key = (record.key, id(expr))  # the expression objects live as long as the suite
        if key in self._values:
            return self._values[key]
        if self._wanted is not None:
            self._wanted.setdefault(record.key, {})[id(expr)] = (expr, record.values)
            return None
        return self._evaluate(record.key, expr, record.values)

    def _evaluate(self, key: str, expr: Any, values: Mapping[str, Any]) -> Any:
        try:
            return evaluate(expr, self[key], values)
        except ExprError as e:
            return e


def _cell(record: RunRecord | None, stored: StoredRuns, expr: Any, fmt: str | None) -> Cell:
    if record is None:
        return Cell("—", status="missing")
    if record.status == "failed":
        return Cell("failed", status="failed", note=(record.error or "").splitlines()[0] if record.error else "")
    if record.key not in stored:
        return Cell("not run", status="pending")
    value = stored.value(record, expr)
    if isinstance(value, ExprError):
        return Cell("error", status="error", note=str(value))
    return Cell(format_value(value, fmt), value)


#: Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30, then 40, 60, 120; 1.96 beyond).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t95(dof: int) -> float:
    """Student's t quantile for a two-sided 95 % interval (the table's next lower tabulated dof beyond 30)."""
    if dof < 1:
        raise ValueError("a t interval needs at least 2 samples")
    if dof <= 30:
        return _T95[dof - 1]
    return 2.042 if dof < 40 else 2.021 if dof < 60 else 2.000 if dof < 120 else 1.980 if dof < 1000 else 1.960


def mean_ci95(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its 95 % confidence interval, t · s / √n (None for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    var = sum((x - mean) ** 2 for x in values) / (n - 1)
    return mean, t95(n - 1) * (var / n) ** 0.5


def _seed_cell(cells: Sequence[Cell], fmt: str | None) -> Cell:
    """The cells of one configuration's seeds as one: mean ± 95 % interval over the seeds with a value."""
    nums = [c.value for c in cells if c.status == "ok" and c.value is not None and c.value == c.value]
    if not nums:
        for status in ("failed", "error", "pending", "missing"):
            for c in cells:
                if c.status == status:
                    return c
        return cells[0]
    mean, half = mean_ci95(nums)
    text = format_value(mean, fmt) + (f" ± {format_value(half, fmt)}" if half is not None else "")
    if len(nums) < len(cells):
        text += f" ({len(nums)} of {len(cells)} seeds)"
    notes = "; ".join(c.note for c in cells if c.note)
    return Cell(text, mean, note=notes)


def _grids(suite: Suite, spec: TableSpec, records: Sequence[RunRecord], stored: StoredRuns) -> list[Grid]:
    index = {tuple(sorted((k, value_key(v)) for k, v in r.values.items())): r for r in records}
    rows_axis = suite.axis(spec.rows)
    cols_axis = suite.axis(spec.cols) if spec.cols else None
    seeds = next((a for a in suite.axes if a.name == SEED_AXIS), None)
    # A seed axis the table does not show is aggregated over (mean ± 95 % interval), not split into tables.
    if seeds is None or len(seeds.values) < 2 or SEED_AXIS in (spec.rows, spec.cols) or SEED_AXIS in spec.where:
        seeds = None
    free = [a for a in suite.axes if a.name not in (spec.rows, spec.cols) and a.name not in spec.where
            and (seeds is None or a.name != SEED_AXIS)]
    keyed = [{k: value_key(v) for k, v in r.values.items()} for r in records]

    def planned(values: Mapping[str, Scalar]) -> bool:
        """Whether any run has these axis values (not left out by `exclude` or `--only`)."""
        want = {k: value_key(v) for k, v in values.items()}
        return any(all(r.get(k) == v for k, v in want.items()) for r in keyed)

    out = []
    for combo in itertools.product(*(a.values for a in free)):
        fixed = {**spec.where, **{a.name: v for a, v in zip(free, combo)}}
        if not planned(fixed):
            continue
        # Rows and columns no run has are left out (a published table keeps every row: its rows are matched by value).
        row_values = [rv for rv in rows_axis.values if spec.published or planned({**fixed, spec.rows: rv})]
        col_values = [cv for cv in cols_axis.values if planned({**fixed, spec.cols: cv})] if cols_axis else []
        subtitle = ", ".join(f"{suite.axis(k).label} = {suite.axis(k).label_of(v)}" for k, v in fixed.items())
        if seeds is not None:
            subtitle = ", ".join(x for x in (subtitle, f"mean ± 95 % interval over {len(seeds.values)} seeds") if x)
        columns = [cols_axis.label_of(v) for v in col_values] if cols_axis else [spec.title]
        if spec.columns:
            columns = [label for label, _, _ in spec.columns]
        rows: list[tuple[str, list[Cell]]] = []
        notes: list[str] = []
        for rv in row_values:
            cells = []
            # Explicit columns: one expression each, all over the same run.
            plan = [(None, e) for _, e, _ in spec.columns] or [(cv, spec.cell) for cv in (col_values if cols_axis else (None,))]
            for cv, expr in plan:
                values: dict[str, Scalar] = {**fixed, spec.rows: rv}
                if spec.cols and cv is not None:
                    values[spec.cols] = cv
                assert expr is not None
                if seeds is not None:
                    per_seed = [_cell(index.get(tuple(sorted((k, value_key(v)) for k, v in {**values, SEED_AXIS: s}
                                                             .items()))), stored, expr, spec.format)
                                for s in seeds.values]
                    cell = _seed_cell(per_seed, spec.format)
                else:
                    rec = index.get(tuple(sorted((k, value_key(v)) for k, v in values.items())))
                    cell = _cell(rec, stored, expr, spec.format)
                if cell.status in ("error", "failed") and cell.note:
                    where = ", ".join(f"{k}={value_key(v)}" for k, v in values.items())
                    notes.append(f"{where}: {cell.text}: {cell.note}")
                cells.append(cell)
            rows.append((rows_axis.label_of(rv), cells))
        refs = [ref for _, _, ref in spec.columns]
        if any(ref is not None for ref in refs):
            rows.append((spec.reference or "reference", [
                Cell("—", status="missing") if ref is None else Cell(format_value(ref, spec.format), ref) for ref in refs
            ]))
        corner = rows_axis.label + (f" \\ {cols_axis.label}" if cols_axis else "")
        out.append(Grid(spec.title, subtitle, corner, columns, rows, notes))
        if spec.published:
            out.append(_comparison(spec, rows_axis, out[-1], fixed))
    return out


def _comparison(spec: TableSpec, rows_axis: Any, grid: Grid, fixed: Mapping[str, Scalar]) -> Grid:
    """The published table beside ccbench's, cell by cell: "ccbench vs published (error)", the RMS
    error of each column and of all cells, and the window (expression) each ccbench cell covers."""
    ours = {value_key(rv): cells for rv, (_, cells) in zip(rows_axis.values, grid.rows)}
    ncols = len(grid.columns)
    rows: list[tuple[str, list[Cell]]] = []
    errs: list[list[float]] = [[] for _ in range(ncols)]
    for key, pub in spec.published:
        cells = []
        for j, (mine, theirs) in enumerate(zip(ours.get(key, []), pub)):
            if theirs is None:
                cells.append(Cell("—", status="missing"))
            elif mine.value is None:
                cells.append(Cell(f"{mine.text} vs {format_value(theirs, spec.format)}", status=mine.status))
            else:
                err = mine.value - theirs
                errs[j].append(err)
                sign = "+" if err >= 0 else ""
                text = f"{mine.text} vs {format_value(theirs, spec.format)} ({sign}{format_value(err, spec.format)})"
                cells.append(Cell(text, err))
        rows.append((rows_axis.label_of(rows_axis.find(key)), cells))

    def rms(xs: Sequence[float]) -> float | None:
        return math.sqrt(sum(x * x for x in xs) / len(xs)) if xs else None

    col_rms = [rms(e) for e in errs]
    rows.append(("RMS error", [Cell("—", status="missing") if r is None else Cell(format_value(r, spec.format), r)
                               for r in col_rms]))
    every = [x for e in errs for x in e]
    total = rms(every)
    captions = [f"Published: {spec.published_source}." if spec.published_source else "Published values from the suite file."]
    captions.append("Overall RMS error over " + (f"{len(every)} cells: {format_value(total, spec.format)}"
                                                  if total is not None else "no cells (no finished runs)"))
    if spec.columns:
        captions += [f"Window of {label}: {expr.text}" for label, expr, _ in spec.columns]
    elif spec.cell is not None:
        captions.append(f"Each cell: {spec.cell.text}")
    if fixed:
        captions.append("For " + ", ".join(f"{k} = {value_key(v)}" for k, v in fixed.items()))
    return Grid(f"{spec.title}: ccbench vs published", grid.subtitle, grid.corner, list(grid.columns), rows,
                captions=captions, rms=total)


def _runs_grid(suite: Suite, records: Sequence[RunRecord], stored: StoredRuns,
               root: Path, progress: Progress) -> tuple[Grid, list[dict[str, str]]]:
    """One row per run: axis values, status, the run_columns that have a value in some run, the suite's columns."""
    every = run_columns(_readable([stored[r.key] for r in records if r.key in stored]))
    values: dict[str, dict[str, float | None]] = {c.title: {} for c in every}
    for rec in records:
        for c in every:
            values[c.title][rec.key] = _run_value(c, stored.get(rec.key))
        progress.step(f"run {rec.key}")
    builtin = [c for c in every if any(v is not None for v in values[c.title].values())
               and (c.same_as is None or values[c.title] != values[c.same_as])]
    columns = ([a.label for a in suite.axes] + ["status"] + [c.title for c in builtin]
               + [c.title for c in suite.report.columns] + ["wall (s)"])
    rows, links, notes = [], [], []
    for n, rec in enumerate(records, 1):
        cells = [Cell(suite.axis(k).label_of(v) if any(a.name == k for a in suite.axes) else value_key(v),
                      status="label") for k, v in rec.values.items()]
        status = "ok (earlier sweep)" if rec.reused and rec.status == "ok" else rec.status
        if rec.status == "pending":
            status = "not run"
        cells.append(Cell(status, status=rec.status if rec.status != "ok" else "label"))
        for b in builtin:
            if rec.key not in stored:
                cells.append(_cell(rec, stored, None, None))
                continue
            v = values[b.title][rec.key]
            cells.append(Cell("—", status="missing") if v is None else Cell(format_value(v, b.format), v))
        for c in suite.report.columns:
            cell = _cell(rec, stored, c.cell, c.format)
            if cell.status == "error":
                notes.append(f"run {n} ({rec.key}), {c.title}: {cell.note}")
            cells.append(cell)
        cells.append(Cell(format_value(rec.wall_s, "{:.2f}") if rec.wall_s is not None else "—", rec.wall_s))
        rows.append((str(n), cells))
        pngs = {name: f"{rec.dir}/{name}.png" for name in RUN_PLOTS if (root / rec.dir / f"{name}.png").is_file()}
        page = {"page": f"{rec.dir}/{PAGE_FILE}"} if (root / rec.dir / PAGE_FILE).is_file() else {}
        links.append({"run": rec.dir, **page, **pngs})
    legend = legend_of(builtin) + [f"{c.title}: the suite's expression {c.cell}" for c in suite.report.columns]
    if stored and not any(name in row for row in links for name in RUN_PLOTS):
        legend.append(f"per-run plots: none drawn; `ccbench plot {root}` draws each run's timeseries.png and links it here")
    return Grid("Runs", "", "#", columns, rows, notes, legend), links


def _readable(runs: Sequence[StoredRun]) -> list[StoredRun]:
    """The runs whose summary can be read (a damaged run directory is left out, not fatal)."""
    out = []
    for run in runs:
        try:
            run.summary
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out.append(run)
    return out


def _damaged() -> tuple[type[Exception], ...]:
    """What reading a damaged run directory raises: Polars' errors too once a table has been read
    (Polars is imported for the first read, so before it nothing can raise them)."""
    pl = sys.modules.get("polars")
    base: tuple[type[Exception], ...] = (OSError, KeyError, TypeError, ValueError)
    return base if pl is None else (*base, pl.exceptions.PolarsError)


def _run_value(column: RunColumn, run: StoredRun | None) -> float | None:
    if run is None:
        return None
    try:
        return column.value(run)
    except _damaged():
        return None  # a damaged run directory shows "—" rather than breaking the report


#: One cross-run figure to draw: its name, its file, and what it shows, as plain data (a worker
#: process draws it): (label, run directory) pairs, or for the seed box (label, run directories).
FigureJob = tuple[str, Path, list[tuple[str, Any]]]


def _plots(suite: Suite, records: Sequence[RunRecord], stored: Mapping[str, StoredRun], root: Path) -> list[FigureJob]:
    """The cross-run PNGs the suite asks for (plots/ is made for them)."""
    runs = [(run_label(suite, r.values), stored[r.key].dir) for r in records if r.key in stored]
    if not runs or not suite.report.suite_plots:
        return []
    out_dir = root / PLOTS_DIR
    out_dir.mkdir(exist_ok=True)
    todo: list[FigureJob] = [(name, out_dir / f"{name}.png", runs) for name in suite.report.suite_plots
                             if name != SEED_BOX]
    groups = _seed_groups(suite, records, stored) if SEED_BOX in suite.report.suite_plots else []
    if groups:
        todo.append((SEED_BOX, out_dir / f"{SEED_BOX}.png", [(label, [r.dir for r in g]) for label, g in groups]))
    return todo


def _figure_data(suite: Suite, records: Sequence[RunRecord], stored: Mapping[str, StoredRun],
                 jobs: int = 1) -> dict[str, Any]:
    """The cross-run figures' data: each finished run reduced once (its tables are read once for all
    figures and then dropped), labelled with its number in the Runs table.

    ``jobs`` runs are reduced at a time in threads: reading Parquet and sorting samples release the
    GIL, and threads need no worker processes (whose start imports matplotlib).
    """
    from concurrent.futures import ThreadPoolExecutor

    from ccbench.report.suite_figures import figures_data

    todo = [(r, stored[r.key]) for r in records if r.key in stored]
    if jobs > 1 and len(todo) > 1:
        with ThreadPoolExecutor(min(jobs, len(todo))) as pool:
            reduced = list(pool.map(_reduce, [run for _, run in todo]))
    else:
        reduced = [_reduce(run) for _, run in todo]
    runs = [(run_label(suite, r.values), st) for (r, _), st in zip(todo, reduced) if st is not None]
    by_dir = {run.dir: st for (_, run), st in zip(todo, reduced) if st is not None}
    seeds = [(label, [by_dir[run.dir] for run in group if run.dir in by_dir])
             for label, group in _seed_groups(suite, records, stored)]
    return figures_data(runs, seeds)


def _reduce(run: StoredRun) -> dict[str, Any] | None:
    """One run's statistics for the figures, or None for a damaged run directory (left out, as of the tables)."""
    from ccbench.report.suite_figures import run_stats

    if not _readable([run]):
        return None
    try:
        with run.pinned():
            return run_stats(run)
    except _damaged():
        return None
    finally:
        run.forget()


def _draw_all(todo: Sequence[FigureJob], jobs: int, progress: Progress) -> None:
    """Draw each figure, ``jobs`` at a time, a progress step as each file is written.

    More than one at a time runs in worker processes (:func:`ccbench.core.workers.in_workers`),
    which have matplotlib and Polars imported already, so this process never
    imports matplotlib; each worker holds one figure's data.
    """
    for (name, _, _), _ in in_workers(draw_figure, todo, jobs):
        progress.step(f"plot {name}")


def draw_figure(job: FigureJob) -> Path:
    """Draw one cross-run figure into its file (replaced whole), reading the runs from their directories."""
    from ccbench.report.suite_plots import PLOTS, seed_box

    name, path, shows = job
    if name == SEED_BOX:
        fig = seed_box([(label, [StoredRun(Path(d)) for d in dirs]) for label, dirs in shows])
    else:
        fig = PLOTS[name]([(label, StoredRun(Path(d))) for label, d in shows])
    save_figure(fig, path, dpi=100)
    return path


def _seed_groups(suite: Suite, records: Sequence[RunRecord],
                 stored: Mapping[str, StoredRun]) -> list[tuple[str, list[StoredRun]]]:
    """(configuration label, its finished runs over the seeds), for a suite with a seed axis of 2+ values."""
    seeds = next((a for a in suite.axes if a.name == SEED_AXIS), None)
    if seeds is None or len(seeds.values) < 2:
        return []
    groups: dict[str, list[StoredRun]] = {}
    for r in records:
        label = run_label(suite, {k: v for k, v in r.values.items() if k != SEED_AXIS})
        groups.setdefault(label, [])
        if r.key in stored:
            groups[label].append(stored[r.key])
    return list(groups.items())


def _meta(data: Mapping[str, Any], manifest: Manifest, stored: Mapping[str, StoredRun]) -> list[tuple[str, str]]:
    seeds = sorted({s["seed"] for r in stored.values() if isinstance((s := r.summary).get("seed"), int)})
    counts = {k: sum(r.status == k for r in manifest.runs) for k in ("ok", "failed", "pending")}
    reused = sum(r.reused and r.status == "ok" for r in manifest.runs)
    walls = [r.wall_s for r in manifest.runs if r.wall_s is not None]
    sim = sum(float(r.summary.get("duration_s") or 0.0) for r in stored.values())
    runs = f"{len(manifest.runs)}: {counts['ok']} ok"
    if reused:
        runs += f" ({reused} from an earlier sweep)"
    runs += f", {counts['failed']} failed"
    if counts["pending"]:
        runs += f", {counts['pending']} not run"
    meta = [
        ("suite", f"{data.get('suite')} ({data.get('suite_file')})"),
        ("ccbench", str(data.get("ccbench_version"))),
        ("git commit", data.get("git_commit") or "none (not run from a git checkout)"),
        ("started", f"{data.get('started')}, finished {data.get('finished') or '—'}"
         + (" (interrupted)" if data.get("interrupted") else "")),
        ("wall time", f"{_secs(data.get('wall_s'))} for the sweep; {_secs(sum(walls))} in runs "
                      f"(simulate and save); {sim:g} s simulated"),
        ("executor", f"{data.get('executor')}; Python {data.get('python')} on {data.get('platform')}"),
        ("runs", runs),
        ("seeds", ", ".join(map(str, seeds)) or "—"),
    ]
    if data.get("set"):
        meta.append(("--set", ", ".join(data["set"])))
    for a in data.get("axes", []):
        meta.append((f"axis {a['name']}", f"{a.get('label', a['name'])}: "
                     + ", ".join(a.get("labels", {}).get(value_key(v), value_key(v)) for v in a.get("values", []))))
    return meta


def _secs(x: Any) -> str:
    return f"{float(x):.1f} s" if isinstance(x, (int, float)) else "—"


# --- Markdown -----------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]], *, numbers: bool = True) -> str:
    """A pipe table: the first column left-aligned, the others right-aligned if ``numbers``."""
    out = ["| " + " | ".join(_md_escape(h) for h in header) + " |",
           "|" + "|".join([":---"] + ["---:" if numbers else ":---"] * (len(header) - 1)) + "|"]
    out += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    if report.description:
        lines += [report.description, ""]
    lines += [_md_table(["", ""], [[f"**{k}**", v] for k, v in report.meta], numbers=False), ""]
    for g in report.tables:
        lines += [f"## {g.title}" + (f" ({g.subtitle})" if g.subtitle else ""), ""]
        lines += [_md_table([g.corner, *g.columns], [[label, *(c.text for c in cells)] for label, cells in g.rows]), ""]
        lines += [f"{c}  " for c in g.captions] + ([""] if g.captions else [])
        lines += [f"- {n}" for n in g.notes] + ([""] if g.notes else [])
    if report.figures and report.figures["charts"]:
        lines += ["## Figures", "", "The cross-run figures are drawn in [report.html](report.html) "
                  f"({', '.join(c['id'] for c in report.figures['charts'])}).", ""]
    if report.plots:
        lines += ["## Plots", ""]
        for _, title, path in report.plots:
            lines += [f"### {title}", "", f"![{title}]({PLOTS_DIR}/{path.name})", ""]
    g = report.runs
    lines += ["## Runs", ""]
    rows = []
    for (label, cells), links in zip(g.rows, report.run_links):
        link_text = " ".join(f"[{k}]({v})" for k, v in links.items())
        rows.append([label, *(c.text for c in cells), link_text])
    lines += [_md_table([g.corner, *g.columns, "files"], rows), ""]
    lines += [f"- {n}" for n in g.notes] + ([""] if g.notes else [])
    if g.legend:
        lines += ["Columns:", ""] + [f"- {x}" for x in g.legend] + [""]
    if report.errors:
        lines += ["## Failed runs", ""]
        for key, err in report.errors:
            lines += [f"### {key}", "", "```", err, "```", ""]
    return "\n".join(lines)


# --- HTML ---------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 80em;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e4e4e4; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #999; white-space: normal; vertical-align: bottom; }
table.meta td { text-align: left; white-space: normal; } table.meta td:first-child { font-weight: 600; }
td.failed, td.error { color: #b00020; font-weight: 600; } td.pending, td.missing { color: #888; }
td.label { text-align: left; } .scroll { overflow-x: auto; }
.sub { color: #555; font-weight: normal; font-size: 0.8em; }
ul.notes { color: #b00020; font-size: 0.9em; }
p.legend, ul.legend { color: #444; font-size: 0.9em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figure.chart { margin: 0.8em 0; } .uplot .u-title { font-size: 1em; font-weight: 600; }
.missing { background: #fff3cd; border: 1px solid #e0c46c; padding: 0.6em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
input.filter { margin-top: 0.4em; padding: 0.2em 0.4em; min-width: 16em; }
th.sort { cursor: pointer; } th[aria-sort=ascending]::after { content: " ▲"; }
th[aria-sort=descending]::after { content: " ▼"; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html_cell(c: Cell) -> str:
    title = f' title="{_e(c.note)}"' if c.note else ""
    # the value itself, for sorting: the text may carry a unit, a ± or a thousands separator
    value = f' data-v="{c.value!r}"' if isinstance(c.value, (int, float)) and math.isfinite(c.value) else ""
    return f'<td class="{_e(c.status)}"{title}{value}>{_e(c.text)}</td>'


def _html_grid(g: Grid, extra: list[str] | None = None) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in [g.corner, *g.columns]) + ("<th>files</th>" if extra else "")
    body = []
    for i, (label, cells) in enumerate(g.rows):
        tail = f"<td>{extra[i]}</td>" if extra else ""
        body.append(f"<tr><th>{_e(label)}</th>{''.join(_html_cell(c) for c in cells)}{tail}</tr>")
    notes = "".join(f"<li>{_e(n)}</li>" for n in g.notes)
    captions = "".join(f'<p class="sub">{_e(c)}</p>' for c in g.captions)
    return ('<input type="search" class="filter" placeholder="filter rows" aria-label="filter rows">'
            f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            + captions + (f'<ul class="notes">{notes}</ul>' if notes else ""))


def _html_head(title: str, description: str, *, css: bool = False) -> list[str]:
    """A report page's start: document head (with ``css``, the charting library's), title and description."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)} — ccbench report</title>",
        f'<link rel="stylesheet" href="{ASSETS_DIR}/uPlot.min.css">' if css else "",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    return parts + ([f"<p>{_e(description)}</p>"] if description else [])


def _html_foot() -> list[str]:
    """A report page's end: the tables' sorting and filtering script (inline: the page stays one file)."""
    script = (JS_DIR / "tables.js").read_text(encoding="utf-8")
    return [f"<script>{script}</script>", "</body></html>"]


def _html_tables(grids: Sequence[Grid], heading: str) -> list[str]:
    """Each table under a heading (``h2``, ``h3``) with its subtitle."""
    out = []
    for g in grids:
        sub = f' <span class="sub">({_e(g.subtitle)})</span>' if g.subtitle else ""
        out += [f"<{heading}>{_e(g.title)}{sub}</{heading}>", _html_grid(g)]
    return out


def to_html(report: Report, root: Path, *, assets: bool = True) -> str:
    """The report page; its figures load the charting library from ``assets/`` beside it (``assets``: there)."""
    charts = bool(report.figures and report.figures["charts"])
    parts = _html_head(report.title, report.description, css=assets and charts)
    meta_rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in report.meta)
    parts.append(f'<table class="meta"><tbody>{meta_rows}</tbody></table>')
    parts += _html_tables(report.tables, "h2")
    if charts:
        data = json.dumps(report.figures, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        parts += ["<h2>Figures</h2>",
                  '<p class="legend">Hover a figure to read out the run under the cursor (box plots: median and '
                  "quartiles; runs are numbered as in the Runs table); drag to zoom, double-click to zoom out; "
                  "click a legend entry to hide or show it.</p>",
                  '<div id="suite-charts"></div>',
                  f'<script src="{ASSETS_DIR}/uPlot.iife.min.js"></script>' if assets else "",
                  f'<script type="application/json" id="ccbench-suite-data">{data}</script>',
                  f"<script>{(JS_DIR / 'suite.js').read_text(encoding='utf-8')}</script>"]
    if report.plots:
        parts.append("<h2>Plots</h2>")
        for name, title, path in report.plots:
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(f'<figure id="plot-{_e(name)}"><figcaption>{_e(title)}</figcaption>'
                         f'<img alt="{_e(title)}" src="data:image/png;base64,{data}"></figure>')
    links = [" ".join(f'<a href="{_e(v)}">{_e(k)}</a>' for k, v in row.items()) for row in report.run_links]
    parts += ["<h2>Runs</h2>", _html_grid(report.runs, links)]
    if report.runs.legend:
        items = "".join(f"<li>{_e(x)}</li>" for x in report.runs.legend)
        parts.append(f'<p class="legend">Columns:</p><ul class="legend">{items}</ul>')
    if report.errors:
        parts.append("<h2>Failed runs</h2>")
        for key, err in report.errors:
            parts.append(f'<h3 id="{_e(key)}">{_e(key)}</h3><pre>{_e(err)}</pre>')
    parts += _html_foot()
    return "\n".join(parts) + "\n"
