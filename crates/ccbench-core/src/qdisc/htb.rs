//! HTB with a single class under the root, as the field reports configure it
//! (`tc qdisc add ... root handle 1: htb default 1; tc class add ... parent
//! 1: classid 1:1 htb rate R ceil C` and the scenario's qdisc as the class's
//! child). Linux `net/sched/sch_htb.c` (`htb_class_mode`,
//! `htb_charge_class`/`htb_accnt_tokens`, `htb_change_class`); defaults from
//! iproute2 `tc/q_htb.c`.
//!
//! The class has a rate bucket (depth `burst`) and a ceil bucket (depth
//! `cburst`), both in time units. It may send while both levels are ≥ 0
//! (mode `HTB_CAN_SEND`); a root class has no parent to borrow from, so
//! `HTB_MAY_BORROW` waits like `HTB_CANT_SEND`. The packet is charged after
//! it is sent, so a level may go negative (floored at `1 − mbuffer`, 60 s).
//! Defaults: `ceil = rate`; `burst = rate[B/s]/HZ + mtu` and `cburst` the
//! same with `ceil`, with tc's `mtu` 1600 and HZ = 10⁹ as modern kernels
//! report it in /proc/net/psched (so burst = cburst = 1600 B at 50 Mbit, as
//! observed in the L4S runs); `quantum = rate[B/s]/r2q` (r2q 10) clamped to
//! 1000..200000 when not given (200000 at 50 Mbit, observed). The leaf's
//! default child is pfifo with the device's txqueuelen (1000).
//!
//! Units: rates in bit/s, sizes in bytes, time in ns; tokens exact (see
//! `blocks::token_bucket`). `stab` adjusts the charged length.
//! Deviations / scope: one class only (no hierarchy, borrowing, priorities
//! or DRR between classes, so `quantum` is accepted and reported but has no
//! effect); hysteresis off (Linux default `htb_hysteresis = 0`); no direct
//! queue.

use serde::{Deserialize, Serialize};

use super::blocks::child::Child;
use super::blocks::overhead::Overhead;
use super::blocks::stab::StabConfig;
use super::blocks::token_bucket::{cost, TimeBucket};
use super::fifo::PfifoConfig;
use super::{Cx, Qdisc, QdiscConfig};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Bytes, Dur, Rate, SimTime};

/// tc's `mtu` used in the default burst (`tc/q_htb.c`).
pub const TC_HTB_MTU: u64 = 1600;
/// psched HZ on a kernel with 1 ns hrtimer resolution.
pub const PSCHED_HZ: u64 = 1_000_000_000;
/// `cl->mbuffer`: the most a bucket may be in debt, and the longest idle
/// time credited (60 s).
pub const MBUFFER: Dur = Dur::from_secs(60);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HtbConfig {
    /// Assured rate of the class (tc `rate`).
    pub rate: Rate,
    /// Most the class may send (tc `ceil`; default `rate`). As in Linux, a
    /// ceil below the rate is accepted: the smaller bucket then governs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceil: Option<Rate>,
    /// Rate bucket depth in bytes (default rate/HZ + 1600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Bytes>,
    /// Ceil bucket depth in bytes (default ceil/HZ + 1600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cburst: Option<Bytes>,
    /// DRR quantum in bytes (default rate/r2q clamped to 1000..200000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<Bytes>,
    /// Rate-to-quantum divisor (tc `r2q`, default 10).
    #[serde(default = "default_r2q")]
    pub r2q: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stab: Option<StabConfig>,
    /// The leaf's qdisc (default: pfifo limit 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<QdiscConfig>>,
}

fn default_r2q() -> u32 {
    10
}

