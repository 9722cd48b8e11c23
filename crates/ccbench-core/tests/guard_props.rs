//! Property tests of the resource guards: no scenario the validator accepts aborts or
//! hangs (bounded sizes, with known extreme values in the mix), and
//! no summary or series reports more than a link can carry.

use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Wild {
    rate: Option<&'static str>,
    rev_rate: Option<&'static str>,
    count: u64,
    ping: bool,
    ping_interval: &'static str,
    interval: &'static str,
    duration: &'static str,
    bytes: Option<&'static str>,
    init_cwnd: u32,
}

fn wild() -> impl Strategy<Value = Wild> {
    (
        prop::sample::select(vec![None, Some("1Mbit"), Some("20Mbit"), Some("100kbps"), Some("0bit")]),
        prop::sample::select(vec![None, Some("10Mbit")]),
        prop::sample::select(vec![0u64, 1, 1, 1, 3, 3, 10_001, 4_294_967_295, 18_446_744_073_709_551_615]),
        any::<bool>(),
        prop::sample::select(vec!["1ns", "9us", "10us", "20ms", "20ms"]),
        prop::sample::select(vec!["1ns", "99us", "100us", "100ms", "100ms", "1s", "1s"]),
        prop::sample::select(vec!["0s", "0.5s", "0.5s", "2s", "2s", "2s", "100000s", "100000s", "1000000000s", "1e30s"]),
        prop::sample::select(vec![None, None, None, Some("100kb"), Some("100kb"), Some("10p"), Some("10 potatoes")]),
        prop::sample::select(vec![10u32, 10, 10, 65535, 0, 4_294_967_295]),
    )
        .prop_map(|(rate, rev_rate, count, ping, ping_interval, interval, duration, bytes, init_cwnd)| Wild {
            rate,
            rev_rate,
            count,
            ping,
            ping_interval,
            interval,
            duration,
            bytes,
            init_cwnd,
        })
}

/// Values the validator accepts (unlimited links included), so that half
/// the cases run.
fn tame() -> impl Strategy<Value = Wild> {
    (
        prop::sample::select(vec![None, Some("1Mbit"), Some("20Mbit"), Some("100kbps")]),
        prop::sample::select(vec![None, Some("10Mbit")]),
        0u64..4,
        any::<bool>(),
        prop::sample::select(vec!["10us", "1ms", "20ms"]),
        prop::sample::select(vec!["100us", "10ms", "100ms"]),
        prop::sample::select(vec!["0.2s", "1s", "2s", "100000s"]),
        prop::sample::select(vec![None, Some("100kb"), Some("3mb")]),
        prop::sample::select(vec![10u32, 1000]),
    )
        .prop_map(|(rate, rev_rate, count, ping, ping_interval, interval, duration, bytes, init_cwnd)| Wild {
            rate,
            rev_rate,
            count,
            ping,
            ping_interval,
            interval,
            duration,
            bytes,
            init_cwnd,
        })
}

