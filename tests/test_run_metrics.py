"""The Runs table's columns: one window, one kind, after the warm-up (run_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import ccbench
from ccbench.report.suite import StoredRun
from ccbench.report.run_metrics import (RUN_COLUMNS, counter_after_warmup, drops_after_warmup, tcp_jain,
                                        window_goodput_mbps)

# A 10 Mbit/s FIFO: "a" alone for 1.5 s, then "b" joins; a SCReAM flow and a ping; warm-up 0.5 s.
MIXED = """\
name = "mixed"
duration = "4s"
seed = 1

[[links]]
id = "bottleneck"
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "pfifo", limit = 30 }

[[links]]
id = "ret"
rate = "10Mbit"
delay = "10ms"

[[flows]]
id = "a"
kind = "tcp"
cc = "cubic"
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "b"
kind = "tcp"
cc = "cubic"
start = "1.5s"
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "m"
kind = "media"
ecn = false
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "ping"
kind = "ping"
interval = "50ms"
path = ["bottleneck"]
reverse = ["ret"]

[metrics]
warmup = "0.5s"
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[StoredRun, ccbench.Result]:
    out = tmp_path_factory.mktemp("mixed") / "run"
    ccbench.run(MIXED).save(out, plot=False)
    return StoredRun(out), ccbench.load(out)


def value(run: StoredRun, title: str) -> float | None:
    return next(c for c in RUN_COLUMNS if c.title == title).value(run)


def test_goodput_is_delivered_payload_over_one_window_and_within_the_link(mixed) -> None:
    run, result = mixed
    s = result.summary
    window = s["duration_s"] - s["warmup_s"]
    fs = result.tables["flow_series"]
    expected = 0.0
    for i in range(len(s["flows"])):
        rows = fs.filter(pl.col("flow") == i).sort("time_s")
        before = rows.filter(pl.col("time_s") <= s["warmup_s"] + 1e-9)["delivered_bytes"]
        expected += rows["delivered_bytes"][-1] - (before[-1] if before.len() else 0)
    total = window_goodput_mbps(run)
    assert total == pytest.approx(expected * 8 / window / 1e6)
    assert 0 < total <= 10.0  # a 10 Mbit/s link cannot deliver more payload
    # Adding per-flow means over their own active periods overstates it (what the old column did):
    assert sum(f["goodput_mbps"] for f in s["flows"] if f["kind"] in ("tcp", "media")) > total
    tcp, media = window_goodput_mbps(run, ("tcp",)), window_goodput_mbps(run, ("media",))
    assert tcp is not None and media is not None and media > 0
    assert tcp + media == pytest.approx(total)


def test_rtt_columns_keep_tcp_and_media_apart(mixed) -> None:
    run, result = mixed
    flows = {f["id"]: f for f in result.summary["flows"]}
    assert value(run, "TCP RTT p99 (ms)") == max(flows["a"]["rtt_ms"]["p99"], flows["b"]["rtt_ms"]["p99"])
    assert value(run, "media RTT p99 (ms)") == flows["m"]["rtt_ms"]["p99"]
    assert value(run, "ping p99 (ms)") == result.summary["probes"][0]["rtt_ms"]["p99"]


def test_jain_is_over_tcp_flows_only_and_none_below_two(mixed, tmp_path: Path) -> None:
    run, result = mixed
    a, b = (f["goodput_mbps"] for f in result.summary["flows"][:2])
    assert tcp_jain(run) == pytest.approx((a + b) ** 2 / (2 * (a * a + b * b)))
    single = tmp_path / "single"
    ccbench.run(MIXED, set=['flows.b.start="100s"', 'flows.m.start="100s"', "duration=\"2s\""]).save(single,
                                                                                                     plot=False)
    assert tcp_jain(StoredRun(single)) is None


def test_drops_count_only_after_the_warm_up(mixed) -> None:
    run, result = mixed
    ls = result.tables["link_series"]
    warm = result.summary["warmup_s"]
    expected = 0
    for i in range(len(result.summary["links"])):
        rows = ls.filter(pl.col("link") == i).sort("time_s")
        before = rows.filter(pl.col("time_s") <= warm + 1e-9)["drops"]
        expected += rows["drops"][-1] - (before[-1] if before.len() else 0)
    after = counter_after_warmup(run, "link_series", "link", "drops")
    assert after == expected
    total = sum(int(r["drops"].max()) for r in ls.partition_by("link"))
    assert 0 < after < total  # slow start overflows the 30-packet FIFO inside the warm-up


