//! SCE marking (draft-morton-tsvwg-sce; chromi/sce `sch_cake.c`, Cake's
//! `sce` option): an AQM signals early, mild congestion by rewriting
//! ECT(0) to ECT(1); Not-ECT, ECT(1) and CE packets are left alone, and CE
//! keeps its RFC 3168 meaning. The marking probability ramps with the
//! sojourn time as Cake-SCE's COBALT does:
//!
//! - knee = 1/ramp_divisor, ramp_lo = knee/(target/2), ramp_hi = (1 − knee)/target
//!   (divisor > 1024: knee 0, ramp_lo 0, ramp_hi 1/target);
//! - sojourn ≤ target/2: 0; beyond, while COBALT's `over_target` is false:
//!   (sojourn − target/2)·ramp_lo; once it is true: knee + (sojourn −
//!   target)·ramp_hi (≥ 1: always).
//!
//! `over_target` is sch_cake.c's (`cobalt_should_drop`): sojourn above
//! target *and* above 2·mtu_time·bulk_flows and 4·mtu_time, so at low rates
//! (mtu_time·4 > target) a sojourn past target stays on the lower ramp,
//! which runs past the knee there. Queues without that floor pass
//! `sojourn > target` ([`SceRamp::apply`]).
//!
//! With divisor 1 (tc `sce`) the probability rises linearly from 0 at
//! target/2 to 1 at target. Cake computes the ramp in fixed point; here it
//! is f64 (deterministic: only + − × ÷). The packet is marked with that
//! probability from the qdisc's own random stream.

use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::Dur;

/// The sojourn → SCE probability ramp of one queue (or Cake tin).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SceRamp {
    target_ns: f64,
    knee: f64,
    /// Probability per ns below and above target.
    ramp_lo: f64,
    ramp_hi: f64,
}

impl SceRamp {
    /// The ramp for CoDel target `target` and Cake's `sce` option value
    /// `ramp_divisor` (0: SCE off, `None`).
    pub fn new(target: Dur, ramp_divisor: u32) -> Option<SceRamp> {
        if ramp_divisor == 0 || target == Dur::ZERO {
            return None;
        }
        let t = target.nanos() as f64;
        let (knee, ramp_lo, ramp_hi) = if ramp_divisor > 1024 {
            (0.0, 0.0, 1.0 / t)
        } else {
            let knee = 1.0 / f64::from(ramp_divisor);
            (knee, knee / (t / 2.0), (1.0 - knee) / t)
        };
        Some(SceRamp { target_ns: t, knee, ramp_lo, ramp_hi })
    }

    /// Marking probability at this sojourn time, in [0, 1], with
    /// over-target meaning sojourn > target.
    pub fn prob(&self, sojourn: Dur) -> f64 {
        self.prob_cobalt(sojourn, sojourn.nanos() as f64 > self.target_ns)
    }

    /// Marking probability at this sojourn time given COBALT's
    /// `over_target` verdict for the packet, in [0, 1].
    pub fn prob_cobalt(&self, sojourn: Dur, over_target: bool) -> f64 {
        let s = sojourn.nanos() as f64;
        let p = if s <= self.target_ns / 2.0 {
            0.0
        } else if !over_target {
            (s - self.target_ns / 2.0) * self.ramp_lo
        } else {
            self.knee + (s - self.target_ns) * self.ramp_hi
        };
        p.clamp(0.0, 1.0)
    }

    /// Mark an ECT(0) packet ECT(1) with the ramp's probability; returns
    /// whether it was marked. Other codepoints draw no random number.
    pub fn apply(&self, pkt: &mut Packet, sojourn: Dur, rng: &mut SimRng) -> bool {
        self.apply_cobalt(pkt, sojourn, sojourn.nanos() as f64 > self.target_ns, rng)
    }

