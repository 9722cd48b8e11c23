//! One direction of the emulated network: the scenario's links, each the
//! simulator's own [`Link`] (qdisc, serializer at rate, propagation delay,
//! Bernoulli loss on arrival, header rewrite, schedule; built, fed and
//! stepped by the same code as in `sim.rs`), and the routes through them.
//!
//! Time is a virtual clock in [`SimTime`] (ns since the emulator started).
//! Events (a schedule step, a serializer becoming free with packets queued,
//! a packet leaving a pipe) are processed lazily in time order when the
//! forwarder calls [`EmuPath::advance`] with the wall clock: a dequeue that
//! should have happened at `link_free` happens *at* `link_free` even if the
//! timer fired late (`start = max(link_free, arrival)`, `link_free = start +
//! size*8/rate`), so the long-run rate is exact and lateness only delays the
//! real write. This is the virtual departure clock of Mahimahi / the kernel
//! anchor's `linkemu.c` (`advance()`), applied to every qdisc.
//!
//! Deviations from the simulator: arrivals are timestamped by the forwarder
//! (kernel receive stamps); events at the same instant run schedule steps
//! first, then pipe exits, then dequeues, lower stage indices first (the
//! simulator orders them by when they were scheduled).

use ccbench_core::link::Link;
use ccbench_core::packet::Packet;
use ccbench_core::qdisc::Qdisc;
use ccbench_core::scenario::LinkSpec;
use ccbench_core::units::{Dur, SimTime};
use serde::Serialize;

/// Sojourn histogram: 10 µs bins up to 5 s (the last bin collects the rest).
const HBIN_NS: u64 = 10_000;
const HBINS: usize = 500_000;

pub struct Stage {
    /// The link, as the simulator builds it. Its `tx` stays empty: the
    /// serializer is `link_free`.
    pub link: Link,
    link_free: SimTime,
    /// A non-work-conserving qdisc's release time (`next_wakeup`).
    hold: SimTime,
    /// Dequeue returned nothing and no wake-up time: wait for an arrival.
    stalled: bool,
    soj_sum: u64,
    soj_max: u64,
    hist: Vec<u32>,
    /// Virtual time of the first transmission start and the last end, and
    /// the serializer's busy time in between.
    first_start: Option<SimTime>,
    last_end: SimTime,
    busy_ns: u64,
    /// Every dequeue (time, sojourn, 5-tuple hash, frame bytes, queue class),
    /// up to MAX_RECORDS: the forwarder writes them out for the Parquet tables.
    pub records: Vec<Record>,
    /// Captured (`--pcap-link`): each packet as this link starts sending it,
    /// until the forwarder takes them (it holds the frames' bytes).
    pub tap: bool,
    pub tapped: Vec<(SimTime, Packet)>,
}

/// One dequeued packet, as `packets.bin` stores it (see `forward::write_records`).
#[derive(Copy, Clone, Debug)]
pub struct Record {
    pub t_ns: u64,
    pub sojourn_ns: u64,
    pub tuple: u32,
    pub size: u32,
    pub class: u8,
    /// The last link of the packet's route: it leaves the emulator next.
    pub last: bool,
}

/// Per stage: 16 M dequeues (~400 MB over both directions at most), about
/// 5 minutes at 1 Gbit/s of full frames; later packets are counted, not recorded.
pub const MAX_RECORDS: usize = 1 << 24;

/// A stage's counters for `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    pub link: String,
    pub qdisc: &'static str,
    pub rate_bps: u64,
    pub delay_ms: f64,
    pub arrivals: u64,
    pub lost: u64,
    pub drops_overlimit: u64,
    pub drops_aqm: u64,
    pub marks: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub sojourn_mean_ms: f64,
    pub sojourn_p50_ms: f64,
    pub sojourn_p90_ms: f64,
    pub sojourn_p99_ms: f64,
    pub sojourn_max_ms: f64,
    pub backlog_pkts: usize,
    /// Serializer busy time over the span from its first transmission to
    /// the end of its last (virtual clock): 1.0 = never idle, so the link
    /// ran at exactly its rate.
    pub utilization: f64,
}

impl Stage {
    /// A scenario link (its RNG stream is the simulator's: `link:<id>`
    /// under the scenario seed).
    pub fn from_spec(seed: u64, spec: &LinkSpec) -> Stage {
        Stage::new(spec.build_link(seed))
    }