impl HtbConfig {
    pub fn ceil(&self) -> Rate {
        self.ceil.unwrap_or(self.rate)
    }
    /// tc's default burst for a rate: rate[B/s] / HZ + mtu (integer division).
    pub fn default_burst(rate: Rate) -> u64 {
        rate.bps() / 8 / PSCHED_HZ + TC_HTB_MTU
    }
    pub fn burst_bytes(&self) -> u64 {
        self.burst
            .map_or_else(|| Self::default_burst(self.rate), |b| b.0)
    }
    pub fn cburst_bytes(&self) -> u64 {
        self.cburst
            .map_or_else(|| Self::default_burst(self.ceil()), |b| b.0)
    }
    /// `htb_change_class`: rate[B/s] / r2q, clamped to 1000..200000 unless given.
    pub fn quantum_bytes(&self) -> u64 {
        match self.quantum {
            Some(q) => q.0,
            None => (self.rate.bps() / 8 / u64::from(self.r2q.max(1))).clamp(1000, 200_000),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.rate.is_unlimited() {
            errs.push("rate: must be greater than 0".to_string());
        }
        if self.ceil == Some(Rate(0)) {
            errs.push("ceil: must be greater than 0".into());
        }
        for (k, v) in [
            ("burst", self.burst),
            ("cburst", self.cburst),
            ("quantum", self.quantum),
        ] {
            if let Some(b) = v {
                if b.0 == 0 || b.0 > u64::from(u32::MAX) {
                    errs.push(format!("{k}: must be 1..4294967295 bytes, got {}", b.0));
                }
            }
        }
        if self.r2q == 0 {
            errs.push("r2q: must be at least 1".into());
        }
        if let Some(s) = &self.stab {
            if let Err(e) = s.validate() {
                errs.push(e);
            }
        }
        super::validate_child(&self.child, &mut errs);
        super::problems(errs)
    }

    fn child_config(&self) -> QdiscConfig {
        self.child
            .as_deref()
            .cloned()
            .unwrap_or(QdiscConfig::Pfifo(PfifoConfig::default()))
    }

    pub fn build(&self, rng: &mut SimRng) -> Htb {
        Htb {
            tokens: TimeBucket::new(self.rate, self.burst_bytes(), SimTime::ZERO),
            ctokens: TimeBucket::new(self.ceil(), self.cburst_bytes(), SimTime::ZERO),
            quantum: self.quantum_bytes(),
            overhead: self.stab.map(|s| s.overhead()).unwrap_or_default(),
            child: Child::new(&self.child_config(), rng),
            explicit_child: self.child.is_some(),
            wake: None,
        }
    }
}

pub struct Htb {
    /// Rate bucket (`cl->tokens`).
    tokens: TimeBucket,
    /// Ceil bucket (`cl->ctokens`).
    ctokens: TimeBucket,
    quantum: u64,
    overhead: Overhead,
    child: Child,
    explicit_child: bool,
    wake: Option<SimTime>,
}

impl Htb {
    /// The qdisc holding the queue.
    pub fn child(&self) -> &Child {
        &self.child
    }
    pub fn quantum(&self) -> u64 {
        self.quantum
    }
    /// `htb_accnt_tokens`: refill (capped at the depth), charge, floor at 1 − mbuffer.
    fn charge(b: &mut TimeBucket, now: SimTime, len: u64) {
        let floor = -i128::from(MBUFFER.0) * i128::from(b.rate());
        let mut toks = b.level_uncapped(now, MBUFFER).min(b.level(now)) - cost(len);
        if toks <= floor {
            toks = floor + i128::from(b.rate());
        }
        b.set(now, toks);
    }
}

impl Qdisc for Htb {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        self.child.enqueue(pkt, cx);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.wake = None;
        if self.child.is_empty() {
            return None;
        }
        let now = cx.now;
        //= sch_htb.c htb_class_mode: ctokens + diff < 0 -> HTB_CANT_SEND;
        //# tokens + diff >= 0 -> HTB_CAN_SEND; else HTB_MAY_BORROW (no parent: waits).
        let c = self.ctokens.level_uncapped(now, MBUFFER);
        let t = self.tokens.level_uncapped(now, MBUFFER);
        if c < 0 || t < 0 {
            let wait = if c < 0 {
                self.ctokens.time_to_zero(c)
            } else {
                self.tokens.time_to_zero(t)
            };
            self.wake = Some(now + wait);
            return None;
        }
        let p = self.child.dequeue(cx)?;
        let len = u64::from(self.overhead.charge(p.size));
        Self::charge(&mut self.tokens, now, len);
        Self::charge(&mut self.ctokens, now, len);
        Some(p)
    }

    fn len(&self) -> usize {
        self.child.len()
    }
    fn probe(&mut self, now: SimTime) -> super::QdiscProbe {
        self.child.probe(now)
    }
    fn bytes(&self) -> u64 {
        self.child.bytes()
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        super::min_some(self.wake, self.child.next_wakeup())
    }

