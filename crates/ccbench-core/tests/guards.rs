//! Resource guards, summaries that cannot mislead,
//! unit warnings, error locations and seed-driven variation.
//!
//! The regression inputs are reported ones: each used to
//! abort (SIGABRT on allocation failure), hang, or run out of memory.

mod common;

use ccbench_core::scenario;
use common::{dumbbell, flow, link, run};

fn parse_err(text: &str, overrides: &[&str]) -> String {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match scenario::parse(text, "t.toml", &o) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn one_flow(extra_flow: &str, metrics: &str) -> String {
    format!(
        r#"
duration = "3s"
[[links]]
id = "b"
rate = "10Mbit"
delay = "5ms"
[[links]]
id = "r"
delay = "5ms"
[[flows]]
id = "f"
path = ["b"]
reverse = ["r"]
{extra_flow}
[metrics]
{metrics}
"#
    )
}

// ---- resource guards ----------------------------------------------------

#[test]
fn reported_inputs_are_refused_with_the_allowed_range() {
    let e = parse_err(&one_flow("count = 4294967295", ""), &[]);
    assert!(e.contains("t.toml:") && e.contains("flows[0].count: must be 0..=10000, got 4294967295"), "{e}");
    let e = parse_err(&one_flow("", "interval = \"1ns\""), &[]);
    assert!(e.contains("metrics.interval: must be at least 100us, got 1ns"), "{e}");
    let ping = one_flow("kind = \"ping\"\ninterval = \"1ns\"", "");
    let e = parse_err(&ping, &[]);
    assert!(e.contains("flows[0].interval: must be at least 10us, got 1ns"), "{e}");
    let e = parse_err(&one_flow("tcp = { init_cwnd = 4294967295 }", ""), &[]);
    assert!(e.contains("flows[0].tcp.init_cwnd: must be 1..=65535, got 4294967295"), "{e}");
    // Many specs each within range still add up.
    let mut many = one_flow("count = 6000", "");
    many += "[[flows]]\nid = \"g\"\npath = [\"b\"]\nreverse = [\"r\"]\ncount = 6000\n";
    let e = parse_err(&many.replace("duration = \"3s\"", "duration = \"1ms\""), &[]);
    assert!(e.contains("flows: 12000 flows in all (counting `count` copies); at most 10000 are allowed"), "{e}");
    let e = parse_err(&one_flow("", ""), &["duration=\"1000000000s\""]);
    assert!(e.contains("duration: must be at most 1000000s"), "{e}");
}

#[test]
fn cost_estimate_refuses_runs_beyond_the_limits() {
    // 100 Mbit/s for a day, every sojourn recorded: far beyond 2 GiB.
    let text = dumbbell("100Mbit", 20.0, "{ kind = \"fq_codel\" }", "86400s", "[[flows]]\nid = \"a\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n");
    let e = parse_err(&text, &[]);
    assert!(e.contains("duration: this run would hold about") && e.contains("limits.memory"), "{e}");
    // Raising the limits accepts it (nothing is run here).
    let o = ["limits.memory=\"1000gb\"".to_string(), "limits.events=1000000000000".to_string()];
    assert!(scenario::parse(&text, "t.toml", &o).is_ok());
    // The estimate grows with what is recorded.
    let p = scenario::parse(&text, "t.toml", &o).unwrap();
    let all = scenario::limits::estimate(&p.scenario);
    let mut fewer = p.scenario.clone();
    fewer.metrics.sojourn_every = 100;
    fewer.metrics.rtt_samples = false;
    assert!(scenario::limits::estimate(&fewer).memory < all.memory / 10.0);
    // A 10 Mbit/s link for 1e5 s: ~1.25e8 packets, 3.7e8 events: over a limit of 1e8.
    let e = parse_err(&one_flow("", "sojourn_every = 1000000\nrtt_samples = false"), &["duration=\"100000s\"", "limits.events=100000000"]);
    assert!(e.contains("this run would take about") && e.contains("limits.events = 100000000"), "{e}");
}

#[test]
fn unlimited_path_warns_and_stops_at_the_memory_limit_without_results() {
    // A reported input: two links without a rate and one CUBIC flow. Its
    // socket buffers bound its window (the estimate costs it at a window
    // per round trip), but buffers this large put more packets in flight
    // than a small limit holds: the run stops.
    let text = r#"
duration = "3s"
[[links]]
id = "a"
delay = "10ms"
[[links]]
id = "b"
delay = "10ms"
[[flows]]
id = "bulk"
cc = "cubic"
path = ["a"]
reverse = ["b"]
tcp = { wmem_max = "256mb", rmem_max = "256mb" }
[metrics]
sojourn_every = 1000000
rtt_samples = false
[limits]
memory = "4mb"
"#;
    let p = scenario::parse(text, "t.toml", &[]).unwrap();
    assert_eq!(p.warnings.len(), 1);
    assert_eq!(p.warnings[0].key, "flows[0].path");
    assert!(p.warnings[0].message.contains("only its socket buffers limit it"));
    let e = match ccbench_core::run(text, "t.toml", &[], &mut || false) {
        Err(e) => e,
        Ok(_) => panic!("a run over its memory limit finished"),
    };
    let m = e.to_string();
    assert!(m.starts_with("t.toml: limits.memory: stopped at") && m.contains("more than the memory limit of 4 MiB"), "{m}");
}

#[test]
fn a_shaping_qdisc_limits_a_path_without_a_line_rate() {
    // htb/tbf/netem rate on a link with no `rate`: the flow is bounded, so no
    // warning, and the cost is estimated at the shaper's rate.
    let text = |q: &str| {
        format!(
            "duration = \"2s\"\n[[links]]\nid = \"a\"\ndelay = \"10ms\"\nqdisc = {q}\n[[links]]\nid = \"b\"\ndelay = \"10ms\"\n\
             [[flows]]\nid = \"bulk\"\ncc = \"cubic\"\npath = [\"a\"]\nreverse = [\"b\"]\n"
        )
    };
    for q in [
        r#"{ kind = "htb", rate = "10Mbit" }"#,
        r#"{ kind = "tbf", rate = "10Mbit", burst = "3000b", latency = "50ms" }"#,
        r#"{ kind = "netem", rate = "10Mbit", delay = "1ms" }"#,
        r#"{ kind = "htb", rate = "50Mbit", child = { kind = "netem", rate = "10Mbit" } }"#,
    ] {
        let p = scenario::parse(&text(q), "t.toml", &[]).unwrap();
        assert!(p.warnings.is_empty(), "{q}: {:?}", p.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        let cost = ccbench_core::scenario::limits::estimate(&p.scenario);
        // 10 Mbit/s for 2 s of 1500 B packets plus ACKs: about 1667 + 833.
        assert!((2000.0..3000.0).contains(&cost.packets), "{q}: {}", cost.packets);
    }
    assert_eq!(scenario::parse(&text(r#"{ kind = "pfifo" }"#), "t.toml", &[]).unwrap().warnings.len(), 1);
}

#[test]
fn memory_estimate_of_a_run_tracks_its_recorded_tables() {
    let text = dumbbell("20Mbit", 20.0, "{ kind = \"pfifo\", limit = 100 }", "4s", "[[flows]]\nid = \"a\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n");
    let p = scenario::parse(&text, "t.toml", &[]).unwrap();
    let mut sim = scenario::build::build(&p.scenario);
    let before = sim.memory_bytes();
    sim.run();
    let after = sim.memory_bytes();
    let m = &sim.metrics;
    // At least the sojourn and RTT rows, 25 B each.
    let rows = (m.sojourn.len() + m.rtt.len()) as u64;
    assert!(rows > 10_000, "{rows}");
    assert!(after >= before + rows * 25, "{before} -> {after} for {rows} rows");
    // And the pre-run estimate is an upper bound within an order of magnitude.
    let est = scenario::limits::estimate(&p.scenario).memory;
    assert!(est >= after as f64 * 0.5 && est <= after as f64 * 4.0, "estimate {est} vs {after}");
}

// ---- warm-up ------------------------------------------------------------

const TWO_CUBIC: &str = "[[flows]]\nid = \"a\"\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n\
                         [[flows]]\nid = \"b\"\ncc = \"cubic\"\nstart = \"1s\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";

#[test]
fn counters_count_only_after_the_warm_up() {
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\", limit = 30 }", "8s", TWO_CUBIC);
    let all = run(&text, &[]);
    let warm = run(&text, &["metrics.warmup=\"3s\""]);
    // The warm-up changes no dynamics, only what is counted.
    assert_eq!(all.metrics.link_series.tx_bytes, warm.metrics.link_series.tx_bytes);
    assert_eq!(all.metrics.link_series.drops, warm.metrics.link_series.drops);
    let (la, lw) = (link(&all.summary, "bottleneck"), link(&warm.summary, "bottleneck"));
    assert!(lw.drops > 0 && lw.drops < la.drops, "{} of {}", lw.drops, la.drops);
    // Drops before 3 s lie between the samples around 3 s (the warm-up
    // snapshot and the 3 s sample share an instant).
    let ls = &all.metrics.link_series;
    let at = |t: f64| (0..ls.time_s.len()).find(|&k| ls.link[k] == 0 && (ls.time_s[k] - t).abs() < 1e-9).map(|k| ls.drops[k]).unwrap();
    let before = la.drops - lw.drops;
    assert!(at(2.9) <= before && before <= at(3.1), "{} <= {before} <= {}", at(2.9), at(3.1));
    assert!(lw.arrivals < la.arrivals && lw.tx_packets < la.tx_packets);
    let (fa, fw) = (flow(&all.summary, "a"), flow(&warm.summary, "a"));
    assert!(fw.retransmits < fa.retransmits, "{} vs {}", fw.retransmits, fa.retransmits);
    assert!(fw.delivered_bytes == fa.delivered_bytes);
    // Delivered after the warm-up: the series' counter from its sample at
    // 3 s (the warm-up snapshot's instant) on; flow b starts at 1 s, inside
    // the warm-up, so its count starts there too. Without a warm-up, all of it.
    let fs = &all.metrics.flow_series;
    let at = |f: u32, t: f64| (0..fs.time_s.len()).find(|&k| fs.flow[k] == f && (fs.time_s[k] - t).abs() < 1e-9).map(|k| fs.delivered_bytes[k]).unwrap();
    for (i, id) in ["a", "b"].into_iter().enumerate() {
        let (fa, fw) = (flow(&all.summary, id), flow(&warm.summary, id));
        assert_eq!(fa.delivered_after_warmup_bytes, fa.delivered_bytes, "{id}");
        assert_eq!(fw.delivered_after_warmup_bytes, fw.delivered_bytes - at(i as u32, 3.0), "{id}");
        assert!(fw.delivered_after_warmup_bytes > 0 && at(i as u32, 3.0) > 0, "{id}");
        // ... and the goodput is that over the active time after the warm-up (the whole 5 s).
        let g = fw.delivered_after_warmup_bytes as f64 * 8.0 / 5.0 / 1e6;
        assert!((fw.goodput_mbps - g).abs() < 1e-9 * g, "{id}: {} vs {g}", fw.goodput_mbps);
    }
}

/// The summary's interval-goodput spread is that of the flow series'
/// goodput samples at or after the warm-up's end, exactly (what a report's
/// goodput box would compute from the table).
#[test]
fn interval_goodput_spread_is_the_series_after_the_warm_up() {
    use ccbench_core::metrics::summary::percentile;
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\", limit = 30 }", "8s", TWO_CUBIC);
    let out = run(&text, &["metrics.warmup=\"3s\""]);
    let fs = &out.metrics.flow_series;
    for (i, id) in ["a", "b"].into_iter().enumerate() {
        let mut v: Vec<f64> = (0..fs.time_s.len()).filter(|&k| fs.flow[k] == i as u32 && fs.time_s[k] >= 3.0).map(|k| fs.goodput_mbps[k]).collect();
        assert_eq!(v.len(), 51, "{id}: samples at 3.0, 3.1, ..., 8.0 s");
        v.sort_by(f64::total_cmp);
        let st = &flow(&out.summary, id).interval_goodput_mbps;
        assert_eq!(st.mean, Some(v.iter().sum::<f64>() / v.len() as f64), "{id}");
        for (got, q) in [(st.p5, 5.0), (st.p25, 25.0), (st.p50, 50.0), (st.p75, 75.0), (st.p95, 95.0), (st.p99, 99.0)] {
            assert_eq!(got, percentile(&v, q), "{id} p{q}");
        }
        // Two CUBIC flows through 10 Mbit/s: the intervals differ, and sum to about the link.
        assert!(st.p5 < st.p95 && st.p95.unwrap() <= 10.0, "{id}: {st:?}");
    }
    // Without samples after the warm-up (a flow that starts after the run): no spread.
    let late = run(&text, &["flows.b.start=\"9s\""]);
    assert_eq!(flow(&late.summary, "b").interval_goodput_mbps.p50, None);
}

#[test]
fn warm_up_must_end_before_the_run() {
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\" }", "4s", TWO_CUBIC);
    let e = parse_err(&text, &["metrics.warmup=\"4s\""]);
    assert!(e.contains("--set: metrics.warmup: must be shorter than the run (4s)"), "{e}");
}

#[test]
fn goodput_and_jain_are_null_when_there_is_nothing_to_measure() {
    // Flow "b" stops before the warm-up ends: no goodput, and Jain over one flow is no index.
    let flows = "[[flows]]\nid = \"a\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n\
                 [[flows]]\nid = \"b\"\nstop = \"1s\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\" }", "4s", flows);
    let out = run(&text, &["metrics.warmup=\"2s\""]);
    assert!(flow(&out.summary, "b").goodput_mbps.is_nan());
    assert!(flow(&out.summary, "a").goodput_mbps > 8.0);
    assert_eq!(out.summary.jain, None);
    let json = serde_json::to_value(&out.summary).unwrap();
    assert!(json["flows"][1]["goodput_mbps"].is_null() && json["jain"].is_null());
    // Two TCP flows: an index; a media flow beside them is left out of it.
    let two = run(&dumbbell("10Mbit", 20.0, "{ kind = \"fq_codel\" }", "6s", TWO_CUBIC), &["metrics.warmup=\"2s\""]);
    let j = two.summary.jain.unwrap();
    let g: Vec<f64> = two.summary.flows.iter().map(|f| f.goodput_mbps).collect();
    assert!((j - (g[0] + g[1]).powi(2) / (2.0 * (g[0] * g[0] + g[1] * g[1]))).abs() < 1e-12);
    let media = format!("{TWO_CUBIC}[[flows]]\nid = \"m\"\nkind = \"media\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n");
    let three = run(&dumbbell("10Mbit", 20.0, "{ kind = \"fq_codel\" }", "6s", &media), &["metrics.warmup=\"2s\""]);
    let g: Vec<f64> = three.summary.flows.iter().filter(|f| f.kind == "tcp").map(|f| f.goodput_mbps).collect();
    assert_eq!(g.len(), 2);
    let j = three.summary.jain.unwrap();
    assert!((j - (g[0] + g[1]).powi(2) / (2.0 * (g[0] * g[0] + g[1] * g[1]))).abs() < 1e-12);
}

// ---- impossible values --------------------------------------------------

#[test]
fn jumbo_frames_on_a_slow_link_do_not_exceed_full_utilization() {
    // A reported case: 9000 B MTU at 64 kbit/s (1.125 s per frame), with a
    // warm-up that ends while a frame is on the wire.
    let flows = "[[flows]]\nid = \"a\"\ntcp = { mtu = 9000 }\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("64kbit", 20.0, "{ kind = \"pfifo\" }", "10s", flows);
    for warm in ["0s", "1s", "2.5s", "7.7s"] {
        let out = run(&text, &[&format!("metrics.warmup=\"{warm}\"")]);
        let u = link(&out.summary, "bottleneck").utilization.unwrap();
        assert!(u <= 1.0 + 1e-9 && u > 0.8, "warm-up {warm}: utilization {u}");
    }
}

#[test]
fn a_rate_schedule_reports_its_mean() {
    let flows = "[[flows]]\nid = \"a\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\" }", "10s", flows);
    let out = run(&text, &["links.bottleneck.schedule=[{ at = \"4s\", rate = \"5Mbit\" }]", "metrics.warmup=\"2s\""]);
    let l = link(&out.summary, "bottleneck");
    assert_eq!(l.rate_mbps, Some(10.0));
    // 2 s at 10 + 6 s at 5 over 8 s; the step applies from the end of the
    // frame on the wire at 4 s (at most 1514 B at 10 Mbit/s = 1.2112 ms).
    let late = (10.0 - 5.0) * 1.2112e-3 / 8.0;
    let mean = l.rate_mean_mbps.unwrap();
    assert!(mean >= 6.25 && mean <= 6.25 + late, "{mean}");
    let u = l.utilization.unwrap();
    assert!(u > 0.9 && u <= 1.0 + 1e-9, "{u}");
}

