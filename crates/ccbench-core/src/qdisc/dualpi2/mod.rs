//! DualPI2, the coupled dual-queue AQM for L4S (RFC 9332 §2 and Appendix A;
//! Linux net/sched/sch_dualpi2.c; tc options as iproute2 tc/q_dualpi2.c).
//!
//! Two FIFOs share one limit: L (packets whose `ecn & mask ≠ 0`, i.e. ECT(1)
//! and CE, plus ECT(0) with `any_ect`) and C (the rest). A PI controller
//! (`blocks::pi`) drives the base probability p′ from the larger head sojourn
//! of the two queues (RFC 9332 App. A). C packets see p_C = p′² (two
//! independent draws ≤ p′; Not-ECT dropped, ECT CE-marked), L packets the
//! coupled p_CL = k·p′ (§2.1, Linux `dualpi2_scalable_marking`) plus the
//! native step AQM on sojourn (§2.4; a 1 ms step as in Linux, not App. A's
//! ramp). No PI2 action while the total backlog is < 2 MTU. A WRR with
//! credit serves L first but guarantees C `classic_protection` percent
//! (§2.4, §4.2.2; Linux `dequeue_packet`); overload follows §4.2.3 and
//! Linux. Defaults are Linux's `dualpi2_reset_default`: limit 10000,
//! memlimit limit·2·1514, target 15 ms, tupdate 16 ms, alpha 41/256 Hz,
//! beta 819/256 Hz, step 1 ms, k 2, protection 10 %, l4s_ect,
//! drop_on_overload, drop_dequeue.
//!
//! Units: time in integer ns; sizes and WRR credit in bytes; p′ an `f64`.
//!
//! PI timer. Linux runs `calculate_probability` from an hrtimer every
//! `tupdate`, starting at qdisc creation. Here the qdisc is created at t = 0
//! and updates are due at t = k·tupdate (k ≥ 1); they run lazily: each
//! enqueue/dequeue (and [`DualPi2::catch_up`]) first performs every update
//! due at or before `now`, in order, each with qdelay = max over the queues
//! of `t_update − head.enq_at` (0 if empty). The queues cannot change
//! between two calls, so this equals what a timer would have computed. An
//! idle, settled qdisc (both empty, p′ = 0, last qdelay 0) skips the no-op
//! updates arithmetically. [`Qdisc::probe`] reports p′ as of the last call.
//!
//! Deviations from Linux:
//! - memory is charged `pkt.size`, not `skb->truesize` (≈ 2× larger for
//!   full-size packets, much more for ACKs); so the default memlimit, sized
//!   for truesize, never binds before `limit`.
//! - p′ and the gains are `f64` (Linux: u32 p′ with 2^32 − 1 = 1, gains
//!   quantised to 1/256 Hz by tc and to 64-ns steps in the kernel), and
//!   `max_rtt`/`typical_rtt` are derived in ns, not whole µs.
//! - `coupling_factor` may be non-integer (Linux: integer 1..=255); it is
//!   clamped to [1, 255]; `tupdate` is clamped to ≥ 1 µs as netlink does.
//! - the timer is ideal (no re-arm jitter) and runs at k·tupdate from t = 0.
//! - a packet CE-marked by the coupled AQM in the same dequeue is not counted
//!   again by the step (Linux counts it in `ecn_mark` twice and `step_marks`).
//! - no tc filters / skb priority classification (so no LLLL class, and
//!   Not-ECT never reaches L), no GSO (`split_gso` has no meaning here).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::blocks::pi::{Pi, PiParams};
use super::{Cx, DropReason, Qdisc, QdiscProbe, PSCHED_MTU};
use crate::packet::{Ecn, Packet};
use crate::units::{Bytes, Dur, SimTime};

/// Threshold of the native L4S step AQM (tc `step_thresh`): a sojourn time
/// (`"1ms"`), or an L-queue length in packets (`"10p"`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StepThresh {
    Time(Dur),
    Packets(u32),
}

impl FromStr for StepThresh {
    type Err = String;
    /// As tc: try a time first, then packets with suffix p/pkt/pkts/packet(s).
    fn from_str(s: &str) -> Result<Self, String> {
        if let Ok(d) = s.parse::<Dur>() {
            return Ok(StepThresh::Time(d));
        }
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (n, unit) = t.split_at(digits);
        match (n.parse::<u32>(), unit) {
            (Ok(n), "p" | "pkt" | "pkts" | "packet" | "packets") => Ok(StepThresh::Packets(n)),
            _ => Err(format!("expected step_thresh as a time like \"1ms\" or packets like \"10p\", got \"{t}\"")),
        }
    }
}

