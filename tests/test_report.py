"""Suite reports: tables computed from the runs, Markdown and self-contained HTML, plots."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

import ccbench
from ccbench.report import suite_plots as plot_suite
from ccbench.sweep import runner as sweep
from ccbench.report.suite import StoredRun, build, render
from ccbench.report.run_metrics import window_goodput_mbps
from ccbench.plan.suite import DEFAULT_SUITE_PLOTS, PLOT_TITLES, SEED_BOX, SUITE_PLOTS
from ccbench.sweep.runner import SweepInterrupted, run_suite
from conftest import TWO_FLOWS

REPORTED = """\
name = "reported"
description = "two flows at two rates and two seeds"
base = "two.toml"

[[axes]]
name = "rate"
label = "bottleneck"
values = ["5Mbit", "10Mbit"]
key = "links.bottleneck.rate"
labels = { "5Mbit" = "5 Mbit/s", "10Mbit" = "10 Mbit/s" }

[[axes]]
name = "seed"
values = [1, 2]
key = "seed"
format = "seed {value}"

[report]
plots = ["timeseries"]
suite_plots = ["goodput_box", "rtt_box", "delay_cdf", "goodput_cdf", "totals", "seed_box"]

[[report.tables]]
title = "Goodput of f1"
rows = "rate"
cols = "seed"
cell = 'goodput_mbps(flow="f1")'
format = "{:.3f}"

[[report.tables]]
title = "f2 from 0.5 s to 1.5 s"
rows = "rate"
cols = "seed"
cell = 'mean_goodput(flow="f2", from="0.5s", to="1.5s")'
format = "{:.4f} Mbit/s"

[[report.tables]]
title = "Jain"
rows = "seed"
cell = "jain"

[[report.tables]]
title = "Per-column cells"
rows = "rate"
where = { seed = 1 }
reference = "fair share"
format = "{:.3f}"
columns = [
    { label = "f1", cell = 'goodput_mbps(flow="f1")', reference = 1.5 },
    { label = "f2", cell = 'goodput_mbps(flow="f2")' },
]

[[report.tables]]
title = "Compared"
rows = "rate"
where = { seed = 1 }
format = "{:.3f}"
columns = [
    { label = "f1", cell = 'goodput_mbps(flow="f1")' },
    { label = "f2 late", cell = 'mean_goodput(flow="f2", from="0.5s", to="1.5s")' },
]
published = { source = "a made-up table", rows = { "5Mbit" = [2.0, 2.5], "10Mbit" = [5.0, 0.25] } }

[[report.columns]]
title = "f1 share"
cell = 'share(goodput_mbps, "f1")'
format = "{:.1%}"
"""
#: REPORTED asks for every cross-run PNG (a suite draws none by default).
_ASKED = 'suite_plots = ["goodput_box", "rtt_box", "delay_cdf", "goodput_cdf", "totals", "seed_box"]\n'


@pytest.fixture
def write_suite(tmp_path: Path) -> Callable[..., Path]:
    (tmp_path / "two.toml").write_text(TWO_FLOWS, encoding="utf-8")

    def write(text: str = REPORTED) -> Path:
        path = tmp_path / "suite.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sweep of REPORTED with its report, shared: the tests only read it."""
    tmp = tmp_path_factory.mktemp("report")
    (tmp / "two.toml").write_text(TWO_FLOWS, encoding="utf-8")
    (tmp / "suite.toml").write_text(REPORTED, encoding="utf-8")
    res = run_suite(tmp / "suite.toml", tmp / "out", jobs=1, progress=False)
    assert res.report == tmp / "out" / "reported" / "report.html"
    return res.dir


