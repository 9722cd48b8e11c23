//! `twin_codel_af` (chromi/sce `sch_twin_codel_af.c`) end to end: its
//! built-in shaper sets the bottleneck rate below the link's, and its SCE
//! schedule (2.5 ms target) holds SCE-aware flows' queue below the 5 ms CE
//! target, while plain CUBIC, held by CE marks alone, peaks higher.
//! Measured: cubic-sce p50/p99 sojourn about 3/4.5 ms at full goodput when
//! no CE comes (seeds 2, 4, 5); cubic 3.5-4.3/8.6-9.8 ms. In seeds 1 and 3
//! a CE is followed by an ESCE ACK below the new epoch's
//! inflection point, which in tcp_cubic_sce.c wraps the curve's plateau
//! (cnt 2 until the next CE): cubic-sce grows into CE again, its p99
//! reaches about 50 ms and its goodput 29-36 Mbit/s.

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
    let mut clean = 0;
    for seed in 1..=5 {
        let (s, s_sce) = run_sim("cubic-sce", seed);
        let (c, c_sce) = run_sim("cubic", seed);
        assert_eq!(c_sce, 0);
        assert!(s_sce > 1000, "seed {seed}: {s_sce} SCE echoes");
        let goodput = |x: &Summary| x.flows.iter().map(|f| f.goodput_mbps).sum::<f64>();
        // 40 Mbit/s of frames is ≈ 38.5 Mbit/s of TCP payload.
        let (gs, gc) = (goodput(&s), goodput(&c));
        assert!(gc > 35.0 && gc < 40.0, "cubic seed {seed}: goodput {gc} Mbit/s");
        let (ls, lc) = (link(&s, "bottleneck"), link(&c, "bottleneck"));
        let (ps, pc) = (ls.sojourn_ms.p50.unwrap(), lc.sojourn_ms.p50.unwrap());
        let (qs, qc) = (ls.sojourn_ms.p99.unwrap(), lc.sojourn_ms.p99.unwrap());
        let ce: u64 = s.flows.iter().map(|f| f.ce_marks).sum();
        if ce > 0 {
            // The wrap's overshoot: CE, not SCE, ends the growth.
            assert!(qs > 5.0 && gs > 25.0, "seed {seed}: cubic-sce with {ce} CE: p99 {qs} ms, goodput {gs}");
            continue;
        }
        clean += 1;
        // SCE (2.5 ms target) keeps the SCE flows' queue near its target and
        // below the 5 ms CE target with no CE; CUBIC, held by CE alone, peaks
        // higher (p99).
        assert!(gs > 35.0 && gs < 40.0, "cubic-sce seed {seed}: goodput {gs} Mbit/s");
        assert!(
            ps > 1.25 && ps < 5.0 && qs < 5.0,
            "seed {seed}: cubic-sce sojourn p50/p99 {ps}/{qs} ms"
        );
        assert!(
            qs < qc,
            "seed {seed}: p99 {qs} ms (cubic-sce) vs {qc} ms (cubic)"
        );
        assert!(pc > 0.0);
    }
    assert!(clean >= 2, "{clean} of 5 seeds without CE");
}
