//! COBALT: CoDel's control law and BLUE, per Cake flow queue (Linux
//! net/sched/sch_cake.c `cobalt_should_drop`, `cobalt_queue_full`,
//! `cobalt_queue_empty`, `cobalt_cache_init`).
//!
//! The control law (`t + interval/√count`) and the Newton step for 1/√count
//! are the shared CoDel block's ([`control_law`], [`newton_step`]); COBALT
//! differs from CoDel in how it drives them:
//! - no `first_above_time`: a busy flow that goes over target enters
//!   dropping with `drop_next = now + interval·rec_inv_sqrt` (1.0 once
//!   initialised) and count 1, so its first signal comes one interval later
//!   and the next ones `interval/√count` apart for count = 2, 3, ... (CoDel
//!   spaces its first two drops by a full interval again). `drop_next` is
//!   also an activity timer (refreshed to now + interval by every packet
//!   while count is 0): if a flow's first examined packet after being new
//!   or idle for over an interval is already over target, drop_next is in
//!   the past and the next packet is signalled at once (a never-signalled
//!   flow also has rec_inv_sqrt = 0 in Linux, giving drop_next = now);
//! - below target the count *decays*, one step per elapsed `drop_next`,
//!   instead of being reset (and reused) on the next episode;
//! - 1/√count is exact (a cache of four Newton steps) for count < 16;
//! - BLUE: `p_drop` rises by `p_inc` (1/256) on each overflow drop of the
//!   flow and falls by `p_dec` (1/4096) when the flow is found empty, each at
//!   most once per `target`; it drops (never marks) with probability p_drop.
//!
//! The "over target" test has the MTU-scaling floor of [`MtuScaling`] on
//! top of `sojourn > target` (Linux mainline: `sojourn > 4·mtu_time` and
//! `sojourn > 2·mtu_time·bulk_flows`, the bulk term in ingress mode only).
//!
//! Units: ns (`SimTime`/`Dur`); `p_drop` Q0.32; `rec_inv_sqrt` Q0.16.
//! Deviations: Linux keeps `rec_inv_sqrt` in Q0.32; the block's Q0.16 gives
//! the same schedule within 2⁻¹⁶ relative.

use serde::{Deserialize, Serialize};

use crate::packet::Packet;
use crate::qdisc::blocks::codel::{control_law, newton_step, REC_INV_SQRT_ONE};
use crate::qdisc::Cx;
use crate::units::{Dur, SimTime};

/// `REC_INV_SQRT_CACHE` in sch_cake.c.
const CACHE: usize = 16;

/// Exact 1/√count for count < 16 (`cobalt_cache_init` converges four
/// Newton steps in Q0.32 to these values; counts 0 and 1 are 1.0).
fn inv_sqrt_cache() -> [u16; CACHE] {
    let mut c = [REC_INV_SQRT_ONE; CACHE];
    for (count, slot) in c.iter_mut().enumerate().skip(2) {
        *slot = (65536.0 / (count as f64).sqrt()) as u16;
    }
    c
}

/// Which minimum occupancy, in MTU serialisation times, the AQM requires on
/// top of `sojourn > target` (the 2018 MTU latency-scaling experiment).
/// `bulk` is the tin's bulk flow count, `mtu` the tin's `mtu_time`:
///
/// | variant | AQM may act only when sojourn > |
/// |---|---|
/// | `mainline` | max(4·mtu, 2·mtu·bulk if ingress else 0) (current sch_cake) |
/// | `1mtu` | 1·mtu |
/// | `2mtu` | 2·mtu |
/// | `2mtu_x_flows` | 2·mtu·bulk (both modes) |
/// | `4mtu` | 4·mtu |
/// | `4mtu_x_flows` | 4·mtu·bulk (both modes) |
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MtuScaling {
    #[default]
    #[serde(rename = "mainline")]
    Mainline,
    #[serde(rename = "1mtu")]
    OneMtu,
    #[serde(rename = "2mtu")]
    TwoMtu,
    #[serde(rename = "2mtu_x_flows")]
    TwoMtuXFlows,
    #[serde(rename = "4mtu")]
    FourMtu,
    #[serde(rename = "4mtu_x_flows")]
    FourMtuXFlows,
}

impl MtuScaling {
    /// The sojourn the AQM must exceed besides `target`.
    pub fn floor(self, mtu_time: Dur, bulk: u32, ingress: bool) -> Dur {
        let b = u64::from(bulk);
        match self {
            MtuScaling::Mainline => (mtu_time * 4).max(mtu_time * (2 * b * u64::from(ingress))),
            MtuScaling::OneMtu => mtu_time,
            MtuScaling::TwoMtu => mtu_time * 2,
            MtuScaling::TwoMtuXFlows => mtu_time * (2 * b),
            MtuScaling::FourMtu => mtu_time * 4,
            MtuScaling::FourMtuXFlows => mtu_time * (4 * b),
        }
    }
}

