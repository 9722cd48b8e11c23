//! The simulator: arenas of links and flows, one event queue, and the loop
//! that moves packets between them. Components are addressed by index; each
//! has at most a couple of pending events (a link: serializer and pipe
//! head; an endpoint: one timer), so the heap stays small.

use crate::cc::CongestionControl;
use crate::event::{End, Event, EventQueue};
use crate::flow::{Endpoints, Flow};
use crate::forwarder::Release;
use crate::guard::Guard;
use crate::link::Link;
use crate::metrics::hist::LogHist;
use crate::metrics::summary::{self, EngineSummary, FlowSummary, HystartSummary, IntervalSummary, LinkSummary, MediaSummary, ProbeSummary, Quantiles, RttStats, SojournStats, Summary};
use crate::metrics::{Metrics, MetricsConfig, ROW_BYTES};
use crate::packet::{Dir, FlowId, Header, LinkId, Packet, Probe};
use crate::qdisc::{AnyQdisc, Qdisc};
use crate::tcp::receiver::TcpReceiver;
use crate::units::{Dur, Rate, SimTime};

pub struct Sim {
    pub name: String,
    pub seed: u64,
    pub now: SimTime,
    pub end: SimTime,
    q: EventQueue,
    pub links: Vec<Link>,
    pub flows: Vec<Flow>,
    pub metrics: Metrics,
    pub mcfg: MetricsConfig,
    /// Scratch buffer for packets an endpoint emits (reused, no allocation
    /// per packet).
    out: Vec<Packet>,
    /// The forwarder that releases the packets of links with one
    /// (`forwarder = "emulator"`), and a buffer for what it releases.
    fwd: Option<Release>,
    released: Vec<Packet>,
    /// Packets emitted by endpoints and delivered to endpoints.
    pub sent: u64,
    pub delivered: u64,
    /// Per link: bytes on the wire (completed plus the transmitted part of
    /// the packet being serialized) at the end of the warm-up.
    tx_at_warmup: Vec<f64>,
    /// Per link: counters at the end of the warm-up (see [`LinkCounts`]).
    link_at_warmup: Vec<LinkCounts>,
    /// Per flow: (retransmits, RTOs, CE marks) at the end of the warm-up.
    flow_at_warmup: Vec<[u64; 3]>,
    /// Per link: history of its capacity (time, [`Link::capacity`]: line
    /// rate or shaper, the slower), for utilization.
    capacity_history: Vec<Vec<(SimTime, Rate)>>,
    /// Per link: its line rate at the start (summary `rate_mbps`).
    start_rate: Vec<Rate>,
    /// Ids as the outputs number them: a TCP flow's index among TCP flows
    /// (summary `flows`), a prober's among probers (summary `probes`), a
    /// scenario link's among scenario links (summary `links`).
    pub out_id: Vec<u32>,
    pub link_out_id: Vec<u32>,
    started: bool,
    /// Memory, disk and clock limits, checked as the run goes; why it
    /// stopped early, if it did.
    pub guard: Guard,
    /// Per flow and named interval (see [`IntervalMarks`]).
    interval_marks: Vec<Vec<IntervalMarks>>,
    /// Per flow: a media flow's sampled sRTT (ms) after the warm-up.
    media_srtt: Vec<Vec<f64>>,
    /// Per flow: its goodput sampled each interval after the warm-up
    /// (Mbit/s, as the flow series records it), for the summary's spread.
    interval_goodput: Vec<Vec<f64>>,
    /// Per flow: a media sender's (`rtp_wait_total`, `packets_sent`) at the
    /// last sample, for the series' mean RTP-queue wait per interval.
    media_wait_mark: Vec<(Dur, u64)>,
}

/// A named interval's last (time s, delivered bytes) flow sample at or
/// before its start and its end.
type IntervalMarks = [Option<(f64, u64)>; 2];

/// Where tables go during a run: (bytes per chunk, sink); see
/// [`Metrics::take_chunks`]. `sink(name, chunk, done)` takes a chunk and
/// may put chunks it has finished with into `done`, whose buffers the
/// next chunks reuse ([`Metrics::recycle`]).
pub type Spill<'a> = (u64, &'a mut dyn FnMut(&'static str, crate::metrics::Table, &mut Vec<crate::metrics::Table>) -> bool);

/// The `flow` id of sojourn samples of packets that belong to no TCP flow
/// (probes).
pub const NO_FLOW: u32 = u32::MAX;

/// Global packet accounting: every packet an endpoint sent is delivered,
/// dropped or lost, or still held by a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conservation {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub held: u64,
    /// Extra copies made by links (netem `duplicate`): sent + duplicated =
    /// delivered + dropped + held.
    pub duplicated: u64,
}

