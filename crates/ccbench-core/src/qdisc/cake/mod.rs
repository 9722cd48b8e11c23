//! Cake: shaper, Diffserv tins, set-associative flow isolation with host
//! fairness, DRR++ and COBALT in one qdisc (Linux net/sched/sch_cake.c;
//! iproute2 tc/q_cake.c; Høiland-Jørgensen, Täht, Morton, "Piece of CAKE",
//! 2018). Shared reference: aqm.md §8.
//!
//! Files: `cobalt.rs` (AQM, MTU-scaling variants), `hash.rs` (flow and host
//! hashing, host quanta), `tins.rs` (DSCP tables, tin rates),
//! `ack_filter.rs`; this file holds the configuration, the enqueue/dequeue
//! paths (`cake_enqueue`, `cake_dequeue`, `cake_drop`), the shaper
//! (`cake_advance_shaper`) and `cake_set_rate`.
//!
//! SCE (chromi/sce's Cake, aqm.md §9): with `sce` (ramp divisor; `true` =
//! 1), a packet COBALT delivers is SCE-marked (ECT(0) → ECT(1)) with the
//! sojourn ramp of `blocks/sce.rs` on its tin's target, after the CE/BLUE
//! verdict, the ramp's upper part chosen by COBALT's `over_target` as in
//! `cobalt_should_drop`; off, Cake is mainline's, bit for bit. The ramp
//! reads each packet's own sojourn, with no interval: a burst that arrives
//! at once is marked from its packet at target/2 on (about the 11th at 50
//! Mbit/s), however short-lived the queue.
//!
//! Units: time in ns; rates in bytes/s inside (`bandwidth` is given in
//! bits/s, as tc takes it); the shaper's time per byte is Linux's fixed
//! point (`rate_ns >> rate_shft`).
//!
//! Deviations from Linux:
//! - memory is counted as queued packet bytes (Linux counts skb truesize);
//!   the default limit is Linux's: `memlimit`, else max(4 MiB,
//!   4·rate·rtt) when shaped, else unlimited, capped at 10240·MTU;
//! - overflow drops scan the active flows for the longest (Linux keeps a
//!   max-heap; ties may pick a different flow);
//! - no GSO (`split_gso` is moot), no fwmark/tc-filter overrides, no
//!   `autorate_ingress`; `nat` is accepted and a no-op (no NAT here);
//! - ACK-filter drops are counted as AQM drops (Linux counts them as
//!   drops and in `ack_drops`, which we keep too);
//! - no decaying-flow watchdog when the qdisc empties (Linux's fires into
//!   a dequeue that returns at once with nothing queued).

pub mod ack_filter;
pub mod cobalt;
pub mod hash;
pub mod tins;

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use self::ack_filter::AckFilter;
use self::cobalt::{CobaltParams, CobaltVars, MtuScaling};
use self::hash::{FlowMode, Host, QUEUES};
use self::tins::Diffserv;
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::qdisc::blocks::sce::SceRamp;
use crate::qdisc::blocks::overhead::{LenBase, LinkLayer, Overhead};
use crate::qdisc::{Cx, DropReason, Qdisc, PSCHED_MTU};
use crate::units::{Bytes, Dur, Rate, SimTime};

/// The `rtt` keyword: a preset name or a time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rtt(pub Dur);

