"""The report case where late ACKs once counted phantom CE marks: `sce-l4s`
S6 (jitter on the data and the ACK path), L4S half, 4 ± 2 ms netem
jitter each way, TCP Prague (its classic-AQM detection off, as in
`sce-l4s-no-fallback`, so that it keeps reacting to marks throughout) through
HTB + DualPI2. The sender's CE count comes
from the AccECN feedback of ACKs that are reordered on the way back; it must
stay with what the queue marked (Linux's rules can over-count by at most 7 on
an older ACK that newly SACKs data: over seeds 1-6 the count is 0.4-2.5 %
above the marks, with or without the receiving host's ACK noise)."""

import ccbench
from ccbench.plan.suite_file import load_suite


def test_s6_prague_counts_the_marks_the_queue_made() -> None:
    part = next(p for p in load_suite("sce-l4s-no-fallback").parts if p.name == "s6-jitter")
    run = next(r for r in part.plan() if r.values == {"arch": "l4s", "jitter": 4})
    for seed in (1, 2, 3):
        res = ccbench.run(run.scenario, seed=seed, set=['metrics.warmup="0s"'])
        flow = next(f for f in res.summary["flows"] if f["id"] == "flow1")
        marks = sum(link["marks"] for link in res.summary["links"])
        counted = flow["ce_fraction"] * flow["delivered_bytes"] / 1448
        assert marks > 500 and flow["ce_marks"] == marks
        assert counted <= 1.03 * marks, (seed, counted, marks)
        assert flow["ce_fraction"] < 0.05  # was ~9e6 when a late ACK wrapped the CE counter


def test_s6_prague_keeps_slow_start_through_a_reordered_initial_window() -> None:
    """At 2 ± 1 ms the initial window arrives reordered; RACK, knowing no
    reordering yet, retransmits its head, and the delayed original's partial
    ACK undoes that recovery (Linux `tcp_try_undo_partial`, also for
    algorithms that own cwnd): Prague leaves slow start as the kernel did and
    uses 81 % of the link, the re-run 79.8 % (83.5). Without the undo its
    ssthresh stayed at 10 packets and it reached 64.5 %."""
    part = next(p for p in load_suite("sce-l4s").parts if p.name == "s6-jitter")
    run = next(r for r in part.plan() if r.values == {"arch": "l4s", "jitter": 2})
    res = ccbench.run(run.scenario)
    flow = next(f for f in res.summary["flows"] if f["id"] == "flow1")
    utilisation = flow["goodput_mbps"] / 50
    assert 0.75 <= utilisation <= 0.88, utilisation
