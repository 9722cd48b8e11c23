"""Report pages opened in a real browser: Debian's Chromium, driven by Playwright (no browser download).

A run's report.html draws its figures from the run's data with uPlot; a suite's
report.html sorts and filters its tables and links each run's page. The tests read
what the browser drew (the uPlot instances the page lists in ``window.ccbenchCharts``),
click and drag as a reader would, and compare with the run's Parquet tables.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from matplotlib.image import imread
from playwright.sync_api import Browser, Page, sync_playwright

import ccbench
from ccbench.simulate import page as runpage
from ccbench.sweep.runner import run_suite
from conftest import TINY, TWO_FLOWS

CHROMIUM = "/usr/bin/chromium"  # Debian's package (make test-tools installs it)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        # --no-sandbox: the tests may run as root (CI), where Chromium's sandbox refuses to start.
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Opened:
    """A page in the browser and the errors it logged (console errors and uncaught exceptions)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))


@pytest.fixture
def open_page(browser: Browser) -> Iterator[Callable[[Path], Opened]]:
    pages = []

    def open_(path: Path) -> Opened:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        pages.append(page)
        opened = Opened(page)
        page.goto(path.resolve().as_uri(), wait_until="load")
        return opened

    yield open_
    for page in pages:
        page.close()


def charts(page: Page) -> list[dict[str, Any]]:
    """What each uPlot chart of a run page holds: its figure id, series labels and shown flags, data."""
    return page.evaluate("""() => window.ccbenchCharts.map(u => ({
        id: u.root.parentNode.id.replace(/^chart-/, ""),
        labels: u.series.slice(1).map(s => s.label),
        show: u.series.slice(1).map(s => s.show),
        x: u.data[0], ys: u.data.slice(1),
        xmin: u.scales.x.min, xmax: u.scales.x.max }))""")


