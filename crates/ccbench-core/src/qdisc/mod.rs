//! Queue disciplines. A qdisc owns its queues and decides, on enqueue and on
//! dequeue, what to keep, drop or CE-mark. The link around it keeps the
//! arrival/departure counts; drops and marks go through [`Cx`], so no
//! algorithm can forget to count one (the ns-3 identity
//! arrived = dropped + departed + backlog is checked by property tests).
//!
//! Algorithms share building blocks in `blocks/` (the CoDel state machine,
//! flow hashing) instead of copying each other.

pub mod blocks;
pub mod cake;
pub mod codel;
pub mod dualpi2;
pub mod fifo;
pub mod fq_codel;
pub mod fq_pie;
pub mod pie;
pub mod red;
pub mod htb;
pub mod netem;
pub mod tbf;
pub mod grant;
pub mod lfq_cobalt;
pub mod twin_codel_af;

use serde::{Deserialize, Serialize};

use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Dur, Rate, SimTime};

/// `psched_mtu()` on Ethernet: 1500 B MTU + 14 B header. Used by the "one MTU
/// of backlog" guards and FQ quantum defaults.
pub const PSCHED_MTU: u32 = 1514;

/// The smaller of two optional values (a release time, a rate): what a
/// qdisc and its child together allow.
pub(crate) fn min_some<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A config's collected problems as one `validate()` result.
pub(crate) fn problems(errs: Vec<String>) -> Result<(), String> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Add an optional child qdisc's problems, prefixed `child:`.
pub(crate) fn validate_child(child: &Option<Box<QdiscConfig>>, errs: &mut Vec<String>) {
    if let Some(Err(e)) = child.as_ref().map(|c| c.validate()) {
        errs.push(format!("child: {e}"));
    }
}

/// Why a qdisc dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Queue full (packet, byte or memory limit).
    Overlimit,
    /// The AQM decided to drop (CoDel drop, PIE/DualPI2 probability, ...).
    Aqm,
    /// An emulated impairment lost the packet (netem `loss`), or a `tc qdisc
    /// replace` discarded it.
    Loss,
}

/// Counters a qdisc updates through [`Cx`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QdiscStats {
    pub drops_overlimit: u64,
    pub drops_aqm: u64,
    pub drop_bytes: u64,
    pub marks: u64,
    /// Packets lost to emulated impairments (netem `loss`) or discarded by a
    /// qdisc replacement.
    pub drops_loss: u64,
    /// Extra copies a qdisc created (netem `duplicate`): conservation reads
    /// arrived + duplicated = dropped + departed + backlog.
    pub duplicates: u64,
}

impl QdiscStats {
    pub fn drops(&self) -> u64 {
        self.drops_overlimit + self.drops_aqm + self.drops_loss
    }
}

/// Everything a qdisc hook may touch besides its own state: no globals.
pub struct Cx<'a> {
    pub now: SimTime,
    pub rng: &'a mut SimRng,
    pub stats: &'a mut QdiscStats,
}

impl Cx<'_> {
    /// Discard a packet and count it.
    #[inline]
    pub fn drop(&mut self, pkt: Packet, why: DropReason) {
        self.stats.drop_bytes += u64::from(pkt.size);
        match why {
            DropReason::Overlimit => self.stats.drops_overlimit += 1,
            DropReason::Aqm => self.stats.drops_aqm += 1,
            DropReason::Loss => self.stats.drops_loss += 1,
        }
    }
    /// `INET_ECN_set_ce`: ECT(0)/ECT(1) become CE, CE stays CE (all count as
    /// marked); Not-ECT cannot be marked and the caller must drop instead.
    #[inline]
    pub fn mark(&mut self, pkt: &mut Packet) -> bool {
        if pkt.ecn.is_ect() {
            pkt.ecn = Ecn::Ce;
            self.stats.marks += 1;
            true
        } else {
            false
        }
    }
}