impl Sim {
    pub fn new(name: String, seed: u64, duration: Dur, links: Vec<Link>, flows: Vec<Flow>, mcfg: MetricsConfig) -> Sim {
        let capacity_history = links.iter().map(|l| vec![(SimTime::ZERO, l.capacity())]).collect();
        let start_rate = links.iter().map(|l| l.rate).collect();
        let (mut tcp, mut ping) = (0u32, 0u32);
        let out_id = flows
            .iter()
            .map(|f| {
                let c = if f.is_flow() { &mut tcp } else { &mut ping };
                *c += 1;
                *c - 1
            })
            .collect();
        let mut user = 0u32;
        let link_out_id = links
            .iter()
            .map(|l: &Link| {
                user += u32::from(!l.internal);
                if l.internal { u32::MAX } else { user - 1 }
            })
            .collect();
        let fwd = links.iter().map(|l| l.forwarder).find(|f| !f.is_exact()).map(|f| Release::new(f, seed));
        Sim {
            out_id,
            link_out_id,
            name,
            seed,
            now: SimTime::ZERO,
            end: SimTime::ZERO + duration,
            q: EventQueue::new(),
            tx_at_warmup: vec![0.0; links.len()],
            interval_marks: flows.iter().map(|f| vec![[None; 2]; f.intervals.len()]).collect(),
            media_srtt: vec![Vec::new(); flows.len()],
            // Room for the run's samples after the warm-up (up to a bound), so
            // keeping them allocates nothing as the run goes.
            interval_goodput: flows
                .iter()
                .map(|f| {
                    let n = match (f.is_flow(), mcfg.interval.0) {
                        (true, i) if i > 0 => (duration.0.saturating_sub(mcfg.warmup.0) / i + 2).min(1024),
                        _ => 0,
                    };
                    Vec::with_capacity(n as usize)
                })
                .collect(),
            media_wait_mark: vec![(Dur::ZERO, 0); flows.len()],
            link_at_warmup: vec![LinkCounts::default(); links.len()],
            flow_at_warmup: vec![[0; 3]; flows.len()],
            capacity_history,
            start_rate,
            links,
            flows,
            metrics: Metrics::with_warmup(mcfg.warmup),
            mcfg,
            out: Vec::with_capacity(64),
            fwd,
            released: Vec::new(),
            sent: 0,
            delivered: 0,
            started: false,
            guard: Guard::default(),
        }
    }

    /// Events executed so far.
    pub fn events(&self) -> u64 {
        self.q.popped()
    }

    fn schedule_initial(&mut self) {
        self.started = true;
        for (i, f) in self.flows.iter().enumerate() {
            self.q.push(f.start, Event::Start(FlowId(i as u32)));
            if f.stop < self.end {
                self.q.push(f.stop, Event::Stop(FlowId(i as u32)));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if let Some(&(t, _)) = l.schedule.front() {
                self.q.push(t, Event::RateStep(LinkId(i as u32)));
            }
        }
        self.q.push(SimTime::ZERO, Event::Sample);
        if self.mcfg.warmup > Dur::ZERO {
            self.q.push(SimTime::ZERO + self.mcfg.warmup, Event::Warmup);
        }
    }

    /// Run to the end of the scenario.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    /// Run all events up to and including time `t` (at most the end).
    /// `should_stop` is polled every few thousand events (Ctrl-C).
    pub fn run_until(&mut self, t: SimTime) {
        self.run_until_with(t, &mut || false);
    }

    /// As [`run_until`](Self::run_until), returning false if `interrupt`
    /// asked to stop early.
    pub fn run_until_with(&mut self, t: SimTime, interrupt: &mut dyn FnMut() -> bool) -> bool {
        self.run_until_tick(t, &mut |_| interrupt())
    }

    /// As [`run_until_with`](Self::run_until_with); `tick` gets the current
    /// simulated time (for progress). Also stops, with `guard.stop` set,
    /// when the run outgrows its memory or disk limit or its clock stalls
    /// (see [`crate::guard`]).
    pub fn run_until_tick(&mut self, t: SimTime, tick: &mut dyn FnMut(SimTime) -> bool) -> bool {
        self.run_until_io(t, tick, None)
    }

    /// As [`run_until_tick`](Self::run_until_tick); with `spill = (bytes,
    /// sink)`, tables that buffer `bytes` or more are handed to `sink` as
    /// the run goes (see [`Metrics::take_chunks`]); a sink returning false
    /// stops the run.
    pub fn run_until_io(&mut self, t: SimTime, tick: &mut dyn FnMut(SimTime) -> bool, mut spill: Option<Spill<'_>>) -> bool {
        if !self.started {
            self.schedule_initial();
        }
        let t = t.min(self.end);
        if !self.memory_ok() {
            return false;
        }
        let mut n: u32 = 0;
        // `tick` also runs each time the clock passes another thousandth of the run, so
        // progress follows simulated time (a short run reports as a long one does).
        let step = Dur::from_nanos((self.end.0 / 1000).max(1));
        let mut next_tick = self.now + step;
        while let Some((at, ev)) = self.q.pop_due(t) {
            assert!(at >= self.now, "time went backwards: {at:?} < {:?}", self.now);
            self.now = at;
            self.handle(ev);
            if self.guard.stop.is_some() {
                return false;
            }
            n = n.wrapping_add(1);
            if n % 65536 == 0 {
                if let Some((bytes, sink)) = spill.as_mut() {
                    let mut done = Vec::new();
                    for (name, table) in self.metrics.take_chunks(*bytes) {
                        if !sink(name, table, &mut done) {
                            return false;
                        }
                    }
                    for table in done {
                        self.metrics.recycle(table);
                    }
                    if !self.guard.written(self.metrics.spilled_bytes(), self.now.as_secs_f64()) {
                        return false;
                    }
                }
                if !self.memory_ok() || !self.guard.progress(self.now.0, 65536) || tick(self.now) {
                    return false;
                }
                next_tick = self.now + step;
            } else if self.now >= next_tick {
                next_tick = self.now + step;
                if tick(self.now) {
                    return false;
                }
            }
        }
        self.now = self.now.max(t);
        true
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TxDone(l) => self.on_tx_done(l),
            Event::Arrive(l) => self.on_arrive(l),
            Event::RateStep(l) => self.on_rate_step(l),
            Event::QdiscWake(l) => self.on_qdisc_wake(l),
            Event::Timer(f, end) => self.on_timer(f, end),
            Event::Start(f) => self.on_start(f),
            Event::Stop(f) => self.on_stop(f),
            Event::Release => self.on_release(),
            Event::Sample => self.on_sample(),
            Event::Warmup => self.on_warmup(),
        }
    }

    // ---- links ----------------------------------------------------------

