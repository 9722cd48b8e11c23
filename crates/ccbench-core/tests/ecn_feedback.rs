//! ECN feedback through a path that reorders ACKs: the sender must not
//! count more congestion than the queues signalled. Linux reads an ACK
//! below snd_una as `old_ack` (no ECN or congestion-control input), and an
//! AccECN ACK without forward progress or a newer timestamp not at all
//! (`__tcp_accecn_process`, net/ipv4/tcp_input.c); see `tcp/accecn.rs`.

mod common;
use ccbench_core::flow::Endpoints;
use ccbench_core::scenario;
use ccbench_core::sim::Sim;
use proptest::prelude::*;

/// One ECN flow through a marking bottleneck; the data path does not
/// reorder, the ACK path's netem jitter does (tfifo). The flow stops a
/// second before the end, so every mark has been fed back.
fn reordering_ack_path(cc: &str, ecn: &str, qdisc: &str, rate_mbit: u32, rtt_ms: u32, jitter_us: u32, seed: u64) -> String {
    let half = rtt_ms / 2;
    format!(
        r#"
duration = "6s"
seed = {seed}
[[links]]
id = "bottleneck"
rate = "{rate_mbit}Mbit"
delay = "{half}ms"
qdisc = {qdisc}
[[links]]
id = "ack_path"
qdisc = {{ kind = "netem", delay = "{half}ms", jitter = "{jitter_us}us", limit = 1000000 }}
[[flows]]
id = "f"
cc = "{cc}"
ecn = {ecn}
stop = "5s"
path = ["bottleneck"]
reverse = ["ack_path"]
"#
    )
}

struct Counts {
    /// CE marks the queues made.
    marks: u64,
    /// CE marks the sender counted, and its ECN window reductions.
    counted: u64,
    reductions: u64,
    /// Segments delivered.
    delivered: u64,
}

fn run_counts(text: &str) -> Counts {
    let p = scenario::parse(text, "ecn.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut sim: Sim = scenario::build::build(&p.scenario);
    sim.run();
    let summary = sim.summary();
    let marks = summary.links.iter().map(|l| l.marks).sum();
    assert_eq!(summary.links.iter().map(|l| l.drops).sum::<u64>(), 0, "nothing dropped");
    let Endpoints::Tcp { tx, .. } = &sim.flows[0].ep else { panic!("tcp") };
    Counts { marks, counted: tx.ce_delivered, reductions: tx.ecn_reductions, delivered: tx.t.delivered }
}

const CCS: [&str; 6] = ["reno", "cubic", "dctcp", "prague", "reno-sce", "dctcp-sce"];
const MODES: [&str; 4] = ["true", "\"classic\"", "\"ect0\"", "\"ect1\""];
/// Marking AQMs, with room enough that nothing is dropped (a drop makes
/// SACK blocks, and see `an_older_ack_with_new_sack_information_is_read`).
const QDISCS: [&str; 3] = [
    r#"{ kind = "dualpi2", limit = 100000, overload = "overflow" }"#,
    r#"{ kind = "fq_codel", ecn = true, ce_threshold = "1ms", limit = 100000 }"#,
    r#"{ kind = "codel", ecn = true, limit = 100000 }"#,
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every ECN-capable algorithm in every ECN mode, with ACKs reordered
    /// by 0.2–5 ms of jitter: AccECN never counts more CE than was marked,
    /// and no mode reduces its window more often than there were marks.
    #[test]
    fn reordered_acks_never_add_congestion(
        cc in prop::sample::select(CCS.to_vec()),
        mode in prop::sample::select(MODES.to_vec()),
        qdisc in prop::sample::select(QDISCS.to_vec()),
        rate in prop::sample::select(vec![20u32, 50, 100]),
        rtt in 10u32..60,
        jitter_us in 200u32..5000,
        seed in 1u64..1000,
    ) {
        let c = run_counts(&reordering_ack_path(cc, mode, qdisc, rate, rtt, jitter_us, seed));
        prop_assert!(c.delivered > 100, "the flow ran: {} delivered", c.delivered);
        prop_assert!(c.reductions <= c.marks, "{} reductions for {} marks", c.reductions, c.marks);
        if mode != "\"classic\"" && !(mode == "true" && ["reno", "cubic", "reno-sce"].contains(&cc)) {
            prop_assert!(c.counted <= c.marks, "counted {} CE for {} marks", c.counted, c.marks);
        }
    }
}

#[test]
fn reordered_acks_are_counted_exactly_once_by_accecn() {
    // The case that counted ~4·10^9 marks per late ACK: DCTCP and Prague
    // through DualPI2 at 50 Mbit/s, 2 ms of jitter on the ACK path.
    for (cc, seed) in [("dctcp", 1), ("prague", 1), ("dctcp", 2), ("prague", 3)] {
        let c = run_counts(&reordering_ack_path(cc, "true", QDISCS[0], 50, 40, 2000, seed));
        assert!(c.marks > 20, "{cc}: the queue marked ({})", c.marks);
        // AccECN with the option counts every mark (none is lost here).
        assert_eq!(c.counted, c.marks, "{cc} seed {seed}");
    }
}

/// One flow alone through DualPI2 at 50 Mbit/s, 40 ms; `ecn` as given.
fn alone_through_dualpi2(cc: &str, ecn: Option<&str>) -> (String, u64, u64) {
    let ecn = ecn.map_or(String::new(), |e| format!("ecn = {e}"));
    let text = common::dumbbell("50Mbit", 40.0, r#"{ kind = "dualpi2" }"#, "10s", &common::tcp("f", cc, &ecn));
    let parsed = scenario::parse(&text, "t.toml", &[]).unwrap();
    let resolved = parsed.scenario.flows[0].ecn.unwrap().name().to_string();
    let out = common::run(&text, &[]);
    let l = common::link(&out.summary, "bottleneck");
    (resolved, l.marks, l.drops)
}

#[test]
fn ecn_follows_the_algorithm_by_default_as_in_linux() {
    // TCP_CONG_NEEDS_ECN: DCTCP and Prague negotiate ECN unasked, and
    // DualPI2 marks them instead of dropping.
    for (cc, mode) in [("dctcp", "ect0"), ("prague", "ect1")] {
        let (resolved, marks, drops) = alone_through_dualpi2(cc, None);
        assert_eq!(resolved, mode, "{cc}");
        assert!(marks > 20 && drops == 0, "{cc}: {marks} marks, {drops} drops");
        // An explicit setting still wins.
        let (resolved, marks, drops) = alone_through_dualpi2(cc, Some("false"));
        assert_eq!(resolved, "off", "{cc}");
        assert!(marks == 0 && drops > 20, "{cc} without ECN: {marks} marks, {drops} drops");
    }
    // Classic algorithms follow the host's tcp_ecn, 2 by default: no ECN.
    for cc in ["reno", "cubic", "bbr", "cubic-sce", "dctcp-sce"] {
        assert_eq!(alone_through_dualpi2(cc, None).0, "off", "{cc}");
    }
}
