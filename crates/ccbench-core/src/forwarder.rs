//! When packets leave a link's far end: at once (`exact`, the default), or
//! when a software forwarder's timer next fires (`emulator`).
//!
//! ccbench's live emulator (`ccbench-emu`, the path `ccbench compare` and
//! `ccbench emulate` run real TCP through) keeps its links on an exact
//! virtual clock, but a frame leaves only when its forwarding thread wakes
//! for it. That wake-up is late by a few tens of microseconds, and now and
//! then by milliseconds; whatever fell due meanwhile leaves with it, in one
//! burst. Real TCP sees that timing: its ACKs arrive in the same bursts.
//! `forwarder = "emulator"` gives a simulated link the same release process,
//! so that a comparison with the emulated run compares the TCP models and
//! not the two forwarders. The links that have it share one forwarder, as
//! the emulator's one thread serves both directions: when a packet falls
//! due and no wake-up is pending, one is drawn (independently per wake-up:
//! successive wake-ups' lateness correlates at 0.15-0.20 in the
//! measurement), and every packet due by then, on any of those links,
//! leaves at that instant, in the order they fell due.
//!
//! The lateness table is the emulator's own, measured on a 2-core VM
//! (Linux 6.18, real-time scheduling and CPU wake-up latency held at 0, as
//! `ccbench-emu` runs by default; `bench/forwarder_lateness.py` measures
//! it): the actual send time of each frame
//! (`--pcap`) against its virtual departure (`--pcap-link`), for the first
//! frame of each wake-up, both directions of one CUBIC and one BBR flow
//! through a 50 Mbit/s FIFO, 164 k wake-ups. Median 22 µs, mean 27 µs,
//! 0.5 % beyond 185 µs, 0.1 % beyond 0.9 ms, 0.01 % beyond 2.5 ms. That is
//! the forwarder under load (its spin budget spent: it sleeps on timers);
//! idle it is 2-3 µs late. Its lateness also varies from run to run with
//! the machine: the mean lateness the emulator reports (`forwarder.json`)
//! was 34-36 µs in the run measured here, 17-24 µs in the ten kernel runs
//! `tests/bbr.rs` compares with, and 12 µs in quieter runs the same day
//! (median 11 µs, 99.9th percentile 150 µs). The table is one noisy state
//! of one machine, not a constant of the emulator.

use serde::{Deserialize, Serialize};

use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Dur, SimTime};

/// A link's release timing (`[[links]] forwarder`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forwarder {
    /// Packets leave the moment their propagation delay has passed.
    #[default]
    Exact,
    /// On `ccbench-emu`'s measured wake-ups (module docs).
    Emulator,
}

/// `ccbench-emu`'s wake-up lateness: (percentile, µs), the inverse CDF
/// between the points taken as linear.
const EMULATOR: [(f64, f64); 20] = [
    (0.0, 0.0),
    (0.1, 0.3),
    (1.0, 2.1),
    (5.0, 10.0),
    (10.0, 16.0),
    (25.0, 17.3),
    (50.0, 22.2),
    (75.0, 27.5),
    (90.0, 35.2),
    (95.0, 45.2),
    (98.0, 64.8),
    (99.0, 89.2),
    (99.5, 184.6),
    (99.8, 509.7),
    (99.9, 890.0),
    (99.95, 1198.8),
    (99.98, 2040.4),
    (99.99, 2489.5),
    (99.995, 3895.1),
    (99.999, 11909.7),
];

impl Forwarder {
    pub fn is_exact(&self) -> bool {
        *self == Forwarder::Exact
    }

    /// How late the forwarder's next wake-up is.
    pub fn late(self, rng: &mut SimRng) -> Dur {
        match self {
            Forwarder::Exact => Dur::ZERO,
            Forwarder::Emulator => Dur::from_nanos((inverse_cdf(&EMULATOR, 100.0 * rng.uniform()) * 1e3) as u64),
        }
    }
}

/// The one forwarder of a run's `emulator` links: its random stream and the
/// packets due that wait for its next wake-up.
pub struct Release {
    kind: Forwarder,
    rng: SimRng,
    held: Vec<Packet>,
}

impl Release {
    pub fn new(kind: Forwarder, seed: u64) -> Release {
        Release { kind, rng: SimRng::for_component(seed, "forwarder"), held: Vec::new() }
    }

