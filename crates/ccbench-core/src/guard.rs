//! What stops a run that outgrows its limits while it goes: memory counted
//! as it grows, tables written to disk, and a clock that stops advancing.
//!
//! Memory is counted where it grows, not every so many events: each packet
//! arriving at a link (the only way packets multiply: endpoints emit,
//! netem duplicates on arrival), each sample row and each media frame
//! spends a byte budget by the most it can add; when the budget is spent
//! the simulator counts what it holds ([`crate::sim::Sim::memory_bytes`])
//! and grants a new budget of 1/16 of the room left (at least
//! [`MIN_BUDGET`]), so the limit holds within about that, whatever the
//! number of events. Counting the budget is an integer subtraction per
//! arrival; results do not depend on it.
//!
//! A stalled clock is a run whose events keep coming at one instant (a
//! round trip that takes no time is refused before running; this catches
//! what that check cannot see). Every legitimate event at one instant moves
//! a packet that exists or wakes a component, so their number is bounded
//! by what the memory limit lets the run hold: [`Guard::stall_events`].
//! And a run whose clock advances but whose events outrun the estimate (a
//! sender retransmitting into a full queue millions of times a second)
//! stops at `limits.events`, the bound the estimate is held to: no run
//! goes on without end.

use std::mem::size_of;

use crate::packet::Packet;

/// Bytes the run may grow by between two counts, at least (so that a run
/// close to its limit does not count on every arrival).
pub const MIN_BUDGET: u64 = 1 << 20;

/// Why a run stopped before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Over `limits.memory`.
    Memory(String),
    /// Over `limits.disk`.
    Disk(String),
    /// Over `limits.events`.
    Events(String),
    /// Simulated time stopped advancing.
    Stall(String),
}

impl Stop {
    /// The scenario key a stop is about.
    pub fn key(&self) -> &'static str {
        match self {
            Stop::Memory(_) => "limits.memory",
            Stop::Disk(_) => "limits.disk",
            Stop::Events(_) => "limits.events",
            Stop::Stall(_) => "",
        }
    }
    pub fn message(&self) -> &str {
        match self {
            Stop::Memory(m) | Stop::Disk(m) | Stop::Events(m) | Stop::Stall(m) => m,
        }
    }
}

pub struct Guard {
    /// Bytes the run may hold (`limits.memory`).
    pub memory_limit: u64,
    /// Bytes of tables the run may write (`limits.disk`), counted as handed
    /// to the writer, before compression.
    pub disk_limit: u64,
    /// Events the run may take (`limits.events`).
    pub events_limit: u64,
    /// Heap of the built links and flows before any packet (their queues'
    /// reserved room, per-flow state): see [`crate::scenario::limits::state_bytes`].
    pub static_bytes: u64,
    /// Bytes the run may still grow by before it is counted again.
    budget: i64,
    /// The most one packet's arrival at a link can add: the packet and a
    /// duplicate held, a TCP scoreboard entry, a sojourn and a capture row.
    pub arrival_bytes: i64,
    /// Simulated time at the last progress check, and the events since it
    /// stopped advancing.
    last_now: u64,
    same_instant: u64,
    /// Why the run stopped, once it has: the simulator takes no more
    /// packets and ends at the end of the current event.
    pub stop: Option<Stop>,
}

/// A queued packet as the largest queue holds it: the packet with a time
/// stamp and a sequence number (netem's delay line).
pub const PACKET_BYTES: u64 = size_of::<Packet>() as u64 + 16;

impl Default for Guard {
    fn default() -> Self {
        Guard {
            memory_limit: u64::MAX,
            disk_limit: u64::MAX,
            events_limit: u64::MAX,
            static_bytes: 0,
            budget: 0,
            arrival_bytes: 2 * PACKET_BYTES as i64 + 64 + 25,
            last_now: u64::MAX,
            same_instant: 0,
            stop: None,
        }
    }
}

impl Guard {
    /// Spend `bytes` of the budget; true when it is spent and the run must
    /// be counted ([`Guard::counted`]).
    #[inline(always)]
    pub fn spend(&mut self, bytes: i64) -> bool {
        self.budget -= bytes;
        self.budget < 0
    }

    /// The run holds `used` bytes at `now_s`: grant the next budget, or stop
    /// it if that is over the limit. False once the run is stopped.
    pub fn counted(&mut self, used: u64, now_s: f64) -> bool {
        if self.stop.is_some() {
            return false;
        }
        if used > self.memory_limit {
            self.stop = Some(Stop::Memory(format!(
                "stopped at {now_s:.3} s of simulated time: the run holds about {} MiB, more than the memory limit of {} MiB \
                 (limits.memory; recorded samples: lower metrics.sojourn_every / rtt_samples / capture or raise metrics.interval; \
                 packets in flight: give every link of a bulk TCP flow a rate, lower tcp.init_cwnd or the socket buffers)",
                used >> 20,
                self.memory_limit >> 20
            )));
            return false;
        }
        self.budget = ((self.memory_limit - used) / 16).max(MIN_BUDGET).min(i64::MAX as u64) as i64;
        true
    }

