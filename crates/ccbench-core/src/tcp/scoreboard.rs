//! The sender's per-segment scoreboard for [snd_una, snd_nxt): SACKed,
//! lost and retransmitted flags plus send times, with the counters Linux
//! keeps (`sacked_out`, `lost_out`, `retrans_out`) so that the pipe estimate
//! of RFC 6675 §4 ("in_flight" in Linux) is O(1).

use std::collections::VecDeque;

use super::rate::TxRate;
use crate::units::SimTime;

pub const SACKED: u8 = 1;
pub const LOST: u8 = 2;
/// A retransmission of this segment is in flight.
pub const RETRANS: u8 = 4;
/// The segment was retransmitted at least once (Karn: no RTT sample).
pub const EVER_RETRANS: u8 = 8;
/// The segment carried CE when it was delivered.
pub const CE: u8 = 16;

#[derive(Copy, Clone, Debug)]
pub struct Seg {
    /// Time of the latest (re)transmission.
    pub sent_at: SimTime,
    pub len: u32,
    pub flags: u8,
    /// Delivery-rate snapshot taken at the latest (re)transmission.
    pub tx: TxRate,
}

#[derive(Default)]
pub struct Scoreboard {
    /// Sequence number of `segs[0]` (= snd_una).
    pub una: u64,
    pub segs: VecDeque<Seg>,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Highest SACKed sequence + 1 (0 if none), RFC 6675 "HighACK"'s SACK twin.
    pub high_sacked: u64,
    /// Lowest index that may hold a lost, not yet retransmitted segment.
    pub retrans_hint: u64,
}

