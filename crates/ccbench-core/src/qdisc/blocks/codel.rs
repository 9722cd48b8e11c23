//! The CoDel state machine (RFC 8289 §5; Linux include/net/codel.h and
//! include/net/codel_impl.h `codel_dequeue`), shared by `codel`, `fq_codel`
//! and later COBALT/Cake. The block owns no packets: it pulls them through a
//! [`CodelQueue`], so the caller decides which queue and which backlog the
//! "one MTU left" guard sees (fq_codel passes the whole qdisc's backlog).
//!
//! Units: time in integer nanoseconds (`SimTime`/`Dur`); `rec_inv_sqrt` is
//! 1/√count in Q0.16, updated with Linux's Newton step in Q0.32 arithmetic
//! (including its wrap-around when `count` jumps, e.g. after `fq_codel_drop`).
//!
//! Deviations from Linux:
//! - Linux keeps time in 1024-ns units (`codel_time_t`, u32, wrapping); we use
//!   exact ns, so thresholds can differ by < 1.024 µs and nothing wraps.
//! - `first_above_time` is an `Option` (Linux uses 0 as "unset").
//! - Count reuse on re-entry also requires a previous dropping episode
//!   (`lastcount != 0`). Linux's zero-initialised `drop_next` is in practice
//!   far in the past (boot-relative, wrapping clock); at simulated t ≈ 0 it
//!   would look recent and reuse a never-initialised `rec_inv_sqrt` (0).
//! - A packet CE-marked by CoDel in this dequeue is not counted again by the
//!   `ce_threshold` step (Linux counts it in both `ecn_mark` and `ce_mark`).
//! - No `maxpacket` statistic.

use std::fmt;
use std::str::FromStr;

use crate::packet::Packet;
use crate::qdisc::{Cx, DropReason};
use crate::units::{Dur, SimTime};

/// `rec_inv_sqrt` for count = 1 (Linux: `~0U >> REC_INV_SQRT_SHIFT`).
pub const REC_INV_SQRT_ONE: u16 = u16::MAX;

/// A `VALUE/MASK` match on the TOS byte (tc `ce_threshold_selector`, Linux
/// ≥ 5.16): `ce_threshold` then applies only where `tos & mask == value`.
/// `0x1/0x3` selects ECT(1) (L4S) packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TosSelector {
    pub value: u8,
    pub mask: u8,
}

impl TosSelector {
    /// A zero mask matches everything, as in Linux.
    #[inline]
    pub fn matches(self, tos: u8) -> bool {
        self.mask == 0 || tos & self.mask == self.value
    }
}

impl FromStr for TosSelector {
    type Err = String;
    /// `"0x1/0x3"` (hex with `0x`, or decimal), as tc writes it.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected a selector like \"0x1/0x3\" (VALUE/MASK, each 0..=255), got \"{s}\"");
        let byte = |t: &str| -> Result<u8, String> {
            let t = t.trim();
            match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u8::from_str_radix(h, 16),
                None => t.parse(),
            }
            .map_err(|_| bad())
        };
        let (v, m) = s.split_once('/').ok_or_else(bad)?;
        let sel = TosSelector { value: byte(v)?, mask: byte(m)? };
        if sel.value & !sel.mask != 0 {
            return Err(format!("selector \"{s}\" has value bits outside its mask, so it never matches"));
        }
        Ok(sel)
    }
}

impl fmt::Display for TosSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}/{:#x}", self.value, self.mask)
    }
}

