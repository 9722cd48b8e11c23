//! Inputs a careless or hostile user might write: scenarios assembled from
//! every kind of link, qdisc and flow with values at and past their limits,
//! the shipped scenarios mutated byte- and line-wise, and `--set` overrides.

use proptest::prelude::*;
use proptest::sample::select;

/// One input: scenario text and the overrides given with it.
#[derive(Clone, Debug)]
pub struct Input {
    pub text: String,
    pub overrides: Vec<String>,
}

/// The scenarios shipped with ccbench, mutated to make most inputs.
pub const SEEDS: &[&str] = &[
    include_str!("../../../examples/bufferbloat.toml"),
    include_str!("../../../examples/cubic-fq_codel.toml"),
    include_str!("../../../examples/l4s-bottleneck-shift.toml"),
    include_str!("../../../examples/reno-vs-cubic-codel.toml"),
    include_str!("../../../examples/rtt-unfairness.toml"),
    include_str!("../../../examples/two-bottlenecks.toml"),
    include_str!("../../../python/ccbench/suites/base/l4s-dualpi2.toml"),
    include_str!("../../../python/ccbench/suites/base/l4s-testing.toml"),
    include_str!("../../../python/ccbench/suites/base/rtt-fairness.toml"),
    include_str!("../../../python/ccbench/suites/base/rtt-independence.toml"),
    include_str!("../../../python/ccbench/suites/base/sce-l4s.toml"),
    include_str!("../../../python/ccbench/suites/base/scream-interop.toml"),
    include_str!("../../../python/ccbench/suites/base/scream-test-record.toml"),
    include_str!("../../../bench/b2-cubic-pfifo.toml"),
    include_str!("../../../tools/pgo-train.toml"),
];

/// Values that have broken parsers and simulators before: bounds, signs,
/// units, types.
const VALUES: &[&str] = &[
    "0", "1", "-1", "65535", "65536", "4294967295", "4294967296", "18446744073709551615", "99999999999999999999",
    "1e308", "-1e308", "nan", "inf", "-inf", "0.0", "-0.0", "1.5", "true", "false", "\"\"", "\"x\"", "[]", "{}",
    "[[]]", "{ kind = \"netem\" }", "\"0s\"", "\"1ns\"", "\"1us\"", "\"10ms\"", "\"1s\"", "\"30s\"", "\"1e30s\"",
    "\"-1s\"", "\"0bit\"", "\"1bit\"", "\"1kbit\"", "\"10Mbit\"", "\"100Gbit\"", "\"1e20Tbit\"", "\"100Mbps\"",
    "\"5potatoes\"", "\"0b\"", "\"1b\"", "\"1gb\"", "\"100000gb\"", "\"10p\"", "\"ect1\"", "\"classic\"",
    "\"cubic\"", "\"bbr\"", "\"prague\"", "\"media\"", "\"ping\"", "\"../../x\"", "\"/tmp/x\"", "\"\\u0000\"",
    "1979-05-27T07:32:00Z", "\"é\"",
];

/// Whole lines to insert: section headers and keys that change a lot.
const LINES: &[&str] = &[
    "[[links]]", "[[flows]]", "[metrics]", "[limits]", "[test]", "[commands]", "id = \"x\"", "id = \"bottleneck\"",
    "path = [\"bottleneck\"]", "reverse = [\"bottleneck\"]", "count = 10000", "count = 0", "delay = \"0ms\"",
    "rate = \"100Gbit\"", "kind = \"media\"", "kind = \"ping\"", "interval = \"10us\"", "init_cwnd = 65535",
    "tcp = { init_cwnd = 65535, wmem_max = \"1gb\", rmem_max = \"1gb\" }", "memory = \"1mb\"", "disk = \"1kb\"",
    "events = 1", "capture = [\"bottleneck\"]", "sojourn_every = 0", "rtt_samples = false",
    "qdisc = { kind = \"netem\", duplicate = 100, limit = 100000000 }", "qdisc = { kind = \"fq_codel\", flows = 65536 }",
    "schedule = [{ at = \"1s\", qdisc = { kind = \"pfifo\" } }]", "schedule = [{ at = \"0s\", rate = \"1bit\" }]",
    "media = { max_rtp_queue_delay = \"1000s\", max_rate = \"10Gbit\" }", "warmup = \"1e9s\"", "start_step = \"1ns\"",
    "access_delay = \"1s\"", "grant = { interval = \"1ns\", request_delay = \"0s\", rate = \"1bit\" }",
    "a = [[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]", "x = \"\"\"", "[[links.x]]", "links = 5",
];

