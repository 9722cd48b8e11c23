"""Export a result directory as a flent data file (``<run>.flent.gz``).

The file is what flent 2.3.0 writes itself (data file format version 4): one
gzip'd JSON object with ``metadata``, ``x_values``, ``results`` and
``raw_values``, so ``flent -i run.flent.gz -p totals`` draws a ccbench run
with flent's own plots. The format is described in
``shared/reference/flent-format.md``; the section numbers below refer to it.

Which flent test (``metadata.NAME``)
------------------------------------
flent knows a run's series only through its test definition, so the run must
be given the name of a test whose series it can fill (§6). Without ``test=``
the shape of the run decides:

* only probes (pings), no TCP flow → ``ping``;
* one TCP flow → ``tcp_1up``;
* N ≥ 2 TCP flows, all on the same forward path → ``tcp_nup`` with
  ``TEST_PARAMETERS.upload_streams = N``. Flows on different forward paths are
  refused (no flent test fits); pass ``test="tcp_nup"`` to export them anyway.

Asked for explicitly: ``tcp_ndown`` / ``tcp_1down`` (the same flows labelled as
downloads: the simulator cannot know which end is the "client"),
``tcp_Nup`` / ``tcp_Ndown`` for N in 2, 4, 6, 8, 12 (exactly N flows),
``rrul`` (exactly 8 TCP flows and at least one probe) and ``ping``.

Series written per test
-----------------------
``tcp_1up``   ``TCP upload``, ``Ping (ms) ICMP``.
``tcp_nup``   ``TCP upload::1`` … ``::N`` (summary order), ``TCP upload avg``,
              ``TCP upload sum``, ``TCP upload fairness`` (Jain's index per
              step), ``Ping (ms) ICMP``. ``tcp_ndown``: the same with
              ``download``.
``rrul``      ``TCP upload|download BE|BK|CS5|EF``, their ``avg`` and ``sum``,
              ``TCP totals`` (sum of all 8), ``Ping (ms) ICMP``,
              ``Ping (ms) UDP EF|BK|BE`` and ``Ping (ms) avg`` (mean of the
              four latency series).
``ping``      ``Ping (ms) ICMP`` and ``Ping (ms) UDP``.

Every TCP series also gets the interpolated socket-stats sub-series
``<series>::tcp_cwnd``, ``::tcp_rtt``, ``::tcp_delivery_rate`` and
``::tcp_pacing_rate`` (left out when the flow has no such value at all).
ccbench has no RTT variance, so ``tcp_rtt_var`` is never written.

Probes are assigned to latency slots in this order: first the probes whose
DSCP (``flows[].dscp`` in the run's scenario.toml) matches the slot (rrul:
ICMP and UDP BE take DSCP 0 (CS0), UDP EF 46, UDP BK 8), then the remaining
probes in summary order. A slot no probe is left for repeats the data of the
first slot's probe (for ``ping`` with a single prober: ``Ping (ms) UDP`` is a
copy of ``Ping (ms) ICMP``), because flent's plots require every series; the
copy is recorded in ``metadata.CCBENCH.series`` and ``notes``. In the tcp
tests further probes become flent's extra pings ``Ping (ms) ICMP <id> (extra)``
(``TEST_PARAMETERS.ping_hosts``); in ``ping`` and ``rrul`` they are left out.
A tcp test on a run without probes gets an all-null ``Ping (ms) ICMP`` (flent
still opens the file; its ping plots are empty).

rrul flows: if scenario.toml gives the 8 flows the DSCPs 0 (BE), 8 (BK),
40 (CS5) and 46 (EF) twice each, they are labelled by DSCP; the upload of each
pair is the flow on the first flow's forward path when the flows use exactly
two forward paths with one flow of each DSCP on each, else the earlier flow of
the pair. Otherwise flows 1–4 are the uploads and 5–8 the downloads, each in
the order BE, BK, CS5, EF.

Timeline and values
-------------------
Simulated time 0 is ``T0`` = 2000-01-01T00:00:00Z, a fixed synthetic epoch, so
the same run always gives the same bytes. ``TIME`` = ``T0``; ``LENGTH`` =
``TOTAL_LENGTH`` = the run's duration (flent's tests pad flows with DELAY s
of idle time; ccbench runs are exported as simulated, no padding).
``x_values`` are ``i * step`` up to the duration.

``raw_values`` hold the samples as the simulator recorded them, with absolute
times ``T0 + time_s`` (§5):

* a TCP series interleaves, per ``flow_series`` row, a throughput sample
  ``{t, val: goodput_mbps, dur: interval s}`` (none for the zero-length first
  row at the flow's start) and a socket-stats sample ``{t, tcp_cwnd,
  tcp_rtt: srtt_ms, tcp_pacing_rate, tcp_delivery_rate: throughput_mbps}``
  (keys without a value, e.g. srtt before the first RTT sample or the
  pacing rate of an unpaced flow, are left out). Rows whose interval lies
  wholly before the flow's start or after its stop are not exported.
* a probe series has ``{t: reply time, val: rtt_ms, seq}``; ``seq`` counts
  probes sent since the probe's start (1-based; from the scenario's
  ``start``/``interval``, so lost probes leave gaps), or replies in order if
  those are unknown.

``results`` interpolate the raw samples onto ``x_values`` linearly, like
flent's aggregator: a point is null when its nearest sample is more than 5
steps away, before the first / after the last sample by more than half a
step, and, for TCP series, outside the flow's active interval
[start_s, stop_s] from summary.json. Aggregates (avg, sum, fairness, totals)
are computed per step over the non-null member values, as flent's computing
runners do; their raw lists are empty. ``SERIES_META.MEAN_VALUE`` is the
core's summary value (flow goodput, probe RTT mean; both exclude the warm-up),
and aggregates combine their members' means as flent does. NaN never reaches
the file: it becomes null.

flent's box and CDF plots of the tcp tests drop the first and last DELAY
seconds (flent's ``--delay``, 5 s by default); for short runs use
``flent --delay 0``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ccbench.core.errors import CcbenchError
from ccbench.simulate.results import Result, load

__all__ = [
    "DEFAULT_STEP",
    "Exported",
    "FlentExportError",
    "SUFFIX",
    "T0",
    "build",
    "default_path",
    "dumps",
    "export",
    "interpolate",
    "null_nan",
]

#: flent version whose test definitions the file is written for.
FLENT_VERSION = "2.3.0"
#: flent's data file format version (flent.resultset.FILEFORMAT_VERSION).
FILE_FORMAT_VERSION = 4
#: The suffix flent recognises as gzip'd JSON.
SUFFIX = ".flent.gz"
#: Absolute time of simulated t = 0 (2000-01-01T00:00:00Z).
T0 = "2000-01-01T00:00:00.000000Z"
T0_EPOCH = 946_684_800.0
#: flent's default sampling step, seconds.
DEFAULT_STEP = 0.2
#: A results point is null when the nearest raw sample is further than this many steps.
MAX_GAP_STEPS = 5.0
#: flent's aggregator refuses more steps than this.
MAX_STEPS = 1_000_000

LOCAL_HOST = "ccbench"
HOST = "sim-server"

#: TCP sub-series: flent socket-stats key -> flow_series column.
SOCKET_STATS = {
    "tcp_cwnd": "cwnd_pkts",
    "tcp_rtt": "srtt_ms",
    "tcp_pacing_rate": "pacing_mbps",
    "tcp_delivery_rate": "throughput_mbps",  # Linux's delivery rate counts SACKed data too
}

#: rrul's DSCP classes: label -> DSCP code point.
RRUL_CLASSES = {"BE": 0, "BK": 8, "CS5": 40, "EF": 46}
#: rrul's latency series in slot order, with the DSCP that prefers each slot.
RRUL_PINGS = (("Ping (ms) ICMP", 0), ("Ping (ms) UDP EF", 46), ("Ping (ms) UDP BK", 8), ("Ping (ms) UDP BE", 0))
#: tcp_Nup / tcp_Ndown tests with a fixed stream count in flent 2.3.0.
FIXED_STREAM_COUNTS = (2, 4, 6, 8, 12)

_RUNNER_TCP = "NetperfDemoRunner"
_RUNNER_PING = "PingRunner"
_RUNNER_UDP = "UdpRttRunner"


class FlentExportError(CcbenchError):
    """The run cannot be exported as the requested (or any) flent test."""


# --- public API ---------------------------------------------------------------------------


def default_path(run_dir: str | os.PathLike[str]) -> Path:
    """``<run>.flent.gz`` beside the result directory ``<run>``."""
    d = Path(run_dir)
    return d.parent / f"{d.resolve().name}{SUFFIX}"


@dataclass(frozen=True)
class Exported:
    """A written flent file: its path, flent test name and the export's notes."""

    path: Path
    test: str
    notes: list[str]