    fn link_arrive(&mut self, l: LinkId, pkt: &Packet) {
        // Packets multiply only here (endpoints emit, netem duplicates on
        // arrival): count memory before it can outgrow the limit. A stopped
        // run takes no more packets; it ends with the current event.
        if self.guard.spend(self.guard.arrival_bytes) && !self.memory_ok() {
            return;
        }
        let now = self.now;
        let link = &mut self.links[l.0 as usize];
        if link.enqueue(now, *pkt) && !link.busy() {
            self.link_start_tx(l);
        }
    }

    /// Dequeue the next packet onto the wire (or straight into the pipe
    /// for an unlimited-rate link).
    fn link_start_tx(&mut self, l: LinkId) {
        let now = self.now;
        let every = self.mcfg.sojourn_every.max(1);
        let link = &mut self.links[l.0 as usize];
        loop {
            let (q, mut cx) = link.cx(now);
            let Some(p) = q.dequeue(&mut cx) else {
                // A shaper or delay line holding packets asks to be polled later.
                if let Some(t) = link.qdisc.next_wakeup() {
                    let t = t.max(now);
                    if t < link.wake_at {
                        link.wake_at = t;
                        self.q.push(t, Event::QdiscWake(l));
                    }
                }
                return;
            };
            if link.capture {
                self.metrics.capture.push(now, self.link_out_id[l.0 as usize], &p);
            }
            if !link.internal {
                link.sojourn_skip += 1;
                let (id, sojourn) = (self.link_out_id[l.0 as usize], now.since(p.enq_at).0);
                self.metrics.sojourn_stats.record(now.0, id, p.class, sojourn);
                if link.sojourn_skip >= every {
                    link.sojourn_skip = 0;
                    let f = p.flow.0 as usize;
                    let flow = if self.flows[f].is_flow() { self.out_id[f] } else { NO_FLOW };
                    self.metrics.sojourn.push_class(now.0, id, flow, sojourn, p.class);
                }
            }
            if link.rate.is_unlimited() {
                Self::to_pipe(&mut self.q, link, l, now, p);
                continue;
            }
            let done = now + link.rate.tx_time(u64::from(p.size));
            link.tx_span = (now, done);
            link.tx = Some(p);
            self.q.push(done, Event::TxDone(l));
            return;
        }
    }

    fn on_tx_done(&mut self, l: LinkId) {
        let now = self.now;
        let link = &mut self.links[l.0 as usize];
        let p = link.tx.as_ref().expect("TxDone without a packet on the wire");
        let (size, at) = (p.size, now + link.delay);
        // Copied from the wire straight into the pipe (a take() would copy it out first).
        link.pipe.push_back((at, *p));
        link.tx = None;
        Self::count_into_pipe(&mut self.q, link, l, size, at);
        self.link_start_tx(l);
    }

    /// A packet has left the serializer: count it and start its
    /// propagation (scheduling the pipe's head only).
    fn to_pipe(q: &mut EventQueue, link: &mut Link, l: LinkId, now: SimTime, p: Packet) {
        let at = now + link.delay;
        link.pipe.push_back((at, p));
        Self::count_into_pipe(q, link, l, p.size, at);
    }

    /// The counting half of [`Self::to_pipe`], once the packet is at the pipe's tail.
    #[inline(always)]
    fn count_into_pipe(q: &mut EventQueue, link: &mut Link, l: LinkId, size: u32, at: SimTime) {
        link.tx_pkts += 1;
        link.tx_bytes += u64::from(size);
        if link.pipe.len() == 1 {
            q.push(at, Event::Arrive(l));
        }
    }

    fn on_arrive(&mut self, l: LinkId) {
        let link = &mut self.links[l.0 as usize];
        let (_, mut p) = link.pipe.pop_front().expect("Arrive with an empty pipe");
        if let Some(&(next, _)) = link.pipe.front() {
            self.q.push(next, Event::Arrive(l));
        }
        if !link.forwarder.is_exact() {
            let fwd = self.fwd.as_mut().expect("a forwarder for its links");
            if let Some(wake) = fwd.hold(self.now, p) {
                self.q.push(wake, Event::Release);
            }
            return;
        }
        p.hop += 1;
        self.route(&p);
    }

    /// The forwarder wakes: what fell due on its links since it was asked
    /// to leaves now, in that order.
    fn on_release(&mut self) {
        let mut out = std::mem::take(&mut self.released);
        self.fwd.as_mut().expect("a forwarder").release(&mut out);
        for mut p in out.drain(..) {
            p.hop += 1;
            self.route(&p);
        }
        self.released = out;
    }

    fn on_qdisc_wake(&mut self, l: LinkId) {
        let link = &mut self.links[l.0 as usize];
        if link.wake_at != self.now {
            return; // superseded by an earlier wake-up
        }
        link.wake_at = SimTime::NEVER;
        if !link.busy() {
            self.link_start_tx(l);
        }
    }

    fn on_rate_step(&mut self, l: LinkId) {
        let now = self.now;
        let link = &mut self.links[l.0 as usize];
        while let Some((t, _)) = link.schedule.front() {
            if *t > now {
                self.q.push(*t, Event::RateStep(l));
                break;
            }
            let (_, step) = link.schedule.pop_front().unwrap();
            link.apply(now, step);
            // A rate step or a new shaper: the packet on the wire finishes at
            // the old rate, the new capacity applies from the next packet, so
            // it counts from then.
            let from = if link.busy() { link.tx_span.1.max(now) } else { now };
            self.capacity_history[l.0 as usize].push((from, link.capacity()));
        }
        // New parameters may release packets now (or at a new wake-up).
        if !link.busy() {
            self.link_start_tx(l);
        }
    }

    // ---- routing --------------------------------------------------------

    /// Send a packet from an endpoint onto its path.
    fn emit(&mut self, p: &mut Packet) {
        p.hop = 0;
        self.sent += 1;
        self.route(p);
    }

