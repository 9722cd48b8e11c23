//! The PI (proportional-integral) controller shared by PIE and DualPI2:
//! RFC 8033 §4.2 (PIE's drop probability calculation), RFC 9332 Appendix A
//! (PI2's update of p′); Linux net/sched/sch_pie.c
//! `pie_calculate_probability` and net/sched/sch_dualpi2.c
//! `calculate_probability`.
//!
//! The block owns only the controller state (p and the previous queue delay)
//! and applies the bare law
//!
//! ```text
//! p ← clamp(p + s·[alpha·(qdelay − target) + beta·(qdelay − qdelay_old)], 0, max_p)
//! ```
//!
//! once per call; the caller decides *when* (every `tupdate`) and *which*
//! delay (PIE: the last sojourn or backlog/rate; DualPI2: the larger head
//! sojourn of its two queues). Anything algorithm-specific stays with the
//! caller: PIE's auto-tuning by decades of p is the gain scale `s` it passes
//! in, its 2 % step caps and ×63/64 decay sit between [`Pi::delta`] and
//! [`Pi::commit`]; DualPI2's overflow cap is its `max_p` (1/k).
//!
//! Units: delays in integer ns (`Dur`), converted to seconds inside the law;
//! `alpha` and `beta` in Hz (probability per second of delay), so one update
//! moves p by `alpha·(qdelay − target)` with the delays in seconds (the gains
//! already include the update period, cf. RFC 9332 App. A's
//! alpha = 0.1·Tupdate/RTT_max²). p is an `f64` in [0, 1].
//!
//! Deviations from Linux: Linux keeps p in fixed point (DualPI2: u32 with
//! 2^32 − 1 = 1; PIE: u64 with 2^56 − 1 = 1) and the gains in scaled
//! integers (DualPI2: 64-ns granularity, so the default 41/256 Hz acts as
//! ≈ 0.16007 Hz). Here p and the gains are `f64`, so the law is exact up to
//! double rounding; results differ from Linux by < 0.1 % of each step.

use crate::units::Dur;

/// Gains and bounds of the PI law.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PiParams {
    /// Delay the integral term drives the queue towards.
    pub target: Dur,
    /// Integral gain in Hz: Δp per update per second of `qdelay − target`.
    pub alpha: f64,
    /// Proportional gain in Hz: Δp per second of change in qdelay since the
    /// previous update.
    pub beta: f64,
    /// Upper clamp of p (1, or 1/k for DualPI2 in overflow mode).
    pub max_p: f64,
}

/// PI controller state (Linux `pi2_prob`/`last_qdelay`, `prob`/`qdelay_old`).
///
/// # Invariants
/// `0 ≤ p ≤ max_p` of the last update (or of [`Pi::set_p`]).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Pi {
    p: f64,
    qdelay_old: Dur,
}

impl Pi {
    /// p = 0 and no previous delay, as after Linux's qdisc init/reset.
    pub fn new() -> Self {
        Self::default()
    }
    /// Current probability.
    #[inline]
    pub fn p(&self) -> f64 {
        self.p
    }
    /// Queue delay seen by the previous update.
    #[inline]
    pub fn qdelay_old(&self) -> Dur {
        self.qdelay_old
    }
    /// Overwrite p (PIE's reset, decay; tests), clamped to [0, 1] (NaN → 0).
    #[allow(clippy::manual_clamp)] // max/min, unlike clamp, map NaN to a bound
    pub fn set_p(&mut self, p: f64) {
        self.p = p.max(0.0).min(1.0);
    }

    /// The law's increment for `qdelay`, scaled by `gain_scale`, without
    /// changing the state:
    /// `gain_scale·(alpha·(qdelay − target) + beta·(qdelay − qdelay_old))`.
    pub fn delta(&self, qdelay: Dur, params: &PiParams, gain_scale: f64) -> f64 {
        let q = qdelay.nanos() as f64;
        let err = (q - params.target.nanos() as f64) * 1e-9;
        let trend = (q - self.qdelay_old.nanos() as f64) * 1e-9;
        gain_scale * (params.alpha * err + params.beta * trend)
    }

