//! pfifo and bfifo (Linux net/sched/sch_fifo.c): tail-drop FIFOs limited in
//! packets or in bytes. Defaults follow an interface with txqueuelen 1000:
//! pfifo limit 1000 packets, bfifo limit 1000 × 1514 bytes. No ECN.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Cx, DropReason, Qdisc, PSCHED_MTU};
use crate::packet::Packet;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfifoConfig {
    /// Packets (tc `pfifo limit N`).
    pub limit: u64,
}
impl Default for PfifoConfig {
    fn default() -> Self {
        PfifoConfig { limit: 1000 }
    }
}
impl PfifoConfig {
    pub fn build(&self) -> Fifo {
        Fifo::new(FifoLimit::Packets(self.limit))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BfifoConfig {
    /// Bytes (tc `bfifo limit BYTES`).
    pub limit: crate::units::Bytes,
}
impl Default for BfifoConfig {
    fn default() -> Self {
        BfifoConfig { limit: crate::units::Bytes(1000 * u64::from(PSCHED_MTU)) }
    }
}
impl BfifoConfig {
    pub fn build(&self) -> Fifo {
        Fifo::new(FifoLimit::Bytes(self.limit.0))
    }
}

#[derive(Copy, Clone, Debug)]
pub enum FifoLimit {
    Packets(u64),
    Bytes(u64),
}

pub struct Fifo {
    q: VecDeque<Packet>,
    bytes: u64,
    limit: FifoLimit,
}

impl Fifo {
    pub fn new(limit: FifoLimit) -> Fifo {
        Fifo { q: VecDeque::with_capacity(256), bytes: 0, limit }
    }
}

impl Qdisc for Fifo {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let fits = match self.limit {
            FifoLimit::Packets(n) => (self.q.len() as u64) < n,
            FifoLimit::Bytes(b) => self.bytes + u64::from(pkt.size) <= b,
        };
        if fits {
            self.bytes += u64::from(pkt.size);
            self.q.push_back(pkt);
        } else {
            cx.drop(pkt, DropReason::Overlimit);
        }
    }
    fn dequeue(&mut self, _cx: &mut Cx) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= u64::from(p.size);
        Some(p)
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    /// `tc qdisc change ... limit N`: the new limit applies to arrivals.
    fn change(&mut self, cfg: &super::QdiscConfig, _cx: &mut Cx) -> Result<(), String> {
        self.limit = match cfg {
            super::QdiscConfig::Pfifo(c) => FifoLimit::Packets(c.limit),
            super::QdiscConfig::Bfifo(c) => FifoLimit::Bytes(c.limit.0),
            _ => return Err("`change` cannot switch the qdisc kind".into()),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};
    use crate::units::SimTime;

    #[test]
    fn pfifo_tail_drops_at_limit() {
        let mut h = Harness::new();
        let mut q = PfifoConfig { limit: 3 }.build();
        for i in 0..5 {
            h.enq(&mut q, SimTime(0), pkt(i, Ecn::NotEct));
        }
        assert_eq!(q.len(), 3);
        assert_eq!(h.stats.drops_overlimit, 2);
        // Head is the first packet: tail drop, not head drop.
        assert_eq!(h.deq(&mut q, SimTime(1)).unwrap().flow.0, 0);
    }

    #[test]
    fn bfifo_counts_bytes() {
        let mut h = Harness::new();
        let mut q = BfifoConfig { limit: crate::units::Bytes(3000) }.build();
        h.enq(&mut q, SimTime(0), pkt(0, Ecn::NotEct));
        h.enq(&mut q, SimTime(0), pkt(1, Ecn::NotEct));
        assert_eq!(q.len(), 1, "1514 + 1514 > 3000");
        assert_eq!(q.bytes(), 1514);
    }
}
