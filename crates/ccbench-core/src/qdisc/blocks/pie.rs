//! The PIE controller shared by `pie` and `fq_pie`: RFC 8033 §4 as Linux
//! implements it in net/sched/sch_pie.c (`pie_drop_early`,
//! `pie_process_dequeue`, `pie_calculate_probability`) and
//! include/net/pie.h (`pie_params_init`, `pie_vars_init`).
//!
//! One [`PieVars`] is one controller (the whole qdisc for PIE, one flow for
//! FQ-PIE); the caller owns the queue and the timer and passes in the
//! backlog each function would read in Linux.
//!
//! Units, as Linux, so the arithmetic is bit-exact with it:
//! - time in psched ticks of 64 ns (`PSCHED_SHIFT` 6): [`ticks`] converts;
//! - the probability in fixed point with [`MAX_PROB`] = 2^56 − 1 ≙ 1;
//! - alpha and beta as tc passes them: integers in units of 1/16 Hz
//!   (defaults 2 and 20, i.e. 0.125 Hz and 1.25 Hz);
//! - `tupdate` in jiffies: [`tupdate_period`] rounds it up to whole jiffies
//!   of the configured HZ, as `usecs_to_jiffies` does.
//!
//! Why not `blocks::pi`: that block keeps p as an `f64` for DualPI2, whose
//! Linux code uses a different fixed point (u32, 2^32 ≙ 1) and no
//! auto-scaling. PIE's behaviour near p = 0 depends on the integer shifts of
//! its scaling table (a gain of 2/16 Hz shifted right by 11 is 0 in Linux's
//! arithmetic only because of the truncations below), so the law is kept in
//! Linux's integers here and shared by the two PIE qdiscs instead.
//!
//! Deviations: none in the arithmetic. Linux's `prob` is a u64 that can
//! exceed MAX_PROB after a +2 % step near 1 (only a u64 wrap is caught);
//! this is kept, and [`PieVars::prob_f64`] reports the raw ratio.

use crate::rng::SimRng;
use crate::units::{Dur, SimTime};

/// Linux `MAX_PROB` (`U64_MAX >> BITS_PER_BYTE`): probability 1.
pub const MAX_PROB: u64 = u64::MAX >> 8;
/// Bytes of backlog that start a drain-rate measurement cycle (16 KiB).
pub const QUEUE_THRESHOLD: u64 = 16384;
const PIE_SCALE: u32 = 8;
/// `PSCHED_TICKS_PER_SEC` with 64-ns ticks.
pub const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> 6;

/// A duration in psched ticks (`PSCHED_NS2TICKS`, truncating).
#[inline]
pub fn ticks(d: Dur) -> u64 {
    d.nanos() >> 6
}

/// `psched_get_time()` at `t`.
#[inline]
pub fn now_ticks(t: SimTime) -> u64 {
    t.0 >> 6
}

/// The timer period Linux uses for `tupdate`: `usecs_to_jiffies` rounds the
/// µs value up to whole jiffies of `1/hz` s (16 ms for 15 ms at HZ 250).
pub fn tupdate_period(tupdate: Dur, hz: u32) -> Dur {
    let hz = u64::from(hz.max(1));
    let us = tupdate.nanos() / 1000;
    let jiffies = (us * hz).div_ceil(1_000_000);
    Dur(jiffies * 1_000_000_000 / hz)
}

/// Delay of the first update after creation: `HZ / 2` jiffies (500 ms at
/// any even HZ).
pub fn first_update(hz: u32) -> Dur {
    let hz = u64::from(hz.max(1));
    Dur((hz / 2) * 1_000_000_000 / hz)
}

/// PIE's parameters in Linux's units (`struct pie_params`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PieParams {
    /// Target queue delay in ticks.
    pub target: u64,
    /// Integral gain in 1/16 Hz.
    pub alpha: u32,
    /// Proportional gain in 1/16 Hz.
    pub beta: u32,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
    /// `psched_mtu`: the 2-MTU guard and the bytemode scale.
    pub mtu: u32,
}

