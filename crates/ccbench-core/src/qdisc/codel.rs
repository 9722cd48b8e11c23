//! The `codel` qdisc (RFC 8289; Linux net/sched/sch_codel.c): one FIFO run
//! by the CoDel block (`blocks::codel`), tail drop at `limit` packets.
//! Defaults as Linux: limit 1000 packets, target 5 ms, interval 100 ms, ECN
//! off, no ce_threshold, mtu = psched_mtu (1514 B).
//!
//! Units: time in ns, sizes in bytes. Deviations: those of the CoDel block;
//! `ce_threshold_selector` is an extension (tc only offers it on fq_codel).
//! `sce` is ours too: Cake-SCE's ECT(0)→ECT(1) ramp (`blocks::sce`, ramp
//! divisor as tc's Cake `sce` option, 0 = off) applied at dequeue after
//! CoDel's own decision; chromi/sce's codel/fq_codel have no SCE marking.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::blocks::codel::{CodelParams, CodelQueue, CodelVars, TosSelector};
use super::blocks::sce::SceRamp;
use super::{Cx, DropReason, Qdisc, PSCHED_MTU};
use crate::packet::Packet;
use crate::units::{Bytes, Dur};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    /// Packets (tc `limit`); arrivals beyond it are tail-dropped.
    pub limit: u64,
    pub target: Dur,
    pub interval: Dur,
    /// CE-mark ECT packets instead of dropping (tc `ecn`/`noecn`).
    pub ecn: bool,
    /// Step-mark ECT packets whose sojourn exceeds this (tc `ce_threshold`).
    pub ce_threshold: Option<Dur>,
    /// `"VALUE/MASK"` on the TOS byte restricting `ce_threshold`, e.g.
    /// `"0x1/0x3"` for ECT(1) only.
    pub ce_threshold_selector: Option<TosSelector>,
    /// No drop while at most this much is queued (Linux: `psched_mtu`).
    pub mtu: Bytes,
    /// SCE marking ramp divisor (Cake's `sce` option; 0 = off).
    pub sce: u32,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            limit: 1000,
            target: Dur::from_millis(5),
            interval: Dur::from_millis(100),
            ecn: false,
            ce_threshold: None,
            ce_threshold_selector: None,
            mtu: Bytes(u64::from(PSCHED_MTU)),
            sce: 0,
        }
    }
}

impl CodelConfig {
    pub fn params(&self) -> CodelParams {
        CodelParams {
            target: self.target,
            interval: self.interval,
            mtu: u32::try_from(self.mtu.0).unwrap_or(u32::MAX),
            ecn: self.ecn,
            ce_threshold: self.ce_threshold,
            ce_threshold_selector: self.ce_threshold_selector,
        }
    }
    pub fn build(&self) -> Codel {
        Codel { fifo: Fifo::default(), params: self.params(), vars: CodelVars::new(), limit: self.limit, sce: SceRamp::new(self.target, self.sce), sce_marks: 0 }
    }
}