    fn change(&mut self, cfg: &QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        let QdiscConfig::Htb(c) = cfg else {
            return Err("`change` cannot switch the qdisc kind (use `qdisc = {...}`)".into());
        };
        // htb_change_class on an existing class: new rates and depths, tokens kept.
        self.tokens.reconfigure(c.rate, c.burst_bytes());
        self.ctokens.reconfigure(c.ceil(), c.cburst_bytes());
        self.quantum = c.quantum_bytes();
        self.overhead = c.stab.map(|s| s.overhead()).unwrap_or_default();
        match (&c.child, self.explicit_child) {
            (Some(ch), true) => self.child.change(ch, cx),
            (None, false) => Ok(()),
            _ => Err("`change` cannot add or remove htb's child (use `qdisc = {...}`)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::blocks::overhead::LinkLayer;
    use crate::qdisc::testing::{check_rules, pkt, Harness};

    fn htb(rate: u64) -> HtbConfig {
        HtbConfig {
            rate: Rate(rate),
            ceil: None,
            burst: None,
            cburst: None,
            quantum: None,
            r2q: 10,
            stab: None,
            child: None,
        }
    }

    fn drain(h: &mut Harness, q: &mut Htb, end: SimTime) -> Vec<SimTime> {
        let mut out = Vec::new();
        let mut now = SimTime::ZERO;
        while now <= end {
            match h.deq(q, now) {
                Some(_) => out.push(now),
                None => match q.next_wakeup() {
                    Some(t) => {
                        assert!(t > now);
                        now = t
                    }
                    None => break,
                },
            }
        }
        out.retain(|&t| t <= end);
        out
    }

    #[test]
    fn defaults_match_tc_and_the_observed_l4s_setup() {
        let c = htb(50_000_000);
        assert_eq!(
            c.burst_bytes(),
            1600,
            "observed burst/cburst 1600 B at 50 Mbit"
        );
        assert_eq!(c.cburst_bytes(), 1600);
        assert_eq!(
            c.quantum_bytes(),
            200_000,
            "observed quantum 200000 at 50 Mbit"
        );
        assert_eq!(htb(1_000_000).quantum_bytes(), 12_500);
        assert_eq!(htb(40_000).quantum_bytes(), 1000);
    }

    #[test]
    fn defaults_from_an_empty_class_and_at_high_rates() {
        let c: HtbConfig = toml::from_str(r#"rate = "1Mbit""#).unwrap();
        assert_eq!((c.r2q, c.quantum_bytes()), (10, 12_500));
        // tc: rate in B/s over psched HZ, plus the mtu.
        assert_eq!(HtbConfig::default_burst(Rate(10_000_000_000)), 1601);
        assert_eq!(HtbConfig::default_burst(Rate(100_000_000_000)), 1612);
    }

    /// Each rule beside its valid neighbour.
    #[test]
    fn validate_names_the_offending_key() {
        let max = u64::from(u32::MAX);
        let cases: [(HtbConfig, Option<&str>); 9] = [
            (htb(1_000_000), None),
            (HtbConfig { ceil: Some(Rate(0)), ..htb(1_000_000) }, Some("ceil")),
            (HtbConfig { ceil: Some(Rate(1)), ..htb(1_000_000) }, None),
            (HtbConfig { burst: Some(Bytes(max)), ..htb(1_000_000) }, None),
            (HtbConfig { burst: Some(Bytes(max + 1)), ..htb(1_000_000) }, Some("burst")),
            (HtbConfig { cburst: Some(Bytes(0)), ..htb(1_000_000) }, Some("cburst")),
            (HtbConfig { quantum: Some(Bytes(1)), ..htb(1_000_000) }, None),
            (HtbConfig { r2q: 0, ..htb(1_000_000) }, Some("r2q")),
            (HtbConfig { r2q: 1, ..htb(1_000_000) }, None),
        ];
        check_rules(cases, |c| c.validate());
    }

    /// HTB sends while the level is ≥ 0 and charges afterwards, so by time T
    /// exactly floor((burst + rate·T/8) / charged) + 1 packets have left.
    fn check_exact(cfg: HtbConfig, charged: u64) {
        let rate = cfg.rate.bps().min(cfg.ceil().bps());
        let burst = cfg.burst_bytes().min(cfg.cburst_bytes());
        let mut h = Harness::new();
        let mut q = HtbConfig {
            child: Some(Box::new(QdiscConfig::Pfifo(PfifoConfig {
                limit: u64::MAX,
            }))),
            ..cfg
        }
        .build(&mut h.rng);
        let secs = 10;
        for i in 0..(rate * secs / 8 / 1000 + 100) as u32 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        let end = SimTime(secs * 1_000_000_000);
        let out = drain(&mut h, &mut q, end);
        let avail = |t: u64| i128::from(burst) * 8_000_000_000 + i128::from(rate) * i128::from(t);
        assert_eq!(out.len(), (avail(end.0) / cost(charged)) as usize + 1);
        for (k, &t) in out.iter().enumerate() {
            let need = cost(charged) * k as i128;
            assert!(avail(t.0) >= need, "packet {k} left in debt");
            if t.0 > 0 {
                assert!(avail(t.0 - 1) < need, "packet {k} waited too long");
            }
        }
    }

    #[test]
    fn long_run_rate_is_exact_to_the_byte() {
        check_exact(htb(50_000_000), 1514);
        check_exact(
            HtbConfig {
                burst: Some(Bytes(20_000)),
                cburst: Some(Bytes(20_000)),
                ..htb(10_000_000)
            },
            1514,
        );
    }

    #[test]
    fn the_smaller_bucket_sets_the_burst() {
        // burst 50000 B but cburst 1600 B (default): the ceil bucket limits.
        let c = HtbConfig {
            burst: Some(Bytes(50_000)),
            ..htb(10_000_000)
        };
        check_exact(c, 1514);
    }

    /// A ceil above the rate with a shallow ceil bucket: after the burst
    /// the ceil bucket runs dry first, and once it is back at zero the rate
    /// bucket, still in debt, sets the wait. Packets leave at the rate,
    /// each as soon as both buckets allow it, never at a wake-up that
    /// finds nothing to send.
    #[test]
    fn with_ceil_above_rate_the_rate_bucket_sets_the_wait() {
        let cfg = HtbConfig {
            ceil: Some(Rate(2_000_000_000)),
            burst: Some(Bytes(15_140)),
            cburst: Some(Bytes(1600)),
            ..htb(1_000_000_000)
        };
        let mut h = Harness::new();
        let mut q = cfg.build(&mut h.rng);
        for i in 0..1000 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        assert_eq!((q.len(), q.bytes()), (1000, 1000 * 1514));
        let end = SimTime(5_000_000);
        let out = drain(&mut h, &mut q, end);
        let avail = |b: u64, r: u64, t: u64| i128::from(b) * 8_000_000_000 + i128::from(r) * i128::from(t);
        for (k, &t) in out.iter().enumerate() {
            let need = cost(1514) * k as i128;
            let ok = |t: u64| avail(15_140, 1_000_000_000, t) >= need && avail(1600, 2_000_000_000, t) >= need;
            assert!(ok(t.0), "packet {k} left in debt");
            assert!(t.0 == 0 || !ok(t.0 - 1), "packet {k} waited too long");
        }
        assert_eq!(out.len() as i128, avail(15_140, 1_000_000_000, end.0) / cost(1514) + 1);
    }

    #[test]
    fn long_run_rate_is_exact_with_stab_atm() {
        let stab = StabConfig {
            overhead: 10,
            mpu: 0,
            linklayer: LinkLayer::Atm,
        };
        check_exact(
            HtbConfig {
                stab: Some(stab),
                ..htb(5_000_000)
            },
            1696,
        );
        let stab = StabConfig {
            overhead: -14,
            mpu: 0,
            linklayer: LinkLayer::Ethernet,
        };
        check_exact(
            HtbConfig {
                stab: Some(stab),
                ..htb(5_000_000)
            },
            1500,
        );
    }

    #[test]
    fn a_burst_after_idle_is_bounded_by_the_bucket() {
        let mut h = Harness::new();
        let mut q = HtbConfig {
            burst: Some(Bytes(10_000)),
            cburst: Some(Bytes(10_000)),
            ..htb(10_000_000)
        }
        .build(&mut h.rng);
        for i in 0..40 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        let t = SimTime::ZERO + Dur::from_secs(30);
        let mut n = 0;
        while h.deq(&mut q, t).is_some() {
            n += 1;
        }
        // Levels 10000, 8486, ..., 916 are ≥ 0: 7 packets, then in debt.
        assert_eq!(n, 7);
    }

    #[test]
    fn change_keeps_the_queue_and_takes_the_new_rate() {
        let mut h = Harness::new();
        let mut q = htb(50_000_000).build(&mut h.rng);
        for i in 0..100 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        let mut cx = Cx {
            now: SimTime::ZERO,
            rng: &mut h.rng,
            stats: &mut h.stats,
        };
        q.change(&QdiscConfig::Htb(htb(5_000_000)), &mut cx)
            .unwrap();
        assert_eq!(q.len(), 100, "tc change keeps the queue");
        let out = drain(&mut h, &mut q, SimTime(1_000_000_000));
        // about 5 Mbit/s: 1 s carries 412 full packets at most; all 100 leave by 0.25 s
        let last = out.last().unwrap();
        let expect = Rate(5_000_000).tx_time(1514 * 99);
        assert!(
            last.0.abs_diff(expect.0) < 1_000_000,
            "{last:?} vs {expect:?}"
        );
    }
}