    /// A flow's access delay, as the simulator builds it.
    pub fn access(seed: u64, name: &str, delay: Dur) -> Stage {
        Stage::new(Link::access(seed, name, delay))
    }

    pub fn new(link: Link) -> Stage {
        Stage {
            link,
            link_free: SimTime(0),
            hold: SimTime(0),
            stalled: false,
            soj_sum: 0,
            soj_max: 0,
            hist: vec![0; HBINS],
            records: Vec::new(),
            tap: false,
            tapped: Vec::new(),
            first_start: None,
            last_end: SimTime(0),
            busy_ns: 0,
        }
    }

    pub fn name(&self) -> &str {
        &self.link.name
    }

    fn dequeue_time(&self) -> Option<SimTime> {
        if self.link.qdisc.is_empty() || self.stalled {
            None
        } else {
            Some(self.link_free.max(self.hold))
        }
    }

    fn step_time(&self) -> Option<SimTime> {
        self.link.schedule.front().map(|&(t, _)| t)
    }

    /// The stage's pending events in their order at a tie: (time, kind)
    /// with kind 0 a schedule step, 1 the pipe's head leaving, 2 a dequeue.
    fn events(&self) -> [(Option<SimTime>, u8); 3] {
        [(self.step_time(), 0), (self.link.pipe.front().map(|&(t, _)| t), 1), (self.dequeue_time(), 2)]
    }

    fn enqueue_at(&mut self, t: SimTime, p: Packet) {
        let idle = self.link.qdisc.is_empty();
        if self.link.enqueue(t, p) {
            if idle && self.link_free < t {
                self.link_free = t; // idle link: service starts at the arrival
            }
            self.stalled = false;
        }
    }

    /// The schedule's steps due at `t`; new parameters may release packets
    /// now, as the simulator polls the qdisc after a step.
    fn step_at(&mut self, t: SimTime) {
        while self.step_time().is_some_and(|at| at <= t) {
            let (_, step) = self.link.schedule.pop_front().expect("a due step");
            self.link.apply(t, step);
        }
        self.stalled = false;
        self.hold = self.hold.min(t);
    }

    /// Dequeue at `t`; `last` says whether the packet leaves its route after this link.
    fn dequeue_at(&mut self, t: SimTime, last: impl Fn(&Packet) -> bool) {
        let (q, mut cx) = self.link.cx(t);
        match q.dequeue(&mut cx) {
            Some(p) => {
                let soj = t.0.saturating_sub(p.enq_at.0);
                self.soj_sum += soj;
                self.soj_max = self.soj_max.max(soj);
                self.hist[((soj / HBIN_NS) as usize).min(HBINS - 1)] += 1;
                if self.records.len() < MAX_RECORDS {
                    self.records.push(Record {
                        t_ns: t.0,
                        sojourn_ns: soj,
                        tuple: p.tuple,
                        size: p.size,
                        class: p.class,
                        last: last(&p),
                    });
                }
                if self.tap {
                    self.tapped.push((t, p));
                }
                let link = &mut self.link;
                let ser = link.rate.tx_time(u64::from(p.size));
                self.link_free = t + ser;
                self.first_start.get_or_insert(t);
                self.last_end = self.link_free;
                self.busy_ns += ser.nanos();
                link.tx_pkts += 1;
                link.tx_bytes += u64::from(p.size);
                link.pipe.push_back((self.link_free + link.delay, p));
            }
            None => {
                if !self.link.qdisc.is_empty() {
                    match self.link.qdisc.next_wakeup() {
                        Some(w) => self.hold = w.max(SimTime(t.0 + 1)),
                        None => self.stalled = true,
                    }
                }
            }
        }
    }

    fn pct(&self, p: f64) -> f64 {
        let n: u64 = self.link.tx_pkts;
        if n == 0 {
            return 0.0;
        }
        let want = ((p * n as f64).ceil() as u64).max(1);
        let mut acc = 0u64;
        for (i, &c) in self.hist.iter().enumerate() {
            acc += u64::from(c);
            if acc >= want {
                // The bin's centre, but never beyond the exact maximum.
                return ((i as f64 + 0.5) * HBIN_NS as f64).min(self.soj_max as f64) / 1e6;
            }
        }
        self.soj_max as f64 / 1e6
    }

