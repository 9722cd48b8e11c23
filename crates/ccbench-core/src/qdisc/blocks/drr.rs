//! DRR++ over hashed flow buckets: the scheduler of RFC 8290 §4.2–4.3 as
//! Linux runs it in net/sched/sch_fq_pie.c `fq_pie_qdisc_dequeue` and
//! net/sched/sch_fq_codel.c `fq_codel_dequeue`.
//!
//! The block owns only the scheduling state: each bucket's deficit and
//! which list it is on (new, old or none), and the two lists. The qdisc
//! owns the packets; it tells the block when a bucket receives a packet
//! ([`Drr::on_enqueue`]) and lends it a `pop(bucket)` closure on dequeue
//! ([`Drr::dequeue`]). `pop` may drop packets on the way (CoDel) and
//! returns `None` once the bucket is empty.
//!
//! Rules: a bucket on no list that receives a packet joins the tail of the
//! new list with a full quantum. Dequeue serves the head of the new list,
//! else of the old list; a head with deficit ≤ 0 gets a quantum more and
//! moves to the tail of the old list; a head that turns out empty leaves
//! its list, except that an emptied *new* bucket moves to the old list
//! while that list is non-empty (so a flow cannot regain new-list priority
//! at once; RFC 8290 §4.2). A served packet costs its size in deficit.
//!
//! Units: deficits and the quantum in bytes (may go negative).
//!
//! Used by fq_codel (`pop` = the flow's CoDel dequeue) and FQ-PIE (`pop` =
//! the flow's FIFO head); Cake's per-tin scheduler can use it the same way.

use std::collections::VecDeque;

use crate::packet::Packet;

/// Which list a bucket is on (Linux: `flowchain` membership).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum List {
    #[default]
    None,
    New,
    Old,
}

#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    deficit: i64,
    list: List,
}

/// # Invariants
/// A bucket is on at most one list, at most once, and `Slot::list` says
/// which.
pub struct Drr {
    slots: Vec<Slot>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    quantum: i64,
    new_flow_count: u64,
}

impl Drr {
    /// `buckets` buckets, all idle, each served `quantum` bytes per round.
    pub fn new(buckets: usize, quantum: i64) -> Drr {
        Drr {
            slots: vec![Slot::default(); buckets],
            new_flows: VecDeque::with_capacity(buckets),
            old_flows: VecDeque::with_capacity(buckets),
            quantum,
            new_flow_count: 0,
        }
    }

    /// Bucket `idx` received a packet. Returns true if it became a new flow.
    #[inline]
    pub fn on_enqueue(&mut self, idx: usize) -> bool {
        let s = &mut self.slots[idx];
        if s.list != List::None {
            return false;
        }
        s.list = List::New;
        s.deficit = self.quantum;
        self.new_flows.push_back(idx as u32);
        self.new_flow_count += 1;
        true
    }