#[test]
fn throughput_series_is_bounded_by_the_link_where_goodput_is_not() {
    // Random loss makes holes; their repair releases a burst in order.
    let flows = "[[flows]]\nid = \"a\"\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("10Mbit", 40.0, "{ kind = \"pfifo\", limit = 200 }", "20s", flows);
    let mut worst_goodput: f64 = 0.0;
    for seed in 1..=5 {
        let out = run(&text, &["links.bottleneck.loss=0.01", &format!("seed={seed}"), "metrics.interval=\"10ms\""]);
        let fs = &out.metrics.flow_series;
        // 10 Mbit/s over 10 ms, plus one 1514 B frame finishing at the edge.
        let bound = 10.0 + 1514.0 * 8.0 / 0.010 / 1e6;
        for k in 0..fs.time_s.len() {
            assert!(fs.throughput_mbps[k] <= bound + 1e-9, "seed {seed} t={} throughput {}", fs.time_s[k], fs.throughput_mbps[k]);
            worst_goodput = worst_goodput.max(fs.goodput_mbps[k]);
        }
        // Everything delivered in order was received first.
        let total: f64 = fs.throughput_mbps.iter().sum::<f64>() * 0.010 / 8.0 * 1e6;
        let delivered = *fs.delivered_bytes.last().unwrap() as f64;
        assert!(total >= delivered - 1e-3, "received {total} < delivered {delivered}");
    }
    // The in-order series does exceed the link after a repair (why the
    // bounded column exists).
    assert!(worst_goodput > 10.0 + 1514.0 * 8.0 / 0.010 / 1e6, "{worst_goodput}");
}