    /// Backlog (packets, bytes) and the counters so far (drops, marks, bytes sent).
    pub fn sample(&self) -> [u64; 5] {
        let l = &self.link;
        [l.qdisc.len() as u64, l.qdisc.bytes(), l.stats.drops(), l.stats.marks, l.tx_bytes]
    }

    pub fn report(&self) -> StageReport {
        let l = &self.link;
        StageReport {
            link: l.name.clone(),
            qdisc: l.qdisc_name,
            rate_bps: l.rate.bps(),
            delay_ms: l.delay.as_millis_f64(),
            arrivals: l.arrivals,
            lost: l.lost,
            drops_overlimit: l.stats.drops_overlimit,
            drops_aqm: l.stats.drops_aqm,
            marks: l.stats.marks,
            tx_pkts: l.tx_pkts,
            tx_bytes: l.tx_bytes,
            sojourn_mean_ms: if l.tx_pkts > 0 {
                self.soj_sum as f64 / l.tx_pkts as f64 / 1e6
            } else {
                0.0
            },
            sojourn_p50_ms: self.pct(0.5),
            sojourn_p90_ms: self.pct(0.9),
            sojourn_p99_ms: self.pct(0.99),
            sojourn_max_ms: self.soj_max as f64 / 1e6,
            backlog_pkts: l.qdisc.len(),
            utilization: match self.first_start {
                Some(f) if self.last_end > f => {
                    self.busy_ns as f64 / (self.last_end.0 - f.0) as f64
                }
                _ => 0.0,
            },
        }
    }
}

/// The links of one direction and the routes through them: each client
/// host's flow crosses its own sequence of stages (its access delay, then
/// the scenario's links, shared by name with the other routes, as the
/// simulator shares a `[[links]]` entry between the flows that list it).
/// A packet's `flow` is its route, `hop` its position on it.
pub struct EmuPath {
    pub stages: Vec<Stage>,
    routes: Vec<Route>,
}

/// One route: stage indices in order, and the host ids its packets carry
/// (`src_host`, `dst_host`, for host-fair qdiscs, numbered as the simulator does).
#[derive(Clone, Debug, Default)]
pub struct Route {
    pub stages: Vec<usize>,
    pub hosts: (u16, u16),
}

impl EmuPath {
    /// One route through every stage in order.
    pub fn new(stages: Vec<Stage>) -> EmuPath {
        let route = Route { stages: (0..stages.len()).collect(), hosts: (0, 1) };
        EmuPath { stages, routes: vec![route] }
    }

    /// Several routes over shared stages (indices into `stages`).
    pub fn with_routes(stages: Vec<Stage>, routes: Vec<Route>) -> EmuPath {
        debug_assert!(routes.iter().flat_map(|r| &r.stages).all(|&i| i < stages.len()));
        EmuPath { stages, routes }
    }

    pub fn routes(&self) -> usize {
        self.routes.len()
    }

    /// Every link to capture (`--pcap-link`) is a stage of one of `paths`;
    /// otherwise an error naming the links there are.
    pub fn check_links(paths: [&EmuPath; 2], links: &[String]) -> Result<(), String> {
        let names: Vec<&str> = paths.iter().flat_map(|p| p.stages.iter().map(Stage::name)).collect();
        match links.iter().find(|l| !names.contains(&l.as_str())) {
            Some(bad) => Err(format!("--pcap-link {bad}: no such link on the emulated paths ({})", names.join(", "))),
            None => Ok(()),
        }
    }

    /// The slowest configured rate along the path (0 = all unlimited).
    pub fn bottleneck_bps(&self) -> u64 {
        self.stages
            .iter()
            .map(|s| s.link.rate.bps())
            .filter(|&r| r > 0)
            .min()
            .unwrap_or(0)
    }

    /// A packet arrives at the first link of route `route` at `now`. Call
    /// [`advance`](Self::advance) up to `now` first, so earlier virtual events
    /// happen before it. Packets leave to `out` with `flow` set to their route.
    pub fn arrive(&mut self, now: SimTime, route: usize, mut p: Packet, out: &mut impl FnMut(SimTime, Packet)) {
        let r = &self.routes[route];
        p.flow = ccbench_core::packet::FlowId(route as u32);
        p.hop = 0;
        (p.src_host, p.dst_host) = r.hosts;
        match r.stages.first() {
            Some(&i) => self.stages[i].enqueue_at(now, p),
            None => out(now, p),
        }
    }