impl fmt::Display for StepThresh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepThresh::Time(d) => write!(f, "{d}"),
            StepThresh::Packets(n) => write!(f, "{n}p"),
        }
    }
}

impl Serialize for StepThresh {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for StepThresh {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Which ECN codepoints go to the L queue (tc `l4s_ect` / `any_ect`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnMask {
    /// Mask 0b01: ECT(1) and CE.
    #[default]
    L4sEct,
    /// Mask 0b11: ECT(0), ECT(1) and CE.
    AnyEct,
}

impl EcnMask {
    pub fn bits(self) -> u8 {
        match self {
            EcnMask::L4sEct => 0b01,
            EcnMask::AnyEct => 0b11,
        }
    }
}

/// What happens when k·p′ > 1 (tc `drop_on_overload` / `overflow`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overload {
    /// L packets are dropped with p′² and CE-marked otherwise.
    #[default]
    DropOnOverload,
    /// p′ is capped at 1/k: L is never AQM-dropped, the queue may grow to
    /// the limit instead.
    Overflow,
}

/// Where the PI2 drop/mark decision happens (tc `drop_dequeue` /
/// `drop_enqueue`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropAt {
    #[default]
    DropDequeue,
    DropEnqueue,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Config {
    /// Packets over both queues (tc `limit`).
    pub limit: u64,
    /// Bytes over both queues, charged `pkt.size` (tc `memlimit`); default
    /// `limit × 2 × 1514` (Linux `get_memory_limit`, saturating at u32).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memlimit: Option<Bytes>,
    /// PI2 delay target.
    pub target: Dur,
    /// PI2 update period.
    pub tupdate: Dur,
    /// Integral gain in Hz (Linux default 41/256 ≈ 0.16).
    pub alpha: f64,
    /// Proportional gain in Hz (Linux default 819/256 ≈ 3.2).
    pub beta: f64,
    pub step_thresh: StepThresh,
    /// The step applies to an L packet only if the L queue held at least
    /// this many packets when it arrived.
    pub min_qlen_step: u32,
    /// k in p_CL = k·p′.
    pub coupling_factor: f64,
    /// Percent of the link the WRR guarantees to C (wc; wl = 100 − wc).
    pub classic_protection: u8,
    pub ecn_mask: EcnMask,
    pub overload: Overload,
    pub drop: DropAt,
    /// tc `max_rtt`: when this or `typical_rtt` is set, target, tupdate,
    /// alpha and beta are derived from them (see [`DualPi2Config::pi_settings`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<Dur>,
    /// tc `typical_rtt` (default max_rtt / 6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typical_rtt: Option<Dur>,
}

impl Default for DualPi2Config {
    /// Linux `dualpi2_reset_default`.
    fn default() -> Self {
        DualPi2Config {
            limit: 10000,
            memlimit: None,
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(16),
            alpha: 41.0 / 256.0,
            beta: 819.0 / 256.0,
            step_thresh: StepThresh::Time(Dur::from_millis(1)),
            min_qlen_step: 0,
            coupling_factor: 2.0,
            classic_protection: 10,
            ecn_mask: EcnMask::L4sEct,
            overload: Overload::DropOnOverload,
            drop: DropAt::DropDequeue,
            max_rtt: None,
            typical_rtt: None,
        }
    }
}

/// The PI2 settings in force after tc's RTT-based auto-configuration
/// (alpha and beta in Hz).
#[derive(Copy, Clone, Debug, PartialEq)]
#[rustfmt::skip]
pub struct PiSettings { pub target: Dur, pub tupdate: Dur, pub alpha: f64, pub beta: f64 }

impl DualPi2Config {
    /// Explicit target/tupdate/alpha/beta, or, if `max_rtt` or
    /// `typical_rtt` is set (and non-zero), tc's derivation, which overrides
    /// them: typical = max/6 (≥ 1 µs), max = 6·typical if only typical is
    /// given; target = typical; tupdate = min(typical, max/3) (≥ 1 µs);
    /// alpha = 0.1·tupdate/max²; beta = 0.3/max (RFC 9332 App. A's rules).
    pub fn pi_settings(&self) -> PiSettings {
        let nz = |d: Option<Dur>| d.filter(|d| d.nanos() > 0);
        let min_t = Dur::from_micros(1);
        let (max, typ) = match (nz(self.max_rtt), nz(self.typical_rtt)) {
            (None, None) => return PiSettings { target: self.target, tupdate: self.tupdate, alpha: self.alpha, beta: self.beta },
            (Some(m), None) => (m, (m / 6).max(min_t)),
            (None, Some(t)) => (t * 6, t),
            (Some(m), Some(t)) => (m, t.min(m)),
        };
        let tupdate = typ.min(max / 3).max(min_t);
        let r = max.as_secs_f64();
        PiSettings { target: typ, tupdate, alpha: 0.1 * tupdate.as_secs_f64() / (r * r), beta: 0.3 / r }
    }