// ---- units, error locations ---------------------------------------------

#[test]
fn byte_rates_are_read_as_tc_reads_them_with_a_warning() {
    let text = one_flow("", "").replace("rate = \"10Mbit\"", "rate = \"100Mbps\"");
    let p = scenario::parse(&text, "t.toml", &[]).unwrap();
    assert_eq!(p.scenario.links[0].rate.unwrap().mbps(), 800.0);
    let w: Vec<String> = p.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("t.toml:5:8: links[0].rate: \"100Mbps\" is read as tc reads it"), "{}", w[0]);
    assert!(w[0].contains("800 Mbit/s") && w[0].contains("write \"100Mbit\""), "{}", w[0]);
    // Set by an override (a suite axis is one): the warning names it.
    let p = scenario::parse(&one_flow("", ""), "t.toml", &["links.b.rate=2kbps".into()]).unwrap();
    assert_eq!(p.warnings.len(), 1);
    assert_eq!((p.warnings[0].file.as_str(), p.warnings[0].key.as_str()), ("--set", "links.b.rate"));
    assert!(p.warnings[0].message.contains("0.016 Mbit/s") && p.warnings[0].message.contains("\"2kbit\""), "{}", p.warnings[0]);
    // Bits per second: no warning.
    assert!(scenario::parse(&one_flow("", ""), "t.toml", &[]).unwrap().warnings.is_empty());
}

