//! A request-grant upstream (a DOCSIS cable modem's MAC, simplified): the
//! link may send only what the head-end granted, and grants answer requests
//! made one request-grant delay earlier. It wraps the link's qdisc, so the
//! AQM (DualPI2 in the modem) sees packets wait for their grant.
//!
//! Model (not a DOCSIS implementation; DOCSIS 3.1 MULPI's MAP/REQ cycle
//! reduced to its timing):
//! - MAP boundaries at t = k·`interval` (k ≥ 1; DOCSIS MAPs are typically
//!   1–2 ms).
//! - At each boundary the modem requests the queued bytes not yet covered by
//!   an outstanding request or by the grant of this MAP.
//! - The grant for the request of boundary k is issued at boundary
//!   k + `request_delay`/`interval` (at least one interval later): min(the
//!   request, `rate`·`interval`) bytes. Bytes requested but not granted are
//!   requested again at the next boundary.
//! - During a MAP the link dequeues while it has credit, at its own rate
//!   (the channel's burst rate); a packet larger than the remaining credit
//!   still goes (DOCSIS would fragment it) and the debt is repaid from the
//!   next grant, so the long-run rate is `rate`. Unused credit expires at the
//!   next boundary.
//!
//! Lazy timing (as DualPI2's PI timer): every enqueue and dequeue first
//! processes the boundaries due at or before `now`; the queue cannot change
//! between two calls, so each boundary sees the backlog it would have seen.
//! While packets wait, [`Qdisc::next_wakeup`] asks the link to come back at
//! the next boundary.
//!
//! Omitted: contention request slots and collisions, piggybacked requests,
//! unsolicited grants, the CMTS scheduler sharing grants among modems,
//! PHY/MAC overhead (set the link rate and `rate` with it in mind).
//!
//! Units: time in ns, sizes and credit in bytes.

use serde::{Deserialize, Serialize};

use super::{AnyQdisc, Cx, Qdisc, QdiscProbe};
use crate::packet::Packet;
use crate::units::{Dur, Rate, SimTime};

/// Most MAP intervals a request may wait for its grant.
pub const MAX_DELAY_SLOTS: usize = 16;

/// `links[].grant`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantConfig {
    /// MAP interval (grant cycle).
    #[serde(default = "default_interval")]
    pub interval: Dur,
    /// Request-grant delay, a whole number of intervals ≥ 1.
    #[serde(default = "default_request_delay")]
    pub request_delay: Dur,
    /// Granted rate (the service's maximum sustained rate); the link's own
    /// `rate` is the burst rate within a grant.
    pub rate: Rate,
}

fn default_interval() -> Dur {
    Dur::from_millis(2)
}
fn default_request_delay() -> Dur {
    Dur::from_millis(4)
}

impl GrantConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval < Dur::from_micros(100) || self.interval > Dur::from_millis(100) {
            return Err(format!(
                "interval must be 100us..100ms, got {:?}",
                self.interval
            ));
        }
        let slots = self.request_delay.0 / self.interval.0;
        if self.request_delay.0 % self.interval.0 != 0
            || !(1..=MAX_DELAY_SLOTS as u64).contains(&slots)
        {
            return Err(format!(
                "request_delay must be 1..={MAX_DELAY_SLOTS} whole intervals"
            ));
        }
        if self.rate == Rate(0) {
            return Err("rate must be greater than 0".into());
        }
        Ok(())
    }

    pub fn wrap(&self, inner: AnyQdisc) -> Granted {
        let max_grant =
            (self.rate.bps() as u128 * u128::from(self.interval.0) / 8 / 1_000_000_000) as i64;
        Granted {
            inner,
            interval: self.interval,
            slots: (self.request_delay.0 / self.interval.0) as usize,
            max_grant: max_grant.max(1),
            requests: [0; MAX_DELAY_SLOTS + 1],
            outstanding: 0,
            credit: 0,
            k: 1,
        }
    }
}

/// The gate around a link's qdisc.
pub struct Granted {
    inner: AnyQdisc,
    interval: Dur,
    /// Request-grant delay in intervals.
    slots: usize,
    max_grant: i64,
    /// Bytes requested at boundary k, indexed k mod (MAX + 1).
    requests: [u64; MAX_DELAY_SLOTS + 1],
    /// Sum of requests not yet answered.
    outstanding: u64,
    /// Bytes the current MAP still allows (negative: debt).
    credit: i64,
    /// Index of the next boundary to process.
    k: u64,
}