class _NoTables:
    """A run whose tables cannot be read: what it gives comes from its summary alone."""

    def __init__(self, summary: dict) -> None:
        self.summary = summary

    def table(self, name: str, columns=None) -> pl.DataFrame:
        raise AssertionError(f"read the table {name}")


class _OldSummary:
    """A stored run whose summary predates ``delivered_after_warmup_bytes`` (or is ``summary``)."""

    def __init__(self, run: StoredRun, summary: dict | None = None) -> None:
        self.run = run
        self.summary = summary or {**run.summary, "flows": [
            {k: v for k, v in f.items() if k != "delivered_after_warmup_bytes"} for f in run.summary["flows"]]}

    def table(self, name: str, columns=None) -> pl.DataFrame:
        return self.run.table(name, columns)


def test_window_counts_are_the_engines_and_agree_with_the_series(mixed) -> None:
    """Goodput and drops over the window come from the summary without reading a table, and equal what
    the series' counters give (the warm-up's snapshot shares an instant with a sample); a run saved
    before the summary had the flows' counts reads them from the series."""
    run, result = mixed
    s = result.summary
    fs = result.tables["flow_series"]
    for kinds in (None, ("tcp",), ("media",)):
        ids = {i for i, f in enumerate(s["flows"]) if kinds is None or f["kind"] in kinds}
        by_series = counter_after_warmup(run, "flow_series", "flow", "delivered_bytes", ids=ids)
        assert sum(s["flows"][i]["delivered_after_warmup_bytes"] for i in ids) == by_series, kinds
        from_summary = window_goodput_mbps(_NoTables(s), kinds)
        assert from_summary == pytest.approx(by_series * 8 / (s["duration_s"] - s["warmup_s"]) / 1e6), kinds
        assert window_goodput_mbps(_OldSummary(run), kinds) == pytest.approx(from_summary), kinds
    # b starts after the warm-up: all it delivered counts
    b = next(f for f in s["flows"] if f["id"] == "b")
    assert b["delivered_after_warmup_bytes"] == b["delivered_bytes"] == fs.filter(pl.col("flow") == 1)["delivered_bytes"].max()
    a = next(f for f in s["flows"] if f["id"] == "a")
    assert 0 < a["delivered_after_warmup_bytes"] < a["delivered_bytes"]
    drops = drops_after_warmup(_NoTables(s))
    assert drops == counter_after_warmup(run, "link_series", "link", "drops") > 0
    assert drops_after_warmup(_NoTables({**s, "links": []})) is None


def test_figure_statistics_come_from_the_summary_alone(mixed) -> None:
    """A run's reduction for the suite figures reads no table when its summary has the quantiles, the
    flows' window counts and their interval-goodput spread, and equals the one from the tables."""
    from ccbench.report.suite_figures import run_stats

    run, result = mixed
    fast = run_stats(_NoTables(result.summary))
    old = {k: v for k, v in result.summary.items() if k != "quantiles"}
    old["flows"] = [{k: v for k, v in f.items() if k not in ("interval_goodput_mbps", "delivered_after_warmup_bytes")}
                    for f in old["flows"]]
    slow = run_stats(_OldSummary(run, old))
    assert [(n, k) for n, k, _ in fast["goodput"]] == [(n, k) for n, k, _ in slow["goodput"]] == [
        ("a", "cubic"), ("b", "cubic"), ("m", "scream")]
    for (_, _, f), (_, _, t) in zip(fast["goodput"], slow["goodput"]):
        assert f == pytest.approx(t, rel=1e-12, abs=1e-12)
    assert fast["goodput"][0][2][0] < fast["goodput"][0][2][4]  # a's 5th percentile below its 95th
    assert fast["by_kind"] == pytest.approx(slow["by_kind"])
    assert fast["window_goodput"] == pytest.approx(slow["window_goodput"])


