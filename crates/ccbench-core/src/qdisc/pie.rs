//! PIE, Proportional Integral controller Enhanced (RFC 8033 with Linux's
//! choices: net/sched/sch_pie.c, include/net/pie.h; tc options as iproute2
//! tc/q_pie.c).
//!
//! A packet-limited FIFO with one PIE controller (`blocks::pie`): on
//! enqueue, `pie_drop_early` decides; a hit is CE-marked instead of dropped
//! if `ecn` is on, the packet is ECT and p ≤ 10 % (`pie_qdisc_enqueue`). On
//! dequeue the controller samples the delay (the packet's sojourn by
//! default, or backlog / measured drain rate with `dq_rate_estimator`) and
//! spends the 150 ms burst allowance. A timer updates p every `tupdate`,
//! first 500 ms (HZ/2) after creation. Defaults are Linux's
//! `pie_params_init`: limit 1000 packets, target 15 ms, tupdate 15 ms
//! (16 ms at HZ 250), alpha 2 and beta 20 in 1/16 Hz, ecn, bytemode and
//! dq_rate_estimator off. The reports' variants are tc's names:
//! `pie noecn` = `ecn = false`; `pie limit 100 target 5ms tupdate 32ms` =
//! `{ limit = 100, target = "5ms", tupdate = "32ms" }`.
//!
//! Timer: as DualPI2's, updates run lazily: every enqueue, dequeue and
//! probe first performs each update due at or before `now` (at t =
//! 500 ms + k·period), with the backlog then queued (it cannot change
//! between calls). An empty, settled controller skips the no-op updates.
//!
//! Units: time in ns at the interface, psched ticks (64 ns) inside the
//! controller; p in Linux's fixed point (2^56 − 1 ≙ 1).
//!
//! Deviations from Linux: the timer is ideal (exactly every period, no
//! jitter); `hz` (Linux's CONFIG_HZ, default 250) is a parameter here;
//! no GSO. An ECN-marked packet does not clear `accu_prob` (as in Linux), so
//! a controller whose accumulator passed 8.5 marks every ECT arrival until a
//! drop or p = 0 — kept, as Linux does it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::blocks::pie::{first_update, ticks, tupdate_period, PieParams, PieVars, MAX_PROB};
use super::{Cx, DropReason, Qdisc, QdiscProbe, PSCHED_MTU};
use crate::packet::Packet;
use crate::units::{Dur, SimTime};

/// PIE's Linux default for `CONFIG_HZ` (jiffies per second; most
/// distributions' kernels).
pub const DEFAULT_HZ: u32 = 250;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PieConfig {
    /// Packets (tc `limit`).
    pub limit: u32,
    /// Target queue delay (tc `target`).
    pub target: Dur,
    /// Probability update period (tc `tupdate`), rounded up to jiffies.
    pub tupdate: Dur,
    /// Integral gain in 1/16 Hz (tc `alpha`, 0..=32).
    pub alpha: u32,
    /// Proportional gain in 1/16 Hz (tc `beta`, 0..=32).
    pub beta: u32,
    /// CE-mark ECT packets instead of dropping them while p ≤ 10 %
    /// (tc `ecn` / `noecn`).
    pub ecn: bool,
    /// Scale p by packet size / MTU (tc `bytemode`).
    pub bytemode: bool,
    /// Estimate the delay from the drain rate instead of timestamps
    /// (tc `dq_rate_estimator`).
    pub dq_rate_estimator: bool,
    /// Kernel CONFIG_HZ: the jiffy that `tupdate` is rounded up to.
    pub hz: u32,
}

impl Default for PieConfig {
    /// Linux `pie_params_init`.
    fn default() -> Self {
        PieConfig {
            limit: 1000,
            target: Dur::from_millis(15),
            tupdate: Dur::from_millis(15),
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
            hz: DEFAULT_HZ,
        }
    }
}

/// Range checks shared by `pie` and `fq_pie` (tc's and the kernel's).
/// The controller's parameters in Linux's units, from the tc keys PIE and
/// FQ-PIE share.
pub(crate) fn pie_params(target: Dur, alpha: u32, beta: u32, bytemode: bool, dq_rate_estimator: bool) -> PieParams {
    PieParams { target: ticks(target), alpha, beta, bytemode, dq_rate_estimator, mtu: PSCHED_MTU }
}