def _runs(root: Path) -> dict[tuple[str, int], tuple[str, dict[str, Any]]]:
    """(rate, seed) -> (run key, summary.json)."""
    manifest = json.loads((root / "suite.json").read_text())
    return {(r["values"]["rate"], r["values"]["seed"]): (r["key"], ccbench.load(root / r["dir"]).summary)
            for r in manifest["runs"]}


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_report_tables_hold_the_values_computed_from_the_runs(swept: Path) -> None:
    runs = _runs(swept)
    md = (swept / "report.md").read_text()
    page = (swept / "report.html").read_text()

    def f1(rate: str, seed: int) -> str:
        flows = {f["id"]: f for f in runs[(rate, seed)][1]["flows"]}
        return f"{flows['f1']['goodput_mbps']:.3f}"

    table = _section(md, "Goodput of f1")
    assert "| bottleneck \\ seed | seed 1 | seed 2 |" in table
    for rate, label in (("5Mbit", "5 Mbit/s"), ("10Mbit", "10 Mbit/s")):
        assert f"| {label} | {f1(rate, 1)} | {f1(rate, 2)} |" in table
        cells = "".join(f'<td class="ok" data-v="[^"]+">{re.escape(f1(rate, s))}</td>' for s in (1, 2))
        assert re.search(f"<tr><th>{re.escape(label)}</th>{cells}</tr>", page)

    window = _section(md, "f2 from 0.5 s to 1.5 s")
    for key, _ in runs.values():
        series = ccbench.load(swept / "runs" / key).series
        part = series.filter((series["flow_id"] == "f2") & (series["time_s"] > 0.5) & (series["time_s"] <= 1.5))
        assert f"{part['goodput_mbps'].mean():.4f} Mbit/s" in window

    # A table without cols has one column; the axis it leaves free gives one table per value.
    report = build(swept, plots=False)
    jain = [g for g in report.tables if g.title == "Jain"]
    assert [g.subtitle for g in jain] == ["bottleneck = 5 Mbit/s", "bottleneck = 10 Mbit/s"]
    assert [label for label, _ in jain[0].rows] == ["seed 1", "seed 2"]
    assert jain[1].rows[1][1][0].value == runs[("10Mbit", 2)][1]["jain"]


def test_report_lists_each_run_with_metadata_and_plots(swept: Path) -> None:
    runs = _runs(swept)
    md = (swept / "report.md").read_text()
    manifest = json.loads((swept / "suite.json").read_text())
    assert f"| **ccbench** | {ccbench.__version__} |" in md
    assert "| **seeds** | 1, 2 |" in md
    assert "| **runs** | 4: 4 ok, 0 failed |" in md
    commit = manifest["git_commit"] or "none (not run from a git checkout)"
    assert f"| **git commit** | {commit} |" in md
    rows = _section(md, "Runs")
    for n, (key, summary) in enumerate(runs.values(), 1):
        flows = {f["id"]: f for f in summary["flows"]}
        share = flows["f1"]["goodput_mbps"] / (flows["f1"]["goodput_mbps"] + flows["f2"]["goodput_mbps"])
        row = next(line for line in rows.splitlines() if line.startswith(f"| {n} |"))
        assert f"| {f'{share:.1%}'} |" in row and "| ok |" in row
        assert f"[timeseries](runs/{key}/timeseries.png)" in row
        assert (swept / "runs" / key / "timeseries.png").is_file()
    for name in plot_suite.PLOTS:
        assert f"(plots/{name}.png)" in md and (swept / "plots" / f"{name}.png").is_file()


