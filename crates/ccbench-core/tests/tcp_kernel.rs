//! Whole-path checks against the recorded Linux 6.18 runs
//! (recorded Linux 6.18 runs through an emulated bottleneck).

mod common;
use common::*;

/// CUBIC's goodput share against Reno in one CoDel queue, 50 Mbit/s,
/// 40 ms, limit 1000, 30 s (`kemu.py run --cc reno,cubic --codel`), one run
/// per seed, with the default host timing noise or (`quiet`) none.
fn cubic_share(quiet: bool, seed: u64, swap: bool) -> f64 {
    let x = if quiet { QUIET } else { "" };
    let (r, c) = (tcp("reno", "reno", x), tcp("cubic", "cubic", x));
    let flows = if swap { c + &r } else { r + &c };
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "codel", limit = 1000 }"#, "30s", &flows);
    let seed_set = format!("seed={seed}");
    let out = run(&text, &["metrics.warmup=\"0s\"", &seed_set]);
    let (reno, cubic) = (flow(&out.summary, "reno").goodput_mbps, flow(&out.summary, "cubic").goodput_mbps);
    assert!(reno + cubic > 0.9 * 48.27, "seed {seed}: total {}", reno + cubic);
    cubic / (reno + cubic)
}

/// CUBIC's share in fourteen kernel runs: 0.53, 0.52 (flows swapped) and
/// 0.55 (`kemu.py`, `ccbench compare`), then 0.544, 0.490, 0.589, 0.593,
/// 0.484 and 0.527, 0.570, 0.531, 0.444, 0.488, 0.553 (eleven `ccbench
/// compare` runs): mean 0.530, each run within ±0.09 of it, so one run is
/// not a test. With the default host timing noise (`tcp::TX_JITTER`,
/// stalls, start jitter, and the receiving host's ACK noise,
/// `tcp::ACK_JITTER`) the model's mean over ten seeds is 0.521 in either
/// order, 1.7 % below the kernel's. Without the ACK noise it was 0.476, 10 %
/// below: where HyStart ends slow start was not the cause (the kernel's
/// CUBIC left it by the ACK train at cwnd 245-247 in three of six runs and
/// by delay at 89 in three, the model's likewise, with the gap either way).
#[test]
fn cubic_and_reno_share_one_codel_queue_like_linux() {
    const KERNEL: [f64; 14] =
        [0.53, 0.52, 0.55, 0.544, 0.490, 0.589, 0.593, 0.484, 0.527, 0.570, 0.531, 0.444, 0.488, 0.553];
    let kernel = KERNEL.iter().sum::<f64>() / KERNEL.len() as f64;
    for swap in [false, true] {
        let shares: Vec<f64> = (1..=10).map(|seed| cubic_share(false, seed, swap)).collect();
        let mean = shares.iter().sum::<f64>() / shares.len() as f64;
        eprintln!("swapped {swap}: CUBIC share {mean:.3} vs the kernel's {kernel:.3}");
        assert!(
            (mean / kernel - 1.0).abs() <= 0.10,
            "CUBIC share {mean:.3} (runs {shares:.2?}, swapped {swap}) vs the kernel's {kernel:.3}"
        );
    }
}

/// Without timing noise the simulation is exactly periodic and the two ACK
/// clocks phase-lock to CoDel's drop schedule (Floyd & Jacobson 1992): the
/// seed changes nothing and the start order alone moves the share. This is
/// why the default has noise.
#[test]
fn without_noise_the_share_is_a_phase_effect() {
    let a = cubic_share(true, 1, false);
    assert_eq!(a, cubic_share(true, 2, false), "no randomness: seeds agree");
    let b = cubic_share(true, 1, true);
    assert!((a - b).abs() > 0.02, "start order moved the share: {a:.3} vs {b:.3}");
}

/// Two CUBIC flows started together in a 1-BDP FIFO (50 Mbit/s, 20 ms,
/// limit 83, 30 s; GSO packets as Linux builds them, whatever the device
/// offers). The kernel (five
/// runs: `kemu.py` twice, `ccbench compare` three times) split the link
/// 0.49/0.51, 0.49/0.51, 0.55/0.45, 0.41/0.59 and 0.62/0.38, with 86, 52,
/// 56, 65 and 55 retransmits in all (mean 63). With the default host noise
/// each seed is a distinct sample of that spread: 0.44-0.57 over seeds
/// 1-10, 0.506 on average, with 71.7 retransmits (14 % above the kernel's).
#[test]
fn two_identical_cubic_flows_share_and_retransmit_like_linux() {
    let flows = tcp("a", "cubic", "") + &tcp("b", "cubic", "");
    let text = dumbbell("50Mbit", 20.0, r#"{ kind = "pfifo", limit = 83 }"#, "30s", &flows);
    let runs: Vec<(f64, u64)> = (1..=10)
        .map(|seed| {
            let out = run(&text, &["metrics.warmup=\"0s\"", &format!("seed={seed}")]);
            let (a, b) = (flow(&out.summary, "a"), flow(&out.summary, "b"));
            (a.goodput_mbps / (a.goodput_mbps + b.goodput_mbps), a.retransmits + b.retransmits)
        })
        .collect();
    let shares: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let mean = shares.iter().sum::<f64>() / 10.0;
    assert!((0.44..=0.56).contains(&mean), "mean share {mean:.3}: {shares:.2?}");
    let mut distinct = shares.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert_eq!(distinct.len(), 10, "every seed its own sample: {shares:.3?}");
    let spread = distinct[9] - distinct[0];
    assert!((0.05..0.35).contains(&spread), "shares spread {spread:.2} (kernel 0.41-0.62)");
    let rtx = runs.iter().map(|r| r.1).sum::<u64>() as f64 / 10.0;
    eprintln!("shares {shares:.3?} (mean {mean:.3}), retransmits {rtx}");
    assert!((rtx / 63.0 - 1.0).abs() < 0.25, "retransmits {rtx} vs the kernel's 63");
}