/// Linux `struct cobalt_params`, per tin.
#[derive(Clone, Debug, PartialEq)]
pub struct CobaltParams {
    pub interval: Dur,
    pub target: Dur,
    /// Serialisation time of one MTU at the tin's rate (0 when unlimited).
    pub mtu_time: Dur,
    /// BLUE increment and decrement, Q0.32 (1/256 and 1/4096).
    pub p_inc: u32,
    pub p_dec: u32,
    pub scaling: MtuScaling,
    pub ingress: bool,
    cache: [u16; CACHE],
}

impl CobaltParams {
    pub fn new(
        target: Dur,
        interval: Dur,
        mtu_time: Dur,
        scaling: MtuScaling,
        ingress: bool,
    ) -> Self {
        CobaltParams {
            interval,
            target,
            mtu_time,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
            scaling,
            ingress,
            cache: inv_sqrt_cache(),
        }
    }
    /// The sojourn a packet must exceed for the flow to count as over target.
    pub fn threshold(&self, bulk: u32) -> Dur {
        self.target
            .max(self.scaling.floor(self.mtu_time, bulk, self.ingress))
    }
}

/// Linux `struct cobalt_vars`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    pub count: u32,
    pub rec_inv_sqrt: u16,
    pub drop_next: SimTime,
    pub blue_timer: SimTime,
    /// BLUE drop probability, Q0.32.
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
    /// The last packet's `over_target` (sojourn past target and the MTU-time
    /// floor), which chromi/sce's SCE ramp reads.
    pub over_target: bool,
}

impl CobaltVars {
    fn invsqrt(&mut self, p: &CobaltParams) {
        self.rec_inv_sqrt = match p.cache.get(self.count as usize) {
            Some(&v) => v,
            None => newton_step(self.count, self.rec_inv_sqrt),
        };
    }

    /// At rest: no BLUE probability, no count, activity timer expired.
    pub fn at_rest(&self, now: SimTime) -> bool {
        self.p_drop == 0 && self.count == 0 && now >= self.drop_next
    }