impl Rtt {
    /// tc-cake(8) presets: name → RTT (interval).
    pub const PRESETS: [(&'static str, Dur); 8] = [
        ("datacentre", Dur::from_micros(100)),
        ("lan", Dur::from_millis(1)),
        ("metro", Dur::from_millis(10)),
        ("regional", Dur::from_millis(30)),
        ("internet", Dur::from_millis(100)),
        ("oceanic", Dur::from_millis(300)),
        ("satellite", Dur::from_millis(1000)),
        ("interplanetary", Dur::from_secs(3600)),
    ];
}

impl Default for Rtt {
    fn default() -> Self {
        Rtt(Dur::from_millis(100))
    }
}

impl Serialize for Rtt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match Rtt::PRESETS.iter().find(|p| p.1 == self.0) {
            Some((name, _)) => s.serialize_str(name),
            None => s.serialize_str(&self.0.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Rtt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if let Some((_, t)) = Rtt::PRESETS.iter().find(|p| p.0 == s) {
            return Ok(Rtt(*t));
        }
        s.parse::<Dur>().map(Rtt).map_err(|_| {
            let names: Vec<&str> = Rtt::PRESETS.iter().map(|p| p.0).collect();
            serde::de::Error::custom(format!(
                "expected a time like \"50ms\" or one of {}, got \"{s}\"",
                names.join(", ")
            ))
        })
    }
}

/// tc-cake's overhead keywords (`-` written `_`): framing, overhead, MPU.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverheadPreset {
    /// No compensation: the qdisc length as is (default).
    #[default]
    Raw,
    /// ATM with the worst-case 48 B overhead.
    Conservative,
    Ethernet,
    Docsis,
    PppoePtm,
    BridgedPtm,
    IpoaVcmux,
    IpoaLlcsnap,
    BridgedVcmux,
    BridgedLlcsnap,
    PppoaVcmux,
    PppoaLlc,
    PppoeVcmux,
    PppoeLlcsnap,
}

impl OverheadPreset {
    /// (link layer, overhead, mpu) as q_cake.c sets them.
    pub fn params(self) -> (LinkLayer, i32, u32) {
        use LinkLayer::*;
        match self {
            OverheadPreset::Raw => (Ethernet, 0, 0),
            OverheadPreset::Conservative => (Atm, 48, 0),
            OverheadPreset::Ethernet => (Ethernet, 38, 84),
            OverheadPreset::Docsis => (Ethernet, 18, 64),
            OverheadPreset::PppoePtm => (Ptm, 30, 0),
            OverheadPreset::BridgedPtm => (Ptm, 22, 0),
            OverheadPreset::IpoaVcmux => (Atm, 8, 0),
            OverheadPreset::IpoaLlcsnap => (Atm, 16, 0),
            OverheadPreset::BridgedVcmux => (Atm, 24, 0),
            OverheadPreset::BridgedLlcsnap => (Atm, 32, 0),
            OverheadPreset::PppoaVcmux => (Atm, 10, 0),
            OverheadPreset::PppoaLlc => (Atm, 14, 0),
            OverheadPreset::PppoeVcmux => (Atm, 32, 0),
            OverheadPreset::PppoeLlcsnap => (Atm, 40, 0),
        }
    }
}

/// `kind = "cake"` parameters, tc's names with `-` written `_`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CakeConfig {
    /// Shaper rate (bits/s); 0 / absent = `unlimited`.
    pub bandwidth: Rate,
    pub diffserv: Diffserv,
    pub flow_mode: FlowMode,
    /// `raw` (default), `ethernet`, `docsis`, `conservative`, `pppoe_ptm`, ...
    pub overhead_preset: OverheadPreset,
    /// `overhead N` (−64..=256): overrides the preset's; any value other
    /// than `raw` makes Cake count from the IP header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead: Option<i32>,
    /// `mpu N` (0..=256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mpu: Option<u32>,
    /// `atm` / `ptm` / `noatm` (written `ethernet`), overriding the preset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<LinkLayer>,
    /// `ether-vlan`: 4 more bytes of overhead.
    pub ether_vlan: bool,
    /// `rtt`: a time or a preset (`datacentre` ... `interplanetary`);
    /// interval = rtt, target = rtt/20 unless `target` is given.
    pub rtt: Rtt,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<Dur>,
    pub ingress: bool,
    pub ack_filter: AckFilter,
    /// Accepted for compatibility; no effect (no NAT in the simulator).
    pub nat: bool,
    /// Clear DSCP on the way through (after choosing the tin).
    pub wash: bool,
    /// Packet limit used for the memory cap (`limit`, 10240).
    pub limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memlimit: Option<Bytes>,
    /// Which MTU-scaling rule holds the AQM off (see [`MtuScaling`]).
    pub mtu_scaling: MtuScaling,
    /// chromi/sce's `sce` option: the SCE ramp divisor (`sce = true` is
    /// tc's plain `sce`, divisor 1; 0 / false = off).
    #[serde(deserialize_with = "sce_divisor")]
    pub sce: u32,
}

