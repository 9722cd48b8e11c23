//! Resource guards: what a run may cost, an estimate of what a scenario
//! will cost, and warnings about values that are legal but probably not
//! meant.
//!
//! The estimate is made from the resolved scenario before anything runs:
//! each TCP or media flow sends 1500 B packets at its fair share of the
//! slowest link on its path for its active time (ACKs, one per two segments, on its reverse
//! path), a ping two packets per interval; events ≈ 3 per packet-hop plus
//! samples and probes; memory from the recorded tables (series rows per
//! sample interval, one sojourn row per `sojourn_every` dequeues, one RTT
//! row per ACK, capture rows per captured packet), plus what the built
//! links and flows hold before any packet ([`state_bytes`]); disk from the
//! same tables (what a run that streams them writes, before compression)
//! and a pcap record per captured packet. It is an order-of-magnitude
//! figure, not a prediction; a TCP flow on a path without a rate is costed
//! at its window (socket buffers) per base round trip, a media flow at its
//! `max_rate`, or at the fastest rated link if that is more, and a run that
//! still grows past the memory or disk limit is stopped by the simulator
//! ([`crate::guard`]).
//!
//! Also refused here: a TCP flow whose round trip takes no time (no link on
//! its path or reverse with a rate, a delay or a qdisc that holds packets
//! back, and no access delay), which would send without end at one instant.
//!
//! Units: `memory` and `disk` in bytes (`"2gb"`, powers of 1024 as in tc
//! sizes), `events` a count.

use serde::{Deserialize, Serialize};

use super::{FlowKind, LinkSpec, Scenario, Seg};
use crate::metrics::ROW_BYTES;
use crate::units::{Bytes, Dur, Rate};

/// A scenario's `[limits]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Memory a run may hold (links' and flows' state, recorded samples,
    /// queued packets).
    pub memory: Bytes,
    /// Bytes of tables a run that writes them as it goes (`ccbench run`,
    /// suites) may write, before compression.
    pub disk: Bytes,
    /// Events a run may be estimated to take (about 5 million per second
    /// of wall-clock time on one core).
    pub events: u64,
}

/// 2 GiB: a long 100 Mbit/s run with every sample recorded fits easily.
pub const DEFAULT_MEMORY: Bytes = Bytes(2 << 30);
/// 2·10¹⁰ events: roughly an hour of wall-clock time.
pub const DEFAULT_EVENTS: u64 = 20_000_000_000;
/// 10 GiB: every sample of an hour at 1 Gbit/s; a 10 Gbit/s run with every
/// sample recorded passes it in about ten minutes.
pub const DEFAULT_DISK: Bytes = Bytes(10 << 30);

impl Default for Limits {
    fn default() -> Self {
        Limits { memory: DEFAULT_MEMORY, events: DEFAULT_EVENTS, disk: DEFAULT_DISK }
    }
}

impl Limits {
    pub fn is_default(&self) -> bool {
        *self == Limits::default()
    }
}

/// Ranges of single values, checked before anything else.
pub const MAX_COUNT: u32 = 10_000;
pub const MAX_DURATION: Dur = Dur::from_secs(1_000_000);
pub const MIN_METRICS_INTERVAL: Dur = Dur::from_micros(100);
pub const MIN_PING_INTERVAL: Dur = Dur::from_micros(10);
/// Data packet size assumed by the estimate (a 1500 B MTU).
const DATA_PACKET: f64 = 1500.0;
/// A pcap record of a captured packet: its header and at most 128 B of
/// headers (`ccbench.pcap`'s snaplen).
const PCAP_RECORD: f64 = 16.0 + 128.0;

/// Heap of the simulator's own tables, whatever the scenario.
const SIM_BYTES: u64 = 64 << 10;
/// Heap of a link before its qdisc: the link, its counters and rate history.
const LINK_BYTES: u64 = 1 << 10;
/// Heap of a flow copy by kind, and of a flow's access link (a pure delay
/// whose FIFO reserves room for 256 packets).
const TCP_FLOW_BYTES: u64 = 2816;
const MEDIA_FLOW_BYTES: u64 = 250 << 10;
const PING_BYTES: u64 = 1 << 10;

/// What the built simulator holds before any packet moves: every link and
/// its qdisc, every flow copy and its access links. Measured against
/// building in `tests/state_bytes.rs`.
pub fn state_bytes(s: &Scenario) -> u64 {
    let access = LINK_BYTES + crate::qdisc::QdiscConfig::default().state_bytes();
    let links: u64 = s.links.iter().map(|l| LINK_BYTES + l.id.len() as u64 + l.qdisc.state_bytes()).sum();
    let flows: u64 = s
        .flows
        .iter()
        .map(|f| {
            let own = match f.kind {
                FlowKind::Tcp => TCP_FLOW_BYTES,
                FlowKind::Media => MEDIA_FLOW_BYTES,
                FlowKind::Ping => PING_BYTES,
            };
            let accesses = u64::from(f.access_delay > Dur::ZERO) + u64::from(f.access_delay_rev.unwrap_or(f.access_delay) > Dur::ZERO);
            u64::from(f.count) * (own + f.id.len() as u64 + accesses * access)
        })
        .sum();
    SIM_BYTES + links + flows
}

