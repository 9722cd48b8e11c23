//! COBALT with an SCE schedule, as chromi/sce's `sch_twin_codel_af.c` and
//! `sch_lfq_cobalt.c` share it (`cobalt_should_drop`, `cobalt_queue_full`,
//! `cobalt_queue_empty`, `cobalt_newton_step`, `cobalt_cache_init`; the
//! deficit-mode shaper's fixed point from `cnq_change`/`lfq_change`).
//!
//! Per flow bucket: a CoDel-like CE schedule (CE on ECT, drop on Not-ECT)
//! whose count decays along its schedule while idle, a second schedule for
//! SCE (ECT(0) → ECT(1)) with "reflected" re-entry, and BLUE (`p_drop` +=
//! `p_inc` per CE target of overload above the BLUE threshold, −`p_dec` per
//! CE target when idle). The over-target tests compare
//! `sojourn·flow_backlog·active_flows` with `target·total_backlog`:
//! twin_codel_af's weighting; lfq_cobalt passes 1, 1, 1 (plain sojourn).
//! Mainline Cake's COBALT (`qdisc/cake/cobalt.rs`) differs: CoDel's count
//! reuse, no SCE schedule, BLUE only on overflow.
//!
//! Units: ns (signed, like `ktime_t`), probabilities Q0.32.

use crate::packet::{Ecn, Packet};
use crate::qdisc::Cx;
use crate::units::{Rate, SimTime};

/// `1/√count` values cached for small counts (`ISQRT_CACHE`).
pub const ISQRT_CACHE: usize = 16;

/// `struct cobalt_params`, in ns.
#[derive(Clone, Debug, PartialEq)]
pub struct CobaltParams {
    pub ce_interval: u64,
    pub ce_target: u64,
    /// 0 = SCE off.
    pub sce_interval: u64,
    pub sce_target: u64,
    pub blue_thresh: u64,
    pub p_inc: u32,
    pub p_dec: u32,
}

/// `cnq_change`: nanoseconds per byte as `rate_ns >> rate_shift`, with
/// `rate_ns` below 2³⁴ (0 = unlimited).
pub fn rate_fixed_point(bandwidth: Rate) -> (u64, u32) {
    if bandwidth.is_unlimited() {
        return (0, 0);
    }
    let bytes_per_s = (bandwidth.bps() / 8).max(64);
    let mut shift = 34u32;
    let mut rate_ns = ((1_000_000_000u128 << shift) / u128::from(bytes_per_s)) as u64;
    while rate_ns >> 34 != 0 {
        rate_ns >>= 1;
        shift -= 1;
    }
    (rate_ns, shift)
}

/// COBALT's 32-bit Newton step for 1/√count (`cobalt_newton_step`), Q0.32.
pub fn newton_step32(count: u32, invsqrt: u32) -> u32 {
    let invsqrt2 = (u64::from(invsqrt) * u64::from(invsqrt)) >> 32;
    let mut val = (3u64 << 32).wrapping_sub(u64::from(count).wrapping_mul(invsqrt2));
    val >>= 2;
    val = val.wrapping_mul(u64::from(invsqrt)) >> (32 - 2 + 1);
    val as u32
}

/// `cobalt_cache_init`: four Newton steps per small count from 1.0.
pub fn isqrt_cache() -> [u32; ISQRT_CACHE] {
    let mut c = [0u32; ISQRT_CACHE];
    c[0] = u32::MAX;
    let mut isqrt = u32::MAX;
    for (count, slot) in c.iter_mut().enumerate().skip(1) {
        for _ in 0..4 {
            isqrt = newton_step32(count as u32, isqrt);
        }
        *slot = isqrt;
    }
    c
}

/// `reciprocal_scale(interval, isqrt)`: interval·isqrt/2³² (interval as u32).
fn scale(interval: u64, isqrt: u32) -> i64 {
    ((u64::from(interval as u32) * u64::from(isqrt)) >> 32) as i64
}

/// `struct cobalt_vars` (times as signed ns, like `ktime_t`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CobaltVars {
    pub ce_count: u32,
    pub ce_isqrt: u32,
    pub ce_next: i64,
    pub sce_count: u32,
    pub sce_isqrt: u32,
    pub sce_next: i64,
    pub blue_timer: i64,
    /// BLUE drop probability, Q0.32.
    pub p_drop: u32,
    pub ce_dropping: bool,
    pub sce_dropping: bool,
}

/// Outcome of `cobalt_should_drop` for one bulk packet.
pub struct Verdict {
    pub drop: bool,
    pub sce_marked: bool,
}