    /// Problems `build` would silently clamp, for the scenario layer.
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if !(self.coupling_factor >= 1.0 && self.coupling_factor <= 255.0) {
            errs.push(format!("coupling_factor must be in 1..=255, got {}", self.coupling_factor));
        }
        if self.classic_protection > 100 {
            errs.push(format!("classic_protection is a percentage (0..=100), got {}", self.classic_protection));
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                errs.push(format!("{name} must be a finite gain ≥ 0 Hz, got {v}"));
            }
        }
        if let (Some(m), Some(t)) = (self.max_rtt, self.typical_rtt) {
            if t > m {
                errs.push(format!("typical_rtt ({t}) must be <= max_rtt ({m})"));
            }
        }
        if errs.is_empty() { Ok(()) } else { Err(errs.join("; ")) }
    }

    pub fn build(&self) -> DualPi2 {
        let s = self.pi_settings();
        #[allow(clippy::manual_clamp)] // NaN → 1, where clamp would keep NaN
        let k = self.coupling_factor.max(1.0).min(255.0);
        let wc = i64::from(self.classic_protection.min(100));
        let wl = 100 - wc;
        let credit_init = i64::from(PSCHED_MTU) * (wc - wl);
        let max_p = match self.overload {
            Overload::DropOnOverload => 1.0,
            Overload::Overflow => 1.0 / k,
        };
        let memlimit = self.memlimit.map_or(self.limit.saturating_mul(2 * u64::from(PSCHED_MTU)).min(u64::from(u32::MAX)), |b| b.0);
        let tupdate = s.tupdate.max(Dur::from_micros(1));
        let cap = self.limit.min(1024) as usize;
        DualPi2 {
            l: SubQueue::with_capacity(cap),
            c: SubQueue::with_capacity(cap),
            pi: Pi::new(),
            pi_params: PiParams { target: s.target, alpha: s.alpha.max(0.0), beta: s.beta.max(0.0), max_p },
            tupdate,
            next_update: SimTime::ZERO + tupdate,
            k,
            step: self.step_thresh,
            min_qlen_step: self.min_qlen_step,
            wc,
            wl,
            credit_init,
            credit: credit_init,
            limit: self.limit,
            memlimit,
            ecn_mask: self.ecn_mask.bits(),
            overload: self.overload,
            drop_at: self.drop,
            counts: DualPi2Counts::default(),
        }
    }
}

/// Which queue a packet belongs to; the value is what goes in `Packet::class`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Class {
    Classic = 0,
    L4s = 1,
}

/// A queued packet and its Linux `skb->cb` flag.
struct Slot {
    pkt: Packet,
    /// The step AQM may act on it (L4S and L qlen ≥ min_qlen_step on arrival).
    apply_step: bool,
}

struct SubQueue {
    q: VecDeque<Slot>,
    bytes: u64,
}

impl SubQueue {
    fn with_capacity(n: usize) -> Self {
        SubQueue { q: VecDeque::with_capacity(n), bytes: 0 }
    }
    fn push(&mut self, pkt: Packet, apply_step: bool) {
        self.bytes += u64::from(pkt.size);
        self.q.push_back(Slot { pkt, apply_step });
    }
    fn pop(&mut self) -> Option<Slot> {
        let s = self.q.pop_front()?;
        self.bytes -= u64::from(s.pkt.size);
        Some(s)
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Sojourn of the head at `t` (Linux `now − head_ts`), 0 if empty.
    fn head_sojourn(&self, t: SimTime) -> Dur {
        self.q.front().map_or(Dur::ZERO, |s| t.since(s.pkt.enq_at))
    }
}

/// What DualPI2 did, by queue and cause (Linux xstats, split further).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DualPi2Counts {
    /// Packets accepted into each queue (Linux `packets_in_l`/`_c`).
    pub packets_in_l: u64,
    pub packets_in_c: u64,
    /// CE marks on L from the coupled k·p′ (or from overload marking).
    pub l_marks: u64,
    /// PI2 drops on L (p′² under overload; Not-ECT hit by k·p′).
    pub l_drops: u64,
    /// CE marks on C from p′².
    pub c_marks: u64,
    /// PI2 drops on C (Not-ECT, or any packet under overload).
    pub c_drops: u64,
    /// CE marks by the native step AQM (not double-counted, see header).
    pub step_marks: u64,
    /// Not-ECT L packets dropped by the step.
    pub step_drops: u64,
    /// Tail drops at `limit` or `memlimit`.
    pub overlimit_drops: u64,
    /// PI updates performed (including skipped idle ones).
    pub pi_updates: u64,
}

