//! netem, the network emulator qdisc (Linux `net/sched/sch_netem.c`:
//! `netem_enqueue`, `netem_dequeue`, `tabledist`, `get_crandom`,
//! `loss_4state`, `loss_gilb_ell`, `get_slot_next`, `packet_time_ns`;
//! options and defaults from iproute2 `tc/q_netem.c`; tc-netem(8)).
//!
//! On enqueue a packet may be duplicated (the copy is enqueued first, with
//! duplication off), lost (or CE-marked with `ecn`), tail-dropped at `limit`,
//! sent at once ahead of the queue (`reorder`), or given a send time
//! `now + delay` where the delay comes from `tabledist(delay, jitter)` with
//! the correlated random `get_crandom`: uniform in [delay − jitter, delay +
//! jitter) by default, or from the iproute2 tables (`normal`, `pareto`,
//! `paretonormal`, generated here by `gen_tables.py` exactly as iproute2's
//! `netem/*.c` generate them). With `rate`, the send time also waits for the
//! last queued packet plus this packet's transmission time (so `rate` keeps
//! order). Packets wait in the time-sorted tfifo (stable for equal times);
//! jitter larger than the gap between packets therefore reorders them. As
//! Linux's `tfifo_enqueue` does, a packet due no earlier than the last one
//! queued in order joins a plain queue; only the others enter the sorted
//! tree (here a heap), and the earlier of the two heads leaves first.
//! On dequeue the tfifo head leaves once its time has come and, with `slot`,
//! the current slot is open (`get_slot_next` draws the next slot when the
//! slot's packets/bytes are used up, and whenever the head is due after the
//! scheduled slot). With a child qdisc, released packets go into the child
//! (so stacked netems add their delays), and the child is dequeued.
//!
//! Units: time in ns (signed while computing delays, as Linux's s64),
//! probabilities and correlations as tc takes them, in percent, turned into
//! u32 fractions of 2³²−1 like tc's `set_percent`.
//! Deviations: `corrupt` is not modelled (no payloads); a duplicate is
//! enqueued into this netem, not at the root of a stacked tree; the limit
//! counts the tfifo, not the child; each netem has its own random stream
//! (Linux's per-qdisc `prng`), seeded from the link's stream.

mod tables;
#[cfg(test)]
mod tests;

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use serde::{Deserialize, Serialize};

use super::blocks::child::Child;
use super::{Cx, DropReason, Qdisc, QdiscConfig};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Dur, Rate, SimTime};

pub use tables::{NORMAL, PARETO, PARETONORMAL};

/// `NETEM_DIST_SCALE`: table values are multiples of 1/8192 of a jitter.
pub const DIST_SCALE: i64 = 8192;

/// Delay (and slot) distributions (tc `distribution`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// No table: `delay − jitter + (rnd mod 2·jitter)`.
    #[default]
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

impl Distribution {
    pub fn table(self) -> Option<&'static [i16]> {
        match self {
            Distribution::Uniform => None,
            Distribution::Normal => Some(&NORMAL),
            Distribution::Pareto => Some(&PARETO),
            Distribution::Paretonormal => Some(&PARETONORMAL),
        }
    }
}

/// tc `loss ...`. Percentages 0..100.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// `loss random P [CORR]`: independent (or `get_crandom`-correlated) loss.
    Random {
        p: f64,
        #[serde(default)]
        corr: f64,
    },
    /// `loss state p13 [p31 [p32 [p23 [p14]]]]`: the 4-state Markov model
    /// (GI model of Salsano et al.). Defaults as tc: p31 = 100 − p13,
    /// p32 = 0, p23 = 100, p14 = 0.
    State {
        p13: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p31: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p32: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p23: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p14: Option<f64>,
    },
    /// `loss gemodel p [r [1-h [1-k]]]`: Gilbert-Elliott. Defaults as tc:
    /// r = 100 − p, 1-h = 100 (every packet in the bad state lost), 1-k = 0.
    Gemodel {
        p: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        r: Option<f64>,
        #[serde(default, rename = "1-h", skip_serializing_if = "Option::is_none")]
        one_minus_h: Option<f64>,
        #[serde(default, rename = "1-k", skip_serializing_if = "Option::is_none")]
        one_minus_k: Option<f64>,
    },
}