/// `--set` overrides, good and bad.
const OVERRIDES: &[&str] = &[
    "duration=\"0.5s\"", "duration=\"0s\"", "seed=3", "seed=-1", "links.0.rate=\"1Mbit\"", "links.0.rate=0",
    "links.0.delay=\"0ms\"", "links.0.qdisc={ kind = \"pie\" }", "links.9.id=\"x\"", "flows.0.count=10001",
    "flows.0.count=3", "flows.0.path=[]", "flows.0.cc=\"bbr\"", "foo.bar=1", "=", "x", "a..b=1", "links=[]",
    "metrics.interval=\"1ns\"", "metrics.capture=[\"nowhere\"]", "limits.memory=\"2mb\"", "limits.events=1",
    "flows.0.tcp={ init_cwnd = 65535 }", "links.bottleneck.qdisc={ kind = \"netem\", duplicate = 100 }",
    "test={ name = \"rrul\", up = [\"x\"], down = [\"x\"] }",
];

/// How a shipped scenario is changed.
#[derive(Clone, Debug)]
enum Mutation {
    /// Insert, delete or replace bytes at a position (a fraction of the length).
    Insert(u32, u8),
    Delete(u32, u8),
    Flip(u32, u8),
    /// Replace the value of line `n` (modulo the line count) by a dictionary value.
    Value(u32, usize),
    /// Insert a dictionary line before line `n`.
    Line(u32, usize),
    DupLine(u32),
    DelLine(u32),
    SwapLines(u32, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Byte edits mostly break the syntax; value and line edits mostly keep
    // it and reach validation and the simulator, so they come more often.
    prop_oneof![
        1 => (any::<u32>(), any::<u8>()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        1 => (any::<u32>(), 1u8..16).prop_map(|(p, n)| Mutation::Delete(p, n)),
        1 => (any::<u32>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        8 => (any::<u32>(), 0..VALUES.len()).prop_map(|(l, v)| Mutation::Value(l, v)),
        3 => (any::<u32>(), 0..LINES.len()).prop_map(|(l, v)| Mutation::Line(l, v)),
        2 => any::<u32>().prop_map(Mutation::DupLine),
        2 => any::<u32>().prop_map(Mutation::DelLine),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
    ]
}

fn at(p: u32, len: usize) -> usize {
    if len == 0 { 0 } else { (u64::from(p) * len as u64 >> 32) as usize }
}

fn apply(text: &str, ms: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in ms {
        match *m {
            Mutation::Insert(p, b) => bytes.insert(at(p, bytes.len() + 1), b),
            Mutation::Delete(p, n) => {
                let i = at(p, bytes.len());
                let j = (i + usize::from(n)).min(bytes.len());
                bytes.drain(i..j);
            }
            Mutation::Flip(p, b) if !bytes.is_empty() => {
                let i = at(p, bytes.len());
                bytes[i] ^= b.max(1);
            }
            Mutation::Flip(..) => {}
            _ => {
                let s = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<String> = s.lines().map(str::to_string).collect();
                let n = lines.len();
                match *m {
                    Mutation::Value(l, v) if n > 0 => {
                        let i = at(l, n);
                        if let Some(eq) = lines[i].find('=') {
                            lines[i] = format!("{}= {}", &lines[i][..eq], VALUES[v]);
                        }
                    }
                    Mutation::Line(l, v) => lines.insert(at(l, n + 1), LINES[v].to_string()),
                    Mutation::DupLine(l) if n > 0 => {
                        let i = at(l, n);
                        lines.insert(i, lines[i].clone());
                    }
                    Mutation::DelLine(l) if n > 0 => {
                        lines.remove(at(l, n));
                    }
                    Mutation::SwapLines(a, b) if n > 0 => lines.swap(at(a, n), at(b, n)),
                    _ => {}
                }
                bytes = (lines.join("\n") + "\n").into_bytes();
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn overrides() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(select(OVERRIDES), 0..3).prop_map(|v| v.into_iter().map(str::to_string).collect())
}

/// A shipped scenario with one to eight mutations (most fail to parse, many
/// parse and validate with odd values).
pub fn mutated() -> impl Strategy<Value = Input> {
    (0..SEEDS.len(), prop::collection::vec(mutation(), 1..5), overrides())
        .prop_map(|(s, ms, overrides)| Input { text: apply(SEEDS[s], &ms), overrides })
}

// ---- assembled scenarios ----------------------------------------------------------

/// A value: usually one of `good`, now and then one of `bad` (out of range,
/// wrong unit or type), so that most assembled scenarios are valid and run
/// and each value is also tried wrong.
fn pick(good: &'static [&'static str], bad: &'static [&'static str]) -> BoxedStrategy<&'static str> {
    if bad.is_empty() {
        return select(good).boxed();
    }
    prop_oneof![40 => select(good), 1 => select(bad)].boxed()
}

/// A key that is left out more often than not.
fn maybe(good: &'static [&'static str], bad: &'static [&'static str]) -> impl Strategy<Value = Option<&'static str>> {
    prop::option::weighted(0.4, pick(good, bad))
}