fn wild_text(w: &Wild) -> String {
    let rate = |r: Option<&str>| r.map_or(String::new(), |r| format!("rate = \"{r}\"\n"));
    let mut s = format!("duration = \"{}\"\n[limits]\nmemory = \"64mb\"\nevents = 20000000\n[metrics]\ninterval = \"{}\"\n", w.duration, w.interval);
    s += &format!("[[links]]\nid = \"a\"\ndelay = \"10ms\"\n{}", rate(w.rate));
    s += &format!("[[links]]\nid = \"b\"\ndelay = \"10ms\"\n{}", rate(w.rev_rate));
    s += &format!("[[flows]]\nid = \"f\"\npath = [\"a\"]\nreverse = [\"b\"]\ncount = {}\ntcp = {{ init_cwnd = {} }}\n", w.count, w.init_cwnd);
    if let Some(b) = w.bytes {
        s += &format!("bytes = \"{b}\"\n");
    }
    if w.ping {
        s += &format!("[[flows]]\nid = \"p\"\nkind = \"ping\"\ninterval = \"{}\"\npath = [\"a\"]\nreverse = [\"b\"]\n", w.ping_interval);
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every input is either refused with located problems, or runs to its
    /// end or to a clear memory-limit error: never a panic or an abort.
    #[test]
    fn no_accepted_scenario_aborts(w in prop_oneof![wild(), tame()]) {
        let text = wild_text(&w);
        match ccbench_core::run(&text, "wild.toml", &[], &mut || false) {
            Ok(Some(out)) => {
                for l in &out.summary.links {
                    if let Some(u) = l.utilization {
                        prop_assert!(u <= 1.0 + 1e-9, "{}: {u}", l.id);
                    }
                }
            }
            Ok(None) => prop_assert!(false, "interrupted without being asked"),
            Err(e) => {
                prop_assert!(!e.problems.is_empty());
                for p in &e.problems {
                    prop_assert!(p.file == "wild.toml" && !p.message.is_empty(), "{p}");
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
struct Shape {
    rate_kbit: u32,
    step_kbit: Option<u32>,
    mtu: u32,
    flows: u32,
    warmup_ms: u32,
    loss: f64,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        64u32..40_000,
        prop::option::of(64u32..40_000),
        prop::sample::select(vec![576u32, 1500, 4000, 9000]),
        1u32..4,
        0u32..3500,
        prop::sample::select(vec![0.0, 0.0, 0.02]),
    )
        .prop_map(|(rate_kbit, step_kbit, mtu, flows, warmup_ms, loss)| Shape { rate_kbit, step_kbit, mtu, flows, warmup_ms, loss })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Utilization ≤ 1; bytes a link finishes in a sample interval ≤ its
    /// fastest rate × the interval + one frame; a flow's throughput series
    /// (payload received, any order) likewise.
    #[test]
    fn nothing_exceeds_what_the_link_carries(s in shape(), seed in 1u64..6) {
        let schedule = s.step_kbit.map_or(String::new(), |k| format!("schedule = [{{ at = \"1.7s\", rate = \"{k}kbit\" }}]\n"));
        let text = format!(
            "duration = \"4s\"\nseed = {seed}\n[metrics]\ninterval = \"50ms\"\nwarmup = \"{}ms\"\n\
             [[links]]\nid = \"b\"\nrate = \"{}kbit\"\ndelay = \"10ms\"\nloss = {}\n{schedule}\
             [[links]]\nid = \"r\"\nrate = \"1Gbit\"\ndelay = \"10ms\"\n\
             [[flows]]\nid = \"f\"\ncount = {}\nstart_jitter = \"30ms\"\npath = [\"b\"]\nreverse = [\"r\"]\ntcp = {{ mtu = {} }}\n",
            s.warmup_ms, s.rate_kbit, s.loss, s.flows, s.mtu
        );
        let out = ccbench_core::run(&text, "p.toml", &[], &mut || false).map_err(|e| TestCaseError::fail(e.to_string()))?.unwrap();
        let b = out.summary.links.iter().find(|l| l.id == "b").unwrap();
        prop_assert!(b.utilization.unwrap() <= 1.0 + 1e-9, "utilization {:?}", b.utilization);
        let max_bps = f64::from(s.rate_kbit.max(s.step_kbit.unwrap_or(0))) * 1e3;
        let frame = f64::from(s.mtu + 100);
        let bound_bytes = max_bps * 0.050 / 8.0 + frame;
        let ls = &out.metrics.link_series;
        let rows: Vec<usize> = (0..ls.time_s.len()).filter(|&k| ls.link[k] == 0).collect();
        for w in rows.windows(2) {
            let d = (ls.tx_bytes[w[1]] - ls.tx_bytes[w[0]]) as f64;
            prop_assert!(d <= bound_bytes, "t={} {d} B > {bound_bytes}", ls.time_s[w[1]]);
        }
        // Every flow together: the receivers cannot get more than the link sent.
        let fs = &out.metrics.flow_series;
        let mut per_t: std::collections::BTreeMap<u64, f64> = Default::default();
        for k in 0..fs.time_s.len() {
            *per_t.entry((fs.time_s[k] * 1e3).round() as u64).or_default() += fs.throughput_mbps[k] * 1e6 * 0.050 / 8.0;
        }
        for (t, bytes) in per_t {
            // Several flows can each have one frame in the interval's edge.
            prop_assert!(bytes <= bound_bytes + frame * f64::from(s.flows), "t={t} ms: {bytes} B");
        }
    }
}
