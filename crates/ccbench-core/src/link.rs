//! A link: qdisc + serializer + propagation pipe, with optional Bernoulli
//! loss on arrival (netem `loss random P`) and a schedule of rate changes.
//! The serializer holds at most one packet; the pipe holds packets in
//! arrival order and only its head is scheduled (the htsim trick), so the
//! event heap grows with the number of links, not packets.
//!
//! How a link is built, takes a packet in and applies a schedule step is
//! here, shared by the simulator (`sim.rs`, which times it with events) and
//! the live emulator (`ccbench-emu`'s `path.rs`, on a virtual clock).

use std::collections::VecDeque;

use crate::forwarder::Forwarder;
use crate::packet::{Ecn, Packet};
use crate::qdisc::{fifo::PfifoConfig, AnyQdisc, Cx, Qdisc, QdiscConfig, QdiscStats};
use crate::rng::SimRng;
use crate::units::{Dur, Rate, SimTime};

pub struct Link {
    pub name: String,
    /// Links the scenario did not name (per-flow access delays).
    pub internal: bool,
    /// tc-style name of the qdisc, for reports.
    pub qdisc_name: &'static str,
    pub qdisc: AnyQdisc,
    pub stats: QdiscStats,
    pub rate: Rate,
    /// The qdisc's own shaping rate in force ([`QdiscConfig::shaped_rate`]:
    /// Cake's bandwidth, an HTB ceil, a TBF or netem rate), if any.
    pub shaped: Option<Rate>,
    pub delay: Dur,
    pub loss: f64,
    pub rng: SimRng,
    /// Rate steps and qdisc replacements/changes still to come, in time order.
    pub schedule: VecDeque<(SimTime, LinkStep)>,
    /// Header rewriting applied to every packet arriving at this link.
    pub rewrite: Rewrite,
    /// The packet on the wire, if any.
    pub tx: Option<Packet>,
    pub pipe: VecDeque<(SimTime, Packet)>,
    // Counters.
    pub arrivals: u64,
    pub lost: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Dequeues since the last recorded sojourn sample.
    pub sojourn_skip: u32,
    /// Record every packet this link transmits (pcap export).
    pub capture: bool,
    /// When a pending [`Event::QdiscWake`](crate::event::Event) fires, if one
    /// is pending (at most one per link).
    pub wake_at: SimTime,
    /// Start and end of the current packet's serialization (for counting
    /// the bytes on the wire at any instant).
    pub tx_span: (SimTime, SimTime),
    /// Who releases the pipe's packets when they fall due (`forwarder.rs`).
    pub forwarder: Forwarder,
}

/// A timed change to a link (`schedule = [{ at, rate | qdisc | change }]`).
#[derive(Clone, Debug, PartialEq)]
pub enum LinkStep {
    /// New serialization rate.
    Rate(Rate),
    /// `tc qdisc replace`: queued packets are discarded (counted as drops)
    /// and the new qdisc starts from fresh state.
    Replace(QdiscConfig),
    /// `tc qdisc change`: the whole new configuration (already merged and
    /// validated); the qdisc keeps its packets and state.
    Change(QdiscConfig),
}

/// Header rewriting at a link's entrance: an iptables-style mangle of the
/// ECN field (every packet, CE included, gets `ecn`) and DSCP remarking.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Rewrite {
    pub ecn: Option<Ecn>,
    pub dscp: Option<u8>,
}

impl Rewrite {
    #[inline]
    pub fn apply(&self, p: &mut Packet) {
        if let Some(e) = self.ecn {
            p.ecn = e;
        }
        if let Some(d) = self.dscp {
            p.dscp = d;
        }
    }
    pub fn is_noop(&self) -> bool {
        self.ecn.is_none() && self.dscp.is_none()
    }
}

impl Link {
    /// A link with qdisc `q`; its RNG stream is `link:<name>` under `seed`.
    pub fn new(seed: u64, name: &str, rate: Option<Rate>, delay: Dur, loss: f64, q: &QdiscConfig, internal: bool) -> Link {
        let mut rng = SimRng::for_component(seed, &format!("link:{name}"));
        Link {
            name: name.to_string(),
            internal,
            qdisc_name: q.name(),
            qdisc: q.build(&mut rng),
            stats: QdiscStats::default(),
            rate: rate.unwrap_or(Rate::UNLIMITED),
            shaped: q.shaped_rate(),
            delay,
            loss,
            rng,
            schedule: VecDeque::new(),
            rewrite: Rewrite::default(),
            tx: None,
            pipe: VecDeque::new(),
            arrivals: 0,
            lost: 0,
            tx_pkts: 0,
            tx_bytes: 0,
            sojourn_skip: 0,
            capture: false,
            wake_at: SimTime::NEVER,
            tx_span: (SimTime::ZERO, SimTime::ZERO),
            forwarder: Forwarder::Exact,
        }
    }