fn qdisc() -> impl Strategy<Value = String> {
    let limit = pick(&["100", "1000", "10000", "100000000"], &["0", "1", "4294967296"]);
    let dur = pick(&["\"1ms\"", "\"5ms\"", "\"20ms\"", "\"100ms\""], &["\"0s\"", "\"1ns\"", "\"1e9s\""]);
    let pct = pick(&["0", "1", "10", "50", "100"], &["101", "-1", "nan"]);
    let rate = pick(&["\"1Mbit\"", "\"50Mbit\"", "\"1Gbit\"", "\"10Gbit\""], &["\"1bit\"", "\"0bit\""]);
    let flows = pick(&["1", "16", "1024", "65536"], &["0", "65537", "4294967295"]);
    (0usize..16, limit, dur.clone(), dur, pct.clone(), pct, rate, flows)
        .prop_map(|(k, limit, d1, d2, p1, p2, rate, flows)| match k {
            0 => format!("{{ kind = \"pfifo\", limit = {limit} }}"),
            1 => format!("{{ kind = \"bfifo\", limit = \"{limit}b\" }}"),
            2 => format!("{{ kind = \"codel\", target = {d1}, interval = {d2}, ecn = true }}"),
            3 => format!("{{ kind = \"fq_codel\", flows = {flows}, limit = {limit}, ce_threshold = {d1} }}"),
            4 => format!("{{ kind = \"dualpi2\", limit = {limit}, target = {d1} }}"),
            5 => format!("{{ kind = \"pie\", limit = {limit}, target = {d1}, tupdate = {d2} }}"),
            6 => format!("{{ kind = \"fq_pie\", flows = {flows}, limit = {limit} }}"),
            7 => format!("{{ kind = \"red\", limit = {limit}, avpkt = 1000, adaptive = true, bandwidth = {rate} }}"),
            8 => format!("{{ kind = \"tbf\", rate = {rate}, burst = \"5000b\", latency = {d1} }}"),
            9 => format!("{{ kind = \"htb\", rate = {rate}, child = {{ kind = \"fq_codel\", flows = {flows} }} }}"),
            10 => format!("{{ kind = \"netem\", delay = {d1}, jitter = {d2}, limit = {limit}, duplicate = {p1}, loss = {{ model = \"random\", p = {p2} }} }}"),
            11 => format!("{{ kind = \"netem\", delay = {d1}, limit = {limit}, rate = {rate}, reorder = {{ p = {p1}, gap = 3 }}, child = {{ kind = \"netem\", delay = {d2}, duplicate = {p2} }} }}"),
            12 => format!("{{ kind = \"netem\", delay = {d1}, slot = {{ min = {d1}, max = {d2}, packets = {flows} }} }}"),
            13 => format!("{{ kind = \"cake\", bandwidth = {rate}, diffserv = \"diffserv8\", ack_filter = \"aggressive\" }}"),
            14 => format!("{{ kind = \"twin_codel_af\", bandwidth = {rate} }}"),
            _ => format!("{{ kind = \"lfq_cobalt\", bandwidth = {rate}, sce_thresh = 8 }}"),
        })
}