    /// Move a packet to its next hop, or to the endpoint at the path's end.
    fn route(&mut self, p: &Packet) {
        let f = &self.flows[p.flow.0 as usize];
        let path = if p.dir == Dir::Fwd { &f.fwd } else { &f.rev };
        match path.get(p.hop as usize) {
            Some(&l) => self.link_arrive(l, p),
            None => {
                self.delivered += 1;
                self.deliver(p);
            }
        }
    }

    fn flush(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        // In place: draining would copy each packet out of the vector first.
        for p in out.iter_mut() {
            self.emit(p);
        }
        out.clear();
        self.out = out;
    }

    fn deliver(&mut self, p: &Packet) {
        let now = self.now;
        let fi = p.flow.0 as usize;
        let flow = &mut self.flows[fi];
        match (&mut flow.ep, &p.hdr) {
            (Endpoints::Tcp { rx, .. }, Header::TcpData(seg)) => {
                let (out, host, tmpl, ecn) = (&mut self.out, &mut flow.rx_host, &flow.rev_tmpl, rx.ack_ecn);
                rx.on_data(seg, p.ecn, now, &mut |ack| ack_out(host, out, now, TcpReceiver::ack_packet(ack, ecn, now, tmpl)));
                self.arm(fi, End::Receiver);
            }
            (Endpoints::Tcp { tx, .. }, Header::TcpAck(ack)) => {
                let out = &mut self.out;
                let res = tx.on_ack(ack, now, &mut |p| out.push(p));
                if let Some(r) = res.rtt {
                    self.metrics.rtt_stats.record(now.0, self.out_id[fi], 0, r.0);
                    if self.mcfg.rtt_samples {
                        self.metrics.rtt.push(now.0, self.out_id[fi], 0, r.0);
                    }
                }
                if flow.finished_at.is_none() && tx.finished() {
                    flow.finished_at = Some(now);
                }
                self.arm(fi, End::Sender);
            }
            (Endpoints::Ping(ping), Header::Probe(pr)) if !pr.reply => {
                let r = Packet {
                    size: p.size,
                    ecn: ping.ecn,
                    sent_at: now,
                    hdr: Header::Probe(Probe { reply: true, ..*pr }),
                    ..flow.rev_tmpl
                };
                self.out.push(r);
            }
            (Endpoints::Ping(ping), Header::Probe(pr)) => {
                ping.received += 1;
                let rtt = now.since(pr.t_req).0;
                self.metrics.probe_stats.record(now.0, self.out_id[fi], 0, rtt);
                self.metrics.probes.push(now.0, self.out_id[fi], 0, rtt);
            }
            (Endpoints::Media { rx, .. }, Header::Rtp(rtp)) => {
                if let Some(id) = rx.on_rtp(rtp, p.ecn, now) {
                    self.out.push(feedback_packet(rx, id, now, &flow.rev_tmpl));
                }
                self.arm(fi, End::Receiver);
            }
            (Endpoints::Media { tx, rx }, Header::Feedback(fb)) => {
                let n0 = self.out.len();
                let out = &mut self.out;
                tx.on_feedback(rx.report(fb.report_id), now, &mut |p| out.push(p));
                record_rtp_waits(&mut self.metrics.rtp_wait_stats, self.out_id[fi], &self.out[n0..]);
                self.arm(fi, End::Sender);
            }
            _ => debug_assert!(false, "packet delivered to the wrong kind of endpoint"),
        }
        self.flush();
    }

    // ---- endpoints ------------------------------------------------------

    /// Make sure an event is pending for the endpoint's next deadline.
    fn arm(&mut self, fi: usize, end: End) {
        let flow = &mut self.flows[fi];
        let deadline = match (&flow.ep, end) {
            (Endpoints::Tcp { tx, .. }, End::Sender) => tx.next_timer(),
            (Endpoints::Tcp { rx, .. }, End::Receiver) => rx.next_timer().min(flow.rx_host.as_ref().map_or(SimTime::NEVER, |h| h.next())),
            (Endpoints::Ping(p), End::Sender) if p.active => p.next_at,
            (Endpoints::Media { tx, .. }, End::Sender) => tx.next_timer(),
            (Endpoints::Media { rx, .. }, End::Receiver) => rx.next_timer(),
            _ => SimTime::NEVER,
        };
        let slot = &mut flow.timer_at[end as usize];
        if deadline < *slot {
            *slot = deadline;
            self.q.push(deadline, Event::Timer(FlowId(fi as u32), end));
        }
    }

    fn on_timer(&mut self, f: FlowId, end: End) {
        let now = self.now;
        let fi = f.0 as usize;
        let flow = &mut self.flows[fi];
        if flow.timer_at[end as usize] == now {
            flow.timer_at[end as usize] = SimTime::NEVER;
        }
        match (&mut flow.ep, end) {
            (Endpoints::Tcp { tx, .. }, End::Sender) => {
                let out = &mut self.out;
                tx.on_timer(now, &mut |p| out.push(p));
            }
            (Endpoints::Tcp { rx, .. }, End::Receiver) => {
                if let Some(h) = &mut flow.rx_host {
                    h.release(now, &mut self.out);
                }
                if let Some(ack) = rx.on_timer(now) {
                    ack_out(&mut flow.rx_host, &mut self.out, now, TcpReceiver::ack_packet(ack, rx.ack_ecn, now, &flow.rev_tmpl));
                }
            }
            (Endpoints::Ping(ping), End::Sender) => {
                if ping.active && now >= ping.next_at {
                    ping.seq += 1;
                    ping.sent += 1;
                    ping.next_at = now + ping.interval;
                    let p = Packet {
                        size: ping.size,
                        ecn: ping.ecn,
                        sent_at: now,
                        hdr: Header::Probe(Probe { seq: ping.seq, t_req: now, reply: false }),
                        ..flow.fwd_tmpl
                    };
                    self.out.push(p);
                }
            }
            (Endpoints::Ping(_), End::Receiver) => {}
            (Endpoints::Media { tx, .. }, End::Sender) => {
                let n0 = self.out.len();
                let out = &mut self.out;
                let queued = tx.held_bytes();
                tx.on_timer(now, &mut |p| out.push(p));
                record_rtp_waits(&mut self.metrics.rtp_wait_stats, self.out_id[fi], &self.out[n0..]);
                // A frame joins the RTP queue at once, however large, and what
                // is sent is recorded until it is reported.
                let grown = tx.held_bytes().saturating_sub(queued) as i64;
                if self.guard.spend(grown) && !self.memory_ok() {
                    return;
                }
            }
            (Endpoints::Media { rx, .. }, End::Receiver) => {
                if let Some(id) = rx.on_timer(now) {
                    self.out.push(feedback_packet(rx, id, now, &flow.rev_tmpl));
                }
            }
        }
        self.flush();
        self.arm(fi, end);
    }