impl Scoreboard {
    #[inline]
    pub fn nxt(&self) -> u64 {
        self.una + self.segs.len() as u64
    }
    #[inline]
    pub fn packets_out(&self) -> u32 {
        self.segs.len() as u32
    }
    /// RFC 6675 pipe / Linux `tcp_packets_in_flight`.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.packets_out() + self.retrans_out - self.sacked_out - self.lost_out
    }
    #[inline]
    pub fn get(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.una) as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.una) as usize]
    }
    pub fn push(&mut self, sent_at: SimTime, len: u32) {
        self.segs.push_back(Seg { sent_at, len, flags: 0, tx: TxRate::default() });
    }

    /// Clear a segment's accounting flags as it leaves the scoreboard or is
    /// SACKed.
    fn unaccount(&mut self, flags: u8) {
        if flags & SACKED != 0 {
            self.sacked_out -= 1;
        }
        if flags & LOST != 0 {
            self.lost_out -= 1;
        }
        if flags & RETRANS != 0 {
            self.retrans_out -= 1;
        }
    }

    /// Cumulative ACK up to `ack`: drops segments below it. Calls `f` with
    /// each segment that was not already SACKed (newly delivered).
    pub fn advance(&mut self, ack: u64, mut f: impl FnMut(u64, &Seg)) {
        while self.una < ack {
            let s = self.segs.pop_front().expect("ACK beyond snd_nxt");
            if s.flags & SACKED == 0 {
                f(self.una, &s);
            }
            self.unaccount(s.flags);
            self.una += 1;
        }
        self.retrans_hint = self.retrans_hint.max(self.una);
        if self.high_sacked < self.una {
            self.high_sacked = 0;
        }
    }

    /// Mark [start, end) SACKed. Calls `f` for each newly SACKed segment.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(u64, &Seg)) {
        let start = start.max(self.una);
        let end = end.min(self.nxt());
        for seq in start..end {
            let flags = self.get(seq).flags;
            if flags & SACKED != 0 {
                continue;
            }
            // A SACKed segment is neither lost nor has a retransmission in flight.
            if flags & LOST != 0 {
                self.lost_out -= 1;
            }
            if flags & RETRANS != 0 {
                self.retrans_out -= 1;
            }
            let s = self.get_mut(seq);
            s.flags = (flags | SACKED) & !(LOST | RETRANS);
            let s = *s;
            self.sacked_out += 1;
            f(seq, &s);
        }
        if end > start {
            self.high_sacked = self.high_sacked.max(end);
        }
    }

    /// Mark a segment lost. A lost segment keeps its LOST flag while its
    /// retransmission is in flight (as Linux's TCPCB_LOST), so pipe counts
    /// the retransmission and not the original. Marking a segment whose
    /// retransmission is in flight lost again (RACK found the retransmission
    /// lost) makes it eligible for another retransmission. Returns whether
    /// anything changed.
    pub fn mark_lost(&mut self, seq: u64) -> bool {
        let s = self.get_mut(seq);
        if s.flags & SACKED != 0 || s.flags & (LOST | RETRANS) == LOST {
            return false;
        }
        if s.flags & RETRANS != 0 {
            s.flags &= !RETRANS;
            self.retrans_out -= 1;
        } else {
            s.flags |= LOST;
            self.lost_out += 1;
        }
        self.retrans_hint = self.retrans_hint.min(seq);
        true
    }

    /// Next segment to retransmit: lost and not retransmitted (RFC 6675
    /// NextSeg rule 1), lowest first.
    pub fn next_lost(&mut self) -> Option<u64> {
        // Every retransmission in flight is of a lost segment.
        if self.lost_out <= self.retrans_out {
            return None;
        }
        let mut seq = self.retrans_hint.max(self.una);
        let nxt = self.nxt();
        while seq < nxt {
            if self.get(seq).flags & (LOST | SACKED | RETRANS) == LOST {
                self.retrans_hint = seq;
                return Some(seq);
            }
            seq += 1;
        }
        self.retrans_hint = nxt;
        None
    }

    /// Record the retransmission of a lost segment.
    pub fn on_retransmit(&mut self, seq: u64, now: SimTime) {
        let s = self.get_mut(seq);
        debug_assert!(s.flags & (LOST | RETRANS) == LOST);
        s.flags |= RETRANS | EVER_RETRANS;
        s.sent_at = now;
        self.retrans_out += 1;
        self.retrans_hint = seq + 1;
    }

    /// RTO: every segment not SACKed is considered lost (Linux
    /// `tcp_enter_loss`), and no retransmission is in flight any more.
    pub fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            if s.flags & SACKED == 0 {
                s.flags = (s.flags | LOST) & !RETRANS;
            }
        }
        self.retrans_out = 0;
        self.lost_out = self.segs.iter().filter(|s| s.flags & LOST != 0).count() as u32;
        self.retrans_hint = self.una;
    }

    /// Debug check of the counters against the flags.
    pub fn check(&self) {
        let count = |bit| self.segs.iter().filter(|s| s.flags & bit != 0).count() as u32;
        assert_eq!(self.sacked_out, count(SACKED));
        assert_eq!(self.lost_out, count(LOST));
        assert_eq!(self.retrans_out, count(RETRANS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(SimTime(i), 1448);
        }
        b
    }

    #[test]
    fn pipe_follows_rfc6675() {
        let mut b = board(10);
        assert_eq!(b.in_flight(), 10);
        b.sack(5, 8, |_, _| {});
        assert_eq!(b.in_flight(), 7);
        assert!(b.mark_lost(2));
        assert_eq!(b.in_flight(), 6);
        b.on_retransmit(2, SimTime(100));
        // The original is gone, the retransmission is in flight.
        assert_eq!(b.in_flight(), 7);
        b.check();
        let mut delivered = 0;
        b.advance(6, |_, _| delivered += 1);
        // 0..6 left the board; 5 was SACKed already, so 5 newly delivered.
        assert_eq!(delivered, 5);
        // Left: 6, 7 (SACKed) and 8, 9.
        assert_eq!(b.in_flight(), 2);
        b.check();
    }

    #[test]
    fn next_lost_walks_in_order() {
        let mut b = board(6);
        b.mark_lost(4);
        b.mark_lost(1);
        assert_eq!(b.next_lost(), Some(1));
        b.on_retransmit(1, SimTime(9));
        assert_eq!(b.next_lost(), Some(4));
        b.on_retransmit(4, SimTime(9));
        assert_eq!(b.next_lost(), None);
        b.check();
    }

    #[test]
    fn rto_marks_everything_unsacked_lost() {
        let mut b = board(5);
        b.sack(3, 4, |_, _| {});
        b.mark_lost(0);
        b.on_retransmit(0, SimTime(7));
        b.mark_all_lost();
        assert_eq!(b.lost_out, 4);
        assert_eq!(b.retrans_out, 0);
        assert_eq!(b.in_flight(), 0);
        b.check();
    }
}
