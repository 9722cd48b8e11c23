//! The memory limit holds however few events a run takes, measured with a
//! counting allocator: the reported runs that grew far past it (flows
//! bursting a 65535-segment window into a netem delay line, a media RTP
//! queue allowed 1000 s, chained duplicating netems, windows sent into a
//! 30 s pipe), each scaled to a 64 MiB limit; and the estimate of what
//! links and flows hold before any packet moves, against what building
//! them allocates. The allocator is process-wide, so the tests take turns.

use std::sync::Mutex;

use ccbench_core::guard::Stop;
use ccbench_core::scenario;
use ccbench_fuzz::{live_above, live_from_here, peak_above, Counting};

#[global_allocator]
static A: Counting = Counting;
static TURN: Mutex<()> = Mutex::new(());

const LIMIT: i64 = 64 << 20;

/// Run `text` as `ccbench run` does (tables handed out as it goes): it must
/// stop over the limit with at most twice the limit allocated at any time.
/// Allocated counts the capacity containers reserve: a doubling vector's
/// untouched half is allocated but not resident, so resident memory stays
/// within a few percent of the limit (README, "Resource guards"); before, these runs
/// allocated 4 to 100 times the limit.
#[track_caller]
fn stops_within_the_limit(what: &str, text: &str) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let p = scenario::parse_opts(text, what, &[], true).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(p.scenario.limits.memory.0, LIMIT as u64);
    let base = live_from_here();
    let mut sim = scenario::build::build(&p.scenario);
    let end = sim.end;
    let mut sink = |_: &'static str, _: ccbench_core::metrics::Table, _: &mut Vec<ccbench_core::metrics::Table>| true;
    let finished = sim.run_until_io(end, &mut |_| false, Some((1 << 20, &mut sink)));
    let peak = peak_above(base);
    let counted = sim.memory_bytes() as i64;
    assert!(!finished, "{what}: finished within {} MiB", LIMIT >> 20);
    assert!(matches!(sim.guard.stop, Some(Stop::Memory(_))), "{what}: {:?}", sim.guard.stop);
    assert!(counted > LIMIT, "{what}: counted {counted}");
    assert!(peak <= 2 * LIMIT, "{what}: {} MiB allocated at the peak", peak >> 20);
}

#[test]
fn a_burst_into_a_netem_delay_line_stops_at_the_limit() {
    stops_within_the_limit(
        "netem burst",
        r#"duration = "10s"
[limits]
memory = "64mb"
[[links]]
id = "n"
rate = "10Gbit"
qdisc = { kind = "netem", delay = "5s", limit = 100000000 }
[[links]]
id = "r"
rate = "10Gbit"
[[flows]]
id = "f"
cc = "cubic"
count = 20
path = ["n"]
reverse = ["r"]
tcp = { init_cwnd = 65535, tso = false, wmem_default = "1gb", wmem_max = "1gb", rmem_default = "1gb", rmem_max = "1gb" }
"#,
    );
}

#[test]
fn a_media_queue_allowed_1000_s_stops_at_the_limit() {
    stops_within_the_limit(
        "media queue",
        r#"duration = "120s"
[limits]
memory = "64mb"
[[links]]
id = "fast"
rate = "1Gbit"
delay = "10ms"
[[links]]
id = "back"
rate = "10Mbit"
delay = "10ms"
[[flows]]
id = "m"
kind = "media"
path = ["fast"]
reverse = ["back"]
media = { max_rtp_queue_delay = "1000s", max_rate = "10Gbit", init_rate = "10Gbit", min_rate = "10Gbit" }
"#,
    );
}

#[test]
fn chained_duplicating_netems_stop_at_the_limit() {
    let n = 14;
    let mut text = String::from("duration = \"20s\"\n[metrics]\nsojourn_every = 1000000\n[limits]\nmemory = \"64mb\"\n");
    for i in 0..n {
        text += &format!("[[links]]\nid = \"d{i}\"\nqdisc = {{ kind = \"netem\", delay = \"1s\", duplicate = 100, limit = 100000000 }}\n");
    }
    let path: Vec<String> = (0..n).map(|i| format!("\"d{i}\"")).collect();
    text += &format!("[[links]]\nid = \"r\"\nrate = \"1Gbit\"\ndelay = \"10ms\"\n[[flows]]\nid = \"p\"\nkind = \"ping\"\ninterval = \"1ms\"\npath = [{}]\nreverse = [\"r\"]\n", path.join(", "));
    stops_within_the_limit("duplicating chain", &text);
}