/// `sce = true | false | N`.
fn sce_divisor<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Sce {
        Flag(bool),
        Divisor(u32),
    }
    Ok(match Sce::deserialize(d).map_err(|_| serde::de::Error::custom("sce: expected true, false or a ramp divisor (0..)"))? {
        Sce::Flag(b) => u32::from(b),
        Sce::Divisor(n) => n,
    })
}

impl Default for CakeConfig {
    fn default() -> Self {
        CakeConfig {
            bandwidth: Rate::UNLIMITED,
            diffserv: Diffserv::default(),
            flow_mode: FlowMode::default(),
            overhead_preset: OverheadPreset::Raw,
            overhead: None,
            mpu: None,
            link_layer: None,
            ether_vlan: false,
            rtt: Rtt::default(),
            target: None,
            ingress: false,
            ack_filter: AckFilter::Off,
            nat: false,
            wash: false,
            limit: 10240,
            memlimit: None,
            mtu_scaling: MtuScaling::Mainline,
            sce: 0,
        }
    }
}

impl CakeConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(o) = self.overhead {
            if !(-64..=256).contains(&o) {
                return Err(format!("overhead must be in -64..=256 bytes, got {o}"));
            }
        }
        if let Some(m) = self.mpu {
            if m > 256 {
                return Err(format!("mpu must be in 0..=256 bytes, got {m}"));
            }
        }
        if self.rtt.0 == Dur::ZERO {
            return Err("rtt must be positive".into());
        }
        if self.target == Some(Dur::ZERO) {
            return Err("target must be positive".into());
        }
        if self.limit == 0 {
            return Err("limit must be at least 1 packet".into());
        }
        if self.bandwidth.bps() != 0 && self.bandwidth.bps() < 8 * 64 {
            return Err(format!(
                "bandwidth must be at least 512bit (64 B/s) or 0 for unlimited, got {}",
                self.bandwidth
            ));
        }
        Ok(())
    }

    /// The per-packet length adjustment (`cake_calc_overhead`).
    pub fn overhead_calc(&self) -> Overhead {
        let (ll, mut oh, mut mpu) = self.overhead_preset.params();
        let explicit = self.overhead.is_some();
        oh = self.overhead.unwrap_or(oh) + if self.ether_vlan { 4 } else { 0 };
        mpu = self.mpu.unwrap_or(mpu);
        let compensated =
            explicit || self.ether_vlan || self.overhead_preset != OverheadPreset::Raw;
        Overhead {
            base: if compensated {
                LenBase::Network
            } else {
                LenBase::Frame
            },
            overhead: if compensated { oh } else { 0 },
            mpu,
            link_layer: self.link_layer.unwrap_or(ll),
        }
    }

    pub fn build(&self) -> Cake {
        self.build_with_perturbation(crate::qdisc::blocks::flow_hash::DEFAULT_PERTURBATION)
    }

    pub fn build_with_perturbation(&self, perturbation: u32) -> Cake {
        let rate = self.bandwidth.bps() / 8;
        let interval = self.rtt.0;
        let target = self
            .target
            .unwrap_or(Dur(interval.nanos() / 20).max(Dur(1_000)));
        let tins: Vec<Tin> = self
            .diffserv
            .tins(rate)
            .into_iter()
            .map(|t| {
                let mut tin = Tin::new(
                    t.rate,
                    t.quantum,
                    target,
                    interval,
                    self.mtu_scaling,
                    self.ingress,
                );
                tin.sce = SceRamp::new(tin.cparams.target, self.sce);
                tin
            })
            .collect();
        let buffer_limit = match (self.memlimit, rate) {
            (Some(m), _) => m.0,
            (None, 0) => u64::MAX,
            (None, r) => (r * interval.nanos() / 250_000_000).max(4 << 20),
        };
        let cap =
            (u64::from(self.limit) * u64::from(PSCHED_MTU)).max(self.memlimit.map_or(0, |m| m.0));
        Cake {
            rate_ns: tins[0].rate_ns,
            rate_shft: tins[0].rate_shft,
            tins,
            cfg: self.clone(),
            overhead: self.overhead_calc(),
            perturbation,
            buffer_limit: buffer_limit.min(cap),
            buffer_used: 0,
            qlen: 0,
            backlog: 0,
            cur_tin: 0,
            time_next_packet: SimTime::ZERO,
            failsafe_next_packet: SimTime::ZERO,
            wake: None,
            ack_drops: 0,
        }
    }
}