pub(crate) fn validate_pie(errs: &mut Vec<String>, alpha: u32, beta: u32, tupdate: Dur, target: Dur, hz: u32) {
    for (name, v) in [("alpha", alpha), ("beta", beta)] {
        if v > 32 {
            errs.push(format!("{name} is in units of 1/16 Hz and must be 0..=32 (as tc accepts), got {v}"));
        }
    }
    if tupdate < Dur::from_micros(1) {
        errs.push("tupdate must be at least 1us".into());
    }
    if target.nanos() / 1000 > u64::from(u32::MAX) {
        errs.push(format!("target must fit in u32 microseconds, got {target}"));
    }
    if !(1..=10_000).contains(&hz) {
        errs.push(format!("hz (kernel CONFIG_HZ) must be 1..=10000, got {hz}"));
    }
}

impl PieConfig {
    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.limit == 0 {
            errs.push("limit must be at least 1 packet".into());
        }
        validate_pie(&mut errs, self.alpha, self.beta, self.tupdate, self.target, self.hz);
        super::problems(errs)
    }

    pub fn params(&self) -> PieParams {
        pie_params(self.target, self.alpha, self.beta, self.bytemode, self.dq_rate_estimator)
    }

    pub fn build(&self) -> Pie {
        let period = tupdate_period(self.tupdate, self.hz).max(Dur(1));
        Pie {
            q: VecDeque::with_capacity(self.limit.min(1024) as usize),
            bytes: 0,
            limit: self.limit as usize,
            params: self.params(),
            ecn: self.ecn,
            vars: PieVars::new(),
            period,
            next_update: SimTime::ZERO + first_update(self.hz),
            counts: PieCounts::default(),
        }
    }
}

/// Linux `struct pie_stats`, plus the number of updates performed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PieCounts {
    pub packets_in: u64,
    /// Drops at `limit`.
    pub overlimit: u64,
    /// Early (AQM) drops.
    pub dropped: u64,
    pub ecn_mark: u64,
    /// Largest queue length seen, packets.
    pub maxq: u64,
    pub updates: u64,
}

pub struct Pie {
    q: VecDeque<Packet>,
    bytes: u64,
    limit: usize,
    params: PieParams,
    ecn: bool,
    pub(crate) vars: PieVars,
    period: Dur,
    next_update: SimTime,
    counts: PieCounts,
}

impl Pie {
    pub fn counts(&self) -> &PieCounts {
        &self.counts
    }
    /// The drop probability p (Linux's raw ratio; see blocks::pie).
    pub fn prob(&self) -> f64 {
        self.vars.prob_f64()
    }
    /// The controller's state.
    pub fn vars(&self) -> &PieVars {
        &self.vars
    }

    /// Run every update due at or before `now` (see the header).
    pub fn catch_up(&mut self, now: SimTime) {
        while self.next_update <= now {
            let before = self.q.is_empty().then(|| self.vars.clone());
            self.vars.calculate_probability(&self.params, self.bytes);
            self.counts.updates += 1;
            self.next_update += self.period;
            if before.as_ref() == Some(&self.vars) && self.next_update <= now {
                // Empty and at a fixed point: every further update is a no-op.
                let n = (now.0 - self.next_update.0) / self.period.nanos() + 1;
                self.counts.updates += n;
                self.next_update += self.period * n;
            }
        }
    }
}

