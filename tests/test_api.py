"""The Python API: runs, DataFrames, overrides, and the result directory."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal
import pytest
from matplotlib.figure import Figure

import ccbench
from ccbench.simulate.api import overrides, toml_value
from ccbench.simulate.results import SCHEMA
from conftest import MEDIA, TINY, TWO_FLOWS

BASE_RTT_MS = 20.0  # 10 ms out on "bottleneck" + 10 ms back on "ret"


def test_run_accepts_path_str_pathlike_and_text(write_scenario) -> None:
    path = write_scenario()
    by_text = ccbench.run(TINY)
    for source in (path, str(path)):
        assert ccbench.run(source).summary["flows"] == by_text.summary["flows"]


def test_flows_frame_has_a_row_per_flow_with_flattened_rtt(tiny_result: ccbench.Result) -> None:
    flows = tiny_result.flows
    assert isinstance(flows, pl.DataFrame)
    assert {"f1", "f2"} <= set(flows["id"])
    assert flows.height == len(tiny_result.summary["flows"])
    for col in ("goodput_mbps", "rtt_mean_ms", "rtt_p50_ms", "rtt_p95_ms", "rtt_p99_ms", "retransmits", "ce_marks"):
        assert col in flows.columns, col
    bulk = flows.filter(pl.col("id").is_in(["f1", "f2"]))
    assert (bulk["goodput_mbps"] > 0).all()
    assert bulk["goodput_mbps"].sum() <= 10.0  # they share a 10 Mbit/s bottleneck
    assert (bulk["rtt_p50_ms"] >= BASE_RTT_MS).all()


def test_summary_says_where_hystart_ended_slow_start() -> None:
    """CUBIC's HyStart exit (detector, the cwnd left as ssthresh, time) is in its flow's summary
    and the flows frame; Reno, which has no HyStart, has none."""
    res = ccbench.run(TWO_FLOWS, set=['flows.2.cc="reno"'])  # f1 CUBIC, f2 (after the ping) Reno
    cubic, reno = res.summary["flows"]
    exit_ = cubic["hystart"]
    assert exit_["by"] in ("ack-train", "delay")
    assert isinstance(exit_["cwnd"], int) and exit_["cwnd"] >= 16  # hystart_low_window
    assert 0 < exit_["time_s"] < 1.0
    assert "hystart" not in reno
    frame = res.flows.select("id", "hystart_by", "hystart_cwnd").rows()
    assert frame == [("f1", exit_["by"], exit_["cwnd"]), ("f2", None, None)]


def test_links_and_probes_frames(tiny_result: ccbench.Result) -> None:
    links = tiny_result.links
    assert links["id"].to_list() == ["bottleneck", "ret"]
    for col in ("rate_mbps", "utilization", "sojourn_mean_ms", "sojourn_p50_ms", "sojourn_p99_ms",
                "sojourn_max_ms", "drops", "marks"):
        assert col in links.columns, col
    assert links["rate_mbps"].to_list() == [10.0, 10.0]
    assert 0.5 < links["utilization"][0] <= 1.0  # two bulk flows keep the bottleneck busy

    assert "ping" in tiny_result.probes["id"].to_list()
    assert tiny_result.probes["rtt_mean_ms"][0] >= BASE_RTT_MS


def test_tables_follow_the_documented_schema(tiny_result: ccbench.Result) -> None:
    for name, columns in SCHEMA.items():
        df = tiny_result.tables[name]
        assert isinstance(df, pl.DataFrame)
        for col, dtype in columns.items():
            assert df.schema[col] == dtype, (name, col)
    assert tiny_result.tables["rtt"]["rtt_ms"].min() >= BASE_RTT_MS
    assert tiny_result.tables["probes"]["rtt_ms"].min() >= BASE_RTT_MS
    assert tiny_result.tables["sojourn"].height > 0


def test_series_names_flows_and_samples_every_interval(tiny_result: ccbench.Result) -> None:
    series = tiny_result.series
    assert series.columns[:3] == ["time_s", "flow", "flow_id"]
    per_flow = series.group_by("flow_id").len()
    assert {"f1", "f2"} <= set(per_flow["flow_id"])
    assert per_flow["len"].max() <= 2.0 / 0.1 + 1  # 2 s at the default 100 ms interval
    assert series["time_s"].max() <= tiny_result.summary["duration_s"] + 1e-9


def test_table_ids_index_the_summary_arrays(tiny_result: ccbench.Result) -> None:
    # TWO_FLOWS declares f1, ping, f2: the ping must not shift f2's index in the flow tables
    assert set(tiny_result.named("flow_series")["flow_id"]) == {"f1", "f2"}
    assert set(tiny_result.named("rtt")["flow_id"]) == {"f1", "f2"}
    assert set(tiny_result.named("probes")["probe_id"]) == {"ping"}
    assert set(tiny_result.named("link_series")["link_id"]) == {"bottleneck", "ret"}
    sojourn = tiny_result.named("sojourn")
    assert set(sojourn["link_id"]) <= {"bottleneck", "ret"}
    # Probe packets belong to no TCP flow: their sojourn rows have a null flow_id.
    assert set(sojourn["flow_id"].drop_nulls()) == set(tiny_result.flows["id"])
    assert "flow_id" not in tiny_result.tables["sojourn"].columns  # named() copies


def test_keyword_overrides_and_seed() -> None:
    res = ccbench.run(TINY, duration="1s", links__0__rate="5Mbit", seed=7)
    assert res.summary["duration_s"] == 1.0
    assert res.summary["seed"] == 7
    assert res.links["rate_mbps"][0] == 5.0
    assert res.flows["goodput_mbps"][0] <= 5.0


def test_set_strings_match_the_cli_syntax() -> None:
    assert ccbench.run(TINY, set=["duration=1s"]).summary["duration_s"] == 1.0


def test_same_seed_gives_identical_tables() -> None:
    a, b = ccbench.run(TINY), ccbench.run(TINY)
    for name in SCHEMA:
        assert a.tables[name].equals(b.tables[name]), name
    assert a.summary["flows"] == b.summary["flows"]


def test_validate_returns_the_resolved_scenario(write_scenario) -> None:
    resolved = ccbench.validate(write_scenario())
    assert '"tiny"' in resolved and "fq_codel" in resolved
    # the resolved scenario is itself a valid scenario that resolves to itself
    assert ccbench.validate(resolved) == resolved


def test_overrides_render_python_values_as_toml() -> None:
    kw = {"duration": "10s", "links__0__rate": "50Mbit", "flows__1__ecn": True, "n": 3, "x": 0.5}
    assert overrides(["a.b=c"], kw, seed=4) == [
        "a.b=c", 'duration="10s"', 'links.0.rate="50Mbit"', "flows.1.ecn=true", "n=3", "x=0.5", "seed=4",
    ]
    assert toml_value(["a", 1, {"kind": "fq_codel"}]) == '["a", 1, { "kind" = "fq_codel" }]'
    assert toml_value('say "hi"\n') == '"say \\"hi\\"\\u000a"'
    assert toml_value(float("inf")) == "inf"
    with pytest.raises(TypeError):
        toml_value(object())


@pytest.mark.parametrize("bad", ["duration", "=1s", "links.9.rate=1Mbit"])
def test_malformed_set_is_a_scenario_error(bad: str) -> None:
    with pytest.raises(ccbench.ScenarioError) as info:
        ccbench.run(TINY, set=[bad])
    assert info.value.problems


def test_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ccbench.run(tmp_path / "nope.toml")
    with pytest.raises(FileNotFoundError):
        ccbench.run("nope.toml")  # a one-line string without "=" is a path, not TOML


def test_save_and_load_round_trip(tiny_result: ccbench.Result, tmp_path: Path) -> None:
    out = tiny_result.save(tmp_path / "res")
    for name in ("summary.json", "scenario.toml", "timeseries.png", *(f"{t}.parquet" for t in SCHEMA)):
        assert (out / name).is_file(), name
    assert json.loads((out / "summary.json").read_text()) == tiny_result.summary

    back = ccbench.load(out)
    assert back.summary == tiny_result.summary
    assert back.scenario_toml == tiny_result.scenario_toml
    assert back.flows.equals(tiny_result.flows)
    for name in SCHEMA:
        assert back.tables[name].equals(tiny_result.tables[name]), name


def test_save_replaces_a_result_but_never_other_data(tiny_result: ccbench.Result, tmp_path: Path) -> None:
    out = tmp_path / "res"
    tiny_result.save(out, plot=False)
    (out / "stale.parquet").write_bytes(b"old")
    tiny_result.save(out, plot=False)
    assert not (out / "stale.parquet").exists()
    assert not (out / "timeseries.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # no .tmp-/.old- leftovers

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        tiny_result.save(precious)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_a_loaded_result_without_a_table_saves_it_empty(tiny_result: ccbench.Result, tmp_path: Path) -> None:
    """A result directory lacking a table (an older one) loads, and saving it writes that table empty."""
    out = tiny_result.save(tmp_path / "old", plot=False)
    (out / "capture.parquet").unlink()
    again = ccbench.load(out).save(tmp_path / "again", plot=False)  # no table looked up before
    assert pl.read_parquet(again / "capture.parquet").schema == pl.Schema(SCHEMA["capture"])
    assert_frame_equal(pl.read_parquet(again / "sojourn.parquet"), tiny_result.tables["sojourn"])


def test_load_refuses_an_unfinished_directory(tmp_path: Path) -> None:
    (tmp_path / "scenario.toml").write_text(TINY)
    with pytest.raises(FileNotFoundError, match=r"summary\.json"):
        ccbench.load(tmp_path)


def test_plot_has_four_panels_and_writes_png(tiny_result: ccbench.Result, tmp_path: Path) -> None:
    fig = tiny_result.plot(tmp_path / "p.png")
    assert isinstance(fig, Figure)
    tput, cwnd, rtt, queue = fig.axes
    assert "Mbit/s" in tput.get_ylabel() and "ms" in rtt.get_ylabel() and "ms" in queue.get_ylabel()
    assert cwnd.get_ylabel() == "cwnd (packets)"
    series = tiny_result.tables["flow_series"]
    for i, line in enumerate(cwnd.get_lines()):  # the recorded window of each flow, as recorded
        rows = series.filter(pl.col("flow") == i).sort("time_s")
        assert list(line.get_ydata()) == rows["cwnd_pkts"].to_list()
    assert {"f1", "f2"} <= {t.get_text() for t in tput.get_legend().get_texts()}
    # the rate panel draws the bounded any-order throughput, not in-order goodput
    assert tput.get_ylabel() == "throughput (Mbit/s)"
    for i, line in enumerate(tput.get_lines()):
        rows = series.filter(pl.col("flow") == i).sort("time_s")
        assert list(line.get_ydata()) == rows["throughput_mbps"].to_list()
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_copes_with_empty_tables(tiny_result: ccbench.Result) -> None:
    empty = ccbench.Result(tiny_result.summary_json, tiny_result.scenario_toml, {})
    fig = empty.plot()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts.count("no samples") == 4


def test_plot_bins_a_million_sojourn_samples(tiny_result: ccbench.Result) -> None:
    n = 1_000_000
    rng = np.random.default_rng(0)
    sojourn = pl.DataFrame({
        "time_s": np.sort(rng.uniform(0, 2, n)),
        "link": np.zeros(n, dtype=np.uint32),
        "flow": rng.integers(0, 2, n, dtype=np.uint32),
        "sojourn_ms": rng.exponential(5.0, n),
    })
    tables = {**tiny_result.tables, "sojourn": sojourn}
    big = ccbench.Result(tiny_result.summary_json, tiny_result.scenario_toml, tables)
    queue = big.plot().axes[3]
    assert max(len(line.get_xdata()) for line in queue.get_lines()) <= 2.0 / 0.1 + 1


def test_plot_legend_stays_readable_with_fifty_flows() -> None:
    many = TINY.replace('cc = "cubic"', 'cc = "cubic"\ncount = 50').replace('"10Mbit"', '"100Mbit"')
    fig = ccbench.run(many, set=['duration="1s"']).plot()
    tput, cwnd = fig.axes[:2]
    assert len(tput.get_lines()) == 50 and len(cwnd.get_lines()) == 50
    assert [t.get_text() for t in tput.get_legend().get_texts()] == ["f1 (50 flows)"]
    assert {line.get_color() for line in tput.get_lines()} == {tput.get_lines()[0].get_color()}  # one group color
    rtt_legend = [t.get_text() for t in fig.axes[2].get_legend().get_texts()]
    assert rtt_legend == ["f1 (50 flows)", "ping (probe)"]


def test_scenario_error_survives_pickling() -> None:
    problem = {"file": "t.toml", "line": 1, "col": 1, "key": "x", "message": "bad"}
    err = ccbench.ScenarioError("t.toml:1:1: x: bad", [problem])
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.problems == err.problems and back.key == "x"


def test_media_flow_results(tmp_path: Path) -> None:
    r = ccbench.run(MEDIA)
    flow = r.summary["flows"][0]
    assert flow["kind"] == "media" and flow["cc"] == "scream" and flow["ecn"] == "l4s"
    assert flow["media"]["packets_sent"] > 0 and flow["intervals"][0]["name"] == "late"
    ms = r.named("media_series")
    assert set(ms["flow_id"]) == {"scream"}
    assert ms["target_mbps"].max() > 1.0
    r.save(tmp_path / "run")
    back = ccbench.load(tmp_path / "run")
    assert back.tables["media_series"].equals(r.tables["media_series"])


def test_result_shows_inline_in_jupyter(tiny_result) -> None:
    page = tiny_result._repr_html_()
    for flow in tiny_result.summary["flows"]:
        assert f"<td>{flow['id']}</td>" in page and f"<td>{flow['goodput_mbps']:.4g}</td>" in page
    for link in tiny_result.summary["links"]:
        assert f"<td>{link['id']}</td>" in page
    assert "<b>probes</b>" in page and 'src="data:image/png;base64,' in page


def test_a_path_with_an_equals_sign_is_a_path(tmp_path) -> None:
    missing = tmp_path / "runs" / "rate=10Mbit-abc" / "scenario.toml"
    with pytest.raises(FileNotFoundError):
        ccbench.validate(str(missing))
    with pytest.raises(FileNotFoundError):
        ccbench.validate("rate=10Mbit.toml")
    missing.parent.mkdir(parents=True)
    missing.write_text(TINY)
    assert 'name = "tiny"' in ccbench.validate(str(missing))
    with pytest.raises(ccbench.ScenarioError):  # one line of TOML is still TOML text
        ccbench.validate('duration = "1s"')


def test_sweep_returns_a_tidy_frame_that_load_suite_reads_back(tmp_path) -> None:
    import polars as pl

    df = ccbench.sweep(TWO_FLOWS, axes={"links.bottleneck.rate": ["5Mbit", "10Mbit"]}, seeds=2, jobs=1,
                       out=tmp_path, set=['duration="1s"'], progress=False, report=False)
    assert df.height == 2 * 2 * 2  # rate x seed x flow
    assert {"rate", "seed", "run", "status", "flow", "kind", "goodput_mbps", "rtt_p99_ms"} <= set(df.columns)
    assert sorted(df["status"].unique()) == ["ok"]
    assert sorted(df["rate"].unique()) == ["10Mbit", "5Mbit"] and sorted(df["seed"].unique()) == [1, 2]
    root = tmp_path / "tiny-sweep"
    for row in df.iter_rows(named=True):
        summary = ccbench.load(root / "runs" / row["run"]).summary
        flow = next(f for f in summary["flows"] if f["id"] == row["flow"])
        assert (summary["seed"], flow["goodput_mbps"]) == (row["seed"], row["goodput_mbps"])
    # the faster link carries more
    by_rate = df.group_by("rate").agg(pl.col("goodput_mbps").sum())
    got = dict(by_rate.iter_rows())
    assert got["10Mbit"] > got["5Mbit"]
    back = ccbench.load_suite(root)
    assert back.equals(df)


def test_load_suite_keeps_a_failed_run_as_a_row_with_its_error(tmp_path) -> None:
    df = ccbench.sweep(TWO_FLOWS, axes={"links.bottleneck.rate": ["5Mbit", "7MB"]}, jobs=1, out=tmp_path,
                       set=['duration="0.5s"'], progress=False, report=False)
    failed = df.filter(df["status"] == "failed")
    assert failed.height == 1 and failed["rate"][0] == "7MB" and failed["flow"][0] is None
    assert 'unknown rate unit "mb"' in failed["error"][0]
    assert df.filter(df["status"] == "ok").height == 2  # f1 and f2 of the 5Mbit run



def test_spilled_tables_equal_the_in_memory_ones(tmp_path: Path, monkeypatch) -> None:
    """With spill_dir the core writes every table to Parquet (a row group at a time during
    the run): tables read back, saved files and summary are those of the in-memory run,
    capture and empty tables included."""
    import ccbench.simulate.api

    monkeypatch.setattr(ccbench.simulate.api, "SPILL_BYTES", 5000)  # several row groups in 2 s
    ov = ["metrics.capture=['bottleneck']"]
    mem = ccbench.run(TWO_FLOWS, set=ov)
    spill = tmp_path / "spill"
    spill.mkdir()
    disk = ccbench.run(TWO_FLOWS, set=ov, spill_dir=spill)
    assert sorted(p.name for p in spill.iterdir()) == sorted(f"{name}.parquet" for name in SCHEMA)
    for name in SCHEMA:
        assert_frame_equal(disk.tables[name], mem.tables[name])
        assert disk.tables[name].schema == pl.Schema(SCHEMA[name]), name
    assert mem.tables["media_series"].is_empty()
    for r in (mem, disk):
        r.summary["engine"].pop("wall_s")
    assert disk.summary == mem.summary
    saved = ccbench.load(disk.save(tmp_path / "run", plot=False))
    for name in SCHEMA:
        assert_frame_equal(saved.tables[name], mem.tables[name])


def test_lazy_tables_scan_their_file_without_loading_it(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    ten = ['duration="10s"']  # more RTT samples and sojourns than a page draws one by one
    disk, mem = ccbench.run(TWO_FLOWS, set=ten, spill_dir=spill), ccbench.run(TWO_FLOWS, set=ten)
    for name in ("rtt", "sojourn"):
        scan = disk.tables.lazy(name)
        assert "Parquet" in scan.explain() and name not in disk.tables._frames, name  # a scan; nothing loaded
        assert_frame_equal(scan.collect(), mem.tables[name])
        assert_frame_equal(mem.tables.lazy(name).collect(), mem.tables[name])  # in memory: the table itself
    disk.tables["rtt"]
    assert "Parquet" not in disk.tables.lazy("rtt").explain()  # once loaded, not read again
    # A small series table the core also handed over in memory is read from there, not from its file.
    assert "Parquet" not in disk.tables.lazy("flow_series").explain()
    assert_frame_equal(disk.tables.lazy("flow_series").collect(), mem.tables["flow_series"])


def test_the_core_hands_over_the_tables_a_page_reads_whole(tmp_path: Path) -> None:
    """Beside the files it writes, the core hands Python the tables a run page reads whole (flow,
    link and media series, probes), kept in memory as they are written in chunks while each takes
    at most ``keep_bytes``, and the per-packet ones of at most 4000 rows (which a page draws sample
    by sample) when the run never wrote them out in chunks: what the run holds of a table written
    in part is not the whole table. Each handed over is the whole table."""
    from ccbench import _core

    series = {"flow_series", "link_series", "media_series", "probes"}
    cases = (("10s", 1 << 20, 8 << 20, series),
             ("10s", 4096, 8 << 20, series),  # written in chunks, kept whole
             ("10s", 4096, 10_000, {"media_series", "probes"}),  # the flow and link series outgrew 10 kB
             ("2s", 1 << 20, 8 << 20, series | {"rtt", "sojourn"}))
    for duration, spill_bytes, keep_bytes, handed in cases:
        d = tmp_path / f"{duration}-{spill_bytes}-{keep_bytes}"
        d.mkdir()
        out = _core.run(TWO_FLOWS, None, [f'duration="{duration}"'], None, str(d), spill_bytes, keep_bytes)
        assert set(out["tables"]) == handed, (duration, spill_bytes, keep_bytes)
        mem = ccbench.run(TWO_FLOWS, set=[f'duration="{duration}"'])
        r = ccbench.Result(out["summary"], out["scenario"], {}, {k: Path(v) for k, v in out["files"].items()},
                           out["page_buckets"], native=out["tables"])
        for name in SCHEMA:
            assert_frame_equal(r.tables[name], mem.tables[name])


def test_a_spill_directory_that_cannot_be_written_is_an_os_error(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(OSError, match="sojourn.parquet|rtt.parquet|flow_series.parquet"):
        ccbench.run(TINY, spill_dir=missing)