def test_html_report_is_self_contained(swept: Path) -> None:
    page = (swept / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "http://" not in page and "https://" not in page  # nothing from the network
    # the only script loaded is the charting library, from assets/ beside the page (checked below)
    assert re.findall(r'<script src="([^"]*)"', page) == ["assets/uPlot.iife.min.js"]
    images = re.findall(r'<img [^>]*src="([^"]*)"', page)
    assert len(images) == len(plot_suite.PLOTS) + 1  # and seed_box: the suite has a seed axis of 2 values
    assert all(src.startswith("data:image/png;base64,") for src in images)
    for href in re.findall(r'(?:href|src)="([^"]*)"', page):
        if href.startswith("data:"):
            continue
        assert (swept / href.replace("&amp;", "&")).exists(), href  # everything linked is beside it


def test_failed_and_unrun_runs_say_so(write_suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = REPORTED.replace('values = [1, 2]\nkey = "seed"', 'values = [1, 2, -1]\nkey = "seed"')
    text = text.replace('plots = ["timeseries"]', "plots = []").replace(_ASKED, "")
    calls: list[str] = []
    real = sweep.execute

    def stop_at_fourth(task: dict[str, Any]) -> dict[str, Any]:
        calls.append(task["key"])
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(sweep, "execute", stop_at_fourth)
    with pytest.raises(SweepInterrupted) as stopped:
        run_suite(write_suite(text), tmp_path / "out", jobs=1, progress=False)
    root = stopped.value.result.dir
    md = (root / "report.md").read_text()
    table = _section(md, "Goodput of f1")
    assert "| bottleneck \\ seed | seed 1 | seed 2 | seed -1 |" in table
    assert re.search(r"\| 5 Mbit/s \| [\d.]+ \| [\d.]+ \| failed \|", table), table
    assert re.search(r"\| 10 Mbit/s \| [\d.]+ \| not run \| failed \|", table), table  # Ctrl-C in the 4th run
    assert "seed=-1: failed: " in table  # the reason follows the table
    assert "| **runs** | 6: 3 ok, 2 failed, 1 not run |" in md
    assert "(interrupted)" in md
    failed = _section(md, "Failed runs")
    assert "seed=-1" in failed and "seed" in failed and "axes[1].key" in failed
    page = (root / "report.html").read_text()
    assert '<td class="failed" title="' in page and '<td class="pending">not run</td>' in page


def test_report_command_renders_again_from_stored_results(swept: Path, run_cli) -> None:
    before = {name: (swept / name).read_text() for name in ("report.md", "report.html")}
    for name in before:
        (swept / name).unlink()
    result = run_cli("report", swept)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"report: {swept / 'report.html'}"
    assert (swept / "report.md").read_text() == before["report.md"]
    missing = run_cli("report", swept / "runs")
    assert missing.exit_code == 2 and "no suite.json" in missing.stderr


def test_plots_drawn_in_worker_processes_are_the_same(swept: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(swept, copy)
    for png in (copy / "plots").glob("*.png"):
        png.unlink()
    steps: list[str] = []

    class Steps:
        def start(self, total: int) -> None:
            pass

        def step(self, what: str) -> None:
            steps.append(what)

    assert render(copy, jobs=2, progress=Steps()) == copy / "report.html"
    names = [*plot_suite.PLOTS, "seed_box"]
    assert sorted(s for s in steps if s.startswith("plot ")) == sorted(f"plot {n}" for n in names)
    for page in ("report.md", "report.html"):
        assert (copy / page).read_text() == (swept / page).read_text()
    for name in names:  # pixel for pixel: the same figure, whichever process drew it
        assert (copy / "plots" / f"{name}.png").read_bytes() == (swept / "plots" / f"{name}.png").read_bytes(), name


def test_every_cross_run_plot_has_a_title_and_a_suite_may_ask_for_each() -> None:
    assert [*plot_suite.PLOTS, SEED_BOX] == list(SUITE_PLOTS)  # in the titles' (the report's) order
    assert set(PLOT_TITLES) == set(SUITE_PLOTS) and all(PLOT_TITLES.values())
    assert DEFAULT_SUITE_PLOTS == ()  # report.html draws them; PNGs only when asked


def test_cross_run_plots_label_axes_with_units(swept: Path) -> None:
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    labels = {}
    for name, fn in plot_suite.PLOTS.items():
        fig = fn(runs)
        assert isinstance(fig, Figure)
        labels[name] = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    assert labels["goodput_box"] == [("run", "goodput (Mbit/s)")]
    assert labels["rtt_box"] == [("run", "RTT (ms)")]
    assert [y for _, y in labels["delay_cdf"]] == ["cumulative probability"] * 2
    assert labels["delay_cdf"][0][0].startswith("queue delay at the busiest link (ms)")
    assert labels["delay_cdf"][1][0].startswith("ping RTT (ms)")
    assert [y for _, y in labels["totals"]] == ["total goodput (Mbit/s)", "ping RTT (ms)"]
    # one box per flow and probe per run, colored by kind
    fig = plot_suite.rtt_box(runs)
    boxes = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    assert len(boxes) == 1 and len(boxes[0].get_paths()) == 3 * len(runs)
    # each box spans its flow's quartiles; its median line and whisker ends are at its other statistics
    stats = [st for _, run in runs for _, _, st in plot_suite._groups(run, "rtt", "flow", "rtt_ms", "flows")
             + plot_suite._groups(run, "probes", "probe", "rtt_ms", "probes")]
    spans = [y for p in boxes[0].get_paths() for y in (p.vertices[:, 1].min(), p.vertices[:, 1].max())]
    assert spans == pytest.approx([y for st in stats for y in (st["q1"], st["q3"])])
    lines = [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]
    ys = sorted(y for c in lines for seg in c.get_segments() for y in seg[:, 1])
    ends = [st[k] for st in stats for k in ("med", "med", "q1", "whislo", "q3", "whishi") + ("whislo", "whishi") * 2]
    assert ys == pytest.approx(sorted(ends))
    assert plot_suite.kind_color("cubic") == "tab:blue" and plot_suite.kind_color("ping") == "tab:gray"
    assert plot_suite.kind_color("newcc") == plot_suite.kind_color("newcc")


def test_box_statistics_are_each_flows_sample_quantiles(swept: Path) -> None:
    """Each box: the 5/25/50/75/95th percentiles and mean of its flow's samples after the warm-up."""
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    boxes = 0
    for _, run in runs:
        rtt = run.table("rtt").filter(pl.col("time_s") >= float(run.summary.get("warmup_s") or 0))
        for i, (name, kind, stats) in enumerate(plot_suite._groups(run, "rtt", "flow", "rtt_ms", "flows")):
            values = rtt.filter(pl.col("flow") == i)["rtt_ms"]
            assert (name, kind) == (run.summary["flows"][i]["id"], "cubic")
            for key, q in (("whislo", 0.05), ("q1", 0.25), ("med", 0.5), ("q3", 0.75), ("whishi", 0.95)):
                assert stats[key] == pytest.approx(values.quantile(q, interpolation="linear"), rel=1e-12), key
            assert stats["mean"] == pytest.approx(values.mean(), rel=1e-12)
            boxes += 1
    assert boxes >= len(runs)


class _Samples:
    """A run of eight flows of two kinds whose samples carry ids out of range and nulls too."""

    summary = {"flows": [{"id": f"f{i}", "cc": "cubic" if i < 5 else "bbr"} for i in range(8)]}

    def table(self, name: str, columns: list[str] | None = None) -> pl.DataFrame:
        return pl.DataFrame({"time_s": [0.0] * 12, "flow": [0, 1, 2, 3, 4, 5, 6, 7, 9, None, 5, 0],
                             "rtt_ms": [1.0, 2, 3, 4, 5, 10, 20, 30, 99, 99, None, float("nan")]},
                            schema_overrides={"flow": pl.UInt32})


def test_many_flows_pool_their_samples_by_kind() -> None:
    groups = plot_suite._groups(_Samples(), "rtt", "flow", "rtt_ms", "flows")
    assert [(name, kind) for name, kind, _ in groups] == [("cubic (all)", "cubic"), ("bbr (all)", "bbr")]
    cubic, bbr = groups[0][2], groups[1][2]
    assert (cubic["med"], cubic["mean"], cubic["whislo"]) == (3.0, 3.0, pytest.approx(1.2))  # 1..5; NaN dropped
    assert (bbr["med"], bbr["mean"], bbr["whishi"]) == (20.0, 20.0, pytest.approx(29.0))  # 10, 20, 30; null dropped


def test_render_returns_the_html_path(swept: Path) -> None:
    assert render(swept) == swept / "report.html"


def test_explicit_columns_evaluate_each_expression_on_the_same_run(swept: Path) -> None:
    runs = _runs(swept)
    table = _section((swept / "report.md").read_text(), "Per-column cells (seed = seed 1)")
    assert "| bottleneck | f1 | f2 |" in table
    for rate, label in (("5Mbit", "5 Mbit/s"), ("10Mbit", "10 Mbit/s")):
        flows = {f["id"]: f for f in runs[(rate, 1)][1]["flows"]}
        assert f"| {label} | {flows['f1']['goodput_mbps']:.3f} | {flows['f2']['goodput_mbps']:.3f} |" in table
    assert "| fair share | 1.500 | — |" in table


def test_runs_table_says_what_each_column_is(swept: Path) -> None:
    md = (swept / "report.md").read_text()
    page = (swept / "report.html").read_text()
    runs = _section(md, "Runs")
    header = next(line for line in runs.splitlines() if line.startswith("|"))
    for title in ("goodput (Mbit/s)", "TCP Jain", "TCP RTT p99 (ms)", "drops"):
        assert f"| {title} |" in header
        assert f"- {title}: " in runs  # the legend under the table
        assert f"<li>{title}: " in page
    assert "media" not in header  # no media flow in any run: no media columns
    assert "TCP goodput" not in header  # every flow is TCP: it would repeat the goodput column


def test_show_prints_a_suite_directory_s_tables(swept: Path, run_cli) -> None:
    shown = run_cli("show", swept)
    assert shown.exit_code == 0, shown.stderr
    md = (swept / "report.md").read_text()
    assert "Goodput of f1" in shown.stdout and "Runs" in shown.stdout
    row = [line for line in _section(md, "Goodput of f1").splitlines() if line.startswith("|")][2]  # 1st data row
    for cell in [c.strip() for c in row.strip("|").split("|")][1:]:
        assert cell in shown.stdout
    assert "TCP Jain: Jain's fairness index" in shown.stdout


def test_goodput_cdf_steps_through_each_run_s_flow_goodputs(swept: Path) -> None:
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    ax = plot_suite.goodput_cdf(runs).axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("goodput per flow (Mbit/s)", "fraction of flows")
    assert len(ax.get_lines()) == len(runs)
    for line, (_, run) in zip(ax.get_lines(), runs):
        goodputs = sorted(f["goodput_mbps"] for f in run.summary["flows"])
        assert list(line.get_xdata())[1:] == goodputs
        assert list(line.get_ydata()) == [i / len(goodputs) for i in range(len(goodputs) + 1)]
    assert (swept / "plots" / "goodput_cdf.png").is_file()


def test_delay_cdf_lines_are_the_samples_quantiles(swept: Path) -> None:
    """The vectorised CDF equals Polars' linear quantile at each probability (what it replaced)."""
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    rtt_ax = plot_suite.delay_cdf(runs).axes[1]
    for line, (_, run) in zip(rtt_ax.get_lines(), runs):
        probes = run.table("probes")
        samples = probes.filter(pl.col("time_s") >= float(run.summary.get("warmup_s") or 0))["rtt_ms"]
        xs, ps = line.get_xdata(), line.get_ydata()
        assert len(xs) == 201
        for x, p in list(zip(xs, ps))[::20]:
            assert x == pytest.approx(samples.quantile(float(p), interpolation="linear"), rel=1e-12)


class _Goodputs:
    summary = {"flows": [{"id": "a", "kind": "tcp", "goodput_mbps": 3.0}, {"id": "b", "kind": "tcp", "goodput_mbps": 5.0}]}


def test_a_legend_of_many_long_run_labels_fits_beside_the_plot() -> None:
    """36 runs with labels as long as scream-interop's: the figure grows to hold the legend, which stays whole."""
    import io
    import warnings

    runs = [(f"downstream 100 Mbit/s / {rtt} ms / up to 10 Prague flows / {k}", _Goodputs())
            for rtt in range(12) for k in range(3)]
    fig = plot_suite.goodput_cdf(runs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "constrained_layout not applied because axes sizes collapsed to zero"
        fig.savefig(io.BytesIO(), format="png", dpi=50)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    figure, plot = fig.bbox, ax.get_window_extent(renderer)
    assert len(ax.get_legend().get_texts()) == len(runs)
    assert figure.x0 <= legend.x0 and legend.x1 <= figure.x1 and figure.y0 <= legend.y0 and legend.y1 <= figure.y1
    assert legend.x0 > plot.x1 and plot.width > 0.25 * figure.width  # beside the plot, which keeps its room


@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_sorted_quantiles_are_numpys_linear_quantiles(n: int) -> None:
    xs = np.sort(np.random.default_rng(n).exponential(3.0, n))
    probs = np.linspace(0.0, 1.0, 201)
    assert plot_suite._sorted_quantiles(xs, probs) == pytest.approx(np.quantile(xs, probs), rel=1e-12, abs=1e-12)


def test_totals_are_delivered_over_one_window(swept: Path) -> None:
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    tput = plot_suite.totals(runs).axes[0]
    heights = [p.get_height() for p in tput.patches]  # one kind (cubic): one bar per run
    for h, (_, run) in zip(heights, runs):
        assert h == pytest.approx(window_goodput_mbps(run))
        assert h <= float(run.summary["links"][0]["rate_mbps"])


class _Steps:
    def __init__(self, stop_at: int | None = None) -> None:
        self.total: int | None = None
        self.steps: list[str] = []
        self.stop_at = stop_at

    def start(self, total: int) -> None:
        self.total = total

    def step(self, what: str) -> None:
        self.steps.append(what)
        if self.stop_at is not None and len(self.steps) == self.stop_at:
            raise KeyboardInterrupt


def test_rendering_reports_progress_per_run_and_plot(swept: Path) -> None:
    steps = _Steps()
    render(swept, progress=steps)
    runs = json.loads((swept / "suite.json").read_text())["runs"]
    plots = sorted(p.stem for p in (swept / "plots").glob("*.png"))
    assert steps.total == len(steps.steps) == len(runs) + len(plots)
    assert [s for s in steps.steps if s.startswith("run ")] == [f"run {r['key']}" for r in runs]
    assert sorted(s.removeprefix("plot ") for s in steps.steps if s.startswith("plot ")) == plots


def test_ctrl_c_while_rendering_stops_at_once_and_changes_nothing(swept: Path, run_cli, monkeypatch) -> None:
    before = {name: (swept / name).read_bytes() for name in ("report.md", "report.html")}
    plots = {p.name: p.read_bytes() for p in (swept / "plots").iterdir()}
    steps = _Steps(stop_at=len(json.loads((swept / "suite.json").read_text())["runs"]) + 1)  # after the 1st plot
    with pytest.raises(KeyboardInterrupt):
        render(swept, progress=steps)
    assert len(steps.steps) == steps.stop_at  # nothing after the interrupt
    assert {name: (swept / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in (swept / "plots").iterdir()) == sorted(plots)  # no temporary files left

    from ccbench.report import suite as report

    def interrupted(*args: Any, **kw: Any) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "render", interrupted)
    result = run_cli("report", swept)
    assert result.exit_code == 130 and "interrupted" in result.stderr


# The "seed" axis here also changes the rate (4/6/8 Mbit/s), so the seeds' values differ and the
# aggregation's arithmetic shows; seeds alone change nothing in this scenario.
SEEDED = """\
name = "seeded"
base = "two.toml"
set = ['duration="1s"']

[[axes]]
name = "qdisc"
values = ["fq_codel", "pfifo"]
set = ['links.bottleneck.qdisc={ kind = "{value}" }']

[[axes]]
name = "seed"
values = [1, 2, 3]
set = ["seed={value}", 'links.bottleneck.rate="{value}Mbit"']
format = "seed {value}"

[report]
plots = []
suite_plots = ["seed_box"]

[[report.tables]]
title = "Goodput of f1"
rows = "qdisc"
cell = 'goodput_mbps(flow="f1")'
format = "{:.3f}"

[[report.tables]]
title = "Per seed"
rows = "qdisc"
cols = "seed"
cell = 'goodput_mbps(flow="f1")'
format = "{:.3f}"
"""


def test_tables_aggregate_over_seeds_with_mean_and_95_percent_interval(write_suite, tmp_path: Path) -> None:
    from ccbench.report.suite import mean_ci95, t95

    res = run_suite(write_suite(SEEDED), tmp_path / "out", jobs=1, progress=False)
    md = (res.dir / "report.md").read_text()
    table = _section(md, "Goodput of f1 (mean ± 95 % interval over 3 seeds)")
    for qdisc in ("fq_codel", "pfifo"):
        values = []
        for rec in res.runs:
            if rec.values["qdisc"] == qdisc:
                flows = ccbench.load(res.dir / rec.dir).summary["flows"]
                values.append(next(f["goodput_mbps"] for f in flows if f["id"] == "f1"))
        assert len(values) == 3 and len(set(values)) == 3
        mean = sum(values) / 3
        sd = (sum((v - mean) ** 2 for v in values) / 2) ** 0.5
        assert mean_ci95(values) == pytest.approx((mean, 4.303 * sd / 3 ** 0.5))
        assert f"| {qdisc} | {mean:.3f} ± {4.303 * sd / 3 ** 0.5:.3f} |" in table
    assert "Per seed" in md and "| qdisc \\ seed | seed 1 | seed 2 | seed 3 |" in md  # shown seeds stay apart
    assert t95(1) == 12.706 and t95(30) == 2.042 and t95(10_000) == 1.96
    assert (res.dir / "plots" / "seed_box.png").is_file() and "Across seeds" in md


def test_seed_box_has_a_box_per_configuration_over_its_seeds(write_suite, tmp_path: Path) -> None:
    from ccbench.report.suite import _seed_groups
    from ccbench.report.run_metrics import window_goodput_mbps
    from ccbench.plan.suite_file import load_suite as read_suite

    res = run_suite(write_suite(SEEDED), tmp_path / "out", jobs=1, progress=False, report=False)
    suite = read_suite(tmp_path / "suite.toml")
    stored = {r.key: StoredRun(res.dir / r.dir) for r in res.runs}
    groups = _seed_groups(suite, res.runs, stored)
    assert [(label, len(runs)) for label, runs in groups] == [("fq_codel", 3), ("pfifo", 3)]
    tput = plot_suite.seed_box(groups).axes[0]
    dots = [line for line in tput.get_lines() if line.get_linestyle() == "None"]
    for dot, (_, runs) in zip(dots, groups):
        assert sorted(dot.get_ydata()) == sorted(window_goodput_mbps(r) for r in runs)


def test_seeds_key_adds_a_seed_axis(write_suite, tmp_path: Path) -> None:
    from ccbench.plan.suite import SuiteError
    from ccbench.plan.suite_file import load_suite as read_suite

    text = ('name = "seeded"\nbase = "two.toml"\nseeds = 3\n\n[[axes]]\nname = "qdisc"\n'
            'values = ["fq_codel", "pfifo"]\nkey = "links.bottleneck.qdisc.kind"\n')
    suite = read_suite(write_suite(text))
    plan = suite.plan()
    assert [p.values for p in plan][:3] == [{"qdisc": "fq_codel", "seed": s} for s in (1, 2, 3)]
    assert all(f"seed={p.values['seed']}" in [o.text for o in p.overrides] for p in plan)
    assert "\nseed = 3\n" in plan[2].scenario
    for bad, message in (("seeds = 0", "0 seeds: allowed 1 to 10000"), ("seeds = true", "expected a number"),
                         ("seeds = [1, 1]", "duplicate seed")):
        with pytest.raises(SuiteError, match=message):
            read_suite(write_suite(text.replace("seeds = 3", bad)))


def test_published_table_sits_beside_ccbench_cell_by_cell_with_errors_and_rms(swept: Path) -> None:
    runs = _runs(swept)
    published = {"5Mbit": (2.0, 2.5), "10Mbit": (5.0, 0.25)}
    ours = {}
    for rate in published:
        key, summary = runs[(rate, 1)]
        flows = {f["id"]: f for f in summary["flows"]}
        series = ccbench.load(swept / "runs" / key).series
        part = series.filter((series["flow_id"] == "f2") & (series["time_s"] > 0.5) & (series["time_s"] <= 1.5))
        ours[rate] = (flows["f1"]["goodput_mbps"], part["goodput_mbps"].mean())
    errs = [o - p for rate in published for o, p in zip(ours[rate], published[rate])]
    report = build(swept, plots=False)
    [grid] = [g for g in report.tables if g.title == "Compared: ccbench vs published"]
    assert grid.rms == pytest.approx((sum(e * e for e in errs) / 4) ** 0.5)
    cells = {label: c for label, c in grid.rows}
    assert cells["5 Mbit/s"][0].value == pytest.approx(ours["5Mbit"][0] - 2.0)
    assert cells["10 Mbit/s"][1].value == pytest.approx(ours["10Mbit"][1] - 0.25)
    rms_f1 = ((errs[0] ** 2 + errs[2] ** 2) / 2) ** 0.5
    assert cells["RMS error"][0].value == pytest.approx(rms_f1)
    md = _section((swept / "report.md").read_text(), "Compared: ccbench vs published (seed = seed 1)")
    err = ours["5Mbit"][0] - 2.0
    assert f"| 5 Mbit/s | {ours['5Mbit'][0]:.3f} vs 2.000 ({'+' if err >= 0 else ''}{err:.3f}) |" in md
    assert "Published: a made-up table." in md
    assert "Window of f2 late: mean_goodput(flow=\"f2\", from=\"0.5s\", to=\"1.5s\")" in md
    assert f"Overall RMS error over 4 cells: {grid.rms:.3f}" in md


def test_plot_draws_per_run_plots_later_and_the_report_links_them(write_suite, tmp_path: Path, run_cli) -> None:
    """A suite without per-run plots runs without drawing any and its report says how to get them;
    `ccbench plot` draws them for every finished run (the suite's bounds on delivery_with_rtt) and
    the report, rendered again, links them."""
    from ccbench.report.run_plots import plan

    text = REPORTED.replace(_ASKED, "").replace('plots = ["timeseries"]', 'plots = []\n\n[[report.bounds]]\n'
                                                'where = { rate = "5Mbit" }\nthroughput = [0, 7]')
    res = run_suite(write_suite(text), tmp_path / "out", jobs=1, progress=False)
    runs = sorted((res.dir / "runs").iterdir())
    assert len(runs) == 4 and not list(res.dir.glob("runs/*/*.png"))
    md = (res.dir / "report.md").read_text()
    assert f"per-run plots: none drawn; `ccbench plot {res.dir}`" in md and "[timeseries]" not in md
    todo, suites = plan([res.dir], ["delivery_with_rtt"])
    assert suites == [res.dir] and sorted(run for run, _ in todo) == runs
    bounds = {json.loads((run / "summary.json").read_text())["links"][0]["rate_mbps"]: kinds["delivery_with_rtt"]
              for run, kinds in todo}
    assert bounds == {5.0: {"throughput": (0, 7)}, 10.0: {}}
    out = run_cli("plot", str(res.dir), "-j", "2")
    assert out.exit_code == 0, out.stderr
    assert all((run / "timeseries.png").stat().st_size > 10_000 for run in runs)
    assert not list(res.dir.glob("runs/*/.*tmp*"))
    md = (res.dir / "report.md").read_text()
    assert "per-run plots: none drawn" not in md
    assert all(f"[timeseries](runs/{run.name}/timeseries.png)" in md for run in runs)
    one = run_cli("plot", str(runs[0]), "--kind", "delivery_with_rtt")
    assert one.exit_code == 0 and (runs[0] / "delivery_with_rtt.png").is_file()
    assert not (runs[1] / "delivery_with_rtt.png").exists()
    bad = run_cli("plot", str(tmp_path))
    assert bad.exit_code == 2 and "neither a result directory" in bad.stderr and str(tmp_path) in bad.stderr