    /// Apply an increment (from [`Pi::delta`], possibly adjusted by the
    /// caller): p ← clamp(p + delta, 0, max_p), and remember `qdelay` for
    /// the next proportional term. A NaN increment leaves p at 0 rather than
    /// poisoning it (p becomes 0). Returns the new p.
    pub fn commit(&mut self, delta: f64, qdelay: Dur, max_p: f64) -> f64 {
        self.p = (self.p + delta).max(0.0).min(max_p);
        self.qdelay_old = qdelay;
        self.p
    }

    /// One update with unit gain scale (DualPI2). Returns the new p.
    pub fn update(&mut self, qdelay: Dur, params: &PiParams) -> f64 {
        self.update_scaled(qdelay, params, 1.0)
    }

    /// One update with the gains multiplied by `gain_scale` (PIE's
    /// auto-scaling). Returns the new p.
    pub fn update_scaled(&mut self, qdelay: Dur, params: &PiParams, gain_scale: f64) -> f64 {
        let d = self.delta(qdelay, params, gain_scale);
        self.commit(d, qdelay, params.max_p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    /// DualPI2's Linux defaults.
    fn params() -> PiParams {
        PiParams { target: ms(15), alpha: 0.16, beta: 3.2, max_p: 1.0 }
    }

    #[track_caller]
    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    #[test]
    fn first_update_is_integral_plus_proportional_from_zero() {
        let mut pi = Pi::new();
        // 20 ms against 15 ms target; previous delay 0 ⇒ trend of 20 ms.
        let p = pi.update(ms(20), &params());
        close(p, 0.16 * 0.005 + 3.2 * 0.020);
        assert_eq!(pi.qdelay_old(), ms(20));
    }

    #[test]
    fn integral_action_raises_p_while_above_target_and_lowers_it_below() {
        let mut pi = Pi::new();
        pi.update(ms(25), &params());
        let mut last = pi.p();
        // Constant 25 ms: the proportional term is 0, p grows by alpha·10 ms.
        for _ in 0..10 {
            let p = pi.update(ms(25), &params());
            close(p - last, 0.16 * 0.010);
            last = p;
        }
        // Constant 5 ms (after the one-off drop of the proportional term):
        // p falls by alpha·10 ms per update until it sticks at 0.
        pi.update(ms(5), &params());
        let mut last = pi.p();
        let mut steps = 0;
        while last > 0.0 {
            let p = pi.update(ms(5), &params());
            assert!(p < last);
            if p > 0.0 {
                close(last - p, 0.16 * 0.010);
            }
            last = p;
            steps += 1;
            assert!(steps < 1000);
        }
        assert_eq!(pi.update(ms(5), &params()), 0.0, "clamped at 0");
    }

    #[test]
    fn proportional_term_reacts_to_changes_not_levels() {
        let at_target = |old: u64, now: u64| {
            let mut pi = Pi::new();
            pi.commit(0.5, ms(old), 1.0);
            pi.update(ms(now), &PiParams { target: ms(now), ..params() }) - 0.5
        };
        // qdelay == target: only the trend counts, ±beta·Δ.
        close(at_target(10, 14), 3.2 * 0.004);
        close(at_target(14, 10), -3.2 * 0.004);
        close(at_target(12, 12), 0.0);
    }

    #[test]
    fn clamps_to_max_p_and_gain_scale_multiplies_both_terms() {
        let mut pi = Pi::new();
        let cap = PiParams { max_p: 0.5, ..params() };
        for _ in 0..100 {
            pi.update(ms(500), &cap);
        }
        assert_eq!(pi.p(), 0.5);
        let pi = Pi::new();
        let d1 = pi.delta(ms(30), &params(), 1.0);
        let d8 = pi.delta(ms(30), &params(), 1.0 / 8.0);
        close(d8 * 8.0, d1);
        let mut pi2 = Pi::new();
        close(pi2.update_scaled(ms(30), &params(), 0.125), d8);
        // A NaN gain cannot poison p.
        let mut pi = Pi::new();
        assert_eq!(pi.update(ms(30), &PiParams { alpha: f64::NAN, ..params() }), 0.0);
    }
}