/// Marking/drop probabilities in force, for the per-link series (NaN where
/// a qdisc has no such probability).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct QdiscProbe {
    /// The controller's base probability (DualPI2 p′, PIE p).
    pub base: f64,
    /// Probability applied to the classic queue (DualPI2: p′²).
    pub p_c: f64,
    /// Probability applied to the L4S queue (DualPI2: min(k·p′, 1), before
    /// the native step marking).
    pub p_l: f64,
}

impl QdiscProbe {
    pub const NONE: QdiscProbe = QdiscProbe { base: f64::NAN, p_c: f64::NAN, p_l: f64::NAN };
}

pub trait Qdisc {
    /// Take a packet (its `enq_at` is already set to now). May drop it or
    /// others, through `cx`.
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx);
    /// Hand out the next packet to transmit, dropping or marking on the way.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet>;
    /// Packets queued.
    fn len(&self) -> usize;
    /// Bytes queued.
    fn bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Probabilities in force at `now`, for the series (a qdisc with lazy
    /// timers catches up first).
    fn probe(&mut self, _now: SimTime) -> QdiscProbe {
        QdiscProbe::NONE
    }
    /// For non-work-conserving qdiscs (shapers, netem's delay line, Cake's
    /// shaper): when `dequeue` returned `None` although packets are queued,
    /// the earliest time a packet may be released. The link calls
    /// `dequeue` again then (as a qdisc watchdog timer does in Linux).
    /// Work-conserving qdiscs keep the default.
    fn next_wakeup(&self) -> Option<SimTime> {
        None
    }
    /// `tc qdisc change`: take new parameters while keeping queued packets
    /// and state. `cfg` is the whole new configuration (of the same kind);
    /// qdiscs Linux cannot change in place keep the default, an error.
    fn change(&mut self, _cfg: &QdiscConfig, _cx: &mut Cx) -> Result<(), String> {
        Err("this qdisc cannot be changed in place (use `qdisc = {...}` to replace it)".into())
    }
}

/// A qdisc's parameters as written in a scenario (`kind = "fq_codel"`, ...),
/// each with its Linux defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QdiscConfig {
    Pfifo(fifo::PfifoConfig),
    Bfifo(fifo::BfifoConfig),
    Codel(codel::CodelConfig),
    FqCodel(fq_codel::FqCodelConfig),
    Dualpi2(dualpi2::DualPi2Config),
    Pie(pie::PieConfig),
    FqPie(fq_pie::FqPieConfig),
    Red(red::RedConfig),
    Tbf(tbf::TbfConfig),
    Htb(htb::HtbConfig),
    Netem(netem::NetemConfig),
    Cake(cake::CakeConfig),
    TwinCodelAf(twin_codel_af::TwinCodelAfConfig),
    LfqCobalt(lfq_cobalt::LfqCobaltConfig),
}

impl Default for QdiscConfig {
    /// `pfifo` with the default txqueuelen, like a Linux interface with no
    /// qdisc configured.
    fn default() -> Self {
        QdiscConfig::Pfifo(fifo::PfifoConfig::default())
    }
}

