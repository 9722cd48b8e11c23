"""Suite reports: tables computed from the runs, Markdown and self-contained HTML, plots."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure

import ccbench
from ccbench import plot_suite, sweep
from ccbench.report import StoredRun, build, render
from ccbench.sweep import SweepInterrupted, run_suite
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
        cells = "".join(f'<td class="ok">{f1(rate, s)}</td>' for s in (1, 2))
        assert f"<tr><th>{label}</th>{cells}</tr>" in page

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
    assert "<script" not in page and "http://" not in page and "https://" not in page
    images = re.findall(r'<img [^>]*src="([^"]*)"', page)
    assert len(images) == len(plot_suite.PLOTS)
    assert all(src.startswith("data:image/png;base64,") for src in images)
    for href in re.findall(r'href="([^"]*)"', page):
        assert (swept / href.replace("&amp;", "&")).exists(), href  # everything linked is beside it


def test_failed_and_unrun_runs_say_so(write_suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = REPORTED.replace('values = [1, 2]\nkey = "seed"', 'values = [1, 2, -1]\nkey = "seed"')
    text = text.replace('plots = ["timeseries"]', "plots = []\nsuite_plots = []")
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


def test_cross_run_plots_label_axes_with_units(swept: Path) -> None:
    runs = [(key, StoredRun(swept / "runs" / key)) for key, _ in _runs(swept).values()]
    labels = {}
    for name, (fn, _) in plot_suite.PLOTS.items():
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
    assert len(fig.axes[0].patches) == 3 * len(runs)
    assert plot_suite.kind_color("cubic") == "tab:blue" and plot_suite.kind_color("ping") == "tab:gray"
    assert plot_suite.kind_color("newcc") == plot_suite.kind_color("newcc")


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
