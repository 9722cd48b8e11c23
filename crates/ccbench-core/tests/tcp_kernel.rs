//! Whole-path checks against the recorded Linux 6.18 runs
//! (recorded Linux 6.18 runs through an emulated bottleneck).

mod common;
use common::*;

/// CUBIC's goodput share against Reno in one CoDel queue, 50 Mbit/s,
/// 40 ms, limit 1000, 30 s (`kemu.py run --cc reno,cubic --codel`), one run
/// per seed with `tx_jitter` of host timing noise.
fn cubic_share(jitter: &str, seed: u64, swap: bool) -> f64 {
    let x = format!("tcp = {{ tx_jitter = \"{jitter}\" }}");
    let (r, c) = (tcp("reno", "reno", &x), tcp("cubic", "cubic", &x));
    let flows = if swap { c + &r } else { r + &c };
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "codel", limit = 1000 }"#, "30s", &flows);
    let seed_set = format!("seed={seed}");
    let out = run(&text, &["metrics.warmup=\"0s\"", &seed_set]);
    let (reno, cubic) = (flow(&out.summary, "reno").goodput_mbps, flow(&out.summary, "cubic").goodput_mbps);
    assert!(reno + cubic > 0.9 * 48.27, "seed {seed}: total {}", reno + cubic);
    cubic / (reno + cubic)
}

/// The kernel gave CUBIC 24.7 of 46.4 Mbit/s (0.53) and, flows swapped,
/// 23.7 of 45.9 (0.52). With randomized host timing (1 ms, the order of the
/// emulator's worst timer lateness) the mean share over seeds 1–5 lands
/// there; single runs scatter by ±0.05, so one run is not a test.
#[test]
fn cubic_and_reno_share_one_codel_queue_like_linux() {
    let shares: Vec<f64> = (1..=5).map(|seed| cubic_share("1ms", seed, false)).collect();
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    assert!(
        (0.47..=0.58).contains(&mean),
        "CUBIC share {mean:.3} (runs {shares:.2?}) vs kernel 0.52-0.53"
    );
}

/// Without timing noise the simulation is exactly periodic and the two ACK
/// clocks phase-lock to CoDel's drop schedule (Floyd & Jacobson 1992): the
/// seed changes nothing and the start order alone moves the share. This is
/// why the test above randomizes.
#[test]
fn without_jitter_the_share_is_a_phase_effect() {
    let a = cubic_share("0s", 1, false);
    assert_eq!(a, cubic_share("0s", 2, false), "no randomness: seeds agree");
    let b = cubic_share("0s", 1, true);
    assert!((a - b).abs() > 0.02, "start order moved the share: {a:.3} vs {b:.3}");
}