#[test]
fn override_errors_name_the_override_and_file_errors_keep_their_lines() {
    let text = one_flow("", "");
    let e = parse_err(&text, &["links.b.rate=5potatoes"]);
    assert!(e.starts_with("--set: links.b.rate: links[0].rate: unknown rate unit \"potatoes\""), "{e}");
    // An override that inserts a key must not move the file's own problems.
    let bad = text.replace("id = \"f\"", "id = \"f\"\ndscp = 99");
    let line = bad.lines().position(|l| l.starts_with("dscp")).unwrap() + 1;
    let e = parse_err(&bad, &["links.r.rate=\"5Mbit\"", "links.b.loss=0.1"]);
    assert!(e.starts_with(&format!("t.toml:{line}:8: flows[0].dscp: must be 0..63")), "line {line}: {e}");
    // A syntax error keeps its line and column with any override.
    let broken = text.replace("delay = \"5ms\"\n[[links]]", "delay = \"5ms\n[[links]]");
    let plain = parse_err(&broken, &[]);
    let with_set = parse_err(&broken, &["seed=3"]);
    assert!(plain.starts_with("t.toml:6:"), "{plain}");
    assert!(with_set.starts_with("t.toml:6:"), "{with_set}");
}

// ---- seeds --------------------------------------------------------------

