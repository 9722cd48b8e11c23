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
    /// A deque: the cumulative ACK takes ranges from its front, and with
    /// hundreds of holes a vector shifted them all each time.
    sacked: VecDeque<(u64, u64)>,
    /// RACK's scan (Linux walks `tsorted_sent_queue`, its segments in the
    /// order they were last sent) in two parts. Segments never
    /// retransmitted left in sequence order, so their send times rise with
    /// it: they are walked from `orig_from`, below which none may be found
    /// lost any more (each is ACKed, SACKed, waiting to be retransmitted
    /// or retransmitted), to the first sent too late. Retransmissions are
    /// listed as they leave, (time, sequence), and walked to the first sent
    /// too late; an entry is dropped once its segment is ACKed, SACKed,
    /// waits for another retransmission or has left again. A window of
    /// hundreds of holes is then no longer walked whole on every ACK.
    orig_from: u64,
    /// The retransmissions, (time, sequence), in the order they left.
    retrans_log: VecDeque<(SimTime, u64)>,
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
        while self.retrans_log.front().is_some_and(|&(_, q)| q < self.una) {
            self.retrans_log.pop_front();
        }
        if self.high_sacked < self.una {
            self.high_sacked = 0;
        }
        // The ranges the ACK passed leave from the front, one at a time (a
        // drain costs more than the usual nothing to do).
        let una = self.una;
        while self.sacked.front().is_some_and(|&(_, e)| e <= una) {
            self.sacked.pop_front();
        }
        if let Some(first) = self.sacked.front_mut() {
            first.0 = first.0.max(una);
        }
    }

    /// The first sequence at or after `seq` outside the known SACKed
    /// ranges, and a cursor into them for [`Self::next_unsacked`] from
    /// there: it starts at the first range not wholly below `seq`.
    #[inline]
    fn first_unsacked(&self, seq: u64) -> (u64, usize) {
        let mut k = self.sacked.partition_point(|&(_, e)| e <= seq);
        (self.next_unsacked(seq, &mut k), k)
    }

    /// The first sequence at or after `seq` outside the known SACKed ranges;
    /// `k` is the caller's cursor into them (0 or from
    /// [`Self::first_unsacked`], then passed back with increasing `seq`).
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
        if j > i {
            self.sacked[i] = (s, e);
            self.sacked.drain(i + 1..j);
        } else {
            self.sacked.insert(i, (s, e));
        }
    }

    /// Mark [start, end) SACKed. Calls `f` for each newly SACKed segment.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(u64, &Seg)) {
        let start = start.max(self.una);
        let end = end.min(self.nxt());
        let (mut next, mut k) = self.first_unsacked(start);
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
        self.retrans_log.push_back((now, seq));
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
        // Every segment left is SACKed or waits for its retransmission.
        self.retrans_log.clear();
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
        // The segments that waited for a retransmission may be found lost
        // again: originals from the start, and the list of retransmissions
        // made anew from their send times.
        self.orig_from = self.una;
        let una = self.una;
        self.retrans_log =
            self.segs.iter().zip(una..).filter(|(s, _)| s.flags & (SACKED | EVER_RETRANS) == EVER_RETRANS).map(|(s, q)| (s.sent_at, q)).collect();
        self.retrans_log.make_contiguous().sort_by_key(|&(t, _)| t);
    }

    /// RACK's scan (Linux `tcp_rack_detect_loss`): `lost` is asked about
    /// every segment that may be found lost, sent at or before `until` and
    /// (originals) below `end`, and those it says are lost are marked so.
    /// Returns how many were. The same segments as a walk of the whole
    /// window would ask about, in another order: which are lost is RACK's
    /// rule for each, and the marks and the caller's timer do not depend
    /// on the order.
    pub fn scan_sent(&mut self, until: SimTime, end: u64, mut lost: impl FnMut(u64, &Seg) -> bool) -> u32 {
        let mut newly = 0;
        // Originals, below `end`, from the first that may still be found lost.
        let from = self.orig_from.max(self.una);
        let (mut seq, mut k) = self.first_unsacked(from);
        // Every original passed so far can no longer be found lost.
        let mut all_dead = true;
        while seq < end {
            let s = *self.get(seq);
            if s.flags & EVER_RETRANS != 0 || s.flags & (SACKED | LOST) != 0 {
                // Retransmitted (listed below), SACKed or waiting: never again
                // until an undo.
            } else if s.sent_at > until {
                break;
            } else if lost(seq, &s) {
                newly += u32::from(self.mark_lost(seq));
            } else {
                all_dead = false;
            }
            seq = self.next_unsacked(seq + 1, &mut k);
        }
        if all_dead {
            self.orig_from = seq;
        }
        // Retransmissions, in the order they left.
        let (mut keep, mut i) = (0, 0);
        while let Some(&(t, seq)) = self.retrans_log.get(i) {
            if t > until {
                break;
            }
            i += 1;
            if seq < self.una {
                continue;
            }
            let s = *self.get(seq);
            if s.sent_at != t || s.flags & SACKED != 0 {
                continue;
            }
            // A segment marked lost left the list then (below, or all at an RTO).
            debug_assert!(s.flags & (LOST | RETRANS) != LOST, "segment {seq} waits for a retransmission but is listed");
            if lost(seq, &s) {
                // Now waiting for another retransmission, listed when it leaves.
                newly += u32::from(self.mark_lost(seq));
                continue;
            }
            self.retrans_log[keep] = (t, seq);
            keep += 1;
        }
        self.retrans_log.drain(keep..i);
        newly
    }

    /// Debug check of the counters against the flags.
    pub fn check(&self) {
        let count = |bit| self.segs.iter().filter(|s| s.flags & bit != 0).count() as u32;
        assert_eq!(self.sacked_out, count(SACKED));
        assert_eq!(self.lost_out, count(LOST));
        assert_eq!(self.retrans_out, count(RETRANS));
        let log = &self.retrans_log;
        assert!(log.iter().zip(log.iter().skip(1)).all(|(a, b)| a.0 <= b.0), "retransmissions out of time order: {log:?}");
        // Every segment RACK may find lost is reached: a retransmitted one
        // through a live entry, an original at or after `orig_from`.
        let waiting = |s: &Seg| s.flags & SACKED == 0 && s.flags & (LOST | RETRANS) != LOST;
        let mut live: Vec<u64> = log.iter().filter(|&&(t, q)| q >= self.una && self.get(q).sent_at == t && waiting(self.get(q))).map(|&(_, q)| q).collect();
        live.sort_unstable();
        live.dedup();
        let want: Vec<u64> = (self.una..self.nxt()).filter(|&q| waiting(self.get(q)) && self.get(q).flags & EVER_RETRANS != 0).collect();
        assert_eq!(live, want, "retransmission list {log:?}");
        let first = (self.una..self.nxt()).find(|&q| waiting(self.get(q)) && self.get(q).flags & EVER_RETRANS == 0);
        assert!(first.is_none_or(|q| q >= self.orig_from), "original {first:?} below orig_from {}", self.orig_from);
        let orig: Vec<SimTime> = (self.una..self.nxt()).filter(|&q| self.get(q).flags & EVER_RETRANS == 0).map(|q| self.get(q).sent_at).collect();
        assert!(orig.iter().zip(orig.iter().skip(1)).all(|(a, b)| a <= b), "originals out of time order");
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
                    b.push(SimTime(1000 + step), 1448); // after board()'s sends
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
            assert!(b.sacked.iter().zip(b.sacked.iter().skip(1)).all(|(a, c)| a.1 < c.0), "not merged: {:?}", b.sacked);
            most_ranges = most_ranges.max(b.sacked.len());
        }
        assert!(b.una > 100 && most_ranges >= 3, "una {} ranges {most_ranges}", b.una);
    }

    /// RACK's scan (originals from their cursor, retransmissions from
    /// their list) marks exactly what a walk of every outstanding segment
    /// in sequence order marks, through sends, SACKs, cumulative ACKs,
    /// retransmissions, RTOs and undos, with send times that tie; `check`
    /// asserts after each step that the list is in time order and that
    /// every segment that may be found lost is reached. Several seeds.
    #[test]
    fn scan_of_the_send_list_marks_what_a_window_walk_marks() {
        for seed in 1..=8u64 {
            let mut b = Scoreboard::default();
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut rnd = |n: u64| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % n
            };
            let (mut now, mut scans, mut marked) = (0u64, 0, 0);
            for step in 0..4000 {
                now += rnd(3); // equal send times are common
                match rnd(20) {
                    0..=5 => b.push(SimTime(now), 1448),
                    6 => {
                        let ack = (b.una + rnd(4)).min(b.nxt());
                        b.advance(ack, |_, _| {});
                    }
                    7..=10 if b.nxt() > b.una => {
                        let start = b.una + rnd(b.nxt() - b.una);
                        b.sack(start, start + 1 + rnd(5), |_, _| {});
                    }
                    11..=13 => {
                        if let Some(q) = b.next_lost() {
                            b.on_retransmit(q, SimTime(now));
                        }
                    }
                    14 if rnd(40) == 0 => b.mark_all_lost(),
                    15 if rnd(40) == 0 && b.retrans_out == 0 => b.unmark_all_lost(),
                    _ if b.nxt() > b.una => {
                        // RACK's segment: some outstanding one's send, and a deadline.
                        let q = b.una + rnd(b.nxt() - b.una);
                        let (until, end_seq) = (b.get(q).sent_at, q + 1);
                        let (end, deadline) = (b.high_sacked.min(b.nxt()), SimTime(now.saturating_sub(rnd(6))));
                        let judge = |seq: u64, s: &Seg| seq < end && (s.sent_at < until || (s.sent_at == until && seq + 1 <= end_seq)) && s.sent_at <= deadline;
                        let mut walk = Vec::new();
                        for seq in b.una..end {
                            let s = *b.get(seq);
                            if s.flags & SACKED == 0 && s.flags & (LOST | RETRANS) != LOST && judge(seq, &s) {
                                walk.push(seq);
                            }
                        }
                        // Asked about: every segment that may be found lost and was
                        // sent by `until` (originals only below `end`), and no other
                        // (the caller's timer counts each one it is asked about).
                        let may = |q: u64| {
                            let s = b.get(q);
                            s.flags & SACKED == 0
                                && s.flags & (LOST | RETRANS) != LOST
                                && s.sent_at <= until
                                && (q < end || s.flags & EVER_RETRANS != 0)
                        };
                        let candidates: Vec<u64> = (b.una..b.nxt()).filter(|&q| may(q)).collect();
                        let mut asked = Vec::new();
                        let n = b.scan_sent(until, end, |seq, s| {
                            asked.push(seq);
                            judge(seq, s)
                        });
                        let mut got: Vec<u64> = asked.iter().copied().filter(|&q| b.get(q).flags & (LOST | RETRANS) == LOST).collect();
                        got.sort_unstable();
                        got.dedup();
                        assert_eq!((got, n as usize), (walk.clone(), walk.len()), "seed {seed} step {step}");
                        asked.sort_unstable();
                        asked.dedup();
                        assert_eq!(asked, candidates, "seed {seed} step {step}: asked about");
                        scans += 1;
                        marked += walk.len();
                    }
                    _ => {}
                }
                b.check();
            }
            assert!(scans > 500 && marked > 50, "seed {seed}: {scans} scans, {marked} marked");
        }
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
