//! `fq_codel` (RFC 8290; Linux net/sched/sch_fq_codel.c): flows hashed into
//! `flows` buckets (`blocks::flow_hash`), each a FIFO with its own deficit
//! and CoDel state (`blocks::codel`), served by DRR++ over a new-flows and
//! an old-flows list (RFC 8290 §4.2–4.3; `blocks::drr`, shared with
//! FQ-PIE). On overflow, packets are dropped from the head of the flow
//! with the largest byte backlog (`fq_codel_drop`).
//! Defaults as Linux: flows 1024, limit 10240 packets, memory_limit 32 MiB,
//! quantum 1514, drop_batch 64, target 5 ms, interval 100 ms, ECN on.
//!
//! Units: time in ns, sizes and deficits in bytes.
//! Deviations: memory is charged `pkt.size` bytes per packet, not Linux's
//! `skb->truesize` (larger, notably for ACKs), so `memory_limit` binds later
//! than in Linux; the hash key is an explicit perturbation (see flow_hash);
//! drop_batch is clamped to ≥ 1 (the intent of Linux's `min(1U, …)`, later
//! fixed to `max`); no tc filters or skb->priority classification.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::blocks::codel::{CodelParams, CodelQueue, CodelVars, TosSelector};
use super::blocks::drr::Drr;
use super::blocks::flow_hash::{FlowHasher, DEFAULT_PERTURBATION};
use super::{Cx, DropReason, Qdisc, PSCHED_MTU};
use crate::packet::Packet;
use crate::units::{Bytes, Dur};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    /// Packets over all flows (tc `limit`).
    pub limit: u64,
    pub target: Dur,
    pub interval: Dur,
    pub ecn: bool,
    /// Step-mark ECT packets whose sojourn exceeds this (tc `ce_threshold`).
    pub ce_threshold: Option<Dur>,
    /// `"VALUE/MASK"` on the TOS byte restricting `ce_threshold`
    /// (tc `ce_threshold_selector`), e.g. `"0x1/0x3"` for ECT(1) only.
    pub ce_threshold_selector: Option<TosSelector>,
    /// Hash buckets (tc `flows`), 1..=65536 as Linux accepts.
    pub flows: u32,
    /// DRR quantum in bytes (tc `quantum`); Linux raises it to ≥ 256.
    pub quantum: Bytes,
    /// Bytes of queued packets (tc `memory_limit`), charged `pkt.size`.
    pub memory_limit: Bytes,
    /// Most packets dropped from the fat flow per overflow (tc `drop_batch`).
    pub drop_batch: u32,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            limit: 10240,
            target: Dur::from_millis(5),
            interval: Dur::from_millis(100),
            ecn: true,
            ce_threshold: None,
            ce_threshold_selector: None,
            flows: 1024,
            quantum: Bytes(u64::from(PSCHED_MTU)),
            memory_limit: Bytes(32 << 20),
            drop_batch: 64,
        }
    }
}

impl FqCodelConfig {
    /// `fq_codel_change`'s checks: 1..=65536 buckets, a quantum of at most
    /// 1 MiB (`FQ_CODEL_QUANTUM_MAX`).
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if !(1..=65536).contains(&self.flows) {
            errs.push(format!("flows must be in 1..=65536 (as Linux accepts), got {}", self.flows));
        }
        if self.quantum.0 > 1 << 20 {
            errs.push(format!("quantum must be at most 1048576 bytes (as Linux accepts), got {}", self.quantum.0));
        }
        super::problems(errs)
    }

    pub fn params(&self) -> CodelParams {
        CodelParams {
            target: self.target,
            interval: self.interval,
            mtu: PSCHED_MTU,
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: self.ce_threshold_selector,
        }
    }
    /// Build with the default hash perturbation.
    pub fn build(&self) -> FqCodel {
        self.build_with_perturbation(DEFAULT_PERTURBATION)
    }
    /// Build with a hash perturbation of the caller's choosing (e.g. one
    /// `next_u32()` from the qdisc's own SimRng stream).
    pub fn build_with_perturbation(&self, perturbation: u32) -> FqCodel {
        let flows = self.flows.clamp(1, 65536);
        let quantum = self.quantum.0.clamp(256, i32::MAX as u64) as i64;
        FqCodel {
            flows: (0..flows).map(|_| Flow::default()).collect(),
            drr: Drr::new(flows as usize, quantum),
            hasher: FlowHasher::new(flows, perturbation),
            params: self.params(),
            limit: self.limit,
            memory_limit: self.memory_limit.0,
            drop_batch: self.drop_batch.max(1),
            qlen: 0,
            backlog: 0,
        }
    }
}