    fn on_start(&mut self, f: FlowId) {
        let now = self.now;
        let fi = f.0 as usize;
        match &mut self.flows[fi].ep {
            Endpoints::Tcp { tx, .. } => {
                let out = &mut self.out;
                tx.start(now, &mut |p| out.push(p));
            }
            Endpoints::Ping(p) => {
                p.active = true;
                p.next_at = now;
            }
            Endpoints::Media { tx, .. } => {
                let n0 = self.out.len();
                let out = &mut self.out;
                tx.start(now, &mut |p| out.push(p));
                record_rtp_waits(&mut self.metrics.rtp_wait_stats, self.out_id[fi], &self.out[n0..]);
            }
        }
        self.flush();
        self.arm(fi, End::Sender);
    }

    fn on_stop(&mut self, f: FlowId) {
        match &mut self.flows[f.0 as usize].ep {
            Endpoints::Tcp { tx, .. } => tx.stop(),
            Endpoints::Ping(p) => p.active = false,
            Endpoints::Media { tx, .. } => tx.stop(),
        }
    }

    // ---- metrics --------------------------------------------------------

    fn on_sample(&mut self) {
        let rows = (self.flows.len() + self.links.len()) as i64 * ROW_BYTES[0] as i64;
        if self.guard.spend(rows) && !self.memory_ok() {
            return;
        }
        let now = self.now;
        let interval = self.mcfg.interval;
        let secs = now.as_secs_f64();
        let fs = &mut self.metrics.flow_series;
        let ms = &mut self.metrics.media_series;
        let warm_s = self.mcfg.warmup.as_secs_f64();
        for (i, f) in self.flows.iter_mut().enumerate() {
            if now < f.start {
                continue;
            }
            // What the summary reads of the series, kept aside so the series
            // can go to disk during the run: the last sample at or before
            // each interval end, and a media flow's sRTT after the warm-up.
            let mark = |marks: &mut Vec<IntervalMarks>, d: u64| {
                for ((_, a, b), m) in f.intervals.iter().zip(marks.iter_mut()) {
                    for (end, slot) in [a, b].into_iter().zip(m.iter_mut()) {
                        if secs <= end.as_secs_f64() + 1e-9 {
                            *slot = Some((secs, d));
                        }
                    }
                }
            };
            if let Endpoints::Media { tx, rx } = &f.ep {
                let st = tx.stats();
                let d = rx.bytes;
                let pkt = f64::from(tx.packet_bytes().max(1));
                let goodput = (d - f.last_delivered) as f64 * 8.0 / interval.as_secs_f64() / 1e6;
                if secs >= warm_s {
                    self.interval_goodput[i].push(goodput);
                }
                fs.time_s.push(secs);
                fs.flow.push(self.out_id[i]);
                fs.goodput_mbps.push(goodput);
                // Media payload is counted on arrival, in any order.
                fs.throughput_mbps.push(goodput);
                fs.delivered_bytes.push(d);
                mark(&mut self.interval_marks[i], d);
                fs.cwnd_pkts.push(st.cwnd_bytes as f64 / pkt);
                let srtt = if st.srtt > Dur::ZERO { st.srtt.as_millis_f64() } else { f64::NAN };
                if secs >= warm_s && !srtt.is_nan() {
                    self.media_srtt[i].push(srtt);
                }
                fs.srtt_ms.push(srtt);
                fs.pacing_mbps.push(tx.pacing_rate_bps() / 1e6);
                fs.inflight_pkts.push(st.bytes_in_flight as f64 / pkt);
                fs.ce_fraction.push(st.ce_fraction);
                fs.alpha.push(st.alpha);
                fs.classic.push(f64::NAN);
                ms.time_s.push(secs);
                ms.flow.push(self.out_id[i]);
                ms.target_mbps.push(st.target_bps / 1e6);
                ms.tx_mbps.push(st.tx_rate_bps / 1e6);
                // Mean wait of the RTP packets sent in the interval (NaN if none).
                let (w0, n0) = self.media_wait_mark[i];
                let sent = st.packets_sent - n0;
                ms.rtp_queue_delay_ms.push(if sent > 0 { (st.rtp_wait_total - w0).as_millis_f64() / sent as f64 } else { f64::NAN });
                self.media_wait_mark[i] = (st.rtp_wait_total, st.packets_sent);
                ms.qdelay_ms.push(st.qdelay.as_millis_f64());
                ms.cwnd_bytes.push(st.cwnd_bytes);
                ms.bytes_in_flight.push(st.bytes_in_flight);
                ms.rtp_discards.push(st.rtp_discards);
                f.last_delivered = d;
                continue;
            }
            let Endpoints::Tcp { tx, rx } = &f.ep else { continue };
            let d = rx.delivered_bytes;
            let goodput = (d - f.last_delivered) as f64 * 8.0 / interval.as_secs_f64() / 1e6;
            if secs >= warm_s {
                self.interval_goodput[i].push(goodput);
            }
            fs.time_s.push(secs);
            fs.flow.push(self.out_id[i]);
            fs.goodput_mbps.push(goodput);
            fs.throughput_mbps.push((rx.received_bytes - f.last_received) as f64 * 8.0 / interval.as_secs_f64() / 1e6);
            f.last_received = rx.received_bytes;
            fs.delivered_bytes.push(d);
            mark(&mut self.interval_marks[i], d);
            fs.cwnd_pkts.push(f64::from(tx.t.cwnd));
            fs.srtt_ms.push(tx.srtt().map_or(f64::NAN, |s| s.as_millis_f64()));
            fs.pacing_mbps.push(if tx.pacing_rate.is_unlimited() { f64::NAN } else { tx.pacing_rate.mbps() });
            fs.inflight_pkts.push(f64::from(tx.sb.in_flight()));
            let (dd, dc) = (tx.t.delivered - f.last_acked.0, tx.ce_delivered - f.last_acked.1);
            fs.ce_fraction.push(if dd > 0 { dc as f64 / dd as f64 } else { f64::NAN });
            fs.alpha.push(tx.cc.alpha().unwrap_or(f64::NAN));
            fs.classic.push(tx.cc.classic().unwrap_or(f64::NAN));
            f.last_acked = (tx.t.delivered, tx.ce_delivered);
            f.last_delivered = d;
        }
        let ls = &mut self.metrics.link_series;
        for (i, l) in self.links.iter_mut().enumerate() {
            if l.internal {
                continue;
            }
            let (pk, by) = l.backlog();
            ls.time_s.push(secs);
            ls.link.push(self.link_out_id[i]);
            ls.backlog_pkts.push(pk as u64);
            ls.backlog_bytes.push(by);
            ls.tx_bytes.push(l.tx_bytes);
            ls.drops.push(l.stats.drops());
            ls.marks.push(l.stats.marks);
            ls.rate_mbps.push(l.rate.mbps());
            let pr = l.qdisc.probe(now);
            ls.prob_base.push(pr.base);
            ls.prob_c.push(pr.p_c);
            ls.prob_l.push(pr.p_l);
        }
        let next = now + interval;
        if next <= self.end && interval > Dur::ZERO {
            self.q.push(next, Event::Sample);
        }
    }