/// tc `reorder P [CORR] [gap N]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderConfig {
    /// Percent of eligible packets sent at once.
    pub p: f64,
    #[serde(default)]
    pub corr: f64,
    /// Packets delayed normally between reorder chances (tc default 1).
    #[serde(default = "one")]
    pub gap: u32,
}

fn one() -> u32 {
    1
}

/// tc `slot MIN [MAX] [packets N] [bytes M]` or `slot distribution D DELAY
/// JITTER [packets N] [bytes M]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlotConfig {
    /// Shortest gap between slots (uniform form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Dur>,
    /// Longest gap (default `min`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Dur>,
    /// Distribution form: table, mean gap and jitter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dur>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Dur>,
    /// Packets per slot (0 = unlimited).
    pub packets: u32,
    /// Bytes per slot (0 = unlimited).
    pub bytes: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetemConfig {
    /// Mean added delay (tc `delay`).
    pub delay: Dur,
    /// ± jitter (tc `delay D J`); at most 2³¹−1 ns, as Linux keeps it in s32.
    pub jitter: Dur,
    /// Correlation of successive delays' random values, percent.
    pub delay_corr: f64,
    pub distribution: Distribution,
    /// Packets held in the delay line (tc `limit`, default 1000).
    pub limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossModel>,
    /// Mark ECN-capable packets CE instead of losing them (tc `ecn`).
    pub ecn: bool,
    /// Percent of packets duplicated.
    pub duplicate: f64,
    pub duplicate_corr: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderConfig>,
    /// Emulated link rate (tc `rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Bytes added to each packet for `rate` (may be negative).
    pub packet_overhead: i32,
    /// Cell size for `rate` (0 = none), and bytes added per cell.
    pub cell_size: u32,
    pub cell_overhead: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotConfig>,
    /// Qdisc receiving packets once their delay has passed (e.g. another netem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<QdiscConfig>>,
}

impl Default for NetemConfig {
    fn default() -> Self {
        NetemConfig {
            delay: Dur::ZERO,
            jitter: Dur::ZERO,
            delay_corr: 0.0,
            distribution: Distribution::Uniform,
            limit: 1000,
            loss: None,
            ecn: false,
            duplicate: 0.0,
            duplicate_corr: 0.0,
            reorder: None,
            rate: None,
            packet_overhead: 0,
            cell_size: 0,
            cell_overhead: 0,
            slot: None,
            child: None,
        }
    }
}

/// tc's `set_percent`: a percentage as a fraction of 2³²−1.
pub fn percent(p: f64) -> u32 {
    (p / 100.0 * f64::from(u32::MAX))
        .round()
        .clamp(0.0, f64::from(u32::MAX)) as u32
}