impl CobaltVars {
    pub fn invsqrt(&mut self, cache: &[u32; ISQRT_CACHE]) {
        let pick = |count: u32, prev: u32| match cache.get(count as usize) {
            Some(&v) => v,
            None => newton_step32(count, prev),
        };
        self.ce_isqrt = pick(self.ce_count, self.ce_isqrt);
        self.sce_isqrt = pick(self.sce_count, self.sce_isqrt);
    }

    pub fn control(t: i64, interval: u64, isqrt: u32) -> i64 {
        t + scale(interval, isqrt)
    }

    /// `cobalt_reflect`: the schedule mirrored about `now`.
    pub fn reflect(now: i64, t: i64, interval: u64, isqrt: u32) -> i64 {
        2 * now - t + scale(interval, isqrt)
    }

    /// `cobalt_queue_full` (BLUE up, both schedules forced on).
    pub fn queue_full(&mut self, p: &CobaltParams, now: i64) {
        if now - self.blue_timer > p.ce_target as i64 {
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.ce_dropping = true;
        self.ce_next = now;
        if self.ce_count == 0 {
            self.ce_count = 1;
        }
        if p.sce_interval != 0 {
            self.sce_dropping = true;
            self.sce_next = now;
            if self.sce_count == 0 {
                self.sce_count = 1;
            }
        }
    }

    /// `cobalt_queue_empty`: BLUE down, counts decay along their schedules.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: i64, cache: &[u32; ISQRT_CACHE]) {
        if self.p_drop != 0 && now - self.blue_timer > p.ce_target as i64 {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
        }
        while self.ce_count != 0 && now - self.ce_next >= 0 {
            self.ce_count -= 1;
            self.invsqrt(cache);
            self.ce_next = Self::control(self.ce_next, p.ce_interval, self.ce_isqrt);
        }
        if self.ce_dropping {
            self.ce_next = Self::control(now, p.ce_interval, self.ce_isqrt);
            self.ce_dropping = false;
        }
        while self.sce_count != 0 && now - self.sce_next >= 0 {
            self.sce_count -= 1;
            self.invsqrt(cache);
            self.sce_next = Self::control(self.sce_next, p.sce_interval, self.sce_isqrt);
        }
        if self.sce_dropping {
            self.sce_next = Self::reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt);
            self.sce_dropping = false;
        }
    }

    /// `cobalt_should_drop` for a bulk packet: SCE schedule, CE schedule,
    /// BLUE. CE-marks (or asks to drop) and SCE-marks `pkt` in place.
    #[allow(clippy::too_many_arguments)]
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        pkt: &mut Packet,
        flow_backlog: u32,
        active_flows: u32,
        total_backlog: u64,
        cache: &[u32; ISQRT_CACHE],
        cx: &mut Cx,
    ) -> Verdict {
        let sojourn = (now - pkt.enq_at.0 as i64).max(0) as u64;
        let weighted = u128::from(sojourn) * u128::from(flow_backlog) * u128::from(active_flows);
        let total = u128::from(total_backlog);
        let mut drop = false;

        // SCE schedule (only when enabled).
        let mut sce_marked = false;
        let over =
            p.sce_interval != 0 && weighted > u128::from(p.sce_target) * total && sojourn > 0;
        let mut next_due = self.sce_count != 0 && now - self.sce_next >= 0;
        if over {
            if !self.sce_dropping {
                self.sce_dropping = true;
                self.sce_next = if next_due {
                    Self::control(now, p.sce_interval, self.sce_isqrt)
                } else {
                    Self::reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt)
                };
                next_due = false;
            }
            if self.sce_count == 0 {
                self.sce_count = 1;
            }
        } else if self.sce_dropping {
            self.sce_next = if next_due {
                Self::control(now, p.sce_interval, self.sce_isqrt)
            } else {
                Self::reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt)
            };
            self.sce_dropping = false;
        }
        if next_due && self.sce_dropping {
            // INET_ECN_set_sce: only ECT(0) becomes ECT(1).
            if pkt.ecn == Ecn::Ect0 {
                pkt.ecn = Ecn::Ect1;
                sce_marked = true;
                self.sce_count = self.sce_count.saturating_add(1);
                self.invsqrt(cache);
                self.sce_next = Self::control(self.sce_next, p.sce_interval, self.sce_isqrt);
            }
        } else {
            while next_due {
                self.sce_count -= 1;
                self.invsqrt(cache);
                self.sce_next = Self::control(self.sce_next, p.sce_interval, self.sce_isqrt);
                next_due = self.sce_count != 0 && now - self.sce_next >= 0;
            }
        }

        // CE schedule.
        let mut schedule = now - self.ce_next;
        let over = weighted > u128::from(p.ce_target) * total && sojourn > 0;
        let mut next_due = self.ce_count != 0 && schedule >= 0;
        if over {
            if !self.ce_dropping {
                self.ce_dropping = true;
                self.ce_next = Self::control(now, p.ce_interval, self.ce_isqrt);
                next_due = false;
            }
            if self.ce_count == 0 {
                self.ce_count = 1;
            }
        } else if self.ce_dropping {
            self.ce_next = Self::control(now, p.ce_interval, self.ce_isqrt);
            self.ce_dropping = false;
        }
        if next_due && self.ce_dropping {
            drop = !cx.mark(pkt);
            self.ce_count = self.ce_count.saturating_add(1);
            self.invsqrt(cache);
            self.ce_next = Self::control(self.ce_next, p.ce_interval, self.ce_isqrt);
            schedule = now - self.ce_next;
        } else {
            while next_due {
                self.ce_count -= 1;
                self.invsqrt(cache);
                self.ce_next = Self::control(self.ce_next, p.ce_interval, self.ce_isqrt);
                schedule = now - self.ce_next;
                next_due = self.ce_count != 0 && schedule >= 0;
            }
        }

        // BLUE.
        if weighted > u128::from(p.blue_thresh) * total {
            self.queue_full(p, now);
        }
        if self.p_drop != 0 {
            drop |= cx.rng.next_u32() < self.p_drop;
        }

        // Activity timeout.
        if self.ce_count == 0 {
            self.ce_next = now + p.ce_interval as i64;
        } else if schedule > 0 && !drop {
            self.ce_next = now;
        }
        Verdict { drop, sce_marked }
    }
}