    /// `cobalt_queue_full`: an overflow drop hit this flow. Returns true if
    /// BLUE went from idle to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: SimTime) -> bool {
        let mut up = false;
        if now.diff_ns(self.blue_timer) > p.target.nanos() as i64 {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: the flow was serviced and found empty. Returns
    /// true if BLUE went from active to idle.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: SimTime) -> bool {
        let mut down = false;
        if self.p_drop != 0 && now.diff_ns(self.blue_timer) > p.target.nanos() as i64 {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now >= self.drop_next {
            self.count -= 1;
            self.invsqrt(p);
            self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop` for a just-dequeued packet: CE-marks it in place
    /// (through `cx`) or returns true to drop it. `bulk` is the tin's bulk
    /// flow count.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        pkt: &mut Packet,
        bulk: u32,
        cx: &mut Cx,
    ) -> bool {
        let now = cx.now;
        let sojourn = now.since(pkt.enq_at);
        let over_target = sojourn > p.threshold(bulk);
        self.over_target = over_target;
        let mut schedule = now.diff_ns(self.drop_next);
        let mut next_due = self.count != 0 && schedule >= 0;
        let mut drop = false;
        self.ecn_marked = false;
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control_law(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            self.ecn_marked = cx.mark(pkt);
            drop = !self.ecn_marked;
            self.count = self.count.saturating_add(1);
            self.invsqrt(p);
            self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now.diff_ns(self.drop_next);
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt(p);
                self.drop_next = control_law(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now.diff_ns(self.drop_next);
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        // BLUE; no ECN, deliberately (sch_cake).
        if self.p_drop != 0 {
            drop |= cx.rng.next_u32() < self.p_drop;
        }
        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now + p.interval;
        } else if schedule > 0 && !drop {
            self.drop_next = now;
        }
        drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::blocks::codel::{CodelParams, CodelQueue, CodelVars};
    use crate::qdisc::testing::{pkt, Harness};
    use crate::qdisc::{Cx, QdiscStats};
    use std::collections::VecDeque;

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    #[test]
    fn inv_sqrt_cache_is_exact_below_16() {
        let c = inv_sqrt_cache();
        assert_eq!((c[0], c[1]), (u16::MAX, u16::MAX));
        for (n, &v) in c.iter().enumerate().skip(2) {
            let want = 1.0 / (n as f64).sqrt();
            assert!(
                (f64::from(v) / 65536.0 - want).abs() < 2e-4,
                "count {n}: {v:#x}"
            );
        }
    }

    /// Drop times of COBALT for a queue held at 20 ms sojourn, 1 packet/ms.
    fn cobalt_drop_times(p: &CobaltParams, until: u64) -> Vec<u64> {
        let mut h = Harness::new();
        // A flow that has signalled before (its 1/√count is initialised),
        // busy below target until t = 10 ms (its activity timer running).
        let mut v = CobaltVars {
            rec_inv_sqrt: REC_INV_SQRT_ONE,
            ..Default::default()
        };
        let mut out = Vec::new();
        for t in 0..until {
            let mut pk = pkt(1, Ecn::NotEct);
            let sojourn = if t < 10 { 1_000_000 } else { 20_000_000 };
            pk.enq_at = SimTime(ms(t).0.saturating_sub(sojourn));
            let mut cx = Cx {
                now: ms(t),
                rng: &mut h.rng,
                stats: &mut h.stats,
            };
            if v.should_drop(p, &mut pk, 1, &mut cx) {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn drop_schedule_follows_the_codel_control_law_when_blue_is_idle() {
        let p = CobaltParams::new(
            Dur::from_millis(5),
            Dur::from_millis(100),
            Dur::ZERO,
            MtuScaling::Mainline,
            false,
        );
        let drops = cobalt_drop_times(&p, 3000);
        // Over target from t = 10 ms: first signal one interval later.
        assert_eq!(drops[0], 110);
        // Then gaps of interval/√count for count = 2, 3, ... (rounded up to the
        // 1 ms dequeue grid): the CoDel block's control law.
        let mut due = ms(110);
        for (k, w) in drops.windows(2).enumerate().take(40) {
            let count = k as u32 + 2;
            let rec = if (count as usize) < CACHE {
                inv_sqrt_cache()[count as usize]
            } else {
                0
            };
            if rec != 0 {
                due = control_law(due, p.interval, rec);
                assert_eq!(
                    w[1],
                    due.0.div_ceil(1_000_000),
                    "drop {} (count {count})",
                    k + 1
                );
            }
            let gap = (w[1] - w[0]) as f64;
            let want = 100.0 / f64::from(count).sqrt();
            assert!(
                (gap - want).abs() <= 1.0 + 1e-9,
                "count {count}: gap {gap} ms, want {want:.2}"
            );
        }
        // And the same rate as the CoDel block once both are deep in their
        // dropping state: CoDel's drop k+1 follows drop k by interval/√(k+1)
        // too (its count runs one behind COBALT's: it spends a full
        // interval between its first two drops).
        let codel = codel_drop_times(3000);
        let (c, k) = (&codel, &drops);
        let tail = |v: &Vec<u64>| {
            v[v.len() - 10..]
                .windows(2)
                .map(|w| w[1] - w[0])
                .sum::<u64>()
        };
        let (gc, gk) = (tail(c), tail(k));
        assert!(
            (gc as i64 - gk as i64).abs() <= 9,
            "CoDel {gc} ms vs COBALT {gk} ms per 9 drops"
        );
        assert_eq!(
            codel[0], 111,
            "CoDel: first drop strictly after first_above_time"
        );
    }

    struct Q(VecDeque<Packet>);
    impl CodelQueue for Q {
        fn pop(&mut self) -> Option<Packet> {
            self.0.pop_front()
        }
        fn backlog(&self) -> u64 {
            1 << 30
        }
    }

    fn codel_drop_times(until: u64) -> Vec<u64> {
        let mut h = Harness::new();
        let mut v = CodelVars::new();
        let p = CodelParams::default();
        let mut out = Vec::new();
        for t in 10..until {
            let mut pk = pkt(1, Ecn::NotEct);
            pk.enq_at = SimTime(ms(t).0.saturating_sub(20_000_000));
            let mut q = Q(VecDeque::from([pk, pk]));
            let before = h.stats.drops_aqm;
            let mut cx = Cx {
                now: ms(t),
                rng: &mut h.rng,
                stats: &mut h.stats,
            };
            v.dequeue(&p, &mut q, &mut cx);
            if h.stats.drops_aqm > before {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn a_new_or_idle_flow_signals_on_its_next_over_target_packet() {
        // drop_next in the past (an idle or new flow) is pulled to now by the
        // activity-timer step, and Linux zero-initialises rec_inv_sqrt, so
        // the first entry into dropping is due at once.
        let p = CobaltParams::new(
            Dur::from_millis(5),
            Dur::from_millis(100),
            Dur::ZERO,
            MtuScaling::Mainline,
            false,
        );
        let mut v = CobaltVars::default();
        let mut h = Harness::new();
        let mut verdicts = Vec::new();
        for t in [10u64, 11, 12] {
            let mut pk = pkt(1, Ecn::NotEct);
            pk.enq_at = ms(t - 10);
            let mut cx = Cx {
                now: ms(t),
                rng: &mut h.rng,
                stats: &mut h.stats,
            };
            verdicts.push(v.should_drop(&p, &mut pk, 1, &mut cx));
        }
        assert_eq!(verdicts, [false, true, false]);
        assert_eq!(v.count, 2);
    }

    #[test]
    fn a_sojourn_of_exactly_the_target_is_not_over_it() {
        let p = CobaltParams::new(Dur::from_millis(5), Dur::from_millis(100), Dur::ZERO, MtuScaling::Mainline, false);
        let mut h = Harness::new();
        for (sojourn, over) in [(5_000_000u64, false), (5_000_001, true)] {
            let mut v = CobaltVars::default();
            let mut pk = pkt(1, Ecn::NotEct);
            pk.enq_at = ms(10);
            let mut cx = Cx { now: SimTime(ms(10).0 + sojourn), rng: &mut h.rng, stats: &mut h.stats };
            v.should_drop(&p, &mut pk, 1, &mut cx);
            assert_eq!((v.dropping, v.count), (over, u32::from(over)), "sojourn {sojourn} ns");
        }
    }

    #[test]
    fn at_rest_needs_no_blue_no_count_and_an_expired_timer() {
        let rest = CobaltVars { drop_next: ms(5), ..Default::default() };
        assert!(rest.at_rest(ms(5)) && !rest.at_rest(ms(4)));
        assert!(!CobaltVars { p_drop: 1, ..rest.clone() }.at_rest(ms(5)));
        assert!(!CobaltVars { count: 1, ..rest }.at_rest(ms(5)));
    }

    #[test]
    fn count_decays_below_target_instead_of_resetting() {
        let p = CobaltParams::new(
            Dur::from_millis(5),
            Dur::from_millis(100),
            Dur::ZERO,
            MtuScaling::Mainline,
            false,
        );
        let mut v = CobaltVars {
            count: 9,
            dropping: true,
            drop_next: ms(1800),
            rec_inv_sqrt: inv_sqrt_cache()[9],
            ..Default::default()
        };
        let mut h = Harness::new();
        let mut pk = pkt(1, Ecn::NotEct);
        pk.enq_at = ms(1999); // 1 ms sojourn: below target
        let mut cx = Cx {
            now: ms(2000),
            rng: &mut h.rng,
            stats: &mut h.stats,
        };
        assert!(!v.should_drop(&p, &mut pk, 1, &mut cx));
        assert!(!v.dropping);
        // 200 ms of overdue schedule pay for several decrements, each one
        // spacing drop_next by interval/√count of the new count:
        // 1800 + 35.4 + 37.8 + 40.8 + 44.7 ≤ 2000 < ... + 50 → count 4.
        assert_eq!(v.count, 4);
        let mut want = ms(1800);
        let mut c = 9u32;
        while c > 0 && want <= ms(2000) {
            c -= 1;
            want = control_law(want, p.interval, inv_sqrt_cache()[c as usize]);
        }
        assert_eq!(v.count, c);
    }

    #[test]
    fn blue_rises_on_overflow_at_most_once_per_target_and_falls_when_empty() {
        let p = CobaltParams::new(
            Dur::from_millis(5),
            Dur::from_millis(100),
            Dur::ZERO,
            MtuScaling::Mainline,
            false,
        );
        let mut v = CobaltVars {
            blue_timer: SimTime::ZERO,
            ..Default::default()
        };
        assert!(v.queue_full(&p, ms(10)));
        assert_eq!(v.p_drop, 1 << 24);
        assert!(v.dropping && v.count == 1 && v.drop_next == ms(10));
        // Within target of the last increment (exactly target included): no further increase.
        assert!(!v.queue_full(&p, ms(14)));
        assert!(!v.queue_full(&p, ms(15)));
        assert_eq!(v.p_drop, 1 << 24);
        assert!(!v.queue_full(&p, ms(16)));
        assert_eq!(
            v.p_drop,
            2 << 24,
            "2/256 after a second overflow one target later"
        );
        for k in 1..=4u64 {
            v.queue_full(&p, ms(16 + 6 * k));
        }
        assert_eq!(v.p_drop, 6 << 24);
        // Empty: −1/4096 per target.
        assert!(!v.queue_empty(&p, ms(100)));
        assert_eq!(v.p_drop, (6 << 24) - (1 << 20));
        assert!(!v.dropping);
        v.queue_empty(&p, ms(102));
        assert_eq!(v.p_drop, (6 << 24) - (1 << 20), "at most once per target");
    }

    #[test]
    fn blue_drops_with_probability_p_drop_and_never_marks() {
        let p = CobaltParams::new(
            Dur::from_millis(5),
            Dur::from_millis(100),
            Dur::ZERO,
            MtuScaling::Mainline,
            false,
        );
        for seed in 1..=5u64 {
            let mut rng = crate::rng::SimRng::for_component(seed, "blue");
            let mut stats = QdiscStats::default();
            let mut v = CobaltVars {
                p_drop: 1 << 28,
                ..Default::default()
            }; // 1/16
            let n = 40_000u32;
            let mut drops = 0;
            for i in 0..n {
                let mut pk = pkt(1, Ecn::Ect0);
                pk.enq_at = SimTime(u64::from(i));
                let mut cx = Cx {
                    now: SimTime(u64::from(i)),
                    rng: &mut rng,
                    stats: &mut stats,
                };
                drops += u32::from(v.should_drop(&p, &mut pk, 1, &mut cx));
                assert_eq!(pk.ecn, Ecn::Ect0);
            }
            let f = f64::from(drops) / f64::from(n);
            // 1/16 ± 4.5σ (σ = 0.0012 at 40 000 samples)
            assert!((f - 0.0625).abs() < 0.0055, "seed {seed}: {f}");
        }
    }

    #[test]
    fn mtu_scaling_variants_set_the_threshold_exactly() {
        let mtu = Dur::from_micros(1211); // 1514 B at 10 Mbit/s
        let t = Dur::from_millis(5);
        let th = |s: MtuScaling, bulk: u32, ingress: bool| {
            CobaltParams::new(t, Dur::from_millis(100), mtu, s, ingress).threshold(bulk)
        };
        for ingress in [false, true] {
            assert_eq!(th(MtuScaling::OneMtu, 10, ingress), t);
            assert_eq!(th(MtuScaling::FourMtu, 10, ingress), t, "4·1.211 ms < 5 ms");
            assert_eq!(th(MtuScaling::TwoMtuXFlows, 10, ingress), mtu * 20);
            assert_eq!(th(MtuScaling::FourMtuXFlows, 10, ingress), mtu * 40);
            assert_eq!(th(MtuScaling::FourMtuXFlows, 1, ingress), t);
            assert_eq!(th(MtuScaling::TwoMtuXFlows, 3, ingress), mtu * 6);
        }
        // mainline: the flow term only in ingress mode
        assert_eq!(th(MtuScaling::Mainline, 10, false), t);
        assert_eq!(th(MtuScaling::Mainline, 10, true), mtu * 20);
        assert_eq!(th(MtuScaling::Mainline, 1, true), t);
        // At a low rate the MTU terms dominate target.
        let slow = Dur::from_micros(12_112); // 1514 B at 1 Mbit/s
        let th = |s: MtuScaling| {
            CobaltParams::new(t, Dur::from_millis(100), slow, s, false).threshold(2)
        };
        assert_eq!(th(MtuScaling::OneMtu), slow);
        assert_eq!(th(MtuScaling::TwoMtu), slow * 2);
        assert_eq!(th(MtuScaling::FourMtu), slow * 4);
        assert_eq!(th(MtuScaling::Mainline), slow * 4);
        assert_eq!(th(MtuScaling::TwoMtuXFlows), slow * 4);
        assert_eq!(th(MtuScaling::FourMtuXFlows), slow * 8);
        // And should_drop uses it: a sojourn between two thresholds is over
        // target under one variant and not under the other.
        let mut h = Harness::new();
        for (s, want) in [(MtuScaling::OneMtu, true), (MtuScaling::FourMtu, false)] {
            let p = CobaltParams::new(t, Dur::from_millis(100), slow, s, false);
            let mut v = CobaltVars::default();
            let mut pk = pkt(1, Ecn::NotEct);
            pk.enq_at = SimTime::ZERO;
            let mut cx = Cx {
                now: SimTime(slow.nanos() * 2),
                rng: &mut h.rng,
                stats: &mut h.stats,
            };
            v.should_drop(&p, &mut pk, 1, &mut cx);
            assert_eq!(v.dropping, want, "{s:?}");
        }
    }
}