    fn on_warmup(&mut self) {
        let now = self.now;
        for (i, f) in self.flows.iter_mut().enumerate() {
            f.delivered_at_warmup = f.delivered_bytes();
            self.flow_at_warmup[i] = flow_counts(f);
        }
        for (i, l) in self.links.iter().enumerate() {
            self.tx_at_warmup[i] = wire_bytes(l, now);
            self.link_at_warmup[i] = LinkCounts::of(l);
        }
    }

    /// An estimate of the heap the run holds: the built links and flows,
    /// recorded metrics, packets held by links, pending events, TCP
    /// scoreboards, media RTP queues and SCReAM's records of packets in
    /// flight. Lengths (ring buffers: capacities) times element sizes;
    /// grows with the run, so it is what the memory limit bounds.
    pub fn memory_bytes(&self) -> u64 {
        let held: u64 = self.links.iter().map(Link::held_bytes).sum::<u64>() + self.fwd.as_ref().map_or(0, Release::held_bytes);
        let events = self.q.len() as u64 * 24;
        // Rings (the scoreboard, the RTP queue) by capacity, as the pipes.
        let flows: u64 = self
            .flows
            .iter()
            .map(|f| match &f.ep {
                Endpoints::Tcp { tx, .. } => (tx.sb.segs.capacity() * std::mem::size_of::<crate::tcp::scoreboard::Seg>()) as u64,
                Endpoints::Media { tx, .. } => tx.held_bytes(),
                Endpoints::Ping(_) => 0,
            })
            .sum();
        let scratch = self.out.capacity() as u64 * std::mem::size_of::<Packet>() as u64;
        // The samples the summary keeps whole for its exact percentiles.
        let kept: u64 = self.interval_goodput.iter().chain(&self.media_srtt).map(|v| v.len() as u64 * 8).sum();
        self.guard.static_bytes + self.metrics.heap_bytes() + held + events + flows + scratch + kept
    }

    /// Count the memory the run holds and the work it has done (see
    /// [`crate::guard`]): false, with the run stopped, when either is over
    /// its limit. Work is events and packet arrivals at links, as the
    /// estimate counts them (a burst of arrivals in one event is work too).
    fn memory_ok(&mut self) -> bool {
        let (used, now_s) = (self.memory_bytes(), self.now.as_secs_f64());
        let work = self.events() + self.links.iter().map(|l| l.arrivals).sum::<u64>();
        self.guard.counted(used, now_s) && self.guard.events(work, now_s)
    }

    pub fn conservation(&self) -> Conservation {
        let dropped = self.links.iter().map(|l| l.stats.drops() + l.lost).sum();
        let held = self.links.iter().map(|l| l.held()).sum::<u64>() + self.fwd.as_ref().map_or(0, |f| f.held() as u64);
        let duplicated = self.links.iter().map(|l| l.stats.duplicates).sum();
        Conservation { sent: self.sent, delivered: self.delivered, dropped, held, duplicated }
    }