impl QdiscConfig {
    /// Value checks serde cannot express; the message names the problem.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscConfig::FqCodel(c) => c.validate(),
            QdiscConfig::Dualpi2(c) => c.validate(),
            QdiscConfig::Pie(c) => c.validate(),
            QdiscConfig::FqPie(c) => c.validate(),
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::Tbf(c) => c.validate(),
            QdiscConfig::Htb(c) => c.validate(),
            QdiscConfig::Netem(c) => c.validate(),
            QdiscConfig::Cake(c) => c.validate(),
            QdiscConfig::TwinCodelAf(c) => c.validate(),
            QdiscConfig::LfqCobalt(c) => c.validate(),
            _ => Ok(()),
        }
    }

    /// The rate a shaping qdisc holds the link to (TBF rate, HTB ceil,
    /// netem `rate`; the slowest along the child chain), if any: what limits
    /// a flow on a link with no line `rate`.
    pub fn shaped_rate(&self) -> Option<Rate> {
        let (own, child) = match self {
            QdiscConfig::Tbf(c) => (Some(c.rate), &c.child),
            QdiscConfig::Htb(c) => (Some(c.ceil.unwrap_or(c.rate).max(c.rate)), &c.child),
            QdiscConfig::Netem(c) => (c.rate, &c.child),
            QdiscConfig::Cake(c) if !c.bandwidth.is_unlimited() => return Some(c.bandwidth),
            QdiscConfig::TwinCodelAf(c) if !c.bandwidth.is_unlimited() => return Some(c.bandwidth),
            QdiscConfig::LfqCobalt(c) if !c.bandwidth.is_unlimited() => return Some(c.bandwidth),
            _ => return None,
        };
        min_some(own, child.as_ref().and_then(|q| q.shaped_rate()))
    }

    /// Packets out per packet in: netem's `duplicate` (1 + percent/100),
    /// multiplied down its children and a shaper's child; 1 otherwise.
    pub fn duplication(&self) -> f64 {
        let child = |c: &Option<Box<QdiscConfig>>| c.as_ref().map_or(1.0, |q| q.duplication());
        match self {
            QdiscConfig::Netem(c) => (1.0 + c.duplicate.clamp(0.0, 100.0) / 100.0) * child(&c.child),
            QdiscConfig::Tbf(c) => child(&c.child),
            QdiscConfig::Htb(c) => child(&c.child),
            _ => 1.0,
        }
    }

    /// Whether the qdisc can hold a packet back in time (a shaper, netem's
    /// delay, jitter, rate or slots, anywhere down its children): a link
    /// with neither this, a `rate` nor a `delay` passes packets on at the
    /// instant they arrive.
    pub fn takes_time(&self) -> bool {
        match self {
            QdiscConfig::Netem(c) => {
                c.delay > Dur::ZERO || c.jitter > Dur::ZERO || c.rate.is_some() || c.slot.is_some() || c.child.as_ref().is_some_and(|q| q.takes_time())
            }
            QdiscConfig::Tbf(_) | QdiscConfig::Htb(_) => true,
            QdiscConfig::Cake(_) | QdiscConfig::TwinCodelAf(_) | QdiscConfig::LfqCobalt(_) => self.shaped_rate().is_some(),
            _ => false,
        }
    }

    /// Heap a freshly built qdisc holds before any packet arrives: the room
    /// its queues reserve and its per-flow state (for the cost estimate;
    /// `tests/state_bytes.rs` holds it to what building allocates).
    pub fn state_bytes(&self) -> u64 {
        const PKT: u64 = std::mem::size_of::<Packet>() as u64;
        // A FIFO reserves room for 256 packets (fifo.rs, red.rs).
        const FIFO: u64 = 256 * PKT;
        let child = |c: &Option<Box<QdiscConfig>>, default: u64| c.as_ref().map_or(default, |q| q.state_bytes());
        match self {
            QdiscConfig::Pfifo(_) | QdiscConfig::Bfifo(_) | QdiscConfig::Red(_) => FIFO,
            QdiscConfig::Codel(_) => 0,
            QdiscConfig::FqCodel(c) => u64::from(c.flows.clamp(1, 65536)) * 112,
            QdiscConfig::Dualpi2(c) => 2 * c.limit.min(1024) * PKT + (16 << 10),
            QdiscConfig::Pie(c) => u64::from(c.limit.min(1024)) * PKT,
            QdiscConfig::FqPie(c) => u64::from(c.flows.clamp(1, 65536)) * 144,
            QdiscConfig::Tbf(c) => child(&c.child, FIFO),
            QdiscConfig::Htb(c) => child(&c.child, FIFO),
            QdiscConfig::Netem(c) => u64::from(c.limit.min(4096)) * (PKT + 16) + child(&c.child, 0),
            QdiscConfig::Cake(c) => c.diffserv.tin_count() as u64 * (cake::hash::QUEUES as u64 * 110),
            QdiscConfig::TwinCodelAf(_) => 65536 * 52,
            QdiscConfig::LfqCobalt(_) => 65536 * 56,
        }
    }

    /// Delay the qdisc adds to a packet on an idle link: netem's mean
    /// `delay`, through shapers' and netem's children (what a handshake
    /// would measure of it).
    pub fn idle_delay(&self) -> Dur {
        match self {
            QdiscConfig::Netem(c) => c.delay + c.child.as_ref().map_or(Dur::ZERO, |q| q.idle_delay()),
            QdiscConfig::Tbf(c) => c.child.as_ref().map_or(Dur::ZERO, |q| q.idle_delay()),
            QdiscConfig::Htb(c) => c.child.as_ref().map_or(Dur::ZERO, |q| q.idle_delay()),
            _ => Dur::ZERO,
        }
    }

    /// Fill in what tc would derive (RED's thresholds, burst, EWMA and
    /// idle-table logs) so the resolved scenario states them.
    pub fn resolve(&mut self) {
        match self {
            QdiscConfig::Red(c) => c.resolve(),
            QdiscConfig::Tbf(c) => c.child.iter_mut().for_each(|q| q.resolve()),
            QdiscConfig::Htb(c) => c.child.iter_mut().for_each(|q| q.resolve()),
            QdiscConfig::Netem(c) => c.child.iter_mut().for_each(|q| q.resolve()),
            _ => {}
        }
    }

    /// Build the qdisc. `rng` is the owning link's stream; stochastic
    /// qdiscs draw their hash perturbation from it (as Linux draws one at
    /// qdisc creation), so flows collide differently under different seeds.
    pub fn build(&self, rng: &mut SimRng) -> AnyQdisc {
        match self {
            QdiscConfig::Pfifo(c) => AnyQdisc::Fifo(c.build()),
            QdiscConfig::Bfifo(c) => AnyQdisc::Fifo(c.build()),
            QdiscConfig::Codel(c) => AnyQdisc::Codel(c.build()),
            QdiscConfig::FqCodel(c) => AnyQdisc::FqCodel(Box::new(c.build_with_perturbation(rng.next_u32()))),
            QdiscConfig::Dualpi2(c) => AnyQdisc::DualPi2(Box::new(c.build())),
            QdiscConfig::Pie(c) => AnyQdisc::Pie(Box::new(c.build())),
            QdiscConfig::FqPie(c) => AnyQdisc::FqPie(Box::new(c.build_with_perturbation(rng.next_u32()))),
            QdiscConfig::Red(c) => AnyQdisc::Red(Box::new(c.build())),
            QdiscConfig::Tbf(c) => AnyQdisc::Tbf(Box::new(c.build(rng))),
            QdiscConfig::Htb(c) => AnyQdisc::Htb(Box::new(c.build(rng))),
            QdiscConfig::Netem(c) => AnyQdisc::Netem(Box::new(c.build(rng))),
            QdiscConfig::Cake(c) => AnyQdisc::Cake(Box::new(c.build_with_perturbation(rng.next_u32()))),
            QdiscConfig::TwinCodelAf(c) => AnyQdisc::TwinCodelAf(Box::new(c.build(rng.next_u32()))),
            QdiscConfig::LfqCobalt(c) => AnyQdisc::LfqCobalt(Box::new(c.build(rng.next_u32()))),
        }
    }
    /// Whether `tc qdisc change` may turn `self` into `new` in place: same
    /// kind, a kind that supports change, and what Linux cannot change at
    /// run time left alone (fq_codel's `flows`, a shaper's or netem's child
    /// added, removed or of another kind).
    pub fn check_change(&self, new: &QdiscConfig) -> Result<(), String> {
        use QdiscConfig as Q;
        let child = |a: &Option<Box<QdiscConfig>>, b: &Option<Box<QdiscConfig>>| match (a, b) {
            (Some(a), Some(b)) => a.check_change(b).map_err(|e| format!("child: {e}")),
            (None, None) => Ok(()),
            _ => Err("cannot add or remove a child with `change` (use `qdisc = {...}` to replace)".to_string()),
        };
        match (self, new) {
            (Q::Pfifo(_), Q::Pfifo(_)) | (Q::Bfifo(_), Q::Bfifo(_)) | (Q::Codel(_), Q::Codel(_)) | (Q::Dualpi2(_), Q::Dualpi2(_)) => Ok(()),
            (Q::FqCodel(a), Q::FqCodel(b)) if a.flows != b.flows => Err("fq_codel `flows` cannot be changed after creation (Linux rejects it)".into()),
            (Q::FqCodel(_), Q::FqCodel(_)) => Ok(()),
            (Q::Tbf(a), Q::Tbf(b)) => child(&a.child, &b.child),
            (Q::Htb(a), Q::Htb(b)) => child(&a.child, &b.child),
            (Q::Netem(a), Q::Netem(b)) => child(&a.child, &b.child),
            (Q::TwinCodelAf(_), Q::TwinCodelAf(_)) => Ok(()),
            (Q::LfqCobalt(_), Q::LfqCobalt(_)) => Ok(()),
            (a, b) if a.name() != b.name() => Err(format!("`change` cannot turn {} into {} (use `qdisc = {{...}}` to replace)", a.name(), b.name())),
            (a, _) => Err(format!("{} cannot be changed in place (use `qdisc = {{...}}` to replace it)", a.name())),
        }
    }

    /// The tc-style name, for reports.
    pub fn name(&self) -> &'static str {
        match self {
            QdiscConfig::Pfifo(_) => "pfifo",
            QdiscConfig::Bfifo(_) => "bfifo",
            QdiscConfig::Codel(_) => "codel",
            QdiscConfig::FqCodel(_) => "fq_codel",
            QdiscConfig::Dualpi2(_) => "dualpi2",
            QdiscConfig::Pie(_) => "pie",
            QdiscConfig::FqPie(_) => "fq_pie",
            QdiscConfig::Red(_) => "red",
            QdiscConfig::Tbf(_) => "tbf",
            QdiscConfig::Htb(_) => "htb",
            QdiscConfig::Netem(_) => "netem",
            QdiscConfig::Cake(_) => "cake",
            QdiscConfig::TwinCodelAf(_) => "twin_codel_af",
            QdiscConfig::LfqCobalt(_) => "lfq_cobalt",
        }
    }
}