/// What a scenario is estimated to cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub packets: f64,
    pub events: f64,
    /// Rows of every recorded table together.
    pub samples: f64,
    /// Links' and flows' state plus the recorded tables.
    pub memory: f64,
    /// What stays in memory when the tables go to disk as the run goes
    /// (the state and `media_series`; see [`crate::metrics::Metrics::take_chunks`]).
    pub memory_streamed: f64,
    /// Links' and flows' state alone ([`state_bytes`]).
    pub state: f64,
    /// What a run that writes its tables as it goes writes: the tables
    /// before compression, and a pcap record per captured packet.
    pub disk: f64,
}

/// Estimate the cost of a resolved scenario.
pub fn estimate(s: &Scenario) -> Cost {
    let secs = s.duration.as_secs_f64();
    let m = &s.metrics;
    let ticks = secs / m.interval.as_secs_f64().max(1e-9) + 1.0;
    // A link carries at most the slower of its own rate and its qdisc's
    // shaper (an HTB at 50 Mbit on a 10 Gbit link), at the fastest step of
    // its rate schedule.
    let max_rate = |l: &super::LinkSpec| {
        let shaped = l.qdisc.shaped_rate().map(Rate::bps);
        let own = l.rate.into_iter().chain(l.schedule.iter().filter_map(|st| st.rate)).map(Rate::bps).max();
        match (own, shaped) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    };
    let fastest = s.links.iter().filter_map(max_rate).max().unwrap_or(0) as f64;
    let by_id: std::collections::BTreeMap<&str, usize> = s.links.iter().enumerate().map(|(i, l)| (l.id.as_str(), i)).collect();
    let index = |id: &str| by_id.get(id).copied();
    // Flow copies sending data over each link: they share its rate.
    let mut users = vec![0.0; s.links.len()];
    for f in s.flows.iter().filter(|f| f.kind != FlowKind::Ping) {
        for i in f.path.iter().filter_map(|id| index(id)) {
            users[i] += f64::from(f.count);
        }
    }
    // Packets per second offered to each link: a flow's data at its fair
    // share of its path's slowest link, its ACKs (one per two segments) on
    // the reverse path.
    let mut pps = vec![0.0; s.links.len()];
    let mut acks = 0.0;
    let mut probes = 0.0;
    for f in &s.flows {
        let n = f64::from(f.count);
        let active = (secs - f.start.as_secs_f64()).max(0.0) / secs.max(1e-9);
        let (fwd, rev) = match f.kind {
            FlowKind::Ping => {
                let per_s = 1.0 / f.interval.unwrap_or(super::PING_INTERVAL).as_secs_f64().max(1e-9);
                (per_s, per_s)
            }
            FlowKind::Tcp | FlowKind::Media => {
                let share = f
                    .path
                    .iter()
                    .filter_map(|id| index(id))
                    .filter_map(|i| max_rate(&s.links[i]).map(|r| r as f64 / users[i].max(1.0)))
                    .fold(f64::INFINITY, f64::min);
                let data = if share.is_finite() { share } else { fastest.max(unrated_bps(s, f, index)) } / 8.0 / DATA_PACKET;
                (data, data / 2.0)
            }
        };
        // netem `duplicate` multiplies what passes it, and every copy
        // delivered is answered (ACKed, echoed) on the reverse path.
        let mut copies = 1.0;
        for (ids, rate) in [(&f.path, fwd), (&f.reverse, rev)] {
            for i in ids.iter().filter_map(|id| index(id)) {
                pps[i] += n * rate * active * copies;
                copies *= duplication(&s.links[i]);
            }
        }
        // Replies and ACKs reaching the sender, each an RTT or probe sample.
        match f.kind {
            FlowKind::Ping => probes += n * rev * secs * active * copies,
            FlowKind::Tcp => acks += n * rev * secs * active * copies,
            FlowKind::Media => {}
        }
    }
    let link_packets: Vec<f64> = pps.iter().map(|p| p * secs).collect();
    let packets: f64 = link_packets.iter().sum();
    let copies = |k: FlowKind| s.flows.iter().filter(|f| f.kind == k).map(|f| f64::from(f.count)).sum::<f64>();
    let (tcp, media) = (copies(FlowKind::Tcp), copies(FlowKind::Media));
    let sojourn = packets / f64::from(m.sojourn_every.max(1));
    let rtt = if m.rtt_samples { acks } else { 0.0 };
    let captured: f64 = s.links.iter().zip(&link_packets).filter(|(l, _)| m.capture.contains(&l.id)).map(|(_, p)| p).sum();
    let flow_rows = ticks * (tcp + media);
    let link_rows = ticks * s.links.len() as f64;
    let samples = flow_rows + ticks * media + link_rows + sojourn + rtt + probes + captured;
    // Rows of each table, in `metrics::TABLES` order.
    let rows = [flow_rows, ticks * media, rtt, link_rows, sojourn, probes, captured];
    let tables: f64 = rows.iter().zip(ROW_BYTES).map(|(r, b)| r * b as f64).sum();
    let state = state_bytes(s) as f64;
    // Each sample visits every flow and link, as an event visits one.
    let events = 3.0 * packets + ticks * (1.0 + (tcp + media) + s.links.len() as f64) + 4.0 * probes;
    Cost {
        packets,
        events,
        samples,
        memory: state + tables,
        memory_streamed: state + rows[1] * ROW_BYTES[1] as f64,
        state,
        disk: tables + captured * PCAP_RECORD,
    }
}

