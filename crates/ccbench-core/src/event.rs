//! The event queue: a binary heap keyed by (time, insertion sequence), so
//! simultaneous events always run in the order they were scheduled.

use std::cmp::Reverse;
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
    /// Periodic metrics sampling.
    Sample,
    /// The warm-up ends: snapshot counters that summaries measure from.
    Warmup,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key(SimTime, u64);

pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Key, Event)>>,
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
        EventQueue { heap: BinaryHeap::with_capacity(1024), seq: 0, popped: 0 }
    }
    #[inline]
    pub fn push(&mut self, at: SimTime, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((Key(at, self.seq), ev)));
    }
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let Reverse((Key(t, _), ev)) = self.heap.pop()?;
        self.popped += 1;
        Some((t, ev))
    }
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse((Key(t, _), _))| *t)
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
}
