"""Suite files: expansion of axes into overrides, run keys, and located errors."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pytest

import ccbench
from ccbench.plan.expr import ExprError, evaluate, parse, parse_seconds
from ccbench.report.suite import render
from ccbench.plan.suite import SEED_BOX, SUITE_PLOTS, SuiteError, format_value
from ccbench.plan.suite_file import builtin_suites, load_suite, parse_suite
from conftest import TINY, line_of

REPO = Path(__file__).resolve().parents[1]

SUITE = """\
name = "mini"
description = "tiny x 2 rates x 2 qdiscs"
base = "tiny.toml"
set = ['duration="1s"']

[[axes]]
name = "rate"
label = "rate"
values = ["5Mbit", "10Mbit"]
set = ["links.bottleneck.rate={value}", "links.ret.rate={value}"]

[[axes]]
name = "qdisc"
values = ["fifo", "fq_codel"]
labels = { fifo = "FIFO" }
[axes.set]
fifo = ['links.bottleneck.qdisc={ kind = "pfifo", limit = 100 }']
fq_codel = 'links.bottleneck.qdisc={ kind = "fq_codel" }'

[report]
plots = []

[[report.tables]]
title = "goodput"
rows = "qdisc"
cols = "rate"
cell = 'goodput_mbps(flow="f1")'
"""


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    path = tmp_path / "mini.toml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def test_axes_expand_to_every_combination_in_order(suite_file: Path) -> None:
    suite = load_suite(suite_file)
    points = suite.points()
    assert [dict(p.values) for p in points] == [
        {"rate": "5Mbit", "qdisc": "fifo"}, {"rate": "5Mbit", "qdisc": "fq_codel"},
        {"rate": "10Mbit", "qdisc": "fifo"}, {"rate": "10Mbit", "qdisc": "fq_codel"},
    ]
    # fixed overrides first, then each axis in order; one value may set several keys
    assert [o.text for o in points[2].overrides] == [
        'duration="1s"', "links.bottleneck.rate=10Mbit", "links.ret.rate=10Mbit",
        'links.bottleneck.qdisc={ kind = "pfifo", limit = 100 }',
    ]
    assert [o.text for o in points[1].overrides][-1] == 'links.bottleneck.qdisc={ kind = "fq_codel" }'
    assert [p.slug for p in points] == ["rate=5Mbit,qdisc=fifo", "rate=5Mbit,qdisc=fq_codel",
                                        "rate=10Mbit,qdisc=fifo", "rate=10Mbit,qdisc=fq_codel"]
    qdisc = suite.axis("qdisc")
    assert (qdisc.label, qdisc.label_of("fifo"), qdisc.label_of("fq_codel")) == ("qdisc", "FIFO", "fq_codel")


def test_key_shorthand_writes_toml_values_and_format_labels(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    text = """\
base = "tiny.toml"
[[axes]]
name = "n"
values = [1, 3]
key = "flows.f1.count"
format = "{value} TCP"
[[axes]]
name = "ecn"
values = [true, false]
key = "flows.f1.ecn"
[[axes]]
name = "delay"
values = ["5ms"]
key = "links.0.delay"
"""
    suite = parse_suite(text, "s.toml", path=tmp_path / "s.toml")
    assert suite.name == "s"  # the file's stem
    points = suite.points()
    assert len(points) == 4
    assert [o.text for o in points[0].overrides] == ["flows.f1.count=1", "flows.f1.ecn=true", 'links.0.delay="5ms"']
    assert [suite.axis("n").label_of(v) for v in (1, 3)] == ["1 TCP", "3 TCP"]
    plan = suite.plan()
    assert all(p.error is None for p in plan)
    assert ccbench.run(plan[2].scenario).flows["id"].to_list() == ["f1.1", "f1.2", "f1.3"]


def test_runs_are_keyed_by_the_hash_of_the_resolved_scenario(suite_file: Path) -> None:
    suite = load_suite(suite_file)
    plan = suite.plan()
    for run, point in zip(plan, suite.points()):
        resolved = ccbench.validate(TINY, set=[o.text for o in point.overrides])
        assert run.scenario == resolved
        assert run.hash == hashlib.sha256(resolved.encode()).hexdigest()[:12]
        assert run.key == f"{point.slug}-{run.hash}"
    assert len({r.hash for r in plan}) == 4
    # Another spelling of the same scenario (index instead of id) keeps the keys.
    respelled = load_suite(suite_file).with_overrides([])
    text = SUITE.replace("links.bottleneck.rate={value}", "links.0.rate={value}")
    suite_file.write_text(text, encoding="utf-8")
    assert [r.key for r in load_suite(suite_file).plan()] == [r.key for r in respelled.plan()]
    # Changing one axis value changes only the keys of its runs.
    suite_file.write_text(text.replace('"10Mbit"]', '"20Mbit"]'), encoding="utf-8")
    changed = load_suite(suite_file).plan()
    assert [a.key == b.key for a, b in zip(plan, changed)] == [True, True, False, False]


def test_inline_base_is_the_same_scenario_and_errors_point_into_the_suite(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "mini.toml").write_text(SUITE, encoding="utf-8")
    by_file = load_suite(tmp_path / "mini.toml")
    inline = SUITE.replace('base = "tiny.toml"\n', "") + "\n[base]\n" + _nest(TINY)
    assert [r.key for r in parse_suite(inline, "inline.toml").plan()] == [r.key for r in by_file.plan()]

    bad = inline.replace('rate = "10Mbit"', 'rate = "10MB"', 1)
    with pytest.raises(SuiteError) as err:
        parse_suite(bad, "inline.toml").plan()
    assert err.value.file == "inline.toml"
    assert err.value.line == line_of(bad, '"10MB"')
    assert "links[0].rate" in str(err.value) and f"inline.toml:{err.value.line}:" in str(err.value)


def _nest(scenario: str) -> str:
    """A scenario's text as the inside of a [base] table."""
    return (scenario.replace("[[links]]", "[[base.links]]").replace("[[flows]]", "[[base.flows]]")
            .replace("[metrics]", "[base.metrics]"))


