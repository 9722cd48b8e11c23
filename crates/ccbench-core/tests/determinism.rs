//! Same scenario + seed ⇒ bit-identical summaries and series; a different
//! seed changes a randomized scenario; adding a flow does not perturb
//! another component's random stream.

mod common;
use common::*;

fn lossy() -> String {
    let flows = tcp("a", "cubic", "") + &tcp("b", "reno", "start = \"1s\"") + PING;
    dumbbell("20Mbit", 30.0, r#"{ kind = "fq_codel" }"#, "10s", &flows)
}

#[test]
fn same_seed_gives_identical_results() {
    let a = run(&lossy(), &["links.bottleneck.loss=0.001"]);
    let b = run(&lossy(), &["links.bottleneck.loss=0.001"]);
    assert_eq!(a.summary, b.summary);
    // Compare the series bit for bit (NaN-safe, unlike f64 equality).
    let bytes = |m: &ccbench_core::metrics::Metrics| -> Vec<(String, Vec<u8>)> {
        m.clone().into_tables().into_iter().flat_map(|(t, cols)| cols.into_iter().map(move |(c, v)| (format!("{t}.{c}"), v.to_le_bytes()))).collect()
    };
    let (ba, bb) = (bytes(&a.metrics), bytes(&b.metrics));
    assert_eq!(ba.len(), bb.len());
    for ((name, x), (_, y)) in ba.iter().zip(&bb) {
        assert!(x == y, "series {name} differs between identical runs");
    }
    assert!(!a.metrics.sojourn.is_empty());
}

#[test]
fn different_seed_changes_a_randomized_run() {
    let a = run(&lossy(), &["links.bottleneck.loss=0.001", "seed=1"]);
    let b = run(&lossy(), &["links.bottleneck.loss=0.001", "seed=2"]);
    assert_ne!(a.summary.flows, b.summary.flows);
}

#[test]
fn streams_are_per_component() {
    // The bottleneck's loss pattern is the same whether or not another flow
    // (with its own access link) exists: the ping's losses on a link only it
    // uses do not depend on other flows.
    let base = |extra: &str| {
        format!(
            "{}\n[[links]]\nid = \"lossy\"\nrate = \"10Mbit\"\ndelay = \"5ms\"\nloss = 0.1\n[[flows]]\nid = \"p2\"\nkind = \"ping\"\ninterval = \"10ms\"\npath = [\"lossy\"]\n{extra}",
            dumbbell("20Mbit", 30.0, r#"{ kind = "pfifo" }"#, "5s", &tcp("a", "cubic", ""))
        )
    };
    let one = run(&base(""), &[]);
    let two = run(&base(&tcp("extra", "reno", "access_delay = \"3ms\"")), &[]);
    assert_eq!(probe(&one.summary, "p2").received, probe(&two.summary, "p2").received);
    assert_eq!(link(&one.summary, "lossy").lost, link(&two.summary, "lossy").lost);
}

#[test]
fn cake_runs_are_identical_under_the_same_seed() {
    // Cake draws BLUE decisions, quantum dither and its hash perturbation
    // from the link's stream: same seed, same run.
    let flows = tcp("a", "cubic", "count = 4") + &tcp("b", "reno", "start = \"1s\"") + PING;
    let q = r#"{ kind = "cake", bandwidth = "15Mbit", ingress = true, ack_filter = "aggressive", overhead_preset = "ethernet" }"#;
    let s = dumbbell("20Mbit", 30.0, q, "6s", &flows);
    let (a, b) = (run(&s, &[]), run(&s, &[]));
    assert_eq!(a.summary, b.summary);
    assert!(a.metrics.sojourn.iter().eq(b.metrics.sojourn.iter()));
    assert!(link(&a.summary, "bottleneck").drops > 0);
}

#[test]
fn scream_runs_are_identical_under_the_same_seed() {
    // A SCReAM flow with varying frame sizes (`rand` draws from the flow's
    // stream) through DualPI2, with the tool's send loop (wakeup, send gap):
    // same seed, same packets; another seed, other frames.
    let flows = media("v", "ect1", r#", rand = 50, microburst_interval = "1ms""#);
    let s = dumbbell("50Mbit", 20.0, r#"{ kind = "dualpi2" }"#, "8s", &flows);
    let (a, b) = (run(&s, &[]), run(&s, &[]));
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.metrics.media_series, b.metrics.media_series);
    assert!(a.summary.links.iter().any(|l| l.marks > 0), "the run marks");
    let c = run(&s, &["seed=2"]);
    assert_ne!(a.metrics.media_series, c.metrics.media_series);
}