pub struct DualPi2 {
    l: SubQueue,
    c: SubQueue,
    pi: Pi,
    pi_params: PiParams,
    tupdate: Dur,
    /// When the next PI update is due.
    next_update: SimTime,
    k: f64,
    step: StepThresh,
    min_qlen_step: u32,
    /// WRR weights in percent.
    wc: i64,
    wl: i64,
    /// Bytes·percent; ≤ 0 lets L go (if C is busy too).
    credit_init: i64,
    credit: i64,
    limit: u64,
    memlimit: u64,
    ecn_mask: u8,
    overload: Overload,
    drop_at: DropAt,
    counts: DualPi2Counts,
}

impl DualPi2 {
    pub fn counts(&self) -> &DualPi2Counts {
        &self.counts
    }
    /// p′, the PI controller's base probability.
    pub fn prob(&self) -> f64 {
        self.pi.p()
    }
    /// Packets in the L queue.
    pub fn l_len(&self) -> usize {
        self.l.len()
    }
    /// Packets in the C queue.
    pub fn c_len(&self) -> usize {
        self.c.len()
    }
    /// WRR credit in bytes·percent (> 0: C's turn).
    pub fn credit(&self) -> i64 {
        self.credit
    }

    /// Perform every PI update due at or before `now` (see the header). The
    /// qdisc calls this itself; a link may call it before `probe()`.
    pub fn catch_up(&mut self, now: SimTime) {
        while self.next_update <= now {
            let t = self.next_update;
            if self.l.is_empty() && self.c.is_empty() && self.pi.p() == 0.0 && self.pi.qdelay_old() == Dur::ZERO {
                // Each remaining update would add −alpha·target ≤ 0 to p = 0.
                let n = (now.0 - t.0) / self.tupdate.nanos() + 1;
                self.counts.pi_updates += n;
                self.next_update = t + self.tupdate * n;
                break;
            }
            // RFC 9332 App. A: the PI input is the larger of the two queue delays.
            let qdelay = self.l.head_sojourn(t).max(self.c.head_sojourn(t));
            self.pi.update(qdelay, &self.pi_params);
            self.counts.pi_updates += 1;
            self.next_update = t + self.tupdate;
        }
    }

    #[cfg(test)]
    fn set_prob(&mut self, p: f64) {
        self.pi.set_p(p);
    }

    /// Linux `must_drop`: the PI2 decision for `pkt`, which is in neither
    /// queue, so the guard sees the rest of the backlog. May CE-mark `pkt`;
    /// true means drop it.
    fn must_drop(&mut self, pkt: &mut Packet, class: Class, cx: &mut Cx) -> bool {
        if self.bytes() < 2 * u64::from(PSCHED_MTU) {
            return false;
        }
        let p = self.pi.p();
        let p_cl = self.k * p;
        let overload = p_cl > 1.0;
        let not_ect = pkt.ecn == Ecn::NotEct;
        match class {
            Class::Classic => {
                // RFC 9332 §2.1: p_C = (p′)², as two independent draws.
                if !(cx.rng.bernoulli(p) && cx.rng.bernoulli(p)) {
                    return false;
                }
                if overload || not_ect {
                    self.counts.c_drops += 1;
                    return true;
                }
                self.counts.c_marks += u64::from(cx.mark(pkt));
                false
            }
            Class::L4s if overload => {
                // drop_on_overload: drop with p′² and CE-mark all the others
                // (overflow keeps k·p′ ≤ 1, but would mark all too).
                if self.overload == Overload::DropOnOverload && cx.rng.bernoulli(p) && cx.rng.bernoulli(p) {
                    self.counts.l_drops += 1;
                    return true;
                }
                self.counts.l_marks += u64::from(cx.mark(pkt));
                false
            }
            Class::L4s => {
                // RFC 9332 §2.1: p_CL = k·p′.
                if !cx.rng.bernoulli(p_cl) {
                    return false;
                }
                if not_ect {
                    self.counts.l_drops += 1;
                    return true;
                }
                self.counts.l_marks += u64::from(cx.mark(pkt));
                false
            }
        }
    }

