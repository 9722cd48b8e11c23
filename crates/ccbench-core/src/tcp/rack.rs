//! RACK loss detection state and reordering adaptation, as Linux 6.x keeps
//! them (net/ipv4/tcp_recovery.c, RFC 8985; reordering detection from
//! net/ipv4/tcp_input.c `tcp_check_sack_reordering`).
//!
//! - `tcp_rack_advance`: the most recently sent delivered segment sets
//!   RACK.xmit_time and RACK.rtt; a delivered retransmission whose RTT is
//!   below min_rtt is ambiguous (the original may have been delivered) and
//!   is skipped.
//! - `tcp_rack_reo_wnd`: until reordering has been seen (`reord_seen`) the
//!   window is 0 in Recovery/Loss and once `sacked_out ≥ reordering` (so
//!   RACK behaves like DupThresh); otherwise min_rtt/4 × `reo_wnd_steps`,
//!   capped at srtt.
//! - `tcp_rack_update_reo_wnd`: a D-SACK raises `reo_wnd_steps` by one (at
//!   most once per round trip of delivered data) and makes it persist for
//!   16 recoveries (`TCP_RACK_RECOVERY_THRESH`); with no persistence left
//!   the steps fall back to 1.
//! - `tcp_check_sack_reordering`: a never-retransmitted segment delivered
//!   below the highest SACKed sequence is reordering: `reord_seen` counts
//!   it and `reordering` grows to its distance (≤ `tcp_max_reordering`
//!   300).
//!
//! Units: segments for sequence distances, ns for time.
//! Deviation: Linux measures distances in bytes of MSS-sized segments; here
//! sequence numbers count segments, which is the same for full segments.

use crate::units::{Dur, SimTime};

/// Linux `tcp_reordering` default (initial `tp->reordering`).
pub const REORDERING_INIT: u32 = 3;
/// Linux `tcp_max_reordering` default.
pub const MAX_REORDERING: u32 = 300;
/// `TCP_RACK_RECOVERY_THRESH`: recoveries a raised window persists for.
pub const RECOVERY_THRESH: u32 = 16;
/// `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000) added to the reordering timer.
pub const TIMEOUT_MIN: Dur = Dur::from_millis(2);

#[derive(Clone, Debug)]
pub struct Rack {
    /// RACK.xmit_time and RACK.rtt (`rack.mstamp`, `rack.rtt_us`).
    pub xmit: SimTime,
    pub end_seq: u64,
    pub rtt: Dur,
    /// A delivery moved RACK since the last loss scan (`rack.advanced`).
    pub advanced: bool,
    /// `rack.reo_wnd_steps`, `rack.reo_wnd_persist`, `rack.dsack_seen`,
    /// `rack.last_delivered`.
    pub reo_wnd_steps: u32,
    pub reo_wnd_persist: u32,
    pub dsack_seen: bool,
    pub last_delivered: u64,
    /// `tp->reord_seen`: reordering events observed.
    pub reord_seen: u32,
    /// `tp->reordering`: the reordering degree, segments.
    pub reordering: u32,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit: SimTime::ZERO,
            end_seq: 0,
            rtt: Dur::ZERO,
            advanced: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
            reord_seen: 0,
            reordering: REORDERING_INIT,
        }
    }
}

impl Rack {
    /// `tcp_rack_advance` for one newly delivered segment. Returns false
    /// for an ambiguous retransmission (ignored).
    #[inline]
    pub fn advance(
        &mut self,
        seq: u64,
        sent_at: SimTime,
        ever_retrans: bool,
        now: SimTime,
        min_rtt: Dur,
    ) -> bool {
        let rtt = now.since(sent_at);
        if ever_retrans && rtt < min_rtt {
            return false;
        }
        self.advanced = true;
        if self.sent_after(sent_at, seq + 1) {
            self.xmit = sent_at;
            self.end_seq = seq + 1;
            self.rtt = rtt;
        }
        true
    }

    /// `tcp_rack_sent_after(t, rack)`: a segment ending at `end_seq` sent at
    /// `t` left after RACK's segment (later, or at the same time with a
    /// higher sequence: one ACK releases several segments at once).
    pub fn sent_after(&self, t: SimTime, end_seq: u64) -> bool {
        t > self.xmit || (t == self.xmit && end_seq > self.end_seq)
    }

    /// `tcp_rack_reo_wnd`.
    pub fn reo_wnd(&self, in_recovery: bool, sacked_out: u32, min_rtt: Dur, srtt: Dur) -> Dur {
        if self.reord_seen == 0 && (in_recovery || sacked_out >= self.reordering) {
            return Dur::ZERO;
        }
        if min_rtt == Dur::MAX {
            return Dur::ZERO;
        }
        (min_rtt / 4 * u64::from(self.reo_wnd_steps)).min(srtt)
    }