/// One PIE controller's state (`struct pie_vars`), times in ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieVars {
    /// Latest queue-delay estimate.
    pub qdelay: u64,
    /// The estimate at the previous update.
    pub qdelay_old: u64,
    /// Burst allowance left.
    pub burst_time: u64,
    /// Previous dequeue (timestamp mode) or cycle start (rate mode).
    pub dq_tstamp: Option<u64>,
    /// Drop probability, MAX_PROB ≙ 1.
    pub prob: u64,
    /// Derandomisation accumulator (RFC 8033 §5.1 / Linux `accu_prob`).
    pub accu_prob: u64,
    /// Bytes dequeued in the current rate-measurement cycle.
    pub dq_count: Option<u64>,
    /// Drain rate in bytes per tick, scaled by 2^8.
    pub avg_dq_rate: u32,
    pub backlog_old: u32,
}

impl Default for PieVars {
    fn default() -> Self {
        Self::new()
    }
}

impl PieVars {
    /// A zeroed controller after `pie_vars_init`, as at qdisc creation.
    pub fn new() -> Self {
        let mut v = PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: 0,
            dq_tstamp: None,
            prob: 0,
            accu_prob: 0,
            dq_count: None,
            avg_dq_rate: 0,
            backlog_old: 0,
        };
        v.init();
        v
    }

    /// `pie_vars_init`: restore the burst allowance and restart the
    /// measurements. prob and the delays are kept.
    pub fn init(&mut self) {
        self.burst_time = ticks(Dur::from_millis(150));
        self.dq_tstamp = None;
        self.accu_prob = 0;
        self.dq_count = None;
        self.avg_dq_rate = 0;
    }

    /// prob as a fraction (may exceed 1 by Linux's u64 arithmetic).
    pub fn prob_f64(&self) -> f64 {
        self.prob as f64 / MAX_PROB as f64
    }

    /// `pie_drop_early`: should the arriving packet of `packet_size` bytes
    /// be dropped (or marked), given `backlog` bytes already queued?
    pub fn drop_early(&mut self, p: &PieParams, backlog: u64, packet_size: u32, rng: &mut SimRng) -> bool {
        // Burst allowance left: no early drop.
        if self.burst_time > 0 {
            return false;
        }
        // Low delay and low probability: no early drop.
        if self.qdelay < p.target / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        // Fewer than two MTUs queued (like RED's min_th).
        if backlog < 2 * u64::from(p.mtu) {
            return false;
        }
        let local_prob =
            if p.bytemode && packet_size <= p.mtu { u64::from(packet_size).wrapping_mul(self.prob / u64::from(p.mtu)) } else { self.prob };
        if local_prob == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob = self.accu_prob.wrapping_add(local_prob);
        }
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (rng.next_u64() >> 8) < local_prob {
            self.accu_prob = 0;
            return true;
        }
        false
    }

    /// `pie_process_dequeue`: a packet of `len` bytes, enqueued at
    /// `enq_at`, left at `now`; `backlog` is what remains queued.
    pub fn on_dequeue(&mut self, p: &PieParams, now: SimTime, enq_at: SimTime, len: u32, backlog: u64) {
        let now = now_ticks(now);
        let dtime: u64;
        if !p.dq_rate_estimator {
            // Timestamp mode: the sojourn of this packet.
            self.qdelay = now.wrapping_sub(now_ticks(enq_at));
            dtime = self.dq_tstamp.map_or(0, |ts| now.wrapping_sub(ts) & u64::from(u32::MAX));
            self.dq_tstamp = Some(now);
            if backlog == 0 {
                self.qdelay = 0;
            }
            if dtime == 0 {
                return;
            }
        } else {
            // Rate mode: measure the drain rate over ≥ 16 KiB cycles.
            if backlog >= QUEUE_THRESHOLD && self.dq_count.is_none() {
                self.dq_tstamp = Some(now);
                self.dq_count = Some(0);
            }
            let Some(c) = self.dq_count else { return };
            let c = c + u64::from(len);
            self.dq_count = Some(c);
            if c < QUEUE_THRESHOLD {
                return;
            }
            let count = (c << PIE_SCALE) as u32;
            let dt = (now.wrapping_sub(self.dq_tstamp.unwrap_or(now))) as u32;
            if dt == 0 {
                return;
            }
            let count = count / dt;
            self.avg_dq_rate = if self.avg_dq_rate == 0 { count } else { (self.avg_dq_rate - (self.avg_dq_rate >> 3)) + (count >> 3) };
            if backlog < QUEUE_THRESHOLD {
                self.dq_count = None;
            } else {
                self.dq_count = Some(0);
                self.dq_tstamp = Some(now);
            }
            dtime = u64::from(dt);
        }
        // Burst allowance reduction.
        if self.burst_time > 0 {
            self.burst_time = self.burst_time.saturating_sub(dtime);
        }
    }

    /// The gains after Linux's auto-scaling for the current prob, in
    /// MAX_PROB units per tick of delay (RFC 8033 §4.2's table, Linux's
    /// shifts): halved below 10 %, then ÷4 per further decade down to
    /// 0.0001 %.
    pub fn scaled_gains(&self, p: &PieParams) -> (u64, u64) {
        let mut alpha = (u64::from(p.alpha) * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        let mut beta = (u64::from(p.beta) * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4;
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        (alpha, beta)
    }

    /// `pie_calculate_probability`, run every tupdate with the controller's
    /// current `backlog` in bytes.
    pub fn calculate_probability(&mut self, p: &PieParams, backlog: u64) {
        let backlog = backlog.min(u64::from(u32::MAX));
        let (qdelay, qdelay_old);
        if p.dq_rate_estimator {
            qdelay_old = self.qdelay;
            self.qdelay_old = self.qdelay;
            qdelay = if self.avg_dq_rate > 0 { ((backlog << PIE_SCALE) & u64::from(u32::MAX)) / u64::from(self.avg_dq_rate) } else { 0 };
        } else {
            qdelay = self.qdelay;
            qdelay_old = self.qdelay_old;
        }
        // A zero delay with packets queued means a tiny backlog: no decay.
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let (alpha, beta) = self.scaled_gains(p);
        // delta = alpha·(qdelay − target) + beta·(qdelay − qdelay_old),
        // in Linux's wrapping u64 arithmetic read as s64.
        let mut delta = alpha.wrapping_mul(qdelay.wrapping_sub(p.target)) as i64;
        delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);
        let oldprob = self.prob;
        // Increase in steps of at most 2 % once prob ≥ 10 %.
        if delta > (MAX_PROB / 50) as i64 && self.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Above 250 ms of delay, add 2 % (non-linear drop).
        if qdelay > ticks(Dur::from_millis(250)) {
            delta += (MAX_PROB / 50) as i64;
        }
        self.prob = self.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if self.prob < oldprob {
                self.prob = MAX_PROB;
                update_prob = false;
            }
        } else if self.prob > oldprob {
            self.prob = 0;
        }
        // Two updates in a row with zero delay: p ← p·63/64.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64;
        }
        self.qdelay = qdelay;
        self.backlog_old = backlog as u32;
        // Low delay twice and p = 0: restart (burst allowance back).
        if self.qdelay < p.target / 2 && self.qdelay_old < p.target / 2 && self.prob == 0 && (!p.dq_rate_estimator || self.avg_dq_rate > 0)
        {
            self.init();
        }
        if !p.dq_rate_estimator {
            self.qdelay_old = qdelay;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PieParams {
        PieParams { target: ticks(Dur::from_millis(15)), alpha: 2, beta: 20, bytemode: false, dq_rate_estimator: false, mtu: 1514 }
    }

    fn ms(x: u64) -> u64 {
        ticks(Dur::from_millis(x))
    }

    #[test]
    fn units_and_timer_quantisation_match_linux() {
        assert_eq!(MAX_PROB, (1 << 56) - 1);
        assert_eq!(ticks(Dur::from_millis(15)), 234_375);
        assert_eq!(PieVars::new().burst_time, 2_343_750);
        // usecs_to_jiffies rounds up: 15 ms → 4 jiffies of 4 ms at HZ 250.
        assert_eq!(tupdate_period(Dur::from_millis(15), 250), Dur::from_millis(16));
        assert_eq!(tupdate_period(Dur::from_millis(32), 250), Dur::from_millis(32));
        assert_eq!(tupdate_period(Dur::from_millis(15), 1000), Dur::from_millis(15));
        assert_eq!(tupdate_period(Dur::from_millis(15), 100), Dur::from_millis(20));
        assert_eq!(first_update(250), Dur::from_millis(500));
    }

    #[test]
    fn scaling_table_divides_the_gains_by_decade_of_p() {
        // Full gains: alpha = 2/16 Hz, beta = 20/16 Hz in MAX_PROB/tick.
        let unit = MAX_PROB / PSCHED_TICKS_PER_SEC; // 4_611_686_018
        assert_eq!(unit, 4_611_686_018);
        let full = ((2 * unit) >> 4, (20 * unit) >> 4);
        let mut v = PieVars::new();
        // (p, divisor) from RFC 8033 §4.2 as Linux's shifts realise it.
        let table: [(f64, u64); 9] =
            [(0.5, 1), (0.11, 1), (0.09, 2), (0.009, 8), (0.0009, 32), (0.00009, 128), (0.000009, 512), (0.0000009, 2048), (0.0, 2048)];
        for (pf, div) in table {
            v.prob = (pf * MAX_PROB as f64) as u64;
            let (a, b) = v.scaled_gains(&params());
            // Shifts truncate at each step, as in Linux.
            let shifts = div.trailing_zeros();
            let (mut wa, mut wb) = full;
            if shifts > 0 {
                wa >>= 1;
                wb >>= 1;
                for _ in 0..(shifts - 1) / 2 {
                    wa >>= 2;
                    wb >>= 2;
                }
            }
            assert_eq!((a, b), (wa, wb), "p = {pf}");
            assert!((full.0 as f64 / a as f64 - div as f64).abs() / (div as f64) < 1e-4, "p = {pf}: /{}", full.0 / a);
        }
    }

    #[test]
    fn worked_update_from_zero_matches_linux_integers() {
        // p = 0, qdelay 20 ms after 0: gains ÷2048.
        let p = params();
        let mut v = PieVars::new();
        v.qdelay = ms(20);
        v.calculate_probability(&p, 100_000);
        let a = ((2 * 4_611_686_018u64) >> 4) >> 11;
        let b = ((20 * 4_611_686_018u64) >> 4) >> 11;
        let want = a * (ms(20) - ms(15)) + b * ms(20);
        assert_eq!(v.prob, want);
        // ≈ 0.125/2048·0.005 + 1.25/2048·0.020 = 1.251e-5.
        assert!((v.prob_f64() - (0.125 * 0.005 + 1.25 * 0.020) / 2048.0).abs() < 1e-9, "{}", v.prob_f64());
        assert_eq!(v.qdelay_old, ms(20));
    }

    #[test]
    fn worked_update_at_moderate_p_and_step_cap_above_ten_percent() {
        let p = params();
        // p = 5 %: gains halved only; qdelay 30 ms, previous 25 ms.
        let mut v = PieVars { prob: MAX_PROB / 20, qdelay: ms(30), qdelay_old: ms(25), ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        let got = v.prob_f64() - 0.05;
        let want = (0.125 * 0.015 + 1.25 * 0.005) / 2.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        // p = 50 %: a jump of 400 ms in delay would add 0.5 but is capped
        // at 2 %, plus 2 % for qdelay > 250 ms.
        let mut v = PieVars { prob: MAX_PROB / 2, qdelay: ms(400), qdelay_old: 0, ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert_eq!(v.prob, MAX_PROB / 2 + 2 * ((MAX_PROB / 100) * 2));
        // Below 10 % the cap does not apply: p = 9 %, same jump.
        let mut v = PieVars { prob: MAX_PROB / 100 * 9, qdelay: ms(400), qdelay_old: 0, ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert!(v.prob_f64() > 0.09 + 0.2, "{}", v.prob_f64());
    }

    #[test]
    fn decay_when_idle_and_reset_when_settled() {
        let p = params();
        let mut v = PieVars { prob: MAX_PROB / 4, burst_time: 0, ..PieVars::new() };
        // Two zero-delay updates with an empty queue: the integral term
        // lowers p by alpha·target, then ×63/64 applies.
        v.calculate_probability(&p, 0);
        let (a, _) = PieVars { prob: MAX_PROB / 4, ..PieVars::new() }.scaled_gains(&p);
        let after_law = MAX_PROB / 4 - a * p.target;
        assert_eq!(v.prob, after_law - after_law / 64);
        // A zero delay with a backlog (tiny queue) skips the decay.
        let mut w = PieVars { prob: MAX_PROB / 4, ..PieVars::new() };
        w.calculate_probability(&p, 3000);
        assert_eq!(w.prob, after_law);
        // Once p reaches 0 with low delays, the vars are re-initialised:
        // the burst allowance is back.
        let mut v = PieVars { prob: 1000, burst_time: 0, ..PieVars::new() };
        v.calculate_probability(&p, 0);
        assert_eq!(v.prob, 0);
        assert_eq!(v.burst_time, ms(150));
    }

    #[test]
    fn drop_early_shortcuts_and_derandomisation() {
        let p = params();
        let mut rng = SimRng::for_component(1, "pie");
        // Burst allowance left: never.
        let mut v = PieVars { prob: MAX_PROB, qdelay: ms(100), ..PieVars::new() };
        assert!(!v.drop_early(&p, 100_000, 1514, &mut rng));
        v.burst_time = 0;
        // Backlog < 2 MTU: never.
        assert!(!v.drop_early(&p, 2 * 1514 - 1, 1514, &mut rng));
        // qdelay < target/2 and p < 20 %: never (and accu untouched).
        let mut v = PieVars { prob: MAX_PROB / 10, qdelay: ms(7), burst_time: 0, ..PieVars::new() };
        assert!(!v.drop_early(&p, 100_000, 1514, &mut rng));
        assert_eq!(v.accu_prob, 0);
        // accu_prob: with p = 10 % the first 8 arrivals (accu < 0.85) pass.
        v.qdelay = ms(20);
        for i in 0..8 {
            assert!(!v.drop_early(&p, 100_000, 1514, &mut rng), "arrival {i}");
        }
        // With p = 100 %: accu reaches 1 ≥ 0.85, then rnd < p always.
        let mut v = PieVars { prob: MAX_PROB, qdelay: ms(20), burst_time: 0, ..PieVars::new() };
        assert!(v.drop_early(&p, 100_000, 1514, &mut rng));
        assert_eq!(v.accu_prob, 0);
        // accu ≥ 8.5 drops without a draw: p = 5 % never gets there before
        // a random drop resets it, so check the bound directly.
        let mut v = PieVars { prob: MAX_PROB / 20, qdelay: ms(20), burst_time: 0, accu_prob: (MAX_PROB / 2) * 17, ..PieVars::new() };
        assert!(v.drop_early(&p, 100_000, 1514, &mut rng));
    }

    #[test]
    fn drop_early_thresholds_are_strict_as_in_linux() {
        let p = params();
        for seed in 1..=5u64 {
            let mut rng = SimRng::for_component(seed, "pie");
            // qdelay exactly target/2 is not "low": with accu at 8.5 it drops.
            let mut v = PieVars { prob: MAX_PROB / 10, qdelay: p.target / 2, burst_time: 0, accu_prob: (MAX_PROB / 2) * 17, ..PieVars::new() };
            assert!(v.drop_early(&p, 100_000, 1514, &mut rng));
            // accu_prob exactly 0.85 is not below it: the random draw decides (p = 0.85).
            let prob = (MAX_PROB / 100) * 85;
            let drops = (0..1000)
                .filter(|_| PieVars { prob, qdelay: ms(20), burst_time: 0, ..PieVars::new() }.drop_early(&p, 100_000, 1514, &mut rng))
                .count();
            assert!((800..=900).contains(&drops), "seed {seed}: {drops}");
        }
    }

    #[test]
    fn drop_early_spacing_follows_the_accumulator_and_bytemode_scales_p() {
        // After a drop, accu_prob restarts at 0: the first k − 1 arrivals
        // (accu < 0.85) pass, then each drops with local p, so the mean gap
        // between drops is (k − 1) + 1/p arrivals.
        let p = params();
        for seed in 1..=5u64 {
            let mut rng = SimRng::for_component(seed, "pie");
            for (bytemode, size) in [(false, 1514u32), (true, 757)] {
                let pp = PieParams { bytemode, ..p };
                let prob = MAX_PROB / 20;
                let local = if bytemode { u64::from(size) * (prob / 1514) } else { prob };
                let k = (1..).find(|&n: &u64| n * local >= (MAX_PROB / 100) * 85).unwrap();
                let pf = local as f64 / MAX_PROB as f64;
                let want_gap = (k - 1) as f64 + 1.0 / pf;
                let mut v = PieVars { prob, qdelay: ms(20), burst_time: 0, ..PieVars::new() };
                let n = 400_000;
                let mut drops = 0;
                for _ in 0..n {
                    if v.drop_early(&pp, 100_000, size, &mut rng) {
                        // The enqueue path clears the accumulator on a drop.
                        v.accu_prob = 0;
                        drops += 1;
                    }
                }
                let gap = n as f64 / drops as f64;
                assert!((gap - want_gap).abs() / want_gap < 0.04, "seed {seed} bytemode {bytemode}: gap {gap}, want {want_gap}");
            }
        }
    }

    #[test]
    fn dequeue_timestamp_mode_sets_qdelay_and_spends_burst() {
        let p = params();
        let mut v = PieVars::new();
        let t = |x: u64| SimTime(x * 1_000_000);
        v.on_dequeue(&p, t(10), t(2), 1514, 5000);
        assert_eq!(v.qdelay, ms(10) - ms(2));
        assert_eq!(v.burst_time, ms(150), "first dequeue has no previous one");
        v.on_dequeue(&p, t(30), t(20), 1514, 5000);
        assert_eq!(v.burst_time, ms(150) - (ms(30) - ms(10)));
        v.on_dequeue(&p, t(40), t(20), 1514, 0);
        assert_eq!(v.qdelay, 0, "empty queue ⇒ qdelay 0");
        v.on_dequeue(&p, t(400), t(390), 1514, 0);
        assert_eq!(v.burst_time, 0);
    }

    #[test]
    fn dequeue_rate_mode_estimates_drain_rate_in_linux_integers() {
        let p = PieParams { dq_rate_estimator: true, ..params() };
        let mut v = PieVars::new();
        // 10 Mbit/s: 1514 B every 1211.2 µs, a standing 40-packet backlog.
        let gap = 1_211_200u64;
        for i in 1..=400u64 {
            v.on_dequeue(&p, SimTime(i * gap), SimTime(0), 1514, 40 * 1514);
        }
        // First cycle: 11 packets counted over 10 gaps (the cycle starts at
        // a dequeue it also counts): (16654 << 8) / 189250 ticks = 22.
        // Later cycles measure 11 packets over 11 gaps = 20.48 → 20, but the
        // integer EWMA avg − avg/8 + sample/8 = 22 − 2 + 2 stays at 22:
        // Linux's estimate at 10 Mbit/s is stuck 7.4 % high.
        assert_eq!(v.avg_dq_rate, 22);
        let rate_bps = f64::from(v.avg_dq_rate) / 256.0 * PSCHED_TICKS_PER_SEC as f64 * 8.0;
        assert!((rate_bps - 10.742e6).abs() < 1e3, "{rate_bps}");
        // Little's law on the estimate: (15140 << 8) / 22 ticks ≈ 11.27 ms.
        v.calculate_probability(&p, 15_140);
        assert_eq!(v.qdelay, (15_140 << 8) / 22);
        assert_eq!(v.qdelay_old, 0);
        // A queue below 16 KiB never starts a cycle: no estimate, qdelay 0.
        let mut w = PieVars::new();
        for i in 1..=100u64 {
            w.on_dequeue(&p, SimTime(i * gap), SimTime(0), 1514, 10 * 1514);
        }
        assert_eq!((w.avg_dq_rate, w.dq_count), (0, None));
    }

    #[test]
    fn boundaries_of_the_control_law_are_linuxs() {
        let p = params();
        // The table's rows are "p < 10 %", "p < 1 %", ...: exactly 10 % keeps the
        // full gains, exactly 1 % is still in the 1–10 % row (÷2), just below it ÷8.
        let full = PieVars { prob: MAX_PROB, ..PieVars::new() }.scaled_gains(&p);
        assert_eq!(PieVars { prob: MAX_PROB / 10, ..PieVars::new() }.scaled_gains(&p), full);
        let half = (full.0 >> 1, full.1 >> 1);
        assert_eq!(PieVars { prob: MAX_PROB / 100, ..PieVars::new() }.scaled_gains(&p), half);
        assert_eq!(PieVars { prob: MAX_PROB / 100 - 1, ..PieVars::new() }.scaled_gains(&p), (half.0 >> 2, half.1 >> 2));
        // A delay of exactly 250 ms adds no extra 2 %; one tick more does.
        for (qdelay, extra) in [(ms(250), 0), (ms(250) + 1, MAX_PROB / 50)] {
            let mut v = PieVars { prob: MAX_PROB / 2, qdelay, qdelay_old: qdelay, ..PieVars::new() };
            let (a, _) = v.scaled_gains(&p);
            v.calculate_probability(&p, 100_000);
            let law = (a * (qdelay - p.target)).min((MAX_PROB / 100) * 2);
            assert_eq!(v.prob, MAX_PROB / 2 + law + extra, "qdelay {qdelay}");
        }
        // An increase that wraps the u64 saturates at MAX_PROB (and skips the decay).
        let mut v = PieVars { prob: u64::MAX - 10, qdelay: ms(300), qdelay_old: ms(300), ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert_eq!(v.prob, MAX_PROB);
    }

    #[test]
    fn restart_needs_both_delays_below_half_the_target_and_p_zero() {
        let p = params();
        // Both 5 ms (< 7.5 ms), p driven to 0: the burst allowance is back.
        let mut v = PieVars { prob: 1000, qdelay: ms(5), qdelay_old: ms(5), burst_time: 0, ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert_eq!((v.prob, v.burst_time), (0, ms(150)));
        // The previous delay exactly target/2 is not below it: no restart.
        let mut v = PieVars { prob: 1000, qdelay: ms(5), qdelay_old: p.target / 2, burst_time: 0, ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert_eq!((v.prob, v.burst_time), (0, 0));
        // Rate mode restarts only once it has a rate estimate.
        let pr = PieParams { dq_rate_estimator: true, ..p };
        let mut v = PieVars { prob: 0, burst_time: 0, ..PieVars::new() };
        v.calculate_probability(&pr, 0);
        assert_eq!((v.prob, v.burst_time, v.avg_dq_rate), (0, 0, 0));
        v.avg_dq_rate = 22;
        v.calculate_probability(&pr, 0);
        assert_eq!(v.burst_time, ms(150));
    }

    #[test]
    fn a_rate_cycle_ending_at_exactly_16_kib_starts_the_next_one() {
        let p = PieParams { dq_rate_estimator: true, ..params() };
        for (backlog, next) in [(QUEUE_THRESHOLD, Some(0)), (QUEUE_THRESHOLD - 1, None)] {
            let mut v = PieVars { dq_count: Some(16_000), dq_tstamp: Some(1000), ..PieVars::new() };
            v.on_dequeue(&p, SimTime(2000 << 6), SimTime(0), 1514, backlog);
            assert_eq!(v.dq_count, next, "backlog {backlog}");
            assert!(v.avg_dq_rate > 0);
        }
    }

    #[test]
    fn prob_is_not_clamped_at_max_prob_as_in_linux() {
        // Near 1, a +2 % step (+2 % more above 250 ms) overshoots MAX_PROB:
        // Linux only catches a wrap of the u64, not values above 2^56 − 1.
        let p = params();
        let mut v = PieVars { prob: MAX_PROB / 100 * 99, qdelay: ms(300), qdelay_old: ms(300), ..PieVars::new() };
        v.calculate_probability(&p, 100_000);
        assert_eq!(v.prob, MAX_PROB / 100 * 99 + 2 * ((MAX_PROB / 100) * 2));
        assert!(v.prob_f64() > 1.02);
        // Below target it comes back down by alpha·(qdelay − target).
        v.qdelay = ms(5);
        let before = v.prob;
        v.calculate_probability(&p, 100_000);
        let (a, b) = v.scaled_gains(&p);
        assert_eq!(before - v.prob, a * (ms(15) - ms(5)) + b * (ms(300) - ms(5)));
    }
}
