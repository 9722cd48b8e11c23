//! The sender's per-segment scoreboard for [snd_una, snd_nxt): SACKed,
//! lost and retransmitted flags plus send times, with the counters Linux
//! keeps (`sacked_out`, `lost_out`, `retrans_out`) so that the pipe estimate
//! of RFC 6675 §4 ("in_flight" in Linux) is O(1).

use std::collections::VecDeque;

use crate::units::SimTime;

/// What a segment remembers of the connection when it was (re)sent
/// (Linux `tcp_skb_cb.tx`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TxRate {
    /// `tp.delivered` at send time.
    pub delivered: u64,
    /// `tp.delivered_mstamp` at send time; `None` once the segment has been
    /// used as a sample by a SACK (Linux zeroes it).
    pub delivered_mstamp: Option<SimTime>,
    /// Send time of the first segment of this send phase.
    pub first_tx_mstamp: SimTime,
    /// The connection was app-limited when this segment was sent.
    pub is_app_limited: bool,
}

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
    /// Disjoint ranges [start, end) at or above `una`, in order, every
    /// segment of which is SACKed: the union of the SACK blocks processed so
    /// far (a SACK mark stays until the cumulative ACK passes it). `sack` and
    /// the loss scan step over them, as Linux's `recv_sack_cache` skips
    /// blocks it has seen: each ACK repeats the last one's blocks, and
    /// walking them again made the cost of an ACK grow with the window.
    sacked: Vec<(u64, u64)>,
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
    #[inline]
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
        let una = self.una;
        let gone = self.sacked.partition_point(|&(_, e)| e <= una);
        self.sacked.drain(..gone);
        if let Some(first) = self.sacked.first_mut() {
            first.0 = first.0.max(una);
        }
    }

    /// The first sequence at or after `seq` outside the known SACKed ranges;
    /// `k` is the caller's cursor into them (start at 0, then pass it back
    /// with increasing `seq`).
    #[inline]
    pub fn next_unsacked(&self, mut seq: u64, k: &mut usize) -> u64 {
        while let Some(&(s, e)) = self.sacked.get(*k) {
            if s > seq {
                break;
            }
            seq = seq.max(e);
            *k += 1;
        }
        seq
    }

    /// Add [start, end) to the known SACKed ranges, merging what it touches.
    fn note_sacked(&mut self, start: u64, end: u64) {
        let i = self.sacked.partition_point(|&(_, e)| e < start);
        let (mut s, mut e, mut j) = (start, end, i);
        while let Some(&(s2, e2)) = self.sacked.get(j).filter(|r| r.0 <= end) {
            (s, e) = (s.min(s2), e.max(e2));
            j += 1;
        }
        self.sacked.splice(i..j, [(s, e)]);
    }

    /// Mark [start, end) SACKed. Calls `f` for each newly SACKed segment.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(u64, &Seg)) {
        let start = start.max(self.una);
        let end = end.min(self.nxt());
        let mut k = 0;
        let mut next = self.next_unsacked(start, &mut k);
        while next < end {
            let seq = next;
            next = self.next_unsacked(seq + 1, &mut k);
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
            self.note_sacked(start, end);
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

    /// Undo of a spurious recovery (Linux `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`): no segment is lost any more. Only called with no
    /// retransmission in flight.
    pub fn unmark_all_lost(&mut self) {
        debug_assert_eq!(self.retrans_out, 0);
        for s in self.segs.iter_mut() {
            s.flags &= !LOST;
        }
        self.lost_out = 0;
        self.retrans_hint = self.una;
    }

    /// Debug check of the counters against the flags.
    pub fn check(&self) {
        let count = |bit| self.segs.iter().filter(|s| s.flags & bit != 0).count() as u32;
        assert_eq!(self.sacked_out, count(SACKED));
        assert_eq!(self.lost_out, count(LOST));
        assert_eq!(self.retrans_out, count(RETRANS));
        let mut prev = self.una;
        for &(s, e) in &self.sacked {
            assert!(prev <= s && s < e && e <= self.nxt(), "SACKed ranges {:?} (una {})", self.sacked, self.una);
            assert!((s..e).all(|q| self.get(q).flags & SACKED != 0), "{s}..{e} not all SACKed");
            prev = e;
        }
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

    /// SACK blocks that overlap, repeat and extend earlier ones, cumulative
    /// ACKs and growth: each `sack` reports exactly the segments a walk of
    /// every segment in the block would (in order), and the known SACKed
    /// ranges stay a sorted, merged cover of SACKed segments only.
    #[test]
    fn sack_skips_what_earlier_blocks_covered_and_reports_the_rest() {
        let mut b = board(200);
        let mut naive = vec![false; 200]; // SACKed, by sequence
        let mut most_ranges = 0;
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for step in 0..3000 {
            match rnd(10) {
                0 => {
                    let ack = (b.una + rnd(6)).min(b.nxt());
                    b.advance(ack, |_, _| {});
                }
                1 => {
                    b.push(SimTime(step), 1448);
                    naive.push(false);
                }
                _ => {
                    let start = b.una.saturating_sub(2) + rnd(80);
                    let end = start + 1 + rnd(if step % 2 == 0 { 4 } else { 30 });
                    let want: Vec<u64> = (start.max(b.una)..end.min(b.nxt())).filter(|&q| !naive[q as usize]).collect();
                    let mut got = Vec::new();
                    b.sack(start, end, |q, _| got.push(q));
                    assert_eq!(got, want, "step {step}: sack({start}, {end}) with known {:?}", b.sacked);
                    for q in want {
                        naive[q as usize] = true;
                    }
                }
            }
            b.check();
            assert!(b.sacked.windows(2).all(|w| w[0].1 < w[1].0), "not merged: {:?}", b.sacked);
            most_ranges = most_ranges.max(b.sacked.len());
        }
        assert!(b.una > 100 && most_ranges >= 3, "una {} ranges {most_ranges}", b.una);
    }

    /// A SACK of a segment whose retransmission is in flight ends both its
    /// LOST and its RETRANS accounting.
    #[test]
    fn sacking_a_retransmitted_segment_clears_its_counts() {
        let mut b = board(6);
        b.mark_lost(2);
        b.on_retransmit(2, SimTime(50));
        assert_eq!((b.lost_out, b.retrans_out, b.in_flight()), (1, 1, 6));
        b.sack(2, 3, |_, _| {});
        assert_eq!((b.sacked_out, b.lost_out, b.retrans_out, b.in_flight()), (1, 0, 0, 5));
        b.check();
    }

    /// mark_lost: a SACKed or already-lost segment is left alone; a lost one
    /// whose retransmission is in flight becomes due again.
    #[test]
    fn mark_lost_changes_only_what_it_should() {
        let mut b = board(6);
        b.sack(1, 2, |_, _| {});
        assert!(!b.mark_lost(1), "SACKed");
        assert_eq!(b.lost_out, 0);
        assert!(b.mark_lost(3));
        assert!(!b.mark_lost(3), "already lost");
        assert_eq!(b.lost_out, 1);
        b.on_retransmit(3, SimTime(9));
        assert!(b.mark_lost(3), "its retransmission was lost");
        assert_eq!((b.lost_out, b.retrans_out), (1, 0));
        assert_eq!(b.next_lost(), Some(3));
        b.check();
    }

    /// HighSACK is forgotten once the cumulative ACK passes it.
    #[test]
    fn high_sacked_resets_when_the_ack_passes_it() {
        let mut b = board(10);
        b.sack(4, 6, |_, _| {});
        b.advance(3, |_, _| {});
        assert_eq!(b.high_sacked, 6);
        b.advance(7, |_, _| {});
        assert_eq!(b.high_sacked, 0);
    }

    #[test]
    #[should_panic]
    fn check_catches_a_counter_out_of_step() {
        let mut b = board(4);
        b.sacked_out = 1;
        b.check();
    }

    #[test]
    fn next_unsacked_steps_over_known_ranges() {
        let mut b = board(30);
        b.sack(3, 5, |_, _| {});
        b.sack(5, 8, |_, _| {}); // touches [3, 5): one range
        b.sack(20, 22, |_, _| {});
        assert_eq!(b.sacked, vec![(3, 8), (20, 22)]);
        let mut k = 0;
        let seqs: Vec<u64> = std::iter::successors(Some(b.next_unsacked(0, &mut k)), |&q| Some(b.next_unsacked(q + 1, &mut k)))
            .take_while(|&q| q < 30)
            .collect();
        assert_eq!(seqs, (0..3).chain(8..20).chain(22..30).collect::<Vec<_>>());
        b.advance(4, |_, _| {});
        assert_eq!(b.sacked, vec![(4, 8), (20, 22)]);
        b.advance(21, |_, _| {});
        assert_eq!(b.sacked, vec![(21, 22)]);
        b.check();
    }
}