def test_a_report_from_summaries_imports_no_polars(tmp_path: Path) -> None:
    """A suite report whose runs' summaries hold what its tables and figures show never loads Polars
    (its import is most of a small report's time), nor numpy.ma (NumPy's np.unique would load it)."""
    import subprocess
    import sys

    from ccbench.sweep.runner import run_suite

    (tmp_path / "mixed.toml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "suite.toml").write_text('name = "m"\nbase = "mixed.toml"\n[[axes]]\nname = "seed"\nvalues = [1, 2]\n'
                                         'key = "seed"\n[report]\nplots = []\nsuite_plots = []\n', encoding="utf-8")
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, progress=False)
    (res.dir / "report.html").unlink()
    code = ("import sys\nfrom ccbench.cli import main\ntry:\n    main(['report', sys.argv[1], '-j', '1'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\nassert 'polars' not in sys.modules\n"
            "assert 'numpy.ma' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code, str(res.dir)], check=True, capture_output=True)
    assert (res.dir / "report.html").is_file()


def test_stored_run_reads_only_the_columns_asked_for(mixed) -> None:
    run, _ = mixed
    df = run.table("sojourn", ["time_s", "sojourn_ms"])
    assert df.columns == ["time_s", "sojourn_ms"]
    assert run.table("sojourn", ["time_s", "sojourn_ms"]) is not df  # per-packet tables are not kept
    series = run.table("flow_series", ["time_s", "flow", "delivered_bytes"])
    assert series.columns == ["time_s", "flow", "delivered_bytes"]
    assert run.table("flow_series", ["time_s", "flow", "delivered_bytes"]) is series  # small tables are cached


def test_runs_table_shows_per_kind_goodput_when_kinds_mix(mixed, tmp_path: Path) -> None:
    """With a media flow beside TCP, the Runs table has the total, TCP and media goodput columns."""
    from ccbench.plan.suite import format_value
    from ccbench.sweep.runner import run_suite

    (tmp_path / "mixed.toml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "suite.toml").write_text('name = "m"\nbase = "mixed.toml"\n[[axes]]\nname = "seed"\nvalues = [1]\n'
                                         'key = "seed"\n[report]\nplots = []\nsuite_plots = []\n', encoding="utf-8")
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, progress=False)
    md = (res.dir / "report.md").read_text()
    header = next(line for line in md.split("## Runs\n", 1)[1].splitlines() if line.startswith("|"))
    for title in ("goodput (Mbit/s)", "TCP goodput (Mbit/s)", "media goodput (Mbit/s)", "TCP RTT p99 (ms)",
                  "media RTT p99 (ms)", "TCP Jain", "queue p99 bottleneck (ms)", "queue p99 ret (ms)", "util"):
        assert f"| {title} |" in header, title
    assert header.index("queue p99 bottleneck (ms)") < header.index("queue p99 ret (ms)")
    run = StoredRun(res.dir / res.runs[0].dir)
    row = next(line for line in md.split("## Runs\n", 1)[1].splitlines() if line.startswith("| 1 |"))
    for title in ("media RTT p99 (ms)", "media goodput (Mbit/s)", "TCP goodput (Mbit/s)"):
        assert f"| {format_value(value(run, title), None)} |" in row, title


class _TableRun:
    """A run of one in-memory table (what counter_after_warmup reads)."""

    def __init__(self, df: pl.DataFrame, warmup: float) -> None:
        self.df = df
        self.summary = {"warmup_s": warmup, "duration_s": 10.0}

    def table(self, name: str, columns=None) -> pl.DataFrame:
        return self.df.select(columns) if columns else self.df


def test_counter_growth_per_key_from_the_last_sample_before_the_warm_up_end() -> None:
    # Rows out of order; key 2 has no sample before the warm-up's end (starts at 0); key 3 is filtered out.
    rows = [(3.0, 1, 50), (1.0, 1, 10), (2.0, 1, 20), (0.5, 2, 0), (2.5, 1, 35), (4.0, 2, 7), (3.0, 2, 5),
            (9.0, 3, 1000), (1.0, 3, 1)]
    df = pl.DataFrame(rows, schema={"time_s": pl.Float64, "k": pl.UInt32, "c": pl.UInt64}, orient="row")
    run = _TableRun(df, warmup=2.0)
    # key 1: 50 - 20; key 2: 7 - 0 (its 0.5 s sample, value 0); key 3: 1000 - 1.
    assert counter_after_warmup(run, "t", "k", "c") == 30 + 7 + 999
    assert counter_after_warmup(run, "t", "k", "c", ids={1, 2}) == 37
    assert counter_after_warmup(run, "t", "k", "c", ids={4}) is None
    late = _TableRun(df.filter(pl.col("k") == 2).with_columns(pl.col("time_s") + 10), warmup=2.0)
    assert counter_after_warmup(late, "t", "k", "c") == 7  # no sample before the warm-up's end: from 0
    assert counter_after_warmup(_TableRun(df.clear(), 2.0), "t", "k", "c") is None