impl serde::Serialize for TosSelector {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for TosSelector {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// CoDel parameters (Linux `struct codel_params`).
#[derive(Clone, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing sojourn time (RFC 8289 §4.3, 5 ms).
    pub target: Dur,
    /// Window to stay above `target` before dropping (RFC 8289 §4.4, 100 ms).
    pub interval: Dur,
    /// Bytes: no drop while at most this much is left queued (`psched_mtu`).
    pub mtu: u32,
    /// CE-mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Step-mark ECT packets whose sojourn exceeds this, whatever the state.
    pub ce_threshold: Option<Dur>,
    /// Restrict `ce_threshold` to matching TOS bytes.
    pub ce_threshold_selector: Option<TosSelector>,
}

impl Default for CodelParams {
    /// Linux `codel_params_init` plus `mtu = psched_mtu`.
    fn default() -> Self {
        CodelParams {
            target: Dur::from_millis(5),
            interval: Dur::from_millis(100),
            mtu: crate::qdisc::PSCHED_MTU,
            ecn: false,
            ce_threshold: None,
            ce_threshold_selector: None,
        }
    }
}

/// Where CoDel takes packets from. `pop` must update whatever `backlog`
/// reports, because the guard reads the backlog *after* the pop (Linux's
/// `dequeue_func` decrements `sch->qstats.backlog`).
pub trait CodelQueue {
    /// Remove and return the head packet.
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still queued, as the "≤ mtu left" guard should see them.
    fn backlog(&self) -> u64;
}

/// Per-queue CoDel state (Linux `struct codel_vars`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    pub dropping: bool,
    /// ≈ 1/√count, Q0.16.
    pub rec_inv_sqrt: u16,
    /// When sojourn will have been above target for a whole interval.
    pub first_above_time: Option<SimTime>,
    /// Next scheduled drop (or, outside dropping, the last one scheduled).
    pub drop_next: SimTime,
    /// Sojourn time of the last packet examined.
    pub ldelay: Dur,
}

impl Default for CodelVars {
    /// Linux `codel_vars_init` (all zero).
    fn default() -> Self {
        CodelVars {
            count: 0,
            lastcount: 0,
            dropping: false,
            rec_inv_sqrt: 0,
            first_above_time: None,
            drop_next: SimTime::ZERO,
            ldelay: Dur::ZERO,
        }
    }
}

/// One Newton iteration for 1/√count: `x ← x(3 − count·x²)/2`, in Linux's
/// Q0.32 fixed point with u64 wrap-around (`codel_Newton_step`).
pub fn newton_step(count: u32, rec_inv_sqrt: u16) -> u16 {
    let invsqrt = u64::from(rec_inv_sqrt) << 16;
    let invsqrt2 = (invsqrt * invsqrt) >> 32;
    // Wraps (as in Linux) when count·x² > 3, i.e. after a large count jump.
    let mut val = (3u64 << 32).wrapping_sub(u64::from(count) * invsqrt2);
    val >>= 2; // keeps the next multiply in range
    val = val.wrapping_mul(invsqrt) >> (32 - 2 + 1);
    (val >> 16) as u16
}

/// RFC 8289 §5.6 `control_law(t) = t + interval/√count`, with 1/√count given
/// as `rec_inv_sqrt` (Q0.16), rounding down like Linux's `reciprocal_scale`.
pub fn control_law(t: SimTime, interval: Dur, rec_inv_sqrt: u16) -> SimTime {
    let scaled = (u128::from(interval.nanos()) * (u128::from(rec_inv_sqrt) << 16)) >> 32;
    t + Dur(scaled as u64)
}

impl CodelVars {
    pub fn new() -> Self {
        Self::default()
    }