    /// Run every virtual event at or before `now`, in time order (schedule
    /// steps, then pipe exits, then dequeues at the same instant, lower stage
    /// indices first). Packets leaving the last link of their route go to
    /// `out` with their due time.
    pub fn advance(&mut self, now: SimTime, out: &mut impl FnMut(SimTime, Packet)) {
        loop {
            // (time, kind, stage)
            let mut best: Option<(SimTime, u8, usize)> = None;
            for (i, s) in self.stages.iter().enumerate() {
                for (t, kind) in s.events() {
                    if let Some(t) = t {
                        if best.is_none_or(|b| (t, kind, i) < b) {
                            best = Some((t, kind, i));
                        }
                    }
                }
            }
            let Some((t, kind, i)) = best else { return };
            if t > now {
                return;
            }
            match kind {
                0 => self.stages[i].step_at(t),
                1 => {
                    let (_, mut p) = self.stages[i].link.pipe.pop_front().expect("pipe head");
                    p.hop += 1;
                    match self.routes[p.flow.0 as usize].stages.get(usize::from(p.hop)) {
                        Some(&next) => self.stages[next].enqueue_at(t, p),
                        None => out(t, p),
                    }
                }
                _ => {
                    let routes = &self.routes;
                    self.stages[i].dequeue_at(t, |p| usize::from(p.hop) + 1 == routes[p.flow.0 as usize].stages.len());
                }
            }
        }
    }

    /// The earliest pending virtual event, if any.
    pub fn next_event(&self) -> Option<SimTime> {
        self.stages
            .iter()
            .flat_map(Stage::events)
            .filter_map(|(t, _)| t)
            .min()
    }

