//! Prague versions end to end: the April 2020 tree's classic-ECN
//! bottleneck detection (`prague_ecn_fallback`) behind a single-queue
//! CoDel versus an L4S queue.

mod common;
use common::*;

use ccbench_core::cc::AnyCc;
use ccbench_core::flow::Endpoints;

/// The SCE/L4S tests' "codel1q": fq_codel with one queue (plain CoDel,
/// 5 ms / 100 ms, ECN marking).
const CODEL1Q: &str = r#"{ kind = "fq_codel", flows = 1 }"#;

/// Runs the scenario and returns Prague's classic-ECN score at the end.
fn classic_score(qdisc: &str, params: &str, seed: u64) -> f64 {
    let flows = tcp("p", "prague", &format!("ecn = true\ncc_params = {{ {params} }}"));
    let text = dumbbell("50Mbit", 20.0, qdisc, "30s", &flows);
    let parsed = ccbench_core::scenario::parse(&text, "t.toml", &[format!("seed={seed}")]).unwrap();
    let mut sim = ccbench_core::scenario::build::build(&parsed.scenario);
    let end = sim.end;
    sim.run_until(end);
    let Endpoints::Tcp { tx, .. } = &sim.flows[0].ep else { panic!("not TCP") };
    let AnyCc::Prague(p) = &tx.cc else { panic!("not Prague") };
    p.classic_ecn_score()
}

/// CoDel at its defaults (5 ms target, 100 ms interval) marks only once a
/// standing queue of ≥ 5 ms persists: srtt − min_rtt stays above the
/// heuristic's 2 ms reference, so the score integrates up to the sticky
/// classic level (17) and Prague falls back to classic-sized cuts. A
/// DualPI2 L queue marks at a 1 ms step: no standing queue, low delay
/// variation, the score stays in the L4S range (≤ 8).
#[test]
fn the_2020_heuristic_goes_classic_behind_codel_and_stays_l4s_behind_dualpi2() {
    for seed in 1..=5 {
        let codel = classic_score(CODEL1Q, r#"version = "2020-04", ecn_fallback = 1"#, seed);
        assert!(codel > 9.0, "seed {seed}: score {codel} behind CoDel");
        let l4s = classic_score(r#"{ kind = "dualpi2" }"#, r#"version = "2020-04", ecn_fallback = 1"#, seed);
        assert!(l4s <= 8.0, "seed {seed}: score {l4s} behind DualPI2");
    }
    // Off (the module default): no detection.
    assert_eq!(classic_score(CODEL1Q, r#"version = "2020-04""#, 1), 0.0);
}

/// Prague and CUBIC through a drop-only FIFO (no CE ever); returns
/// (Prague's ssthresh, its lost and delivered segments, CUBIC's delivered).
fn fifo_vs_cubic(version: &str, seed: u64) -> (u32, u64, u64, u64) {
    let mut flows = tcp("p", "prague", &format!("ecn = true\ncc_params = {{ version = \"{version}\" }}"));
    flows.push_str(&tcp("c", "cubic", ""));
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "pfifo", limit = 200 }"#, "10s", &flows);
    let parsed = ccbench_core::scenario::parse(&text, "t.toml", &[format!("seed={seed}")]).unwrap();
    let mut sim = ccbench_core::scenario::build::build(&parsed.scenario);
    let end = sim.end;
    sim.run_until(end);
    let Endpoints::Tcp { tx: p, .. } = &sim.flows[0].ep else { panic!("not TCP") };
    let Endpoints::Tcp { tx: c, .. } = &sim.flows[1].ep else { panic!("not TCP") };
    (p.t.ssthresh, p.t.lost, p.t.delivered, c.t.delivered)
}

/// The SCE/L4S report's "loss ignored in L4S mode" (pfifo and PIE-noecn
/// runs: > 90 % loss, CUBIC starved) is what the 2020 tree's loss law
/// does: with no CE the window never leaves slow start (ssthresh stays
/// Linux's infinite 0x7fffffff) because slow start never pays the halving
/// debt. v0.6's `in_loss` gate pays it: ssthresh falls and CUBIC gets a
/// share.
#[test]
fn the_2020_tree_keeps_slow_start_through_drops_and_starves_cubic() {
    for seed in 1..=5 {
        let (ss, lost, delivered, cubic) = fifo_vs_cubic("2020-04", seed);
        assert_eq!(ss, 0x7fff_ffff, "seed {seed}: 2020 left slow start");
        // More lost than delivered: the window grows until the receive
        // window (tcp_rmem) stops it, far past the 200-packet FIFO.
        assert!(lost > 2 * delivered, "seed {seed}: lost {lost}, delivered {delivered}");
        assert!(cubic * 5 < delivered, "seed {seed}: CUBIC {cubic} vs Prague {delivered}");
        let (ss, lost, delivered, cubic) = fifo_vs_cubic("v0.6", seed);
        assert!(ss < 1000, "seed {seed}: v0.6 ssthresh {ss}");
        assert!(lost * 20 < delivered, "seed {seed}: v0.6 lost {lost}, delivered {delivered}");
        assert!(cubic * 3 > delivered, "seed {seed}: v0.6 CUBIC {cubic} vs Prague {delivered}");
    }
}

/// The 5.15 tree (v0.6) scaled α to 2^-24 but kept the detector's
/// reference levels in 2^-20 units (`V0_LG`, `D0_LG`; L4STeam/linux issue
/// #38, "Prague 5.15 ECN fallback always activates, even on L4S AQMs"):
/// each α update adds ≈ 0.5·log2(mdev) − 0.3 instead of
/// 0.5·log2(mdev/750 µs), so behind DualPI2, where the 2020 tree's
/// score stays in the L4S range, v0.6's climbs to the classic clamp.
#[test]
fn the_5_15_detector_goes_classic_even_behind_dualpi2() {
    for seed in 1..=5 {
        let v06 = classic_score(r#"{ kind = "dualpi2" }"#, r#"version = "v0.6", ecn_fallback = 2"#, seed);
        assert!(v06 > 9.0, "seed {seed}: v0.6 score {v06} behind DualPI2");
        let v2020 = classic_score(r#"{ kind = "dualpi2" }"#, r#"version = "2020-04", ecn_fallback = 2"#, seed);
        assert!(v2020 <= 8.0, "seed {seed}: 2020-04 score {v2020} behind DualPI2");
    }
}