impl Qdisc for Pie {
    /// Linux `pie_qdisc_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        if self.q.len() >= self.limit {
            self.counts.overlimit += 1;
            self.vars.accu_prob = 0;
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        let admit = if !self.vars.drop_early(&self.params, self.bytes, pkt.size, cx.rng) {
            true
        } else if self.ecn && self.vars.prob <= MAX_PROB / 10 && cx.mark(&mut pkt) {
            // ECN-capable and p ≤ 10 %: mark instead of dropping.
            self.counts.ecn_mark += 1;
            true
        } else {
            false
        };
        if !admit {
            self.counts.dropped += 1;
            self.vars.accu_prob = 0;
            cx.drop(pkt, DropReason::Aqm);
            return;
        }
        self.counts.packets_in += 1;
        self.counts.maxq = self.counts.maxq.max(self.q.len() as u64);
        self.bytes += u64::from(pkt.size);
        self.q.push_back(pkt);
    }

    /// Linux `pie_qdisc_dequeue` + `pie_process_dequeue`.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        let p = self.q.pop_front()?;
        self.bytes -= u64::from(p.size);
        self.vars.on_dequeue(&self.params, cx.now, p.enq_at, p.size, self.bytes);
        Some(p)
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        self.catch_up(now);
        QdiscProbe { base: self.prob(), ..QdiscProbe::NONE }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    #[test]
    fn defaults_match_linux_and_reports_variants_parse() {
        let c: PieConfig = toml::from_str("").unwrap();
        assert_eq!(c, PieConfig::default());
        assert_eq!(
            (c.limit, c.target, c.tupdate, c.alpha, c.beta, c.ecn),
            (1000, Dur::from_millis(15), Dur::from_millis(15), 2, 20, false)
        );
        let v: PieConfig = toml::from_str("limit = 100\ntarget = \"5ms\"\ntupdate = \"32ms\"").unwrap();
        assert_eq!((v.limit, v.target, v.tupdate), (100, Dur::from_millis(5), Dur::from_millis(32)));
        assert!(toml::from_str::<PieConfig>("ecn_prob = 5").is_err(), "unknown keys are errors");
        let bad = PieConfig { alpha: 33, hz: 0, limit: 0, ..Default::default() }.validate().unwrap_err();
        assert!(bad.contains("alpha") && bad.contains("hz") && bad.contains("limit"), "{bad}");
    }

    #[test]
    fn first_update_after_half_a_second_then_every_jiffy_rounded_tupdate() {
        let mut h = Harness::new();
        let mut q = PieConfig::default().build();
        h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        q.catch_up(ms(499));
        assert_eq!(q.counts().updates, 0);
        q.catch_up(ms(500));
        assert_eq!(q.counts().updates, 1);
        // 15 ms at HZ 250 is 4 jiffies = 16 ms.
        q.catch_up(ms(515));
        assert_eq!(q.counts().updates, 1);
        q.catch_up(ms(516));
        assert_eq!(q.counts().updates, 2);
        q.catch_up(ms(500 + 16 * 100));
        assert_eq!(q.counts().updates, 101);
    }

    /// A queue that stays 20 ms deep (above target): p rises from the first
    /// update, as the worked law says.
    #[test]
    fn probability_rises_with_a_standing_queue_and_probe_reports_it() {
        let mut h = Harness::new();
        let mut q = PieConfig { limit: 100_000, ..Default::default() }.build();
        // Every ms: one arrival and one departure, each departure 20 ms old.
        for t in 0..20 {
            h.enq(&mut q, ms(t), pkt(1, Ecn::NotEct));
        }
        let mut ps = Vec::new();
        for t in 20..1000u64 {
            h.enq(&mut q, ms(t), pkt(1, Ecn::NotEct));
            h.deq(&mut q, ms(t));
            if t == 499 || t == 500 || t == 516 {
                ps.push(q.probe(ms(t)).base);
            }
        }
        assert_eq!(ps[0], 0.0, "no update before 500 ms");
        // First update: qdelay 20 ms, qdelay_old 0, p = 0 ⇒ gains ÷2048.
        let first = (0.125 * 0.005 + 1.25 * 0.020) / 2048.0;
        assert!((ps[1] - first).abs() < 2e-8, "{} vs {first}", ps[1]);
        // Second: p ≈ 1.25e-5, in [0.001 %, 0.01 %) ⇒ ÷128, integral term
        // only (the delay did not change).
        let second = first + 0.125 * 0.005 / 128.0;
        assert!((ps[2] - second).abs() < 2e-8, "{} vs {second}", ps[2]);
        assert!(q.prob() > ps[2]);
    }

    #[test]
    fn burst_allowance_defers_early_drops_by_150ms_of_dequeue_time() {
        let mut h = Harness::new();
        let mut q = PieConfig { limit: 100_000, ..Default::default() }.build();
        // Force a high p and a large delay; only the burst allowance holds.
        q.vars.prob = MAX_PROB / 2;
        q.vars.qdelay = ticks(Dur::from_millis(100));
        for _ in 0..10 {
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        }
        let mut first_drop = None;
        for t in 1..400u64 {
            let d0 = h.stats.drops_aqm;
            h.enq(&mut q, ms(t), pkt(1, Ecn::NotEct));
            if h.stats.drops_aqm > d0 && first_drop.is_none() {
                first_drop = Some(t);
            }
            h.deq(&mut q, ms(t));
            // Keep the forced state (the timer would move p at 500 ms).
            q.vars.qdelay = ticks(Dur::from_millis(100));
        }
        // Dequeues at 1, 2, … ms: the first has no predecessor, so the 150 ms
        // are spent by the dequeue at t = 151 ms; the next arrival may drop.
        // accu_prob needs two arrivals at p = 0.5 to reach 0.85.
        let t = first_drop.expect("drops after the allowance");
        assert!((152..=160).contains(&t), "first early drop at {t} ms");
        assert_eq!(q.vars.burst_time, 0);
    }

    #[test]
    fn ecn_marks_up_to_ten_percent_then_drops() {
        for (prob, ect_marked) in [(MAX_PROB / 100 * 9, true), (MAX_PROB / 10, true), (MAX_PROB / 100 * 11, false)] {
            let mut h = Harness::new();
            let mut q = PieConfig { ecn: true, limit: 100_000, ..Default::default() }.build();
            for _ in 0..10 {
                h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
            }
            q.vars.burst_time = 0;
            q.vars.qdelay = ticks(Dur::from_millis(30));
            q.vars.prob = prob;
            // Enough arrivals for many early decisions; none dequeued.
            for i in 0..2000 {
                let e = if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
                h.enq(&mut q, ms(1), pkt(1, e));
            }
            let c = q.counts();
            assert!(c.dropped > 50, "{c:?}");
            if ect_marked {
                assert!(c.ecn_mark > 50, "p {prob}: {c:?}");
                assert_eq!(h.stats.marks, c.ecn_mark);
                // Not-ECT hits are still dropped.
                assert!(c.dropped > 0);
            } else {
                assert_eq!(c.ecn_mark, 0, "above 10 % even ECT is dropped");
            }
        }
        // Without ecn, ECT packets are dropped at any p.
        let mut h = Harness::new();
        let mut q = PieConfig { limit: 100_000, ..Default::default() }.build();
        for _ in 0..10 {
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        }
        q.vars.burst_time = 0;
        q.vars.qdelay = ticks(Dur::from_millis(30));
        q.vars.prob = MAX_PROB / 20;
        for _ in 0..2000 {
            h.enq(&mut q, ms(1), pkt(1, Ecn::Ect0));
        }
        assert_eq!(q.counts().ecn_mark, 0);
        assert!(q.counts().dropped > 20);
    }

    #[test]
    fn tail_drops_at_limit_and_conserves_packets() {
        let mut h = Harness::new();
        let mut q = PieConfig { limit: 5, ..Default::default() }.build();
        for _ in 0..8 {
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        }
        assert_eq!((q.len(), h.stats.drops_overlimit, q.counts().overlimit), (5, 3, 3));
        assert_eq!(q.bytes(), 5 * 1514);
        let mut n = 0;
        while h.deq(&mut q, ms(1)).is_some() {
            n += 1;
        }
        assert_eq!((n, q.len(), q.bytes()), (5, 0, 0));
    }

    #[test]
    fn idle_queue_decays_p_and_then_skips_updates() {
        let mut q = PieConfig::default().build();
        q.vars.prob = MAX_PROB / 5;
        q.catch_up(ms(500));
        let p1 = q.prob();
        assert!(p1 < 0.2);
        q.catch_up(ms(60_000));
        assert_eq!(q.prob(), 0.0, "×63/64 and −alpha·target drive p to 0");
        assert_eq!(q.vars.burst_time, ticks(Dur::from_millis(150)));
        // Every update counted though most were skipped arithmetically.
        assert_eq!(q.counts().updates, (60_000 - 500) / 16 + 1);
    }
}