    /// Native L4S step AQM (Linux `do_step_aqm`), on a packet just taken
    /// from L; `marked` says the coupled AQM already CE-marked it. True
    /// means drop it (Not-ECT).
    fn step_drops(&mut self, pkt: &mut Packet, apply_step: bool, marked: bool, cx: &mut Cx) -> bool {
        let over = match self.step {
            StepThresh::Time(th) => cx.now.since(pkt.enq_at) > th,
            StepThresh::Packets(n) => self.l.len() as u64 > u64::from(n),
        };
        if !(apply_step && over) {
            return false;
        }
        if pkt.ecn == Ecn::NotEct {
            self.counts.step_drops += 1;
            return true;
        }
        if !marked && cx.mark(pkt) {
            self.counts.step_marks += 1;
        }
        false
    }
}

impl Qdisc for DualPi2 {
    /// `dualpi2_change`: new parameters; queues, the PI state, the WRR
    /// credit, the counters and the update clock are kept. Packets above a
    /// lowered limit are dropped from the heads (classic first), as Linux
    /// dequeues and drops them.
    fn change(&mut self, cfg: &super::QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        let super::QdiscConfig::Dualpi2(c) = cfg else { return Err("`change` cannot switch the qdisc kind".into()) };
        let mut new = c.build();
        std::mem::swap(&mut new.l, &mut self.l);
        std::mem::swap(&mut new.c, &mut self.c);
        new.pi = std::mem::replace(&mut self.pi, Pi::new());
        new.credit = self.credit;
        new.next_update = self.next_update;
        new.counts = std::mem::take(&mut self.counts);
        *self = new;
        while (self.l.len() + self.c.len()) as u64 > self.limit {
            let s = if self.c.is_empty() { self.l.pop() } else { self.c.pop() };
            match s {
                Some(s) => cx.drop(s.pkt, DropReason::Overlimit),
                None => break,
            }
        }
        Ok(())
    }
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        // RFC 9332 §2.3: classify on the ECN field.
        let class = if pkt.ecn.bits() & self.ecn_mask != 0 { Class::L4s } else { Class::Classic };
        pkt.class = class as u8;
        if self.len() as u64 >= self.limit || self.bytes() + u64::from(pkt.size) > self.memlimit {
            self.counts.overlimit_drops += 1;
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        if self.drop_at == DropAt::DropEnqueue && self.must_drop(&mut pkt, class, cx) {
            cx.drop(pkt, DropReason::Aqm);
            return;
        }
        pkt.enq_at = cx.now;
        match class {
            Class::L4s => {
                let apply_step = self.l.len() as u64 >= u64::from(self.min_qlen_step);
                self.counts.packets_in_l += 1;
                self.l.push(pkt, apply_step);
            }
            Class::Classic => {
                self.counts.packets_in_c += 1;
                self.c.push(pkt, false);
            }
        }
    }

    /// Linux `dualpi2_qdisc_dequeue`: WRR pick, PI2 drop/mark (drop_dequeue
    /// mode), step AQM on L; repeat after a drop.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        loop {
            // The credit changes only if the other queue is busy, and only
            // once the packet survives.
            let (slot, class, credit_change) = if !self.l.is_empty() && (self.c.is_empty() || self.credit <= 0) {
                let s = self.l.pop()?;
                let cc = if self.c.is_empty() { 0 } else { self.wc * i64::from(s.pkt.size) };
                (s, Class::L4s, cc)
            } else if let Some(s) = self.c.pop() {
                let cc = if self.l.is_empty() { 0 } else { -self.wl * i64::from(s.pkt.size) };
                (s, Class::Classic, cc)
            } else {
                self.credit = self.credit_init;
                return None;
            };
            let Slot { mut pkt, apply_step } = slot;
            let marks_before = cx.stats.marks;
            if self.drop_at == DropAt::DropDequeue && self.must_drop(&mut pkt, class, cx) {
                cx.drop(pkt, DropReason::Aqm);
                continue;
            }
            let marked = cx.stats.marks > marks_before;
            if class == Class::L4s && self.step_drops(&mut pkt, apply_step, marked, cx) {
                cx.drop(pkt, DropReason::Aqm);
                continue;
            }
            self.credit += credit_change;
            return Some(pkt);
        }
    }

    fn len(&self) -> usize {
        self.l.len() + self.c.len()
    }
    fn bytes(&self) -> u64 {
        self.l.bytes + self.c.bytes
    }
    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        self.catch_up(now);
        let p = self.pi.p();
        QdiscProbe { base: p, p_c: p * p, p_l: (self.k * p).min(1.0) }
    }
}

#[cfg(test)]
mod tests;