/// The deficit-mode virtual-clock shaper of `cnq_*`/`lfq_*` (Cake's without
/// overhead compensation): each sent packet moves the next send time on by
/// `len · rate_ns >> rate_shift` ns; an idle shaper banks no credit.
#[derive(Clone, Debug, Default)]
pub struct VirtualShaper {
    time_next_packet: i64,
    rate_ns: u64,
    rate_shift: u32,
    /// Set while the shaper holds a packet back (the link's wake-up).
    pub wake: Option<SimTime>,
}

impl VirtualShaper {
    pub fn new(bandwidth: Rate) -> VirtualShaper {
        let mut s = VirtualShaper::default();
        s.set_rate(bandwidth);
        s
    }
    /// `*_change`: a new rate, the schedule kept.
    pub fn set_rate(&mut self, bandwidth: Rate) {
        (self.rate_ns, self.rate_shift) = rate_fixed_point(bandwidth);
    }
    /// `*_unstale_shaper`, on enqueue into an empty qdisc.
    pub fn unstale(&mut self, now: i64) {
        if self.time_next_packet < now {
            self.time_next_packet = now;
        }
    }
    /// May a packet leave at `now`? Sets or clears [`Self::wake`].
    pub fn ready(&mut self, now: i64) -> bool {
        if self.time_next_packet > now {
            self.wake = Some(SimTime(self.time_next_packet as u64));
            return false;
        }
        self.wake = None;
        true
    }
    /// `*_advance_shaper` for a sent packet of `len` bytes.
    pub fn advance(&mut self, len: u64) {
        if self.rate_ns != 0 {
            let dur = (u128::from(len) * u128::from(self.rate_ns)) >> self.rate_shift;
            self.time_next_packet += dur as i64;
        }
    }
}