impl Granted {
    fn boundary(&self, k: u64) -> SimTime {
        SimTime(k * self.interval.0)
    }

    /// Process every MAP boundary at or before `now`.
    fn catch_up(&mut self, now: SimTime) {
        let ring = self.requests.len() as u64;
        while self.boundary(self.k) <= now {
            if self.inner.is_empty() && self.outstanding == 0 {
                // Idle: nothing to request or grant; jump to the boundary after now.
                self.k = now.0 / self.interval.0 + 1;
                self.credit = self.credit.min(0); // unused credit expires, debt stays
                return;
            }
            let k = self.k;
            // The grant for the request of boundary k − slots.
            let mut granted = 0;
            if k > self.slots as u64 {
                let ix = ((k - self.slots as u64) % ring) as usize;
                let req = std::mem::take(&mut self.requests[ix]);
                self.outstanding -= req;
                granted = (req as i64).min(self.max_grant);
            }
            self.credit = self.credit.min(0) + granted;
            // The request of boundary k: what is queued beyond the outstanding
            // requests and this MAP's credit.
            let covered = self.outstanding + self.credit.max(0) as u64;
            let req = self.inner.bytes().saturating_sub(covered);
            self.requests[(k % ring) as usize] = req;
            self.outstanding += req;
            self.k += 1;
        }
    }

    /// Credit of the current MAP (tests).
    pub fn credit(&self) -> i64 {
        self.credit
    }

    /// The wrapped qdisc.
    pub fn inner(&self) -> &AnyQdisc {
        &self.inner
    }

    /// `tc qdisc replace` behind the gate: a fresh qdisc, the grant state kept.
    pub fn replace_inner(&mut self, q: AnyQdisc) {
        self.inner = q;
    }
}

