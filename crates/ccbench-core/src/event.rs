//! The event queue: a 4-ary min-heap keyed by (time, insertion sequence), so
//! simultaneous events always run in the order they were scheduled.
//!
//! Keys are compared as one `u128` (time in the high 64 bits, sequence in
//! the low 64), so each comparison is a single integer compare and the order
//! is exactly the lexicographic (time, seq) order of the former
//! `BinaryHeap<Reverse<(Key, Event)>>` (a property test checks this against
//! that reference). Four children per node halve the depth of a binary heap:
//! a pop does fewer levels of (cache-missing) moves, and the four children of
//! a node sit next to each other in memory. Sift-up/down move a hole instead
//! of swapping. Units: time in ns (`SimTime`); sequence numbers are a
//! per-queue counter starting at 1.

use crate::packet::{FlowId, LinkId};
use crate::units::SimTime;

/// Which endpoint of a flow a timer belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    Sender,
    Receiver,
}

/// What happens. Targets are arena indices; events carry no packets (those
/// wait in their component, which schedules only its head).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The link's serializer finished the packet on the wire.
    TxDone(LinkId),
    /// The head of the link's propagation pipe reaches the next hop.
    Arrive(LinkId),
    /// A link's rate changes to the next step of its schedule.
    RateStep(LinkId),
    /// A non-work-conserving qdisc may release a packet now (its watchdog).
    QdiscWake(LinkId),
    /// A flow endpoint's timer (RTO, delayed ACK, pacing, probe interval).
    Timer(FlowId, End),
    /// A flow's application starts or stops.
    Start(FlowId),
    Stop(FlowId),
    /// Periodic metrics sampling.
    Sample,
    /// The warm-up ends: snapshot counters that summaries measure from.
    Warmup,
}

/// Arity of the heap.
const D: usize = 4;

/// One scheduled event. 24 bytes: the key is two `u64`s rather than a `u128`
/// (whose 16-byte alignment would pad an entry to 32).
#[derive(Copy, Clone)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Event,
}

impl Entry {
    /// `(time, seq)` as one integer: smaller runs first.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

pub struct EventQueue {
    heap: Vec<Entry>,
    seq: u64,
    popped: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue { heap: Vec::with_capacity(1024), seq: 0, popped: 0 }
    }
    #[inline]
    pub fn push(&mut self, at: SimTime, ev: Event) {
        self.seq += 1;
        let e = Entry { time: at.0, seq: self.seq, ev };
        let key = e.key();
        let mut i = self.heap.len();
        self.heap.push(e);
        let heap = &mut self.heap[..=i];
        // Sift the hole up until the parent is smaller.
        while i > 0 {
            let parent = (i - 1) / D;
            let pe = heap[parent];
            if pe.key() <= key {
                break;
            }
            heap[i] = pe;
            i = parent;
        }
        heap[i] = e;
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let last = self.heap.pop()?;
        self.popped += 1;
        let heap = &mut self.heap[..];
        let n = heap.len();
        let Some(&top) = heap.first() else {
            return Some((SimTime(last.time), last.ev));
        };
        // Sift a hole from the root down, then drop `last` into it. Keys are
        // unique (seq), so which of two equal children wins never matters.
        let key = last.key();
        let mut i = 0;
        loop {
            let first = i * D + 1;
            let best = if first + D <= n {
                // All four children: a two-round tournament on one bounds check.
                let c: &[Entry; D] = heap[first..first + D].try_into().expect("four children");
                let (a, ka) = if c[1].key() < c[0].key() { (1, c[1].key()) } else { (0, c[0].key()) };
                let (b, kb) = if c[3].key() < c[2].key() { (3, c[3].key()) } else { (2, c[2].key()) };
                let (m, km) = if kb < ka { (b, kb) } else { (a, ka) };
                if key <= km {
                    break;
                }
                first + m
            } else if first < n {
                let mut m = first;
                for c in first + 1..n {
                    if heap[c].key() < heap[m].key() {
                        m = c;
                    }
                }
                if key <= heap[m].key() {
                    break;
                }
                m
            } else {
                break;
            };
            heap[i] = heap[best];
            i = best;
        }
        heap[i] = last;
        Some((SimTime(top.time), top.ev))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| SimTime(e.time))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Events executed so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_run_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), Event::Sample);
        q.push(SimTime(3), Event::TxDone(LinkId(2)));
        q.push(SimTime(3), Event::TxDone(LinkId(1)));
        q.push(SimTime(3), Event::Arrive(LinkId(0)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (SimTime(3), Event::TxDone(LinkId(2))),
                (SimTime(3), Event::TxDone(LinkId(1))),
                (SimTime(3), Event::Arrive(LinkId(0))),
                (SimTime(5), Event::Sample)
            ]
        );
    }

    /// The 4-ary heap pops in exactly the order of the reference ordering,
    /// a `BinaryHeap` of (time, seq), for random interleavings of pushes and
    /// pops with many equal times (ties must keep insertion order).
    #[test]
    fn matches_binary_heap_reference_order() {
        use crate::rng::SimRng;
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for seed in 1..=5u64 {
            let mut rng = SimRng::for_component(seed, "event-queue-test");
            let mut q = EventQueue::new();
            let mut reference: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for step in 0..200_000u32 {
                // Push-biased early, pop-biased later, so the heap grows to
                // thousands of entries and drains again.
                let push_p = if step < 100_000 { 0.6 } else { 0.4 };
                if rng.uniform() < push_p || reference.is_empty() {
                    // Times at or after `now`, from a small range: many ties.
                    let t = now + (rng.uniform() * 50.0) as u64;
                    let ev = Event::TxDone(LinkId(step));
                    seq += 1;
                    q.push(SimTime(t), ev);
                    reference.push(Reverse((t, seq, ev)));
                } else {
                    let Reverse((t, _, ev)) = reference.pop().unwrap();
                    assert_eq!(q.peek_time(), Some(SimTime(t)), "seed {seed} step {step}");
                    assert_eq!(q.pop(), Some((SimTime(t), ev)), "seed {seed} step {step}");
                    now = t;
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse((t, _, ev))) = reference.pop() {
                assert_eq!(q.pop(), Some((SimTime(t), ev)));
            }
            assert!(q.is_empty() && q.pop().is_none());
        }
    }
}
