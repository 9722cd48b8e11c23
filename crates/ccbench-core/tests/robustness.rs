//! What a careless or hostile scenario must not do: hang, outgrow its
//! memory or disk limits, or name files outside its result directory; and
//! the small validation gaps found with it. Each case is a reported input
//! (issue "Nothing a user can type crashes, hangs, fills the disk or writes
//! outside its folder").

use std::sync::mpsc;
use std::time::Duration;

use ccbench_core::guard::Stop;
use ccbench_core::scenario::{self, limits};
use ccbench_core::units::{Dur, SimTime};

fn parse_err(text: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match scenario::parse(text, "t.toml", &o) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// The reported hang: one link with no rate and no delay used both ways.
const TIMELESS: &str = r#"duration = "5s"
[[links]]
id = "l"
delay = "0ms"
[[flows]]
id = "f"
cc = "cubic"
path = ["l"]
reverse = ["l"]
"#;

#[test]
fn a_round_trip_that_takes_no_time_is_refused_before_running() {
    let e = parse_err(TIMELESS, &[]);
    assert!(e.starts_with("t.toml:8:8: flows[0].path: this TCP flow's round trip takes no time"), "{e}");
    assert!(e.contains("give one of these links a `rate` or a `delay`"), "{e}");
    // Anything on the loop that takes time makes it a scenario.
    for ok in [
        vec!["links.l.rate=\"10Mbit\""],
        vec!["links.l.delay=\"1ms\""],
        vec!["flows.f.access_delay=\"1ms\""],
        vec!["flows.f.access_delay=\"0ms\"", "flows.f.access_delay_rev=\"1ms\""],
        vec!["links.l.qdisc={ kind = \"netem\", delay = \"1ms\" }"],
        vec!["links.l.qdisc={ kind = \"htb\", rate = \"10Mbit\" }"],
        vec!["links.l.qdisc={ kind = \"netem\", child = { kind = \"netem\", delay = \"1ms\" } }"],
    ] {
        let o: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
        assert!(scenario::parse(TIMELESS, "t.toml", &o).is_ok(), "{ok:?}");
    }
    // A pure-delay return link does not help a timeless forward path
    // unless it has a delay; pings, whose own interval moves time, pass.
    let two = TIMELESS.replace("reverse = [\"l\"]", "reverse = [\"r\"]") + "[[links]]\nid = \"r\"\n";
    assert!(parse_err(&two, &[]).contains("flows[0].path: this TCP flow's round trip takes no time"));
    assert!(scenario::parse(&TIMELESS.replace("cc = \"cubic\"", "kind = \"ping\""), "t.toml", &[]).is_ok());
}

/// A loop that becomes timeless only when a schedule replaces its netem
/// with a FIFO: the static check cannot see it, the simulator's clock
/// check stops it. The only wall clock in the tests: a harness guard that
/// fails the test instead of hanging it.
#[test]
fn a_clock_that_stops_advancing_stops_the_run_with_an_error() {
    let text = r#"duration = "5s"
[limits]
memory = "16mb"
[metrics]
sojourn_every = 1000000
rtt_samples = false
[[links]]
id = "l"
qdisc = { kind = "netem", delay = "10ms" }
schedule = [{ at = "1s", qdisc = { kind = "pfifo" } }]
[[flows]]
id = "f"
cc = "cubic"
path = ["l"]
reverse = ["l"]
# Without the host's timing noise, which would advance the clock a little
# per burst and turn the stall into a very long run.
tcp = { tx_jitter = "0s", tx_stall_prob = 0.0, ack_jitter = "0s", ack_stall_prob = 0.0 }
"#;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(ccbench_core::run(text, "t.toml", &[], &mut || false).map(|o| o.is_some()));
    });
    let got = rx.recv_timeout(Duration::from_secs(300)).expect("the run hung: a stalled clock was not stopped");
    let e = got.expect_err("a run whose clock stalls finished").to_string();
    assert!(e.starts_with("t.toml: simulated time stalled at 1."), "{e}");
    assert!(e.contains("events without the clock advancing"), "{e}");
}