/// Link ids paths name, and ones that are not plain file names.
const IDS: &[&str] = &["a", "b", "c"];
const ODD_IDS: &[&str] = &["../../x", "/tmp/x", "", "x y", "é", "a.b", "%2F", "nowhere"];

fn link(id: &'static str) -> impl Strategy<Value = String> {
    (
        maybe(&["\"1Mbit\"", "\"10Mbit\"", "\"100Mbit\"", "\"1Gbit\"", "\"10Gbit\""], &["\"0bit\"", "\"5potatoes\"", "\"1Mbps\"", "\"1bit\"", "\"100Tbit\""]),
        maybe(&["\"0ms\"", "\"1ms\"", "\"10ms\"", "\"50ms\""], &["\"-1ms\"", "\"30s\"", "\"1e9s\""]),
        maybe(&["0.0", "0.01", "0.1"], &["1.0", "1.5", "-0.1", "nan"]),
        prop::option::weighted(0.6, qdisc()),
        prop::option::weighted(0.15, pick(&["[{ at = \"0.5s\", rate = \"1Mbit\" }]", "[{ at = \"0.5s\", qdisc = { kind = \"pfifo\" } }]", "[{ at = \"0.2s\", change = { limit = 5 } }]"], &["[{ at = \"0s\" }]", "[{ at = \"0.1s\", qdisc = { kind = \"netem\", duplicate = 100 } }]"])),
        prop::option::weighted(0.1, pick(&["{ ecn = \"ect1\", dscp = 4 }"], &["{ dscp = 64 }"])),
        prop::option::weighted(0.05, pick(&["{ interval = \"2ms\", request_delay = \"4ms\", rate = \"10Mbit\" }"], &["{ interval = \"0s\", request_delay = \"0s\", rate = \"1bit\" }"])),
    )
        .prop_map(move |(rate, delay, loss, qdisc, schedule, rewrite, grant)| {
            let mut s = format!("[[links]]\nid = \"{id}\"\n");
            for (k, v) in [("rate", rate.map(str::to_string)), ("delay", delay.map(str::to_string)), ("loss", loss.map(str::to_string)), ("qdisc", qdisc), ("schedule", schedule.map(str::to_string)), ("rewrite", rewrite.map(str::to_string)), ("grant", grant.map(str::to_string))] {
                if let Some(v) = v {
                    s += &format!("{k} = {v}\n");
                }
            }
            s
        })
}

