"""Sweeps from Python and their results as one tidy Polars DataFrame.

Example (a notebook cell)::

    import ccbench
    df = ccbench.sweep("examples/cubic-fq_codel.toml",
                       axes={"links.bottleneck.rate": ["20Mbit", "50Mbit"],
                             "flows.cubic.count": [1, 2, 4]},
                       seeds=3, jobs=2, set=['duration="20s"'])
    df.group_by("rate", "count").agg(pl.col("goodput_mbps").mean())
    df = ccbench.load_suite("results/cubic-fq_codel-sweep")    # the same frame, read back later

:func:`sweep` builds a suite from a scenario and ``axes`` — a mapping from an
override key path (as ``--set`` takes it) to its values — runs it exactly as
``ccbench suite run`` does (a resumable directory of runs, worker processes
or Dask, a report) and returns :func:`load_suite` of its directory. An axis
is named after the last part of its key (``rate``, ``count``), or after the
whole key with ``_`` for ``.`` when two axes would share a name. ``seeds=N``
adds an axis ``seed`` with values 1..N (or give a list of seeds).

:func:`load_suite` reads a suite directory (``ccbench suite run`` or
:func:`sweep`) into one row per run × flow: the axis values as columns (one
column per axis, named after it), then ``run`` (the run's key), ``status``
("ok", "failed", "pending"), ``error``, ``seed``, and the flow's summary
fields flattened as :attr:`Result.flows` has them (``flow`` = its id,
``kind``, ``cc``, ``goodput_mbps``, ``rtt_p99_ms``, ...). A failed or pending
run has one row with null flow fields, so nothing disappears silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from ccbench.plan.suite import Scalar
from ccbench.plan.suite_file import parse_suite
from ccbench.simulate.api import read_source, toml_value
from ccbench.simulate.results import SUMMARY_FILE, _flatten, read_summary

__all__ = ["load_suite", "sweep"]


def sweep(
    scenario: str | os.PathLike[str],
    axes: Mapping[str, Sequence[Scalar]] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    jobs: int | None = None,
    dask: Any = None,
    out: str | os.PathLike[str] = "results",
    name: str | None = None,
    set: Iterable[str] = (),
    resume: bool = True,
    progress: bool = True,
    report: bool = True,
) -> pl.DataFrame:
    """Run ``scenario`` over every combination of ``axes`` (and ``seeds``) into ``out/<name>/``.

    ``name`` defaults to the scenario's name with ``-sweep``; ``resume``
    (default on) keeps runs already finished there with the same resolved
    scenario. Returns :func:`load_suite` of the directory. Raises
    ScenarioError (SuiteError) for a wrong axis, SweepInterrupted on Ctrl-C.
    """
    from ccbench.sweep.runner import run_suite

    text, path = read_source(scenario)
    base_name = _scenario_name(text) or (Path(path).stem if path else "scenario")
    suite_name = name or f"{base_name}-sweep"
    axis_list = [(key, list(values)) for key, values in (axes or {}).items()]
    if seeds is not None:
        seed_values = list(range(1, seeds + 1)) if isinstance(seeds, int) else [int(s) for s in seeds]
        axis_list.append(("seed", seed_values))
    suite_text = suite_toml(suite_name, str(path or "<scenario>"), axis_list)
    suite = parse_suite(suite_text, f"<sweep {suite_name}>", read_base=False)
    suite = replace(suite, base_text=text, base_file=str(path) if path else "<scenario>")
    result = run_suite(suite, out, jobs=jobs, resume=resume, dask=dask, set=list(set), progress=progress,
                       report=report)
    return load_suite(result.dir)


def axis_names(keys: Sequence[str]) -> list[str]:
    """Each key's last part, or the whole key with '_' for '.' where two last parts are the same."""
    last = [re.sub(r"[^A-Za-z0-9_-]", "_", k.split(".")[-1]) for k in keys]
    names = []
    for k, short in zip(keys, last):
        name = short if last.count(short) == 1 else re.sub(r"[^A-Za-z0-9_-]", "_", k)
        names.append(name if re.match(r"[A-Za-z_]", name) else f"_{name}")
    return names


def suite_toml(name: str, base: str, axes: Sequence[tuple[str, Sequence[Scalar]]]) -> str:
    """The suite file :func:`sweep` runs (stored in suite.json, so ``ccbench report`` can re-render it)."""
    lines = [f"name = {toml_value(name)}", f"description = {toml_value('ccbench.sweep of ' + base)}",
             f"base = {toml_value(base)}", ""]
    for axis_name, (key, values) in zip(axis_names([k for k, _ in axes]), axes):
        lines += ["[[axes]]", f"name = {toml_value(axis_name)}", f"key = {toml_value(key)}",
                  f"values = {toml_value(list(values))}", ""]
    return "\n".join(lines)


def _scenario_name(text: str) -> str | None:
    m = re.search(r'^\s*name\s*=\s*"([A-Za-z0-9][A-Za-z0-9._-]*)"', text, re.M)
    return m.group(1) if m else None


def load_suite(directory: str | os.PathLike[str]) -> pl.DataFrame:
    """A suite directory's runs as one tidy DataFrame: a row per run × flow (see the module docs)."""
    from ccbench.plan.manifest import read_manifest

    root = Path(directory)
    manifest = read_manifest(root)
    if "parts" in manifest.data:  # a suite of suites: its parts' frames, with a "part" column
        frames = [load_suite(root / name).with_columns(pl.lit(name).alias("part"))
                  for name in manifest.data["parts"] if (root / name / "suite.json").is_file()]
        return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(
            schema={"part": pl.String, "run": pl.String, "status": pl.String})
    axes = [a["name"] for a in manifest.data.get("axes", [])]
    rows: list[dict[str, Any]] = []
    for rec in manifest.runs:
        finished = (root / rec.dir / SUMMARY_FILE).is_file()
        status = "ok" if finished and rec.status != "failed" else ("failed" if rec.status == "failed" else "pending")
        head: dict[str, Any] = {a: rec.values.get(a) for a in axes}
        head.update(run=rec.key, status=status, error=rec.error)
        if status != "ok":
            rows.append({**head, "seed": None, "flow": None})
            continue
        summary = read_summary(root / rec.dir)
        head["seed"] = summary.get("seed")
        flows = summary.get("flows", []) or []
        if not flows:
            rows.append({**head, "flow": None})
        for f in flows:
            flat = _flatten(f)
            flat["flow"] = flat.pop("id", None)
            rows.append({**head, **{k: v for k, v in flat.items() if not isinstance(v, (dict, list))}})
    if not rows:
        return pl.DataFrame(schema={**{a: pl.String for a in axes}, "run": pl.String, "status": pl.String})
    df = pl.DataFrame(rows, infer_schema_length=None)
    return df.with_columns(pl.col(pl.Null).cast(pl.Float64)) if any(t == pl.Null for t in df.dtypes) else df