/// Disk: refused beyond `limits.disk` before running (the reported 10 Gbit/s
/// × 100 flows × 600 s, ~12 GB), and stopped while running when the
/// tables handed to the writer pass it.
#[test]
fn disk_is_estimated_before_and_counted_while_a_run_writes() {
    let big = r#"duration = "600s"
[[links]]
id = "b"
rate = "10Gbit"
delay = "5ms"
[[links]]
id = "r"
rate = "10Gbit"
delay = "5ms"
[[flows]]
id = "f"
count = 100
path = ["b"]
reverse = ["r"]
"#;
    let e = scenario::parse_opts(big, "t.toml", &[], true).err().expect("accepted").to_string();
    assert!(e.contains("duration: this run would write about") && e.contains("more than limits.disk = 10.0 GiB"), "{e}");
    let o = ["limits.disk=\"100gb\"".to_string()];
    let c = limits::estimate(&scenario::parse_opts(big, "t.toml", &o, true).unwrap().scenario);
    assert!((10e9..40e9).contains(&c.disk), "{}", c.disk);
    // Not streamed, the tables count against memory instead.
    assert!(scenario::parse_opts(big, "t.toml", &[], false).err().unwrap().to_string().contains("limits.memory"));

    let small = big.replace("600s", "20s").replace("count = 100", "count = 1").replace("10Gbit", "100Mbit");
    let p = scenario::parse_opts(&small, "t.toml", &[], true).unwrap();
    let mut sim = scenario::build::build(&p.scenario);
    sim.guard.disk_limit = 1 << 20;
    let mut written = 0u64;
    let mut sink = |_: &'static str, t: ccbench_core::metrics::Table, _: &mut Vec<ccbench_core::metrics::Table>| {
        written += t.first().map_or(0, |(_, c)| c.len() as u64);
        true
    };
    assert!(!sim.run_until_io(SimTime::ZERO + Dur::from_secs(20), &mut |_| false, Some((64 << 10, &mut sink))));
    assert!(written > 0);
    let Some(Stop::Disk(m)) = &sim.guard.stop else { panic!("{:?}", sim.guard.stop) };
    assert!(m.contains("more than the disk limit of 1 MiB") && sim.metrics.spilled_bytes() > 1 << 20, "{m}");
    assert!(sim.now < SimTime::ZERO + Dur::from_secs(20));
}

/// A run whose events outrun its estimate (the fuzzer's: a Prague flow with
/// a 65535-segment window behind a Cake shaper retransmitted 67 million
/// times in 5 s, 360 times the estimate) stops at `limits.events`, the bound
/// the estimate is held to, so no run goes on without end.
#[test]
fn a_run_stops_at_its_events_limit() {
    let text = "duration = \"10s\"\n[[links]]\nid = \"a\"\nrate = \"100Mbit\"\ndelay = \"5ms\"\n[[flows]]\nid = \"f\"\npath = [\"a\"]\n";
    let p = scenario::parse(text, "t.toml", &[]).unwrap();
    let mut sim = scenario::build::build(&p.scenario);
    assert_eq!(sim.guard.events_limit, limits::DEFAULT_EVENTS);
    sim.guard.events_limit = 100_000;
    assert!(!sim.run_until_tick(SimTime::ZERO + Dur::from_secs(10), &mut |_| false));
    let Some(Stop::Events(m)) = &sim.guard.stop else { panic!("{:?}", sim.guard.stop) };
    assert!(m.contains("more than limits.events = 100000") && m.contains("raise limits.events"), "{m}");
    assert!((100_000..100_000 + 65_536).contains(&sim.events()), "{}", sim.events());
    // Packets a single event sends count too: five 65535-segment initial
    // windows are 327 675 arrivals in five events.
    let burst = "duration = \"1s\"\n[limits]\nmemory = \"256mb\"\n[[links]]\nid = \"a\"\nrate = \"1Gbit\"\ndelay = \"10ms\"\n\
                 [[flows]]\nid = \"f\"\ncount = 5\npath = [\"a\"]\ntcp = { init_cwnd = 65535, tso = false, wmem_default = \"1gb\", wmem_max = \"1gb\", rmem_default = \"1gb\", rmem_max = \"1gb\" }\n";
    let p = scenario::parse(burst, "t.toml", &[]).unwrap();
    let mut sim = scenario::build::build(&p.scenario);
    sim.guard.events_limit = 100_000;
    assert!(!sim.run_until_tick(SimTime::ZERO + Dur::from_secs(1), &mut |_| false));
    assert!(matches!(sim.guard.stop, Some(Stop::Events(_))), "{:?}", sim.guard.stop);
    assert!(sim.events() < 100_000, "{} events", sim.events());
}

/// 200 000 `[[links]]` passed `validate` and aborted when built: the
/// estimate counts what links and flows hold before any packet moves.
#[test]
fn links_and_flows_state_counts_against_the_memory_limit() {
    let mut text = String::from("duration = \"1s\"\n[limits]\nmemory = \"64mb\"\n");
    for i in 0..2500 {
        text += &format!("[[links]]\nid = \"l{i}\"\nrate = \"10Mbit\"\n");
    }
    text += "[[flows]]\nid = \"f\"\npath = [\"l0\"]\n";
    let e = parse_err(&text, &[]);
    assert!(e.contains("links: the 2500 links and 1 flows of this run would hold about 8"), "{e}");
    let fq = parse_err(&text.replace("rate = \"10Mbit\"\n", "rate = \"10Mbit\"\nqdisc = { kind = \"fq_codel\", flows = 65536 }\n"), &["limits.memory=\"1gb\""]);
    assert!(fq.contains("would hold about 17"), "{fq}");
    let c = limits::estimate(&scenario::parse(&text, "t.toml", &["limits.memory=\"1gb\"".into()]).unwrap().scenario);
    assert!(c.state > 2500.0 * 32768.0 && c.memory >= c.state, "{c:?}");
}