    /// Linux `codel_should_drop` (RFC 8289 §5.3 `dodequeue`'s test): true once
    /// sojourn has stayed ≥ target for a full interval. `backlog` is what is
    /// left queued after removing `pkt`; at most one MTU left never drops.
    pub fn should_drop(&mut self, pkt: Option<&Packet>, p: &CodelParams, backlog: u64, now: SimTime) -> bool {
        let Some(pkt) = pkt else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.since(pkt.enq_at);
        if self.ldelay < p.target || backlog <= u64::from(p.mtu) {
            // Went below: must stay above for a whole interval again.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// Linux `codel_dequeue` (RFC 8289 §5.4–5.5): pull the next packet from
    /// `q`, dropping (`DropReason::Aqm`) or CE-marking per the control law,
    /// then apply `ce_threshold` step marking to the packet returned.
    pub fn dequeue<Q: CodelQueue + ?Sized>(&mut self, p: &CodelParams, q: &mut Q, cx: &mut Cx) -> Option<Packet> {
        let now = cx.now;
        let Some(mut pkt) = q.pop() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(Some(&pkt), p, q.backlog(), now);
        let mut marked = false;
        let mut cur: Option<Packet>;
        if self.dropping {
            cur = Some(pkt);
            if !drop {
                // Sojourn below target: leave the dropping state.
                self.dropping = false;
            } else {
                // A large backlog may owe several drops by now, hence the loop.
                while self.dropping && now >= self.drop_next {
                    let Some(mut pkt) = cur.take() else { break };
                    self.count = self.count.wrapping_add(1);
                    self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
                    if p.ecn && cx.mark(&mut pkt) {
                        // One mark per dequeue, then deliver.
                        self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
                        marked = true;
                        cur = Some(pkt);
                        break;
                    }
                    cx.drop(pkt, DropReason::Aqm);
                    cur = q.pop();
                    if self.should_drop(cur.as_ref(), p, q.backlog(), now) {
                        self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if drop {
            if p.ecn && cx.mark(&mut pkt) {
                marked = true;
                cur = Some(pkt);
            } else {
                cx.drop(pkt, DropReason::Aqm);
                cur = q.pop();
                // Only the side effects (first_above_time, ldelay) matter:
                // Linux stores this result but never reads it.
                self.should_drop(cur.as_ref(), p, q.backlog(), now);
            }
            self.dropping = true;
            // RFC 8289 §5.5 / Linux: if we went above target soon after the
            // last episode, resume near the drop rate that controlled it.
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = i128::from(now.0) - i128::from(self.drop_next.0) < 16 * i128::from(p.interval.0);
            if delta > 1 && self.lastcount != 0 && recent {
                self.count = delta;
                self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
            } else {
                self.count = 1;
                self.rec_inv_sqrt = REC_INV_SQRT_ONE;
            }
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval, self.rec_inv_sqrt);
        } else {
            cur = Some(pkt);
        }
        if let (Some(pkt), Some(th)) = (cur.as_mut(), p.ce_threshold) {
            let selected = p.ce_threshold_selector.is_none_or(|s| s.matches(pkt.tos()));
            if self.ldelay > th && selected && !marked {
                cx.mark(pkt);
            }
        }
        cur
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};
    use crate::qdisc::QdiscStats;
    use crate::rng::SimRng;

    /// A bare FIFO whose own bytes are the guard's backlog.
    #[derive(Default)]
    struct TestQ {
        q: VecDeque<Packet>,
        bytes: u64,
    }
    impl TestQ {
        fn push(&mut self, mut p: Packet, at: SimTime) {
            p.enq_at = at;
            self.bytes += u64::from(p.size);
            self.q.push_back(p);
        }
        fn fill(n: usize, ecn: Ecn, at: SimTime) -> TestQ {
            let mut q = TestQ::default();
            for _ in 0..n {
                q.push(pkt(1, ecn), at);
            }
            q
        }
    }
    impl CodelQueue for TestQ {
        fn pop(&mut self) -> Option<Packet> {
            let p = self.q.pop_front()?;
            self.bytes -= u64::from(p.size);
            Some(p)
        }
        fn backlog(&self) -> u64 {
            self.bytes
        }
    }

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    struct Drive {
        h: Harness,
        v: CodelVars,
        p: CodelParams,
    }
    impl Drive {
        fn new(p: CodelParams) -> Self {
            Drive { h: Harness::new(), v: CodelVars::new(), p }
        }
        fn deq(&mut self, q: &mut TestQ, now: SimTime) -> Option<Packet> {
            let mut cx = Cx { now, rng: &mut self.h.rng, stats: &mut self.h.stats };
            self.v.dequeue(&self.p, q, &mut cx)
        }
        /// Dequeue once per ms over [from, to] ms; return (ms, drops) for
        /// every dequeue that dropped.
        fn run(&mut self, q: &mut TestQ, from: u64, to: u64) -> Vec<(u64, u64)> {
            let mut out = Vec::new();
            for t in from..=to {
                let before = self.h.stats.drops_aqm;
                self.deq(q, ms(t));
                if self.h.stats.drops_aqm > before {
                    out.push((t, self.h.stats.drops_aqm - before));
                }
            }
            out
        }
    }

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        let interval = Dur::from_millis(100);
        for (count, want_ms) in [(1u32, 100.0), (2, 70.711), (3, 57.735), (4, 50.0), (100, 10.0)] {
            let exact = ((65536.0 / f64::from(count).sqrt()).round() as u32).min(65535) as u16;
            let got = control_law(SimTime(7), interval, exact).since(SimTime(7)).as_millis_f64();
            assert!((got - want_ms).abs() < 0.01, "count {count}: {got} ms, want {want_ms}");
        }
    }

    #[test]
    fn newton_step_matches_linux_and_converges() {
        // From 1.0 at count 2 Linux's single step gives 0.5, then 0.5625, ...
        let mut x = REC_INV_SQRT_ONE;
        let mut seq = Vec::new();
        for count in 2..=200u32 {
            x = newton_step(count, x);
            seq.push(x);
            if count >= 12 {
                let want = 1.0 / f64::from(count).sqrt();
                let got = f64::from(x) / 65536.0;
                assert!((got - want).abs() / want < 0.01, "count {count}: {got} vs {want}");
            }
        }
        assert_eq!(seq[0], 0x8001, "count 2");
        assert!((f64::from(seq[1]) / 65536.0 - 0.5625).abs() < 1e-3, "count 3: {:#x}", seq[1]);
    }

    #[test]
    fn no_drop_while_sojourn_below_target() {
        let mut d = Drive::new(CodelParams::default());
        let mut q = TestQ::default();
        for t in 0..2000u64 {
            // One arrival and one departure per ms: sojourn stays 4 ms.
            q.push(pkt(1, Ecn::NotEct), ms(t));
            if t >= 4 {
                let p = d.deq(&mut q, ms(t)).unwrap();
                assert_eq!(p.enq_at, ms(t - 4));
            }
        }
        assert_eq!(d.h.stats.drops(), 0);
        assert!(!d.v.dropping);
    }

    #[test]
    fn drops_after_a_full_interval_above_target_then_per_control_law() {
        let mut d = Drive::new(CodelParams::default());
        // All packets arrive at 0, so sojourn = now; it reaches 5 ms at t=5 ms,
        // making first_above_time = 105 ms; the first drop needs now > 105 ms.
        let mut q = TestQ::fill(3000, Ecn::NotEct, SimTime::ZERO);
        let drops = d.run(&mut q, 0, 700);
        assert_eq!(d.v.first_above_time, Some(ms(105)));
        let times: Vec<u64> = drops.iter().map(|&(t, _)| t).collect();
        assert!(drops.iter().all(|&(_, n)| n == 1));
        // 1st at 106; then gaps of interval·rec_inv_sqrt with Linux's Newton
        // steps from 1.0: 100, 50, 56.25, 48.8, 44.2, 40.4 ms, not RFC 8289's
        // exact 100, 70.7, 57.7, 50 (drop times land on the 1-ms dequeue grid).
        assert_eq!(&times[..8], &[106, 206, 256, 313, 362, 406, 446, 484], "{times:?}");
        // Later the gaps track interval/√count (count = i after drop i-1).
        let n = times.len();
        for i in 10..n {
            let gap = (times[i] - times[i - 1]) as f64;
            let want = 100.0 / (i as f64).sqrt();
            assert!((gap - want).abs() <= 1.5, "drop {i}: gap {gap} ms, want {want:.1}");
        }
        assert_eq!(d.v.count as usize, n);
    }

    #[test]
    fn leaves_dropping_state_when_sojourn_falls_below_target() {
        let mut d = Drive::new(CodelParams::default());
        let mut q = TestQ::fill(400, Ecn::NotEct, SimTime::ZERO);
        d.run(&mut q, 0, 300);
        assert!(d.v.dropping);
        let count = d.v.count;
        // Replace the queue with fresh packets: sojourn 1 ms < target.
        let mut fresh = TestQ::fill(50, Ecn::NotEct, ms(400));
        let before = d.h.stats.drops();
        assert!(d.deq(&mut fresh, ms(401)).is_some());
        assert!(!d.v.dropping);
        assert_eq!(d.v.first_above_time, None);
        assert_eq!(d.h.stats.drops(), before);
        assert_eq!(d.v.count, count, "count is kept for reuse");
    }

    /// Run one dropping episode of `ms_long` ms from t0 on a fat queue, then
    /// leave it; returns count at the end of the episode.
    fn episode(d: &mut Drive, t0: u64, ms_long: u64) -> u32 {
        let mut q = TestQ::fill(2000, Ecn::NotEct, ms(t0));
        d.run(&mut q, t0, t0 + ms_long);
        assert!(d.v.dropping);
        let c = d.v.count;
        let mut fresh = TestQ::fill(3, Ecn::NotEct, ms(t0 + ms_long));
        d.deq(&mut fresh, ms(t0 + ms_long + 1));
        assert!(!d.v.dropping);
        c
    }

    #[test]
    fn count_restarts_from_delta_when_reentering_within_16_intervals() {
        let mut d = Drive::new(CodelParams::default());
        let c1 = episode(&mut d, 0, 500);
        assert!(c1 > 3, "{c1}");
        let lastcount = d.v.lastcount;
        assert_eq!(lastcount, 1);
        // Re-enter 1 s later (< 16 × 100 ms after drop_next).
        let mut q = TestQ::fill(500, Ecn::NotEct, ms(1000));
        d.run(&mut q, 1000, 1106);
        assert!(d.v.dropping);
        assert_eq!(d.v.count, c1 - lastcount, "count = delta, not 1");
        assert_eq!(d.v.lastcount, c1 - lastcount);
    }

    #[test]
    fn count_resets_when_reentering_after_16_intervals() {
        let mut d = Drive::new(CodelParams::default());
        let c1 = episode(&mut d, 0, 500);
        assert!(c1 > 3);
        let mut q = TestQ::fill(500, Ecn::NotEct, ms(3000));
        d.run(&mut q, 3000, 3106);
        assert!(d.v.dropping);
        assert_eq!(d.v.count, 1);
        assert_eq!(d.v.rec_inv_sqrt, REC_INV_SQRT_ONE);
    }

    #[test]
    fn one_mtu_backlog_guard_prevents_drops() {
        let mut d = Drive::new(CodelParams::default());
        // Three packets: after the first dequeue at most one MTU is ever left
        // behind, so however long they sit, nothing is dropped.
        let mut q = TestQ::fill(3, Ecn::NotEct, SimTime::ZERO);
        d.deq(&mut q, ms(10));
        assert!(d.deq(&mut q, ms(500)).is_some());
        assert!(d.deq(&mut q, ms(900)).is_some());
        assert_eq!(d.h.stats.drops(), 0);
        // A lone packet, however old and however long above target: kept.
        d.v.first_above_time = Some(ms(1));
        let mut q = TestQ::fill(1, Ecn::NotEct, SimTime::ZERO);
        assert!(d.deq(&mut q, ms(5000)).is_some());
        assert_eq!(d.h.stats.drops(), 0);
        // With one more packet, the same drive drops at 500 ms.
        let mut d = Drive::new(CodelParams::default());
        let mut q = TestQ::fill(4, Ecn::NotEct, SimTime::ZERO);
        d.deq(&mut q, ms(10));
        d.deq(&mut q, ms(500));
        assert_eq!(d.h.stats.drops_aqm, 1);
    }

    #[test]
    fn ecn_marks_ect_instead_of_dropping_but_drops_not_ect() {
        let ecn = CodelParams { ecn: true, ..CodelParams::default() };
        let mut d = Drive::new(ecn.clone());
        let mut q = TestQ::fill(1000, Ecn::Ect0, SimTime::ZERO);
        let mut ce = 0;
        for t in 0..=600 {
            if d.deq(&mut q, ms(t)).unwrap().ecn == Ecn::Ce {
                ce += 1;
            }
        }
        assert_eq!(d.h.stats.drops(), 0);
        assert!(ce >= 7, "{ce}");
        assert_eq!(d.h.stats.marks, ce);
        assert_eq!(d.v.count as u64, ce);

        let mut d = Drive::new(ecn);
        let mut q = TestQ::fill(1000, Ecn::NotEct, SimTime::ZERO);
        d.run(&mut q, 0, 600);
        assert_eq!(d.h.stats.marks, 0);
        assert!(d.h.stats.drops_aqm >= 7);
    }

    #[test]
    fn ecn_gives_one_mark_per_dequeue_while_drops_catch_up() {
        for ecn in [true, false] {
            let mut d = Drive::new(CodelParams { ecn, ..CodelParams::default() });
            let mut q = TestQ::fill(1000, Ecn::Ect0, SimTime::ZERO);
            d.run(&mut q, 0, 110); // enters dropping at 106 ms
            let (count, drops, marks) = (d.v.count, d.h.stats.drops(), d.h.stats.marks);
            // Many control-law intervals late: several drops are owed.
            d.deq(&mut q, ms(2000));
            if ecn {
                assert_eq!((d.v.count, d.h.stats.marks, d.h.stats.drops()), (count + 1, marks + 1, 0));
            } else {
                assert!(d.h.stats.drops() - drops >= 5, "{}", d.h.stats.drops() - drops);
                assert_eq!(d.v.count - count, (d.h.stats.drops() - drops) as u32);
            }
        }
    }

    #[test]
    fn ce_threshold_marks_ect_above_threshold_regardless_of_state() {
        let p = CodelParams { ce_threshold: Some(Dur::from_millis(1)), ..CodelParams::default() };
        let mut d = Drive::new(p);
        let mut q = TestQ::default();
        q.push(pkt(1, Ecn::Ect0), SimTime::ZERO);
        q.push(pkt(1, Ecn::Ect0), ms(1));
        q.push(pkt(1, Ecn::NotEct), ms(1));
        q.push(pkt(1, Ecn::Ect1), ms(2));
        // Sojourns 2, 1, 1.5, 0.5 ms: all below target, CoDel is idle.
        assert_eq!(d.deq(&mut q, ms(2)).unwrap().ecn, Ecn::Ce);
        assert_eq!(d.deq(&mut q, ms(2)).unwrap().ecn, Ecn::Ect0, "exactly at threshold: not above");
        assert_eq!(d.deq(&mut q, SimTime(2_500_000)).unwrap().ecn, Ecn::NotEct);
        assert_eq!(d.deq(&mut q, SimTime(2_500_000)).unwrap().ecn, Ecn::Ect1);
        assert_eq!((d.h.stats.marks, d.h.stats.drops()), (1, 0));
        assert!(!d.v.dropping);
    }

    #[test]
    fn ce_threshold_selector_limits_marking_to_ect1() {
        let sel: TosSelector = "0x1/0x3".parse().unwrap();
        let p = CodelParams { ce_threshold: Some(Dur::from_millis(1)), ce_threshold_selector: Some(sel), ..CodelParams::default() };
        let mut d = Drive::new(p);
        let mut q = TestQ::default();
        for e in [Ecn::Ect0, Ecn::Ect1, Ecn::Ect1] {
            q.push(pkt(1, e), SimTime::ZERO);
        }
        q.q[2].dscp = 10; // DSCP bits are outside the mask
        assert_eq!(d.deq(&mut q, ms(3)).unwrap().ecn, Ecn::Ect0);
        assert_eq!(d.deq(&mut q, ms(3)).unwrap().ecn, Ecn::Ce);
        assert_eq!(d.deq(&mut q, ms(3)).unwrap().ecn, Ecn::Ce);
        assert_eq!(d.h.stats.marks, 2);
    }

    #[test]
    fn selector_parses_and_rejects_like_tc() {
        assert_eq!("0x1/0x3".parse::<TosSelector>(), Ok(TosSelector { value: 1, mask: 3 }));
        assert_eq!("4/252".parse::<TosSelector>(), Ok(TosSelector { value: 4, mask: 252 }));
        assert_eq!(TosSelector { value: 1, mask: 3 }.to_string(), "0x1/0x3");
        assert!("0x1".parse::<TosSelector>().is_err());
        assert!("0x100/0xff".parse::<TosSelector>().is_err());
        assert!("0x4/0x3".parse::<TosSelector>().unwrap_err().contains("never matches"));
    }

    #[test]
    fn empty_queue_leaves_dropping_state() {
        let mut v = CodelVars { dropping: true, first_above_time: Some(ms(1)), ..CodelVars::new() };
        let (mut rng, mut stats) = (SimRng::for_component(1, "t"), QdiscStats::default());
        let mut cx = Cx { now: ms(10), rng: &mut rng, stats: &mut stats };
        assert!(v.dequeue(&CodelParams::default(), &mut TestQ::default(), &mut cx).is_none());
        assert!(!v.dropping);
    }
}