#[derive(Default)]
struct Flow {
    /// Allocated on first use, then reused.
    q: VecDeque<Packet>,
    /// Bytes queued in this flow (Linux `backlogs[idx]`).
    backlog: u64,
    cvars: CodelVars,
}

pub struct FqCodel {
    flows: Vec<Flow>,
    /// DRR++ new/old lists and deficits.
    drr: Drr,
    hasher: FlowHasher,
    params: CodelParams,
    limit: u64,
    memory_limit: u64,
    drop_batch: u32,
    /// Packets over all flows.
    qlen: usize,
    /// Bytes over all flows; also the memory charged (see header).
    backlog: u64,
}

/// One flow's FIFO seen through CoDel: pops update the flow's and the
/// qdisc's counters, and the guard sees the whole qdisc's backlog (Linux
/// passes `&sch->qstats.backlog` to `codel_dequeue`).
struct FlowSource<'a> {
    q: &'a mut VecDeque<Packet>,
    flow_backlog: &'a mut u64,
    qlen: &'a mut usize,
    backlog: &'a mut u64,
}

impl CodelQueue for FlowSource<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        let len = u64::from(p.size);
        *self.flow_backlog -= len;
        *self.backlog -= len;
        *self.qlen -= 1;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        *self.backlog
    }
}

impl FqCodel {
    /// Flows that became active since build (Linux `new_flow_count`).
    pub fn new_flow_count(&self) -> u64 {
        self.drr.new_flow_count()
    }