/// `CAKE_SET_*`: a flow's place in DRR++.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum FlowSet {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, rotating on the old (bulk) list.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
enum List {
    #[default]
    None,
    New,
    Old,
    Decaying,
}

#[derive(Debug, Default)]
pub struct Flow {
    q: VecDeque<Packet>,
    /// Bytes queued (qdisc lengths).
    backlog: u64,
    deficit: i32,
    pub cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    pub set: FlowSet,
    list: List,
}

/// One tin (`struct cake_tin_data`).
pub struct Tin {
    flows: Vec<Flow>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    /// DRR quantum of a flow before host scaling (`flow_quantum`).
    pub flow_quantum: u16,
    pub cparams: CobaltParams,
    pub bulk_flow_count: u32,
    pub sparse_flow_count: u32,
    pub decaying_flow_count: u32,
    new_flows: VecDeque<u16>,
    old_flows: VecDeque<u16>,
    decaying_flows: VecDeque<u16>,
    /// Scratch for [`Tin::rotate_old`]: the old list's quanta before the dither.
    scaled_quanta: Vec<u32>,
    time_next_packet: SimTime,
    /// Threshold rate, bytes/s.
    pub rate: u64,
    rate_ns: u64,
    rate_shft: u32,
    tin_quantum: u16,
    tin_deficit: i32,
    pub backlog: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub way_collisions: u64,
    /// Cake-SCE's ramp on this tin's target (None: `sce` off).
    sce: Option<SceRamp>,
    /// Packets this tin SCE-marked (ECT(0) → ECT(1)).
    pub sce_marks: u64,
}

/// `cake_set_rate`'s fixed point: ns per byte as `rate_ns >> rate_shft`.
pub fn rate_fixed_point(rate: u64) -> (u64, u32) {
    if rate == 0 {
        return (0, 0);
    }
    let mut shft = 34u32;
    let mut ns = (1_000_000_000u64 << shft) / rate.max(64);
    while ns >> 34 != 0 {
        ns >>= 1;
        shft -= 1;
    }
    (ns, shft)
}

impl Tin {
    fn new(
        rate: u64,
        tin_quantum: u16,
        target: Dur,
        interval: Dur,
        scaling: MtuScaling,
        ingress: bool,
    ) -> Tin {
        let (rate_ns, rate_shft) = rate_fixed_point(rate);
        let mtu_time = Dur((u64::from(PSCHED_MTU) * rate_ns) >> rate_shft);
        // MTU latency scaling of target and interval (cake_set_rate).
        let t = (mtu_time * 3 / 2).max(target);
        let i = (interval + t - target).max(t * 2);
        Tin {
            flows: (0..QUEUES).map(|_| Flow::default()).collect(),
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            flow_quantum: if rate == 0 {
                1514
            } else {
                (rate >> 12).clamp(300, 1514) as u16
            },
            cparams: CobaltParams::new(t, i, mtu_time, scaling, ingress),
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            new_flows: VecDeque::with_capacity(QUEUES),
            old_flows: VecDeque::with_capacity(QUEUES),
            decaying_flows: VecDeque::with_capacity(QUEUES),
            scaled_quanta: Vec::new(),
            time_next_packet: SimTime::ZERO,
            rate,
            rate_ns,
            rate_shft,
            tin_quantum,
            tin_deficit: 0,
            backlog: 0,
            sent_packets: 0,
            sent_bytes: 0,
            way_collisions: 0,
            sce: None,
            sce_marks: 0,
        }
    }