    /// The next packet by DRR++, taken from its bucket with `pop`. A bucket
    /// that sends stays where it is, at the head of its list.
    pub fn dequeue(&mut self, mut pop: impl FnMut(usize) -> Option<Packet>) -> Option<Packet> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let s = &mut self.slots[idx as usize];
            if s.deficit > 0 {
                if let Some(p) = pop(idx as usize) {
                    s.deficit -= i64::from(p.size);
                    return Some(p);
                }
            }
            if from_new {
                self.new_flows.pop_front();
            } else {
                self.old_flows.pop_front();
            }
            if s.deficit <= 0 {
                // Out of credit: top up, to the back of the old list.
                s.deficit += self.quantum;
                s.list = List::Old;
                self.old_flows.push_back(idx);
            } else if from_new && !self.old_flows.is_empty() {
                // Empty: through the old list first if that is busy.
                s.list = List::Old;
                self.old_flows.push_back(idx);
            } else {
                s.list = List::None;
            }
        }
    }

    pub fn list(&self, idx: usize) -> List {
        self.slots[idx].list
    }
    pub fn deficit(&self, idx: usize) -> i64 {
        self.slots[idx].deficit
    }
    pub fn new_flows(&self) -> &VecDeque<u32> {
        &self.new_flows
    }
    pub fn old_flows(&self) -> &VecDeque<u32> {
        &self.old_flows
    }
    /// Buckets that became active since creation (Linux `new_flow_count`).
    pub fn new_flow_count(&self) -> u64 {
        self.new_flow_count
    }
    /// Bytes each bucket is credited per round.
    pub fn quantum(&self) -> i64 {
        self.quantum
    }
    /// A new quantum for the next top-ups (`tc qdisc change ... quantum`);
    /// deficits already granted stay.
    pub fn set_quantum(&mut self, quantum: i64) {
        self.quantum = quantum;
    }
    pub fn buckets(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::pkt;

    /// Buckets of packets (tuple = bucket, size as given).
    struct Queues(Vec<VecDeque<Packet>>);
    impl Queues {
        fn new(n: usize) -> Self {
            Queues((0..n).map(|_| VecDeque::new()).collect())
        }
        fn push(&mut self, drr: &mut Drr, b: usize, size: u32) {
            let mut p = pkt(b as u32, Ecn::NotEct);
            p.size = size;
            self.0[b].push_back(p);
            drr.on_enqueue(b);
        }
        fn serve(&mut self, drr: &mut Drr) -> Option<usize> {
            drr.dequeue(|b| self.0[b].pop_front()).map(|p| p.tuple as usize)
        }
    }

    #[test]
    fn equal_packets_alternate_and_unequal_sizes_share_bytes() {
        let mut d = Drr::new(4, 1514);
        let mut q = Queues::new(4);
        for _ in 0..6 {
            q.push(&mut d, 0, 1514);
            q.push(&mut d, 1, 1514);
        }
        let order: Vec<usize> = (0..12).map(|_| q.serve(&mut d).unwrap()).collect();
        assert_eq!(order, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
        // 1514-byte packets against 500-byte ones: bytes stay within a quantum.
        let mut d = Drr::new(4, 1514);
        let mut q = Queues::new(4);
        for _ in 0..300 {
            q.push(&mut d, 2, 1514);
            q.push(&mut d, 3, 500);
            q.push(&mut d, 3, 500);
            q.push(&mut d, 3, 500);
        }
        let mut bytes = [0i64; 4];
        for _ in 0..400 {
            let b = q.serve(&mut d).unwrap();
            bytes[b] += if b == 2 { 1514 } else { 500 };
            assert!((bytes[2] - bytes[3]).abs() <= 2 * 1514, "{bytes:?}");
        }
    }

    #[test]
    fn a_new_flow_is_served_before_the_old_ones() {
        let mut d = Drr::new(3, 1514);
        let mut q = Queues::new(3);
        for _ in 0..5 {
            q.push(&mut d, 0, 1514);
            q.push(&mut d, 1, 1514);
        }
        for _ in 0..4 {
            q.serve(&mut d);
        }
        assert!(d.new_flows().is_empty(), "0 and 1 spent their quantum");
        q.push(&mut d, 2, 100);
        assert_eq!(d.list(2), List::New);
        assert_eq!(q.serve(&mut d), Some(2));
        assert_eq!(d.new_flow_count(), 3);
    }

    #[test]
    fn an_emptied_new_flow_passes_through_a_busy_old_list() {
        let mut d = Drr::new(3, 1514);
        let mut q = Queues::new(3);
        for _ in 0..5 {
            q.push(&mut d, 0, 1514);
            q.push(&mut d, 1, 1514);
        }
        for _ in 0..4 {
            q.serve(&mut d); // 0 and 1 now cycle on the old list
        }
        q.push(&mut d, 2, 100);
        assert_eq!(q.serve(&mut d), Some(2));
        // 2 has credit left but is empty: it moves to the old list.
        assert_ne!(q.serve(&mut d), Some(2));
        assert_eq!(d.list(2), List::Old);
        assert!(d.old_flows().contains(&2) && d.new_flows().is_empty());
        // Its next packet does not make it new again, and keeps its credit.
        q.push(&mut d, 2, 100);
        assert_eq!((d.list(2), d.deficit(2), d.new_flow_count()), (List::Old, 1514 - 100, 3));
    }

    #[test]
    fn an_emptied_new_flow_is_forgotten_when_the_old_list_is_empty() {
        let mut d = Drr::new(2, 1514);
        let mut q = Queues::new(2);
        q.push(&mut d, 0, 100);
        assert_eq!(q.serve(&mut d), Some(0));
        assert_eq!(q.serve(&mut d), None);
        assert_eq!(d.list(0), List::None);
        assert!(d.old_flows().is_empty() && d.new_flows().is_empty());
        q.push(&mut d, 0, 100);
        assert_eq!((d.list(0), d.deficit(0), d.new_flow_count()), (List::New, 1514, 2));
    }

    #[test]
    fn pop_may_drop_and_the_scheduler_moves_on() {
        // A bucket whose pop discards everything (CoDel dropping its whole
        // queue) is treated as empty.
        let mut d = Drr::new(2, 1514);
        let mut q = Queues::new(2);
        q.push(&mut d, 0, 1514);
        q.push(&mut d, 1, 1514);
        let got = d.dequeue(|b| {
            if b == 0 {
                q.0[0].clear();
                None
            } else {
                q.0[b].pop_front()
            }
        });
        assert_eq!(got.map(|p| p.tuple), Some(1));
        // 0 was new and the old list empty: it leaves the lists.
        assert_eq!(d.list(0), List::None);
        assert_eq!(d.list(1), List::New);
    }
}
