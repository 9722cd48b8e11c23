//! FQ-PIE, flow-queuing PIE (Linux net/sched/sch_fq_pie.c; tc options as
//! iproute2 tc/q_fq_pie.c; RFC 8033 per flow, RFC 8290's DRR++ scheduler).
//!
//! Packets are hashed into `flows` buckets (`blocks::flow_hash`, as
//! fq_codel), each a FIFO with its own deficit and its own PIE controller
//! (`blocks::pie`, the code `pie` uses). Drops happen only at enqueue:
//! the arriving packet's flow decides with `pie_drop_early` on the *flow's*
//! backlog; a hit is CE-marked instead if `ecn` is on, the packet is ECT
//! and the flow's p ≤ `ecn_prob` percent. Dequeue is DRR++ over new and
//! old lists exactly as fq_codel (`fq_pie_qdisc_dequeue`), then the flow's
//! controller samples its delay. One timer updates every flow's p each
//! `tupdate`, first 500 ms after creation. `memory_limit` is only counted
//! (`overmemory`), never enforced, as in Linux. Defaults (`fq_pie_init`):
//! limit 10240 packets, flows 1024, quantum 1514 B, memory_limit 32 MiB,
//! ecn_prob 10 %, ecn off, and PIE's target 15 ms, tupdate 15 ms, alpha 2,
//! beta 20 (1/16 Hz).
//!
//! Units: time in ns at the interface (psched ticks inside the
//! controller), sizes and deficits in bytes, p in Linux's fixed point.
//!
//! Deviations from Linux: memory is charged `pkt.size`, not truesize (only
//! the `overmemory` counter sees it); the hash key is an explicit
//! perturbation (see flow_hash); no tc filters or skb->priority
//! classification; the timer updates all flows in one tick (Linux updates
//! at most 2048 per jiffy, so > 2048 flows take several jiffies), runs
//! lazily as `pie`'s does, and is ideal. The DRR++ scheduler is the shared
//! `blocks::drr`, the one fq_codel uses.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::blocks::drr::Drr;
use super::blocks::flow_hash::{FlowHasher, DEFAULT_PERTURBATION};
use super::blocks::pie::{first_update, tupdate_period, PieParams, PieVars, MAX_PROB};
use super::pie::{pie_params, validate_pie, DEFAULT_HZ};
use super::{Cx, DropReason, Qdisc, QdiscProbe, PSCHED_MTU};
use crate::packet::Packet;
use crate::units::{Bytes, Dur, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqPieConfig {
    /// Packets over all flows (tc `limit`).
    pub limit: u32,
    /// Hash buckets (tc `flows`, 1..=65536).
    pub flows: u32,
    pub target: Dur,
    pub tupdate: Dur,
    /// Integral gain in 1/16 Hz (0..=32).
    pub alpha: u32,
    /// Proportional gain in 1/16 Hz (0..=32).
    pub beta: u32,
    /// DRR quantum in bytes (tc `quantum`, 1..=1 MiB).
    pub quantum: Bytes,
    /// Bytes; only counted (`overmemory`), as in Linux.
    pub memory_limit: Bytes,
    /// Mark instead of drop while the flow's p ≤ this percentage.
    pub ecn_prob: u32,
    pub ecn: bool,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
    /// Kernel CONFIG_HZ: the jiffy that `tupdate` is rounded up to.
    pub hz: u32,
}

impl Default for FqPieConfig {
    /// Linux `fq_pie_init` + `pie_params_init`.
    fn default() -> Self {
        FqPieConfig {
            limit: 10240,
            flows: 1024,
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(15),
            alpha: 2,
            beta: 20,
            quantum: Bytes(u64::from(PSCHED_MTU)),
            memory_limit: Bytes(32 << 20),
            ecn_prob: 10,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
            hz: DEFAULT_HZ,
        }
    }
}

impl FqPieConfig {
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.limit == 0 {
            errs.push("limit must be at least 1 packet".into());
        }
        if !(1..=65536).contains(&self.flows) {
            errs.push(format!("flows must be in 1..=65536 (as Linux accepts), got {}", self.flows));
        }
        if !(1..=1 << 20).contains(&self.quantum.0) {
            errs.push(format!("quantum must be 1..=1048576 bytes (as Linux accepts), got {}", self.quantum.0));
        }
        if self.ecn_prob > 100 {
            errs.push(format!("ecn_prob is a percentage (0..=100), got {}", self.ecn_prob));
        }
        validate_pie(&mut errs, self.alpha, self.beta, self.tupdate, self.target, self.hz);
        super::problems(errs)
    }

    pub fn params(&self) -> PieParams {
        pie_params(self.target, self.alpha, self.beta, self.bytemode, self.dq_rate_estimator)
    }

    /// Build with the default hash perturbation.
    pub fn build(&self) -> FqPie {
        self.build_with_perturbation(DEFAULT_PERTURBATION)
    }

    /// Build with a hash perturbation of the caller's choosing.
    pub fn build_with_perturbation(&self, perturbation: u32) -> FqPie {
        let flows = self.flows.clamp(1, 65536);
        FqPie {
            flows: (0..flows).map(|_| Flow::default()).collect(),
            drr: Drr::new(flows as usize, self.quantum.0.clamp(1, 1 << 20) as i64),
            hasher: FlowHasher::new(flows, perturbation),
            params: self.params(),
            limit: self.limit as usize,
            memory_limit: self.memory_limit.0,
            ecn: self.ecn,
            ecn_th: (MAX_PROB / 100) * u64::from(self.ecn_prob),
            period: tupdate_period(self.tupdate, self.hz).max(Dur(1)),
            next_update: SimTime::ZERO + first_update(self.hz),
            qlen: 0,
            backlog: 0,
            counts: FqPieCounts::default(),
        }
    }
}