    fn list(&mut self, l: List) -> &mut VecDeque<u16> {
        match l {
            List::New => &mut self.new_flows,
            List::Old => &mut self.old_flows,
            List::Decaying | List::None => &mut self.decaying_flows,
        }
    }

    /// `list_move_tail`: take `idx` off its list (if any), append to `to`.
    fn move_tail(&mut self, idx: usize, to: List) {
        let from = self.flows[idx].list;
        if from != List::None {
            let l = self.list(from);
            if l.front() == Some(&(idx as u16)) {
                l.pop_front();
            } else if let Some(pos) = l.iter().position(|&x| usize::from(x) == idx) {
                l.remove(pos);
            }
        }
        if to != List::None {
            self.list(to).push_back(idx as u16);
        }
        self.flows[idx].list = to;
    }

    /// DRR++, a flow out of credit: a sparse one with packets left becomes
    /// bulk (counted on its hosts), one without them waits as sparse-wait.
    /// True when it became bulk, which changes its hosts' loads.
    fn leave_sparse(&mut self, idx: usize, mode: FlowMode) -> bool {
        if self.flows[idx].set != FlowSet::Sparse {
            return false;
        }
        if self.flows[idx].q.is_empty() {
            self.flows[idx].set = FlowSet::SparseWait;
            return false;
        }
        self.sparse_flow_count -= 1;
        self.bulk_flow_count += 1;
        self.inc_src_bulk(idx, mode);
        self.inc_dst_bulk(idx, mode);
        self.flows[idx].set = FlowSet::Bulk;
        true
    }

    /// DRR++'s top-up of a flow out of credit: it leaves the sparse set
    /// ([`Tin::leave_sparse`]) and gets its quantum.
    fn top_up(&mut self, idx: usize, mode: FlowMode, rng: &mut SimRng) {
        self.leave_sparse(idx, mode);
        let q = self.flow_quantum_for(idx, mode, rng);
        self.flows[idx].deficit += q;
    }

    /// The old list's head is out of credit: as `cake_dequeue` does, top up
    /// the flow at the head and move it to the tail until the head has
    /// credit, the same top-ups in the same order, walking the list and
    /// rotating it once at the end. With many flows per host a flow's
    /// quantum is a few bytes, and a packet takes hundreds of these moves;
    /// each flow's quantum before the dither is taken once a walk, again
    /// only after a sparse flow turned bulk (which changes its hosts' loads).
    fn rotate_old(&mut self, mode: FlowMode, rng: &mut SimRng) {
        // Taken out while walked: a top-up needs the tin, never the lists.
        let mut old = std::mem::take(&mut self.old_flows);
        let order = old.make_contiguous();
        let mut scaled = std::mem::take(&mut self.scaled_quanta);
        scaled.clear();
        scaled.resize(order.len(), UNSCALED);
        let mut at = 0;
        loop {
            let idx = usize::from(order[at]);
            if self.flows[idx].deficit > 0 {
                break;
            }
            // A top-up ([`Tin::top_up`]) with the quantum taken once a walk.
            if self.leave_sparse(idx, mode) {
                scaled.fill(UNSCALED);
            }
            if scaled[at] == UNSCALED {
                scaled[at] = self.flow_quantum_scaled(idx, mode);
            }
            self.flows[idx].deficit += hash::dithered(scaled[at], rng);
            at = if at + 1 == order.len() { 0 } else { at + 1 };
        }
        old.rotate_left(at);
        self.old_flows = old;
        self.scaled_quanta = scaled;
    }

    fn active(&self) -> u32 {
        self.sparse_flow_count + self.bulk_flow_count
    }
}

