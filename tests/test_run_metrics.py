"""The Runs table's columns: one window, one kind, after the warm-up (run_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import ccbench
from ccbench.report import StoredRun
from ccbench.run_metrics import RUN_COLUMNS, counter_after_warmup, tcp_jain, window_goodput_mbps

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
    from ccbench.suite import format_value
    from ccbench.sweep import run_suite

    (tmp_path / "mixed.toml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "suite.toml").write_text('name = "m"\nbase = "mixed.toml"\n[[axes]]\nname = "seed"\nvalues = [1]\n'
                                         'key = "seed"\n[report]\nplots = []\nsuite_plots = []\n', encoding="utf-8")
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, progress=False)
    md = (res.dir / "report.md").read_text()
    header = next(line for line in md.split("## Runs\n", 1)[1].splitlines() if line.startswith("|"))
    for title in ("goodput (Mbit/s)", "TCP goodput (Mbit/s)", "media goodput (Mbit/s)", "TCP RTT p99 (ms)",
                  "media RTT p99 (ms)", "TCP Jain"):
        assert f"| {title} |" in header, title
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