    /// The summary of the run so far (normally called at the end).
    pub fn summary(&self) -> Summary {
        let warm = SimTime::ZERO + self.mcfg.warmup;
        let end = self.now.min(self.end);
        let m = &self.metrics;
        let mut flows = Vec::new();
        let mut probes = Vec::new();
        let mut goodputs = Vec::new();
        let (mut tcp_rtt, mut probe_rtt) = (LogHist::default(), LogHist::default());
        for (i, f) in self.flows.iter().enumerate() {
            match &f.ep {
                Endpoints::Tcp { .. } | Endpoints::Media { .. } => {
                    let from = f.start.max(warm);
                    let to = f.finished_at.unwrap_or(end).min(f.stop).min(end);
                    let active = if to > from { to.since(from) } else { Dur::ZERO };
                    let base = if f.start >= warm { 0 } else { f.delivered_at_warmup };
                    let delivered = f.delivered_bytes();
                    // No active time after the warm-up: no goodput (null in JSON).
                    let goodput = if active > Dur::ZERO { (delivered - base) as f64 * 8.0 / active.as_secs_f64() / 1e6 } else { f64::NAN };
                    if matches!(f.ep, Endpoints::Tcp { .. }) && !goodput.is_nan() {
                        goodputs.push(goodput);
                    }
                    let [rtx0, rto0, ce0] = self.flow_at_warmup[i];
                    let out = self.out_id[i];
                    let intervals = f
                        .intervals
                        .iter()
                        .zip(&self.interval_marks[i])
                        .map(|((name, a, b), marks)| IntervalSummary {
                            name: name.clone(),
                            from_s: a.as_secs_f64(),
                            to_s: b.as_secs_f64(),
                            goodput_mbps: goodput_between(marks),
                        })
                        .collect();
                    let mut fsum = FlowSummary {
                        id: f.name.clone(),
                        kind: "tcp",
                        cc: f.cc_name,
                        goodput_mbps: goodput,
                        rtt_ms: RttStats::from_hist(&m.rtt_stats.get(out, None)),
                        retransmits: 0,
                        rto_count: 0,
                        ce_marks: 0,
                        ce_fraction: None,
                        delivered_bytes: delivered,
                        delivered_after_warmup_bytes: delivered - base,
                        interval_goodput_mbps: RttStats::from_samples(&self.interval_goodput[i]),
                        ecn: f.ecn_name,
                        start_s: f.start.as_secs_f64(),
                        stop_s: f.stop.min(self.end).as_secs_f64(),
                        intervals,
                        media: None,
                        hystart: None,
                    };
                    match &f.ep {
                        Endpoints::Tcp { tx, rx } => {
                            tcp_rtt.merge(&m.rtt_stats.get(out, None));
                            fsum.retransmits = tx.retransmits - rtx0;
                            fsum.rto_count = tx.rto_count - rto0;
                            fsum.ce_marks = u64::from(rx.ce_packets) - ce0;
                            fsum.ce_fraction = (tx.t.delivered > 0).then(|| tx.ce_delivered as f64 / tx.t.delivered as f64);
                            fsum.hystart = tx.cc.hystart_exit().map(|e| HystartSummary {
                                by: e.by.name(),
                                cwnd: e.cwnd,
                                time_s: e.at.as_secs_f64(),
                            });
                        }
                        Endpoints::Media { tx, rx } => {
                            fsum.kind = "media";
                            fsum.ce_marks = rx.ce_packets - ce0;
                            fsum.ce_fraction = (rx.packets > 0).then(|| rx.ce_packets as f64 / rx.packets as f64);
                            fsum.rtt_ms = RttStats::from_samples(&self.media_srtt[i]);
                            fsum.media = Some(self.media_summary(out, warm, &tx.stats()));
                        }
                        Endpoints::Ping(_) => unreachable!(),
                    }
                    flows.push(fsum);
                }
                Endpoints::Ping(p) => {
                    let h = m.probe_stats.get(self.out_id[i], None);
                    probe_rtt.merge(&h);
                    probes.push(ProbeSummary {
                        id: f.name.clone(),
                        rtt_ms: RttStats::from_hist(&h),
                        min_ms: h.min().map(summary::ns_to_ms),
                        max_ms: h.max().map(summary::ns_to_ms),
                        sent: p.sent,
                        received: p.received,
                    });
                }
            }
        }
        let mut links = Vec::new();
        let mut sojourn_q = Vec::new();
        for (i, l) in self.links.iter().enumerate() {
            if l.internal {
                continue;
            }
            let sojourn = m.sojourn_stats.get(self.link_out_id[i], None);
            sojourn_q.push(Quantiles::grid(&sojourn));
            let cap_bits = capacity_bits(&self.capacity_history[i], warm, end);
            let two_queues = l.qdisc.has_two_queues();
            // Bytes on the wire in [warm, end], counting a packet being
            // serialized at either edge pro rata, as capacity is counted.
            let sent_bits = (wire_bytes(l, end) - self.tx_at_warmup[i]) * 8.0;
            let window = if end > warm { end.since(warm).as_secs_f64() } else { 0.0 };
            let c = LinkCounts::of(l).minus(&self.link_at_warmup[i]);
            links.push(LinkSummary {
                id: l.name.clone(),
                qdisc: l.qdisc_name,
                rate_mbps: (!self.start_rate[i].is_unlimited()).then(|| self.start_rate[i].mbps()),
                capacity_mbps: (!self.capacity_history[i][0].1.is_unlimited()).then(|| self.capacity_history[i][0].1.mbps()),
                pure_delay: !matches!(l.qdisc, AnyQdisc::Granted(_)) && self.capacity_history[i].iter().all(|&(_, r)| r.is_unlimited()),
                utilization: cap_bits.and_then(|c| (c > 0.0).then(|| sent_bits / c)),
                rate_mean_mbps: cap_bits.and_then(|c| (window > 0.0).then(|| c / window / 1e6)),
                sojourn_ms: SojournStats::from_hist(&sojourn),
                sojourn_c_ms: two_queues.then(|| SojournStats::from_hist(&m.sojourn_stats.get(self.link_out_id[i], Some(0)))),
                sojourn_l_ms: two_queues.then(|| SojournStats::from_hist(&m.sojourn_stats.get(self.link_out_id[i], Some(1)))),
                drops: c.drops,
                marks: c.marks,
                lost: c.lost,
                arrivals: c.arrivals,
                tx_packets: c.tx_pkts,
            });
        }
        Summary {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: self.end.as_secs_f64(),
            warmup_s: self.mcfg.warmup.as_secs_f64(),
            flows,
            links,
            probes,
            jain: if goodputs.len() >= 2 { summary::jain(&goodputs) } else { None },
            engine: EngineSummary { events: self.events(), packets: self.sent, wall_s: 0.0 },
            quantiles: Quantiles { tcp_rtt_ms: Quantiles::grid(&tcp_rtt), probe_rtt_ms: Quantiles::grid(&probe_rtt), sojourn_ms: sojourn_q },
        }
    }
}