/// The packet FIFO; its byte count is the backlog CoDel's guard sees.
#[derive(Default)]
struct Fifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl CodelQueue for Fifo {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= u64::from(p.size);
        Some(p)
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

pub struct Codel {
    fifo: Fifo,
    params: CodelParams,
    vars: CodelVars,
    limit: u64,
    sce: Option<SceRamp>,
    /// Packets SCE-marked (ECT(0) → ECT(1)).
    pub sce_marks: u64,
}

impl Codel {
    /// The CoDel state, for tracing (`ldelay`, `count`, `dropping`).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        // sch_codel: accept while qlen < limit, else drop the arrival.
        if (self.fifo.q.len() as u64) < self.limit {
            self.fifo.bytes += u64::from(pkt.size);
            self.fifo.q.push_back(pkt);
        } else {
            cx.drop(pkt, DropReason::Overlimit);
        }
    }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        let mut pkt = self.vars.dequeue(&self.params, &mut self.fifo, cx)?;
        if let Some(sce) = &self.sce {
            let sojourn = cx.now.since(pkt.enq_at);
            if sce.apply(&mut pkt, sojourn, cx.rng) {
                self.sce_marks += 1;
            }
        }
        Some(pkt)
    }
    fn len(&self) -> usize {
        self.fifo.q.len()
    }
    fn bytes(&self) -> u64 {
        self.fifo.bytes
    }
    /// `codel_change`: new parameters, CoDel state kept; packets above a
    /// lowered limit are dropped from the head.
    fn change(&mut self, cfg: &super::QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        let super::QdiscConfig::Codel(c) = cfg else { return Err("`change` cannot switch the qdisc kind".into()) };
        self.params = c.params();
        self.limit = c.limit;
        while self.fifo.q.len() as u64 > self.limit {
            let p = self.fifo.pop().expect("non-empty");
            cx.drop(p, DropReason::Overlimit);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};
    use crate::units::SimTime;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    #[test]
    fn defaults_match_linux_and_parse_from_toml() {
        let c: CodelConfig = toml::from_str("").unwrap();
        assert_eq!(c, CodelConfig::default());
        assert_eq!((c.limit, c.ecn, c.mtu), (1000, false, Bytes(1514)));
        let c: CodelConfig =
            toml::from_str("ecn = true\nce_threshold = \"1ms\"\nce_threshold_selector = \"0x1/0x3\"").unwrap();
        assert_eq!(c.ce_threshold_selector, Some(TosSelector { value: 1, mask: 3 }));
        let e = toml::from_str::<CodelConfig>("ce_threshold_selector = \"0x5/0x3\"").unwrap_err();
        assert!(e.to_string().contains("never matches"), "{e}");
        assert!(toml::from_str::<CodelConfig>("flows = 3").is_err());
    }

    #[test]
    fn tail_drops_at_limit() {
        let mut h = Harness::new();
        let mut q = CodelConfig { limit: 3, ..Default::default() }.build();
        for i in 0..5 {
            let mut p = pkt(1, Ecn::NotEct);
            p.sent_at = SimTime(i);
            h.enq(&mut q, SimTime::ZERO, p);
        }
        assert_eq!((q.len(), q.bytes()), (3, 3 * 1514));
        assert_eq!(h.stats.drops_overlimit, 2);
        assert_eq!(h.deq(&mut q, ms(1)).unwrap().sent_at, SimTime(0));
    }

    #[test]
    fn unresponsive_overload_is_bounded() {
        // 5 arrivals per 4 ms against 1 departure per ms (25 % overload,
        // unresponsive): a FIFO would hold ~10 s of delay after 40 s. CoDel's
        // drop rate climbs until it beats the excess, drains, and restarts
        // from count − lastcount: a known sawtooth of a few hundred ms.
        let mut h = Harness::new();
        let mut q = CodelConfig { limit: 1_000_000, ..Default::default() }.build();
        let (mut late_sum, mut late_n, mut late_max_len) = (0u64, 0u64, 0usize);
        for t in 0..40_000u64 {
            let n = if t % 4 == 0 { 2 } else { 1 };
            for _ in 0..n {
                h.enq(&mut q, ms(t), pkt(1, Ecn::NotEct));
            }
            if let Some(p) = h.deq(&mut q, ms(t)) {
                if t >= 30_000 {
                    late_sum += ms(t).since(p.enq_at).nanos();
                    late_n += 1;
                    late_max_len = late_max_len.max(q.len());
                }
            }
        }
        let late_ms = late_sum as f64 / late_n as f64 / 1e6;
        assert!(late_ms < 250.0, "mean sojourn {late_ms} ms");
        assert!(late_max_len < 500, "{late_max_len} packets");
        assert!(h.stats.drops_aqm > 7_000, "{}", h.stats.drops_aqm);
    }

    #[test]
    fn ecn_marks_ect_and_drops_not_ect() {
        let mut h = Harness::new();
        let mut q = CodelConfig { ecn: true, limit: 10_000, ..Default::default() }.build();
        for i in 0..2000u32 {
            h.enq(&mut q, SimTime::ZERO, pkt(i % 2, if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct }));
        }
        let mut ce = 0;
        for t in 0..=800 {
            if let Some(p) = h.deq(&mut q, ms(t)) {
                if p.ecn == Ecn::Ce {
                    assert_eq!(p.flow.0, 0, "only ECT packets are marked");
                    ce += 1;
                }
            }
        }
        assert_eq!(h.stats.marks, ce);
        assert!(ce > 0 && h.stats.drops_aqm > 0, "marks {ce}, drops {}", h.stats.drops_aqm);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Enq { size: u32, ecn: u8 },
        Deq,
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (64u32..=1514, 0u8..4).prop_map(|(size, ecn)| Op::Enq { size, ecn }),
            2 => Just(Op::Deq),
            1 => (0u64..30_000_000).prop_map(Op::Wait),
        ]
    }

    proptest! {
        #[test]
        fn conserves_packets_and_bytes(ops in proptest::collection::vec(op(), 1..400), ecn: bool, limit in 1u64..60) {
            let mut h = Harness::new();
            let mut q = CodelConfig { limit, ecn, ce_threshold: Some(Dur::from_millis(2)), ..Default::default() }.build();
            let (mut now, mut arrived, mut departed) = (SimTime::ZERO, 0u64, 0u64);
            let ecns = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];
            for o in ops {
                match o {
                    Op::Enq { size, ecn } => {
                        let mut p = pkt(1, ecns[ecn as usize]);
                        p.size = size;
                        h.enq(&mut q, now, p);
                        arrived += 1;
                    }
                    Op::Deq => departed += u64::from(h.deq(&mut q, now).is_some()),
                    Op::Wait(ns) => now += Dur(ns),
                }
                prop_assert_eq!(arrived, departed + h.stats.drops() + q.len() as u64);
                let sum: u64 = q.fifo.q.iter().map(|p| u64::from(p.size)).sum();
                prop_assert_eq!(q.bytes(), sum);
                prop_assert!(q.len() as u64 <= limit);
            }
        }
    }
}
