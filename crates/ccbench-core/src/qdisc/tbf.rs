//! TBF, the token bucket filter (Linux `net/sched/sch_tbf.c` `tbf_enqueue`,
//! `tbf_dequeue`, `tbf_change`; iproute2 `tc/q_tbf.c` for the options).
//!
//! A packet leaves when the rate bucket (depth `burst`) and, with
//! `peakrate`, the peak bucket (depth `mtu`) both hold its transmission
//! time; otherwise the qdisc sleeps until they will (the qdisc watchdog,
//! here [`Qdisc::next_wakeup`]). Tokens are time, as in Linux, held exactly
//! (see `blocks::token_bucket`). Packets wait in a child qdisc, by default a
//! bfifo of `limit` bytes as `tbf` creates it; `latency` is converted to
//! `limit` as tc does: `limit = rate·latency + burst` (and with a peak rate
//! the smaller of that and `peakrate·latency + mtu`).
//!
//! Units: rates in bit/s, sizes in bytes, time in ns. A packet's charged
//! length is its frame length adjusted by `stab` (overhead, mpu, ATM/PTM
//! cells); a packet charged more than `burst` (or `mtu` with a peak rate) is
//! dropped, as Linux drops non-GSO packets above `max_size`.
//! Deviations: no GSO segmentation; the stab adjustment changes only the
//! charged length, not the byte counts the child sees; `tc qdisc change`
//! refills both buckets, as `tbf_change` does.

use serde::{Deserialize, Serialize};

use super::blocks::child::Child;
use super::blocks::overhead::Overhead;
use super::blocks::stab::StabConfig;
use super::blocks::token_bucket::{cost, TimeBucket};
use super::fifo::BfifoConfig;
use super::{Cx, DropReason, Qdisc, QdiscConfig};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Bytes, Dur, Rate, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    /// Token rate (tc `rate`).
    pub rate: Rate,
    /// Bucket depth in bytes (tc `burst`/`buffer`/`maxburst`).
    pub burst: Bytes,
    /// Bytes the default bfifo child holds (tc `limit`); give this or `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Bytes>,
    /// Longest a packet may wait (tc `latency`), converted to `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Dur>,
    /// Second, short bucket's rate (tc `peakrate`); needs `mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peakrate: Option<Rate>,
    /// Peak bucket depth in bytes (tc `mtu`/`minburst`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stab: Option<StabConfig>,
    /// The qdisc holding the queue (default: bfifo of `limit` bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<QdiscConfig>>,
}

impl TbfConfig {
    /// tc's `limit`, from `limit` or from `latency` (`tc/q_tbf.c`).
    pub fn limit_bytes(&self) -> u64 {
        if let Some(l) = self.limit {
            return l.0;
        }
        let lat = self.latency.unwrap_or(Dur::ZERO).as_secs_f64();
        let mut lim = self.rate.bps() as f64 / 8.0 * lat + self.burst.0 as f64;
        if let (Some(p), Some(m)) = (self.peakrate, self.mtu) {
            lim = lim.min(p.bps() as f64 / 8.0 * lat + m.0 as f64);
        }
        lim as u64
    }

    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.rate.is_unlimited() {
            errs.push("rate: must be greater than 0".to_string());
        }
        if self.burst.0 == 0 || self.burst.0 > u64::from(u32::MAX) {
            errs.push(format!(
                "burst: must be 1..4294967295 bytes, got {}",
                self.burst.0
            ));
        }
        match (self.limit, self.latency) {
            (None, None) => errs.push("tbf needs `limit` (bytes) or `latency` (as tc does)".into()),
            (Some(_), Some(_)) => errs.push("give either `limit` or `latency`, not both".into()),
            _ => {}
        }
        match (self.peakrate, self.mtu) {
            (Some(p), Some(m)) => {
                if p.bps() <= self.rate.bps() {
                    errs.push("peakrate: must be greater than `rate`".into());
                }
                if m.0 == 0 {
                    errs.push("mtu: must be greater than 0".into());
                }
            }
            (Some(_), None) => {
                errs.push("peakrate: needs `mtu` (the peak bucket's depth in bytes)".into())
            }
            (None, Some(_)) => errs.push("mtu: applies only with `peakrate`".into()),
            (None, None) => {}
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
        match &self.child {
            Some(c) => (**c).clone(),
            None => QdiscConfig::Bfifo(BfifoConfig {
                limit: Bytes(self.limit_bytes()),
            }),
        }
    }

