"""Statistics of a suite's runs for its cross-run figures: box statistics, CDF samples, totals.

Shared by the matplotlib figures (:mod:`ccbench.report.suite_plots`) and the ones the
suite's web page draws (:mod:`ccbench.report.suite_figures`); no plotting library is
imported here, so a report that draws no PNG never imports matplotlib.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ccbench.core.arrays import quantiles

if TYPE_CHECKING:
    import polars as pl

__all__ = ["KIND_COLORS", "MAX_FLOW_BOXES", "ProjectedRun", "RunData", "Runs", "after_warmup", "box", "box_stats",
           "busiest_link", "flow_kind", "groups", "kind_color", "mean", "p99_latency", "read_table",
           "sorted_quantiles", "window_goodput"]

#: Colors of flow kinds: the congestion control of a TCP flow, or "ping".
KIND_COLORS = {
    "cubic": "tab:blue", "reno": "tab:orange", "bbr": "tab:green", "dctcp": "tab:red",
    "prague": "tab:purple", "scream": "tab:brown", "ping": "tab:gray", "udp": "tab:olive",
}
_SPARE = ["tab:pink", "tab:cyan", "darkgoldenrod", "teal", "indigo", "crimson"]


def kind_color(kind: str) -> str:
    """The color of a flow kind; unknown kinds get a stable spare color."""
    return KIND_COLORS.get(kind) or _SPARE[zlib.crc32(kind.encode()) % len(_SPARE)]

MAX_FLOW_BOXES = 6  # flows per run drawn as their own boxes; more are pooled by kind


class RunData(Protocol):
    @property
    def summary(self) -> Mapping[str, Any]: ...

    def table(self, name: str) -> pl.DataFrame: ...


Runs = Sequence[tuple[str, RunData]]


def flow_kind(flow: Mapping[str, Any]) -> str:
    return str(flow.get("cc") or flow.get("kind") or "tcp")


# --- samples ------------------------------------------------------------------------------------


def read_table(run: RunData, name: str, columns: Sequence[str]) -> pl.DataFrame:
    """Only ``columns`` of a run's table when the run can read a projection (StoredRun), else all."""
    try:
        return run.table(name, columns)  # type: ignore[call-arg]
    except TypeError:
        return run.table(name)


def after_warmup(df: pl.DataFrame, run: RunData) -> pl.DataFrame:
    import polars as pl

    warmup = float(run.summary.get("warmup_s") or 0.0)
    return df.filter(pl.col("time_s") >= warmup) if warmup > 0 and not df.is_empty() else df


def box_stats(values: np.ndarray, label: str) -> dict[str, Any] | None:
    arr = values[~np.isnan(values)]  # nulls became NaN on the way to NumPy
    if arr.size == 0:
        return None
    q05, q1, med, q3, q95 = quantiles(arr, [0.05, 0.25, 0.5, 0.75, 0.95])  # linear, as Polars' "linear"
    return box(label, (q05, q1, med, q3, q95), float(arr.mean()))


def box(label: str, quantiles: Sequence[float], mean: float) -> dict[str, Any]:
    """A box from its 5th, 25th, 50th, 75th and 95th percentiles and mean (matplotlib's bxp layout)."""
    q05, q1, med, q3, q95 = quantiles
    return {"label": label, "whislo": q05, "q1": q1, "med": med, "q3": q3, "whishi": q95, "mean": mean, "fliers": []}


def groups(run: RunData, table: str, key: str, value: str, entries: str) -> list[tuple[str, str, Any]]:
    """(name, kind, box statistics or None) per flow or probe of a run, or per kind when there are many flows.

    Reduced to statistics at once, so a report never holds every run's samples; the
    samples are split by id with one sort (a filter per flow took a Polars query each).
    """
    df = after_warmup(read_table(run, table, ["time_s", key, value]), run)
    items = run.summary.get(entries, []) or []
    kinds = [flow_kind(e) if entries == "flows" else "ping" for e in items]
    names = [str(e.get("id")) for e in items]
    if df.is_empty() or value not in df.columns:
        return []
    import polars as pl

    ids = df[key].cast(pl.Int64).fill_null(-1).to_numpy()
    values = df[value].cast(pl.Float64).to_numpy()
    if len(items) > MAX_FLOW_BOXES:
        order = list(dict.fromkeys(kinds))
        kind_of = np.array([order.index(k) for k in kinds] + [-1])  # ids outside the list: no kind
        ids = kind_of[np.where((ids >= 0) & (ids < len(items)), ids, len(items))]
        parts = split(ids, values, len(order))
        return [(f"{k} (all)", k, box_stats(parts[j], f"{k} (all)")) for j, k in enumerate(order)]
    parts = split(ids, values, len(items))
    return [(names[i], kinds[i], box_stats(parts[i], names[i])) for i in range(len(items))]


def split(ids: np.ndarray, values: np.ndarray, n: int) -> list[np.ndarray]:
    """``values`` of each id 0..n-1, in their original order."""
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], values[order]
    bounds = np.searchsorted(ids, np.arange(n + 1), side="left")
    return [values[bounds[i]:bounds[i + 1]] for i in range(n)]



def busiest_link(run: RunData) -> int | None:
    """Index of the run's bottleneck (:func:`ccbench.report.run_metrics.bottleneck`) among its links."""
    from ccbench.report.run_metrics import bottleneck

    summary = run.summary
    b = bottleneck(summary)
    return None if b is None else next(i for i, x in enumerate(summary.get("links", []) or []) if x is b)



def sorted_quantiles(xs: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """numpy's default (linear) quantiles of sorted ``xs``: a sort and 201 look-ups take a fifth of
    ``np.quantile``'s time on a million samples (a partition around each of 201 ranks)."""
    pos = probs * (xs.size - 1)
    lo = np.floor(pos).astype(np.intp)
    hi = np.minimum(lo + 1, xs.size - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)



def window_goodput(run: RunData, ids: set[int]) -> float:
    """Mbit/s of payload the flows ``ids`` delivered from the warm-up's end to the run's end."""
    from ccbench.report.run_metrics import delivered_after_warmup

    warmup = float(run.summary.get("warmup_s") or 0.0)
    duration = float(run.summary.get("duration_s") or 0.0)
    if duration <= warmup:
        return 0.0
    delivered = delivered_after_warmup(ProjectedRun(run), ids)
    return (delivered or 0.0) * 8 / (duration - warmup) / 1e6


class ProjectedRun:
    """A run whose ``table(name, columns)`` reads a projection when the run can, all columns otherwise."""

    def __init__(self, run: RunData) -> None:
        self.run = run

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.run.summary

    def table(self, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        df = read_table(self.run, name, columns) if columns is not None else self.run.table(name)
        return df.select([c for c in (columns or df.columns) if c in df.columns])



def p99_latency(run: RunData) -> float | None:
    probes = run.summary.get("probes", []) or []
    entries = probes or [f for f in run.summary.get("flows", []) or [] if f.get("kind") == "tcp"]
    values = [v for e in entries if isinstance(v := (e.get("rtt_ms") or {}).get("p99"), (int, float))]
    return max(values) if values else None


def mean(values: list[Any]) -> float:
    nums = [float(v) for v in values if isinstance(v, (int, float))]
    return sum(nums) / len(nums) if nums else 0.0