/// Not a quantum (every quantum is at least 300 × 63 in 1/65536 bytes):
/// not yet taken in this walk of the old list.
const UNSCALED: u32 = 0;

/// Cake.
pub struct Cake {
    cfg: CakeConfig,
    pub tins: Vec<Tin>,
    overhead: Overhead,
    perturbation: u32,
    rate_ns: u64,
    rate_shft: u32,
    buffer_limit: u64,
    buffer_used: u64,
    qlen: usize,
    backlog: u64,
    cur_tin: usize,
    time_next_packet: SimTime,
    failsafe_next_packet: SimTime,
    wake: Option<SimTime>,
    /// Pure ACKs dropped by the ACK filter.
    pub ack_drops: u64,
}

impl fmt::Debug for Cake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cake")
            .field("cfg", &self.cfg)
            .field("qlen", &self.qlen)
            .finish()
    }
}

impl Cake {
    pub fn config(&self) -> &CakeConfig {
        &self.cfg
    }
    /// Memory limit in bytes (`buffer_limit`).
    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }
    fn shaped(&self) -> bool {
        self.rate_ns != 0
    }

    /// `cake_advance_shaper`: charge `len` adjusted bytes to tin `t` and to
    /// the global shaper (a dropped packet does not move the failsafe).
    fn advance_shaper(&mut self, t: usize, len: u32, now: SimTime, drop: bool) {
        if !self.shaped() {
            return;
        }
        let b = &mut self.tins[t];
        let tin_dur = Dur((u64::from(len) * b.rate_ns) >> b.rate_shft);
        let global = Dur((u64::from(len) * self.rate_ns) >> self.rate_shft);
        let failsafe = global + global / 2;
        if b.time_next_packet < now {
            b.time_next_packet += tin_dur;
        } else if b.time_next_packet < now + tin_dur {
            b.time_next_packet = now + tin_dur;
        }
        self.time_next_packet += global;
        if !drop {
            self.failsafe_next_packet += failsafe;
        }
    }

    /// Remove the head of flow `idx` of tin `t`, keeping the counters.
    fn pop(&mut self, t: usize, idx: usize) -> Option<Packet> {
        let f = &mut self.tins[t].flows[idx];
        let p = f.q.pop_front()?;
        let len = u64::from(p.size);
        f.backlog -= len;
        self.tins[t].backlog -= len;
        self.backlog -= len;
        self.buffer_used -= len;
        self.qlen -= 1;
        Some(p)
    }

    /// `cake_drop`: drop the head of the longest queue (all tins), raising
    /// its BLUE probability. Returns (tin, flow) hit.
    fn drop_longest(&mut self, cx: &mut Cx) -> (usize, usize) {
        let mut best = (0usize, 0usize, 0u64);
        for (t, tin) in self.tins.iter().enumerate() {
            for &i in tin
                .new_flows
                .iter()
                .chain(&tin.old_flows)
                .chain(&tin.decaying_flows)
            {
                let b = tin.flows[usize::from(i)].backlog;
                if b > best.2 {
                    best = (t, usize::from(i), b);
                }
            }
        }
        let (t, idx, _) = best;
        let Some(p) = self.pop(t, idx) else {
            return (t, idx);
        };
        let tin = &mut self.tins[t];
        tin.flows[idx].cvars.queue_full(&tin.cparams, cx.now);
        if self.cfg.ingress {
            let len = self.overhead.charge(p.size);
            self.advance_shaper(t, len, cx.now, true);
        }
        cx.drop(p, DropReason::Overlimit);
        (t, idx)
    }

    fn set_wake(&mut self) {
        self.wake = (self.qlen > 0 && self.shaped())
            .then(|| self.time_next_packet.min(self.failsafe_next_packet));
    }
}