impl NetemConfig {
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        let mut pct = |k: &str, v: f64| {
            if !(0.0..=100.0).contains(&v) {
                errs.push(format!("{k}: must be a percentage 0..100, got {v}"));
            }
        };
        pct("delay_corr", self.delay_corr);
        pct("duplicate", self.duplicate);
        pct("duplicate_corr", self.duplicate_corr);
        match &self.loss {
            Some(LossModel::Random { p, corr }) => {
                pct("loss.p", *p);
                pct("loss.corr", *corr);
            }
            Some(LossModel::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            }) => {
                pct("loss.p13", *p13);
                for (k, v) in [
                    ("loss.p31", p31),
                    ("loss.p32", p32),
                    ("loss.p23", p23),
                    ("loss.p14", p14),
                ] {
                    if let Some(v) = v {
                        pct(k, *v);
                    }
                }
            }
            Some(LossModel::Gemodel {
                p,
                r,
                one_minus_h,
                one_minus_k,
            }) => {
                pct("loss.p", *p);
                for (k, v) in [
                    ("loss.r", r),
                    ("loss.1-h", one_minus_h),
                    ("loss.1-k", one_minus_k),
                ] {
                    if let Some(v) = v {
                        pct(k, *v);
                    }
                }
            }
            None => {}
        }
        if let Some(r) = &self.reorder {
            pct("reorder.p", r.p);
            pct("reorder.corr", r.corr);
        }
        if self.jitter.0 > i32::MAX as u64 {
            errs.push(format!(
                "jitter: must be at most 2147483647 ns (Linux keeps it in 32 bits), got {}",
                self.jitter
            ));
        }
        if self.distribution != Distribution::Uniform && self.jitter == Dur::ZERO {
            errs.push(
                "distribution: needs a `jitter` (tc rejects a distribution without one)".into(),
            );
        }
        if self.limit == 0 {
            errs.push("limit: must be at least 1 packet".into());
        }
        if let Some(r) = &self.reorder {
            if self.delay == Dur::ZERO {
                errs.push(
                    "reorder: needs a `delay` (tc: reordering not possible without some delay)"
                        .into(),
                );
            }
            if r.gap == 0 {
                errs.push("reorder.gap: must be at least 1".into());
            }
        }
        if self.rate == Some(Rate(0)) {
            errs.push("rate: must be greater than 0 (omit it for no rate)".into());
        }
        if self.rate.is_some_and(|r| r.bps() < 8) {
            errs.push("rate: must be at least 1 byte/s".into());
        }
        if let Some(s) = &self.slot {
            let uniform = s.min.is_some() || s.max.is_some();
            let dist = s.distribution.is_some() || s.delay.is_some() || s.jitter.is_some();
            if uniform == dist {
                errs.push(
                    "slot: give either `min` [`max`] or `distribution` with `delay` and `jitter`"
                        .into(),
                );
            }
            if let (Some(a), Some(b)) = (s.min, s.max) {
                if b < a {
                    errs.push("slot.max: must be at least `slot.min`".into());
                }
            }
            if dist && (s.distribution.is_none() || s.delay.is_none() || s.jitter.is_none()) {
                errs.push(
                    "slot: the distribution form needs `distribution`, `delay` and `jitter`".into(),
                );
            }
            if s.jitter.is_some_and(|j| j.0 > i32::MAX as u64) {
                errs.push("slot.jitter: must be at most 2147483647 ns".into());
            }
        }
        super::validate_child(&self.child, &mut errs);
        super::problems(errs)
    }

    pub fn build(&self, rng: &mut SimRng) -> Netem {
        let mut own = SimRng::for_component(rng.next_u64(), "netem");
        let child = self.child.as_ref().map(|c| Child::new(c, rng));
        let mut n = Netem {
            p: Params::default(),
            delay_cor: Crandom::default(),
            loss_cor: Crandom::default(),
            dup_cor: Crandom::default(),
            reorder_cor: Crandom::default(),
            loss: LossState::None,
            counter: 0,
            slot: None,
            tfifo: Tfifo::with_capacity(self.limit.min(4096) as usize),
            seq: 0,
            head_q: VecDeque::new(),
            last_tts: None,
            bytes: 0,
            child,
            wake: None,
            rng: SimRng::for_component(0, "placeholder"),
        };
        n.configure(self, &mut own, SimTime::ZERO);
        n.rng = own;
        n
    }
}

/// `struct crndstate` and `get_crandom`: the next value leans on the last
/// one with weight ρ/2³².
#[derive(Copy, Clone, Debug, Default)]
pub struct Crandom {
    pub last: u32,
    pub rho: u32,
}

impl Crandom {
    /// `init_crandom`: the first `last` is random.
    pub fn new(rho: u32, rng: &mut SimRng) -> Crandom {
        Crandom {
            rho,
            last: rng.next_u32(),
        }
    }
    pub fn get(&mut self, rng: &mut SimRng) -> u32 {
        if self.rho == 0 {
            return rng.next_u32();
        }
        let value = u64::from(rng.next_u32());
        let rho = u64::from(self.rho) + 1;
        let answer = ((u128::from(value) * u128::from((1u64 << 32) - rho)
            + u128::from(self.last) * u128::from(rho))
            >> 32) as u32;
        self.last = answer;
        answer
    }
}

