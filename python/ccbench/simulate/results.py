"""Run results in memory (:class:`Result`) and on disk (the result directory).

A result directory holds::

    scenario.toml       the resolved scenario: the input with every default filled in
    summary.json        the summary computed by the core (written last; see below)
    <table>.parquet     one Parquet file per table below
    report.html         the run's web page: figures the browser draws from the
                        tables (ccbench.simulate.page); opens offline
    assets/             the charting library the page loads (uPlot)
    timeseries.png      throughput, RTT and queue-delay plot (when asked for)

It is written atomically: everything goes into ``<dir>.tmp-<pid>`` beside the
target (or into the run's work directory, :func:`ccbench.core.files.work_dir`),
``summary.json`` last, and the temporary directory is renamed into place. A
directory without ``summary.json`` is therefore never a finished result, and
an existing result directory is replaced only once the new one is complete.

Parquet tables
--------------
Times are seconds since the start of the simulation. The integer ids ``flow``,
``link`` and ``probe`` index the ``flows``, ``links`` and ``probes`` arrays of
``summary.json``, which carry their names (``Result.named`` adds them as
``flow_id``/``link_id``/``probe_id`` string columns).

``flow_series`` — one row per flow per sample interval (default 100 ms):
    =============== ======= ====================================================
    time_s          Float64 end of the sample interval
    flow            UInt32  flow index
    goodput_mbps    Float64 payload goodput over the interval, Mbit/s (in-order
                            release: can exceed the link for an interval after
                            a loss is repaired)
    throughput_mbps Float64 payload received in the interval in any order,
                            Mbit/s (bounded by the path; what to plot)
    delivered_bytes UInt64  cumulative payload bytes delivered
    cwnd_pkts       Float64 congestion window, packets
    srtt_ms         Float64 smoothed RTT, ms (seeded by the handshake RTT)
    pacing_mbps     Float64 pacing rate, Mbit/s of payload (``sk_pacing_rate``
                            as ``ss`` shows it; computed even when not
                            enforced)
    inflight_pkts   Float64 packets in flight
    ce_fraction     Float64 CE-marked share of segments delivered in the
                            interval, as the sender's feedback shows it
                            (NaN if none were delivered)
    alpha           Float64 the CC's α (DCTCP, Prague; NaN for others)
    classic         Float64 Prague's classic-ECN detector (``ecn_fallback``):
                            0 L4S mode, 1 classic fallback (NaN for others)
    =============== ======= ====================================================

``media_series`` — one row per media (SCReAM) flow per sample interval;
``flow`` indexes ``summary["flows"]`` like the TCP flows (media flows also
have ``flow_series`` rows: goodput of RTP bytes received, window and bytes in
flight in packets of ``mtu`` + 12 B, SCReAM's sRTT, pacing rate, CE fraction,
L4S α):
    =================== ======= ================================================
    target_mbps         Float64 encoder target bitrate
    tx_mbps             Float64 transmitted RTP rate (last ≥ 100 ms window)
    rtp_queue_delay_ms  Float64 mean RTP-queue wait of the packets sent (NaN: none)
    qdelay_ms           Float64 SCReAM's network queue-delay estimate
    cwnd_bytes          UInt64  reference window (ref_wnd)
    bytes_in_flight     UInt64  bytes in flight
    rtp_discards        UInt64  RTP-queue flushes so far
    =================== ======= ================================================

``rtt`` — one row per RTT sample taken by a sender:
    ``time_s`` Float64, ``flow`` UInt32, ``rtt_ms`` Float64.

``link_series`` — one row per link per sample interval:
    =============== ======= ====================================================
    time_s          Float64 end of the sample interval
    link            UInt32  link index
    backlog_pkts    UInt64  queue occupancy, packets
    backlog_bytes   UInt64  queue occupancy, bytes
    tx_bytes        UInt64  cumulative bytes transmitted
    drops           UInt64  cumulative packets dropped
    marks           UInt64  cumulative packets CE-marked
    rate_mbps       Float64 link rate in force, Mbit/s
    prob_base       Float64 the AQM's base probability (DualPI2 p′; NaN if none)
    prob_c          Float64 classic-queue probability (DualPI2 p′²)
    prob_l          Float64 L-queue coupled probability (DualPI2 min(k·p′, 1))
    =============== ======= ====================================================

``sojourn`` — one row per dequeued packet (possibly sampled):
    ``time_s`` Float64 (dequeue time), ``link`` UInt32, ``flow`` UInt32
    (4294967295 for probe packets), ``class`` UInt32 (queue of a two-queue
    qdisc: DualPI2 0 = C, 1 = L; 0 otherwise), ``sojourn_ms`` Float64.

``probes`` — one row per probe (ping) reply:
    ``time_s`` Float64, ``probe`` UInt32, ``rtt_ms`` Float64.

``capture`` — one row per packet as it starts transmission on a link named in
``metrics.capture`` (empty otherwise; :func:`ccbench.formats.pcap.write_pcap` turns it
into a pcap). Sequence numbers count whole segments:
    ========================== ============== =========================================
    time_s, time_ns            Float64/UInt64 transmission start, s and ns
    link                       UInt32         link index
    endpoint                   UInt32         flow arena index: every flow copy and ping
    dir                        UInt32         0 forward (sender→receiver), 1 reverse
    size                       UInt32         bytes a qdisc counts: IP length + 14
    ecn                        UInt32         0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE
    dscp                       UInt32         DSCP
    kind                       UInt32         0 data, 1 pure ACK, 2 probe, 3 reply, 4 other
    seq, len                   UInt64/UInt32  data: segment, payload bytes; probe: sequence
    ack                        UInt64         ACK: next segment expected
    flags                      UInt32         bit 0 ECE, bit 1 CWR, bit 2 retransmission, bit 3 PSH
    cep                        UInt32         AccECN CE packet counter carried by ACKs
    nsack                      UInt32         SACK blocks in use (0-3)
    sack{0,1,2}_{start,end}    UInt64         SACK blocks, segments, half-open [start, end)
    ========================== ============== =========================================

The core may add columns or tables; readers should select the columns they use.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccbench.core.files import NEW_DIR, OLD_DIR, SUMMARY_FILE
from ccbench.core.png import write_figure
from ccbench.simulate.page import write_page

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    from matplotlib.figure import Figure

# Polars is imported where frames are made, not here: `ccbench run` writes
# its tables from the core and never needs it (a third of its start-up).

__all__ = ["SCHEMA", "Result", "Tables", "load", "read_summary"]

SCENARIO_FILE = "scenario.toml"
PLOT_FILE = "timeseries.png"
#: The per-run plots of :mod:`ccbench.simulate.plot` a run directory may hold, each as ``<name>.png``.
RUN_PLOTS = ("timeseries", "delivery_with_rtt")
#: LZ4 (Parquet's LZ4_RAW): about half zstd's encoding time on a run's tables
#: for files about 25 % larger; every Parquet reader (polars, pyarrow, DuckDB) reads it.
PARQUET_COMPRESSION = "lz4"

#: The tables the core promises, in its order.
TABLE_NAMES = ("flow_series", "media_series", "rtt", "link_series", "sojourn", "probes", "capture")


def _schema() -> dict[str, dict[str, type[pl.DataType]]]:
    import polars as pl

    return {
        "flow_series": {
            "time_s": pl.Float64,
            "flow": pl.UInt32,
            "goodput_mbps": pl.Float64,
            "throughput_mbps": pl.Float64,
            "delivered_bytes": pl.UInt64,
            "cwnd_pkts": pl.Float64,
            "srtt_ms": pl.Float64,
            "pacing_mbps": pl.Float64,
            "inflight_pkts": pl.Float64,
            "ce_fraction": pl.Float64,
            "alpha": pl.Float64,
            "classic": pl.Float64,
        },
        "media_series": {
            "time_s": pl.Float64,
            "flow": pl.UInt32,
            "target_mbps": pl.Float64,
            "tx_mbps": pl.Float64,
            "rtp_queue_delay_ms": pl.Float64,
            "qdelay_ms": pl.Float64,
            "cwnd_bytes": pl.UInt64,
            "bytes_in_flight": pl.UInt64,
            "rtp_discards": pl.UInt64,
        },
        "rtt": {"time_s": pl.Float64, "flow": pl.UInt32, "rtt_ms": pl.Float64},
        "link_series": {
            "time_s": pl.Float64,
            "link": pl.UInt32,
            "backlog_pkts": pl.UInt64,
            "backlog_bytes": pl.UInt64,
            "tx_bytes": pl.UInt64,
            "drops": pl.UInt64,
            "marks": pl.UInt64,
            "rate_mbps": pl.Float64,
            "prob_base": pl.Float64,
            "prob_c": pl.Float64,
            "prob_l": pl.Float64,
        },
        "sojourn": {"time_s": pl.Float64, "link": pl.UInt32, "flow": pl.UInt32, "class": pl.UInt32, "sojourn_ms": pl.Float64},
        "probes": {"time_s": pl.Float64, "probe": pl.UInt32, "rtt_ms": pl.Float64},
        "capture": {
            "time_s": pl.Float64,
            "time_ns": pl.UInt64,
            "link": pl.UInt32,
            "endpoint": pl.UInt32,
            "dir": pl.UInt32,
            "size": pl.UInt32,
            "ecn": pl.UInt32,
            "dscp": pl.UInt32,
            "kind": pl.UInt32,
            "seq": pl.UInt64,
            "len": pl.UInt32,
            "ack": pl.UInt64,
            "flags": pl.UInt32,
            "cep": pl.UInt32,
            "nsack": pl.UInt32,
            **{f"sack{k}_{edge}": pl.UInt64 for k in range(3) for edge in ("start", "end")},
        },
    }


def __getattr__(name: str) -> Any:
    """``SCHEMA`` (the tables the core promises and their columns; see the
    module docs for units) is built on first use, with Polars."""
    if name == "SCHEMA":
        schema = globals()["SCHEMA"] = _schema()
        return schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# id column -> the summary.json array its values index
_ID_COLUMNS = {"flow": "flows", "link": "links", "probe": "probes"}
# unit suffixes kept last when flattening nested summary stats: rtt_ms.p50 -> rtt_p50_ms
_UNITS = ("ms", "s", "us", "mbps", "bytes", "pkts")


#: Index value meaning "no flow" (u32::MAX): sojourn rows of probe packets.
NO_ID = 2**32 - 1


class Tables(Mapping[str, "pl.DataFrame"]):
    """A run's tables by name. A table may stand in a Parquet file (written by
    the core as the run went, ``ccbench.run(spill_dir=…)``, or a loaded
    result directory): it is read from that file when first looked up, and
    :meth:`Result.save` links or copies the file instead of encoding it
    again. A table the core promises but nobody produced is empty."""

    def __init__(self, frames: Mapping[str, pl.DataFrame], files: Mapping[str, Path] | None = None,
                 native: Mapping[str, Mapping[str, tuple[str, bytes]]] | None = None) -> None:
        self._frames = dict(frames)
        self._files = dict(files or {})
        # Tables the core handed over in memory as well as writing them (those a run's page draws):
        # decoded on first use.
        self._native = dict(native or {})

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._frames:
            import polars as pl

            if name in self._native:
                self._frames[name] = decode_tables({name: self._native.pop(name)})[name]
            elif name in self._files:
                self._frames[name] = pl.read_parquet(self._files[name])
            elif name in TABLE_NAMES:  # not produced: present and empty
                self._frames[name] = pl.DataFrame(schema=__getattr__("SCHEMA")[name])
        return self._frames[name]

    def lazy(self, name: str) -> pl.LazyFrame:
        """A table as a Polars LazyFrame: a scan of its file while it stands in one (so a
        query such as a plot's binning reads only the columns it uses, without loading
        the table), else the loaded table."""
        if name not in self._frames and name not in self._native and name in self._files:
            import polars as pl

            return pl.scan_parquet(self._files[name])
        return self[name].lazy()

    def read(self, name: str, columns: Sequence[str], max_rows: int | None = None) -> pl.DataFrame | pl.LazyFrame:
        """Those of ``columns`` a table has, in their order: read from its file without the rest
        while it stands in one (a run page reads a few columns of each interval table once);
        a table of more than ``max_rows`` rows in a file as a scan of those columns, not read."""
        import polars as pl

        if name not in self._frames and name not in self._native and name in self._files:
            f = self._files[name]
            have = pl.read_parquet_schema(f)
            picked = [c for c in columns if c in have]
            if max_rows is not None and pl.scan_parquet(f).select(pl.len()).collect().item() > max_rows:
                return pl.scan_parquet(f).select(picked)
            return pl.read_parquet(f, columns=picked)
        frame = self[name]  # columns picked as Series: no query for a table in memory
        return pl.DataFrame([frame.get_column(c) for c in columns if c in frame.columns])

    def native(self, name: str, columns: Sequence[str]) -> dict[str, tuple[str, bytes]] | None:
        """Those of ``columns`` a table the core handed over in memory has, as it handed them over:
        ``(dtype code, little-endian bytes)`` (no Polars, no NumPy: ``ccbench run`` writes its page
        without them); None for any other table."""
        cols = self._native.get(name)
        if cols is None:
            return None
        return {c: cols[c] for c in columns if c in cols}

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*TABLE_NAMES, *self._frames, *self._files]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*TABLE_NAMES, *self._frames, *self._files]))

    def write_parquet(self, name: str, path: Path) -> None:
        """Write one table to ``path``: a spilled one by a hard link to its file (a copy across file systems)."""
        src = self._files.get(name)
        if src is None:
            self[name].write_parquet(path, compression=PARQUET_COMPRESSION)
            return
        try:
            os.link(src, path)
        except OSError:
            shutil.copyfile(src, path)


class Result:
    """One simulation run: the core's summary, the resolved scenario and its tables.

    ``summary`` is summary.json as a dict (the core computed it; nothing here
    recomputes it). ``tables`` maps each table name to a Polars DataFrame with
    the columns documented in this module; a table the core did not produce is
    present and empty.
    """

    def __init__(self, summary_json: str, scenario_toml: str, tables: Mapping[str, pl.DataFrame],
                 files: Mapping[str, Path] | None = None, page_buckets: Mapping[str, Any] | None = None,
                 native: Mapping[str, Mapping[str, tuple[str, bytes]]] | None = None) -> None:
        self.summary_json = summary_json
        self.summary: dict[str, Any] = parse_summary(summary_json, SUMMARY_FILE)
        self.scenario_toml = scenario_toml
        self.tables = Tables(tables, files, native)
        #: The core's min/max time buckets of the per-packet tables for the page (a run that wrote
        #: its tables as it went), so the page need not read them back; {} otherwise.
        self.page_buckets: Mapping[str, Any] = page_buckets or {}

    def table(self, name: str) -> pl.DataFrame:
        """One table by name, as ``tables[name]``: with :attr:`summary`, what a report's cell
        expressions read (:class:`ccbench.plan.expr.RunData`), so ``evaluate(expr, result)`` works."""
        return self.tables[name]

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Result {s.get('scenario')!r} seed={s.get('seed')} "
            f"flows={len(s.get('flows', []))} links={len(s.get('links', []))} "
            f"tables={sorted(self.tables)}>"
        )

    def summary_table(self, name: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """The summary's ``flows``, ``links`` or ``probes`` as :attr:`flows` and the others lay them
        out (nested stats flattened), without Polars: the columns holding numbers, text or flags, and
        the rows. A column of whole numbers with a fraction anywhere holds floats throughout."""
        rows = [_flatten(r) for r in self.summary.get(name, []) or []]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        shown, cells = [], []
        for c in columns:
            values = [r.get(c) for r in rows]
            present = [v for v in values if v is not None]
            if all(isinstance(v, bool) for v in present) or all(isinstance(v, str) for v in present):
                pass
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
                if any(isinstance(v, float) for v in present):
                    values = [None if v is None else float(v) for v in values]
            else:
                continue  # lists, objects, mixed kinds: not a plain column
            shown.append(c)
            cells.append(values)
        return shown, list(zip(*cells)) if cells else [() for _ in rows]

    @cached_property
    def flows(self) -> pl.DataFrame:
        """Per-flow summary, one row per flow; ``rtt_ms`` stats become rtt_mean_ms, rtt_p50_ms, …"""
        return _summary_frame(self.summary.get("flows", []))

    @cached_property
    def links(self) -> pl.DataFrame:
        """Per-link summary; ``sojourn_ms`` stats become sojourn_mean_ms, sojourn_p99_ms, …"""
        return _summary_frame(self.summary.get("links", []))

    @cached_property
    def probes(self) -> pl.DataFrame:
        """Per-probe summary; ``rtt_ms`` stats become rtt_mean_ms, …"""
        return _summary_frame(self.summary.get("probes", []))

    @property
    def series(self) -> pl.DataFrame:
        """The flow_series table with a ``flow_id`` name column."""
        return self.named("flow_series")

    def named(self, table: str) -> pl.DataFrame:
        """``tables[table]`` with a ``<x>_id`` name column after each flow/link/probe index column."""
        import polars as pl

        df = self.tables[table].clone()  # cheap; insert_column below works in place
        for col, array in _ID_COLUMNS.items():
            if col not in df.columns:
                continue
            names = pl.Series(f"{col}_id", [e["id"] for e in self.summary.get(array, [])], dtype=pl.String)
            # NO_ID marks rows that belong to no entry (e.g. a probe packet's sojourn).
            idx = df[col].cast(pl.Int64)
            idx = idx.set(idx == NO_ID, None)
            top = idx.max()
            if isinstance(top, int) and top >= len(names):
                raise ValueError(f"{table}.{col} holds index {top}, but summary.json lists {len(names)} {array}")
            df = df.insert_column(df.columns.index(col) + 1, names.gather(idx))
        return df

    def _repr_html_(self) -> str:
        """Jupyter's view: the run's headline, its flows, links and probes tables, and its plot."""
        from ccbench.simulate.page import result_html

        return result_html(self)

    def plot(self, path: str | os.PathLike[str] | None = None) -> Figure:
        """Throughput, RTT and queue-delay time series; also saved as PNG if ``path`` is given."""
        from ccbench.simulate.plot import timeseries

        fig = timeseries(self)
        if path is not None:
            write_figure(fig, path, dpi=110)
        return fig

    def save(self, directory: str | os.PathLike[str], *, plot: bool = True,
             figures: Mapping[str, Mapping[str, Any]] | None = None,
             extra: Callable[[Path], None] | None = None, work: Path | None = None,
             page: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
        """Write the result directory atomically (see the module docs) and return its path.

        ``figures`` adds other plots of :mod:`ccbench.simulate.plot` as ``<name>.png``,
        each with its options, e.g. ``{"delivery_with_rtt": {"rtt": (20, 70)}}``; ``page``
        adds figures to the run's web page the same way (drawn by the browser,
        :data:`ccbench.simulate.page.PAGE_FIGURES`).
        ``extra(dir)`` writes more files into the directory before it is
        complete (pcaps): if it fails, nothing is written. ``work``: a
        directory beside the target (:func:`ccbench.core.files.work_dir`) to
        write in, instead of ``<dir>.tmp-<pid>``.

        An existing result directory is replaced; any other existing path is
        refused with FileExistsError so no user data is deleted.
        """
        target = Path(directory)
        if target.exists() and not _replaceable(target):
            raise FileExistsError(errno.EEXIST, "exists and is not a ccbench result directory", str(target))
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = work / NEW_DIR if work is not None else target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            tmp.mkdir()
            (tmp / SCENARIO_FILE).write_text(self.scenario_toml, encoding="utf-8")
            for name in self.tables:
                self.tables.write_parquet(name, tmp / f"{name}.parquet")
            write_page(self, tmp, page)
            if plot:
                self.plot(tmp / PLOT_FILE)
            if figures:
                from ccbench.simulate import plot as plots

                for name, options in figures.items():
                    write_figure(getattr(plots, name)(self, **options), tmp / f"{name}.png", dpi=110)
            if extra is not None:
                extra(tmp)
            (tmp / SUMMARY_FILE).write_text(self.summary_json, encoding="utf-8")  # last: marks completion
            _replace_dir(tmp, target, None if work is None else work / OLD_DIR)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target


def read_summary(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """summary.json of a result directory, without loading its tables.

    A damaged one (not JSON, not an object) raises ResultError naming it."""
    d = Path(directory)
    return parse_summary(_summary_text(d), d / SUMMARY_FILE)


def parse_summary(text: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """summary.json's text as a dict; ResultError naming ``path`` if it is not one."""
    from ccbench.core.errors import ResultError

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultError(f"{path}: damaged, not a ccbench summary (invalid JSON at line {e.lineno}, "
                          f"column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise ResultError(f"{path}: damaged, not a ccbench summary (nested too deeply)") from None
    if not isinstance(doc, dict):
        raise ResultError(f"{path}: damaged, not a ccbench summary (expected a JSON object, got {type(doc).__name__})")
    for key in ("flows", "links", "probes"):
        if not isinstance(doc.get(key, []), list) or not all(isinstance(x, dict) for x in doc.get(key, [])):
            raise ResultError(f"{path}: damaged, not a ccbench summary ({key!r} must be a list of objects)")
    for key in ("duration_s", "warmup_s"):
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ResultError(f"{path}: damaged, not a ccbench summary ({key!r} must be a number)")
    if not isinstance(doc.get("engine", {}), dict):
        raise ResultError(f"{path}: damaged, not a ccbench summary ('engine' must be an object)")
    return doc


def load(directory: str | os.PathLike[str]) -> Result:
    """Read back a result directory written by :meth:`Result.save`.

    Each table is read from its Parquet file when first looked up, so
    loading a long run for its summary costs nothing.
    """
    d = Path(directory)
    summary = _summary_text(d)
    files = {p.stem: p for p in sorted(d.glob("*.parquet"))}
    parse_summary(summary, d / SUMMARY_FILE)  # a damaged one is named
    return Result(summary, _text(d / SCENARIO_FILE), {}, files)


#: Largest summary.json or scenario.toml read back (a 10 000-flow summary is a few MB).
MAX_RESULT_FILE = 256 << 20


def _summary_text(d: Path) -> str:
    if not d.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such result directory", str(d))
    path = d / SUMMARY_FILE
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, f"not a finished result directory (no {SUMMARY_FILE})", str(d))
    return _text(path)