/// Without host timing noise a run is exactly periodic and the seed
/// changes nothing here; with the default noise (start jitter, per-packet
/// jitter and stalls) every seed is its own sample, and a seed repeats.
#[test]
fn host_timing_noise_makes_the_seed_matter_by_default() {
    let flows = "[[flows]]\nid = \"a\"\ncount = 3\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"pfifo\", limit = 50 }", "5s", flows);
    let quiet = ["flows.a.start_jitter=\"0s\"", "flows.a.tcp.tx_jitter=\"0s\"", "flows.a.tcp.tx_stall_prob=0.0", "flows.a.tcp.ack_jitter=\"0s\"", "flows.a.tcp.ack_stall_prob=0.0"];
    let plain: Vec<_> = (1..=5).map(|s| run(&text, &[&format!("seed={s}"), quiet[0], quiet[1], quiet[2], quiet[3], quiet[4]]).summary).collect();
    for s in &plain[1..] {
        assert_eq!(s.flows, plain[0].flows);
        assert_eq!(s.links, plain[0].links);
    }
    let noisy: Vec<_> = (1..=5).map(|s| run(&text, &[&format!("seed={s}")]).summary).collect();
    for s in &noisy {
        for f in &s.flows {
            assert!((0.0..=0.005).contains(&f.start_s), "{} starts at {}", f.id, f.start_s);
        }
    }
    let starts: Vec<Vec<f64>> = noisy.iter().map(|s| s.flows.iter().map(|f| f.start_s).collect()).collect();
    for k in 1..starts.len() {
        assert_ne!(starts[k], starts[0], "seed {} starts like seed 1", k + 1);
        assert_ne!(noisy[k].flows, noisy[0].flows);
    }
    // Each part of the noise alone moves the run.
    let only = |keep: usize| -> Vec<_> {
        let sets: Vec<&str> = quiet.iter().enumerate().filter(|(i, _)| *i != keep).map(|(_, s)| *s).collect();
        (1..=3).map(|s| run(&text, &[&format!("seed={s}"), sets[0], sets[1]]).summary.flows).collect()
    };
    for keep in 0..3 {
        let runs = only(keep);
        assert!(runs[1] != runs[0] || runs[2] != runs[0], "{} alone changed nothing", quiet[keep]);
    }
    // The same seed gives the same run.
    assert_eq!(run(&text, &["seed=3"]).summary.flows, noisy[2].flows);
}