/// `tabledist(mu, sigma, state, dist)`: a delay in ns (may be negative).
pub fn tabledist(
    mu: i64,
    sigma: i32,
    state: Option<&mut Crandom>,
    rng: &mut SimRng,
    dist: Option<&[i16]>,
) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = match state {
        Some(s) => s.get(rng),
        None => rng.next_u32(),
    };
    let Some(table) = dist else {
        return (i64::from(rnd % (2 * sigma as u32)) + mu) - i64::from(sigma);
    };
    let t = i64::from(table[rnd as usize % table.len()]);
    let sigma = i64::from(sigma);
    let mut x = (sigma % DIST_SCALE) * t;
    if x >= 0 {
        x += DIST_SCALE / 2;
    } else {
        x -= DIST_SCALE / 2;
    }
    x / DIST_SCALE + (sigma / DIST_SCALE) * t + mu
}

/// The loss generator and its Markov state (Linux `clgstate`).
#[derive(Copy, Clone, Debug)]
enum LossState {
    None,
    Random {
        p: u32,
    },
    /// 4-state: a1 = p13, a2 = p31, a3 = p32, a4 = p14, a5 = p23.
    FourState {
        state: u8,
        a1: u32,
        a2: u32,
        a3: u32,
        a4: u32,
        a5: u32,
    },
    /// Gilbert-Elliott: a1 = p, a2 = r, a3 = h, a4 = 1-k; `bad` = state 2.
    Ge {
        bad: bool,
        a1: u32,
        a2: u32,
        a3: u32,
        a4: u32,
    },
}

#[derive(Clone, Debug, Default)]
struct Params {
    latency: i64,
    jitter: i32,
    dist: Option<&'static [i16]>,
    limit: u32,
    ecn: bool,
    duplicate: u32,
    reorder: u32,
    gap: u32,
    /// Bytes per second (tc passes `rate` in bytes/s); 0 = off.
    rate_bps: u64,
    packet_overhead: i32,
    cell_size: u32,
    cell_overhead: i32,
    slot: Option<SlotParams>,
}

#[derive(Copy, Clone, Debug)]
struct SlotParams {
    min: i64,
    max: i64,
    dist: Option<&'static [i16]>,
    dist_delay: i64,
    dist_jitter: i32,
    max_packets: i32,
    max_bytes: i32,
}

#[derive(Copy, Clone, Debug)]
struct SlotState {
    next: SimTime,
    packets_left: i32,
    bytes_left: i32,
}

