//! The floor a packet-level simulator of a dumbbell can reach: the events
//! and queue moves of B1/B3's packets with nothing else. Each flow keeps a
//! fixed window of full-size segments in flight; a data packet is queued at
//! the bottleneck (a FIFO), serialized (an event), propagated (an event)
//! and counted by its receiver, which sends an ACK every second segment
//! over the return link (serialized and propagated the same way); each ACK
//! releases two segments. No congestion control, AQM, SACK, timers or
//! metrics. `make bench` runs it beside the engine to show how far the
//! engine's time per packet is from this one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

const DATA: u64 = 1514; // bytes on the wire, as the engine's MSS-sized segment
const ACK: u64 = 66;

#[derive(Clone, Copy)]
struct Pkt {
    flow: u32,
    seq: u64,
}

struct Link {
    rate_bps: u64,
    delay: u64,
    size: u64,
    queue: VecDeque<Pkt>,
    busy: Option<Pkt>,
    pipe: VecDeque<(u64, Pkt)>,
}

impl Link {
    fn new(rate_bps: u64, delay: u64, size: u64) -> Link {
        Link { rate_bps, delay, size, queue: VecDeque::new(), busy: None, pipe: VecDeque::new() }
    }
    fn tx_ns(&self) -> u64 {
        self.size * 8 * 1_000_000_000 / self.rate_bps
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    TxDone(u8),
    Arrive(u8),
}

struct Sim {
    q: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    links: [Link; 2],
    next_seq: Vec<u64>,
    received: Vec<u64>,
    events: u64,
    bottleneck_pkts: u64,
}

impl Sim {
    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.q.push(Reverse((t, self.seq, ev)));
    }
    fn enqueue(&mut self, now: u64, l: u8, p: Pkt) {
        let link = &mut self.links[l as usize];
        link.queue.push_back(p);
        if link.busy.is_none() {
            self.start(now, l);
        }
    }
    fn start(&mut self, now: u64, l: u8) {
        let link = &mut self.links[l as usize];
        if let Some(p) = link.queue.pop_front() {
            link.busy = Some(p);
            let done = now + link.tx_ns();
            self.push(done, Ev::TxDone(l));
        }
    }
    fn send(&mut self, now: u64, flow: u32) {
        let seq = self.next_seq[flow as usize];
        self.next_seq[flow as usize] += 1;
        self.enqueue(now, 0, Pkt { flow, seq });
    }
    fn run(&mut self, end: u64) {
        while let Some(Reverse((now, _, ev))) = self.q.pop() {
            if now > end {
                break;
            }
            self.events += 1;
            match ev {
                Ev::TxDone(l) => {
                    let link = &mut self.links[l as usize];
                    let p = link.busy.take().expect("a packet on the wire");
                    let at = now + link.delay;
                    let was_empty = link.pipe.is_empty();
                    link.pipe.push_back((at, p));
                    if was_empty {
                        self.push(at, Ev::Arrive(l));
                    }
                    if l == 0 {
                        self.bottleneck_pkts += 1;
                    }
                    self.start(now, l);
                }
                Ev::Arrive(l) => {
                    let link = &mut self.links[l as usize];
                    let (_, p) = link.pipe.pop_front().expect("a packet in the pipe");
                    if let Some(&(next, _)) = link.pipe.front() {
                        self.push(next, Ev::Arrive(l));
                    }
                    if l == 0 {
                        // Receiver: an ACK every second segment.
                        let r = &mut self.received[p.flow as usize];
                        *r += 1;
                        if *r % 2 == 0 {
                            self.enqueue(now, 1, Pkt { flow: p.flow, seq: p.seq });
                        }
                    } else {
                        // Sender: each ACK releases two segments.
                        self.send(now, p.flow);
                        self.send(now, p.flow);
                    }
                }
            }
        }
    }
}

/// Runs the skeleton of a dumbbell (`rate_bps` both ways, `delay_ns` each
/// way, `flows` flows, `secs` simulated seconds); returns (wall seconds,
/// events, bottleneck packets).
pub fn run(rate_bps: u64, delay_ns: u64, flows: u64, secs: u64) -> (f64, u64, u64) {
    // Windows of one bandwidth-delay product plus a quarter of it queued, split over the flows.
    let bdp = rate_bps / 8 * 2 * delay_ns / 1_000_000_000 / DATA;
    let window = ((bdp + bdp / 4) / flows).max(2);
    let t0 = Instant::now();
    let mut sim = Sim {
        q: BinaryHeap::new(),
        seq: 0,
        links: [Link::new(rate_bps, delay_ns, DATA), Link::new(rate_bps, delay_ns, ACK)],
        next_seq: vec![0; flows as usize],
        received: vec![0; flows as usize],
        events: 0,
        bottleneck_pkts: 0,
    };
    for f in 0..flows as u32 {
        for _ in 0..window {
            sim.send(0, f);
        }
    }
    sim.run(secs * 1_000_000_000);
    (t0.elapsed().as_secs_f64(), sim.events, sim.bottleneck_pkts)
}