#[test]
fn marks_and_random_losses_also_count_after_the_warm_up() {
    let flows = "[[flows]]\nid = \"a\"\ncc = \"cubic\"\necn = true\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let text = dumbbell("10Mbit", 20.0, "{ kind = \"codel\", ecn = true }", "8s", flows);
    for seed in 1..=5 {
        let o = ["links.bottleneck.loss=0.002".to_string(), format!("seed={seed}")];
        let all = run(&text, &[&o[0], &o[1]]);
        let warm = run(&text, &[&o[0], &o[1], "metrics.warmup=\"4s\""]);
        let (la, lw) = (link(&all.summary, "bottleneck"), link(&warm.summary, "bottleneck"));
        assert!(lw.lost > 0 && lw.lost < la.lost, "seed {seed}: lost {} of {}", lw.lost, la.lost);
        assert!(lw.marks > 0 && lw.marks < la.marks, "seed {seed}: marks {} of {}", lw.marks, la.marks);
        let (fa, fw) = (flow(&all.summary, "a"), flow(&warm.summary, "a"));
        assert!(fw.ce_marks > 0 && fw.ce_marks < fa.ce_marks, "seed {seed}: CE {} of {}", fw.ce_marks, fa.ce_marks);
        // Marks the link made after the warm-up reach the receiver as CE
        // marks (loss is on arrival, before the queue): the two counts
        // differ only by marked packets in flight at the warm-up instant.
        assert!(fw.ce_marks.abs_diff(lw.marks) <= 2, "seed {seed}: CE {} vs marks {}", fw.ce_marks, lw.marks);
    }
}