/// A packet in the tfifo, ordered by send time, then by arrival (stable).
struct Timed {
    t: SimTime,
    seq: u64,
    pkt: Packet,
}
impl PartialEq for Timed {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timed {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

/// The tfifo: packets in (send time, arrival) order. Those due no earlier
/// than the last in `tail` join it (a queue, already in order: with a fixed
/// delay, every packet); the others wait in `heap`. Popping takes the
/// earlier head, so the order is the heap's alone would be, at a queue's
/// cost for the packets in order (a heap of a long delay's hundreds of
/// packets moved each one some eight times).
#[derive(Default)]
struct Tfifo {
    tail: VecDeque<Timed>,
    heap: BinaryHeap<Reverse<Timed>>,
}

impl Tfifo {
    /// Room for `n` packets in order (nearly all of them, without jitter)
    /// from the start; the heap grows only as far as reordering needs.
    fn with_capacity(n: usize) -> Tfifo {
        Tfifo { tail: VecDeque::with_capacity(n), heap: BinaryHeap::new() }
    }
    fn push(&mut self, p: Timed) {
        if self.tail.back().is_none_or(|b| p >= *b) {
            self.tail.push_back(p);
        } else {
            self.heap.push(Reverse(p));
        }
    }
    /// Whether the heap's head leaves before the queue's.
    fn heap_first(&self) -> bool {
        match (self.heap.peek(), self.tail.front()) {
            (Some(Reverse(h)), Some(t)) => h < t,
            (h, _) => h.is_some(),
        }
    }
    fn peek_time(&self) -> Option<SimTime> {
        if self.heap_first() {
            self.heap.peek().map(|Reverse(h)| h.t)
        } else {
            self.tail.front().map(|t| t.t)
        }
    }
    fn pop(&mut self) -> Option<Timed> {
        if self.heap_first() {
            self.heap.pop().map(|Reverse(h)| h)
        } else {
            self.tail.pop_front()
        }
    }
    fn len(&self) -> usize {
        self.tail.len() + self.heap.len()
    }
    fn is_empty(&self) -> bool {
        self.tail.is_empty() && self.heap.is_empty()
    }
}

pub struct Netem {
    p: Params,
    delay_cor: Crandom,
    loss_cor: Crandom,
    dup_cor: Crandom,
    reorder_cor: Crandom,
    loss: LossState,
    /// Packets delayed normally since the last reorder (Linux `counter`).
    counter: u32,
    slot: Option<SlotState>,
    tfifo: Tfifo,
    seq: u64,
    /// Packets sent ahead by `reorder` (Linux's `sch->q`), dequeued first.
    head_q: VecDeque<Packet>,
    /// The latest send time queued (the reference point of `rate`).
    last_tts: Option<SimTime>,
    /// Bytes in the tfifo and `head_q`.
    bytes: u64,
    child: Option<Child>,
    wake: Option<SimTime>,
    rng: SimRng,
}

impl Netem {
    /// `netem_change`: take every parameter from `c` (tc sends them all),
    /// re-initialise the correlated generators and the loss and slot state.
    fn configure(&mut self, c: &NetemConfig, rng: &mut SimRng, now: SimTime) {
        let (reorder, gap) = match &c.reorder {
            Some(r) => (percent(r.p), r.gap),
            None => (0, 0),
        };
        self.p = Params {
            latency: c.delay.0 as i64,
            jitter: c.jitter.0.min(i32::MAX as u64) as i32,
            dist: c.distribution.table(),
            limit: c.limit,
            ecn: c.ecn,
            duplicate: percent(c.duplicate),
            reorder,
            gap,
            rate_bps: c.rate.map_or(0, |r| r.bps() / 8),
            packet_overhead: c.packet_overhead,
            cell_size: c.cell_size,
            cell_overhead: c.cell_overhead,
            slot: c.slot.as_ref().map(|s| SlotParams {
                min: s.min.map_or(0, |d| d.0 as i64),
                max: s.max.or(s.min).map_or(0, |d| d.0 as i64),
                dist: s.distribution.and_then(|d| d.table()),
                dist_delay: s.delay.map_or(0, |d| d.0 as i64),
                dist_jitter: s.jitter.map_or(0, |d| d.0.min(i32::MAX as u64) as i32),
                max_packets: if s.packets == 0 {
                    i32::MAX
                } else {
                    s.packets.min(i32::MAX as u32) as i32
                },
                max_bytes: if s.bytes == 0 {
                    i32::MAX
                } else {
                    s.bytes.min(i32::MAX as u32) as i32
                },
            }),
        };
        self.counter = 0;
        self.delay_cor = Crandom::new(percent(c.delay_corr), rng);
        self.dup_cor = Crandom::new(percent(c.duplicate_corr), rng);
        self.reorder_cor = Crandom::new(c.reorder.as_ref().map_or(0, |r| percent(r.corr)), rng);
        self.loss_cor = Crandom::new(0, rng);
        self.loss = match &c.loss {
            None => LossState::None,
            Some(LossModel::Random { p, corr }) => {
                self.loss_cor = Crandom::new(percent(*corr), rng);
                LossState::Random { p: percent(*p) }
            }
            Some(LossModel::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            }) => LossState::FourState {
                state: 1,
                a1: percent(*p13),
                a2: percent(p31.unwrap_or(100.0 - p13)),
                a3: percent(p32.unwrap_or(0.0)),
                a4: percent(p14.unwrap_or(0.0)),
                a5: percent(p23.unwrap_or(100.0)),
            },
            Some(LossModel::Gemodel {
                p,
                r,
                one_minus_h,
                one_minus_k,
            }) => LossState::Ge {
                bad: false,
                a1: percent(*p),
                a2: percent(r.unwrap_or(100.0 - p)),
                // tc: "netem option is 1-h but kernel expects h".
                a3: u32::MAX - percent(one_minus_h.unwrap_or(100.0)),
                a4: percent(one_minus_k.unwrap_or(0.0)),
            },
        };
        // get_slot: the first slot opens at configuration time.
        self.slot = self.p.slot.map(|s| SlotState {
            next: now,
            packets_left: s.max_packets,
            bytes_left: s.max_bytes,
        });
    }

