//! `twin_codel_af` (chromi/sce `sch_twin_codel_af.c`) end to end: its
//! built-in shaper sets the bottleneck rate below the link's, and its SCE
//! schedule (2.5 ms target) holds SCE-aware flows' queue below the 5 ms CE
//! target, while plain CUBIC, held by CE marks alone, peaks higher.
//! Measured (all seeds alike: no random draws once BLUE is idle): p50/p99
//! sojourn 2.57/3.78 ms for cubic-sce, 3.18/8.93 ms for cubic.

mod common;
use common::*;

use ccbench_core::flow::Endpoints;
use ccbench_core::metrics::summary::Summary;

/// Two flows of `cc` over a 100 Mbit/s link shaped to 40 Mbit/s by the
/// qdisc, 40 ms base RTT; returns the summary and the SCE echoes seen.
fn run_sim(cc: &str, seed: u64) -> (Summary, u64) {
    let q = r#"{ kind = "twin_codel_af", bandwidth = "40Mbit" }"#;
    let text = dumbbell(
        "100Mbit",
        40.0,
        q,
        "20s",
        &tcp("f", cc, "ecn = true\ncount = 2"),
    );
    let o = ["metrics.warmup=\"5s\"".to_string(), format!("seed={seed}")];
    let parsed = ccbench_core::scenario::parse(&text, "t.toml", &o).unwrap();
    let mut sim = ccbench_core::scenario::build::build(&parsed.scenario);
    let end = sim.end;
    sim.run_until(end);
    let sce: u64 = sim
        .flows
        .iter()
        .map(|f| {
            if let Endpoints::Tcp { tx, .. } = &f.ep {
                tx.t.delivered_sce
            } else {
                0
            }
        })
        .sum();
    (sim.summary(), sce)
}

#[test]
fn shaper_sets_the_rate_and_sce_holds_the_queue_below_the_ce_target() {
    for seed in 1..=5 {
        let (s, s_sce) = run_sim("cubic-sce", seed);
        let (c, c_sce) = run_sim("cubic", seed);
        assert_eq!(c_sce, 0);
        assert!(s_sce > 1000, "seed {seed}: {s_sce} SCE echoes");
        for (name, sum) in [("cubic-sce", &s), ("cubic", &c)] {
            let g: f64 = sum.flows.iter().map(|f| f.goodput_mbps).sum();
            // 40 Mbit/s of frames is ≈ 38.5 Mbit/s of TCP payload.
            assert!(
                g > 35.0 && g < 40.0,
                "{name} seed {seed}: goodput {g} Mbit/s"
            );
        }
        let (ls, lc) = (link(&s, "bottleneck"), link(&c, "bottleneck"));
        let (ps, pc) = (ls.sojourn_ms.p50.unwrap(), lc.sojourn_ms.p50.unwrap());
        let (qs, qc) = (ls.sojourn_ms.p99.unwrap(), lc.sojourn_ms.p99.unwrap());
        let ce: u64 = s.flows.iter().map(|f| f.ce_marks).sum();
        // SCE (2.5 ms target) keeps the SCE flows' queue near its target and
        // below the 5 ms CE target, with (almost) no CE; CUBIC, held by CE
        // alone, peaks higher (p99).
        assert!(
            ps > 1.25 && ps < 5.0 && qs < 5.0,
            "seed {seed}: cubic-sce sojourn p50/p99 {ps}/{qs} ms"
        );
        assert!(
            qs < qc,
            "seed {seed}: p99 {qs} ms (cubic-sce) vs {qc} ms (cubic)"
        );
        assert!(ce * 100 < s_sce, "seed {seed}: {ce} CE vs {s_sce} SCE");
        assert!(pc > 0.0);
    }
}