impl Qdisc for Granted {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        self.inner.enqueue(pkt, cx);
    }

    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        if self.credit <= 0 {
            return None;
        }
        let pkt = self.inner.dequeue(cx)?;
        self.credit -= i64::from(pkt.size);
        Some(pkt)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn bytes(&self) -> u64 {
        self.inner.bytes()
    }

    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        self.inner.probe(now)
    }

    fn change(&mut self, cfg: &super::QdiscConfig, cx: &mut Cx) -> Result<(), String> {
        self.inner.change(cfg, cx)
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        let inner = self.inner.next_wakeup();
        if self.inner.is_empty() {
            return inner;
        }
        // The inner qdisc's own release time, or the next MAP, whichever is later.
        let next_map = self.boundary(self.k);
        Some(inner.map_or(next_map, |t| t.max(next_map)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::fifo::PfifoConfig;
    use crate::qdisc::testing::{pkt, Harness};

    fn put(h: &mut Harness, q: &mut Granted, now: SimTime, n: usize, size: u32) {
        for _ in 0..n {
            h.enq(
                q,
                now,
                Packet {
                    size,
                    ..pkt(0, Ecn::Ect1)
                },
            );
        }
    }

    fn gate(rate_mbit: u64, delay_ms: u64) -> Granted {
        let cfg = GrantConfig {
            interval: Dur::from_millis(2),
            request_delay: Dur::from_millis(delay_ms),
            rate: Rate(rate_mbit * 1_000_000),
        };
        cfg.validate().unwrap();
        cfg.wrap(AnyQdisc::Fifo(PfifoConfig::default().build()))
    }

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// Drain what the gate lets out at `now` (an infinitely fast link).
    fn drain(h: &mut Harness, q: &mut Granted, now: SimTime) -> usize {
        let mut n = 0;
        while h.deq(q, now).is_some() {
            n += 1;
        }
        n
    }

    #[test]
    fn packets_wait_for_the_grant_of_their_request() {
        // 10 Mbit/s, 2 ms MAPs (2500 B per grant), request-grant delay 4 ms.
        let (mut h, mut q) = (Harness::new(), gate(10, 4));
        put(&mut h, &mut q, ms(1), 1, 1000); // 1000 B at 1 ms
                                             // Requested at the 2 ms boundary, granted at 6 ms.
        assert_eq!(drain(&mut h, &mut q, ms(1)), 0);
        assert_eq!(q.next_wakeup(), Some(ms(2)));
        assert_eq!(drain(&mut h, &mut q, ms(2)), 0);
        assert_eq!(q.next_wakeup(), Some(ms(4)));
        assert_eq!(drain(&mut h, &mut q, ms(5)), 0);
        assert_eq!(drain(&mut h, &mut q, ms(6)), 1);
        assert!(q.is_empty() && q.next_wakeup().is_none());
        // The 6 ms grant covered it: no second request, so a packet arriving
        // at 7 ms waits for its own request (8 ms) and grant (12 ms).
        put(&mut h, &mut q, ms(7), 1, 1000);
        assert_eq!(drain(&mut h, &mut q, ms(10)), 0);
        assert_eq!(drain(&mut h, &mut q, ms(11)), 0);
        assert_eq!(drain(&mut h, &mut q, ms(12)), 1);
    }

    #[test]
    fn a_backlog_leaves_at_the_granted_rate_in_bursts_of_one_map() {
        let (mut h, mut q) = (Harness::new(), gate(10, 2));
        // 40 packets of 1250 B at t = 0: 50 kB, 20 ms at 10 Mbit/s.
        put(&mut h, &mut q, SimTime::ZERO, 40, 1250);
        let mut per_map = Vec::new();
        for k in 1..=14 {
            per_map.push(drain(&mut h, &mut q, ms(2 * k)));
        }
        // Request at 2 ms (all 50 kB), first grant at 4 ms: 2500 B = 2
        // packets per MAP, the rest re-requested each MAP.
        assert_eq!(per_map[0], 0);
        assert!(per_map[1..].iter().all(|&n| n == 2), "{per_map:?}");
        // A packet larger than the remaining credit goes, then the debt is repaid.
        let (mut h, mut q) = (Harness::new(), gate(10, 2));
        put(&mut h, &mut q, SimTime::ZERO, 20, 1500);
        let sent: usize = (1..=31).map(|k| drain(&mut h, &mut q, ms(2 * k))).sum();
        // 58 ms of grants (4..=62 ms, 29 MAPs × 2500 B) cover 72.5 kB: 20 × 1500 B = 30 kB all sent
        assert_eq!(sent, 20);
        let (mut h, mut q) = (Harness::new(), gate(10, 2));
        put(&mut h, &mut q, SimTime::ZERO, 20, 1500);
        let sent: usize = (1..=7).map(|k| drain(&mut h, &mut q, ms(2 * k))).sum();
        // Grants at 4..=14 ms: 6 × 2500 B = 15 kB ⇒ 10 packets of 1500 B.
        assert_eq!(sent, 10);
    }

    #[test]
    fn validate_names_the_problem() {
        let c = GrantConfig {
            interval: Dur::from_millis(2),
            request_delay: Dur::from_millis(3),
            rate: Rate(1),
        };
        assert!(c.validate().unwrap_err().contains("whole intervals"));
        let c = GrantConfig {
            rate: Rate(0),
            request_delay: Dur::from_millis(2),
            ..c
        };
        assert!(c.validate().unwrap_err().contains("rate"));
    }

    /// `tc qdisc replace` behind a grant gate: the queue is discarded and
    /// counted, the gate stays with the new qdisc behind it.
    #[test]
    fn replace_keeps_the_gate_and_counts_the_discarded_queue() {
        let mut h = Harness::new();
        let mut g = gate(10, 4);
        put(&mut h, &mut g, ms(0), 5, 1000);
        let mut q = AnyQdisc::Granted(Box::new(g));
        let codel = crate::qdisc::QdiscConfig::Codel(Default::default());
        q.replace(&codel, &mut h.rng, &mut h.stats);
        assert_eq!((h.stats.drops_loss, h.stats.drop_bytes), (5, 5000));
        let AnyQdisc::Granted(g) = &q else { panic!("the grant gate was dropped") };
        assert!(matches!(g.inner(), AnyQdisc::Codel(_)) && q.is_empty());
        // Replacing a plain qdisc swaps it.
        let mut plain = AnyQdisc::Fifo(PfifoConfig::default().build());
        plain.replace(&codel, &mut h.rng, &mut h.stats);
        assert!(matches!(plain, AnyQdisc::Codel(_)));
    }
}
