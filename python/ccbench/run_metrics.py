"""The per-run columns of a suite report's Runs table, and what each one means.

Every column is a function of one stored run (``summary`` and ``table(name)``,
see :class:`ccbench.report.StoredRun`) giving one number or None (shown as
"—"). They are defined so that they cannot mislead across runs:

- one window: totals are taken over the same span for every flow, from the
  end of the warm-up to the end of the run, from the cumulative counters of
  the Parquet series (``delivered_bytes``, ``drops``), never by adding
  per-flow means over different active periods;
- one kind: TCP columns take TCP flows only; media (SCReAM) flows get their
  own columns; Jain's index is over TCP flows and None with fewer than two;
- after the warm-up: counters are differences between the last sample and
  the last sample at or before the warm-up's end.

:data:`RUN_COLUMNS` lists them in table order with the caption printed under
the table (:func:`legend`). Columns without a value in any run are left out
of a report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

__all__ = ["RUN_COLUMNS", "RunColumn", "counter_after_warmup", "legend", "tcp_jain", "tcp_jain_of",
           "window_goodput_mbps"]


class RunData(Protocol):
    @property
    def summary(self) -> Mapping[str, Any]: ...

    def table(self, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame: ...


@dataclass(frozen=True)
class RunColumn:
    title: str
    value: Callable[[RunData], float | None]
    format: str | None
    meaning: str
    same_as: str | None = None  # left out where it equals this column in every run (TCP-only suites)


def _window(run: RunData) -> tuple[float, float]:
    s = run.summary
    return float(s.get("warmup_s") or 0.0), float(s.get("duration_s") or 0.0)


def counter_after_warmup(run: RunData, table: str, key: str, counter: str,
                         ids: set[int] | None = None) -> float | None:
    """Sum over ids (all, or ``ids``) of a cumulative counter's growth from the warm-up's end to the run's end.

    The start value is the last sample at or before the warm-up's end (0
    without one: the counters start at 0). None if the table has no samples.
    """
    import numpy as np
    import polars as pl

    warmup, _ = _window(run)
    df = run.table(table, ["time_s", key, counter])
    if df.is_empty():
        return None
    # NumPy rather than Polars group-bys and a join: the tables are small and
    # each Polars query costs about a millisecond, which a report pays per
    # run and column.
    keys, times = df[key].to_numpy(), df["time_s"].to_numpy()
    values = df[counter].cast(pl.Float64).to_numpy()
    if ids is not None:
        chosen = np.isin(keys, sorted(ids))
        if not chosen.any():
            return None
        keys, times, values = keys[chosen], times[chosen], values[chosen]
    order = np.lexsort((times, keys))  # by key, then time
    keys, times, values = keys[order], times[order], values[order]
    end = values[_last_of_each(keys)].sum()
    early = times <= warmup + 1e-9
    start = values[early][_last_of_each(keys[early])].sum() if early.any() else 0.0
    return float(end - start)


def _last_of_each(sorted_keys: Any) -> Any:
    """Mask of the last row of each run of equal keys."""
    import numpy as np

    return np.append(sorted_keys[1:] != sorted_keys[:-1], True)


def window_goodput_mbps(run: RunData, kinds: tuple[str, ...] | None = None) -> float | None:
    """Payload delivered by the flows (of ``kinds``, or all) from the warm-up's end to the end, Mbit/s."""
    warmup, duration = _window(run)
    if duration - warmup <= 0:
        return None
    flows = run.summary.get("flows", []) or []
    chosen = {i for i, f in enumerate(flows) if kinds is None or f.get("kind") in kinds}
    if not chosen:
        return None
    delivered = counter_after_warmup(run, "flow_series", "flow", "delivered_bytes", ids=chosen)
    return None if delivered is None else delivered * 8 / (duration - warmup) / 1e6


def _of_kind(run: RunData, kind: str) -> list[Mapping[str, Any]]:
    return [f for f in run.summary.get("flows", []) or [] if f.get("kind") == kind]