    /// Packet `p` fell due `now`: it waits for the pending wake-up, or, if
    /// none is pending, for a new one, whose time is returned.
    pub fn hold(&mut self, now: SimTime, p: Packet) -> Option<SimTime> {
        let wake = self.held.is_empty().then(|| now + self.kind.late(&mut self.rng));
        self.held.push(p);
        wake
    }

    /// The wake-up: every packet waiting, in the order they fell due (into
    /// `out`, emptied first; the two buffers swap so neither is reallocated).
    pub fn release(&mut self, out: &mut Vec<Packet>) {
        out.clear();
        std::mem::swap(&mut self.held, out);
    }

    /// Packets waiting for the wake-up.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Heap the waiting packets take (for the memory guard).
    pub fn held_bytes(&self) -> u64 {
        (self.held.capacity() * std::mem::size_of::<Packet>()) as u64
    }
}

/// The value at percentile `p` of a table of (percentile, value) points,
/// linear between them and flat beyond the last.
fn inverse_cdf(table: &[(f64, f64)], p: f64) -> f64 {
    let i = table.partition_point(|&(q, _)| q <= p);
    if i >= table.len() {
        return table[table.len() - 1].1;
    }
    let ((q0, v0), (q1, v1)) = (table[i - 1], table[i]);
    v0 + (v1 - v0) * (p - q0) / (q1 - q0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_is_never_late() {
        assert!(Forwarder::Exact.is_exact() && !Forwarder::Emulator.is_exact());
        let mut rng = SimRng::for_component(1, "x");
        assert!((0..1000).all(|_| Forwarder::Exact.late(&mut rng) == Dur::ZERO));
    }

    /// Packets that fall due before the pending wake-up leave with it; the
    /// first after it asks for a new one.
    #[test]
    fn a_wake_up_takes_every_packet_due_by_then() {
        let p = |flow: u32| Packet { flow: crate::packet::FlowId(flow), ..Packet::default() };
        let mut r = Release::new(Forwarder::Emulator, 7);
        let t = SimTime::ZERO + Dur::from_micros(100);
        let wake = r.hold(t, p(1)).expect("nothing was pending");
        assert!(wake >= t);
        assert_eq!(r.hold(t, p(2)), None);
        assert_eq!(r.held(), 2);
        assert!(r.held_bytes() >= 2 * std::mem::size_of::<Packet>() as u64);
        let mut out = vec![p(9)];
        r.release(&mut out);
        assert_eq!(out.iter().map(|p| p.flow.0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(r.held(), 0);
        assert!(r.hold(wake, p(3)).is_some());
    }

    #[test]
    fn the_inverse_cdf_is_linear_between_its_points_and_flat_beyond() {
        let t = [(0.0, 0.0), (50.0, 10.0), (90.0, 30.0)];
        assert_eq!(inverse_cdf(&t, 0.0), 0.0);
        assert_eq!(inverse_cdf(&t, 25.0), 5.0);
        assert_eq!(inverse_cdf(&t, 50.0), 10.0);
        assert_eq!(inverse_cdf(&t, 70.0), 20.0);
        assert_eq!(inverse_cdf(&t, 95.0), 30.0);
    }

    /// The drawn lateness has the measured distribution: median, mean and
    /// tail shares within sampling error, on several seeds.
    #[test]
    fn emulator_lateness_has_the_measured_distribution() {
        for seed in 1..=4 {
            let mut rng = SimRng::for_component(seed, "link:x:forwarder");
            let mut v: Vec<f64> = (0..400_000).map(|_| Forwarder::Emulator.late(&mut rng).as_secs_f64() * 1e6).collect();
            v.sort_by(f64::total_cmp);
            let share = |x: f64| v.iter().filter(|&&y| y > x).count() as f64 / v.len() as f64;
            let median = v[v.len() / 2];
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            assert!((21.5..23.0).contains(&median), "median {median}");
            assert!((25.5..29.5).contains(&mean), "mean {mean}");
            assert!((0.0045..0.0055).contains(&share(184.6)), "beyond 185 us: {}", share(184.6));
            assert!((0.0008..0.0012).contains(&share(890.0)), "beyond 0.9 ms: {}", share(890.0));
            assert!(share(11909.7) == 0.0);
        }
    }
}