fn flow(id: usize) -> impl Strategy<Value = String> {
    (
        pick(&["tcp", "tcp", "tcp", "ping", "media"], &["udp"]),
        maybe(&["\"cubic\"", "\"reno\"", "\"dctcp\"", "\"prague\"", "\"bbr\"", "\"cubic-sce\""], &["\"vegas\""]),
        maybe(&["1", "2", "5", "50"], &["0", "10001"]),
        prop::collection::vec(pick(IDS, ODD_IDS), 1..4),
        prop::collection::vec(pick(IDS, ODD_IDS), 0..3),
        (
            maybe(&["\"0s\"", "\"0.1s\""], &["\"1e9s\"", "\"-1s\""]),
            maybe(&["\"0ms\"", "\"1ms\"", "\"50ms\""], &["\"1e9s\""]),
            maybe(&["true", "false", "\"classic\"", "\"ect0\"", "\"ect1\""], &["\"bogus\""]),
            maybe(&["{ init_cwnd = 65535, wmem_default = \"1gb\", wmem_max = \"1gb\", rmem_max = \"1gb\", rmem_default = \"1gb\" }", "{ mtu = 576, pacing = true, tso = false }", "{ tx_jitter = \"1ms\" }"], &["{ init_cwnd = 0 }", "{ wmem_max = \"1b\" }"]),
            maybe(&["{ max_rtp_queue_delay = \"1000s\", max_rate = \"10Gbit\", init_rate = \"10Gbit\", min_rate = \"1Gbit\" }", "{ fps = 1000, mtu = 100 }", "{ version = \"76a298a\" }", "{ version = 2024-10-28 }"], &["{ fps = 0 }"]),
            maybe(&["\"100kb\"", "\"10mb\""], &["\"0b\""]),
            maybe(&["\"10us\"", "\"1ms\""], &["\"1ns\""]),
            maybe(&["\"0.1s\"", "\"1ms\""], &["\"1ns\""]),
        ),
    )
        .prop_map(move |(kind, cc, count, path, reverse, (start, access, ecn, tcp, media, bytes, interval, start_step))| {
            let list = |v: &[&str]| v.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ");
            let mut s = format!("[[flows]]\nid = \"f{id}\"\nkind = \"{kind}\"\npath = [{}]\nreverse = [{}]\n", list(&path), list(&reverse));
            let (ping, media_flow) = (kind == "ping", kind == "media");
            for (k, v, fits) in [
                ("cc", cc, !ping && !media_flow),
                ("count", count, true),
                ("start", start, true),
                ("access_delay", access, true),
                ("ecn", ecn, true),
                ("tcp", tcp, !ping && !media_flow),
                ("media", media, media_flow),
                ("bytes", bytes, !ping && !media_flow),
                ("interval", interval, ping),
                ("start_step", start_step, true),
            ] {
                if let Some(v) = v.filter(|_| fits) {
                    s += &format!("{k} = {v}\n");
                }
            }
            s
        })
}

/// A scenario assembled from parts: mostly valid (it runs), each value now
/// and then at or past its limit.
pub fn assembled() -> impl Strategy<Value = Input> {
    (
        pick(&["\"0.2s\"", "\"1s\"", "\"2s\"", "\"5s\""], &["\"0s\"", "\"1e9s\"", "\"30s\""]),
        // Every id a path may name, and now and then one more.
        prop::option::weighted(0.1, select(ODD_IDS)).prop_flat_map(|odd| IDS.iter().copied().chain(odd).map(link).collect::<Vec<_>>()),
        (1usize..4).prop_flat_map(|n| (0..n).map(flow).collect::<Vec<_>>()),
        prop::option::weighted(0.3, pick(&["interval = \"10ms\"", "sojourn_every = 100", "warmup = \"0.1s\"", "capture = [\"a\", \"b\"]", "rtt_samples = false"], &["interval = \"1ns\"", "capture = [\"nowhere\"]"])),
        prop::option::weighted(0.05, pick(&["memory = \"8mb\"", "disk = \"1mb\"", "events = 100000"], &["memory = \"1b\""])),
        prop::option::weighted(0.05, pick(&["name = \"rrul\"\nup = [\"a\"]\ndown = [\"b\"]\nlength = \"1s\""], &["name = \"tcp_nup\"\nup = [\"a\"]\ndown = [\"a\"]\nstreams = 0"])),
        prop::option::weighted(0.1, overrides()),
    )
        .prop_map(|(duration, links, flows, metrics, limits, test, overrides)| {
            let mut s = format!("duration = {duration}\nseed = 1\n");
            s += &links.concat();
            s += &flows.concat();
            if let Some(m) = metrics {
                s += &format!("[metrics]\n{m}\n");
            }
            if let Some(l) = limits {
                s += &format!("[limits]\n{l}\n");
            }
            if let Some(t) = test {
                s += &format!("[test]\n{t}\n");
            }
            Input { text: s, overrides: overrides.unwrap_or_default() }
        })
}

/// Every input kind: as many mutated shipped scenarios as assembled ones.
pub fn input() -> impl Strategy<Value = Input> {
    prop_oneof![1 => mutated(), 1 => assembled()]
}