/// Linux `tc_fq_pie_xstats`, plus the timer ticks performed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FqPieCounts {
    pub packets_in: u64,
    pub overlimit: u64,
    /// Arrivals while memory was over `memory_limit` (counted only).
    pub overmemory: u64,
    /// Early (AQM) and limit drops together, as Linux's `dropped`.
    pub dropped: u64,
    pub ecn_mark: u64,
    pub new_flow_count: u64,
    pub updates: u64,
}

#[derive(Default)]
struct Flow {
    q: VecDeque<Packet>,
    /// Bytes queued in this flow.
    backlog: u64,
    vars: PieVars,
}

pub struct FqPie {
    flows: Vec<Flow>,
    drr: Drr,
    hasher: FlowHasher,
    params: PieParams,
    limit: usize,
    memory_limit: u64,
    ecn: bool,
    /// `(MAX_PROB / 100) · ecn_prob`.
    ecn_th: u64,
    period: Dur,
    next_update: SimTime,
    qlen: usize,
    /// Bytes over all flows; also the memory charged.
    backlog: u64,
    counts: FqPieCounts,
}

impl FqPie {
    pub fn counts(&self) -> &FqPieCounts {
        &self.counts
    }
    /// Bucket of a flow tuple.
    pub fn bucket(&self, tuple: u32) -> usize {
        self.hasher.index(tuple) as usize
    }
    /// The PIE state of bucket `i`.
    pub fn flow_vars(&self, i: usize) -> &PieVars {
        &self.flows[i].vars
    }
    /// Bytes queued in bucket `i`.
    pub fn flow_backlog(&self, i: usize) -> u64 {
        self.flows[i].backlog
    }

    /// Run every timer tick due at or before `now`: each updates every
    /// flow's p with that flow's backlog (`fq_pie_timer`).
    pub fn catch_up(&mut self, now: SimTime) {
        while self.next_update <= now {
            let idle = self.qlen == 0;
            let mut changed = false;
            for f in &mut self.flows {
                if idle {
                    let before = f.vars.clone();
                    f.vars.calculate_probability(&self.params, f.backlog);
                    changed |= before != f.vars;
                } else {
                    f.vars.calculate_probability(&self.params, f.backlog);
                }
            }
            self.counts.updates += 1;
            self.next_update += self.period;
            if idle && !changed && self.next_update <= now {
                // Empty and every flow at a fixed point: skip the no-ops.
                let n = (now.0 - self.next_update.0) / self.period.nanos() + 1;
                self.counts.updates += n;
                self.next_update += self.period * n;
            }
        }
    }
}