def export(
    run_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    test: str | None = None,
    step: float = DEFAULT_STEP,
) -> Exported:
    """Write the result directory ``run_dir`` as a flent file.

    ``out`` defaults to :func:`default_path`; an existing directory receives
    ``<run>.flent.gz``. See the module docs for ``test`` and ``step`` (s).
    Raises FlentExportError for a run that does not fit the test.
    """
    path = default_path(run_dir) if out is None else Path(out)
    if out is not None and (path.is_dir() or os.fspath(out).endswith(("/", os.sep))):
        path = path / default_path(run_dir).name
    if not path.name.endswith(SUFFIX):
        raise FlentExportError(f"{path}: a flent file name must end in {SUFFIX} (flent reads others as plain JSON)")
    doc = build(load(run_dir), test=test, step=step, data_filename=path.name)
    data = dumps(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    md = doc["metadata"]
    return Exported(path, md["NAME"], list(md["CCBENCH"]["notes"]))


def dumps(doc: Mapping[str, Any]) -> bytes:
    """The gzip'd JSON bytes of a flent document: sorted keys, gzip mtime 0, no NaN."""
    text = json.dumps(null_nan(doc), indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def null_nan(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: null_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [null_nan(v) for v in value]
    return value


def build(
    result: Result,
    *,
    test: str | None = None,
    step: float = DEFAULT_STEP,
    data_filename: str | None = None,
) -> dict[str, Any]:
    """The flent document (a JSON-ready dict) for ``result``; see the module docs."""
    if not (isinstance(step, (int, float)) and math.isfinite(step) and step > 0):
        raise FlentExportError(f"step must be a positive number of seconds, got {step!r}")
    summary = result.summary
    duration = float(summary.get("duration_s") or 0.0)
    n_x = int(math.floor(duration / step + 1e-9)) + 1
    if n_x > MAX_STEPS:
        raise FlentExportError(f"{n_x} steps of {step} s: flent handles at most {MAX_STEPS} (hint: a larger --step)")
    x = np.round(np.arange(n_x) * step, 9)

    scenario = _Scenario.parse(result.scenario_toml)
    tcp = [i for i, f in enumerate(summary.get("flows", [])) if f.get("kind", "tcp") == "tcp"]
    probes = list(range(len(summary.get("probes", []))))
    plan = _plan(test, result, tcp, probes, scenario)

    ex = _Exporter(result, scenario, x, step)
    for name, flow in plan.tcp:
        ex.add_tcp(name, flow)
    for name, probe, copy in plan.pings:
        ex.add_ping(name, probe, plan.ping_runner.get(name, _RUNNER_PING), copy=copy)
    if plan.empty_ping:
        ex.add_empty_ping(plan.empty_ping)
    for name, runner, members in plan.aggregates:
        ex.add_aggregate(name, runner, members)

    notes = plan.notes + ex.notes
    cc = [summary["flows"][f].get("cc") or "" for _, f in plan.tcp]
    params: dict[str, Any] = dict(plan.params)
    if cc:
        params["cc_algos"] = ",".join(cc)
        if plan.name in ("tcp_1up", "tcp_1down"):
            params["cc_algo"] = cc[0]
    dscp = [scenario.flow(summary["flows"][f]["id"]).dscp for _, f in plan.tcp]
    if cc and all(d is not None for d in dscp):
        tos = [f"0x{d << 2:02x}" for d in dscp if d is not None]
        params["markings"] = ",".join(tos)
        if plan.name in ("tcp_1up", "tcp_1down"):
            params["marking"] = tos[0]

    title = str(summary.get("scenario") or scenario.name or "ccbench run")
    if scenario.description:
        title += f": {scenario.description}"
    metadata: dict[str, Any] = {
        "NAME": plan.name,
        "TITLE": title,
        "NOTE": None,
        "LOCAL_HOST": LOCAL_HOST,
        "HOST": HOST,
        "HOSTS": [HOST],
        "TIME": T0,
        "T0": T0,
        "LENGTH": _seconds(duration),
        "TOTAL_LENGTH": _seconds(duration),
        "STEP_SIZE": float(step),
        "IP_VERSION": 4,
        "TEST_PARAMETERS": params,
        "FLENT_VERSION": FLENT_VERSION,
        "DATA_FILENAME": data_filename,
        "BATCH_NAME": None,
        "BATCH_TIME": None,
        "BATCH_TITLE": None,
        "BATCH_UUID": None,
        "FAILED_RUNNERS": 0,
        "SERIES_META": ex.series_meta,
        "CCBENCH": {
            "version": _ccbench_version(),
            "scenario": summary.get("scenario"),
            "seed": summary.get("seed"),
            "duration_s": duration,
            "warmup_s": summary.get("warmup_s"),
            "series": ex.sources,
            "notes": notes,
        },
    }
    doc = {
        "version": FILE_FORMAT_VERSION,
        "metadata": metadata,
        "x_values": [float(v) for v in x],
        "results": ex.results,
        "raw_values": ex.raw,
    }
    clean: dict[str, Any] = null_nan(doc)
    return clean


# --- choosing the test and the series ------------------------------------------------------


@dataclass
class _Plan:
    name: str
    tcp: list[tuple[str, int]] = field(default_factory=list)  # (series, summary flow index)
    pings: list[tuple[str, int, bool]] = field(default_factory=list)  # (series, probe index, is a copy)
    ping_runner: dict[str, str] = field(default_factory=dict)
    empty_ping: str | None = None
    aggregates: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (series, runner, members)
    params: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


_FIXED = re.compile(r"^tcp_(\d+)(up|down)$")


def _plan(test: str | None, result: Result, tcp: list[int], probes: list[int], scenario: _Scenario) -> _Plan:
    flows = result.summary.get("flows", [])
    n = len(tcp)
    if test is None:
        test = _choose(tcp, probes, flows, scenario)
    fixed = _FIXED.match(test)

    if test == "ping":
        if not probes:
            raise FlentExportError("test ping needs a probe (a flow with kind = \"ping\"); this run has none")
        plan = _Plan("ping")
        _assign_pings(plan, [("Ping (ms) ICMP", None), ("Ping (ms) UDP", None)], probes, result, scenario,
                      extras=False)
        plan.ping_runner["Ping (ms) UDP"] = _RUNNER_UDP
        if n:
            plan.notes.append(f"test ping: the run's {n} TCP flow(s) are not exported")
        return plan

    if test == "rrul":
        if n != 8 or not probes:
            raise FlentExportError(
                f"test rrul needs exactly 8 TCP flows and at least one probe; this run has {n} TCP flow(s) "
                f"and {len(probes)} probe(s)")
        plan = _Plan("rrul")
        up, down, how = _rrul_flows(tcp, flows, scenario)
        plan.notes.append(how)
        for direction, group in (("upload", up), ("download", down)):
            names = [f"TCP {direction} {label}" for label in RRUL_CLASSES]
            plan.tcp += list(zip(names, group))
            plan.aggregates += [(f"TCP {direction} avg", "AverageRunner", names),
                                (f"TCP {direction} sum", "SumRunner", names)]
        plan.aggregates.append(("TCP totals", "SumRunner", [s for s, _ in plan.tcp]))
        _assign_pings(plan, list(RRUL_PINGS), probes, result, scenario, extras=False)
        for name, _ in RRUL_PINGS[1:]:
            plan.ping_runner[name] = _RUNNER_UDP
        plan.aggregates.append(("Ping (ms) avg", "AverageRunner", [s for s, _ in RRUL_PINGS]))
        return plan

    if test in ("tcp_1up", "tcp_1down"):
        direction = "upload" if test == "tcp_1up" else "download"
        if n != 1:
            hint = "tcp_nup" if direction == "upload" else "tcp_ndown"
            raise FlentExportError(f"test {test} needs exactly 1 TCP flow; this run has {n} (hint: --test {hint})")
        plan = _Plan(test, tcp=[(f"TCP {direction}", tcp[0])])
    elif test in ("tcp_nup", "tcp_ndown") or (fixed and int(fixed.group(1)) in FIXED_STREAM_COUNTS):
        direction = "upload" if test.endswith("up") else "download"
        if fixed and int(fixed.group(1)) != n:
            raise FlentExportError(f"test {test} needs exactly {fixed.group(1)} TCP flows; this run has {n} "
                                   f"(hint: --test tcp_n{'up' if direction == 'upload' else 'down'})")
        if n == 0:
            raise FlentExportError(f"test {test} needs TCP flows; this run has none (hint: --test ping)")
        plan = _Plan(test, tcp=[(f"TCP {direction}::{i}", f) for i, f in enumerate(tcp, 1)])
        plan.params[f"{direction}_streams"] = n
        names = [s for s, _ in plan.tcp]
        plan.aggregates += [(f"TCP {direction} avg", "AverageRunner", names),
                            (f"TCP {direction} sum", "SumRunner", names),
                            (f"TCP {direction} fairness", "FairnessRunner", names)]
    else:
        raise FlentExportError(
            f"unsupported flent test {test!r} (choose from: tcp_1up, tcp_1down, tcp_nup, tcp_ndown, "
            f"tcp_Nup/tcp_Ndown with N in {', '.join(map(str, FIXED_STREAM_COUNTS))}, rrul, ping)")

    if probes:
        _assign_pings(plan, [("Ping (ms) ICMP", None)], probes, result, scenario, extras=True)
    else:
        plan.empty_ping = "Ping (ms) ICMP"
        plan.notes.append("the run has no probe: 'Ping (ms) ICMP' is all null, so flent's ping plots are empty")
    return plan


def _choose(tcp: list[int], probes: list[int], flows: list[dict[str, Any]], scenario: _Scenario) -> str:
    if not tcp:
        if probes:
            return "ping"
        raise FlentExportError("nothing to export: the run has neither TCP flows nor probes")
    if len(tcp) == 1:
        return "tcp_1up"
    paths: dict[tuple[str, ...], list[str]] = {}
    for f in tcp:
        fid = flows[f]["id"]
        path = scenario.flow(fid).path
        if path is not None:
            paths.setdefault(path, []).append(fid)
    if len(paths) > 1:
        groups = "; ".join(f"{', '.join(ids)} on {' > '.join(p)}" for p, ids in paths.items())
        raise FlentExportError(
            f"cannot choose a flent test: the TCP flows use different forward paths ({groups}) "
            "(hint: --test tcp_nup exports them all as uploads, --test rrul maps 8 flows by DSCP)")
    return "tcp_nup"


def _rrul_flows(tcp: list[int], flows: list[dict[str, Any]], scenario: _Scenario) -> tuple[list[int], list[int], str]:
    """(uploads, downloads) in BE, BK, CS5, EF order, and how they were mapped."""
    info = {f: scenario.flow(flows[f]["id"]) for f in tcp}
    dscp = {f: info[f].dscp for f in tcp}
    by_class = {code: [f for f in tcp if dscp[f] == code] for code in RRUL_CLASSES.values()}
    if all(len(fs) == 2 for fs in by_class.values()):
        paths = []
        for f in tcp:
            if info[f].path not in paths:
                paths.append(info[f].path)
        first_path = info[tcp[0]].path
        split = len(paths) == 2 and None not in paths and all(
            sum(info[f].path == first_path for f in fs) == 1 for fs in by_class.values())
        up, down = [], []
        for fs in by_class.values():
            a, b = fs
            if split and info[b].path == first_path:
                a, b = b, a
            up.append(a)
            down.append(b)
        how = ("rrul: flows labelled by DSCP; uploads are the flows on the first flow's forward path"
               if split else "rrul: flows labelled by DSCP; the earlier flow of each DSCP is the upload")
        return up, down, how
    return tcp[:4], tcp[4:], ("rrul: DSCPs are not 0, 8, 40, 46 twice each: flows 1-4 are the uploads and 5-8 "
                              "the downloads, each in the order BE, BK, CS5, EF")


def _assign_pings(plan: _Plan, slots: Sequence[tuple[str, int | None]], probes: list[int], result: Result,
                  scenario: _Scenario, *, extras: bool) -> None:
    """Fill latency slots with probes: matching DSCP first, then in order, then copies of the first."""
    ids = [p["id"] for p in result.summary.get("probes", [])]
    left = list(probes)
    chosen: dict[str, int] = {}
    for name, want in slots:
        match = next((p for p in left if want is not None and scenario.flow(ids[p]).dscp == want), None)
        if match is not None:
            chosen[name] = match
            left.remove(match)
    for name, _ in slots:
        if name not in chosen and left:
            chosen[name] = left.pop(0)
    first = chosen.get(slots[0][0], probes[0])
    for name, _ in slots:
        if name in chosen:
            plan.pings.append((name, chosen[name], False))
        else:
            plan.pings.append((name, first, True))
            plan.notes.append(f"no probe left for {name!r}: it repeats the data of probe {ids[first]!r}")
    if extras and left:
        hosts = [ids[p] for p in left]
        plan.params["ping_hosts"] = ",".join(hosts)
        plan.pings += [(f"Ping (ms) ICMP {ids[p]} (extra)", p, False) for p in left]
    elif left:
        plan.notes.append(f"probes not exported (no series for them in {plan.name}): "
                          + ", ".join(ids[p] for p in left))


# --- building the series -----------------------------------------------------------------


class _Exporter:
    """Accumulates results, raw_values and SERIES_META, one series at a time."""

    def __init__(self, result: Result, scenario: _Scenario, x: np.ndarray, step: float) -> None:
        self.result = result
        self.scenario = scenario
        self.x = x
        self.step = step
        self.results: dict[str, list[float | None]] = {}
        self.raw: dict[str, list[dict[str, Any]]] = {}
        self.series_meta: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self._values: dict[str, np.ndarray] = {}
        fs = result.tables["flow_series"].sort("time_s", maintain_order=True)
        self._flow_rows = fs.partition_by("flow", as_dict=True, maintain_order=True) if fs.height else {}
        pr = result.tables["probes"].sort("time_s", maintain_order=True)
        self._probe_rows = pr.partition_by("probe", as_dict=True, maintain_order=True) if pr.height else {}

    def _put(self, name: str, values: np.ndarray, raw: list[dict[str, Any]]) -> None:
        self._values[name] = values
        self.results[name] = _to_list(values)
        self.raw[name] = raw

    def add_tcp(self, name: str, flow: int) -> None:
        info = self.result.summary["flows"][flow]
        start = float(info.get("start_s") or 0.0)
        stop = float(info["stop_s"]) if info.get("stop_s") is not None else math.inf
        rows = self._flow_rows.get((flow,))
        raw: list[dict[str, Any]] = []
        tput_t: list[float] = []
        tput_v: list[float] = []
        stats: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in SOCKET_STATS}
        if rows is not None:
            prev = -math.inf
            for r in rows.iter_rows(named=True):
                t = float(r["time_s"])
                begin = max(prev, start)
                prev = t
                if t < start or begin >= stop:
                    continue  # the row's interval lies outside the flow's active interval
                at = _abs_time(t)
                dur = t - begin
                goodput = _finite(r["goodput_mbps"])
                if dur > 0 and goodput is not None:
                    raw.append({"t": at, "val": goodput, "dur": round(dur, 9)})
                    tput_t.append(t)
                    tput_v.append(goodput)
                sample: dict[str, Any] = {"t": at}
                for key, col in SOCKET_STATS.items():
                    # A zero-length first row (the flow's start) has no delivery rate.
                    v = _finite(r.get(col)) if key != "tcp_delivery_rate" or dur > 0 else None
                    if v is not None:
                        sample[key] = v
                        stats[key][0].append(t)
                        stats[key][1].append(v)
                if len(sample) > 1:
                    raw.append(sample)
        window = (start, stop)
        self._put(name, self._interp(tput_t, tput_v, window), raw)
        for key, (ts, vs) in stats.items():
            if ts:
                sub = f"{name}::{key}"
                self.results[sub] = _to_list(self._interp(ts, vs, window))
        self.series_meta[name] = {
            "UNITS": "Mbits/s",
            "RUNNER": _RUNNER_TCP,
            "MEAN_VALUE": _finite(info.get("goodput_mbps")),
            "CONG_CONTROL": info.get("cc"),
            "IDX": len(self.series_meta),
        }
        self.sources[name] = {"id": info["id"], "kind": "tcp", "start_s": start,
                              "stop_s": None if math.isinf(stop) else stop}

    def add_ping(self, name: str, probe: int, runner: str, *, copy: bool) -> None:
        info = self.result.summary["probes"][probe]
        rows = self._probe_rows.get((probe,))
        flow = self.scenario.flow(info["id"])
        raw: list[dict[str, Any]] = []
        ts: list[float] = []
        vs: list[float] = []
        if rows is not None:
            for i, r in enumerate(rows.iter_rows(named=True), 1):
                t, rtt = float(r["time_s"]), _finite(r["rtt_ms"])
                if rtt is None:
                    continue
                raw.append({"t": _abs_time(t), "val": rtt, "seq": flow.seq(t - rtt / 1000.0, fallback=i)})
                ts.append(t)
                vs.append(rtt)
        self._put(name, self._interp(ts, vs, None), raw)
        rtt_stats = info.get("rtt_ms") or {}
        self.series_meta[name] = {
            "UNITS": "ms",
            "RUNNER": runner,
            "MEAN_VALUE": _finite(rtt_stats.get("mean")),
            "MIN_VALUE": _finite(info.get("min_ms")),
            "MAX_VALUE": _finite(info.get("max_ms")),
            "IDX": len(self.series_meta),
        }
        self.sources[name] = {"id": info["id"], "kind": "ping", "copy": copy}

    def add_empty_ping(self, name: str) -> None:
        self._put(name, np.full(len(self.x), np.nan), [])
        self.series_meta[name] = {"UNITS": "ms", "RUNNER": _RUNNER_PING, "MEAN_VALUE": None,
                                  "IDX": len(self.series_meta)}
        self.sources[name] = {"id": None, "kind": "ping", "copy": False}

    def add_aggregate(self, name: str, runner: str, members: list[str]) -> None:
        """avg / sum / Jain's fairness over the non-null member values at each step (flent's ComputingRunner)."""
        stack = np.vstack([self._values[m] for m in members])
        valid = ~np.isnan(stack)
        count = valid.sum(axis=0)
        total = np.where(valid, stack, 0.0).sum(axis=0)
        squares = np.where(valid, stack, 0.0) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            if runner == "AverageRunner":
                values = np.where(count > 0, total / np.maximum(count, 1), np.nan)
            elif runner == "SumRunner":
                values = np.where(count > 0, total, np.nan)
            else:  # FairnessRunner: (sum x)^2 / (n * sum x^2); None when all are zero
                sq = squares.sum(axis=0)
                values = np.where((count > 0) & (sq > 0), total**2 / (np.maximum(count, 1) * sq), np.nan)
        means = [self.series_meta[m].get("MEAN_VALUE") for m in members]
        means = [m for m in means if m is not None]
        self._put(name, values, [])
        self.series_meta[name] = {
            "UNITS": "Idx" if runner == "FairnessRunner" else self.series_meta[members[0]]["UNITS"],
            "RUNNER": runner,
            "MEAN_VALUE": _combine(runner, means),
            "IDX": len(self.series_meta),
        }
        self.sources[name] = {"id": None, "kind": runner.removesuffix("Runner").lower(), "of": members}

    def _interp(self, ts: Sequence[float], vs: Sequence[float], window: tuple[float, float] | None) -> np.ndarray:
        values = interpolate(self.x, np.asarray(ts, dtype=float), np.asarray(vs, dtype=float), self.step)
        if window is not None:
            eps = 1e-9
            values[(self.x < window[0] - eps) | (self.x > window[1] + eps)] = np.nan
        return values


def interpolate(x: np.ndarray, ts: np.ndarray, vs: np.ndarray, step: float) -> np.ndarray:
    """Raw samples (ts, vs), ts ascending, linearly interpolated at x; NaN where there is no data.

    NaN where the nearest sample is more than MAX_GAP_STEPS steps away, and
    before the first / after the last sample by more than half a step (flent's
    aggregator uses that bound before the first sample so that one value is
    not repeated at many points).
    """
    out = np.full(len(x), np.nan)
    if len(ts) == 0:
        return out
    eps = 1e-9
    nxt = np.searchsorted(ts, x, side="right")  # first sample after x
    before = nxt == 0
    after = nxt == len(ts)
    out[before & (ts[0] - x <= 0.5 * step + eps)] = vs[0]
    out[after & (x - ts[-1] <= 0.5 * step + eps)] = vs[-1]
    inner = ~(before | after)
    i = nxt[inner]
    t0, t1, v0, v1 = ts[i - 1], ts[i], vs[i - 1], vs[i]
    xi = x[inner]
    near = np.minimum(xi - t0, t1 - xi) <= MAX_GAP_STEPS * step + eps
    span = t1 - t0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(span > 0, (xi - t0) / span, 1.0)
    out[np.flatnonzero(inner)[near]] = (v0 + (v1 - v0) * frac)[near]
    return out


# --- the run's scenario -------------------------------------------------------------------


@dataclass(frozen=True)
class _FlowSpec:
    """What the export needs from one expanded scenario flow (None: unknown)."""

    path: tuple[str, ...] | None = None
    dscp: int | None = None
    start_s: float | None = None
    interval_s: float | None = None

    def seq(self, sent_s: float, *, fallback: int) -> int:
        """1-based number of the probe sent at ``sent_s``, or ``fallback`` if the schedule is unknown."""
        if self.start_s is None or not self.interval_s:
            return fallback
        return int(round((sent_s - self.start_s) / self.interval_s)) + 1


@dataclass
class _Scenario:
    """The resolved scenario.toml of a run, reduced to the expanded flows (ids as in summary.json)."""

    name: str | None = None
    description: str | None = None
    flows: dict[str, _FlowSpec] = field(default_factory=dict)

    def flow(self, flow_id: str) -> _FlowSpec:
        return self.flows.get(flow_id, _FlowSpec())

    @classmethod
    def parse(cls, text: str) -> _Scenario:
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10: export without scenario details
            return cls()
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return cls()
        out = cls(name=_str_or_none(doc.get("name")), description=_str_or_none(doc.get("description")))
        for spec in doc.get("flows", []):
            if not isinstance(spec, dict) or not isinstance(spec.get("id"), str):
                continue
            count = spec.get("count", 1) if isinstance(spec.get("count", 1), int) else 1
            start = _duration_s(spec.get("start", "0s"))
            start_step = _duration_s(spec.get("start_step", "0s")) or 0.0
            path = spec.get("path")
            for copy in range(count):
                name = spec["id"] if count == 1 else f"{spec['id']}.{copy + 1}"
                out.flows[name] = _FlowSpec(
                    path=tuple(map(str, path)) if isinstance(path, list) else None,
                    dscp=spec["dscp"] if isinstance(spec.get("dscp"), int) else None,
                    start_s=None if start is None else start + start_step * copy,
                    interval_s=_duration_s(spec.get("interval")),
                )
        return out


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zµ]*)\s*$")
_DURATION_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
                   "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "µs": 1e-6, "ns": 1e-9, "nsec": 1e-9, "min": 60.0}


def _duration_s(value: Any) -> float | None:
    """A scenario duration ("12500us", "0.5s", 2) in seconds, or None if it is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    m = _DURATION.match(value)
    if not m or m.group(2) not in _DURATION_UNITS:
        return None
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


# --- small helpers --------------------------------------------------------------------------


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _to_list(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values.tolist()]


def _abs_time(t: float) -> float:
    """Absolute UNIX time of simulated time ``t`` s, to the microsecond."""
    return round(T0_EPOCH + t, 6)


def _seconds(s: float) -> int | float:
    return int(s) if float(s).is_integer() else s


def _combine(runner: str, values: Iterable[float]) -> float | None:
    vals = list(values)
    if not vals:
        return None
    if runner == "AverageRunner":
        return math.fsum(vals) / len(vals)
    if runner == "SumRunner":
        return math.fsum(vals)
    sq = math.fsum(v * v for v in vals)
    return math.fsum(vals) ** 2 / (len(vals) * sq) if sq else None


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _ccbench_version() -> str:
    from ccbench._core import version

    return str(version())
