//! The network side end to end: shapers as qdiscs with children, netem on a
//! link, `tc qdisc replace` / `change` on a schedule, and header rewriting.

use ccbench_core::qdisc::{AnyQdisc, Qdisc};
use ccbench_core::scenario;
use ccbench_core::sim::Sim;
use ccbench_core::units::{Dur, SimTime};

fn sim(text: &str) -> Sim {
    let p = scenario::parse(text, "net.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
    scenario::build::build(&p.scenario)
}

fn at_ms(ms: u64) -> SimTime {
    SimTime::ZERO + Dur::from_millis(ms)
}

/// One CUBIC flow without host timing noise: these tests look at the
/// links' state at given instants.
const CUBIC: &str = r#"
[[flows]]
id = "f"
cc = "cubic"
path = ["b"]
reverse = ["r"]
start_jitter = "0s"
tcp = { tx_jitter = "0s", tx_stall_prob = 0.0, ack_jitter = "0s", ack_stall_prob = 0.0 }
"#;

fn scenario(link: &str, duration: &str) -> String {
    format!("duration = \"{duration}\"\nseed = 1\n[[links]]\nid = \"b\"\n{link}\n[[links]]\nid = \"r\"\ndelay = \"10ms\"\n{CUBIC}")
}

/// Bytes the bottleneck sent between two times, as Mbit/s.
fn rate_between(s: &mut Sim, from_ms: u64, to_ms: u64) -> f64 {
    s.run_until(at_ms(from_ms));
    let b0 = s.links[0].tx_bytes;
    s.run_until(at_ms(to_ms));
    (s.links[0].tx_bytes - b0) as f64 * 8.0 / ((to_ms - from_ms) as f64 / 1000.0) / 1e6
}

#[test]
fn htb_shapes_an_unlimited_link_and_change_moves_its_rate() {
    // The L4S team's S4: htb(50Mbit) + dualpi2, only the HTB rate changed.
    let link = r#"delay = "10ms"
qdisc = { kind = "htb", rate = "50Mbit", child = { kind = "dualpi2" } }
schedule = [{ at = "10s", change = { rate = "5Mbit" } }, { at = "20s", change = { rate = "50Mbit" } }]"#;
    let mut s = sim(&scenario(link, "30s"));
    let r1 = rate_between(&mut s, 5_000, 10_000);
    let q_before = s.links[0].qdisc.len();
    s.run_until(at_ms(10_000));
    assert!(
        s.links[0].qdisc.len() + 2 >= q_before,
        "change keeps the queue"
    );
    let r2 = rate_between(&mut s, 12_000, 20_000);
    // Back at 50 Mbit/s the queue empties, and PI2's drop probability,
    // raised during the 5 Mbit/s period, decays for about 6 s, dropping
    // while there is no queue; the rate is the shaper's only once the
    // flow keeps a backlog again.
    s.run_until(at_ms(27_000));
    assert!(s.links[0].qdisc.len() > 0, "backlogged from 27 s");
    let r3 = rate_between(&mut s, 27_000, 30_000);
    assert!(s.links[0].qdisc.len() > 0, "backlogged until 30 s");
    assert!((r1 - 50.0).abs() < 1.0, "{r1}");
    assert!((r2 - 5.0).abs() < 0.1, "{r2}");
    assert!((r3 - 50.0).abs() < 1.0, "{r3}");
    assert!(matches!(s.links[0].qdisc, AnyQdisc::Htb(_)));
    let c = s.conservation();
    assert_eq!(c.sent + c.duplicated, c.delivered + c.dropped + c.held);
}

#[test]
fn tbf_with_a_1000_packet_fifo_holds_its_rate() {
    let link = r#"delay = "10ms"
qdisc = { kind = "tbf", rate = "10Mbit", burst = "5000b", limit = "1514000b", child = { kind = "pfifo", limit = 1000 } }"#;
    let mut s = sim(&scenario(link, "20s"));
    let r = rate_between(&mut s, 5_000, 20_000);
    assert!((r - 10.0).abs() < 0.1, "{r}");
}

#[test]
fn replace_discards_the_queue_and_starts_fresh() {
    // The reports' "bottleneck shift": dualpi2 -> pie-like classic AQM -> dualpi2;
    // here dualpi2 -> codel -> dualpi2 at 10 s and 20 s.
    let link = r#"rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
schedule = [{ at = "10s", qdisc = { kind = "codel" } }, { at = "20s", qdisc = { kind = "dualpi2" } }]"#;
    let mut s = sim(&scenario(link, "25s"));
    s.run_until(SimTime(at_ms(10_000).0 - 1));
    let AnyQdisc::DualPi2(q) = &s.links[0].qdisc else {
        panic!()
    };
    assert!(
        q.prob() > 0.0,
        "the PI controller is working before the switch"
    );
    let (backlog, dropped) = (s.links[0].qdisc.len() as u64, s.links[0].stats.drops_loss);
    assert!(backlog > 0);
    s.run_until(at_ms(10_000));
    assert_eq!(
        s.links[0].stats.drops_loss - dropped,
        backlog,
        "queued packets are discarded and counted"
    );
    assert!(matches!(s.links[0].qdisc, AnyQdisc::Codel(_)));
    s.run_until(at_ms(20_000));
    let AnyQdisc::DualPi2(q) = &s.links[0].qdisc else {
        panic!()
    };
    assert_eq!(q.prob(), 0.0, "fresh state");
    let p = scenario::parse(&scenario(link, "25s"), "n.toml", &[]).unwrap();
    let out = ccbench_core::run(&p.scenario.to_toml(), "n.toml", &[], &mut || false)
        .unwrap()
        .unwrap();
    assert_eq!(
        out.summary.links[0].qdisc, "dualpi2",
        "the summary names the initial qdisc"
    );
}

#[test]
fn change_keeps_packets_and_pi_state() {
    let link = r#"rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
schedule = [{ at = "10s", change = { target = "5ms" } }]"#;
    let mut s = sim(&scenario(link, "12s"));
    s.run_until(SimTime(at_ms(10_000).0 - 1));
    let AnyQdisc::DualPi2(q) = &s.links[0].qdisc else {
        panic!()
    };
    let (p, n) = (q.prob(), s.links[0].qdisc.len());
    s.run_until(at_ms(10_000));
    let AnyQdisc::DualPi2(q) = &s.links[0].qdisc else {
        panic!()
    };
    assert_eq!(s.links[0].stats.drops_loss, 0);
    assert!(
        q.prob() > 0.0 && (q.prob() - p).abs() < 0.5 * p,
        "{p} -> {}",
        q.prob()
    );
    assert!(s.links[0].qdisc.len() + 2 >= n);
}

#[test]
fn schedule_errors_name_the_step_and_what_is_allowed() {
    let bad = |sched: &str| {
        let link =
            format!("rate = \"10Mbit\"\nqdisc = {{ kind = \"fq_codel\" }}\nschedule = [{sched}]");
        match scenario::parse(&scenario(&link, "5s"), "n.toml", &[]) {
            Ok(_) => panic!("accepted {sched}"),
            Err(e) => e.to_string(),
        }
    };
    let e = bad(r#"{ at = "1s", change = { flows = 8 } }"#);
    assert!(
        e.contains("links[0].schedule[0].change") && e.contains("flows"),
        "{e}"
    );
    let e = bad(r#"{ at = "1s", change = { kind = "codel" } }"#);
    assert!(e.contains("cannot switch"), "{e}");
    let e = bad(r#"{ at = "1s", change = { target = "oops" } }"#);
    assert!(e.contains("schedule[0].change"), "{e}");
    let e = bad(r#"{ at = "1s", rate = "5Mbit", qdisc = { kind = "codel" } }"#);
    assert!(e.contains("exactly one"), "{e}");
    let e = bad(r#"{ at = "1s", qdisc = { kind = "netem", duplicate = 200 } }"#);
    assert!(
        e.contains("schedule[0].qdisc") && e.contains("duplicate"),
        "{e}"
    );
    // A change of a kind that cannot change.
    let link = "qdisc = { kind = \"netem\", delay = \"5ms\" }\nschedule = [{ at = \"1s\", change = { delay = \"50ms\", jitter = \"1ms\" } }]";
    assert!(scenario::parse(&scenario(link, "5s"), "n.toml", &[]).is_ok());
}

#[test]
fn the_mangler_rewrites_every_packet() {
    // Scenario 4 of the L4S team: an ECT(1) mangler ahead of a dualpi2
    // bottleneck puts a Not-ECT flow into the L queue.
    let text = r#"duration = "5s"
[[links]]
id = "mangle"
rewrite = { ecn = "ect1", dscp = 0 }
[[links]]
id = "b"
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "dualpi2" }
[[links]]
id = "r"
delay = "10ms"
[[flows]]
id = "f"
cc = "cubic"
dscp = 10
path = ["mangle", "b"]
reverse = ["r"]
[metrics]
capture = ["b"]
"#;
    let mut s = sim(text);
    s.run();
    let AnyQdisc::DualPi2(q) = &s.links[1].qdisc else {
        panic!()
    };
    assert!(q.counts().packets_in_l > 1000);
    assert_eq!(
        q.counts().packets_in_c,
        0,
        "every packet arrives as ECT(1) or CE"
    );
    let cap = &s.metrics.capture;
    assert!(!cap.ecn.is_empty());
    assert!(cap.dscp.iter().all(|&d| d == 0), "DSCP remarked");
    assert!(
        cap.ecn.iter().all(|&e| e == 1 || e == 3),
        "ECT(1), or CE set by dualpi2 after the mangler"
    );
}

#[test]
fn netem_on_a_link_delays_and_reorders_both_ways() {
    // Scenario S6: a jitter stage `delay 10ms 5ms 10%` on each direction.
    let text = r#"duration = "20s"
seed = 2
[[links]]
id = "b"
rate = "50Mbit"
qdisc = { kind = "htb", rate = "50Mbit", child = { kind = "dualpi2" } }
[[links]]
id = "jit"
qdisc = { kind = "netem", delay = "40ms", child = { kind = "netem", delay = "10ms", jitter = "5ms", delay_corr = 10 } }
[[links]]
id = "jitr"
qdisc = { kind = "netem", delay = "40ms", child = { kind = "netem", delay = "10ms", jitter = "5ms", delay_corr = 10 } }
[[flows]]
id = "p"
kind = "ping"
interval = "10ms"
path = ["jit", "b"]
reverse = ["jitr"]
"#;
    let out = ccbench_core::run(text, "n.toml", &[], &mut || false)
        .unwrap()
        .unwrap();
    let p = &out.summary.probes[0];
    // Both directions: 2·(40 + 10 ± 5) ms.
    let mean = p.rtt_ms.mean.unwrap();
    assert!((mean - 100.0).abs() < 1.0, "{mean}");
    assert!(p.min_ms.unwrap() >= 90.0 - 0.01 && p.max_ms.unwrap() <= 110.0 + 0.5);
}

/// Appendix B: the WiFi slot stage (`delay 200us slot 800us 10ms packets 42
/// limit 512`, as a child of the path-delay netem on both directions) adds
/// burstiness but no cap at 50 Mbit; at 250 Mbit it caps the flow at 42
/// packets per 5.4 ms mean slot gap, about 94 Mbit/s of 1514 B frames.
#[test]
fn wifi_slots_cap_only_fast_links() {
    let text = |rate: &str| {
        format!(
            r#"duration = "30s"
seed = 4
[[links]]
id = "b"
qdisc = {{ kind = "htb", rate = "{rate}", child = {{ kind = "pfifo", limit = 1000 }} }}
[[links]]
id = "fwd"
qdisc = {{ kind = "netem", delay = "10ms", limit = 1000000, child = {{ kind = "netem", delay = "200us", limit = 512, slot = {{ min = "800us", max = "10ms", packets = 42 }} }} }}
[[links]]
id = "rev"
qdisc = {{ kind = "netem", delay = "10ms", limit = 1000000, child = {{ kind = "netem", delay = "200us", limit = 512, slot = {{ min = "800us", max = "10ms", packets = 42 }} }} }}
[[flows]]
id = "f"
cc = "cubic"
path = ["fwd", "b"]
reverse = ["rev"]
"#
        )
    };
    let mut s = sim(&text("50Mbit"));
    let r = rate_between(&mut s, 10_000, 30_000);
    assert!(r > 45.0, "50 Mbit is not capped: {r}");
    let mut s = sim(&text("250Mbit"));
    let r = rate_between(&mut s, 10_000, 30_000);
    let cap = 42.0 * 1514.0 * 8.0 / 5.4e-3 / 1e6;
    assert!(r < cap * 1.03, "250 Mbit is capped near {cap}: {r}");
    assert!(r > 0.5 * cap, "{r}");
}

#[test]
fn netem_runs_are_deterministic_per_seed() {
    let text = |seed: u32| {
        format!(
            r#"duration = "5s"
seed = {seed}
[[links]]
id = "b"
qdisc = {{ kind = "netem", delay = "10ms", jitter = "4ms", delay_corr = 25, distribution = "paretonormal", rate = "20Mbit",
          loss = {{ model = "random", p = 0.5 }}, duplicate = 0.5, reorder = {{ p = 1, gap = 2 }} }}
[[links]]
id = "r"
delay = "10ms"
{CUBIC}"#
        )
    };
    let run = |seed| {
        ccbench_core::run(&text(seed), "d.toml", &[], &mut || false)
            .unwrap()
            .unwrap()
            .summary
    };
    let (a, b, c) = (run(1), run(1), run(2));
    assert_eq!(a, b);
    assert_ne!(a.links[0].drops, c.links[0].drops);
}

#[test]
fn the_bottleneck_shift_example_runs() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/l4s-bottleneck-shift.toml"
    );
    let text = std::fs::read_to_string(dir).unwrap();
    let out = ccbench_core::run(&text, "l4s-bottleneck-shift.toml", &[], &mut || false)
        .unwrap()
        .unwrap();
    let s = &out.summary;
    assert_eq!(s.links[0].qdisc, "htb");
    // The summary looks through the shaper to dualpi2's two queues.
    assert!(s.links[0].sojourn_l_ms.is_some() && s.links[0].sojourn_c_ms.is_some());
    assert!(
        out.metrics.sojourn.iter().any(|r| r.class() == 1),
        "Prague's packets were in the L queue"
    );
    // A link shaped only by its qdisc has no line rate: its capacity is the
    // shaper's 50 Mbit/s through both switches, and Prague kept it busy.
    let l = &s.links[0];
    assert_eq!((l.rate_mbps, l.capacity_mbps, l.rate_mean_mbps), (None, Some(50.0), Some(50.0)));
    let u = l.utilization.unwrap();
    assert!(u > 0.8 && u <= 1.0, "{u}");
    let g = s.flows[0].goodput_mbps;
    assert!(g > 40.0 && g < 50.0, "{g}");
    let p = &s.probes[0];
    assert!(p.min_ms.unwrap() >= 20.0);
}

#[test]
fn new_keys_are_validated_with_their_location() {
    let check = |qdisc: &str, extra: &str, want: &[&str]| {
        let link = format!("rate = \"10Mbit\"\nqdisc = {qdisc}\n{extra}");
        let e = match scenario::parse(&scenario(&link, "5s"), "v.toml", &[]) {
            Ok(_) => panic!("accepted {qdisc} {extra}"),
            Err(e) => e.to_string(),
        };
        for w in want {
            assert!(e.contains(w), "{e} lacks {w}");
        }
    };
    check(
        r#"{ kind = "tbf", rate = "10Mbit", burst = "5000b" }"#,
        "",
        &[
            "v.toml:6:9",
            "links[0].qdisc",
            "`limit` (bytes) or `latency`",
        ],
    );
    check(
        r#"{ kind = "tbf", rate = "10Mbit", burst = "5000b", latency = "5ms", peakrate = "20Mbit" }"#,
        "",
        &["peakrate: needs `mtu`"],
    );
    check(
        r#"{ kind = "htb", rate = "10Mbit", stab = { overhead = 9999 } }"#,
        "",
        &["stab.overhead: must be -1500..1500"],
    );
    check(
        r#"{ kind = "netem", delay = "5ms", loss = { model = "gemodel", p = 150 } }"#,
        "",
        &["loss.p: must be a percentage 0..100"],
    );
    check(
        r#"{ kind = "netem", loss = { model = "bursty", p = 1 } }"#,
        "",
        &["links[0].qdisc", "bursty"],
    );
    check(
        r#"{ kind = "netem", slot = { min = "1ms", distribution = "normal" } }"#,
        "",
        &["slot: give either"],
    );
    check(
        r#"{ kind = "pfifo" }"#,
        "rewrite = { ecn = \"ect2\" }",
        &["links[0].rewrite", "ect2"],
    );
    check(
        r#"{ kind = "pfifo" }"#,
        "rewrite = { dscp = 64 }",
        &["links[0].rewrite.dscp", "must be 0..63"],
    );
}

/// `forwarder = "emulator"` on both links (`forwarder.rs`). A ping alone on
/// the path (every 7 ms: no request falls due with a reply) is released on
/// its own wake-up each way, so its RTT is the exact one plus two
/// independent draws of the emulator's lateness (never less; the median of
/// the sum of two is 45.7 µs where one draw's is 22.2 µs). A bulk flow's packets stay in order (no retransmits through a
/// FIFO that never fills), every packet is accounted for at any instant,
/// and a seed repeats.
#[test]
fn a_late_forwarder_delays_packets_in_order_and_repeats_per_seed() {
    let text = |forwarder: &str, seed: u32, flow: &str| {
        format!(
            r#"duration = "20s"
seed = {seed}
[[links]]
id = "b"
rate = "50Mbit"
delay = "10ms"
forwarder = "{forwarder}"
qdisc = {{ kind = "pfifo", limit = 100000 }}
[[links]]
id = "r"
delay = "10ms"
forwarder = "{forwarder}"
{flow}"#
        )
    };
    let ping = "[[flows]]\nid = \"p\"\nkind = \"ping\"\ninterval = \"7ms\"\npath = [\"b\"]\nreverse = [\"r\"]\n";
    let rtts = |forwarder: &str, seed: u32| {
        let mut s = sim(&text(forwarder, seed, ping));
        s.run();
        s.metrics.probes.iter().map(|r| r.value_ns as i64).collect::<Vec<_>>()
    };
    for seed in 1..=3 {
        let (exact, late) = (rtts("exact", seed), rtts("emulator", seed));
        assert_eq!(exact.len(), late.len());
        let mut extra: Vec<i64> = late.iter().zip(&exact).map(|(l, e)| l - e).collect();
        assert!(extra.iter().all(|&x| x >= 0), "a packet left before it was due");
        extra.sort_unstable();
        let median_us = extra[extra.len() / 2] as f64 / 1e3;
        eprintln!("seed {seed}: median extra RTT {median_us} us");
        assert!((43.5..48.0).contains(&median_us), "seed {seed}: median extra RTT {median_us} us");
    }

    let mut s = sim(&text("emulator", 1, CUBIC));
    s.run_until(at_ms(7_300));
    let c = s.conservation();
    assert_eq!(c.sent + c.duplicated, c.delivered + c.dropped + c.held);
    s.run();
    let a = s.summary();
    assert_eq!(a.flows[0].retransmits, 0, "packets were reordered");
    assert!(a.flows[0].goodput_mbps > 45.0);
    let again = |seed| {
        let mut s = sim(&text("emulator", seed, CUBIC));
        s.run();
        s.summary()
    };
    assert_eq!(a, again(1));
    assert_ne!(a.flows[0].rtt_ms.mean, again(2).flows[0].rtt_ms.mean);
}
