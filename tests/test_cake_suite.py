"""The built-in cake-mtu-scaling suite, end to end in a short smoke form."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import ccbench
from ccbench.plan.suite_file import load_suite
from ccbench.sweep.runner import run_suite

SHORT = ['test.length="3s"', 'test.delay="1s"', 'metrics.warmup="1s"']


def test_plan_is_every_variant_times_every_test() -> None:
    suite = load_suite("cake-mtu-scaling")
    plan = suite.plan()
    assert len(plan) == 18 and not any(r.error for r in plan)
    assert [a.values for a in suite.axes] == [
        ("1mtu", "2mtu", "2mtu_x_flows", "4mtu", "4mtu_x_flows", "mainline"), ("rrul", "tcp_nup", "tcp_ndown")]
    # Both Cakes get the variant; the downstream one runs in ingress mode.
    run = next(r for r in plan if r.values == {"variant": "4mtu_x_flows", "test": "tcp_ndown"})
    assert run.scenario.count('mtu_scaling = "4mtu_x_flows"') == 2
    assert "ingress = true" in run.scenario


def test_smoke_runs_end_to_end_with_a_report(tmp_path: Path) -> None:
    suite = load_suite("cake-mtu-scaling").with_overrides(SHORT)
    res = run_suite(suite, tmp_path / "out", jobs=1, progress=False)
    manifest = json.loads((res.dir / "suite.json").read_text())
    runs = manifest["runs"]
    assert len(runs) == 18
    for r in runs:
        summary = ccbench.load(res.dir / r["dir"]).summary
        flows = {f["id"]: f for f in summary["flows"]}
        test = r["values"]["test"]
        want = {"rrul": 8, "tcp_nup": 32, "tcp_ndown": 32}[test]
        assert len(flows) == want, (test, len(flows))
        # Cake at 10 Mbit with Ethernet compensation caps each direction's
        # TCP goodput near 9.4 Mbit/s (1448 B of payload per 1538 B charged);
        # a 3 s test also counts the queue drained after the flows stop.
        for way in ("upload", "download"):
            total = sum(f["goodput_mbps"] for i, f in flows.items() if way in i)
            if any(way in i for i in flows):
                assert 0.5 < total < 10.2, (r["values"], way, total)
        links = {x["id"]: x for x in summary["links"]}
        # The Cakes are the bottleneck and drop; the far-side FIFO never does.
        busy = "up" if test == "tcp_nup" else "down"
        assert links[busy]["drops"] > 0 and links["down_far"]["drops"] == 0, (r["values"], links)
    md = (res.dir / "report.md").read_text()
    assert "Download goodput, total (Mbit/s)" in md and "4 MTU x flows" in md


def test_the_path_has_no_delay_stage_the_report_does_not_name() -> None:
    """The report lists Cake, the link and the far-side TBF, and no delay stage: none is added."""
    suite = load_suite("cake-mtu-scaling")
    assert "no added delay" in suite.description
    for run in suite.plan():
        links = {x["id"]: x for x in tomllib.loads(run.scenario)["links"]}
        assert all(x.get("delay", "0ms") in ("0ms", "0s", "0ns") for x in links.values()), links
    # Every remaining assumption is stated in the suite file.
    for assumed in ("ethernet", "diffserv3", "LENGTH 60 s", "burst 15000 B", "CUBIC without ECN", "Base RTT"):
        assert assumed in suite.text, assumed