    /// Largest charged length that can ever pass (Linux `max_size`).
    fn max_size(&self) -> u64 {
        let mut m = self.burst.0;
        if let Some(mtu) = self.mtu.filter(|_| self.peakrate.is_some()) {
            m = m.min(mtu.0);
        }
        m
    }

    pub fn build(&self, rng: &mut SimRng) -> Tbf {
        Tbf {
            rate: TimeBucket::new(self.rate, self.burst.0, SimTime::ZERO),
            peak: self
                .peakrate
                .map(|p| TimeBucket::new(p, self.mtu.map_or(0, |m| m.0), SimTime::ZERO)),
            max_size: self.max_size(),
            overhead: self.stab.map(|s| s.overhead()).unwrap_or_default(),
            child: Child::new(&self.child_config(), rng),
            default_child: self.child.is_none(),
            wake: None,
        }
    }
}

pub struct Tbf {
    rate: TimeBucket,
    peak: Option<TimeBucket>,
    max_size: u64,
    overhead: Overhead,
    child: Child,
    /// The child is the default bfifo (its limit follows `limit`).
    default_child: bool,
    wake: Option<SimTime>,
}

impl Tbf {
    /// The qdisc holding the queue.
    pub fn child(&self) -> &Child {
        &self.child
    }
    /// The length the buckets are charged for a packet.
    pub fn charged(&self, p: &Packet) -> u32 {
        self.overhead.charge(p.size)
    }
}