    /// A flow's access link: unlimited rate, a pure delay, never drops.
    pub fn access(seed: u64, name: &str, delay: Dur) -> Link {
        Link::new(seed, name, None, delay, 0.0, &QdiscConfig::Pfifo(PfifoConfig { limit: u64::MAX }), true)
    }

    /// A packet arrives at `now`: counted, its header rewritten, lost at the
    /// link's random loss rate, else stamped and enqueued. False if lost.
    #[inline]
    pub fn enqueue(&mut self, now: SimTime, mut pkt: Packet) -> bool {
        self.arrivals += 1;
        self.rewrite.apply(&mut pkt);
        if self.loss > 0.0 && self.rng.bernoulli(self.loss) {
            self.lost += 1;
            return false;
        }
        pkt.enq_at = now;
        let (q, mut cx) = self.cx(now);
        q.enqueue(pkt, &mut cx);
        true
    }

    /// Apply one step of the link's schedule at `now`.
    pub fn apply(&mut self, now: SimTime, step: LinkStep) {
        match step {
            LinkStep::Rate(r) => self.rate = r,
            LinkStep::Replace(cfg) => {
                self.qdisc.replace(&cfg, &mut self.rng, &mut self.stats);
                self.shaped = cfg.shaped_rate();
            }
            LinkStep::Change(cfg) => {
                let (q, mut cx) = self.cx(now);
                q.change(&cfg, &mut cx).expect("qdisc changes are validated with the scenario");
                self.shaped = cfg.shaped_rate();
            }
        }
    }

    /// The rate that limits what the link carries: the slower of its line
    /// rate and its qdisc's shaper (a 10 Mbit/s Cake on a 1 Gbit/s wire:
    /// 10 Mbit/s); [`Rate::UNLIMITED`] if neither limits it.
    pub fn capacity(&self) -> Rate {
        match (self.rate.is_unlimited(), self.shaped) {
            (true, Some(s)) => s,
            (false, Some(s)) if !s.is_unlimited() => s.min(self.rate),
            _ => self.rate,
        }
    }