/// For the tests of the qdiscs built on this block (LFQ-COBALT,
/// twin_codel_af), which decay idle flows' AQMs one bucket per dequeue:
/// two Not-ECT flows (tuples 1 and 2) held far above the BLUE threshold
/// both raise BLUE; then flow 2 alone sends for 70 000 departures, one a
/// millisecond, so the sweep passes every one of the 65 536 buckets, and
/// idle flow 1's BLUE probability must have fallen.
#[cfg(test)]
pub(crate) fn assert_idle_blue_decays<Q: crate::qdisc::Qdisc>(mut q: Q, vars: impl Fn(&Q, u32) -> &CobaltVars) {
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};
    let ms = |t: u64| crate::units::SimTime(t * 1_000_000);
    let mut h = Harness::new();
    for _ in 0..300 {
        for f in [1, 2] {
            h.enq(&mut q, ms(0), pkt(f, Ecn::NotEct));
        }
    }
    let mut t = 500;
    while q.len() > 0 {
        h.deq(&mut q, ms(t));
        t += 1;
    }
    let before = vars(&q, 1).p_drop;
    assert!(before > 0 && vars(&q, 2).p_drop > 0, "both overloaded far above the BLUE threshold");
    for _ in 0..70_000 {
        t += 1;
        h.enq(&mut q, ms(t), pkt(2, Ecn::NotEct));
        assert!(h.deq(&mut q, ms(t)).is_some());
    }
    let after = vars(&q, 1).p_drop;
    assert!(after < before, "idle flow 1: {before} -> {after}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testing::{pkt, Harness};

    const MS: u64 = 1_000_000;

    fn params(sce_interval: u64) -> CobaltParams {
        CobaltParams { ce_interval: 100 * MS, ce_target: 5 * MS, sce_interval, sce_target: MS, blue_thresh: 0, p_inc: 1 << 24, p_dec: 1 << 20 }
    }

    #[test]
    fn overflow_forces_the_sce_schedule_on_only_when_sce_is_enabled() {
        for (sce_interval, on) in [(0, false), (10 * MS, true)] {
            let mut v = CobaltVars::default();
            v.queue_full(&params(sce_interval), 20 * MS as i64);
            assert_eq!((v.ce_dropping, v.ce_count, v.p_drop), (true, 1, 1 << 24));
            assert_eq!((v.sce_dropping, v.sce_count), (on, u32::from(on)), "sce_interval {sce_interval}");
        }
    }

    /// `should_drop` for a packet that waited `sojourn` ns, alone in its queue.
    fn verdict(v: &mut CobaltVars, p: &CobaltParams, now: i64, sojourn: i64, h: &mut Harness) -> bool {
        let mut pkt = pkt(1, Ecn::Ect0);
        pkt.enq_at = SimTime((now - sojourn) as u64);
        let mut cx = Cx { now: SimTime(now as u64), rng: &mut h.rng, stats: &mut h.stats };
        v.should_drop(p, now, &mut pkt, 1514, 1, 1514, &isqrt_cache(), &mut cx).drop
    }

    #[test]
    fn below_target_each_schedule_decays_only_while_it_is_due() {
        let (p, mut h) = (params(10 * MS), Harness::new());
        let now = 1_000 * MS as i64;
        // Both counts at 10, both just due: one step each moves the schedule past now.
        let mut v = CobaltVars { ce_count: 10, ce_next: now - MS as i64, sce_count: 10, sce_next: now - MS as i64, ..Default::default() };
        v.invsqrt(&isqrt_cache());
        assert!(!verdict(&mut v, &p, now, 0, &mut h));
        assert_eq!((v.ce_count, v.sce_count), (9, 9));
        // Due for a second: several steps each, until the schedule passes now.
        let mut v = CobaltVars { ce_count: 10, ce_next: now - 1_000 * MS as i64, sce_count: 10, sce_next: now - 1_000 * MS as i64, ..Default::default() };
        v.invsqrt(&isqrt_cache());
        assert!(!verdict(&mut v, &p, now, 0, &mut h));
        assert!(v.ce_count < 9 && v.sce_count < 9, "{} {}", v.ce_count, v.sce_count);
        // On an empty queue a schedule still in the future keeps its count.
        let mut v = CobaltVars { ce_count: 3, ce_next: now + MS as i64, sce_count: 3, sce_next: now + MS as i64, ..Default::default() };
        v.queue_empty(&p, now, &isqrt_cache());
        assert_eq!((v.ce_count, v.sce_count), (3, 3));
    }

    #[test]
    fn blue_drops_whatever_the_delay() {
        let (p, mut h) = (params(0), Harness::new());
        let mut v = CobaltVars { p_drop: u32::MAX, ..Default::default() };
        assert!(verdict(&mut v, &p, 1_000 * MS as i64, 0, &mut h));
        let mut v = CobaltVars::default();
        assert!(!verdict(&mut v, &p, 1_000 * MS as i64, 0, &mut h));
    }

    #[test]
    fn an_idle_shaper_restarts_from_now_not_from_its_past() {
        let mut s = VirtualShaper { time_next_packet: 5, ..Default::default() };
        s.unstale(10);
        assert_eq!(s.time_next_packet, 10);
        s.time_next_packet = 20;
        s.unstale(10);
        assert_eq!(s.time_next_packet, 20);
    }

    #[test]
    fn an_empty_queue_lowers_blue_once_per_target_and_decays_the_counts() {
        let (p, cache) = (params(10 * MS), isqrt_cache());
        let mut v = CobaltVars::default();
        v.queue_full(&p, 20 * MS as i64);
        // Exactly one target after the rise: not yet; one ns later: −p_dec.
        v.queue_empty(&p, 25 * MS as i64, &cache);
        assert_eq!(v.p_drop, 1 << 24);
        v.queue_empty(&p, 25 * MS as i64 + 1, &cache);
        assert_eq!(v.p_drop, (1 << 24) - (1 << 20));
        // The counts forced to 1 at the overflow were due at once: both decay to 0.
        assert_eq!((v.ce_count, v.sce_count), (0, 0));
        assert!(!v.ce_dropping && !v.sce_dropping);
    }
}