    pub fn reports(&self) -> Vec<StageReport> {
        self.stages.iter().map(Stage::report).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_core::packet::Ecn;

    /// Link `l` of a one-link scenario, `keys` its TOML lines after the id.
    fn link_spec(keys: &str) -> LinkSpec {
        let text = format!("name='t'\nduration='3s'\n[[links]]\nid='l'\n{keys}\n[[flows]]\nid='f'\npath=['l']\n");
        ccbench_core::scenario::parse(&text, "t.toml", &[]).unwrap().scenario.links.remove(0)
    }

    fn stage(q: &str, rate_mbps: u64, delay_ms: u64) -> Stage {
        Stage::from_spec(1, &link_spec(&format!("rate='{rate_mbps}Mbit'\ndelay='{delay_ms}ms'\nqdisc={{{q}}}")))
    }

    fn pkt(size: u32, frame: u32, ecn: Ecn) -> Packet {
        Packet {
            size,
            frame,
            ecn,
            tuple: frame % 4,
            ..Default::default()
        }
    }

    /// Departures follow the virtual clock exactly, however late and
    /// irregular the forwarder's wake-ups are: a back-to-back burst of 1514 B
    /// frames at 10 Mbit/s leaves at 20 ms + k * 1211.2 µs.
    #[test]
    fn late_wakeups_do_not_change_departure_times() {
        for step_us in [1u64, 137, 5_000, 100_000] {
            let mut path = EmuPath::new(vec![stage("kind='pfifo', limit=1000", 10, 20)]);
            let mut got = Vec::new();
            let t0 = SimTime(1_000_000);
            path.advance(t0, &mut |t, p| got.push((t, p.frame)));
            for k in 0..200 {
                path.arrive(t0, 0, pkt(1514, k, Ecn::NotEct), &mut |_, _| unreachable!());
            }
            let mut now = t0;
            while got.len() < 200 {
                now = SimTime(now.0 + step_us * 1000);
                path.advance(now, &mut |t, p| got.push((t, p.frame)));
            }
            assert_eq!(path.reports()[0].utilization, 1.0);
            for (k, &(t, f)) in got.iter().enumerate() {
                assert_eq!(f, k as u32);
                let ideal = t0.0 + 20_000_000 + (k as u64 + 1) * 1_211_200;
                assert_eq!(t.0, ideal, "step {step_us} us, packet {k}");
            }
        }
    }

    /// Two links in series: the second (slower) one is the bottleneck and the
    /// delays add; pfifo's limit drops the excess of a burst.
    #[test]
    fn links_in_series_and_tail_drop() {
        let mut path = EmuPath::new(vec![
            stage("kind='pfifo', limit=1000", 100, 5),
            stage("kind='pfifo', limit=10", 10, 10),
        ]);
        let mut got = Vec::new();
        for k in 0..50 {
            path.arrive(SimTime(0), 0, pkt(1514, k, Ecn::NotEct), &mut |_, _| {});
        }
        path.advance(SimTime(10_000_000_000), &mut |t, p| got.push((t, p.frame)));
        let r = path.reports();
        assert_eq!(r[0].tx_pkts, 50);
        // Link 2 receives one packet every 121.12 µs but sends one every
        // 1211.2 µs: it keeps 10 waiting + 1 on the wire, and the rest
        // arriving while full are dropped.
        assert_eq!(r[1].arrivals, 50);
        assert_eq!(r[1].drops_overlimit + r[1].tx_pkts, 50);
        assert!(r[1].drops_overlimit > 30, "{:?}", r[1]);
        // First packet: 121.12 µs + 5 ms + 1211.2 µs + 10 ms.
        assert_eq!(got[0].0 .0, 121_120 + 5_000_000 + 1_211_200 + 10_000_000);
        assert_eq!(path.bottleneck_bps(), 10_000_000);
    }

    /// DualPI2 through the emulator's path marks ECT(1) (L4S) packets of a
    /// standing queue, via the same code as the simulator.
    #[test]
    fn dualpi2_marks_l4s_packets() {
        let mut path = EmuPath::new(vec![stage("kind='dualpi2'", 10, 1)]);
        let mut marked = 0;
        let mut n = 0u32;
        // Offer 12 Mbit/s of ECT(1) for 2 s: the L queue's step threshold (1 ms) is exceeded.
        let gap = 1_009_333; // ns per 1514 B at 12 Mbit/s
        for k in 0..2000u32 {
            let now = SimTime(u64::from(k) * gap);
            path.advance(now, &mut |_, p| {
                n += 1;
                marked += u32::from(p.ecn == Ecn::Ce);
            });
            path.arrive(now, 0, pkt(1514, k, Ecn::Ect1), &mut |_, _| {});
        }
        path.advance(SimTime(u64::MAX / 2), &mut |_, p| {
            n += 1;
            marked += u32::from(p.ecn == Ecn::Ce);
        });
        let r = &path.reports()[0];
        assert_eq!(
            u64::from(n) + r.drops_overlimit + r.drops_aqm,
            2000,
            "every packet leaves or is dropped"
        );
        assert!(n > 1500);
        assert!(marked > 100, "marked {marked} of {n}");
        assert_eq!(path.reports()[0].marks, u64::from(marked));
    }

    /// Two routes over one shared bottleneck, the second behind its own
    /// 20 ms access stage: each packet follows its route, the bottleneck
    /// serializes both routes' packets in arrival order, packets carry their
    /// route's hosts, and only each route's last link records `last`.
    #[test]
    fn routes_share_a_link_and_keep_their_own_delays() {
        let bn = stage("kind='pfifo', limit=100", 10, 5);
        let access = Stage::access(1, "b.access", Dur::from_millis(20));
        let routes = vec![
            Route { stages: vec![0], hosts: (0, 1) },
            Route { stages: vec![1, 0], hosts: (2, 1) },
        ];
        let mut path = EmuPath::with_routes(vec![bn, access], routes);
        let mut got = Vec::new();
        // Route 1's packet reaches the bottleneck 20 ms after it arrives, just after route 0's second.
        path.arrive(SimTime(0), 1, pkt(1514, 0, Ecn::NotEct), &mut |_, _| unreachable!());
        path.arrive(SimTime(0), 0, pkt(1514, 1, Ecn::NotEct), &mut |_, _| unreachable!());
        path.advance(SimTime(19_999_999), &mut |t, p| got.push((t, p.frame, p.flow.0, p.src_host)));
        path.arrive(SimTime(19_999_999), 0, pkt(1514, 2, Ecn::NotEct), &mut |_, _| unreachable!());
        path.advance(SimTime(1_000_000_000), &mut |t, p| got.push((t, p.frame, p.flow.0, p.src_host)));
        let ser = 1_211_200;
        assert_eq!(
            got,
            vec![
                (SimTime(ser + 5_000_000), 1, 0, 0),
                (SimTime(19_999_999 + ser + 5_000_000), 2, 0, 0),
                (SimTime(19_999_999 + 2 * ser + 5_000_000), 0, 1, 2),
            ]
        );
        let r = path.reports();
        assert_eq!((r[0].arrivals, r[1].arrivals), (3, 1));
        assert!(path.stages[0].records.iter().all(|r| r.last));
        assert!(path.stages[1].records.iter().all(|r| !r.last));
        assert_eq!(path.routes(), 2);
    }

    /// Sojourn statistics: a burst of 100 frames into an idle 10 Mbit/s
    /// pfifo waits k x 1211.2 us (k = 0..99). Percentiles are nearest-rank
    /// at 10 us resolution (the bin's centre, never above the exact maximum),
    /// the mean and maximum exact.
    #[test]
    fn sojourn_percentiles_and_mean() {
        let mut path = EmuPath::new(vec![stage("kind='pfifo', limit=1000", 10, 0)]);
        assert_eq!(path.reports()[0].sojourn_p50_ms, 0.0); // nothing sent yet
        for k in 0..100 {
            path.arrive(SimTime(0), 0, pkt(1514, k, Ecn::NotEct), &mut |_, _| {});
        }
        path.advance(SimTime(1_000_000_000), &mut |_, _| {});
        let r = &path.reports()[0];
        let exact = |k: f64| k * 1.2112; // ms, the k-th packet's wait
        for (got, rank) in [(r.sojourn_p50_ms, 50.0), (r.sojourn_p90_ms, 90.0), (r.sojourn_p99_ms, 99.0)] {
            assert!((got - exact(rank - 1.0)).abs() <= 0.005, "rank {rank}: {got} ms");
        }
        assert_eq!(r.sojourn_max_ms, exact(99.0));
        assert!((r.sojourn_mean_ms - exact(49.5)).abs() < 1e-9, "{}", r.sojourn_mean_ms);
    }

    /// A qdisc replacement takes effect at its time, as in the simulator, not
    /// at the link's next dequeue: a packet arriving at 2 s on a link whose
    /// pfifo became a 50 ms netem at 1 s goes through the netem, not dropped
    /// with the old queue.
    #[test]
    fn schedule_steps_apply_at_their_time() {
        let spec = link_spec("rate='10Mbit'\nschedule=[{at='1s', qdisc={kind='netem', delay='50ms'}}]");
        let mut path = EmuPath::new(vec![Stage::from_spec(1, &spec)]);
        assert_eq!(path.next_event(), Some(SimTime(1_000_000_000)));
        let mut out = Vec::new();
        path.advance(SimTime(1_000_000_000), &mut |t, p| out.push((t, p.frame))); // an event at `now` runs now
        assert_eq!(path.next_event(), None);
        path.advance(SimTime(2_000_000_000), &mut |t, p| out.push((t, p.frame)));
        assert_eq!(path.next_event(), None);
        path.arrive(SimTime(2_000_000_000), 0, pkt(1514, 9, Ecn::NotEct), &mut |_, _| unreachable!());
        path.advance(SimTime(3_000_000_000), &mut |t, p| out.push((t, p.frame)));
        assert_eq!(out, [(SimTime(2_050_000_000 + 1_211_200), 9)]);
        let r = &path.reports()[0];
        assert_eq!((r.drops_overlimit, r.drops_aqm), (0, 0));
    }

    #[test]
    fn loss_and_rate_schedule_apply() {
        let spec = link_spec("rate='10Mbit'\nloss=0.5\nschedule=[{at='1s', rate='20Mbit'}]");
        let mut path = EmuPath::new(vec![Stage::from_spec(3, &spec)]);
        let mut out = Vec::new();
        for k in 0..4000u32 {
            let now = SimTime(u64::from(k) * 500_000);
            path.advance(now, &mut |t, p| out.push((t, p.frame)));
            path.arrive(now, 0, pkt(100, k, Ecn::NotEct), &mut |_, _| {});
        }
        let r = path.reports();
        assert!((1800..2200).contains(&r[0].lost), "lost {}", r[0].lost);
        // Each packet is alone on the link: it leaves one serialization
        // after its arrival, 80 µs for 100 B before 1 s, 40 µs after.
        for &(t, k) in &out {
            let arr = u64::from(k) * 500_000;
            let ser = if arr < 1_000_000_000 { 80_000 } else { 40_000 };
            assert_eq!(t.0 - arr, ser, "packet {k}");
        }
    }
}