    /// Linux `fq_codel_drop`: drop from the head of the flow with the most
    /// bytes queued, up to `drop_batch` packets or until half its backlog is
    /// gone, and raise that flow's CoDel count by the number dropped.
    fn drop_from_fattest(&mut self, cx: &mut Cx) {
        // Strict '>' keeps the lowest index on ties, as the Linux scan does.
        let (mut idx, mut maxbacklog) = (0, 0);
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > maxbacklog {
                (idx, maxbacklog) = (i, f.backlog);
            }
        }
        let threshold = maxbacklog >> 1;
        let flow = &mut self.flows[idx];
        let (mut len, mut i) = (0u64, 0u32);
        while let Some(p) = flow.q.pop_front() {
            len += u64::from(p.size);
            i += 1;
            cx.drop(p, DropReason::Overlimit);
            if i >= self.drop_batch || len >= threshold {
                break;
            }
        }
        // Tell CoDel to signal harder on this flow too.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        flow.backlog -= len;
        self.backlog -= len;
        self.qlen -= i as usize;
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        let idx = self.hasher.classify(&pkt);
        let len = u64::from(pkt.size);
        let flow = &mut self.flows[idx];
        flow.q.push_back(pkt);
        flow.backlog += len;
        self.backlog += len;
        self.qlen += 1;
        // RFC 8290 §4.1.2: a flow on neither list becomes a new flow.
        self.drr.on_enqueue(idx);
        if self.qlen as u64 <= self.limit && self.backlog <= self.memory_limit {
            return;
        }
        self.drop_from_fattest(cx);
    }

    /// `fq_codel_change`: new parameters (not `flows`), per-flow state
    /// kept; while over a lowered limit, packets are dequeued and dropped.
    fn change(&mut self, cfg: &super::QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        let super::QdiscConfig::FqCodel(c) = cfg else { return Err("`change` cannot switch the qdisc kind".into()) };
        if c.flows.clamp(1, 65536) as usize != self.flows.len() {
            return Err("fq_codel `flows` cannot be changed after creation".into());
        }
        self.params = c.params();
        self.limit = c.limit;
        self.drr.set_quantum(c.quantum.0.clamp(256, i32::MAX as u64) as i64);
        self.memory_limit = c.memory_limit.0;
        self.drop_batch = c.drop_batch.max(1);
        while self.qlen as u64 > self.limit || self.backlog > self.memory_limit {
            match self.dequeue(cx) {
                Some(p) => cx.drop(p, DropReason::Overlimit),
                None => break,
            }
        }
        Ok(())
    }
    /// RFC 8290 §4.2 / Linux `fq_codel_dequeue`: DRR++ (`blocks::drr`)
    /// over the flows, each served through its CoDel, which may drop.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let FqCodel { flows, drr, params, qlen, backlog, .. } = self;
        drr.dequeue(|idx| {
            let Flow { q, backlog: flow_backlog, cvars } = &mut flows[idx];
            let mut src = FlowSource { q, flow_backlog, qlen, backlog };
            cvars.dequeue(params, &mut src, cx)
        })
    }

    fn len(&self) -> usize {
        self.qlen
    }
    fn bytes(&self) -> u64 {
        self.backlog
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::blocks::drr::List;
    use crate::qdisc::codel::CodelConfig;
    use crate::qdisc::QdiscConfig;
    use crate::qdisc::testing::{pkt, Harness};
    use crate::units::SimTime;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// A packet of tuple `t` with `size` bytes, tagged `id` in `sent_at`.
    fn p(t: u32, size: u32, id: u64) -> Packet {
        let mut p = pkt(t, Ecn::NotEct);
        p.size = size;
        p.sent_at = SimTime(id);
        p
    }

    /// Two tuples that hash to different buckets under `q`.
    fn distinct(q: &FqCodel, n: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for t in 0.. {
            if out.len() == n {
                break;
            }
            if out.iter().all(|&o| q.hasher.index(o) != q.hasher.index(t)) {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn defaults_match_linux() {
        let c: FqCodelConfig = toml::from_str("").unwrap();
        assert_eq!(c, FqCodelConfig::default());
        assert_eq!((c.flows, c.quantum, c.memory_limit, c.drop_batch, c.ecn), (1024, Bytes(1514), Bytes(32 << 20), 64, true));
        let q = FqCodelConfig { flows: 0, quantum: Bytes(10), drop_batch: 0, ..c }.build();
        assert_eq!((q.flows.len(), q.drr.quantum(), q.drop_batch), (1, 256, 1));
    }

    #[test]
    fn backlogged_flows_with_equal_sizes_share_bytes_equally() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig::default().build();
        let ab = distinct(&q, 2);
        for i in 0..20 {
            h.enq(&mut q, SimTime::ZERO, p(ab[0], 1514, i));
        }
        for i in 0..20 {
            h.enq(&mut q, SimTime::ZERO, p(ab[1], 1514, 100 + i));
        }
        let order: Vec<u32> = (0..20).map(|_| h.deq(&mut q, ms(1)).unwrap().tuple).collect();
        // Quantum = one packet: strict alternation, A first (it arrived first).
        let want: Vec<u32> = (0..20).map(|i| ab[i % 2]).collect();
        assert_eq!(order, want);
    }

    #[test]
    fn unequal_packet_sizes_still_get_equal_bytes_within_a_quantum() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig::default().build();
        let ab = distinct(&q, 2);
        for i in 0..100 {
            h.enq(&mut q, SimTime::ZERO, p(ab[0], 1514, i));
            h.enq(&mut q, SimTime::ZERO, p(ab[1], 300, i));
            h.enq(&mut q, SimTime::ZERO, p(ab[1], 300, i));
            h.enq(&mut q, SimTime::ZERO, p(ab[1], 300, i));
        }
        let mut bytes = [0i64; 2];
        for _ in 0..120 {
            let d = h.deq(&mut q, ms(1)).unwrap();
            bytes[usize::from(d.tuple == ab[1])] += i64::from(d.size);
            assert!((bytes[0] - bytes[1]).abs() <= 2 * 1514, "{bytes:?}");
        }
    }

    #[test]
    fn sparse_flow_packet_jumps_ahead_of_backlogged_flows() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig::default().build();
        let abc = distinct(&q, 3);
        for i in 0..10 {
            h.enq(&mut q, SimTime::ZERO, p(abc[0], 1514, i));
            h.enq(&mut q, SimTime::ZERO, p(abc[1], 1514, i));
        }
        for _ in 0..4 {
            h.deq(&mut q, ms(1));
        }
        h.enq(&mut q, ms(1), p(abc[2], 100, 0));
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().tuple, abc[2]);
        assert_eq!(q.new_flow_count(), 3);
    }

    #[test]
    fn emptied_new_flow_moves_to_old_list_when_old_is_busy() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig::default().build();
        let abc = distinct(&q, 3);
        let ic = q.hasher.index(abc[2]) as usize;
        for i in 0..10 {
            h.enq(&mut q, SimTime::ZERO, p(abc[0], 1514, i));
            h.enq(&mut q, SimTime::ZERO, p(abc[1], 1514, i));
        }
        for _ in 0..4 {
            h.deq(&mut q, ms(1)); // A and B now cycle on the old list
        }
        h.enq(&mut q, ms(1), p(abc[2], 100, 0));
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().tuple, abc[2]);
        // C still has credit but is empty: it moves to the old list.
        assert_ne!(h.deq(&mut q, ms(1)).unwrap().tuple, abc[2]);
        assert_eq!(q.drr.list(ic), List::Old);
        assert!(q.drr.old_flows().contains(&(ic as u32)) && q.drr.new_flows().is_empty());
        // So C's next packet does not make it a new flow again: no new-list
        // priority, and its leftover credit is kept rather than reset.
        h.enq(&mut q, ms(1), p(abc[2], 100, 1));
        assert!(q.drr.new_flows().is_empty());
        assert_eq!(q.drr.deficit(ic), 1514 - 100);
        assert_eq!(q.new_flow_count(), 3);
    }

    #[test]
    fn emptied_new_flow_is_forgotten_when_old_list_is_empty() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig::default().build();
        let cd = distinct(&q, 2);
        let ic = q.hasher.index(cd[0]) as usize;
        h.enq(&mut q, SimTime::ZERO, p(cd[0], 100, 0));
        h.enq(&mut q, SimTime::ZERO, p(cd[1], 1514, 1));
        h.enq(&mut q, SimTime::ZERO, p(cd[1], 1514, 2));
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().tuple, cd[0]);
        // C is empty with the old list empty: it leaves the lists entirely.
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().tuple, cd[1]);
        assert_eq!(q.drr.list(ic), List::None);
        assert!(q.drr.old_flows().is_empty());
        // Its next packet makes it a new flow again, with fresh credit.
        h.enq(&mut q, ms(1), p(cd[0], 100, 3));
        assert_eq!((q.drr.list(ic), q.drr.deficit(ic), q.new_flow_count()), (List::New, 1514, 3));
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().sent_at, SimTime(3));
    }

    #[test]
    fn overflow_drops_from_head_of_fattest_flow_not_the_arrival() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig { limit: 10, ..Default::default() }.build();
        let ab = distinct(&q, 2);
        let ia = q.hasher.index(ab[0]) as usize;
        for i in 0..10 {
            h.enq(&mut q, SimTime::ZERO, p(ab[0], 1514, i));
        }
        assert_eq!(h.stats.drops(), 0);
        h.enq(&mut q, SimTime::ZERO, p(ab[1], 100, 99));
        // Half of A's 15140 B is 7570 B = 5 packets, all from A's head.
        assert_eq!(h.stats.drops_overlimit, 5);
        assert_eq!(q.len(), 6);
        assert_eq!(q.bytes(), 5 * 1514 + 100);
        assert_eq!(q.flows[ia].q.front().unwrap().sent_at, SimTime(5));
        assert_eq!(q.flows[ia].cvars.count, 5, "CoDel count raised by the drops");
        let ids: Vec<(u32, SimTime)> = (0..6).map(|_| h.deq(&mut q, ms(1)).unwrap()).map(|p| (p.tuple, p.sent_at)).collect();
        assert!(ids.contains(&(ab[1], SimTime(99))));
    }

    #[test]
    fn overflow_ties_go_to_the_lowest_flow_index_as_linuxs_scan() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig { limit: 4, ..Default::default() }.build();
        let abc = distinct(&q, 3);
        for &t in &abc[..2] {
            h.enq(&mut q, SimTime::ZERO, p(t, 1514, 0));
            h.enq(&mut q, SimTime::ZERO, p(t, 1514, 1));
        }
        h.enq(&mut q, SimTime::ZERO, p(abc[2], 100, 9));
        // Equal backlogs: the first flow in table order loses half of its 3028 B.
        let (ia, ib) = (q.hasher.index(abc[0]) as usize, q.hasher.index(abc[1]) as usize);
        let (lo, hi) = (ia.min(ib), ia.max(ib));
        assert_eq!((h.stats.drops_overlimit, q.flows[lo].q.len(), q.flows[hi].q.len()), (1, 1, 2));
    }

    #[test]
    fn change_keeps_the_flows_and_drops_down_to_a_lowered_limit() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig { limit: 10, ..Default::default() }.build();
        for i in 0..10 {
            h.enq(&mut q, SimTime::ZERO, p(1, 1514, i));
        }
        let mut cx = Cx { now: SimTime::ZERO, rng: &mut h.rng, stats: &mut h.stats };
        let lower = FqCodelConfig { limit: 6, drop_batch: 1, ..Default::default() };
        q.change(&QdiscConfig::FqCodel(lower.clone()), &mut cx).unwrap();
        // Dequeued from the head and dropped until exactly the new limit is left.
        assert_eq!((q.len(), cx.stats.drops_overlimit), (6, 4));
        assert_eq!(q.flows[q.hasher.index(1) as usize].q.front().unwrap().sent_at, SimTime(4));
        // The new limit and drop batch hold for later arrivals.
        h.enq(&mut q, SimTime::ZERO, p(1, 1514, 10));
        assert_eq!((q.len(), h.stats.drops_overlimit), (6, 5));
        // A memory limit of exactly the backlog of four packets keeps four.
        let mut cx = Cx { now: SimTime::ZERO, rng: &mut h.rng, stats: &mut h.stats };
        let tight = FqCodelConfig { memory_limit: Bytes(4 * 1514), ..lower.clone() };
        q.change(&QdiscConfig::FqCodel(tight), &mut cx).unwrap();
        assert_eq!(q.len(), 4);
        let other = FqCodelConfig { flows: 64, ..lower };
        assert!(q.change(&QdiscConfig::FqCodel(other), &mut cx).unwrap_err().contains("flows"));
    }

    #[test]
    fn overflow_drop_is_capped_by_drop_batch_and_memory_limit_counts() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig { limit: 10, drop_batch: 2, ..Default::default() }.build();
        for i in 0..11 {
            h.enq(&mut q, SimTime::ZERO, p(1, 1514, i));
        }
        assert_eq!((h.stats.drops_overlimit, q.len()), (2, 9));
        let mut h = Harness::new();
        let mut q = FqCodelConfig { memory_limit: Bytes(4 * 1514), ..Default::default() }.build();
        for i in 0..5 {
            h.enq(&mut q, SimTime::ZERO, p(1, 1514, i));
        }
        // 5 × 1514 B > 4 × 1514 B: drop until half of 7570 B (3785 B) is gone.
        assert_eq!((h.stats.drops_overlimit, q.len()), (3, 2));
    }

    #[test]
    fn codel_mtu_guard_counts_the_whole_qdisc_backlog() {
        let mut h = Harness::new();
        let mut q = FqCodelConfig { ecn: false, ..Default::default() }.build();
        let ab = distinct(&q, 2);
        for i in 0..3 {
            h.enq(&mut q, SimTime::ZERO, p(ab[0], 1514, i));
        }
        for i in 0..20 {
            h.enq(&mut q, SimTime::ZERO, p(ab[1], 1514, 100 + i));
        }
        assert_eq!(h.deq(&mut q, ms(10)).unwrap().sent_at, SimTime(0)); // A: first_above = 110 ms
        assert_eq!(h.deq(&mut q, ms(10)).unwrap().sent_at, SimTime(100));
        // A has only one MTU left behind its head, but the qdisc has far
        // more, so A's CoDel drops A's head.
        assert_eq!(h.deq(&mut q, ms(200)).unwrap().sent_at, SimTime(2));
        assert_eq!(h.stats.drops_aqm, 1);
    }

    #[test]
    fn one_flow_behaves_as_a_single_codel_queue() {
        // Same drive through fq_codel(flows=1) and codel: same output.
        let fq = FqCodelConfig { flows: 1, ecn: false, ..Default::default() };
        let cd = CodelConfig { limit: 100_000, ..Default::default() };
        let (mut hf, mut hc) = (Harness::new(), Harness::new());
        let (mut qf, mut qc) = (fq.build(), cd.build());
        let (mut outf, mut outc) = (Vec::new(), Vec::new());
        for t in 0..3000u64 {
            for k in 0..2u64 {
                let pk = p((t * 2 + k) as u32 % 7, 1514, t * 2 + k);
                hf.enq(&mut qf, ms(t), pk);
                hc.enq(&mut qc, ms(t), pk);
            }
            outf.push(hf.deq(&mut qf, ms(t)).map(|p| p.sent_at));
            outc.push(hc.deq(&mut qc, ms(t)).map(|p| p.sent_at));
        }
        assert_eq!(outf, outc);
        assert!(hf.stats.drops_aqm > 100, "{}", hf.stats.drops_aqm);
        assert_eq!(hf.stats, hc.stats);
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
            1 => (0u64..40_000_000).prop_map(Op::Wait),
        ]
    }

    fn check(q: &FqCodel) -> Result<(), TestCaseError> {
        let (mut n, mut b) = (0usize, 0u64);
        for (i, f) in q.flows.iter().enumerate() {
            let fb: u64 = f.q.iter().map(|p| u64::from(p.size)).sum();
            prop_assert_eq!(fb, f.backlog);
            (n, b) = (n + f.q.len(), b + fb);
            let on_new = q.drr.new_flows().iter().filter(|&&x| x as usize == i).count();
            let on_old = q.drr.old_flows().iter().filter(|&&x| x as usize == i).count();
            let want = match q.drr.list(i) {
                List::None => (0, 0),
                List::New => (1, 0),
                List::Old => (0, 1),
            };
            prop_assert_eq!((on_new, on_old), want, "flow {} list membership", i);
            prop_assert!(f.q.is_empty() || q.drr.list(i) != List::None, "backlogged flow {} on no list", i);
        }
        prop_assert_eq!(q.len(), n);
        prop_assert_eq!(q.bytes(), b);
        Ok(())
    }

    proptest! {
        #[test]
        fn conserves_packets_and_keeps_lists_consistent(
            ops in proptest::collection::vec(op(), 1..400),
            ecn: bool, flows in 1u32..6, limit in 1u64..40, batch in 1u32..8, mem in 1500u64..40_000,
        ) {
            let mut h = Harness::new();
            let cfg = FqCodelConfig {
                limit, ecn, flows, drop_batch: batch, memory_limit: Bytes(mem),
                quantum: Bytes(300), ce_threshold: Some(Dur::from_millis(3)), ..Default::default()
            };
            let mut q = cfg.build();
            let (mut now, mut arrived, mut departed) = (SimTime::ZERO, 0u64, 0u64);
            let ecns = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
            for o in ops {
                match o {
                    Op::Enq { tuple, size, ecn } => {
                        let mut pk = pkt(tuple, ecns[ecn as usize]);
                        pk.size = size;
                        h.enq(&mut q, now, pk);
                        arrived += 1;
                    }
                    Op::Deq => departed += u64::from(h.deq(&mut q, now).is_some()),
                    Op::Wait(ns) => now += Dur(ns),
                }
                prop_assert_eq!(arrived, departed + h.stats.drops() + q.len() as u64);
                prop_assert!(q.len() as u64 <= limit);
                check(&q)?;
            }
            // Draining returns every remaining packet.
            while h.deq(&mut q, now).is_some() {
                departed += 1;
            }
            prop_assert_eq!(arrived, departed + h.stats.drops());
            prop_assert_eq!((q.len(), q.bytes()), (0, 0));
        }
    }
}
