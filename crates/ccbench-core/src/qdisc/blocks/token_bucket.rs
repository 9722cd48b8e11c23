//! A token bucket kept in time units, as Linux's shapers keep theirs
//! (`net/sched/sch_tbf.c` `tbf_dequeue`, `net/sched/sch_htb.c`
//! `htb_charge_class`): the bucket holds *time* (how long the rate would take
//! to send the credited bytes), refills at one nanosecond per nanosecond up
//! to `buffer` (the burst's transmission time), and a packet of `len` bytes
//! costs `psched_l2t_ns(rate, len)`.
//!
//! Units: the bucket level is held as nanoseconds × rate (bit/s), i.e. in
//! units of 10⁻⁹ bit, in an `i128`. That is the time value scaled by the
//! rate, so every cost (`len · 8 · 10⁹`) and refill (`Δt · rate`) is an exact
//! integer and a shaper's long-run rate is exact to the byte.
//! Deviation: Linux's `psched_l2t_ns` approximates `len·8·10⁹/rate` with a
//! mult/shift pair that rounds down by up to 1 ns per packet; we do not
//! round. Used by `tbf` and `htb`; Cake's shaper can share it.

use crate::units::{Dur, Rate, SimTime};

/// `len` bytes in units of 10⁻⁹ bit.
#[inline]
pub fn cost(len: u64) -> i128 {
    i128::from(len) * 8_000_000_000
}

#[derive(Clone, Debug)]
pub struct TimeBucket {
    /// bit/s, > 0.
    rate: u64,
    /// Level (ns × bit/s); may be negative where the algorithm allows it (HTB).
    tokens: i128,
    /// Capacity (ns × bit/s): the burst's transmission time at `rate`.
    buffer: i128,
    /// Last update (Linux `t_c`).
    t_c: SimTime,
}

impl TimeBucket {
    /// A full bucket of `burst` bytes at `rate`, last updated at `now`.
    pub fn new(rate: Rate, burst: u64, now: SimTime) -> TimeBucket {
        let buffer = cost(burst);
        TimeBucket {
            rate: rate.bps().max(1),
            tokens: buffer,
            buffer,
            t_c: now,
        }
    }
    pub fn rate(&self) -> u64 {
        self.rate
    }
    /// Bucket depth in nanoseconds (Linux `buffer`, `psched_l2t_ns(burst)`).
    pub fn buffer_ns(&self) -> f64 {
        self.buffer as f64 / self.rate as f64
    }
    /// The level at `now` (refilled, capped at the depth), not committed.
    #[inline]
    pub fn level(&self, now: SimTime) -> i128 {
        let dt = i128::from(now.0.saturating_sub(self.t_c.0));
        (self.tokens + dt * i128::from(self.rate)).min(self.buffer)
    }
    /// The level at `now` without the cap (HTB's mode check adds `diff`
    /// without capping it), with the elapsed time capped at `max_dt`.
    #[inline]
    pub fn level_uncapped(&self, now: SimTime, max_dt: Dur) -> i128 {
        let dt = i128::from(now.0.saturating_sub(self.t_c.0).min(max_dt.0));
        self.tokens + dt * i128::from(self.rate)
    }
    /// Store `level` as the bucket's value at `now`.
    #[inline]
    pub fn set(&mut self, now: SimTime, level: i128) {
        self.tokens = level;
        self.t_c = now;
    }
    /// Time until a level of `level` (< 0) refills to 0, rounded up to the
    /// next nanosecond.
    #[inline]
    pub fn time_to_zero(&self, level: i128) -> Dur {
        if level >= 0 {
            return Dur::ZERO;
        }
        let need = -level;
        let r = i128::from(self.rate);
        Dur(((need + r - 1) / r) as u64)
    }
    /// `tc change`: new rate and burst. The level keeps its value in time
    /// (Linux stores it in ns), capped at the new depth.
    pub fn reconfigure(&mut self, rate: Rate, burst: u64) {
        let new_rate = i128::from(rate.bps().max(1));
        self.tokens = self.tokens * new_rate / i128::from(self.rate);
        self.rate = new_rate as u64;
        self.buffer = cost(burst);
        self.tokens = self.tokens.min(self.buffer);
    }
    /// Refill completely (TBF's `tbf_change` does this).
    pub fn fill(&mut self) {
        self.tokens = self.buffer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_one_nanosecond_per_nanosecond_up_to_the_burst_time() {
        // 10 Mbit/s: 1250 B take 1 ms.
        let mut b = TimeBucket::new(Rate(10_000_000), 1250, SimTime(0));
        assert_eq!(b.level(SimTime(0)), cost(1250));
        b.set(SimTime(0), b.level(SimTime(0)) - cost(1250));
        assert_eq!(b.level(SimTime(0)), 0);
        assert_eq!(b.level(SimTime(500_000)), cost(625));
        assert_eq!(
            b.level(SimTime(5_000_000)),
            cost(1250),
            "capped at the burst"
        );
        assert!((b.buffer_ns() - 1e6).abs() < 1e-6);
    }

    #[test]
    fn time_to_zero_rounds_up() {
        let b = TimeBucket::new(Rate(3), 1, SimTime(0));
        // 1 bit·1e9 at 3 bit/s needs 333_333_333.3 ns
        assert_eq!(b.time_to_zero(-1_000_000_000), Dur(333_333_334));
        assert_eq!(b.time_to_zero(5), Dur::ZERO);
    }

    #[test]
    fn reconfigure_keeps_the_time_value() {
        let mut b = TimeBucket::new(Rate(8_000_000), 10_000, SimTime(0));
        b.set(SimTime(0), -cost(1000)); // 1 ms in debt at 8 Mbit/s
        b.reconfigure(Rate(16_000_000), 10_000);
        assert_eq!(b.time_to_zero(b.level(SimTime(0))), Dur::from_millis(1));
    }
}
