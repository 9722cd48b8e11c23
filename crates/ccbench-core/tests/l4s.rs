//! L4S end to end: ECN codepoints through DualPI2 (RFC 9332), the coupled
//! AQM's control points, and scalable vs classic congestion controls.

mod common;
use common::*;

const DUALPI2: &str = r#"{ kind = "dualpi2" }"#;

/// RFC 9332 §2.3/§2.5: ECT(1) goes to the L queue, ECT(0) and Not-ECT to
/// the C queue; a Not-ECT flow sees drops, never marks.
#[test]
fn ecn_codepoints_pick_the_queue_and_not_ect_is_dropped() {
    let flows = tcp("plain", "reno", "") + &tcp("classic", "reno", "ecn = \"classic\"") + &tcp("l4s", "reno", "ecn = \"ect1\"");
    let text = dumbbell("20Mbit", 20.0, DUALPI2, "20s", &flows);
    let out = run(&text, &["metrics.warmup=\"5s\""]);
    let s = &out.summary;
    assert_eq!(flow(s, "plain").ce_marks, 0);
    assert!(flow(s, "plain").retransmits > 0, "a Not-ECT flow is controlled by drops");
    assert!(flow(s, "classic").ce_marks > 0);
    assert!(flow(s, "l4s").ce_marks > 0);
    // Per-queue sojourn samples by the flows' classes.
    let so = &out.metrics.sojourn;
    // (Link 0 is the bottleneck; the flows' ACKs queue on the return link.)
    let class_of = |f: u32| -> Vec<u8> { (0..so.id.len()).filter(|&k| so.id[k] == 0 && so.flow[k] == f).map(|k| so.class[k]).collect() };
    assert!(class_of(0).iter().all(|&c| c == 0), "Not-ECT in C");
    assert!(class_of(1).iter().all(|&c| c == 0), "ECT(0) in C");
    let l = class_of(2);
    assert!(!l.is_empty() && l.iter().all(|&c| c == 1), "ECT(1) in L");
    let link = link(s, "bottleneck");
    assert!(link.sojourn_c_ms.is_some() && link.sojourn_l_ms.is_some());
}

/// RFC 9332 §2.1 / Linux defaults: with classic traffic only, the PI2
/// controller holds the classic queue's delay near its 15 ms target at
/// full utilization.
#[test]
fn dualpi2_holds_classic_queue_near_target() {
    let flows = tcp("cubic", "cubic", "count = 2\necn = \"classic\"");
    let text = dumbbell("50Mbit", 20.0, DUALPI2, "60s", &flows);
    let out = run(&text, &["metrics.warmup=\"20s\""]);
    let l = link(&out.summary, "bottleneck");
    let c = l.sojourn_c_ms.as_ref().unwrap();
    let mean = c.mean.unwrap();
    assert!((10.0..=20.0).contains(&mean), "classic sojourn mean {mean} ms vs 15 ms target");
    assert!(l.utilization.unwrap() >= 0.95, "utilization {:?}", l.utilization);
    // The marks came from p′² on ECT(0): the flows' CE share matches the
    // square of the base probability the link reported.
    let ls = &out.metrics.link_series;
    let warm = 20.0;
    let pc: Vec<f64> = (0..ls.time_s.len()).filter(|&k| ls.link[k] == 0 && ls.time_s[k] >= warm).map(|k| ls.prob_c[k]).collect();
    let mean_pc = pc.iter().sum::<f64>() / pc.len() as f64;
    // Count at the receiver: classic ECE feedback smears one mark over an RTT.
    let f = flow(&out.summary, "cubic.1");
    let ce = f.ce_marks as f64 / (f.delivered_bytes as f64 / 1448.0);
    assert!(mean_pc > 0.0 && (ce / mean_pc - 1.0).abs() < 0.5, "CE share {ce} vs mean p_C {mean_pc}");
}