impl Qdisc for FqPie {
    /// Linux `fq_pie_qdisc_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        let idx = self.hasher.classify(&pkt);
        let size = u64::from(pkt.size);
        let flow = &mut self.flows[idx];
        if self.qlen >= self.limit {
            self.counts.overlimit += 1;
            self.counts.dropped += 1;
            flow.vars.accu_prob = 0;
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        if self.backlog > self.memory_limit + size {
            self.counts.overmemory += 1;
        }
        let admit = if !flow.vars.drop_early(&self.params, flow.backlog, pkt.size, cx.rng) {
            true
        } else if self.ecn && flow.vars.prob <= self.ecn_th && cx.mark(&mut pkt) {
            self.counts.ecn_mark += 1;
            true
        } else {
            false
        };
        if !admit {
            self.counts.dropped += 1;
            flow.vars.accu_prob = 0;
            cx.drop(pkt, DropReason::Aqm);
            return;
        }
        self.counts.packets_in += 1;
        self.backlog += size;
        self.qlen += 1;
        flow.q.push_back(pkt);
        flow.backlog += size;
        if self.drr.on_enqueue(idx) {
            self.counts.new_flow_count += 1;
        }
    }

    /// Linux `fq_pie_qdisc_dequeue` (DRR++, no drops).
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        let FqPie { flows, drr, params, qlen, backlog, .. } = self;
        drr.dequeue(|idx| {
            let flow = &mut flows[idx];
            let p = flow.q.pop_front()?;
            let len = u64::from(p.size);
            *backlog -= len;
            *qlen -= 1;
            flow.backlog -= len;
            flow.vars.on_dequeue(params, cx.now, p.enq_at, p.size, flow.backlog);
            Some(p)
        })
    }

    fn len(&self) -> usize {
        self.qlen
    }
    fn bytes(&self) -> u64 {
        self.backlog
    }
    /// `base` is the largest per-flow p.
    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        self.catch_up(now);
        let p = self.flows.iter().map(|f| f.vars.prob_f64()).fold(0.0, f64::max);
        QdiscProbe { base: p, ..QdiscProbe::NONE }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::qdisc::blocks::pie::ticks;
    use crate::packet::Ecn;
    use crate::qdisc::blocks::drr::List;
    use crate::qdisc::testing::{pkt, Harness};

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    fn p(t: u32, size: u32, ecn: Ecn) -> Packet {
        let mut p = pkt(t, ecn);
        p.size = size;
        p
    }

    /// Tuples hashing to `n` different buckets.
    fn distinct(q: &FqPie, n: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let mut t = 0;
        while out.len() < n {
            if out.iter().all(|&o| q.bucket(o) != q.bucket(t)) {
                out.push(t);
            }
            t += 1;
        }
        out
    }

    #[test]
    fn defaults_match_linux() {
        let c: FqPieConfig = toml::from_str("").unwrap();
        assert_eq!(c, FqPieConfig::default());
        assert_eq!(
            (c.limit, c.flows, c.quantum, c.memory_limit, c.ecn_prob, c.ecn),
            (10240, 1024, Bytes(1514), Bytes(32 << 20), 10, false)
        );
        let bad = FqPieConfig { flows: 0, quantum: Bytes(0), ecn_prob: 101, beta: 40, ..c }.validate().unwrap_err();
        for k in ["flows", "quantum", "ecn_prob", "beta"] {
            assert!(bad.contains(k), "{bad}");
        }
    }

    #[test]
    fn backlogged_flows_alternate_by_quantum() {
        let mut h = Harness::new();
        let mut q = FqPieConfig::default().build();
        let ab = distinct(&q, 2);
        for _ in 0..10 {
            h.enq(&mut q, ms(0), p(ab[0], 1514, Ecn::NotEct));
        }
        for _ in 0..10 {
            h.enq(&mut q, ms(0), p(ab[1], 1514, Ecn::NotEct));
        }
        let order: Vec<u32> = (0..20).map(|_| h.deq(&mut q, ms(1)).unwrap().tuple).collect();
        let want: Vec<u32> = (0..20).map(|i| ab[i % 2]).collect();
        assert_eq!(order, want);
        assert_eq!((q.counts().new_flow_count, q.drr.new_flow_count()), (2, 2));
    }

    /// Two unresponsive bulk flows, each offering the whole link rate, and
    /// a sparse flow (one small packet every 20 ms): the sparse flow's
    /// packets skip the bulk queues and its controller never moves, while
    /// each bulk flow's own p rises to hold its own queue.
    #[test]
    fn sparse_flow_keeps_low_delay_and_per_flow_probabilities_are_independent() {
        for seed in 1..=5u64 {
            let mut h = Harness::new();
            h.rng = crate::rng::SimRng::for_component(seed, "fq_pie");
            let mut q = FqPieConfig::default().build_with_perturbation(seed as u32);
            let abc = distinct(&q, 3);
            let (ia, ib, ic) = (q.bucket(abc[0]), q.bucket(abc[1]), q.bucket(abc[2]));
            let mut sparse_sojourn_max = Dur::ZERO;
            let mut bulk_sojourn = Vec::new();
            // One departure per ms (≈ 12 Mbit/s of 1514 B packets).
            for t in 0..6000u64 {
                h.enq(&mut q, ms(t), p(abc[0], 1514, Ecn::NotEct));
                h.enq(&mut q, ms(t), p(abc[1], 1514, Ecn::NotEct));
                if t % 20 == 7 {
                    h.enq(&mut q, ms(t), p(abc[2], 200, Ecn::NotEct));
                }
                if let Some(d) = h.deq(&mut q, ms(t)) {
                    let s = ms(t).since(d.enq_at);
                    if d.tuple == abc[2] {
                        sparse_sojourn_max = sparse_sojourn_max.max(s);
                    } else if t > 3000 {
                        bulk_sojourn.push(s.as_millis_f64());
                    }
                }
            }
            assert!(sparse_sojourn_max <= Dur::from_millis(1), "seed {seed}: sparse waited {sparse_sojourn_max}");
            assert_eq!(q.flow_vars(ic).prob, 0, "seed {seed}: the sparse flow's p");
            let (pa, pb) = (q.flow_vars(ia).prob_f64(), q.flow_vars(ib).prob_f64());
            // Each bulk flow offers 2× its share. Before the first update
            // (500 ms) each built a ≈ 500 ms queue, so the +2 % steps for
            // qdelay > 250 ms pushed p past 1 (Linux's u64 p is not clamped
            // at MAX_PROB; measured ≈ 1.4 at 6 s); it then falls by
            // alpha·(qdelay − target) per update. Either way, both bulk
            // controllers act and hold their queues short.
            assert!(pa > 0.5 && pb > 0.5, "seed {seed}: {pa} {pb}");
            let mean = bulk_sojourn.iter().sum::<f64>() / bulk_sojourn.len() as f64;
            assert!(mean < 60.0, "seed {seed}: bulk sojourn {mean} ms");
            assert!(q.counts().dropped > 1000);
        }
    }

    /// A keeps 30 packets (≈ 30 ms at one departure per ms) queued for
    /// 1.2 s; B sends one packet per 2 ms and is served at once. Returns the
    /// qdisc and A's and B's buckets.
    fn standing_queue(h: &mut Harness) -> (FqPie, usize, usize) {
        let mut q = FqPieConfig::default().build();
        let ab = distinct(&q, 2);
        for _ in 0..30 {
            h.enq(&mut q, ms(0), p(ab[0], 1514, Ecn::NotEct));
        }
        for t in 1..1200u64 {
            h.enq(&mut q, ms(t), p(ab[0], 1514, Ecn::NotEct));
            if t % 2 == 0 {
                h.enq(&mut q, ms(t), p(ab[1], 1514, Ecn::NotEct));
            }
            h.deq(&mut q, ms(t));
            if t % 2 == 0 {
                h.deq(&mut q, ms(t));
            }
        }
        let (ia, ib) = (q.bucket(ab[0]), q.bucket(ab[1]));
        (q, ia, ib)
    }

    #[test]
    fn flow_with_standing_queue_raises_only_its_own_p() {
        let mut h = Harness::new();
        let (mut q, ia, ib) = standing_queue(&mut h);
        assert!(q.flow_vars(ia).prob > 0, "A's p");
        assert_eq!(q.flow_vars(ib).prob, 0, "B's p");
        assert!(q.flow_vars(ia).qdelay > ticks(Dur::from_millis(15)));
        // The probe reports the largest flow's p.
        let pa = q.flow_vars(ia).prob_f64();
        assert_eq!(q.probe(ms(1199)).base, pa);
    }

    /// An idle qdisc still decays every flow's p once per `tupdate`
    /// (RFC 8033 §4.2: at zero delay p falls by alpha·target and 2 % a
    /// step): catching up over 60 ms in one call gives what a tick at a
    /// time gives, and only ticks that change nothing are skipped.
    #[test]
    fn idle_catch_up_decays_p_as_ticking_does() {
        let (mut h1, mut h2) = (Harness::new(), Harness::new());
        let (mut q1, ia, _) = standing_queue(&mut h1);
        let (mut q2, ..) = standing_queue(&mut h2);
        while h1.deq(&mut q1, ms(1200)).is_some() {}
        while h2.deq(&mut q2, ms(1200)).is_some() {}
        let p0 = q1.flow_vars(ia).prob;
        q1.catch_up(ms(1260));
        for t in 1200..=1260 {
            q2.catch_up(ms(t));
        }
        assert_eq!(q1.flow_vars(ia), q2.flow_vars(ia));
        assert_eq!(q1.counts().updates, q2.counts().updates);
        let p = q1.flow_vars(ia).prob;
        assert!(p > 0 && p < p0, "{p0} -> {p}");
        // Seconds on p is 0 and every tick a no-op: those are skipped in one
        // step, counted, and the tick after them falls where it would have.
        let mut t = 1260;
        for end in [5000, 5007, 5016, 5031, 9000] {
            q1.catch_up(ms(end));
            while t < end {
                t += 1;
                q2.catch_up(ms(t));
            }
            assert_eq!(q1.counts().updates, q2.counts().updates, "at {end} ms");
            assert_eq!(q1.flow_vars(ia), q2.flow_vars(ia));
        }
        assert_eq!(q1.flow_vars(ia).prob, 0);
        // One update each tupdate from the first, at 500 ms.
        let c = FqPieConfig::default();
        let (first, period) = (first_update(c.hz).nanos(), tupdate_period(c.tupdate, c.hz).nanos());
        assert_eq!(q1.counts().updates, (ms(9000).0 - first) / period + 1);
    }

    #[test]
    fn ecn_prob_sets_the_mark_threshold() {
        for (ecn_prob, marks) in [(20, true), (10, false)] {
            let mut h = Harness::new();
            let mut q = FqPieConfig { ecn: true, ecn_prob, ..Default::default() }.build();
            let i = q.bucket(1);
            for _ in 0..10 {
                h.enq(&mut q, ms(0), p(1, 1514, Ecn::NotEct));
            }
            let v = &mut q.flows[i].vars;
            v.burst_time = 0;
            v.qdelay = ticks(Dur::from_millis(30));
            v.prob = MAX_PROB / 100 * 15;
            for _ in 0..500 {
                h.enq(&mut q, ms(1), p(1, 1514, Ecn::Ect1));
            }
            let c = q.counts();
            if marks {
                assert!(c.ecn_mark > 20 && c.dropped == 0, "{c:?}");
            } else {
                assert!(c.ecn_mark == 0 && c.dropped > 20, "{c:?}");
            }
        }
    }

    #[test]
    fn memory_limit_is_only_counted() {
        // Over once memory exceeds limit + size (Linux's test, before
        // adding): backlogs 0, 1514, 3028, 4542, ... B at the arrivals.
        for (limit, over) in [(3000, 7), (1514, 7), (1513, 8)] {
            let mut h = Harness::new();
            let mut q = FqPieConfig { memory_limit: Bytes(limit), ..Default::default() }.build();
            for _ in 0..10 {
                h.enq(&mut q, ms(0), p(1, 1514, Ecn::NotEct));
            }
            assert_eq!(q.len(), 10);
            assert_eq!(h.stats.drops(), 0);
            assert_eq!(q.counts().overmemory, over, "memory_limit {limit}");
        }
    }

    #[test]
    fn packets_over_the_limit_are_dropped_and_counted() {
        let mut h = Harness::new();
        let mut q = FqPieConfig { limit: 5, ..Default::default() }.build();
        for _ in 0..8 {
            h.enq(&mut q, ms(0), p(1, 1514, Ecn::NotEct));
        }
        let c = q.counts();
        assert_eq!((q.len(), h.stats.drops()), (5, 3));
        assert_eq!((c.packets_in, c.overlimit, c.dropped), (5, 3, 3));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enq { tuple: u32, size: u32, ecn: u8 },
        Deq,
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..12, 64u32..=1514, 0u8..4).prop_map(|(tuple, size, ecn)| Op::Enq { tuple, size, ecn }),
            3 => Just(Op::Deq),
            1 => (0u64..80_000_000).prop_map(Op::Wait),
        ]
    }

    proptest! {
        #[test]
        fn conserves_packets_and_keeps_lists_consistent(
            ops in proptest::collection::vec(op(), 1..400),
            ecn: bool, flows in 1u32..6, limit in 1u32..40, quantum in 64u64..3000,
        ) {
            let mut h = Harness::new();
            let cfg = FqPieConfig { limit, ecn, flows, quantum: Bytes(quantum), ..Default::default() };
            let mut q = cfg.build();
            let (mut now, mut arrived, mut departed) = (SimTime::ZERO, 0u64, 0u64);
            let ecns = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
            for o in ops {
                match o {
                    Op::Enq { tuple, size, ecn } => {
                        // Make the controllers bite sometimes.
                        for f in &mut q.flows {
                            f.vars.burst_time = 0;
                        }
                        h.enq(&mut q, now, p(tuple, size, ecns[ecn as usize]));
                        arrived += 1;
                    }
                    Op::Deq => departed += u64::from(h.deq(&mut q, now).is_some()),
                    Op::Wait(ns) => now += Dur(ns),
                }
                prop_assert_eq!(arrived, departed + h.stats.drops() + q.len() as u64);
                prop_assert!(q.len() <= limit as usize);
                let (mut n, mut b) = (0usize, 0u64);
                for (i, f) in q.flows.iter().enumerate() {
                    let fb: u64 = f.q.iter().map(|p| u64::from(p.size)).sum();
                    prop_assert_eq!(fb, f.backlog);
                    (n, b) = (n + f.q.len(), b + fb);
                    let on_new = q.drr.new_flows().iter().filter(|&&x| x as usize == i).count();
                    let on_old = q.drr.old_flows().iter().filter(|&&x| x as usize == i).count();
                    let want = match q.drr.list(i) { List::None => (0, 0), List::New => (1, 0), List::Old => (0, 1) };
                    prop_assert_eq!((on_new, on_old), want);
                    prop_assert!(f.q.is_empty() || q.drr.list(i) != List::None);
                }
                prop_assert_eq!((q.len(), q.bytes()), (n, b));
            }
            while h.deq(&mut q, now).is_some() {
                departed += 1;
            }
            prop_assert_eq!(arrived, departed + h.stats.drops());
        }
    }
}