impl Qdisc for Tbf {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        // tbf_enqueue: a packet longer than max_size can never get enough tokens.
        if u64::from(self.charged(&pkt)) > self.max_size {
            cx.drop(pkt, DropReason::Overlimit);
            return;
        }
        self.child.enqueue(pkt, cx);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.wake = None;
        let now = cx.now;
        let size = self.child.peek(cx)?.size;
        let len = u64::from(self.overhead.charge(size));
        //= sch_tbf.c tbf_dequeue: toks = min(now - t_c, buffer) + tokens,
        //# capped at buffer, minus the packet's time; send iff toks and ptoks >= 0.
        let toks = self.rate.level(now) - cost(len);
        let ptoks = self.peak.as_ref().map_or(0, |p| p.level(now) - cost(len));
        if toks >= 0 && ptoks >= 0 {
            self.rate.set(now, toks);
            if let Some(p) = &mut self.peak {
                p.set(now, ptoks);
            }
            return self.child.dequeue(cx);
        }
        let mut wait = self.rate.time_to_zero(toks);
        if let Some(p) = &self.peak {
            wait = wait.max(p.time_to_zero(ptoks));
        }
        self.wake = Some(now + wait);
        None
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
        let QdiscConfig::Tbf(c) = cfg else {
            return Err("`change` cannot switch the qdisc kind (use `qdisc = {...}`)".into());
        };
        self.rate.reconfigure(c.rate, c.burst.0);
        self.rate.fill();
        self.peak = c
            .peakrate
            .map(|p| TimeBucket::new(p, c.mtu.map_or(0, |m| m.0), cx.now));
        self.rate.set(cx.now, self.rate.level(cx.now));
        self.max_size = c.max_size();
        self.overhead = c.stab.map(|s| s.overhead()).unwrap_or_default();
        match (&c.child, self.default_child) {
            // fifo_set_limit on the default bfifo.
            (None, true) => self.child.change(&c.child_config(), cx),
            (Some(ch), false) => self.child.change(ch, cx),
            _ => Err("`change` cannot add or remove tbf's child (use `qdisc = {...}`)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fifo::PfifoConfig;
    use crate::qdisc::blocks::overhead::LinkLayer;
    use crate::qdisc::testing::{check_rules, pkt, Harness};

    fn tbf(rate: u64, burst: u64) -> TbfConfig {
        TbfConfig {
            rate: Rate(rate),
            burst: Bytes(burst),
            limit: Some(Bytes(1 << 40)),
            latency: None,
            peakrate: None,
            mtu: None,
            stab: None,
            child: None,
        }
    }

    /// Dequeue everything, polling at the qdisc's wake-ups, until `end`.
    /// Returns (departure time, packet size).
    fn drain(h: &mut Harness, q: &mut Tbf, end: SimTime) -> Vec<(SimTime, u32)> {
        let mut out = Vec::new();
        let mut now = SimTime::ZERO;
        while now <= end {
            match h.deq(q, now) {
                Some(p) => out.push((now, p.size)),
                None => match q.next_wakeup() {
                    Some(t) => {
                        assert!(t > now, "a wake-up must lie in the future");
                        now = t
                    }
                    None => break,
                },
            }
        }
        out.retain(|&(t, _)| t <= end);
        out
    }

    /// The long-run rate is exact to the byte: by time T exactly
    /// floor((burst + rate·T/8) / charged) packets have left, and each left
    /// at the first nanosecond its tokens were there.
    fn check_exact(stab: Option<StabConfig>, charged: u64) {
        let (rate, burst) = (10_000_000u64, 10_000u64);
        let cfg = TbfConfig {
            stab,
            ..tbf(rate, burst)
        };
        let mut h = Harness::new();
        let mut q = cfg.build(&mut h.rng);
        let secs = 10u64;
        let n = (rate * secs / 8 / 1514 + 100) as u32;
        for i in 0..n {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        let end = SimTime(secs * 1_000_000_000);
        let out = drain(&mut h, &mut q, end);
        // Bucket identity in 1e-9 bit units: k packets need burst + rate·t ≥ k·charged.
        let avail = |t: u64| i128::from(burst) * 8_000_000_000 + i128::from(rate) * i128::from(t);
        let expect = (avail(end.0) / cost(charged)) as usize;
        assert_eq!(out.len(), expect, "packets out by {secs} s");
        for (k, &(t, _)) in out.iter().enumerate() {
            let need = cost(charged) * (k as i128 + 1);
            assert!(avail(t.0) >= need, "packet {k} left before its tokens");
            if t.0 > 0 {
                assert!(
                    avail(t.0 - 1) < need,
                    "packet {k} waited longer than needed"
                );
            }
        }
    }

    #[test]
    fn long_run_rate_is_exact_to_the_byte() {
        check_exact(None, 1514);
    }

    #[test]
    fn long_run_rate_is_exact_with_stab_overhead_and_atm_cells() {
        // overhead 10 + 1514 = 1524 B -> 32 cells of 53 B = 1696 B charged.
        let stab = StabConfig {
            overhead: 10,
            mpu: 0,
            linklayer: LinkLayer::Atm,
        };
        assert_eq!(stab.overhead().charge(1514), 1696);
        check_exact(Some(stab), 1696);
        check_exact(
            Some(StabConfig {
                overhead: 24,
                mpu: 0,
                linklayer: LinkLayer::Ethernet,
            }),
            1538,
        );
    }

    #[test]
    fn a_burst_after_idle_is_bounded_by_the_bucket() {
        let mut h = Harness::new();
        let mut q = tbf(10_000_000, 10_000).build(&mut h.rng);
        for i in 0..20 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        // At t = 0 the bucket is full: floor(10000/1514) = 6 packets go at once.
        let mut n = 0;
        while h.deq(&mut q, SimTime::ZERO).is_some() {
            n += 1;
        }
        assert_eq!(n, 6);
        // After a long idle the bucket refills only to `burst`, never more.
        let t = SimTime::ZERO + Dur::from_secs(5);
        let mut n = 0;
        while h.deq(&mut q, t).is_some() {
            n += 1;
        }
        assert_eq!(n, 6);
    }

    #[test]
    fn packets_larger_than_the_bucket_are_dropped() {
        let mut h = Harness::new();
        let stab = StabConfig {
            overhead: 0,
            mpu: 0,
            linklayer: LinkLayer::Atm,
        };
        let mut q = TbfConfig {
            stab: Some(stab),
            ..tbf(10_000_000, 1600)
        }
        .build(&mut h.rng);
        h.enq(&mut q, SimTime::ZERO, pkt(0, Ecn::NotEct)); // 1696 B charged > 1600
        assert_eq!(q.len(), 0);
        assert_eq!(h.stats.drops_overlimit, 1);
    }

    #[test]
    fn latency_becomes_a_byte_limit_as_tc_computes_it() {
        // tc: limit = rate[B/s]·latency + burst = 1.25e6 · 0.05 + 5000.
        let c = TbfConfig {
            limit: None,
            latency: Some(Dur::from_millis(50)),
            ..tbf(10_000_000, 5000)
        };
        assert_eq!(c.limit_bytes(), 67_500);
        let mut h = Harness::new();
        let mut q = c.build(&mut h.rng);
        for i in 0..60 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        assert_eq!(
            q.len(),
            67_500 / 1514,
            "default child: bfifo of `limit` bytes"
        );
        // With a peak rate the smaller limit wins: 2.5e6·0.05 + 1514 = 126514 > 67500.
        let c = TbfConfig {
            peakrate: Some(Rate(20_000_000)),
            mtu: Some(Bytes(1514)),
            ..c
        };
        assert_eq!(c.limit_bytes(), 67_500);
        // A deep bucket and a peak rate near the rate: the peak's limit wins,
        // 1.5e6·0.05 + 1514 = 76514 < 1.25e6·0.05 + 50000 = 112500.
        let c = TbfConfig { burst: Bytes(50_000), peakrate: Some(Rate(12_000_000)), ..c };
        assert_eq!(c.limit_bytes(), 76_514);
    }

    #[test]
    fn peakrate_spaces_packets_at_the_peak_rate() {
        let c = TbfConfig {
            peakrate: Some(Rate(20_000_000)),
            mtu: Some(Bytes(1514)),
            ..tbf(10_000_000, 100_000)
        };
        let mut h = Harness::new();
        let mut q = c.build(&mut h.rng);
        for i in 0..10 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        let out = drain(&mut h, &mut q, SimTime(1_000_000_000));
        assert_eq!(out.len(), 10);
        let gap = Rate(20_000_000).tx_time(1514);
        for w in out.windows(2) {
            let d = w[1].0.since(w[0].0);
            assert!(d.0.abs_diff(gap.0) <= 1, "gap {d:?} vs {gap:?}");
        }
    }

    #[test]
    fn validate_names_the_key() {
        let c = TbfConfig {
            limit: None,
            ..tbf(0, 0)
        };
        let e = c.validate().unwrap_err();
        assert!(
            e.contains("rate") && e.contains("burst") && e.contains("latency"),
            "{e}"
        );
        let c = TbfConfig {
            peakrate: Some(Rate(1)),
            ..tbf(10, 10)
        };
        assert!(c.validate().unwrap_err().contains("mtu"));
        // Each rule beside its valid neighbour.
        let max = u64::from(u32::MAX);
        let peak = |mtu| TbfConfig { peakrate: Some(Rate(20)), mtu: Some(Bytes(mtu)), ..tbf(10, 10) };
        check_rules(
            [
                (tbf(10, max), None),
                (tbf(10, max + 1), Some("burst")),
                (peak(1), None),
                (peak(0), Some("mtu")),
                (TbfConfig { peakrate: Some(Rate(10)), ..peak(1) }, Some("peakrate")),
                (TbfConfig { mtu: Some(Bytes(1)), ..tbf(10, 10) }, Some("mtu")),
                (TbfConfig { latency: Some(Dur::from_millis(1)), ..tbf(10, 10) }, Some("give either")),
            ],
            |c| c.validate(),
        );
    }

    /// `tbf_change`: new rate and depth, both buckets full again, the queue
    /// kept; the kind and the presence of a child cannot change.
    #[test]
    fn change_refills_the_bucket_keeps_the_queue_and_takes_the_new_rate() {
        let mut h = Harness::new();
        let mut q = tbf(50_000_000, 3028).build(&mut h.rng);
        for i in 0..100 {
            h.enq(&mut q, SimTime::ZERO, pkt(i, Ecn::NotEct));
        }
        assert_eq!(q.bytes(), 100 * 1514);
        // The bucket holds two packets.
        assert!(h.deq(&mut q, SimTime::ZERO).is_some() && h.deq(&mut q, SimTime::ZERO).is_some());
        assert!(h.deq(&mut q, SimTime::ZERO).is_none());
        let mut cx = Cx { now: SimTime::ZERO, rng: &mut h.rng, stats: &mut h.stats };
        q.change(&QdiscConfig::Tbf(tbf(5_000_000, 3028)), &mut cx).unwrap();
        assert_eq!(q.len(), 98, "tc change keeps the queue");
        let out = drain(&mut h, &mut q, SimTime(10_000_000));
        let gap = Rate(5_000_000).tx_time(1514).0;
        assert_eq!((out[0].0, out[1].0), (SimTime::ZERO, SimTime::ZERO), "refilled");
        for (k, w) in out.windows(2).enumerate().skip(1) {
            assert!(w[1].0 .0 - w[0].0 .0 == gap || w[1].0 .0 - w[0].0 .0 == gap + 1, "gap {k}: {w:?}");
        }
        let mut cx = Cx { now: SimTime::ZERO, rng: &mut h.rng, stats: &mut h.stats };
        let e = q.change(&QdiscConfig::Pfifo(PfifoConfig::default()), &mut cx).unwrap_err();
        assert!(e.contains("kind"), "{e}");
        let child = TbfConfig { child: Some(Box::new(QdiscConfig::Pfifo(PfifoConfig::default()))), ..tbf(5_000_000, 3028) };
        assert!(q.change(&QdiscConfig::Tbf(child), &mut cx).unwrap_err().contains("child"));
    }
}
