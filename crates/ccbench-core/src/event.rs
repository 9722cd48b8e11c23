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
//!
//! Only events before a horizon live in the heap; later ones wait outside
//! it and enter, keeping their sequence numbers, when the horizon moves past
//! them ([`WINDOW`] at a time). The order stays exactly (time, seq), and with
//! 1000 flows the heap holds tens of events instead of thousands. Outside
//! the heap, events due within a window after the horizon wait in a plain
//! list (packets and timers that crossed it: all of them enter at the next
//! move), and events due later (retransmission and delayed-ACK timers,
//! mostly) in a binary heap, from which a move takes only what it passes.
//! One unsorted list for both was scanned whole at every move, and a run
//! whose timers move at every ACK (the receiving host's ACK queue re-arms
//! the delayed-ACK timer each time it releases an ACK) keeps a thousand
//! superseded timers there: the scans were a tenth of such a run.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

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
    /// The forwarder of the `emulator` links wakes (`forwarder.rs`).
    Release,
    /// Periodic metrics sampling.
    Sample,
    /// The warm-up ends: snapshot counters that summaries measure from.
    Warmup,
}

/// Arity of the heap.
const D: usize = 4;

/// One scheduled event. 24 bytes: the key is two `u64`s rather than a `u128`
/// (whose 16-byte alignment would pad an entry to 32).
#[derive(Copy, Clone, PartialEq, Eq)]
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

/// Entries ordered by key (unique: equal keys are the same entry, as the
/// derived equality says).
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

/// How far past the earliest pending event the heap reaches, ns. Narrower
/// keeps the heap shallower and moves the horizon more often: callgrind
/// instructions with 1, 2 and 10 ms were B1 1.586/1.585/1.599 G, B3
/// 2.675/2.688/2.768 G, 1000 flows for 2 s 0.829/0.824/0.852 G (measured
/// when the events outside the heap were one unsorted list).
pub const WINDOW: u64 = 2_000_000;