    pub fn cx(&mut self, now: SimTime) -> (&mut AnyQdisc, Cx<'_>) {
        (&mut self.qdisc, Cx { now, rng: &mut self.rng, stats: &mut self.stats })
    }
    pub fn busy(&self) -> bool {
        self.tx.is_some()
    }
    /// Packets and bytes in the qdisc.
    pub fn backlog(&self) -> (usize, u64) {
        (self.qdisc.len(), self.qdisc.bytes())
    }
    /// Packets held by this link anywhere: queued, on the wire, in the pipe.
    pub fn held(&self) -> u64 {
        self.qdisc.len() as u64 + u64::from(self.tx.is_some()) + self.pipe.len() as u64
    }
    /// Heap the packets held take (for the memory guard): the qdisc's by
    /// count, the pipe by its capacity, since a ring buffer in steady use
    /// touches all of its capacity.
    pub fn held_bytes(&self) -> u64 {
        let pipe = self.pipe.capacity() * std::mem::size_of::<(SimTime, Packet)>();
        (self.qdisc.len() as u64 + u64::from(self.tx.is_some())) * crate::guard::PACKET_BYTES + pipe as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::Qdisc;

    /// Link `l` of a one-link scenario, `keys` its TOML lines after the id.
    fn link(keys: &str) -> Link {
        let text = format!("name='t'\nduration='3s'\n[[links]]\nid='l'\n{keys}\n[[flows]]\nid='f'\npath=['l']\n");
        crate::scenario::parse(&text, "t.toml", &[]).unwrap().scenario.links[0].build_link(7)
    }

    fn pkt(ecn: Ecn) -> Packet {
        Packet { size: 1514, ecn, dscp: 10, ..Default::default() }
    }

    /// An arriving packet is counted, rewritten, stamped and queued; the
    /// rewrite covers CE and Not-ECT packets alike.
    #[test]
    fn enqueue_rewrites_stamps_and_counts() {
        let mut l = link("rate='10Mbit'\nrewrite = { ecn = 'ect1', dscp = 0 }");
        assert!(!l.rewrite.is_noop());
        for (i, e) in [Ecn::NotEct, Ecn::Ce].into_iter().enumerate() {
            assert!(l.enqueue(SimTime(1_000 * (i as u64 + 1)), pkt(e)));
        }
        assert_eq!((l.arrivals, l.lost, l.backlog()), (2, 0, (2, 2 * 1514)));
        let (q, mut cx) = l.cx(SimTime(5_000));
        let p = q.dequeue(&mut cx).unwrap();
        assert_eq!((p.ecn, p.dscp, p.enq_at), (Ecn::Ect1, 0, SimTime(1_000)));
        assert!(link("rate='10Mbit'").rewrite.is_noop());
        assert!(!link("rate='10Mbit'\nrewrite = { dscp = 4 }").rewrite.is_noop());
    }

    /// Random loss on arrival: counted as lost, never queued; about `loss` of
    /// the packets (seeded, so exact for this seed but checked as a rate).
    #[test]
    fn enqueue_drops_at_the_loss_rate() {
        let mut l = link("rate='10Mbit'\nloss=0.25\nqdisc={kind='pfifo', limit=100000}");
        let kept = (0..4000).filter(|&k| l.enqueue(SimTime(k), pkt(Ecn::NotEct))).count() as u64;
        assert_eq!(l.arrivals, 4000);
        assert_eq!(kept + l.lost, 4000);
        assert_eq!(l.backlog().0 as u64, kept);
        assert!((900..1100).contains(&l.lost), "lost {}", l.lost);
    }

    /// Schedule steps: a rate change, a `tc qdisc replace` (queued packets
    /// dropped, counted) and a `change` keeping the queue.
    #[test]
    fn apply_rate_replace_and_change() {
        let mut l = link(
            "rate='10Mbit'\nqdisc={kind='tbf', rate='10Mbit', burst='5000b', limit='100000b'}\n\
             schedule=[{at='1s', rate='20Mbit'}, {at='2s', change={rate='5Mbit'}}, {at='3s', qdisc={kind='pfifo'}}]",
        );
        assert_eq!(l.schedule.len(), 3);
        let steps: Vec<_> = l.schedule.drain(..).collect();
        l.apply(steps[0].0, steps[0].1.clone());
        assert_eq!(l.rate.bps(), 20_000_000);
        for _ in 0..5 {
            l.enqueue(SimTime(1), pkt(Ecn::NotEct));
        }
        l.apply(steps[1].0, steps[1].1.clone());
        assert_eq!((l.backlog().0, l.stats.drops()), (5, 0), "a change keeps the queue");
        l.apply(steps[2].0, steps[2].1.clone());
        assert_eq!((l.backlog().0, l.stats.drops()), (0, 5), "a replacement drops it");
    }

    /// What a link holds: queued, on the wire (busy), in the pipe.
    #[test]
    fn held_counts_queue_wire_and_pipe() {
        let mut l = link("rate='10Mbit'");
        for k in 0..3 {
            l.enqueue(SimTime(k), pkt(Ecn::NotEct));
        }
        assert!(!l.busy() && l.held() == 3);
        let (q, mut cx) = l.cx(SimTime(10));
        l.tx = q.dequeue(&mut cx);
        assert!(l.busy() && l.held() == 3);
        l.pipe.push_back((SimTime(99), l.tx.take().unwrap()));
        l.pipe.push_back((SimTime(99), pkt(Ecn::NotEct)));
        assert!(!l.busy() && l.held() == 4);
    }

    /// An access link: unlimited rate, a pure delay, a queue without limit,
    /// not one of the scenario's links.
    #[test]
    fn access_links_are_pure_delays() {
        let mut l = Link::access(1, "f.access", Dur::from_millis(30));
        assert!(l.rate.is_unlimited() && l.internal && l.loss == 0.0);
        assert_eq!((l.delay, l.name.as_str(), l.qdisc_name), (Dur::from_millis(30), "f.access", "pfifo"));
        for k in 0..5000 {
            assert!(l.enqueue(SimTime(k), pkt(Ecn::NotEct)));
        }
        assert_eq!(l.backlog().0, 5000);
        assert!(!link("rate='10Mbit'").internal);
    }
}
