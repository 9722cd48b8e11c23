"""The per-run columns of a suite report's Runs table, and what each one means.

Every column is a function of one stored run (``summary`` and ``table(name)``,
see :class:`ccbench.report.suite.StoredRun`) giving one number or None (shown as
"—"). They are defined so that they cannot mislead across runs:

- one window: totals are taken over the same span for every flow, from the
  end of the warm-up to the end of the run, from the engine's counters in the
  summary (``delivered_after_warmup_bytes``, a link's ``drops``; for a run
  saved before the summary had the first, the cumulative counters of the
  Parquet series), never by adding per-flow means over different active
  periods;
- one kind: TCP columns take TCP flows only; media (SCReAM) flows get their
  own columns; Jain's index is over TCP flows and None with fewer than two;
- after the warm-up: the engine snapshots its counters at the warm-up's end
  (from the series: the last sample at or before it).

:data:`RUN_COLUMNS` lists them in table order with the caption printed under
the table (:func:`legend`); :func:`run_columns` adds, for the runs of one
table, a queue-delay column per queue, named after its link, the bottleneck
first. A queue is a link something holds to a rate (its line rate, a shaping
qdisc or a grant gate): a stage that only delays (a netem ``delay`` with no
``rate``) is none, since its "sojourn" is that delay. The bottleneck is the
busiest queue: its utilization, against its capacity, is the highest.
Columns without a value in any run are left out of a report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import polars as pl

__all__ = ["RUN_COLUMNS", "RunColumn", "bottleneck", "counter_after_warmup", "delivered_after_warmup",
           "drops_after_warmup", "is_queue", "legend", "queues", "run_columns", "tcp_jain", "tcp_jain_of",
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


def delivered_after_warmup(run: RunData, ids: set[int]) -> float | None:
    """Payload bytes the flows ``ids`` delivered from the warm-up's end to the run's end.

    The engine's own counts (the summary's ``delivered_after_warmup_bytes``, exact at the warm-up's
    instant); from the flow series for a run saved before the summary had them.
    """
    flows = run.summary.get("flows", []) or []
    counts = [flows[i].get("delivered_after_warmup_bytes") for i in sorted(ids) if 0 <= i < len(flows)]
    if counts and all(isinstance(c, int) for c in counts):
        return float(sum(counts))
    return counter_after_warmup(run, "flow_series", "flow", "delivered_bytes", ids=ids)


def drops_after_warmup(run: RunData) -> float | None:
    """Packets dropped on all links after the warm-up: the summary's per-link counts (which, as the
    link series, leave out a network's internal links); None for a run without links."""
    links = run.summary.get("links", []) or []
    if not links:
        return None
    drops = [link.get("drops") for link in links]
    if all(isinstance(d, int) for d in drops):
        return float(sum(drops))
    return counter_after_warmup(run, "link_series", "link", "drops")


def window_goodput_mbps(run: RunData, kinds: tuple[str, ...] | None = None) -> float | None:
    """Payload delivered by the flows (of ``kinds``, or all) from the warm-up's end to the end, Mbit/s."""
    warmup, duration = _window(run)
    if duration - warmup <= 0:
        return None
    flows = run.summary.get("flows", []) or []
    chosen = {i for i, f in enumerate(flows) if kinds is None or f.get("kind") in kinds}
    if not chosen:
        return None
    delivered = delivered_after_warmup(run, chosen)
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


def is_queue(link: Mapping[str, Any]) -> bool:
    """Whether a summary.json link holds a queue rather than only delaying (``pure_delay``).

    Summaries written before that field: a netem stage without a line rate
    is taken as a delay."""
    if "pure_delay" in link:
        return not link["pure_delay"]
    return not (link.get("qdisc") == "netem" and link.get("rate_mbps") is None)


def queues(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The links of a summary that are queues, in the scenario's order."""
    return [x for x in summary.get("links", []) or [] if is_queue(x)]


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def bottleneck(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The busiest queue: the highest utilization (which the core measures against the link's
    capacity, the slower of its line rate and its shaper); on a tie the lower mean capacity, then
    the first. None without a queue with a utilization."""
    best: tuple[float, float] | None = None
    found = None
    for x in queues(summary):
        util = _number(x.get("utilization"))
        if util is None:
            continue
        capacity = _number(x.get("rate_mean_mbps"))
        key = (util, -(capacity if capacity is not None else math.inf))
        if best is None or key > best:
            best, found = key, x
    return found


def _queue_p99(link_id: str) -> Callable[[RunData], float | None]:
    def value(run: RunData) -> float | None:
        link = next((x for x in queues(run.summary) if x.get("id") == link_id), None)
        return None if link is None else _number((link.get("sojourn_ms") or {}).get("p99"))
    return value


def _bottleneck_util(run: RunData) -> float | None:
    b = bottleneck(run.summary)
    return None if b is None else _number(b.get("utilization"))


def queue_columns(runs: Sequence[RunData]) -> list[RunColumn]:
    """A "queue p99 ID (ms)" column per queue of these runs: the queue that is the bottleneck in
    the most runs first, then the others in the scenarios' order."""
    order: dict[str, int] = {}
    wins: dict[str, int] = {}
    for run in runs:
        for x in queues(run.summary):
            order.setdefault(str(x.get("id")), len(order))
        b = bottleneck(run.summary)
        if b is not None:
            wins[str(b.get("id"))] = wins.get(str(b.get("id")), 0) + 1
    out = []
    for link_id in sorted(order, key=lambda i: (-wins.get(i, 0), order[i])):
        n = wins.get(link_id, 0)
        role = ("the bottleneck in every run" if n == len(runs) else
                f"the bottleneck in {n} of {len(runs)} runs" if n else "never the bottleneck")
        out.append(RunColumn(f"queue p99 {link_id} (ms)", _queue_p99(link_id), None,
                             f"99th percentile queue delay at link {link_id} after the warm-up ({role})"))
    return out


def run_columns(runs: Sequence[RunData]) -> list[RunColumn]:
    """:data:`RUN_COLUMNS` with :func:`queue_columns` of these runs before "util"."""
    i = next(k for k, c in enumerate(RUN_COLUMNS) if c.title == "util")
    return [*RUN_COLUMNS[:i], *queue_columns(runs), *RUN_COLUMNS[i:]]


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
    RunColumn("util", _bottleneck_util, "{:.0%}",
              "the bottleneck's utilization after the warm-up: bits sent over its capacity, the rate that "
              "limits it (a shaping qdisc's rate, such as Cake's bandwidth or an HTB rate, where it is below "
              "the line rate; a rate schedule's rate in force)"),
    RunColumn("drops", drops_after_warmup, "{:.0f}",
              "packets dropped on all links from the end of the warm-up to the end of the run"),
)


def legend(columns: Sequence[RunColumn]) -> list[str]:
    """One line per column: ``title: meaning``."""
    return [f"{c.title}: {c.meaning}" for c in columns]