def finite(values: list[Any]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


@pytest.fixture(scope="module")
def two_flow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2 s run of two CUBIC flows and a ping (FQ-CoDel at 10 Mbit/s), saved with its page."""
    out = tmp_path_factory.mktemp("web") / "run"
    ccbench.run(TWO_FLOWS).save(out, plot=False)
    return out


def test_run_page_draws_every_figure_from_the_runs_own_data(two_flow_run: Path, open_page) -> None:
    opened = open_page(two_flow_run / "report.html")
    page = opened.page
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    drawn = {c["id"]: c for c in charts(page)}
    assert opened.errors == []
    assert set(drawn) == {"throughput", "goodput", "cwnd", "rtt", "queue_delay", "backlog"}
    result = ccbench.load(two_flow_run)
    duration = result.summary["duration_s"]
    for c in drawn.values():
        assert len(c["x"]) > 0 and all(0 <= x <= duration for x in c["x"]), c["id"]
        for label, y in zip(c["labels"], c["ys"]):
            assert len(y) == len(c["x"]) and finite(y), (c["id"], label)
    # One legend entry per flow, in the summary's order, also in the legend the reader sees.
    assert drawn["throughput"]["labels"] == ["f1", "f2"]
    legend = page.locator("#chart-throughput .u-legend .u-series")
    assert legend.count() == 3  # time, f1, f2
    # The figures hold the tables' values: a short run is drawn undecimated.
    series = result.tables["flow_series"]
    for i, flow in enumerate(["f1", "f2"]):
        mine = series.filter(pl.col("flow") == i)
        drawn_tput = finite(drawn["throughput"]["ys"][i])
        assert len(drawn_tput) == mine.height
        assert max(drawn_tput) == pytest.approx(mine["throughput_mbps"].max(), rel=1e-3)
        assert max(drawn_tput) <= 10.5  # bounded by the 10 Mbit/s bottleneck
    rtt = dict(zip(drawn["rtt"]["labels"], drawn["rtt"]["ys"]))
    assert set(rtt) == {"f1 samples", "f1 sRTT", "f2 samples", "f2 sRTT", "ping (probe)"}
    assert min(finite(rtt["ping (probe)"])) >= 20.0  # 2 × 10 ms of propagation delay
    samples = result.tables["rtt"].filter(pl.col("flow") == 0)["rtt_ms"]
    assert min(finite(rtt["f1 samples"])) == pytest.approx(samples.min(), rel=1e-3)
    assert max(finite(rtt["f1 samples"])) == pytest.approx(samples.max(), rel=1e-3)
    delay = dict(zip(drawn["queue_delay"]["labels"], drawn["queue_delay"]["ys"]))
    sojourn = result.tables["sojourn"].filter(pl.col("link") == 0)["sojourn_ms"]
    assert max(finite(delay["bottleneck"])) == pytest.approx(sojourn.max(), rel=1e-3)
    assert min(finite(delay["bottleneck"])) >= 0
    # The page embeds its columns as bytes (times float64, values float32 of four significant
    # figures): the browser gets back exactly the page's data, gaps as null.
    for c in runpage.page_data(result)["charts"]:
        assert drawn[c["id"]]["x"] == c["x"], c["id"]
        assert drawn[c["id"]]["ys"] == [sr["y"] for sr in c["series"]], c["id"]


def test_run_page_draws_flents_delivery_with_rtt_with_the_reports_bounds(two_flow_run: Path, tmp_path: Path,
                                                                      open_page) -> None:
    """Asked for (a suite's ``page_figures``), the page draws flent's tcp_delivery_with_rtt first:
    each flow's delivery rate on the left axis, its sRTT and the ping's RTT on a right axis in ms,
    both axes fixed by the report's bounds ("3x": three times the highest RTT above the bottom)."""
    result = ccbench.load(two_flow_run)
    result.save(tmp_path / "run", plot=False, page={"delivery_with_rtt": {"throughput": (0, 12), "rtt": (10, "3x")}})
    opened = open_page(tmp_path / "run" / "report.html")
    page = opened.page
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 6")
    assert opened.errors == []
    drawn = charts(page)
    assert [c["id"] for c in drawn] == ["delivery_with_rtt", "throughput", "goodput", "cwnd", "rtt", "queue_delay",
                                        "backlog"]
    flent, tput = drawn[0], drawn[1]
    assert flent["labels"] == ["f1 delivery rate", "f2 delivery rate", "f1 TCP RTT", "f2 TCP RTT", "ping ICMP RTT"]
    axes = page.evaluate("""() => { const u = window.ccbenchCharts[0];
        return { scales: u.series.slice(1).map(s => s.scale), y: [u.scales.y.min, u.scales.y.max],
                 r: [u.scales.r.min, u.scales.r.max], sides: u.axes.map(a => a.side) }; }""")
    assert axes["scales"] == ["y", "y", "r", "r", "r"]
    assert axes["sides"] == [2, 3, 1]  # time below, Mbit/s left, ms right
    assert axes["y"] == [0, 12]
    series = result.tables["flow_series"]
    highest = max(series["srtt_ms"].drop_nans().max(), result.tables["probes"]["rtt_ms"].max())
    assert axes["r"][0] == 10 and axes["r"][1] == pytest.approx((highest - 10) * 3 + 10, rel=1e-3)
    # The delivery rates are the throughput figure's; the RTTs the sender's sRTT and the ping's.
    for i in range(2):
        assert finite(flent["ys"][i]) == finite(tput["ys"][i])
        srtt = series.filter((pl.col("flow") == i) & pl.col("srtt_ms").is_not_nan())["srtt_ms"]
        assert max(finite(flent["ys"][2 + i])) == pytest.approx(srtt.max(), rel=1e-3)
    assert min(finite(flent["ys"][4])) == pytest.approx(result.tables["probes"]["rtt_ms"].min(), rel=1e-3)
    # Without the request the page has no such figure.
    assert "delivery_with_rtt" not in [c["id"] for c in charts(open_page(two_flow_run / "report.html").page)]


def test_legend_toggles_a_flow_in_every_figure_and_zoom_and_cursor_follow(two_flow_run: Path, open_page) -> None:
    opened = open_page(two_flow_run / "report.html")
    page = opened.page
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    # Hide f2 from the throughput legend: every series of f2 in every figure is hidden, f1's stay.
    page.locator("#chart-throughput .u-legend .u-series").nth(2).click()
    for c in charts(page):
        for label, shown in zip(c["labels"], c["show"]):
            if label.startswith("f2"):
                assert shown is False, (c["id"], label)
            if label.startswith("f1"):
                assert shown is True, (c["id"], label)
    # Drag across the middle of the cwnd figure: every figure zooms to the same narrower range.
    full = charts(page)[0]
    box = page.locator("#chart-cwnd .u-over").bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
    page.mouse.up()
    zoomed = charts(page)
    ranges = {(round(c["xmin"], 9), round(c["xmax"], 9)) for c in zoomed}
    assert len(ranges) == 1
    (lo, hi), = ranges
    assert full["xmin"] < lo < hi < full["xmax"]
    assert hi - lo == pytest.approx(0.3 * (full["xmax"] - full["xmin"]), rel=0.1)
    # Hovering one figure reads out the values under the cursor, and moves the others' cursors.
    page.mouse.move(box["x"] + box["width"] * 0.45, y)
    value = page.locator("#chart-cwnd .u-legend .u-series").nth(1).locator(".u-value").inner_text()
    assert float(value) > 0
    idx = page.evaluate("window.ccbenchCharts.map(u => u.cursor.idx)")
    assert all(i is not None for i in idx)
    assert opened.errors == []


def test_run_page_screenshot_shows_the_flows_colours(two_flow_run: Path, open_page) -> None:
    opened = open_page(two_flow_run / "report.html")
    page = opened.page
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    png = page.locator("#chart-throughput canvas").screenshot()
    pixels = (imread(io.BytesIO(png))[..., :3] * 255).round().astype(int)
    colours = {tuple(p) for p in pixels.reshape(-1, 3)}
    assert len(colours) > 20  # lines, grid, antialiasing: not a blank canvas
    for hex_colour in ("#1f77b4", "#ff7f0e"):  # f1 and f2 as the page gave them (tab10, as in the PNG plots)
        rgb = np.array([int(hex_colour[k:k + 2], 16) for k in (1, 3, 5)])
        near = np.abs(pixels - rgb).sum(axis=-1) < 30
        assert near.sum() > 50, hex_colour
    assert opened.errors == []


def test_media_flows_get_their_rates_figure(tmp_path: Path, open_page) -> None:
    scenario = TINY.replace('''id = "f1"
kind = "tcp"
cc = "cubic"''', '''id = "cam"
kind = "media"
ecn = "ect1"''').replace('qdisc = { kind = "fq_codel" }', 'qdisc = { kind = "dualpi2" }')
    out = ccbench.run(scenario).save(tmp_path / "media", plot=False)
    opened = open_page(out / "report.html")
    page = opened.page
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    drawn = {c["id"]: c for c in charts(page)}
    assert opened.errors == []
    media = dict(zip(drawn["media"]["labels"], drawn["media"]["ys"]))
    assert set(media) == {"cam target", "cam sent"}
    table = ccbench.load(out).tables["media_series"]
    assert max(finite(media["cam target"])) == pytest.approx(table["target_mbps"].max(), rel=1e-3)
    assert 0 < max(finite(media["cam sent"])) <= 10.5


def test_page_without_the_charting_library_says_how_to_get_it(tmp_path: Path, open_page,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runpage, "assets_dir", lambda: None)
    out = ccbench.run(TINY.replace('duration = "2s"', 'duration = "1s"')).save(tmp_path / "bare", plot=False)
    assert (out / "summary.json").is_file() and not (out / "assets").exists()
    opened = open_page(out / "report.html")
    note = opened.page.locator("#ccbench-missing")
    assert note.is_visible() and "make build" in note.inner_text()
    assert opened.page.evaluate("window.ccbenchCharts.length") == 0
    assert opened.errors == []


def test_decimation_keeps_each_buckets_extremes_for_a_long_run() -> None:
    """A 240 s run's per-packet series (here synthetic, 2 M samples) embeds at most two points a bucket,
    and its peaks: the figure's maximum and minimum are those of the table."""
    n = 2_000_000
    t = np.linspace(0, 240, n, endpoint=False)
    rng = np.random.default_rng(1)
    sojourn = np.abs(rng.normal(5, 2, n))
    sojourn[1_234_567] = 97.5  # one spike
    frame = pl.DataFrame({"time_s": t, "link": np.zeros(n, np.uint32), "flow": np.zeros(n, np.uint32),
                          "class": np.zeros(n, np.uint32), "sojourn_ms": sojourn})
    summary = ('{"scenario": "long", "seed": 1, "duration_s": 240.0, "flows": [], "probes": [],'
               ' "links": [{"id": "bottleneck"}]}')
    data = runpage.page_data(ccbench.Result(summary, "", {"sojourn": frame}))
    delay = next(c for c in data["charts"] if c["id"] == "queue_delay")
    y = finite(delay["series"][0]["y"])
    assert len(delay["x"]) <= 2 * runpage.BUCKETS
    assert max(y) == 97.5 and min(y) == pytest.approx(sojourn.min(), abs=1e-3)


def _drawn_raw(y: np.ndarray) -> np.ndarray:
    """``y`` as one series of a raw figure (a sample each millisecond): the values the page draws."""
    from ccbench import _core

    n = len(y)
    columns = [("f64", (np.arange(n) * 1e-3).tobytes()), ("i64", np.zeros(n, "<i8").tobytes()),
               ("f64", np.asarray(y, "<f8").tobytes())]
    _, drawn = _core.page_chart([(0, 0)], [("rows", *columns, None, None)], True, 200, 1.0)
    return np.frombuffer(drawn[0][0], "<f8")


def test_figures_values_have_four_significant_figures_over_all_doubles() -> None:
    """A figure's values are rounded to four significant figures, half to even: ``round(y · s) / s``
    with s the power of ten nearest 10^(3 - exponent), from 1e307 down to 1e-300; a zero is drawn
    as 0.0 (a −0.0 too), a value that is not finite is not drawn."""
    assert _drawn_raw(np.array([1234.5678, 0.000123456, -98765.4, 9.99951, 42.0, 999.95, 12345.0])).tolist() == [
        1235.0, 0.0001235, -98770.0, 10.0, 42.0, 1000.0, 12340.0]
    zeros = _drawn_raw(np.array([0.0, -0.0]))
    assert [math.copysign(1, z) for z in zeros] == [1.0, 1.0]
    assert len(_drawn_raw(np.array([np.nan, np.inf, -np.inf, 1.0]))) == 1
    rng = np.random.default_rng(5)
    y = np.concatenate([10.0 ** rng.uniform(-300, 307, 20_000) * rng.choice([-1.0, 1.0], 20_000),
                        [1e-300, 1.234e307, 1e22, 1e-22]])
    scale = np.array([float(f"1e{int(k)}") for k in 3 - np.floor(np.log10(np.abs(y)))])  # correctly rounded
    assert np.array_equal(_drawn_raw(y), np.round(y * scale) / scale)


def test_decimated_series_keep_their_own_extremes_and_gaps() -> None:
    """Twelve queues (so fine buckets merge in pairs): each keeps its own maximum and minimum, and
    draws nothing where it has no samples, on the figure's one time column."""
    n, links = 600_000, 12
    rng = np.random.default_rng(3)
    link = rng.integers(0, links, n).astype(np.uint32)
    t = np.sort(rng.uniform(0, 120, n))
    t = np.where(link % 2 == 1, t / 2, t)  # odd links only in the first 60 s
    order = np.argsort(t, kind="stable")
    t, link = t[order], link[order]
    sojourn = rng.uniform(1, 9, n)
    for k in range(links):
        sojourn[np.flatnonzero(link == k)[100]] = 50.0 + k  # each queue's own spike
    frame = pl.DataFrame({"time_s": t, "link": link, "flow": np.zeros(n, np.uint32),
                          "class": np.zeros(n, np.uint32), "sojourn_ms": sojourn})
    summary = json.dumps({"scenario": "many", "seed": 1, "duration_s": 120.0, "flows": [], "probes": [],
                          "links": [{"id": f"l{k}"} for k in range(links)]})
    data = runpage.page_data(ccbench.Result(summary, "", {"sojourn": frame}))
    delay = next(c for c in data["charts"] if c["id"] == "queue_delay")
    x = np.asarray(delay["x"], float)
    assert len(delay["series"]) == links and len(x) < 2 * runpage.BUCKETS
    for k, series in enumerate(delay["series"]):
        y = np.asarray(series["y"], float)
        mine = sojourn[link == k]
        assert np.nanmax(y) == 50.0 + k and np.nanmin(y) == pytest.approx(mine.min(), abs=1e-3), k
        if k % 2:
            assert np.isnan(y[x > 60.5]).all() and np.isfinite(y[x < 59]).all(), k


REPORTED = """\
name = "webbed"
base = "two.toml"

[[axes]]
name = "rate"
label = "bottleneck"
values = ["5Mbit", "10Mbit", "20Mbit"]
key = "links.bottleneck.rate"
labels = { "5Mbit" = "5 Mbit/s", "10Mbit" = "10 Mbit/s", "20Mbit" = "20 Mbit/s" }

[report]
suite_plots = []

[[report.tables]]
title = "Goodput of f1"
rows = "rate"
cell = 'goodput_mbps(flow="f1")'
format = "{:.3f}"
"""


def test_suite_report_sorts_filters_and_opens_each_runs_page(tmp_path: Path, open_page) -> None:
    (tmp_path / "two.toml").write_text(TWO_FLOWS.replace('duration = "2s"', 'duration = "1s"'), encoding="utf-8")
    (tmp_path / "suite.toml").write_text(REPORTED, encoding="utf-8")
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, progress=False)
    opened = open_page(res.dir / "report.html")
    page = opened.page
    runs = page.locator("table.sortable").last  # the Runs table
    headers = runs.locator("thead th")
    titles = headers.all_inner_texts()
    col = next(i for i, t in enumerate(titles) if t.startswith("goodput"))

    def column() -> list[float]:
        return [float(v) for v in runs.locator(f"tbody tr td:nth-child({col + 1})").evaluate_all(
            "cells => cells.map(c => c.getAttribute('data-v'))")]

    before = column()
    assert len(before) == 3 and len(set(before)) == 3  # three runs, three goodputs
    headers.nth(col).click()
    assert column() == sorted(before)
    headers.nth(col).click()
    assert column() == sorted(before, reverse=True)
    # The filter box keeps the rows that contain the text.
    page.locator("input.filter").last.fill("10 Mbit/s")
    visible = runs.locator("tbody tr:visible")
    assert visible.count() == 1
    # The run's link opens its page, which draws.
    visible.locator("a", has_text="page").click()
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    assert page.url.endswith("/report.html") and "/runs/" in page.url
    shown = Path(page.url.removeprefix("file://")).parent
    assert ccbench.load(shown).summary["links"][0]["rate_mbps"] == 10.0
    assert {c["id"] for c in charts(page)} >= {"throughput", "rtt", "queue_delay"}
    assert opened.errors == []


SEEDED = """\
name = "figured"
base = "two.toml"
seeds = 2

[[axes]]
name = "rate"
label = "bottleneck"
values = ["5Mbit", "10Mbit"]
key = "links.bottleneck.rate"
labels = { "5Mbit" = "5 Mbit/s", "10Mbit" = "10 Mbit/s" }
"""


@pytest.fixture(scope="module")
def seeded_suite(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Four 1 s runs of two CUBIC flows and a ping: two rates by two seeds, with the default report."""
    d = tmp_path_factory.mktemp("suite")
    (d / "two.toml").write_text(TWO_FLOWS.replace('duration = "2s"', 'duration = "1s"'), encoding="utf-8")
    (d / "suite.toml").write_text(SEEDED, encoding="utf-8")
    return run_suite(d / "suite.toml", d / "out", jobs=1, progress=False)


def suite_charts(page: Page) -> dict[str, dict[str, Any]]:
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    return {c["id"]: c for c in charts(page)}


def test_suite_report_draws_the_cross_run_figures_from_the_runs_data(seeded_suite: Any, open_page) -> None:
    from ccbench.report.suite import run_label
    from ccbench.plan.suite_file import load_suite

    suite = load_suite(seeded_suite.dir.parent.parent / "suite.toml")
    labels = [run_label(suite, r.values) for r in seeded_suite.runs]
    opened = open_page(seeded_suite.dir / "report.html")
    page = opened.page
    drawn = suite_charts(page)
    assert opened.errors == []
    assert set(drawn) == {"goodput_box", "rtt_box", "queue_cdf", "rtt_cdf", "goodput_cdf", "totals_goodput",
                          "totals_latency", "seed_goodput", "seed_latency"}
    for c in drawn.values():
        assert len(c["x"]) > 0 and c["ys"] and all(len(y) == len(c["x"]) and finite(y) for y in c["ys"]), c["id"]
    # Boxes: one legend entry per flow (the ping with the RTTs), one x position per run; each drawn
    # median is that flow's median goodput in that run's table.
    assert drawn["goodput_box"]["labels"] == ["f1 (cubic)", "f2 (cubic)"]
    assert drawn["rtt_box"]["labels"] == ["f1 (cubic)", "f2 (cubic)", "ping"]
    assert drawn["goodput_box"]["x"] == [0, 1, 2, 3]
    for i, rec in enumerate(seeded_suite.runs):
        run = ccbench.load(seeded_suite.dir / rec.dir)
        rate = run.summary["links"][0]["rate_mbps"]
        for j in range(2):
            mine = run.tables["flow_series"].filter(pl.col("flow") == j)["goodput_mbps"]
            median = drawn["goodput_box"]["ys"][j][i]
            assert median == pytest.approx(mine.median(), rel=1e-3)
            assert 0 <= median <= rate * 1.05
        assert min(finite([y[i] for y in drawn["rtt_box"]["ys"]])) >= 20.0  # above 2 × 10 ms of propagation
    # CDFs: one curve per run, named after it, non-decreasing from 0 to 1 on at most 500 points.
    for cid in ("queue_cdf", "rtt_cdf", "goodput_cdf"):
        c = drawn[cid]
        assert c["labels"] == labels, cid
        assert len(c["x"]) <= 500 and c["x"] == sorted(c["x"])
        for y in c["ys"]:
            assert all(0 <= v <= 1 for v in y) and y == sorted(y) and y[-1] == 1.0, cid
    assert min(drawn["rtt_cdf"]["x"]) >= 20.0 and min(drawn["queue_cdf"]["x"]) >= 0
    # Totals: one kind; its bars are the Runs table's goodput column (the same window, the same flows).
    assert drawn["totals_goodput"]["labels"] == ["cubic"]
    runs = page.locator("table.sortable").last
    titles = runs.locator("thead th").all_inner_texts()
    col = titles.index("goodput (Mbit/s)") if "goodput (Mbit/s)" in titles else next(
        i for i, t in enumerate(titles) if t.startswith("goodput"))
    table = [float(v) for v in runs.locator(f"tbody tr td:nth-child({col + 1})").evaluate_all(
        "cells => cells.map(c => c.getAttribute('data-v'))")]
    assert drawn["totals_goodput"]["ys"][0] == pytest.approx(table, rel=1e-3)
    assert drawn["totals_latency"]["labels"] == ["mean", "99th percentile"]
    # Seeds: one box per configuration, its median the mean of its two seeds' goodputs.
    seed = drawn["seed_goodput"]
    assert seed["x"] == [0, 1] and seed["labels"] == ["goodput"]
    assert seed["ys"][0] == pytest.approx([(table[0] + table[1]) / 2, (table[2] + table[3]) / 2], rel=1e-3)
    assert opened.errors == []


def test_suite_figure_hover_names_the_run_and_reads_its_values(seeded_suite: Any, open_page) -> None:
    opened = open_page(seeded_suite.dir / "report.html")
    page = opened.page
    drawn = suite_charts(page)
    over = page.locator("#chart-goodput_box .u-over")
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box is not None
    # The x scale runs from -0.6 to 3.4: run 3 (index 2) sits at 2.6 / 4 of the width.
    page.mouse.move(box["x"] + box["width"] * 2.6 / 4, box["y"] + box["height"] / 2)
    values = page.locator("#chart-goodput_box .u-legend .u-series .u-value").all_inner_texts()
    assert values[0].startswith("3: ") and "10 Mbit/s" in values[0]
    median = float(values[1].split(" ")[0])
    assert median == pytest.approx(drawn["goodput_box"]["ys"][0][2], rel=1e-2) and median > 0
    # A CDF's read-out gives each run's fraction at the hovered value.
    over = page.locator("#chart-rtt_cdf .u-over")
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    values = page.locator("#chart-rtt_cdf .u-legend .u-series .u-value").all_inner_texts()
    assert float(values[0]) >= 20.0
    assert len(values) == 5 and all(0 <= float(v) <= 1 for v in values[1:])
    assert opened.errors == []


def test_a_suite_draws_no_png_unless_it_asks(seeded_suite: Any, tmp_path: Path) -> None:
    assert not list(seeded_suite.dir.rglob("*.png")) and not (seeded_suite.dir / "plots").exists()
    assert (seeded_suite.dir / "assets" / "uPlot.iife.min.js").is_file()
    md = (seeded_suite.dir / "report.md").read_text(encoding="utf-8")
    assert "[report.html](report.html)" in md and "![" not in md
    # Asked for, the PNGs are drawn: only those named.
    (tmp_path / "two.toml").write_text(TWO_FLOWS.replace('duration = "2s"', 'duration = "1s"'), encoding="utf-8")
    (tmp_path / "suite.toml").write_text(SEEDED + '\n[report]\nsuite_plots = ["totals", "seed_box"]\n',
                                         encoding="utf-8")
    res = run_suite(tmp_path / "suite.toml", tmp_path / "out", jobs=1, progress=False)
    assert sorted(p.name for p in res.dir.rglob("*.png")) == ["seed_box.png", "totals.png"]
    assert "plots/totals.png" in (res.dir / "report.md").read_text(encoding="utf-8")


def test_embedded_cdfs_are_each_runs_ecdf(seeded_suite: Any) -> None:
    """Each queue-delay curve is its run's ECDF at every grid point: within the 0.001 of the 1001
    quantiles it is reduced to and the 1/n by which linear quantiles (numpy's, as in the PNGs) place
    tied and neighbouring samples, and with the mass at 0 ms of an empty queue where it belongs. The
    quantiles come from the summary's histograms (within 0.1 % of the exact ones, then rounded to
    four figures), so the curve at x lies between the ECDF just below x and just above it by that much."""
    import json
    import re

    page = (seeded_suite.dir / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="ccbench-suite-data">(.*?)</script>', page, re.S).group(1))
    cdf = next(c for c in data["charts"] if c["id"] == "queue_cdf")
    x = np.asarray(cdf["x"])
    assert len(cdf["series"]) == len(seeded_suite.runs) and x[0] == 0.0
    for rec, series in zip(seeded_suite.runs, cdf["series"]):
        sojourn = ccbench.load(seeded_suite.dir / rec.dir).tables["sojourn"]
        samples = np.sort(sojourn.filter(pl.col("link") == 0)["sojourn_ms"].to_numpy())
        rel = 1 / 1024 + 5e-4  # the histogram's bound and the rounding to four significant figures
        below = np.searchsorted(samples, x * (1 - rel), side="right") / samples.size
        above = np.searchsorted(samples, x * (1 + rel), side="right") / samples.size
        y = np.asarray(series["y"])
        tol = 2 / samples.size + 2e-3
        assert (y >= below - tol).all() and (y <= above + tol).all()
        assert y[0] == pytest.approx((samples == 0).mean(), abs=2 / samples.size + 2e-3)


def test_exploration_map_shows_each_cells_class_and_opens_its_runs(tmp_path: Path, open_page) -> None:
    base = {"name": "map", "duration": "2s", "seed": 1,
            "links": [{"id": "bottleneck", "rate": "4Mbit", "delay": "5ms", "qdisc": {"kind": "pfifo", "limit": 10}},
                      {"id": "ret", "rate": "4Mbit", "delay": "5ms"}],
            "flows": [{"id": "f1", "kind": "tcp", "cc": "cubic", "path": ["bottleneck"], "reverse": ["ret"]}]}
    doc = {"explore": {"name": "map", "base": base, "coarse": 2, "property": 'utilization(link="bottleneck") >= 0.9',
                       "axis": [{"name": "buffer", "key": "links.bottleneck.qdisc.limit", "range": [2, 40],
                                 "cells": 5, "integer": True},
                                {"name": "delay", "key": ["links.bottleneck.delay", "links.ret.delay"],
                                 "range": [2, 60], "scale": "log", "cells": 5, "unit": "ms"}]}}
    points = ccbench.explore(doc, tmp_path / "x", jobs=2)
    cells = {(r["buffer"], r["delay"]): r for r in
             pl.read_csv(tmp_path / "x" / "cells.csv", schema_overrides={"class": pl.String}).iter_rows(named=True)}
    opened = open_page(tmp_path / "x" / "boundary.html")
    page = opened.page
    drawn = page.locator("table.map td").evaluate_all("""tds => tds.map(td => ({
        at: JSON.parse(td.dataset.cell), cls: td.className.split(' '), link: td.querySelector('a') !== null,
        title: td.title, width: td.getBoundingClientRect().width }))""")
    assert len(drawn) == 25 and all(d["width"] > 10 for d in drawn)
    word = {"true": "holds", "false": "fails", "unknown": "unknown"}
    for d in drawn:
        truth = cells[(d["at"]["buffer"], d["at"]["delay"])]
        assert word[truth["class"]] in d["cls"], (d, truth)
        assert d["link"] == truth["sampled"] == ("inferred" not in d["cls"]), d
        if truth["sampled"]:
            assert "seed 1:" in d["title"], d["title"]
    assert {"holds", "fails"} <= {c for d in drawn for c in d["cls"]}  # the boundary is inside the map
    assert any("edge" in d["cls"] for d in drawn)
    # The runs table sorts by the property's number.
    runs = page.locator("table.sortable")
    titles = runs.locator("thead th").all_inner_texts()
    col = titles.index("value")
    runs.locator("thead th").nth(col).click()
    values = [float(v) for v in runs.locator(f"tbody tr td:nth-child({col + 1})").evaluate_all(
        "cells => cells.map(c => c.getAttribute('data-v'))")]
    assert len(values) == len(points) and values == sorted(values)
    # A sampled cell opens its run's page, which draws.
    page.locator("table.map td a").first.click()
    page.wait_for_function("window.ccbenchCharts && window.ccbenchCharts.length > 0")
    assert "/runs/" in page.url and page.url.endswith("/report.html")
    assert opened.errors == []


def test_run_figures_from_the_summary_match_those_from_the_samples(seeded_suite: Any) -> None:
    """The figures read RTT boxes and CDF quantiles from the summary; a result written before the
    summary carried them is reduced from its per-packet tables, and the two agree within the
    histogram's 0.1 % and the rounding to four figures."""
    import json

    from ccbench.report.suite import StoredRun
    from ccbench.report.suite_figures import run_stats

    rel = 1 / 1024 + 5e-4
    for rec in seeded_suite.runs:
        new = StoredRun(seeded_suite.dir / rec.dir)
        old = StoredRun(seeded_suite.dir / rec.dir)
        summary = json.loads(json.dumps(new.summary))
        del summary["quantiles"]
        for e in summary["flows"] + summary["probes"]:
            for k in ("p5", "p25", "p75"):
                del e["rtt_ms"][k]
        old.__dict__["summary"] = summary  # as an older ccbench wrote it
        a, b = run_stats(new), run_stats(old)
        assert [(n, k) for n, k, _ in a["rtt"]] == [(n, k) for n, k, _ in b["rtt"]] and len(a["rtt"]) == 3
        for (_, _, x), (_, _, y) in zip(a["rtt"], b["rtt"]):
            np.testing.assert_allclose(x, y, rtol=rel)
        for key in ("queue_q", "ping_q", "flow_rtt_q"):
            assert a[key] is not None and len(a[key]) == len(b[key]) == 1001, key
            np.testing.assert_allclose(a[key], b[key], rtol=rel, atol=1e-9, err_msg=key)


def test_page_figures_from_the_cores_buckets_are_those_from_the_tables(tmp_path: Path) -> None:
    """A run that writes its tables as it goes hands the page the per-packet tables' min/max per fine
    bucket (the core takes them from each chunk written); the page's data is then exactly what it is
    when computed from the Parquet files of the saved run, for figures with few series (2000
    buckets) and with many (merged to a divisor of 2000)."""
    from ccbench.core.files import work_dir
    from ccbench.simulate.page import page_data

    many = TWO_FLOWS.replace('duration = "2s"', 'duration = "3s"') + "".join(
        f'\n[[flows]]\nid = "x{i}"\ncc = "reno"\npath = ["bottleneck"]\nreverse = ["ret"]\nstart = "{i / 10}s"\n'
        for i in range(7))
    for text in (TWO_FLOWS, many):
        out = tmp_path / f"run{len(text)}"
        with work_dir(out) as work:
            result = ccbench.run(text, spill_dir=work)
            assert set(result.page_buckets) == {"rtt", "sojourn"}
            assert result.page_buckets["rtt"]["rows"] == result.tables["rtt"].height
            from_core = page_data(result, {"delivery_with_rtt": {}})
            result.save(out, plot=False, work=work)
        loaded = ccbench.load(out)
        assert loaded.page_buckets == {}
        assert page_data(loaded, {"delivery_with_rtt": {}}) == from_core
        rtt = next(c for c in from_core["charts"] if c["id"] == "rtt")
        assert len(rtt["x"]) > 100  # decimated, not raw


def test_page_reads_large_series_tables_in_batches_to_the_same_figures(tmp_path: Path, monkeypatch) -> None:
    """The page reads a series table whole when it is small and scans it in batches when it has more
    rows than a batch (a long run of many flows): the figures are the same either way."""
    ccbench.run(TWO_FLOWS).save(tmp_path / "run", plot=False)
    whole = runpage.page_data(ccbench.load(tmp_path / "run"), {"delivery_with_rtt": {}})
    monkeypatch.setattr(runpage, "_BATCH_ROWS", 7)
    loaded = ccbench.load(tmp_path / "run")
    assert isinstance(loaded.tables.read("flow_series", ["time_s", "flow"], 7), pl.LazyFrame)
    assert runpage.page_data(loaded, {"delivery_with_rtt": {}}) == whole