    /// `total` bytes of tables handed to the writer so far: false (and
    /// stopped) once they pass `limits.disk`.
    pub fn written(&mut self, total: u64, now_s: f64) -> bool {
        if total > self.disk_limit && self.stop.is_none() {
            self.stop = Some(Stop::Disk(format!(
                "stopped at {now_s:.3} s of simulated time: the run has written {} MiB of tables, more than the disk limit of {} MiB \
                 (limits.disk; raise metrics.interval or metrics.sojourn_every, set metrics.rtt_samples = false, capture fewer links, \
                 shorten `duration` or raise limits.disk)",
                total >> 20,
                self.disk_limit >> 20
            )));
        }
        self.stop.is_none()
    }

    /// Events at one instant beyond which the clock counts as stalled: eight
    /// per packet the memory limit could hold, at least 2^20.
    pub fn stall_events(&self) -> u64 {
        (self.memory_limit / PACKET_BYTES).saturating_mul(8).max(1 << 20)
    }

    /// `total` events and packet arrivals by `now_s`: false (and stopped)
    /// past `limits.events`.
    pub fn events(&mut self, total: u64, now_s: f64) -> bool {
        if total > self.events_limit && self.stop.is_none() {
            self.stop = Some(Stop::Events(format!(
                "stopped at {now_s:.3} s of simulated time: the run has taken {total} events and packet arrivals, more than \
                 limits.events = {} (more than estimated: a path without a rate, or a sender retransmitting into a full \
                 queue, can take far more); raise limits.events to let it finish",
                self.events_limit
            )));
        }
        self.stop.is_none()
    }

    /// Called every `events` events with the simulated time (ns): stops the
    /// run when the clock has not moved for more than [`stall_events`](Self::stall_events).
    pub fn progress(&mut self, now_ns: u64, events: u64) -> bool {
        if now_ns != self.last_now {
            self.last_now = now_ns;
            self.same_instant = 0;
            return true;
        }
        self.same_instant += events;
        if self.same_instant > self.stall_events() && self.stop.is_none() {
            self.stop = Some(Stop::Stall(format!(
                "simulated time stalled at {:.6} s: more than {} events without the clock advancing; a flow whose round trip \
                 takes no time (no link on its path and reverse with a rate, a delay or a delaying qdisc) sends without end \
                 at one instant: give a link a `rate` or a `delay`",
                now_ns as f64 / 1e9,
                self.same_instant
            )));
        }
        self.stop.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_a_sixteenth_of_the_room_left_and_stops_over_the_limit() {
        let mut g = Guard { memory_limit: 1 << 30, ..Default::default() };
        assert!(g.spend(1), "no budget before the first count");
        assert!(g.counted(0, 0.0));
        assert!(!g.spend(1 << 26) && g.spend(1), "1/16 of 1 GiB");
        assert!(g.counted((1 << 30) - 1, 0.0));
        assert!(!g.spend(MIN_BUDGET as i64) && g.spend(1), "never less than MIN_BUDGET");
        assert!(!g.counted((1 << 30) + 1, 2.5));
        let Some(Stop::Memory(m)) = &g.stop else { panic!("{:?}", g.stop) };
        assert!(m.starts_with("stopped at 2.500 s") && m.contains("1024 MiB, more than the memory limit of 1024 MiB"), "{m}");
        assert!(!g.counted(0, 3.0), "a stopped run stays stopped");
    }

    #[test]
    fn disk_stops_once_the_tables_pass_the_limit() {
        let mut g = Guard { disk_limit: 10 << 20, ..Default::default() };
        assert!(g.written(10 << 20, 1.0));
        assert!(!g.written((10 << 20) + 1, 1.5));
        assert_eq!(g.stop.as_ref().map(Stop::key), Some("limits.disk"));
    }

    #[test]
    fn events_stop_past_the_limit() {
        let mut g = Guard { events_limit: 1000, ..Default::default() };
        assert!(g.events(1000, 1.0) && !g.events(1001, 1.0));
        assert_eq!(g.stop.as_ref().map(Stop::key), Some("limits.events"));
        assert!(g.stop.as_ref().unwrap().message().contains("taken 1001 events and packet arrivals, more than limits.events = 1000"));
    }

    #[test]
    fn a_clock_that_stops_is_a_stall_only_past_the_bound() {
        let mut g = Guard { memory_limit: 64 << 20, ..Default::default() };
        let bound = g.stall_events();
        assert_eq!(bound, (64 << 20) / PACKET_BYTES * 8);
        assert!(g.progress(5, 0));
        assert!(g.progress(5, bound), "exactly the bound is allowed");
        assert!(g.progress(6, 1 << 40), "time moved: the count starts again");
        assert!(g.progress(6, bound));
        assert!(!g.progress(6, 1));
        let Some(Stop::Stall(m)) = &g.stop else { panic!("{:?}", g.stop) };
        assert!(m.starts_with("simulated time stalled at 0.000000 s"), "{m}");
        assert_eq!(Guard { memory_limit: 1 << 20, ..Default::default() }.stall_events(), 1 << 20);
    }
}