#[test]
fn test_shapes_pass_start_jitter_to_their_tcp_flows() {
    let text = r#"
[[links]]
id = "up"
rate = "10Mbit"
delay = "5ms"
[[links]]
id = "down"
rate = "10Mbit"
delay = "5ms"
[test]
name = "tcp_nup"
up = ["up"]
down = ["down"]
streams = 3
length = "4s"
delay = "1s"
start_jitter = "100ms"
"#;
    let starts = |seed: u64| -> Vec<f64> {
        let out = run(text, &[&format!("seed={seed}")]);
        out.summary.flows.iter().map(|f| f.start_s).collect()
    };
    let (a, b) = (starts(1), starts(2));
    assert_eq!(a.len(), 3);
    assert!(a.iter().chain(&b).all(|s| (1.0..=1.1).contains(s)), "{a:?} {b:?}");
    assert_ne!(a, b);
    // Pings are not jittered; a jitter as long as the test is refused.
    let p = scenario::parse(text, "t.toml", &[]).unwrap();
    assert!(p.scenario.flows.iter().filter(|f| f.kind != scenario::FlowKind::Tcp).all(|f| f.start_jitter.is_none()));
    let e = parse_err(text, &["test.start_jitter=\"4s\""]);
    assert!(e.contains("test.start_jitter: must be shorter than the test's length (4s)"), "{e}");
}

#[test]
fn flows_sharing_a_link_are_costed_at_its_rate_not_each_at_it() {
    let one = dumbbell("1Gbit", 20.0, "{ kind = \"fq_codel\" }", "60s", "[[flows]]\nid = \"a\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n");
    let many = one.replace("id = \"a\"", "id = \"a\"\ncount = 1000");
    let cost = |t: &str| scenario::limits::estimate(&scenario::parse(t, "t.toml", &["limits.memory=\"1000gb\"".into()]).unwrap().scenario);
    let (c1, c1000) = (cost(&one), cost(&many));
    // Same data through the bottleneck; only the per-flow series grow.
    assert!((c1000.packets / c1.packets - 1.0).abs() < 1e-9, "{} vs {}", c1000.packets, c1.packets);
    assert!(c1000.memory > c1.memory);
}

/// `[commands]` for live emulation: a command per flow must name a flow
/// entry (the ones there are are listed), and something must run.
#[test]
fn emulation_commands_name_existing_flows() {
    let base = one_flow("", "");
    let ok = format!("{base}[commands]\nflows = {{ f = \"ping -c 1 $CCB_SERVER_IP\" }}\n");
    let sc = scenario::parse(&ok, "t.toml", &[]).unwrap().scenario;
    assert_eq!(sc.commands.unwrap().flows["f"], "ping -c 1 $CCB_SERVER_IP");
    let e = parse_err(&format!("{base}[commands]\nflows = {{ g = \"true\" }}\n"), &[]);
    assert!(e.contains("commands.flows.g: no flow has id \"g\" (flows: f)"), "{e}");
    let e = parse_err(&format!("{base}[commands]\nflows = {{ f = \" \" }}\n"), &[]);
    assert!(e.contains("commands.flows.f: must be a shell command"), "{e}");
    let e = parse_err(&format!("{base}[commands]\nserver = [\"true\"]\n"), &[]);
    assert!(e.contains("commands.client: must be a shell command") && e.contains("commands.flows"), "{e}");
}