/// netem `duplicate` multiplies what passes it: 20 chained 100 % duplicators
/// make 2^20 copies of every packet, which the estimate now sees.
#[test]
fn duplication_multiplies_the_estimate() {
    let chain = |n: usize| {
        let mut t = String::from("duration = \"2s\"\n");
        for i in 0..n {
            t += &format!("[[links]]\nid = \"d{i}\"\nqdisc = {{ kind = \"netem\", delay = \"1ms\", duplicate = 100, limit = 100000000 }}\n");
        }
        let ids: Vec<String> = (0..n).map(|i| format!("\"d{i}\"")).collect();
        t + &format!("[[flows]]\nid = \"p\"\nkind = \"ping\"\ninterval = \"10ms\"\npath = [{}]\n", ids.join(", "))
    };
    let cost = |t: &str| limits::estimate(&scenario::parse(t, "t.toml", &["limits.memory=\"1000gb\"".into(), "limits.events=1000000000000000".into()]).unwrap().scenario);
    let (one, ten) = (cost(&chain(1)), cost(&chain(10)));
    assert!(ten.packets > 1000.0 * one.packets, "{} vs {}", ten.packets, one.packets);
    let e = parse_err(&chain(20), &[]);
    assert!(e.contains("limits.memory") || e.contains("limits.events"), "{e}");
}

/// A bulk flow on links without a rate was costed at nothing when no link
/// had a rate, so nothing bounded its run time: it is costed at its window
/// per round trip.
#[test]
fn an_unrated_path_is_costed_at_a_window_per_round_trip() {
    let text = "duration = \"100s\"\n[[links]]\nid = \"a\"\ndelay = \"10ms\"\n[[flows]]\nid = \"f\"\npath = [\"a\"]\n";
    let p = scenario::parse(text, "t.toml", &["limits.memory=\"1000gb\"".into()]).unwrap();
    let c = limits::estimate(&p.scenario);
    // 3 MiB (the receive window) per 10 ms: 2.5 Gbit/s, 2.1e5 packets/s.
    let pps = 3.0 * 1048576.0 * 8.0 / 0.01 / 8.0 / 1500.0;
    assert!((c.packets / 100.0 / pps - 1.0).abs() < 0.01, "{} packets", c.packets);
}

#[test]
fn fq_codel_buckets_and_quantum_are_checked_as_linux_does() {
    let base = "duration='1s'\n[[links]]\nid='l'\nrate='1Mbit'\nqdisc={kind='fq_codel', QD}\n[[flows]]\nid='f'\npath=['l']\n";
    for (q, want) in [("flows=0", "flows must be in 1..=65536 (as Linux accepts), got 0"), ("flows=4294967295", "got 4294967295"), ("quantum=2000000", "quantum must be at most 1048576")] {
        let e = parse_err(&base.replace("QD", q), &[]);
        assert!(e.contains("links[0].qdisc:") && e.contains(want), "{e}");
    }
    assert!(scenario::parse(&base.replace("QD", "flows=65536"), "t.toml", &[]).is_ok());
    // As a shaper's child too.
    let e = parse_err(&base.replace("{kind='fq_codel', QD}", "{kind='htb', rate='1Mbit', child={kind='fq_codel', flows=0}}"), &[]);
    assert!(e.contains("child: flows must be in 1..=65536"), "{e}");
}

/// An override that creates a table the scenario does not have is the
/// override's fault, not the file's.
#[test]
fn an_unknown_table_made_by_an_override_is_blamed_on_it() {
    let text = "duration='1s'\n[[links]]\nid='l'\nrate='1Mbit'\n[[flows]]\nid='f'\npath=['l']\n";
    let e = parse_err(text, &["foo.bar=1"]);
    assert!(e.starts_with("--set: foo.bar: foo: unknown field `foo`"), "{e}");
    let e = parse_err(text, &["links.l.foo.bar=1"]);
    assert!(e.starts_with("--set: links.l.foo.bar: links[0].foo: unknown field `foo`"), "{e}");
}

/// Thousands of problems in one file are each located (one parse and a
/// line index serve them all), and lists of ids in messages stay short.
#[test]
fn every_problem_of_a_large_file_is_located_and_messages_stay_short() {
    let mut text = String::from("duration = \"1s\"\n");
    for i in 0..3000 {
        text += &format!("[[links]]\nid = \"l{i}\"\nrate = \"{i}potatoes\"\n");
    }
    text += "[[flows]]\nid = \"f\"\npath = [\"nowhere\"]\n";
    let e = scenario::parse(&text, "t.toml", &[]).err().expect("accepted");
    assert_eq!(e.problems.len(), 3000);
    for (i, p) in e.problems.iter().enumerate().step_by(499) {
        assert_eq!((p.line, p.key.as_str()), (Some(4 + 3 * i), format!("links[{i}].rate").as_str()), "{p:?}");
    }
    let fixed = text.replace("potatoes", "Mbit");
    let e = parse_err(&fixed, &[]);
    assert!(e.contains("unknown link \"nowhere\" (links are: \"l0\", \"l1\"") && e.contains("... (3000 in all))"), "{e}");
    assert!(e.len() < 400, "{} bytes", e.len());
}