    /// `loss_event`.
    fn loss_event(&mut self) -> bool {
        let rng = &mut self.rng;
        match &mut self.loss {
            LossState::None => false,
            LossState::Random { p } => *p != 0 && *p >= self.loss_cor.get(rng),
            LossState::FourState {
                state,
                a1,
                a2,
                a3,
                a4,
                a5,
            } => {
                let rnd = u64::from(rng.next_u32());
                let (a1, a2, a3, a4, a5) = (
                    u64::from(*a1),
                    u64::from(*a2),
                    u64::from(*a3),
                    u64::from(*a4),
                    u64::from(*a5),
                );
                //= sch_netem.c loss_4state: 1 = TX_IN_GAP, 2 = TX_IN_BURST,
                //# 3 = LOST_IN_BURST, 4 = LOST_IN_GAP.
                match *state {
                    1 => {
                        if rnd < a4 {
                            *state = 4;
                            return true;
                        } else if a4 < rnd && rnd < a1 + a4 {
                            *state = 3;
                            return true;
                        }
                        false
                    }
                    2 => {
                        if rnd < a5 {
                            *state = 3;
                            return true;
                        }
                        false
                    }
                    3 => {
                        if rnd < a3 {
                            *state = 2;
                        } else if a3 < rnd && rnd < a2 + a3 {
                            *state = 1;
                        } else if a2 + a3 < rnd {
                            return true;
                        }
                        false
                    }
                    _ => {
                        *state = 1;
                        false
                    }
                }
            }
            LossState::Ge {
                bad,
                a1,
                a2,
                a3,
                a4,
            } => {
                //= sch_netem.c loss_gilb_ell: the state may change first; the
                //# loss draw uses the probability of the state the packet arrived in.
                if !*bad {
                    if rng.next_u32() < *a1 {
                        *bad = true;
                    }
                    rng.next_u32() < *a4
                } else {
                    if rng.next_u32() < *a2 {
                        *bad = false;
                    }
                    rng.next_u32() > *a3
                }
            }
        }
    }

    /// `packet_time_ns`: transmission time at `rate` with packet and cell
    /// overheads.
    fn packet_time_ns(&self, len: u32) -> i64 {
        let mut len = i64::from(len) + i64::from(self.p.packet_overhead);
        if self.p.cell_size > 0 {
            let cs = i64::from(self.p.cell_size);
            let cells = (len + cs - 1).div_euclid(cs);
            len = cells * (cs + i64::from(self.p.cell_overhead));
        }
        (i128::from(len.max(0)) * 1_000_000_000 / i128::from(self.p.rate_bps.max(1))) as i64
    }

    fn get_slot_next(&mut self, now: SimTime) {
        let Some(sp) = self.p.slot else { return };
        let next_delay = match sp.dist {
            None => {
                sp.min
                    + ((u128::from(self.rng.next_u32()) * (sp.max - sp.min) as u128) >> 32) as i64
            }
            Some(t) => tabledist(sp.dist_delay, sp.dist_jitter, None, &mut self.rng, Some(t)),
        };
        self.slot = Some(SlotState {
            next: SimTime((now.0 as i64 + next_delay).max(0) as u64),
            packets_left: sp.max_packets,
            bytes_left: sp.max_bytes,
        });
    }

    fn qlen(&self) -> usize {
        self.tfifo.len() + self.head_q.len()
    }