def _text(path: Path) -> str:
    """A file of a result directory as text; ResultError if it is not UTF-8 or too large."""
    from ccbench.core.errors import ResultError

    if path.stat().st_size > MAX_RESULT_FILE:
        raise ResultError(f"{path}: damaged, larger than {MAX_RESULT_FILE >> 20} MiB")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ResultError(f"{path}: damaged, not UTF-8 text (byte {e.start})") from None


def _replaceable(path: Path) -> bool:
    """An existing path may be replaced only if it is an empty or a result directory."""
    return path.is_dir() and (not any(path.iterdir()) or (path / SUMMARY_FILE).is_file())


def _replace_dir(new: Path, target: Path, old: Path | None = None) -> None:
    """Move ``new`` to ``target``; an old ``target`` is set aside first (to ``old``,
    default ``<target>.old-<pid>``) and removed after."""
    if not target.exists():
        os.replace(new, target)
        return
    old = old or target.with_name(f"{target.name}.old-{os.getpid()}")
    shutil.rmtree(old, ignore_errors=True)
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)  # put the previous result back
        raise
    shutil.rmtree(old, ignore_errors=True)


def _summary_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Summary entries as a DataFrame, nested stats flattened into columns."""
    import polars as pl

    if not rows:
        return pl.DataFrame(schema={"id": pl.String})
    df = pl.DataFrame([_flatten(r) for r in rows], infer_schema_length=None)
    return df.with_columns(pl.col(pl.Null).cast(pl.Float64))  # all-null stats (no samples)


def _flatten(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if not isinstance(value, Mapping):
            out[key] = value
            continue
        base, _, unit = key.rpartition("_")
        for stat, x in value.items():
            out[f"{base}_{stat}_{unit}" if base and unit in _UNITS else f"{key}_{stat}"] = x
    return out


#: Native column dtype codes (``_core``) as NumPy little-endian dtypes.
_DTYPES = {"f64": "<f8", "u32": "<u4", "u64": "<u8", "i64": "<i8"}


def decode_tables(tables: dict[str, Mapping[str, tuple[str, bytes]]]) -> dict[str, pl.DataFrame]:
    """Native columns (dtype code, little-endian bytes) as Polars DataFrames.

    Each table's bytes are dropped from ``tables`` once decoded, so the two
    copies of the whole run are never held at once."""
    out: dict[str, pl.DataFrame] = {}
    if not tables:
        return out  # the core wrote them (spill_dir): no Polars needed
    import polars as pl

    for name in list(tables):
        cols = tables.pop(name)
        out[name] = pl.DataFrame({col: _column(name, col, dtype, data) for col, (dtype, data) in cols.items()})
    return out


def _column(table: str, col: str, dtype: str, data: bytes) -> np.ndarray:
    import numpy as np

    try:
        wire = np.dtype(_DTYPES[dtype])
    except KeyError:
        raise ValueError(f"native table {table}.{col}: unknown dtype {dtype!r}") from None
    return np.frombuffer(data, dtype=wire).astype(wire.newbyteorder("="), copy=False)