impl Sim {
    fn media_summary(&self, out: u32, from: SimTime, st: &crate::media::sender::MediaStats) -> MediaSummary {
        let ms = &self.metrics.media_series;
        let rows: Vec<usize> = (0..ms.time_s.len()).filter(|&k| ms.flow[k] == out && ms.time_s[k] >= from.as_secs_f64()).collect();
        let sorted = |f: &dyn Fn(usize) -> f64| {
            let mut v: Vec<f64> = rows.iter().map(|&k| f(k)).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        MediaSummary {
            target_mbps: summary::mean(&sorted(&|k| ms.target_mbps[k])),
            tx_mbps: summary::mean(&sorted(&|k| ms.tx_mbps[k])),
            rtp_queue_delay_ms: SojournStats::from_hist(&self.metrics.rtp_wait_stats.get(out, None)),
            qdelay_ms: SojournStats::from_sorted(&sorted(&|k| ms.qdelay_ms[k])),
            packets_sent: st.packets_sent,
            packets_lost: st.packets_lost,
            rtp_discards: st.rtp_discards,
            frames: st.frames,
        }
    }
}

/// Record the RTP-queue wait of each RTP packet a media sender just put
/// out (it leaves with `enq_at` = when it was queued) as flow `id`'s.
fn record_rtp_waits(stats: &mut crate::metrics::hist::IdStats, id: u32, sent: &[Packet]) {
    for p in sent {
        if let Header::Rtp(_) = p.hdr {
            stats.record(p.sent_at.0, id, 0, p.sent_at.since(p.enq_at).0);
        }
    }
}

/// Goodput between an interval's ends from the flow's last samples at or
/// before each (sample-interval resolution).
fn goodput_between(marks: &IntervalMarks) -> Option<f64> {
    let ((t0, b0), (t1, b1)) = (marks[0]?, marks[1]?);
    (t1 > t0).then(|| (b1 - b0) as f64 * 8.0 / (t1 - t0) / 1e6)
}

/// Bits the link could carry over [from, to] given its capacity history; None
/// if it was unlimited at any point.
fn capacity_bits(hist: &[(SimTime, Rate)], from: SimTime, to: SimTime) -> Option<f64> {
    let mut bits = 0.0;
    for (k, &(t, r)) in hist.iter().enumerate() {
        let next = hist.get(k + 1).map_or(to, |&(t2, _)| t2);
        let a = t.max(from);
        let b = next.min(to);
        if b > a {
            if r.is_unlimited() {
                return None;
            }
            bits += r.bps() as f64 * b.since(a).as_secs_f64();
        }
    }
    Some(bits)
}

/// An ACK leaves the receiving host: after the host's noise where it has
/// some (`Flow::rx_host`), at once where it has none.
fn ack_out(host: &mut Option<Box<crate::tcp::HostQueue>>, out: &mut Vec<Packet>, now: SimTime, ack: Packet) {
    match host {
        Some(h) => h.hold(now, ack),
        None => out.push(ack),
    }
}

/// An RFC 8888 feedback packet for report `id`, on the reverse path.
fn feedback_packet(rx: &crate::media::rfc8888::MediaReceiver, id: u32, now: SimTime, tmpl: &Packet) -> Packet {
    Packet {
        size: rx.report(id).rtcp_bytes() + crate::media::RTCP_IP_OVERHEAD,
        sent_at: now,
        hdr: Header::Feedback(crate::packet::Feedback { report_id: id }),
        ..*tmpl
    }
}

/// A link's counters that the summary reports after the warm-up.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct LinkCounts {
    drops: u64,
    marks: u64,
    lost: u64,
    arrivals: u64,
    tx_pkts: u64,
}

impl LinkCounts {
    fn of(l: &Link) -> LinkCounts {
        LinkCounts { drops: l.stats.drops(), marks: l.stats.marks, lost: l.lost, arrivals: l.arrivals, tx_pkts: l.tx_pkts }
    }
    fn minus(self, o: &LinkCounts) -> LinkCounts {
        LinkCounts {
            drops: self.drops - o.drops,
            marks: self.marks - o.marks,
            lost: self.lost - o.lost,
            arrivals: self.arrivals - o.arrivals,
            tx_pkts: self.tx_pkts - o.tx_pkts,
        }
    }
}

/// (retransmits, RTOs, CE marks received) of a flow so far.
fn flow_counts(f: &Flow) -> [u64; 3] {
    match &f.ep {
        Endpoints::Tcp { tx, rx } => [tx.retransmits, tx.rto_count, u64::from(rx.ce_packets)],
        Endpoints::Media { rx, .. } => [0, 0, rx.ce_packets],
        Endpoints::Ping(_) => [0; 3],
    }
}

/// Bytes a link has put on the wire by time `t`: completed packets plus
/// the serialized share of the packet on the wire (so a 9000 B frame at
/// 64 kbit/s counts where its bits are, not all at its last bit).
fn wire_bytes(l: &Link, t: SimTime) -> f64 {
    let mut b = l.tx_bytes as f64;
    if let Some(p) = &l.tx {
        let (a, z) = l.tx_span;
        if z > a && t > a {
            let frac = (t.min(z).since(a).as_secs_f64() / z.since(a).as_secs_f64()).min(1.0);
            b += f64::from(p.size) * frac;
        }
    }
    b
}