pub struct EventQueue {
    heap: Vec<Entry>,
    /// Events in [horizon, horizon + window), in no order, and the earliest
    /// time among them (`u64::MAX` when empty).
    soon: Vec<Entry>,
    soon_min: u64,
    /// Events at or after horizon + window.
    later: BinaryHeap<Reverse<Entry>>,
    horizon: u64,
    window: u64,
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
        Self::with_window(WINDOW)
    }
    fn with_window(window: u64) -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            soon: Vec::new(),
            soon_min: u64::MAX,
            later: BinaryHeap::new(),
            horizon: 0,
            window,
            seq: 0,
            popped: 0,
        }
    }
    #[inline]
    pub fn push(&mut self, at: SimTime, ev: Event) {
        self.seq += 1;
        let e = Entry { time: at.0, seq: self.seq, ev };
        if e.time >= self.horizon {
            self.wait(e);
        } else {
            self.heap_push(e);
        }
    }
    /// Keep an event due at or after the horizon outside the heap.
    #[inline]
    fn wait(&mut self, e: Entry) {
        if e.time < self.horizon.saturating_add(self.window) {
            self.soon_min = self.soon_min.min(e.time);
            self.soon.push(e);
        } else {
            self.later.push(Reverse(e));
        }
    }
    /// The heap's head is the earliest event once no event outside precedes
    /// it: when the heap runs dry or reaches the horizon, move the horizon a
    /// window past the earliest pending event and take in what it passes.
    /// All of `soon` is then before the new horizon (the earliest pending
    /// event is at or after the old one), and the events of `later` within a
    /// window after it join `soon`.
    #[inline]
    fn refill(&mut self) {
        if self.heap.first().is_some_and(|e| e.time < self.horizon) || (self.soon.is_empty() && self.later.is_empty()) {
            return;
        }
        let head = self.heap.first().map_or(u64::MAX, |e| e.time);
        let later = self.later.peek().map_or(u64::MAX, |e| e.0.time);
        self.horizon = head.min(self.soon_min).min(later).saturating_add(self.window);
        let mut soon = std::mem::take(&mut self.soon);
        for e in soon.drain(..) {
            self.heap_push(e);
        }
        self.soon = soon;
        self.soon_min = u64::MAX;
        let next = self.horizon.saturating_add(self.window);
        while self.later.peek().is_some_and(|e| e.0.time < next) {
            let Reverse(e) = self.later.pop().expect("a later event");
            if e.time < self.horizon {
                self.heap_push(e);
            } else {
                self.wait(e);
            }
        }
    }
    #[inline(always)]
    fn heap_push(&mut self, e: Entry) {
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
        self.refill();
        self.pop_head()
    }
    /// The earliest event if it is due at or before `t` (one look at the
    /// head instead of a peek and a pop).
    #[inline]
    pub fn pop_due(&mut self, t: SimTime) -> Option<(SimTime, Event)> {
        self.refill();
        if self.heap.first()?.time > t.0 {
            return None;
        }
        self.pop_head()
    }
    #[inline(always)]
    fn pop_head(&mut self) -> Option<(SimTime, Event)> {
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
    /// The earliest pending time (the run loop uses [`Self::pop_due`]; the
    /// tests compare the head with a reference queue's).
    #[cfg(test)]
    fn peek_time(&mut self) -> Option<SimTime> {
        self.refill();
        self.heap.first().map(|e| SimTime(e.time))
    }
    pub fn len(&self) -> usize {
        self.heap.len() + self.far_len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Events waiting outside the heap.
    fn far_len(&self) -> usize {
        self.soon.len() + self.later.len()
    }
    /// Events executed so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timers far ahead stay out of the heap, and the horizon moves only when
    /// the heap runs out of events before it (a window at a time).
    #[test]
    fn far_events_wait_outside_the_heap() {
        let mut q = EventQueue::new();
        for i in 0..1000 {
            q.push(SimTime(200_000_000 + i), Event::Timer(FlowId(i as u32), End::Sender));
        }
        for t in [0, 1, 2] {
            q.push(SimTime(t), Event::Sample);
        }
        assert_eq!(q.pop(), Some((SimTime(0), Event::Sample)));
        assert_eq!((q.heap.len(), q.far_len(), q.horizon), (2, 1000, WINDOW));
        assert_eq!((q.soon.len(), q.later.len()), (0, 1000), "the timers wait sorted, beyond the next window");
        q.push(SimTime(5), Event::Sample);
        q.push(SimTime(WINDOW + 5), Event::Warmup);
        assert_eq!((q.heap.len(), q.far_len()), (3, 1001));
        assert_eq!((q.soon.len(), q.soon_min), (1, WINDOW + 5), "within a window past the horizon: the list");
        assert_eq!(q.pop(), Some((SimTime(1), Event::Sample)));
        assert_eq!(q.horizon, WINDOW, "the horizon stays while the heap has events before it");
        for t in [2, 5] {
            assert_eq!(q.pop_due(SimTime(t - 1)), None, "not due yet");
            assert_eq!(q.pop_due(SimTime(t)), Some((SimTime(t), Event::Sample)));
        }
        assert_eq!(q.pop_due(SimTime(WINDOW + 4)), None, "a far event is not due before its time either");
        assert_eq!(q.pop(), Some((SimTime(WINDOW + 5), Event::Warmup)));
        assert_eq!((q.horizon, q.far_len()), (2 * WINDOW + 5, 1000));
        assert_eq!((q.soon.len(), q.soon_min), (0, u64::MAX), "the list enters the heap whole at a move");
        assert_eq!(q.peek_time(), Some(SimTime(200_000_000)));
        assert_eq!((q.heap.len(), q.far_len()), (1000, 0));
        assert_eq!(q.popped(), 5);
    }

    /// An event due exactly a window past the horizon is beyond the window:
    /// it waits in the heap of later events, and once the horizon reaches
    /// its time it waits in the list, not in the main heap.
    #[test]
    fn events_at_a_boundary_wait_on_its_far_side() {
        let mut q = EventQueue::new();
        q.push(SimTime(0), Event::Sample);
        q.push(SimTime(WINDOW), Event::Warmup);
        q.push(SimTime(2 * WINDOW), Event::Timer(FlowId(1), End::Sender));
        assert_eq!((q.soon.len(), q.later.len()), (1, 2));
        assert_eq!(q.pop(), Some((SimTime(0), Event::Sample)));
        assert_eq!(q.horizon, WINDOW);
        assert_eq!((q.heap.len(), q.soon.len(), q.later.len()), (0, 1, 1), "at the new horizon: the list");
        q.push(SimTime(2 * WINDOW), Event::Timer(FlowId(2), End::Receiver));
        assert_eq!((q.soon.len(), q.later.len()), (1, 2), "a window past the horizon: the later heap");
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            rest,
            vec![
                (SimTime(WINDOW), Event::Warmup),
                (SimTime(2 * WINDOW), Event::Timer(FlowId(1), End::Sender)),
                (SimTime(2 * WINDOW), Event::Timer(FlowId(2), End::Receiver)),
            ]
        );
    }

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
        // Windows shorter and longer than the spread of the times, so events
        // wait outside the heap (both ways) and go straight into it.
        for (seed, window) in (1..=5u64).zip([WINDOW, 1, 16, 40, 400]) {
            let mut rng = SimRng::for_component(seed, "event-queue-test");
            let mut q = EventQueue::with_window(window);
            let mut reference: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for step in 0..200_000u32 {
                // Push-biased early, pop-biased later, so the heap grows to
                // thousands of entries and drains again.
                let push_p = if step < 100_000 { 0.6 } else { 0.4 };
                if rng.uniform() < push_p || reference.is_empty() {
                    // Times at or after `now`, from a small range (many ties),
                    // and one in ten much later (timers).
                    let spread = if rng.uniform() < 0.1 { 5000.0 } else { 50.0 };
                    let t = now + (rng.uniform() * spread) as u64;
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