/// What bounds a flow on a path without a rate: a TCP flow's window (the
/// smaller socket-buffer maximum; the receiver advertises half of its) per
/// base round trip (propagation, netem delay, access delays; at least 1 µs),
/// a media flow's `max_rate`. Bits per second.
fn unrated_bps(s: &Scenario, f: &super::FlowSpec, index: impl Fn(&str) -> Option<usize>) -> f64 {
    if f.kind == FlowKind::Media {
        return f.media.as_ref().map_or(crate::media::MediaConfig::default().max_rate, |m| m.max_rate).bps() as f64;
    }
    let tcp = f.tcp.clone().unwrap_or_default();
    let window = tcp.wmem_max.0.min(tcp.rmem_max.0 / 2).max(tcp.rmem_default.0 / 2) as f64 * 8.0;
    let links = f.path.iter().chain(&f.reverse).filter_map(|id| index(id)).map(|i| &s.links[i]);
    let access = f.access_delay + f.access_delay_rev.unwrap_or(f.access_delay);
    let rtt = links.fold(access, |t, l| t + l.delay + l.qdisc.idle_delay());
    window / rtt.as_secs_f64().max(1e-6)
}

/// How many packets leave a link for each that arrives: netem's
/// `duplicate` (through its children and any qdisc the schedule puts in).
fn duplication(l: &LinkSpec) -> f64 {
    let initial = l.qdisc.duplication();
    l.schedule.iter().filter_map(|st| st.qdisc.as_ref()).map(|q| q.duplication()).fold(initial, f64::max)
}

fn mib(b: f64) -> String {
    if b >= f64::from(1u32 << 30) {
        format!("{:.1} GiB", b / f64::from(1u32 << 30))
    } else {
        format!("{:.0} MiB", b / f64::from(1u32 << 20))
    }
}

/// Problems of a resolved scenario against its limits: `(key path,
/// message)`, the path naming the value most worth changing. `streamed`:
/// the run will write its tables to disk as it goes, so they do not count
/// against `limits.memory`.
pub fn check(s: &Scenario, streamed: bool) -> Vec<(Vec<Seg>, String)> {
    let k = |s: &str| Seg::Key(s.to_string());
    let mut out = Vec::new();
    let c = estimate(s);
    let lim = &s.limits;
    let memory = if streamed { c.memory_streamed } else { c.memory };
    if memory > lim.memory.0 as f64 && c.state * 2.0 > memory {
        let copies: u64 = s.flows.iter().map(|f| u64::from(f.count)).sum();
        out.push((
            vec![k("links")],
            format!(
                "the {} links and {copies} flows of this run would hold about {} before any packet moves, more than \
                 limits.memory = {}; use fewer links or flows, qdiscs with fewer queues (fq_codel `flows`), or raise limits.memory",
                s.links.len(),
                mib(c.state),
                mib(lim.memory.0 as f64)
            ),
        ));
    } else if memory > lim.memory.0 as f64 {
        out.push((
            vec![k("duration")],
            format!(
                "this run would hold about {} ({:.3e} samples over {:.3e} packets, and {} of links' and flows' state), \
                 more than limits.memory = {}; shorten `duration`, raise metrics.interval or metrics.sojourn_every, \
                 set metrics.rtt_samples = false, or raise limits.memory",
                mib(memory),
                c.samples,
                c.packets,
                mib(c.state),
                mib(lim.memory.0 as f64)
            ),
        ));
    }
    if streamed && c.disk > lim.disk.0 as f64 {
        out.push((
            vec![k("duration")],
            format!(
                "this run would write about {} of tables ({:.3e} samples over {:.3e} packets, before compression), more than \
                 limits.disk = {}; shorten `duration`, raise metrics.interval or metrics.sojourn_every, set \
                 metrics.rtt_samples = false, capture fewer links, or raise limits.disk",
                mib(c.disk),
                c.samples,
                c.packets,
                mib(lim.disk.0 as f64)
            ),
        ));
    }
    if c.events > lim.events as f64 {
        out.push((
            vec![k("duration")],
            format!(
                "this run would take about {:.3e} events (about {:.1} hours at 5 million events/s), more than limits.events = {}; \
                 shorten `duration`, lower the link rates, or raise limits.events",
                c.events,
                c.events / 5e6 / 3600.0,
                lim.events
            ),
        ));
    }
    out
}