    /// [`SceRamp::apply`] with COBALT's `over_target` for the packet (Cake).
    pub fn apply_cobalt(&self, pkt: &mut Packet, sojourn: Dur, over_target: bool, rng: &mut SimRng) -> bool {
        if pkt.ecn != Ecn::Ect0 {
            return false;
        }
        let p = self.prob_cobalt(sojourn, over_target);
        if p > 0.0 && rng.bernoulli(p) {
            pkt.ecn = Ecn::Ect1;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Dur = Dur::from_millis(5);

    #[test]
    fn divisor_one_ramps_linearly_from_half_target_to_target() {
        let r = SceRamp::new(T, 1).unwrap();
        assert_eq!(r.prob(Dur::from_micros(2500)), 0.0);
        assert!((r.prob(Dur::from_micros(3750)) - 0.5).abs() < 1e-12);
        assert!((r.prob(T) - 1.0).abs() < 1e-12);
        assert_eq!(r.prob(Dur::from_millis(50)), 1.0);
        assert!(SceRamp::new(T, 0).is_none());
    }

    /// sch_cake.c takes the upper ramp only when COBALT is over target; a
    /// sojourn past target below COBALT's MTU-time floor stays on the
    /// lower one: with divisor 4 at 6 ms, (6 − 2.5)·0.25/2.5 = 0.35, not
    /// the upper ramp's 0.25 + 1·0.75/5 = 0.4.
    #[test]
    fn past_target_below_cobalts_floor_stays_on_the_lower_ramp() {
        let r = SceRamp::new(T, 4).unwrap();
        let s = Dur::from_millis(6);
        assert!((r.prob_cobalt(s, false) - 0.35).abs() < 1e-12);
        assert!((r.prob_cobalt(s, true) - 0.4).abs() < 1e-12);
        assert_eq!(r.prob(s), r.prob_cobalt(s, true));
        // Divisor 1: the lower ramp is past 1 beyond target either way.
        let r = SceRamp::new(T, 1).unwrap();
        assert_eq!(r.prob_cobalt(s, false), 1.0);
    }

    #[test]
    fn knee_splits_the_ramp_at_target() {
        // Divisor 4: 0.25 at target, then (1 − 0.25)/target per ns: 1 at 2·target.
        let r = SceRamp::new(T, 4).unwrap();
        assert!((r.prob(T) - 0.25).abs() < 1e-12);
        assert!((r.prob(Dur::from_micros(7500)) - 0.625).abs() < 1e-12);
        assert!((r.prob(Dur::from_millis(10)) - 1.0).abs() < 1e-12);
        // Divisor > 1024: no knee, 0 up to target, 1 at 2·target.
        let r = SceRamp::new(T, 2000).unwrap();
        assert_eq!(r.prob(Dur::from_micros(4000)), 0.0);
        assert!((r.prob(Dur::from_micros(7500)) - 0.5).abs() < 1e-12);
    }

    /// Only ECT(0) becomes ECT(1), at the ramp's rate (5 seeds).
    #[test]
    fn marks_only_ect0_at_the_ramp_rate() {
        let r = SceRamp::new(T, 1).unwrap();
        for seed in 1..=5 {
            let mut rng = SimRng::for_component(seed, "sce");
            let mut marked = 0;
            let n = 40_000;
            for _ in 0..n {
                let mut p = Packet { ecn: Ecn::Ect0, ..Default::default() };
                if r.apply(&mut p, Dur::from_micros(3000), &mut rng) {
                    assert_eq!(p.ecn, Ecn::Ect1);
                    marked += 1;
                }
            }
            // p = (3 − 2.5)/2.5 = 0.2; σ of the share = 0.002.
            let share = f64::from(marked) / f64::from(n);
            assert!((share - 0.2).abs() < 0.01, "seed {seed}: {share}");
            for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ce] {
                let mut p = Packet { ecn: e, ..Default::default() };
                assert!(!r.apply(&mut p, Dur::from_millis(50), &mut rng));
                assert_eq!(p.ecn, e);
            }
        }
    }
}