    /// Send time of the packet at the tfifo head.
    pub fn head_time(&self) -> Option<SimTime> {
        self.tfifo.peek_time()
    }
}

impl Qdisc for Netem {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        let now = cx.now;
        let mut count = 1;
        if self.p.duplicate != 0 && self.p.duplicate >= self.dup_cor.get(&mut self.rng) {
            count += 1;
        }
        if self.loss_event() {
            // `ecn`: mark instead of losing, when the packet can carry a mark.
            if !(self.p.ecn && cx.mark(&mut pkt)) {
                count -= 1;
            }
        }
        if count == 0 {
            cx.drop(pkt, DropReason::Loss);
            return;
        }
        if count > 1 {
            // The copy goes in first, with duplication switched off.
            let saved = self.p.duplicate;
            self.p.duplicate = 0;
            cx.stats.duplicates += 1;
            self.enqueue(pkt, cx);
            self.p.duplicate = saved;
        }
        if self.qlen() >= self.p.limit as usize {
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        self.bytes += u64::from(pkt.size);
        if self.p.gap == 0
            || self.counter < self.p.gap - 1
            || self.p.reorder < self.reorder_cor.get(&mut self.rng)
        {
            let mut delay = tabledist(
                self.p.latency,
                self.p.jitter,
                Some(&mut self.delay_cor),
                &mut self.rng,
                self.p.dist,
            );
            let mut base = now.0 as i64;
            if self.p.rate_bps > 0 {
                //= sch_netem.c netem_enqueue: the last queued packet is the
                //# reference point; its remaining time is taken off the delay.
                if let Some(last) = self.last_tts {
                    delay -= last.0 as i64 - base;
                    delay = delay.max(0);
                    base = last.0 as i64;
                }
                delay += self.packet_time_ns(pkt.size);
            }
            let t = SimTime((base + delay).max(0) as u64);
            self.counter += 1;
            self.last_tts = Some(self.last_tts.map_or(t, |l| l.max(t)));
            self.seq += 1;
            self.tfifo.push(Timed {
                t,
                seq: self.seq,
                pkt,
            });
        } else {
            // Reorder: this packet goes out ahead of everything queued.
            self.counter = 0;
            self.last_tts = Some(self.last_tts.map_or(now, |l| l.max(now)));
            self.head_q.push_front(pkt);
        }
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.wake = None;
        let now = cx.now;
        loop {
            if let Some(p) = self.head_q.pop_front() {
                self.bytes -= u64::from(p.size);
                self.forget_last();
                return Some(p);
            }
            let Some(tts) = self.head_time() else { break };
            if let Some(s) = self.slot {
                if s.next < tts {
                    self.get_slot_next(now);
                }
            }
            let slot_open = self.slot.is_none_or(|s| s.next <= now);
            if tts <= now && slot_open {
                let Timed { pkt, .. } = self.tfifo.pop().expect("peeked");
                self.bytes -= u64::from(pkt.size);
                self.forget_last();
                if let Some(s) = &mut self.slot {
                    s.packets_left -= 1;
                    s.bytes_left = s
                        .bytes_left
                        .saturating_sub(pkt.size.min(i32::MAX as u32) as i32);
                    if s.packets_left <= 0 || s.bytes_left <= 0 {
                        self.get_slot_next(now);
                    }
                }
                match &mut self.child {
                    Some(c) => {
                        c.enqueue(pkt, cx);
                        continue;
                    }
                    None => return Some(pkt),
                }
            }
            if let Some(c) = &mut self.child {
                if let Some(p) = c.dequeue(cx) {
                    return Some(p);
                }
            }
            self.wake = Some(tts.max(self.slot.map_or(tts, |s| s.next)));
            return None;
        }
        self.child.as_mut().and_then(|c| c.dequeue(cx))
    }

    fn len(&self) -> usize {
        self.qlen() + self.child.as_ref().map_or(0, |c| c.len())
    }
    fn probe(&mut self, now: SimTime) -> super::QdiscProbe {
        self.child.as_mut().map_or(super::QdiscProbe::NONE, |c| c.probe(now))
    }
    fn bytes(&self) -> u64 {
        self.bytes + self.child.as_ref().map_or(0, |c| c.bytes())
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        super::min_some(self.wake, self.child.as_ref().and_then(|c| c.next_wakeup()))
    }

    fn change(&mut self, cfg: &QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        let QdiscConfig::Netem(c) = cfg else {
            return Err("`change` cannot switch the qdisc kind (use `qdisc = {...}`)".into());
        };
        let mut rng = std::mem::replace(&mut self.rng, SimRng::for_component(0, "placeholder"));
        self.configure(c, &mut rng, cx.now);
        self.rng = rng;
        match (&c.child, &mut self.child) {
            (Some(cc), Some(ch)) => ch.change(cc, cx),
            (None, None) => Ok(()),
            _ => Err("`change` cannot add or remove netem's child (use `qdisc = {...}`)".into()),
        }
    }
}

impl Netem {
    /// The child qdisc, if any.
    pub fn child(&self) -> Option<&Child> {
        self.child.as_ref()
    }
    /// Once nothing is queued, `rate` has no reference point any more.
    fn forget_last(&mut self) {
        if self.tfifo.is_empty() && self.head_q.is_empty() {
            self.last_tts = None;
        }
    }
}
