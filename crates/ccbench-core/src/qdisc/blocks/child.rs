//! A child qdisc under a classful or shaping parent (TBF, HTB leaf, netem),
//! with Linux's peek: `qdisc_peek_dequeued` dequeues the child's head and
//! keeps it aside (`gso_skb`) until the parent takes it, so a shaper can look
//! at the head's length and a child AQM decides at peek time, as in Linux.

use crate::packet::Packet;
use crate::qdisc::{AnyQdisc, Cx, Qdisc, QdiscConfig};
use crate::rng::SimRng;
use crate::units::SimTime;

pub struct Child {
    q: Box<AnyQdisc>,
    peeked: Option<Packet>,
}

impl Child {
    pub fn new(cfg: &QdiscConfig, rng: &mut SimRng) -> Child {
        Child {
            q: Box::new(cfg.build(rng)),
            peeked: None,
        }
    }
    pub fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        self.q.enqueue(pkt, cx);
    }
    /// The head packet, pulled from the child and held until taken.
    pub fn peek(&mut self, cx: &mut Cx) -> Option<&Packet> {
        if self.peeked.is_none() {
            self.peeked = self.q.dequeue(cx);
        }
        self.peeked.as_ref()
    }
    /// Take the peeked packet, or dequeue one.
    pub fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.peeked.take().or_else(|| self.q.dequeue(cx))
    }
    pub fn len(&self) -> usize {
        self.q.len() + usize::from(self.peeked.is_some())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn bytes(&self) -> u64 {
        self.q.bytes() + self.peeked.as_ref().map_or(0, |p| u64::from(p.size))
    }
    /// The child's own wake-up (a netem child holding delayed packets).
    pub fn next_wakeup(&self) -> Option<SimTime> {
        if self.peeked.is_some() {
            None
        } else {
            self.q.next_wakeup()
        }
    }
    pub fn change(&mut self, cfg: &QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        self.q.change(cfg, cx)
    }
    pub fn probe(&mut self, now: SimTime) -> crate::qdisc::QdiscProbe {
        self.q.probe(now)
    }
    pub fn qdisc(&self) -> &AnyQdisc {
        &self.q
    }
}