impl Qdisc for Cake {
    /// `cake_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        let now = cx.now;
        let t = self.cfg.diffserv.tin_of(pkt.dscp);
        if self.cfg.wash {
            pkt.dscp = 0;
        }
        let mode = self.cfg.flow_mode;
        let idx = self.tins[t].hash(&pkt, mode, self.perturbation);
        // Keep the shaper from banking credit while idle.
        if self.tins[t].backlog == 0 {
            let b = &mut self.tins[t];
            if b.time_next_packet < now {
                b.time_next_packet = now;
            }
            if self.qlen == 0 && self.time_next_packet < now {
                self.failsafe_next_packet = now;
                self.time_next_packet = now;
            }
        }
        let len = u64::from(pkt.size);
        {
            let b = &mut self.tins[t];
            let f = &mut b.flows[idx];
            f.q.push_back(pkt);
            f.backlog += len;
            b.backlog += len;
        }
        self.backlog += len;
        self.buffer_used += len;
        self.qlen += 1;
        if let Some(i) = ack_filter::find_redundant(&self.tins[t].flows[idx].q, self.cfg.ack_filter)
        {
            let b = &mut self.tins[t];
            let f = &mut b.flows[idx];
            let ack = f.q.remove(i).expect("index from the filter");
            let alen = u64::from(ack.size);
            f.backlog -= alen;
            b.backlog -= alen;
            self.backlog -= alen;
            self.buffer_used -= alen;
            self.qlen -= 1;
            self.ack_drops += 1;
            if self.cfg.ingress {
                let adj = self.overhead.charge(ack.size);
                self.advance_shaper(t, adj, now, true);
            }
            cx.drop(ack, DropReason::Aqm);
        }
        // DRR++ bookkeeping.
        let set = self.tins[t].flows[idx].set;
        match set {
            FlowSet::None | FlowSet::Decaying => {
                let b = &mut self.tins[t];
                if set == FlowSet::Decaying {
                    b.decaying_flow_count -= 1;
                }
                b.move_tail(idx, List::New);
                b.flows[idx].set = FlowSet::Sparse;
                b.sparse_flow_count += 1;
                b.flows[idx].deficit = b.flow_quantum_for(idx, mode, cx.rng);
            }
            FlowSet::SparseWait => {
                let b = &mut self.tins[t];
                b.flows[idx].set = FlowSet::Bulk;
                b.sparse_flow_count -= 1;
                b.bulk_flow_count += 1;
                b.inc_src_bulk(idx, mode);
                b.inc_dst_bulk(idx, mode);
            }
            _ => {}
        }
        while self.buffer_used > self.buffer_limit && self.qlen > 0 {
            self.drop_longest(cx);
        }
    }

    /// `cake_dequeue`.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let now = cx.now;
        let mode = self.cfg.flow_mode;
        let ingress = self.cfg.ingress;
        let mut first_flow = true;
        'begin: loop {
            if self.qlen == 0 {
                self.wake = None;
                return None;
            }
            // Global hard shaper.
            if self.time_next_packet > now && self.failsafe_next_packet > now {
                self.set_wake();
                return None;
            }
            // Choose a tin.
            if !self.shaped() {
                let (mut wrapped, mut empty) = (false, true);
                loop {
                    let b = &mut self.tins[self.cur_tin];
                    if !(b.tin_deficit < 0 || b.active() == 0) {
                        break;
                    }
                    if b.tin_deficit <= 0 {
                        b.tin_deficit += i32::from(b.tin_quantum);
                    }
                    if b.active() > 0 {
                        empty = false;
                    }
                    self.cur_tin += 1;
                    if self.cur_tin >= self.tins.len() {
                        self.cur_tin = 0;
                        if wrapped {
                            if empty {
                                return None;
                            }
                        } else {
                            wrapped = true;
                        }
                    }
                }
            } else {
                // Highest tin under its threshold, else the earliest due.
                let mut best: Option<(usize, i64)> = None;
                for (t, b) in self.tins.iter().enumerate() {
                    if b.active() > 0 {
                        let to = b.time_next_packet.diff_ns(now);
                        if to <= 0 || best.is_none_or(|(_, bt)| to <= bt) {
                            best = Some((t, to));
                        }
                    }
                }
                let (t, _) = best?;
                self.cur_tin = t;
            }
            let t = self.cur_tin;
            'retry: loop {
                let b = &mut self.tins[t];
                let from = if first_flow && !b.decaying_flows.is_empty() {
                    List::Decaying
                } else if !b.new_flows.is_empty() {
                    List::New
                } else if !b.old_flows.is_empty() {
                    List::Old
                } else if !b.decaying_flows.is_empty() {
                    List::Decaying
                } else {
                    continue 'begin;
                };
                let idx = usize::from(*b.list(from).front().expect("non-empty list"));
                first_flow = false;
                // DRR++: out of credit → top up, move to the bulk rotation.
                if b.flows[idx].deficit <= 0 {
                    if from == List::Old {
                        b.rotate_old(mode, cx.rng);
                    } else {
                        b.top_up(idx, mode, cx.rng);
                        b.move_tail(idx, List::Old);
                    }
                    continue 'retry;
                }
                // Retrieve a packet via the AQM.
                let mut pkt = loop {
                    let Some(mut p) = self.pop(t, idx) else {
                        // The queue was empty.
                        let b = &mut self.tins[t];
                        let f = &mut b.flows[idx];
                        f.cvars.queue_empty(&b.cparams, now);
                        let set = f.set;
                        if !f.cvars.at_rest(now) {
                            b.move_tail(idx, List::Decaying);
                            match set {
                                FlowSet::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_src_bulk(idx, mode);
                                    b.dec_dst_bulk(idx, mode);
                                    b.decaying_flow_count += 1;
                                }
                                FlowSet::Sparse | FlowSet::SparseWait => {
                                    b.sparse_flow_count -= 1;
                                    b.decaying_flow_count += 1;
                                }
                                _ => {}
                            }
                            b.flows[idx].set = FlowSet::Decaying;
                        } else {
                            b.move_tail(idx, List::None);
                            match set {
                                FlowSet::Sparse | FlowSet::SparseWait => b.sparse_flow_count -= 1,
                                FlowSet::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_src_bulk(idx, mode);
                                    b.dec_dst_bulk(idx, mode);
                                }
                                _ => b.decaying_flow_count -= 1,
                            }
                            b.flows[idx].set = FlowSet::None;
                        }
                        continue 'begin;
                    };
                    let b = &mut self.tins[t];
                    let bulk = b.bulk_flow_count;
                    let f = &mut b.flows[idx];
                    // The last packet of a queue may be marked, never dropped.
                    if !f.cvars.should_drop(&b.cparams, &mut p, bulk, cx) || f.q.is_empty() {
                        // Cake-SCE: after COBALT's CE/BLUE verdict, an
                        // ECT(0) packet is SCE-marked on the sojourn ramp.
                        if let Some(r) = &b.sce {
                            let sojourn = now.since(p.enq_at);
                            if r.apply_cobalt(&mut p, sojourn, f.cvars.over_target, cx.rng) {
                                b.sce_marks += 1;
                            }
                        }
                        break p;
                    }
                    if ingress {
                        let len = self.overhead.charge(p.size);
                        self.advance_shaper(t, len, now, true);
                        let b = &mut self.tins[t];
                        b.flows[idx].deficit -= len as i32;
                        b.tin_deficit -= len as i32;
                    }
                    cx.drop(p, DropReason::Aqm);
                    if ingress {
                        continue 'retry;
                    }
                };
                let len = self.overhead.charge(pkt.size);
                self.advance_shaper(t, len, now, false);
                let b = &mut self.tins[t];
                b.flows[idx].deficit -= len as i32;
                b.tin_deficit -= len as i32;
                b.sent_packets += 1;
                b.sent_bytes += u64::from(pkt.size);
                pkt.class = t as u8;
                self.set_wake();
                return Some(pkt);
            }
        }
    }

    fn len(&self) -> usize {
        self.qlen
    }
    fn bytes(&self) -> u64 {
        self.backlog
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        self.wake
    }
}

#[cfg(test)]
mod tests;