    /// `tcp_rack_update_reo_wnd`, once per ACK. `prior_delivered` is the
    /// rate sample's (None: this ACK delivered nothing with a sample),
    /// `delivered` the connection's count after this ACK.
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>, delivered: u64) {
        let Some(prior) = prior_delivered.filter(|&p| p != 0) else {
            return;
        };
        // A D-SACK within a round trip of the last raise is its echo.
        if prior < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// `tcp_check_sack_reordering`: `low` is the lowest never-retransmitted
    /// segment this ACK delivered, `prior_fack` the highest SACKed sequence
    /// before it, `fack` after it.
    pub fn check_reordering(&mut self, low: u64, prior_fack: u64, fack: u64) {
        if low >= prior_fack {
            return;
        }
        let metric = fack.saturating_sub(low);
        if metric > u64::from(self.reordering) {
            self.reordering = metric.min(u64::from(MAX_REORDERING)) as u32;
        }
        self.reord_seen += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    #[test]
    fn window_is_zero_until_reordering_is_seen_once_dupthresh_is_reached() {
        let r = Rack::default();
        // Below DupThresh and not recovering: min_rtt/4.
        assert_eq!(r.reo_wnd(false, 2, ms(80), ms(90)), ms(20));
        // DupThresh reached, or in recovery: no settling time.
        assert_eq!(r.reo_wnd(false, 3, ms(80), ms(90)), Dur::ZERO);
        assert_eq!(r.reo_wnd(true, 0, ms(80), ms(90)), Dur::ZERO);
        let seen = Rack {
            reord_seen: 1,
            ..Rack::default()
        };
        assert_eq!(seen.reo_wnd(true, 50, ms(80), ms(90)), ms(20));
        // Capped at srtt.
        let wide = Rack {
            reord_seen: 1,
            reo_wnd_steps: 7,
            ..Rack::default()
        };
        assert_eq!(wide.reo_wnd(false, 0, ms(80), ms(100)), ms(100));
        assert_eq!(wide.reo_wnd(false, 0, ms(40), ms(100)), ms(70));
    }

    #[test]
    fn dsack_raises_the_window_once_per_round_and_it_persists_sixteen_recoveries() {
        let mut r = Rack {
            reord_seen: 1,
            ..Rack::default()
        };
        r.dsack_seen = true;
        r.update_reo_wnd(Some(100), 200);
        assert_eq!(
            (r.reo_wnd_steps, r.reo_wnd_persist, r.last_delivered),
            (2, RECOVERY_THRESH, 200)
        );
        // A D-SACK for data sent before the raise is ignored.
        r.dsack_seen = true;
        r.update_reo_wnd(Some(150), 260);
        assert_eq!(r.reo_wnd_steps, 2);
        assert!(!r.dsack_seen);
        // One from data sent after it counts.
        r.dsack_seen = true;
        r.update_reo_wnd(Some(200), 300);
        assert_eq!(r.reo_wnd_steps, 3);
        assert_eq!(r.reo_wnd(false, 0, ms(40), ms(100)), ms(30));
        // No sample: nothing changes.
        r.reo_wnd_persist = 0;
        r.update_reo_wnd(None, 400);
        assert_eq!(r.reo_wnd_steps, 3);
        // Persistence used up: back to one step.
        r.update_reo_wnd(Some(350), 400);
        assert_eq!(r.reo_wnd_steps, 1);
    }

    #[test]
    fn reordering_is_a_late_original_below_the_highest_sack() {
        let mut r = Rack::default();
        r.check_reordering(10, 10, 15); // not below prior fack
        assert_eq!((r.reord_seen, r.reordering), (0, 3));
        r.check_reordering(10, 12, 12); // 2 segments: degree stays 3
        assert_eq!((r.reord_seen, r.reordering), (1, 3));
        r.check_reordering(10, 30, 30);
        assert_eq!((r.reord_seen, r.reordering), (2, 20));
        r.check_reordering(0, 1000, 1000);
        assert_eq!(r.reordering, MAX_REORDERING);
    }

    #[test]
    fn ambiguous_retransmissions_do_not_advance() {
        let mut r = Rack::default();
        let now = SimTime::ZERO + ms(100);
        assert!(!r.advance(5, SimTime::ZERO + ms(90), true, now, ms(20)));
        assert_eq!((r.xmit, r.advanced), (SimTime::ZERO, false));
        // An RTT equal to min_rtt is not ambiguous (Linux: `rtt_us < min_rtt`).
        assert!(Rack::default().advance(5, SimTime::ZERO + ms(80), true, now, ms(20)));
        assert!(r.advance(5, SimTime::ZERO + ms(70), true, now, ms(20)));
        assert_eq!(
            (r.xmit, r.rtt, r.end_seq),
            (SimTime::ZERO + ms(70), ms(30), 6)
        );
        // An older segment does not move RACK back.
        assert!(r.advance(9, SimTime::ZERO + ms(60), false, now, ms(20)));
        assert_eq!(r.xmit, SimTime::ZERO + ms(70));
        // Same send time: the higher sequence is the later one.
        assert!(r.sent_after(SimTime::ZERO + ms(70), 7));
        assert!(!r.sent_after(SimTime::ZERO + ms(70), 6));
        assert!(r.advance(6, SimTime::ZERO + ms(70), false, now, ms(20)));
        assert_eq!(r.end_seq, 7);
    }
}