/// Static dispatch over every qdisc (no boxes on the hot path except for
/// large states).
pub enum AnyQdisc {
    Fifo(fifo::Fifo),
    Codel(codel::Codel),
    FqCodel(Box<fq_codel::FqCodel>),
    DualPi2(Box<dualpi2::DualPi2>),
    Pie(Box<pie::Pie>),
    FqPie(Box<fq_pie::FqPie>),
    Red(Box<red::Red>),
    Tbf(Box<tbf::Tbf>),
    Htb(Box<htb::Htb>),
    Netem(Box<netem::Netem>),
    /// A qdisc behind a request-grant gate (`links[].grant`).
    Granted(Box<grant::Granted>),
    Cake(Box<cake::Cake>),
    TwinCodelAf(Box<twin_codel_af::TwinCodelAf>),
    LfqCobalt(Box<lfq_cobalt::LfqCobalt>),
}

impl AnyQdisc {
    /// The qdisc that holds the queue: a shaper's or netem's child, followed
    /// down the tree (a leaf is its own).
    pub fn leaf(&self) -> &AnyQdisc {
        match self {
            AnyQdisc::Tbf(q) => q.child().qdisc().leaf(),
            AnyQdisc::Htb(q) => q.child().qdisc().leaf(),
            AnyQdisc::Netem(q) => q.child().map_or(self, |c| c.qdisc().leaf()),
            AnyQdisc::Granted(g) => g.inner().leaf(),
            _ => self,
        }
    }
    /// `tc qdisc replace`: the queued packets are discarded (counted as
    /// losses in `stats`) and a fresh `cfg` qdisc takes over. A grant gate
    /// is the link's MAC, not part of the qdisc: it stays, with the new
    /// qdisc behind it.
    pub fn replace(&mut self, cfg: &QdiscConfig, rng: &mut SimRng, stats: &mut QdiscStats) {
        stats.drops_loss += self.len() as u64;
        stats.drop_bytes += self.bytes();
        let fresh = cfg.build(rng);
        match self {
            AnyQdisc::Granted(g) => g.replace_inner(fresh),
            q => *q = fresh,
        }
    }
    /// Whether the queue-holding qdisc has an L and a C queue (DualPI2), for
    /// the per-queue sojourn summaries.
    pub fn has_two_queues(&self) -> bool {
        matches!(self.leaf(), AnyQdisc::DualPi2(_))
    }
}

macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::Fifo($q) => $e,
            AnyQdisc::Codel($q) => $e,
            AnyQdisc::FqCodel($q) => $e,
            AnyQdisc::DualPi2($q) => $e,
            AnyQdisc::Pie($q) => $e,
            AnyQdisc::FqPie($q) => $e,
            AnyQdisc::Red($q) => $e,
            AnyQdisc::Tbf($q) => $e,
            AnyQdisc::Htb($q) => $e,
            AnyQdisc::Netem($q) => $e,
            AnyQdisc::Granted($q) => $e,
            AnyQdisc::Cake($q) => $e,
            AnyQdisc::TwinCodelAf($q) => $e,
            AnyQdisc::LfqCobalt($q) => $e,
        }
    };
}


impl Qdisc for AnyQdisc {
    #[inline(always)]
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        dispatch!(self, q => q.enqueue(pkt, cx))
    }
    #[inline(always)]
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(cx))
    }
    #[inline]
    fn len(&self) -> usize {
        dispatch!(self, q => q.len())
    }
    #[inline]
    fn bytes(&self) -> u64 {
        dispatch!(self, q => q.bytes())
    }
    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        dispatch!(self, q => q.probe(now))
    }
    #[inline]
    fn next_wakeup(&self) -> Option<SimTime> {
        dispatch!(self, q => q.next_wakeup())
    }
    fn change(&mut self, cfg: &QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        dispatch!(self, q => q.change(cfg, cx))
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Scripted drives for qdisc unit tests.
    use super::*;
    use crate::packet::{FlowId, Header};

    pub struct Harness {
        pub rng: SimRng,
        pub stats: QdiscStats,
    }
    impl Harness {
        pub fn new() -> Self {
            Harness { rng: SimRng::for_component(1, "test"), stats: QdiscStats::default() }
        }
        pub fn enq<Q: Qdisc>(&mut self, q: &mut Q, now: SimTime, mut p: Packet) {
            p.enq_at = now;
            q.enqueue(p, &mut Cx { now, rng: &mut self.rng, stats: &mut self.stats });
        }
        pub fn deq<Q: Qdisc>(&mut self, q: &mut Q, now: SimTime) -> Option<Packet> {
            q.dequeue(&mut Cx { now, rng: &mut self.rng, stats: &mut self.stats })
        }
    }
    /// Check a config's `validate` on each case: `None` must pass, `Some(key)`
    /// must fail with a problem (of those `problems` joins with "; ") that
    /// begins with `key`.
    pub fn check_rules<C: std::fmt::Debug>(
        cases: impl IntoIterator<Item = (C, Option<&'static str>)>,
        validate: impl Fn(&C) -> Result<(), String>,
    ) {
        for (c, bad) in cases {
            match (validate(&c), bad) {
                (Ok(()), None) => {}
                (Err(e), Some(k)) => assert!(e.split("; ").any(|p| p.starts_with(k)), "{c:?}: {e}"),
                (got, want) => panic!("{c:?}: {got:?}, wanted an error on {want:?}"),
            }
        }
    }
    /// A full-size packet of flow `flow` with the given ECN codepoint.
    pub fn pkt(flow: u32, ecn: Ecn) -> Packet {
        Packet { flow: FlowId(flow), tuple: flow, size: PSCHED_MTU, ecn, hdr: Header::None, ..Default::default() }
    }
}