def test_suite_errors_name_file_line_and_key_and_all_are_reported(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    text = """\
name = "bad name!"
base = "tiny.toml"
colour = "blue"

[[axes]]
name = "rate"
values = ["5Mbit", "10Mbit"]
[axes.set]
"5Mbit" = ["links.0.rate=5Mbit"]
"7Mbit" = ["links.0.rate=7Mbit"]

[[axes]]
name = "q"
values = [1]
set = ["no equals sign"]

[[report.tables]]
title = "t"
rows = "qdisc"
cols = "rate"
cell = "mean(goodput_mbps"
format = "{:.2q}"
"""
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    found = {(p["key"], p["line"]) for p in err.value.problems}
    expected = {
        ("name", 1), ("colour", 3),
        ("axes[0].set.7Mbit", line_of(text, '"7Mbit" =')),
        ("axes[0].set", line_of(text, "[axes.set]")),  # 10Mbit has no entry
        ("axes[1].set", line_of(text, "no equals sign")),
        ("report.tables[0].rows", line_of(text, 'rows = "qdisc"')),
        ("report.tables[0].cell", line_of(text, "cell =")),
        ("report.tables[0].format", line_of(text, "format =")),
    }
    assert expected <= found, found
    message = str(err.value)
    assert f"{path}:1:1: name:" in message
    assert f"{path}:3:1: colour: unknown key" in message
    assert "10Mbit" in message and "'qdisc' is not an axis (axes: rate, q)" in message
    assert isinstance(err.value, ccbench.ScenarioError)  # the CLI prints it and exits 2


def test_toml_syntax_errors_are_located(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as err:
        parse_suite('base = "x.toml"\n[[axes]\n', "broken.toml")
    assert err.value.line == 2 and str(err.value).startswith("broken.toml:2:")


def test_missing_base_file_is_a_suite_error(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('base = "nope.toml"\n', encoding="utf-8")
    with pytest.raises(SuiteError, match=r"s\.toml:1:1: base: cannot read scenario .*nope\.toml.*no such file"):
        load_suite(path)


def test_an_override_that_does_not_fit_is_a_failed_run_at_its_line(suite_file: Path) -> None:
    text = SUITE.replace("fq_codel = 'links.bottleneck", "fq_codel = 'links.bottlenek")
    suite_file.write_text(text, encoding="utf-8")
    plan = load_suite(suite_file).plan()
    failed = [r for r in plan if r.error]
    assert [dict(r.values)["qdisc"] for r in failed] == ["fq_codel", "fq_codel"]
    assert all(r.scenario is None for r in failed)
    line = line_of(text, "fq_codel = 'links.bottlenek")
    assert f"{suite_file}:{line}: axes[1].set.fq_codel: links.bottlenek.qdisc=" in failed[0].error
    assert 'no element with id "bottlenek"' in failed[0].error
    assert len({r.key for r in plan}) == 4  # failed runs still have distinct keys


def test_an_invalid_base_is_a_suite_error(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY.replace('duration = "2s"', 'duration = "2 fortnights"'))
    path = tmp_path / "s.toml"
    path.write_text('base = "tiny.toml"\n', encoding="utf-8")
    with pytest.raises(SuiteError, match=r"tiny\.toml:2:12: duration"):
        load_suite(path).plan()


def test_builtin_suites_are_listed_and_valid(run_cli) -> None:
    names = dict(builtin_suites())
    assert {"rtt-fairness", "bufferbloat"} <= set(names)
    rtt = load_suite("rtt-fairness")
    plan = rtt.plan()
    assert len(plan) == 12 and not any(r.error for r in plan)
    assert [a.values for a in rtt.axes] == [("fifo", "codel", "fq_codel"), (1, 2, 4, 8)]
    bloat = load_suite("bufferbloat").plan()
    assert len(bloat) == 9 and not any(r.error for r in bloat)
    assert 'kind = "fq_codel"' in bloat[-1].scenario and 'rate = "100Mbit"' in bloat[-1].scenario

    # Every built-in suite expands into valid scenarios.
    expected = {"l4s-dualpi2": 18, "rtt-independence": 4, "scream-test-record": 5, "scream-test-record-1": 4,
                "scream-test-record-3": 5, "scream-interop": 24}
    for name, runs in expected.items():
        plan = load_suite(name).plan()
        assert len(plan) == runs and not any(r.error for r in plan), name

    listed = run_cli("suite", "list")
    assert listed.exit_code == 0
    for name, description in names.items():
        assert name in listed.stdout and description in listed.stdout


def test_cli_reports_suite_errors_without_traceback(run_cli, tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('base = "tiny.toml"\nfoo = 1\n', encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    result = run_cli("suite", "run", "s.toml", "--dry-run")
    assert result.exit_code == 2
    assert result.stderr.strip() == "s.toml:2:1: foo: unknown key (allowed: name, description, base, set, axes, seeds, exclude, when, report)"
    unknown = run_cli("suite", "run", "no-such-suite")
    assert unknown.exit_code == 2 and "rtt-fairness" in unknown.stderr and "Traceback" not in unknown.stderr


def test_dry_run_lists_runs(run_cli, suite_file: Path) -> None:
    result = run_cli("suite", "run", suite_file, "--dry-run")
    assert result.exit_code == 0, result.stderr
    keys = [r.key for r in load_suite(suite_file).plan()]
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == keys


# --- metric expressions -------------------------------------------------------------------------


def test_expressions_read_the_summary(tiny_result: ccbench.Result) -> None:
    run = tiny_result
    flows = {f["id"]: f for f in tiny_result.summary["flows"]}
    links = {link["id"]: link for link in tiny_result.summary["links"]}
    g1, g2 = flows["f1"]["goodput_mbps"], flows["f2"]["goodput_mbps"]
    assert evaluate('goodput_mbps(flow="f1")', run) == g1
    assert evaluate('goodput_mbps("f2")', run) == g2
    assert evaluate('mean(goodput_mbps, flows="f*")', run) == pytest.approx((g1 + g2) / 2)
    assert evaluate("sum(goodput_mbps())", run) == pytest.approx(g1 + g2)
    assert evaluate('ratio(goodput_mbps, "f1", "f2")', run) == pytest.approx(g1 / g2)
    assert evaluate('share(goodput_mbps, "f1")', run) == pytest.approx(g1 / (g1 + g2))
    assert evaluate("jain", run) == tiny_result.summary["jain"]
    assert evaluate('jain(goodput_mbps, flows="*")', run) == pytest.approx((g1 + g2) ** 2 / (2 * (g1**2 + g2**2)))
    assert evaluate('rtt_p99_ms(probe="ping")', run) == tiny_result.summary["probes"][0]["rtt_ms"]["p99"]
    assert evaluate('sojourn_p99_ms(link="bottleneck")', run) == links["bottleneck"]["sojourn_ms"]["p99"]
    assert evaluate('utilization(link="bottleneck") * 100 - 1', run) == pytest.approx(
        links["bottleneck"]["utilization"] * 100 - 1)
    assert evaluate('max(rtt_p99_ms, probes="*")', run) == tiny_result.summary["probes"][0]["rtt_ms"]["p99"]


def test_interval_expressions_read_the_tables(tiny_result: ccbench.Result) -> None:
    run = tiny_result
    series = tiny_result.series
    window = series.filter((series["flow_id"] == "f2") & (series["time_s"] > 0.5) & (series["time_s"] <= 1.5))
    assert window.height == 10
    assert evaluate('mean_goodput(flow="f2", from="500ms", to="1.5s")', run) == pytest.approx(
        window["goodput_mbps"].mean())
    pings = tiny_result.tables["probes"]
    late = pings.filter(pings["time_s"] >= 1.0)["rtt_ms"]
    assert evaluate('mean_rtt(probe="ping", from=1)', run) == pytest.approx(late.mean())
    assert evaluate('rtt_percentile(50, probe="ping", from="1s")', run) == pytest.approx(late.median())
    assert evaluate('mean_series("cwnd_pkts", flow="f2", from="500ms", to="1.5s")', run) == pytest.approx(
        window["cwnd_pkts"].mean())
    assert evaluate('max_series("goodput_mbps", flow="f2", from="500ms", to="1.5s")', run) == pytest.approx(
        window["goodput_mbps"].max())
    assert window["goodput_mbps"].max() > window["goodput_mbps"].mean()
    # A series that is NaN where it does not apply (α of a classic flow) has no data.
    assert tiny_result.series["alpha"].is_nan().all()
    assert evaluate('mean_series("alpha", flow="f1")', run) is None


@pytest.mark.parametrize(("text", "message"), [
    ("goodput_mbps", "gives 2 values; wrap it in mean()"),
    ('goodput_mbps(flow="nope")', "no flow matches 'nope' (flows: f1, f2)"),
    ('goodptu(flow="f1")', "flows have no metric 'goodptu'"),
    ("utilisation", "unknown metric 'utilisation'"),
    ("ratio(1, 0)", "division by zero"),
    ('mean_goodput(flow="f1", from="2s", to="1s")', "'to' (1 s) is before 'from' (2 s)"),
    ('mean_series("cwnd", flow="f1")', "flow_series has no column 'cwnd' (it has: goodput_mbps, "),
    ('mean_series(cwnd_pkts, flow="f1")', 'mean_series() takes a flow_series column'),
    ('max_series(srtt_ms, flow="f1")', 'max_series() takes a flow_series column'),
])
def test_expression_errors_say_what_is_wrong(tiny_result: ccbench.Result, text: str, message: str) -> None:
    with pytest.raises(ExprError, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate(text, tiny_result)


@pytest.mark.parametrize(("text", "col"), [
    ("mean(goodput_mbps", 18), ("1 +", 4), ("goodput_mbps(flow=1, flow=2)", 22), ("a $ b", 3),
    ('ratio(goodput_mbps, "a")', 1), ('goodput_mbps(flow="a", link="b")', 1), ("__import__('os')", None),
])
def test_expression_syntax_is_checked_before_running(text: str, col: int | None) -> None:
    if col is None:  # a name that is not a function is a metric: harmless, unknown at evaluation
        parse(text)
        return
    with pytest.raises(ExprError) as err:
        parse(text)
    assert err.value.col == col


def test_format_value() -> None:
    assert format_value(0.12345, "{:.2f}") == "0.12"
    assert format_value(0.5, "{:.0%} busy") == "50% busy"
    assert format_value(None, "{:.2f}") == "—"
    assert [format_value(x, None) for x in (123.4, 12.34, 1.234, 0.1234)] == ["123", "12.3", "1.23", "0.123"]
    with pytest.raises(ValueError):
        format_value(1.0, "{0.__class__}")


@pytest.mark.parametrize("name, version", [
    ("scream-test-record", "76a298a"), ("scream-test-record-1", "994f9a4"),
    ("scream-test-record-3", "76a298a"), ("scream-interop", "76a298a"),
])
def test_scream_suites_resolve_to_the_code_and_network_the_experiments_ran(name: str, version: str) -> None:
    import tomllib

    suite = load_suite(name)
    assert f"SCReAM {version} (" in suite.description and "5 ms receiver" in suite.description
    assert "min_qlen_step 2" in suite.description
    for run in suite.plan():
        assert not run.error, run.error
        doc = tomllib.loads(run.scenario)
        [scream] = [f for f in doc["flows"] if f["id"] == "scream"]
        media = scream["media"]
        assert media["version"] == version
        # The version picks the receiver (5 ms) and the α filter: no override.
        assert "feedback_interval" not in media and "l4s_alpha_gain" not in media
        dualpi2 = [link["qdisc"] for link in doc["links"] if link.get("qdisc", {}).get("kind") == "dualpi2"]
        assert dualpi2 and all(q["min_qlen_step"] == 2 for q in dualpi2)
        pragues = [f for f in doc["flows"] if f.get("cc") == "prague"]
        assert pragues and all(f["cc_params"]["version"] == "v0.6" for f in pragues)
    assert "TCP Prague v0.6" in suite.description
    # head stays one override away.
    head = suite.with_overrides(['flows.scream.media.version="head"']).plan()[0]
    assert tomllib.loads(head.scenario)["flows"][0]["media"]["version"] == "head"


# Notes kept outside the repository, which built-in suites used to cite.
OUTSIDE_NOTES = re.compile(r"reference/|shared reference|\b(?:scenarios|scream|scream-2024|aqm|transports|flent-format)\.md\b")


def test_built_in_suites_cite_only_sources_anyone_can_open() -> None:
    """Suite files cite primary sources or the repository's docs/, never notes that are not shipped."""
    root = Path(ccbench.__file__).parent / "suites"
    files = sorted(root.rglob("*.toml"))
    assert len(files) > 20
    for f in files:
        text = f.read_text()
        assert not OUTSIDE_NOTES.search(text), f"{f.relative_to(root)}: {OUTSIDE_NOTES.search(text)[0]}"
        for doc in re.findall(r"\bdocs/[\w.-]+\.md\b", text):
            assert (REPO / doc).is_file(), f"{f.name} cites {doc}, which is not in the repository"


def test_scream_interop_offers_no_quic_runs_it_cannot_model() -> None:
    """The interop's Apple QUIC flows are not modelled; Prague standing in for them only repeated its own runs."""
    suite = load_suite("scream-interop")
    assert suite.axis("competition").values == ("prague2", "prague10")
    assert not any("QUIC" in t.title for t in suite.report.tables)
    assert "Apple" in suite.text and "not modelled" in suite.description


def test_scream_interop_runs_past_the_stop_and_its_tables_read_scream_s_response() -> None:
    """The interop report reads SCReAM's overshoot after the competing flows stop: every run goes on 20 s
    past the stop, and an "after" table per competition and direction reads that window of the run."""
    suite = load_suite("scream-interop")
    stops = {"prague2": 60.0, "prague10": 150.0}
    for run in suite.plan():
        doc = tomllib.loads(run.scenario)
        l4s = [f for f in doc["flows"] if f["id"].startswith("l4s")]
        stop = stops[run.values["competition"]]
        assert {parse_seconds(f["stop"]) for f in l4s} == {stop}
        assert parse_seconds(doc["duration"]) == stop + 20
    after = [t for t in suite.report.tables if t.title.startswith("SCReAM after")]
    assert sorted((t.where["competition"], t.where["direction"]) for t in after) == sorted(
        (c, d) for c in stops for d in ("down", "up"))
    # One run: 10 Prague flows stop at 150 s; at 52 ms SCReAM takes seconds to climb back.
    table = next(t for t in after if t.where == {"competition": "prague10", "direction": "down"})
    planned = suite.plan_values({"direction": "down", "rtt": 52, "competition": "prague10", "rand": 0})
    result = ccbench.run(planned.scenario)
    cells = {label: evaluate(e, result) for label, e, _ in table.columns}
    before, soon, settled = (cells[k] for k in ("last 5 s with 10 L4S (Mbit/s)", "0-5 s after (Mbit/s)",
                                                "5-20 s after (Mbit/s)"))
    assert before < 0.2 * settled and before < soon < settled, cells
    assert 1.0 < cells["back at 90 % after (s)"] < 15.0, cells
    assert settled <= cells["peak 100 ms after (Mbit/s)"] <= 100.0, cells
    assert 0 < cells["queue delay p99 after (ms)"] <= cells["queue delay max after (ms)"], cells
    assert cells["drops, whole run"] == result.summary["links"][0]["drops"]


def test_test_record_suites_carry_the_published_tables() -> None:
    tables = {t.title: t for t in load_suite("scream-test-record").report.tables}
    main = tables["SCReAM mean bitrate (Mbit/s) while N TCP Prague flows compete"]
    end = tables["SCReAM mean bitrate (Mbit/s), last 5 s of each phase"]
    assert dict(main.published)["25"] == (78.0, 60.0, 48.0, 38.0, 29.0)
    assert main.published == end.published and "2024-10-31" in (main.published_source or "")
    assert [e.text for _, e, _ in end.columns][1] == 'mean_goodput(flow="scream", from="35s", to="40s")'
    t1 = load_suite("scream-test-record-1").report.tables[0]
    assert dict(t1.published)["2.0"] == (41.0, 31.0, 29.0, 29.0, 26.0) and "994f9a4" in (t1.published_source or "")


def test_published_rows_must_name_axis_values_and_fit_the_columns(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    text = """\
base = "tiny.toml"

[[axes]]
name = "rate"
values = ["5Mbit", "10Mbit"]
key = "links.0.rate"

[[report.tables]]
title = "t"
rows = "rate"
columns = [{ label = "a", cell = "jain" }, { label = "b", cell = "jain" }]
published = { source = "x", rows = { "7Mbit" = [1, 2], "5Mbit" = [1] } }
"""
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    message = str(err.value)
    assert "report.tables[0].published.rows.7Mbit: '7Mbit' is not a value of axis 'rate'" in message
    assert "report.tables[0].published.rows.5Mbit: expected a list of 2 numbers" in message


class _Synthetic:
    """A run with hand-made tables: the event functions' arithmetic checked on known samples."""

    def __init__(self, tables: dict[str, dict[str, list[float]]]) -> None:
        import polars as pl

        self.summary = {"duration_s": 20.0, "flows": [{"id": "f"}], "probes": [{"id": "ping"}], "links": []}
        self.tables = {name: pl.DataFrame(cols) for name, cols in tables.items()}

    def table(self, name: str):
        return self.tables[name]


def test_event_functions_measure_spikes_and_recovery() -> None:
    # Pings at 10 ms floor; a spike to 50 ms between 2.0 and 2.6 s; a 70 ms
    # sample outside the window must not count.
    t = [1.0, 1.5, 2.0, 2.2, 2.4, 2.6, 3.0, 3.5, 9.0]
    rtt = [10.0, 10.0, 40.0, 50.0, 45.0, 31.0, 12.0, 10.0, 70.0]
    # Goodput collapses at 4 s and climbs back: 90 % of the settled 40 Mbit/s is first reached at 6.5 s.
    g_t = [4.5, 5.0, 5.5, 6.0, 6.5, 7.0, 8.0, 9.0, 10.0]
    g = [2.0, 10.0, 20.0, 30.0, 37.0, 40.0, 40.0, 40.0, 40.0]
    run = _Synthetic({"probes": {"time_s": t, "probe": [0] * len(t), "rtt_ms": rtt},
                      "flow_series": {"time_s": g_t, "flow": [0] * len(g_t), "goodput_mbps": g}})
    assert evaluate('rtt_spike_ms(probe="ping", from=1, to=5)', run) == pytest.approx(40.0)
    # Half height: 10 + 20 = 30 ms; samples at or above it run from 2.0 to 2.6 s.
    assert evaluate('rtt_spike_s(probe="ping", from=1, to=5)', run) == pytest.approx(0.6)
    assert evaluate('rtt_spike_s(probe="ping", from=3.5, to=5)', run) == 0.0
    assert evaluate('recovery_s(flow="f", from=4, to=10)', run) == pytest.approx(2.5)
    # Axis values of a suite's run are names: utilisation against a bandwidth axis.
    assert evaluate('mean_goodput(flow="f", from=7, to=10) / bw', run, {"bw": 50, "qdisc": "pie"}) == \
        pytest.approx(0.8)
    with pytest.raises(ExprError, match="unknown metric 'qdisc'"):
        evaluate("qdisc", run, {"bw": 50, "qdisc": "pie"})


def test_recovery_needs_the_goodput_held_not_one_sample_of_data_sent_before_the_event() -> None:
    # 100 ms samples of a flow at 48 Mbit/s; an event at 10 s. The sample ending at 10.1 s still
    # delivers what was in flight before it (50 Mbit/s), then goodput collapses to 10; it climbs
    # above 90 % of the settled 48 (43.2) for 0.5 s from 11.5 s, falls back, and holds from 13.2 s.
    t = [round(10 + k / 10, 6) for k in range(1, 101)]  # 10.1 .. 20.0

    def goodput(x: float) -> float:
        if x <= 10.1:
            return 50.0
        if 11.5 <= x < 12.0:
            return 45.0
        return 10.0 if x < 13.2 else 48.0

    run = _Synthetic({"flow_series": {"time_s": t, "flow": [0] * len(t), "goodput_mbps": [goodput(x) for x in t]}})
    # The first sample alone (what a one-sample definition reports) would say 0.1 s.
    assert evaluate('recovery_s(flow="f", from=10, to=20, hold="100ms")', run) == pytest.approx(0.1)
    # Held for 1 s (the default): from the sample ending at 13.2 s on.
    assert evaluate('recovery_s(flow="f", from=10, to=20)', run) == pytest.approx(3.2)
    # A 0.5 s hold accepts the 11.5..11.9 s excursion (five samples spanning 11.4..11.9 s).
    assert evaluate('recovery_s(flow="f", from=10, to=20, hold="0.5s")', run) == pytest.approx(1.5)
    assert evaluate('recovery_s(flow="f", from=10, to=20, hold="0.6s")', run) == pytest.approx(3.2)
    # Never held that long inside the window: no data.
    assert evaluate('recovery_s(flow="f", from=10, to=20, hold="7s")', run) is None
    with pytest.raises(ExprError, match="unknown argument 'hold'"):
        evaluate('mean_goodput(flow="f", hold=1)', run)


GRID = """\
name = "grid"
base = "tiny.toml"
set = ['duration="1s"']
exclude = [{ rate = "10Mbit", qdisc = ["fifo"] }]

[[axes]]
name = "rate"
values = ["5Mbit", "10Mbit"]
set = ["links.bottleneck.rate={value}"]

[[axes]]
name = "qdisc"
values = ["fifo", "fq_codel"]
[axes.set]
fifo = ['links.bottleneck.qdisc={ kind = "pfifo", limit = 100 }']
fq_codel = ['links.bottleneck.qdisc={ kind = "fq_codel" }']

[[when]]
where = { qdisc = "fq_codel" }
set = ['links.ret.rate="{rate}"']
"""


def test_exclude_leaves_points_out_and_when_adds_overrides_with_axis_values(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "grid.toml").write_text(GRID, encoding="utf-8")
    suite = load_suite(tmp_path / "grid.toml")
    assert suite.size == 3
    points = {(p.values["rate"], p.values["qdisc"]): [o.text for o in p.overrides] for p in suite.points()}
    assert set(points) == {("5Mbit", "fifo"), ("5Mbit", "fq_codel"), ("10Mbit", "fq_codel")}
    assert points[("10Mbit", "fq_codel")][-1] == 'links.ret.rate="10Mbit"'
    assert not any("links.ret" in o for o in points[("5Mbit", "fifo")])
    plan = suite.plan()
    assert len(plan) == 3 and not any(r.error for r in plan)
    only = suite.restricted({"qdisc": "fq_codel"})
    assert only.size == 2 and all(p.values["qdisc"] == "fq_codel" for p in only.points())
    with pytest.raises(SuiteError, match=r"\"red\" is not a value of axis 'qdisc' \(fifo, fq_codel\)"):
        suite.restricted({"qdisc": ["red"]})
    with pytest.raises(SuiteError, match="no axis 'nope'"):
        suite.restricted({"nope": 1})
    bad = GRID.replace('qdisc = ["fifo"]', 'qdisc = ["fifo", "red"]').replace('where = { qdisc', 'where = { qdsic')
    (tmp_path / "bad.toml").write_text(bad, encoding="utf-8")
    with pytest.raises(SuiteError) as e:
        load_suite(tmp_path / "bad.toml")
    text = str(e.value)
    assert 'bad.toml:4:1: exclude[0].qdisc: "red" is not a value of axis \'qdisc\' (fifo, fq_codel)' in text
    assert f"bad.toml:{line_of(bad, 'where = {')}:" in text and "no axis 'qdsic' (axes: rate, qdisc)" in text


def test_a_suite_of_suites_runs_its_parts_into_one_directory_with_one_report(tmp_path: Path, run_cli) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "parts").mkdir()
    # The parts ask for every cross-run PNG (none by default) but seed_box: they have no seed axis.
    asked = [n for n in SUITE_PLOTS if n != SEED_BOX]
    grid_png = GRID + f"\n[report]\nsuite_plots = {json.dumps(asked)}\n"
    (tmp_path / "parts" / "grid.toml").write_text(grid_png.replace('base = "tiny.toml"', 'base = "../tiny.toml"'),
                                                  encoding="utf-8")
    (tmp_path / "both.toml").write_text(
        'name = "both"\ndescription = "two parts"\nparts = ["parts/grid.toml", '
        '{ suite = "parts/grid.toml", only = { qdisc = "fifo" }, set = [\'seed=7\'] }]\n', encoding="utf-8")
    with pytest.raises(SuiteError, match="two parts are named 'grid'"):
        load_suite(tmp_path / "both.toml")
    (tmp_path / "parts" / "fifo.toml").write_text(
        grid_png.replace('base = "tiny.toml"', 'base = "../tiny.toml"').replace('name = "grid"', 'name = "fifo"'),
        encoding="utf-8")
    (tmp_path / "both.toml").write_text(
        'name = "both"\ndescription = "two parts"\nparts = ["parts/grid.toml", '
        '{ suite = "parts/fifo.toml", only = { qdisc = "fifo" }, set = [\'seed=7\'] }]\n', encoding="utf-8")
    suite = load_suite(tmp_path / "both.toml")
    assert [p.name for p in suite.parts] == ["grid", "fifo"] and suite.size == 4
    assert all(any(o.text == "seed=7" for o in p.overrides) for p in suite.parts[1].points())
    result = run_cli("suite", "run", tmp_path / "both.toml", "-o", f"{tmp_path / 'out'}/", "-j", "1")
    assert result.exit_code == 0, result.stderr
    root = tmp_path / "out" / "both"
    for part, runs in (("grid", 3), ("fifo", 1)):
        manifest = json.loads((root / part / "suite.json").read_text())
        assert len(manifest["runs"]) == runs and manifest["counts"]["ok"] == runs
        assert (root / part / "report.html").is_file()
    assert json.loads((root / "suite.json").read_text())["parts"] == ["grid", "fifo"]
    md = (root / "report.md").read_text()
    assert md.startswith("# both") and "## grid" in md and "## fifo" in md
    frame = ccbench.load_suite(root)
    assert set(frame["part"]) == {"grid", "fifo"} and set(frame.filter(frame["part"] == "fifo")["seed"]) == {7}
    only = run_cli("suite", "run", tmp_path / "both.toml", "--only", "rate=5Mbit", "--dry-run")
    assert only.exit_code == 0 and "grid: 2 runs" in only.stderr and "fifo: 1 runs" in only.stderr
    # Rendered again, both parts' figures drawn by one pool of workers: each once, the same pages and pixels.
    # (Each run's own page, runs/<key>/report.html, is written with the run, not by the report.)
    reports = [p for p in sorted(root.rglob("report.*")) if "runs" not in p.relative_to(root).parts]
    pages = {p: p.read_bytes() for p in reports + sorted(root.rglob("plots/*.png"))}
    assert len(pages) == 3 * 2 + 2 * len(asked)
    for png in root.rglob("plots/*.png"):
        png.unlink()
    steps: list[str] = []

    class Steps:
        def start(self, total: int) -> None:
            steps.append(f"start {total}")

        def step(self, what: str) -> None:
            steps.append(what)

    render(root, jobs=2, progress=Steps())
    assert steps[-1 - 2 * len(asked)] == f"start {2 * len(asked)}"
    assert sorted(steps[-2 * len(asked):]) == sorted(f"plot {n}" for n in asked * 2)
    assert {p: p.read_bytes() for p in pages} == pages


def test_delivery_with_rtt_takes_the_reports_axis_bounds(tiny_result: ccbench.Result) -> None:
    from ccbench.simulate.plot import delivery_with_rtt

    fig = delivery_with_rtt(tiny_result, throughput=(0, 55), rtt=(20, 70))
    left, right = fig.axes
    assert left.get_ylim() == (0, 55) and right.get_ylim() == (20, 70)
    highest = max(float(tiny_result.tables["probes"]["rtt_ms"].max()),
                  float(tiny_result.tables["flow_series"]["srtt_ms"].drop_nans().max()))
    fig = delivery_with_rtt(tiny_result, rtt=(10, "3x"))
    assert fig.axes[1].get_ylim() == pytest.approx((10, (highest - 10) * 3 + 10))
    # One line per flow's delivery rate, per flow's TCP RTT and per probe.
    flows, probes = len(tiny_result.summary["flows"]), len(tiny_result.summary["probes"])
    assert len(fig.axes[0].lines) == flows and len(fig.axes[1].lines) == flows + probes


def test_report_bounds_are_checked_and_matched_per_run(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    text = GRID + '''
[report]
plots = ["delivery_with_rtt"]

[[report.bounds]]
throughput = [0, 12]

[[report.bounds]]
where = { rate = "10Mbit" }
throughput = [0, 11]
rtt = [0, "3x"]
'''
    (tmp_path / "b.toml").write_text(text, encoding="utf-8")
    spec = load_suite(tmp_path / "b.toml").report
    assert spec.figures({"rate": "5Mbit", "qdisc": "fifo"}) == {"delivery_with_rtt": {"throughput": (0, 12)}}
    assert spec.figures({"rate": "10Mbit", "qdisc": "fifo"}) == {
        "delivery_with_rtt": {"throughput": (0, 11), "rtt": (0, "3x")}}
    (tmp_path / "bad.toml").write_text(text.replace('rtt = [0, "3x"]', 'rtt = [50, 20]'), encoding="utf-8")
    with pytest.raises(SuiteError, match=r"report.bounds\[1\].rtt: expected \[bottom, top\]"):
        load_suite(tmp_path / "bad.toml")
    # The same figure drawn by each run's page instead of as a PNG takes the same bounds.
    paged = load_suite_text(tmp_path, text.replace('plots = ["delivery_with_rtt"]', 'page_figures = ["delivery_with_rtt"]'))
    assert paged.report.figures({"rate": "10Mbit", "qdisc": "fifo"}) == {}
    assert paged.report.page({"rate": "10Mbit", "qdisc": "fifo"}) == {
        "delivery_with_rtt": {"throughput": (0, 11), "rtt": (0, "3x")}}
    assert spec.page({"rate": "10Mbit", "qdisc": "fifo"}) == {}
    with pytest.raises(SuiteError, match=r"report.page_figures: unknown plot 'timeseries' \(known: delivery_with_rtt\)"):
        load_suite_text(tmp_path, text.replace('plots = ["delivery_with_rtt"]', 'page_figures = ["timeseries"]'))


def load_suite_text(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "text.toml"
    path.write_text(text, encoding="utf-8")
    return load_suite(path)


def test_only_on_a_suite_of_suites_skips_the_parts_without_that_axis_and_says_so(tmp_path: Path, run_cli) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "grid.toml").write_text(GRID, encoding="utf-8")
    (tmp_path / "delays.toml").write_text(
        'name = "delays"\nbase = "tiny.toml"\nset = [\'duration="1s"\']\n'
        '[[axes]]\nname = "delay"\nvalues = ["5ms", "20ms"]\nset = ["links.bottleneck.delay={value}"]\n',
        encoding="utf-8")
    (tmp_path / "both.toml").write_text('name = "both"\nparts = ["grid.toml", "delays.toml"]\n', encoding="utf-8")
    suite = load_suite(tmp_path / "both.toml")
    only = suite.restricted({"rate": "5Mbit"})
    # A point without a rate axis has no rate 5Mbit: the part is left out, and listed, not run in full.
    assert [p.name for p in only.parts] == ["grid"] and only.skipped == (("delays", ("rate",)),)
    assert only.size == 2
    kept = suite.restricted({"rate": "5Mbit"}, missing="keep")
    assert [p.name for p in kept.parts] == ["grid", "delays"] and kept.size == 4
    with pytest.raises(SuiteError, match="no part has every axis"):
        suite.restricted({"rate": "5Mbit", "delay": "5ms"})
    result = run_cli("suite", "run", tmp_path / "both.toml", "--only", "rate=5Mbit", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "skipping part delays (it has no axis rate)" in result.stderr
    assert "grid: 2 runs" in result.stderr and "delays:" not in result.stderr.replace("part delays", "")


def test_suite_run_dash_o_names_the_suite_directory_as_run_does(tmp_path: Path, run_cli) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "grid.toml").write_text(GRID, encoding="utf-8")
    into = run_cli("suite", "run", "grid.toml", "-o", "mine", "-j", "1", "--only", "qdisc=fifo")
    assert into.exit_code == 0, into.stderr
    assert (tmp_path / "mine" / "suite.json").is_file() and not (tmp_path / "mine" / "grid").exists()
    parent = run_cli("suite", "run", "grid.toml", "-o", "res/", "-j", "1", "--only", "qdisc=fifo")
    assert parent.exit_code == 0 and (tmp_path / "res" / "grid" / "suite.json").is_file()
    again = run_cli("suite", "run", "grid.toml", "-o", "mine", "-j", "1", "--only", "qdisc=fifo", "--resume")
    assert again.exit_code == 0 and "from an earlier sweep" in again.stdout
    # A directory holding something else is refused before anything runs, with what would work.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("mine")
    refused = run_cli("suite", "run", "grid.toml", "-o", "docs", "-j", "1")
    assert refused.exit_code != 0 and "-o docs/" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == ["notes.txt"]