class _SummaryRun:
    """A run that is only a summary.json (what the queue and util columns read)."""

    def __init__(self, links: list[dict]) -> None:
        self.summary = {"warmup_s": 0.0, "duration_s": 10.0, "flows": [], "links": links}

    def table(self, name: str, columns=None) -> pl.DataFrame:
        return pl.DataFrame()


def _link(id: str, qdisc: str, util: float | None, p99: float | None, rate_mean: float | None = None,
          **extra) -> dict:
    return {"id": id, "qdisc": qdisc, "utilization": util, "rate_mean_mbps": rate_mean,
            "sojourn_ms": {"mean": p99, "p50": p99, "p99": p99, "max": p99}, **extra}


def test_queue_columns_name_each_queue_bottleneck_first_and_skip_delay_stages() -> None:
    from ccbench.report.run_metrics import bottleneck, run_columns

    # As l4s-testing S2 at 80 ms: a netem stage whose "sojourn" is its 40 ms delay, the 50 Mbit
    # fq_codel (the bottleneck), an unshaped DualPI2 behind it and the ACK-path queues.
    s2 = _SummaryRun([
        _link("delay_f", "netem", None, 40.0, pure_delay=True),
        _link("m3_r", "dualpi2", 0.001, 0.0, 1000.0, pure_delay=False),
        _link("m2_f", "htb", 0.98, 7.1, 50.0, pure_delay=False),
        _link("m3_f", "dualpi2", 0.05, 0.0, 1000.0, pure_delay=False),
        _link("delay_r", "netem", None, 40.0, pure_delay=True),
    ])
    cols = run_columns([s2])
    titles = [c.title for c in cols]
    queue_titles = [t for t in titles if t.startswith("queue p99")]
    assert queue_titles == ["queue p99 m2_f (ms)", "queue p99 m3_r (ms)", "queue p99 m3_f (ms)"]
    assert titles.index("queue p99 m2_f (ms)") < titles.index("util")
    got = {c.title: c.value(s2) for c in cols if c.title.startswith("queue p99") or c.title == "util"}
    assert got == {"queue p99 m2_f (ms)": 7.1, "queue p99 m3_r (ms)": 0.0, "queue p99 m3_f (ms)": 0.0,
                   "util": 0.98}
    assert all(40.0 != v for v in got.values())  # the delay stages' 40 ms is never a queue's
    legend = {c.title: c.meaning for c in cols}
    assert "the bottleneck in every run" in legend["queue p99 m2_f (ms)"]
    assert "never the bottleneck" in legend["queue p99 m3_f (ms)"]

    # Summaries written before `pure_delay`: a netem stage without a line rate is a delay.
    old = _SummaryRun([_link("delay", "netem", None, 10.0, rate_mbps=None),
                       _link("shaped_netem", "netem", 0.9, 3.0, 20.0, rate_mbps=20.0),
                       _link("fifo", "pfifo", 0.5, 2.0, 10.0, rate_mbps=10.0)])
    assert [c.title for c in run_columns([old]) if c.title.startswith("queue")] == \
        ["queue p99 shaped_netem (ms)", "queue p99 fifo (ms)"]

    # Equal utilization: the slower queue is the bottleneck.
    tie = _SummaryRun([_link("fast", "pfifo", 0.9, 1.0, 100.0, pure_delay=False),
                       _link("slow", "pfifo", 0.9, 2.0, 10.0, pure_delay=False)])
    assert bottleneck(tie.summary)["id"] == "slow"

    # Across runs: the queue that is the bottleneck in most of them comes first.
    up = _SummaryRun([_link("up", "cake", 0.99, 5.0, 10.0, pure_delay=False),
                      _link("down", "cake", 0.10, 1.0, 10.0, pure_delay=False)])
    down = _SummaryRun([_link("up", "cake", 0.05, 1.0, 10.0, pure_delay=False),
                        _link("down", "cake", 0.97, 4.0, 10.0, pure_delay=False)])
    cols = [c for c in run_columns([up, down, down]) if c.title.startswith("queue")]
    assert [c.title for c in cols] == ["queue p99 down (ms)", "queue p99 up (ms)"]
    assert "the bottleneck in 2 of 3 runs" in cols[0].meaning and "1 of 3" in cols[1].meaning