#[test]
fn windows_sent_into_a_long_pipe_stop_at_the_limit() {
    stops_within_the_limit(
        "init_cwnd into a 30 s delay",
        r#"duration = "40s"
[metrics]
sojourn_every = 1000000
rtt_samples = false
[limits]
memory = "64mb"
[[links]]
id = "long"
rate = "100Gbit"
delay = "30s"
[[links]]
id = "r"
rate = "10Gbit"
[[flows]]
id = "f"
cc = "cubic"
count = 20
path = ["long"]
reverse = ["r"]
tcp = { init_cwnd = 65535, wmem_default = "1gb", wmem_max = "1gb", rmem_default = "1gb", rmem_max = "1gb" }
"#,
    );
}

/// Bytes building `text` allocates.
fn built_bytes(text: &str) -> (i64, u64) {
    let p = scenario::parse(text, "t.toml", &["limits.memory=\"1000gb\"".into()]).unwrap_or_else(|e| panic!("{e}"));
    let base = live_from_here();
    let sim = scenario::build::build(&p.scenario);
    let bytes = live_above(base);
    drop(sim);
    (bytes, scenario::limits::state_bytes(&p.scenario))
}

/// The estimate of each qdisc's and flow kind's fixed state is within 25 %
/// of what building a hundred of them allocates (per link or flow).
#[test]
fn state_estimate_tracks_what_building_allocates() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let links = |q: &str, n: usize| {
        let mut s = String::from("duration = \"1s\"\n");
        for i in 0..n {
            s += &format!("[[links]]\nid = \"l{i}\"\nrate = \"10Mbit\"\ndelay = \"1ms\"\nqdisc = {q}\n");
        }
        s + "[[flows]]\nid = \"f\"\nkind = \"ping\"\npath = [\"l0\"]\n"
    };
    let flows = |f: &str, n: u32| format!("duration = \"1s\"\n[[links]]\nid = \"l\"\nrate = \"10Mbit\"\ndelay = \"1ms\"\n[[flows]]\nid = \"f\"\n{f}\ncount = {n}\npath = [\"l\"]\n");
    let mut cases: Vec<(String, String, String)> = [
        "{ kind = 'pfifo' }", "{ kind = 'bfifo', limit = '100kb' }", "{ kind = 'codel' }", "{ kind = 'fq_codel' }",
        "{ kind = 'fq_codel', flows = 16384 }", "{ kind = 'dualpi2' }", "{ kind = 'pie' }", "{ kind = 'fq_pie' }",
        "{ kind = 'red', limit = 400000, avpkt = 1000 }", "{ kind = 'tbf', rate = '1Mbit', burst = '5000b', latency = '50ms' }",
        "{ kind = 'htb', rate = '1Mbit', child = { kind = 'fq_codel' } }", "{ kind = 'netem' }", "{ kind = 'netem', limit = 100000 }",
        "{ kind = 'cake' }", "{ kind = 'cake', diffserv = 'diffserv8' }", "{ kind = 'twin_codel_af' }", "{ kind = 'lfq_cobalt' }",
    ]
    .iter()
    .map(|q| (q.to_string(), links(q, 1), links(q, 21)))
    .collect();
    for f in ["cc = 'cubic'", "cc = 'bbr'", "kind = 'media'", "kind = 'ping'", "cc = 'cubic'\naccess_delay = '1ms'"] {
        cases.push((f.to_string(), flows(f, 1), flows(f, 21)));
    }
    for (what, one, many) in cases {
        let ((b1, e1), (b21, e21)) = (built_bytes(&one), built_bytes(&many));
        let (built, estimated) = ((b21 - b1) as f64 / 20.0, (e21 - e1) as f64 / 20.0);
        let ratio = estimated / built;
        assert!((0.8..=1.25).contains(&ratio), "{what}: estimated {estimated:.0} B each, building allocates {built:.0}");
    }
}