/// TCP flows whose round trip takes no time: every link on their path and
/// reverse passes packets on at the instant they arrive (no `rate`, no
/// `delay`, no delaying qdisc, no `grant`, no schedule) and the flow has no
/// access delay. Such a flow's ACKs come back at the instant its data
/// leaves, so it sends without end and simulated time never advances.
/// (A schedule is taken to delay: the simulator's stall check covers what
/// one could change.)
pub fn timeless_flows(s: &Scenario) -> Vec<(Vec<Seg>, String)> {
    let timeless = |l: &LinkSpec| {
        l.rate.is_none() && l.delay == Dur::ZERO && l.grant.is_none() && l.schedule.is_empty() && !l.qdisc.takes_time()
    };
    let by_id: std::collections::BTreeMap<&str, &LinkSpec> = s.links.iter().map(|l| (l.id.as_str(), l)).collect();
    let mut out = Vec::new();
    for (i, f) in s.flows.iter().enumerate() {
        let access = f.access_delay > Dur::ZERO || f.access_delay_rev.is_some_and(|d| d > Dur::ZERO);
        if f.kind != FlowKind::Tcp || access {
            continue;
        }
        if f.path.iter().chain(&f.reverse).all(|id| by_id.get(id.as_str()).is_some_and(|l| timeless(l))) {
            out.push((
                vec![Seg::Key("flows".into()), Seg::Index(i), Seg::Key("path".into())],
                "this TCP flow's round trip takes no time: no link on its path or reverse has a `rate`, a `delay` or a qdisc \
                 that holds packets back (netem delay, a shaper), and it has no `access_delay`, so it would send without end \
                 at one instant and simulated time would never advance; give one of these links a `rate` or a `delay`"
                    .into(),
            ));
        }
    }
    out
}

/// Legal values that are probably not what was meant: `(key path, message)`.
/// `root` is the document as read (for the spelling of rates).
pub fn warnings(s: &Scenario, root: &toml::Table) -> Vec<(Vec<Seg>, String)> {
    let mut out = Vec::new();
    byte_rates(&toml::Value::Table(root.clone()), &mut Vec::new(), &mut out);
    let by_id: std::collections::BTreeMap<&str, &LinkSpec> = s.links.iter().map(|l| (l.id.as_str(), l)).collect();
    for (i, f) in s.flows.iter().enumerate() {
        if f.kind != FlowKind::Tcp || f.bytes.is_some() {
            continue;
        }
        let limited = f.path.iter().any(|id| by_id.get(id.as_str()).is_some_and(|l| l.rate.is_some() || l.qdisc.shaped_rate().is_some()));
        if !limited {
            out.push((
                vec![Seg::Key("flows".into()), Seg::Index(i), Seg::Key("path".into())],
                "no link on this bulk TCP flow's path has a `rate` or a shaping qdisc: only its socket buffers \
                 limit it, at an unbounded packet rate, and the run may stop at limits.memory (give a link a rate or the flow `bytes`)"
                    .into(),
            ));
        }
    }
    out
}

/// Rates written in tc's bytes-per-second units (`"100Mbps"` = 800 Mbit/s).
fn byte_rates(v: &toml::Value, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, String)>) {
    match v {
        toml::Value::String(text) => {
            let t = text.trim();
            let idx = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+')).unwrap_or(t.len());
            let (num, unit) = (t[..idx].trim(), t[idx..].trim());
            if !matches!(unit.to_ascii_lowercase().as_str(), "bps" | "kbps" | "mbps" | "gbps") {
                return;
            }
            if let Ok(r) = t.parse::<Rate>() {
                let bits = format!("{num}{}bit", if unit.len() == 4 { &unit[..1] } else { "" });
                out.push((
                    path.clone(),
                    format!("\"{t}\" is read as tc reads it: {unit} is bytes per second, so this is {} Mbit/s; write \"{bits}\" for bits per second", r.mbps()),
                ));
            }
        }
        toml::Value::Table(t) => {
            for (key, x) in t {
                path.push(Seg::Key(key.clone()));
                byte_rates(x, path, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                byte_rates(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}