def _stat(entries: Sequence[Mapping[str, Any]], field: str, stat: str) -> list[float]:
    return [float(v) for e in entries if isinstance(v := (e.get(field) or {}).get(stat), (int, float))]


def _active(summary: Mapping[str, Any], flow: Mapping[str, Any]) -> bool:
    """Whether a flow was active for some time after the warm-up (it started before it stopped)."""
    warmup = float(summary.get("warmup_s") or 0.0)
    duration = float(summary.get("duration_s") or 0.0)
    start = flow.get("start_s")
    stop = flow.get("stop_s")
    start = float(start) if isinstance(start, (int, float)) else 0.0
    stop = float(stop) if isinstance(stop, (int, float)) else duration
    return max(start, warmup) < min(stop, duration)


def tcp_jain_of(summary: Mapping[str, Any]) -> float | None:
    """Jain's index (Σx)² / (n Σx²) of the goodputs of the TCP flows active after the warm-up.

    None with fewer than two such flows: one flow is not "perfectly fair".
    """
    xs = [float(f["goodput_mbps"]) for f in summary.get("flows", []) or []
          if f.get("kind") == "tcp" and isinstance(f.get("goodput_mbps"), (int, float)) and _active(summary, f)]
    if len(xs) < 2:
        return None
    square = sum(x * x for x in xs)
    return None if square == 0 else sum(xs) ** 2 / (len(xs) * square)


def tcp_jain(run: RunData) -> float | None:
    """:func:`tcp_jain_of` a run's summary."""
    return tcp_jain_of(run.summary)


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


def _links(run: RunData) -> list[Mapping[str, Any]]:
    return list(run.summary.get("links", []) or [])


RUN_COLUMNS: tuple[RunColumn, ...] = (
    RunColumn("goodput (Mbit/s)", window_goodput_mbps, None,
              "payload delivered by all flows from the end of the warm-up to the end of the run, over that window"),
    RunColumn("TCP goodput (Mbit/s)", lambda r: window_goodput_mbps(r, ("tcp",)), None,
              "the same for the TCP flows only", same_as="goodput (Mbit/s)"),
    RunColumn("media goodput (Mbit/s)", lambda r: window_goodput_mbps(r, ("media",)), None,
              "the same for the media (SCReAM) flows only", same_as="goodput (Mbit/s)"),
    RunColumn("TCP Jain", tcp_jain, "{:.3f}",
              "Jain's fairness index of the goodputs (each over its active time) of the TCP flows active "
              "after the warm-up; — with fewer than 2"),
    RunColumn("TCP RTT p99 (ms)", lambda r: _max(_stat(_of_kind(r, "tcp"), "rtt_ms", "p99")), None,
              "highest 99th percentile of the TCP flows' RTT samples after the warm-up"),
    RunColumn("media RTT p99 (ms)", lambda r: _max(_stat(_of_kind(r, "media"), "rtt_ms", "p99")), None,
              "highest 99th percentile of the media flows' RTT (SCReAM's samples) after the warm-up"),
    RunColumn("ping p99 (ms)", lambda r: _max(_stat(r.summary.get("probes", []) or [], "rtt_ms", "p99")), None,
              "highest 99th percentile ping RTT after the warm-up"),
    RunColumn("queue p99 (ms)", lambda r: _max(_stat(_links(r), "sojourn_ms", "p99")), None,
              "highest 99th percentile queue delay of any link after the warm-up"),
    RunColumn("util", lambda r: _max([float(x["utilization"]) for x in _links(r)
                                      if isinstance(x.get("utilization"), (int, float))]), "{:.0%}",
              "highest link utilization after the warm-up"),
    RunColumn("drops", lambda r: counter_after_warmup(r, "link_series", "link", "drops"), "{:.0f}",
              "packets dropped on all links from the end of the warm-up to the end of the run"),
)


def legend(columns: Sequence[RunColumn]) -> list[str]:
    """One line per column: ``title: meaning``."""
    return [f"{c.title}: {c.meaning}" for c in columns]
