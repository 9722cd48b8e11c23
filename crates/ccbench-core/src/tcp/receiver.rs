//! TCP receiver: cumulative ACK + SACK blocks (RFC 2018), ACKs as Linux
//! sends them (net/ipv4/tcp_input.c `__tcp_ack_snd_check`): at once when
//! more than one full segment arrived in order since the last ACK, in
//! quick-ACK mode (at start, after a duplicate, at the first CE of classic
//! ECN) or when a hole is filled and nothing is held out of order any
//! more; otherwise delayed, or, while data is held out of order, the first
//! three ACKs for each cumulative ACK point at once and the later ones
//! compressed (SACK compression: held min(1 ms, RTT/20), at most 44). ECN
//! feedback: RFC 3168's sticky ECE until CWR, plus Accurate ECN counters
//! (RFC 9768 r.cep/r.ceb) carried on every ACK.
//!
//! SACK blocks follow Linux's list (`tcp_sack_new_ofo_skb`,
//! `tcp_sack_maybe_coalesce`, `tcp_sack_remove`): four blocks, the most
//! recently changed first; a new segment extends a block of the list or
//! starts a new one, the fourth falling out, so a range no longer in the
//! list is not reported again until the cumulative ACK covers it. A change
//! beyond the first two blocks first sends a compressed ACK. The first
//! three go on an ACK (timestamps take the rest of the option space).
//!
//! Timestamps (RFC 7323; Linux `tcp_replace_ts_recent`, `tcp_paws_check`):
//! `ts_recent` takes the TSval of a segment at the last ACKed point and is
//! echoed as TSecr; PAWS drops data more than one 1 ms tick older than it,
//! with a duplicate ACK. Behind a path that reorders, data sent a few ms
//! before a retransmission that filled a hole arrives after it and is
//! dropped, as the kernel does (its `PAWSEstab` counter).
//!
//! Receive window (Linux tcp_input.c): the buffer starts at
//! `tcp_rmem[1]` and `tcp_rcv_space_adjust` grows it once per receiver RTT
//! to 2 × (bytes read in that RTT) + 16 MSS, plus twice the growth since the
//! last RTT (slow start), in memory terms twice that, capped at `tcp_rmem[2]`;
//! every ACK advertises half the buffer (TCP_DEFAULT_SCALING_RATIO, i.e.
//! `tcp_adv_win_scale = 1`). The application reads data as soon as it is in
//! order. The receiver RTT is Linux's timestamp estimate
//! (`tcp_rcv_rtt_measure_ts` / `tcp_rcv_rtt_update`): now − TSecr of each
//! full-sized segment echoing a new TSval; a smaller sample replaces the
//! estimate, a larger one enters a 1/8 EWMA.
//!
//! SCE (chromi/sce, when the sender's algorithm is SCE-aware): ESCE on ACKs
//! while the data arrives ECT(1), an immediate ACK at each change.
//!
//! D-SACK (RFC 2883, Linux `tcp_dsack_set`): a duplicate segment, below
//! rcv_nxt or inside a received range, is reported in the first SACK block
//! of the next ACK; one below rcv_nxt is ACKed at once.
//!
//! Deviations: the delayed-ACK timer is a fixed `delack` (Linux
//! adapts ato between 40 and 200 ms); the compressed-ACK timer fires
//! without its 100 µs slack; the window/buffer ratio is fixed at
//! 1/2 (Linux measures it from skb truesize) and `rcv_ssthresh` slow growth
//! and out-of-order memory are not modelled; sequence numbers are whole
//! segments, so partial overlaps do not occur.
//! At an SCE state change chromi/sce first ACKs the earlier data with the
//! old state; here one ACK covers both, so at most one delayed segment per
//! change is echoed with the new state.

use std::collections::VecDeque;

use super::{ack_wire_size, TcpConfig};
use crate::cc::EcnMode;
use crate::packet::{Ecn, Header, Packet, SackBlock, TcpAck, TcpSeg, MAX_RWND};
use crate::units::{Dur, SimTime};

/// A received range above rcv_nxt, with its payload bytes.
#[derive(Copy, Clone, Debug)]
struct Range {
    start: u64,
    end: u64,
    bytes: u64,
}

/// `TCP_NUM_SACKS`: the SACK blocks Linux remembers.
const NUM_SACKS: usize = 4;
/// `TCP_SACK_BLOCKS_EXPECTED`: blocks assumed to reach the sender.
const SACK_BLOCKS_EXPECTED: usize = 2;
/// `TCP_FASTRETRANS_THRESH`: ACKs sent at once per cumulative ACK point
/// before SACK compression starts.
const FASTRETRANS_THRESH: u32 = 3;
/// `tcp_comp_sack_nr` and `tcp_comp_sack_delay_ns` defaults.
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY: Dur = Dur::from_millis(1);
/// `TCP_PAWS_WINDOW`, in ticks of the 1 ms timestamp clock.
const PAWS_WINDOW_MS: u64 = 1;
/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;

pub struct TcpReceiver {
    pub rcv_nxt: u64,
    /// Out-of-order ranges, in order. A deque: retransmissions fill the
    /// holes from the lowest, and a window of hundreds of holes made each
    /// fill shift every range after it.
    ooo: VecDeque<Range>,
    /// `rcv_wup`: rcv_nxt when the last ACK left.
    rcv_wup: u64,
    /// Linux's SACK list (`selective_acks`, most recently changed first).
    sacks: [SackBlock; NUM_SACKS],
    num_sacks: usize,
    /// SACK compression: ACKs held back (`compressed_ack`), the cumulative
    /// ACK point and the ACKs sent at once for it, and the timer.
    compressed: u32,
    comp_rcv_nxt: u64,
    dup_acks: u32,
    comp_at: SimTime,
    /// The handshake's RTT (the receiver's `srtt`).
    syn_rtt: Dur,
    quickacks: u32,
    pub delack_at: SimTime,
    ece: bool,
    classic_ecn: bool,
    accurate_ecn: bool,
    /// Codepoint of the last data packet (AccECN change-triggered ACKs).
    last_ecn: Ecn,
    /// Codepoint of this receiver's pure ACKs (ECT with Accurate ECN).
    pub ack_ecn: Ecn,
    /// `ts_recent`: the TSval echoed, and PAWS's reference (RFC 7323 §5).
    ts_recent: SimTime,
    /// Data segments discarded by PAWS (Linux `PAWSEstab`).
    pub paws_rejected: u64,
    sack_blocks: u8,
    /// Duplicate segment to report as D-SACK on the next ACK.
    dsack: Option<u64>,
    delack: crate::units::Dur,
    /// `TcpConfig::ack_on_push`.
    ack_on_push: bool,
    /// Payload bytes delivered in order to the application.
    pub delivered_bytes: u64,
    /// Payload bytes of every data segment that arrived, in any order and
    /// including duplicates (what the path carried to this receiver).
    pub received_bytes: u64,
    /// CE-marked data packets received (AccECN r.cep without its initial 5).
    pub ce_packets: u32,
    pub ce_bytes: u64,
    /// SCE feedback negotiated (the sender's algorithm is SCE-aware).
    sce: bool,
    /// The last ECT data segment was SCE-marked (ECT(1)): echoed as ESCE.
    sce_state: bool,
    /// SCE-marked data packets received.
    pub sce_packets: u32,
    /// Receive buffer (`sk_rcvbuf`) and its cap (`tcp_rmem[2]`), bytes.
    pub rcvbuf: u64,
    rmem_max: u64,
    advmss: u64,
    /// `rcvq_space`: bytes read in the last measured RTT, and where/when
    /// the current measurement started.
    space: u64,
    space_seq: u64,
    space_time: SimTime,
    /// `rcv_rtt_est.rtt_us` (×8, ns; 0 until measured) and the last
    /// TSecr sampled (`rcv_rtt_last_tsecr`).
    rcv_rtt_x8: u64,
    last_tsecr: SimTime,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, mode: EcnMode) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            rcv_wup: 0,
            sacks: [SackBlock::default(); NUM_SACKS],
            num_sacks: 0,
            compressed: 0,
            comp_rcv_nxt: 0,
            dup_acks: 0,
            comp_at: SimTime::NEVER,
            syn_rtt: Dur::ZERO,
            quickacks: cfg.quickacks,
            delack_at: SimTime::NEVER,
            ece: false,
            classic_ecn: mode == EcnMode::Classic,
            accurate_ecn: matches!(mode, EcnMode::Accurate(_)),
            last_ecn: Ecn::NotEct,
            ack_ecn: match mode {
                EcnMode::Accurate(e) => e,
                _ => Ecn::NotEct,
            },
            ts_recent: SimTime::ZERO,
            paws_rejected: 0,
            sack_blocks: cfg.sack_blocks,
            dsack: None,
            delack: cfg.delack,
            ack_on_push: cfg.ack_on_push,
            delivered_bytes: 0,
            received_bytes: 0,
            ce_packets: 0,
            ce_bytes: 0,
            sce: false,
            sce_state: false,
            sce_packets: 0,
            rcvbuf: cfg.rmem_default.0,
            rmem_max: cfg.rmem_max.0.max(cfg.rmem_default.0),
            advmss: u64::from(cfg.mss()),
            //= Linux tcp_init_buffer_space: min(rcv_wnd, TCP_INIT_CWND·advmss)
            space: (cfg.rmem_default.0 / 2).min(10 * u64::from(cfg.mss())),
            space_seq: 0,
            space_time: SimTime::ZERO,
            rcv_rtt_x8: 0,
            last_tsecr: SimTime::ZERO,
        }
    }

    /// Echo SCE (chromi/sce `tcp_sce`): set ESCE on ACKs while the data
    /// arrives ECT(1), with an immediate ACK at each change so that the
    /// ESCE ACKs cover the SCE-marked segments.
    pub fn enable_sce(&mut self) {
        self.sce = true;
    }

    /// The RTT the handshake measured (Linux's receiver keeps it as srtt).
    pub fn set_syn_rtt(&mut self, rtt: Dur) {
        self.syn_rtt = rtt;
    }

    /// The window this receiver advertises, bytes (`tcp_win_from_space`).
    pub fn window(&self) -> u64 {
        self.rcvbuf / 2
    }

    /// The receiver's RTT estimate (zero until measured).
    pub fn rcv_rtt(&self) -> crate::units::Dur {
        crate::units::Dur(self.rcv_rtt_x8 / 8)
    }

    /// Linux `tcp_rcv_rtt_measure_ts` + `tcp_rcv_rtt_update(.., win_dep = 0)`.
    fn rcv_rtt_measure_ts(&mut self, seg: &TcpSeg, now: SimTime) {
        if seg.tsecr == self.last_tsecr || seg.tsecr == SimTime::ZERO {
            return;
        }
        self.last_tsecr = seg.tsecr;
        if u64::from(seg.len) < self.advmss || now <= seg.tsecr {
            return;
        }
        let m = now.since(seg.tsecr).nanos() * 8;
        let old = self.rcv_rtt_x8;
        self.rcv_rtt_x8 = if old == 0 || m < old { m } else { old - old / 8 + m / 8 };
    }

    /// Linux `tcp_rcv_space_adjust` (with `tcp_moderate_rcvbuf` = 1).
    fn rcv_space_adjust(&mut self, now: SimTime) {
        if self.rcv_rtt_x8 == 0 || now.since(self.space_time) < self.rcv_rtt() {
            return;
        }
        let copied = self.delivered_bytes - self.space_seq;
        if copied > self.space {
            // 2× for losses, +16 MSS cushion, + 2× the growth (slow start).
            let mut rcvwin = 2 * copied + 16 * self.advmss;
            let grow = rcvwin * (copied - self.space) / self.space.max(1);
            rcvwin += 2 * grow;
            let rcvbuf = (2 * rcvwin).min(self.rmem_max);
            self.rcvbuf = self.rcvbuf.max(rcvbuf);
            self.space = copied;
        }
        self.space_seq = self.delivered_bytes;
        self.space_time = now;
    }

    /// A data segment arrived. ACKs due now go to `out`: at most two, a
    /// compressed ACK flushed before a SACK change, then this segment's.
    /// Inlined into the simulator's one call: out of line, each ACK it
    /// builds is copied once more on its way out.
    #[inline(always)]
    pub fn on_data(&mut self, seg: &TcpSeg, ecn: Ecn, now: SimTime, out: &mut impl FnMut(TcpAck)) {
        //= RFC 7323 §5.3 as Linux tcp_validate_incoming / tcp_paws_check:
        // a segment whose TSval (1 ms clock) is more than TCP_PAWS_WINDOW
        // = 1 tick older than ts_recent is discarded, and a duplicate ACK
        // sent. Behind reordering, data sent a few ms before a
        // retransmission that filled a hole arrives older than it.
        let ms = |t: SimTime| t.0 / 1_000_000;
        if self.ts_recent != SimTime::ZERO && ms(self.ts_recent) > ms(seg.ts) + PAWS_WINDOW_MS {
            self.paws_rejected += 1;
            self.received_bytes += u64::from(seg.len);
            return out(self.make_ack(now));
        }
        //= Linux tcp_replace_ts_recent: ts_recent follows a segment that
        // starts at or below the last ACKed point (RFC 7323's
        // Last.ACK.sent), so a delayed ACK echoes the earlier TSval. A
        // duplicate that ends below it never gets there: `tcp_sequence`
        // rejects it first (a D-SACKed duplicate ACK, as below), so a
        // spurious retransmission does not move ts_recent past the
        // originals still on their way. It never moves back
        // (`tcp_paws_check(.., 0)`).
        if seg.seq <= self.rcv_wup && seg.seq + 1 >= self.rcv_wup && ms(seg.ts) >= ms(self.ts_recent) {
            self.ts_recent = seg.ts;
        }
        // ICSK_ACK_NOW: this segment is ACKed at once whatever else holds.
        let mut ack_now = false;
        // RFC 3168 §6.1.3: CWR ends the ECE echo; a CE on the same packet
        // starts it again.
        if seg.cwr {
            self.ece = false;
        }
        // RFC 9768 §3.2.2.5.1 (Linux): ACK at once when the codepoint changes.
        if self.accurate_ecn && ecn != self.last_ecn {
            ack_now = true;
        }
        self.last_ecn = ecn;
        if self.sce {
            // ECT(1) is SCE; ECT(0) ends it; CE and Not-ECT (retransmissions)
            // leave the state alone.
            let state = match ecn {
                Ecn::Ect1 => true,
                Ecn::Ect0 => false,
                _ => self.sce_state,
            };
            if ecn == Ecn::Ect1 {
                self.sce_packets += 1;
            }
            if state != self.sce_state {
                self.sce_state = state;
                ack_now = true;
            }
        }
        self.received_bytes += u64::from(seg.len);
        if ecn == Ecn::Ce {
            self.ce_packets += 1;
            self.ce_bytes += u64::from(seg.len);
            if self.classic_ecn && !self.ece {
                self.ece = true;
                //= Linux __tcp_ecn_check_ce: "better not delay acks".
                self.incr_quickack(2);
            }
        }
        self.rcv_rtt_measure_ts(seg, now);
        if seg.seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.delivered_bytes += u64::from(seg.len);
            if !self.ooo.is_empty() {
                ack_now |= self.join_ooo();
            }
            //= Linux tcp_measure_rcv_mss + tcp_cleanup_rbuf: a PSH segment
            // sets ICSK_ACK_PUSHED, and the application's read that empties
            // the receive queue (nothing held out of order) sends the ACK.
            ack_now |= seg.psh && self.ack_on_push && self.ooo.is_empty();
            self.rcv_space_adjust(now);
        } else if seg.seq > self.rcv_nxt {
            if !self.insert_ooo(seg.seq, u64::from(seg.len)) {
                self.dsack = Some(seg.seq);
            }
            self.sack_new_ofo(seg.seq, now, out);
        } else {
            //= Linux tcp_data_queue: a retransmission of data already
            // received: D-SACK it, ACK at once, and quick-ACK what follows.
            self.dsack = Some(seg.seq);
            self.incr_quickack(MAX_QUICKACKS);
        }
        self.ack_snd_check(ack_now, now, out);
    }

    /// Linux `tcp_incr_quickack`: ACK the next `n` segments at once (at
    /// most half the window's worth).
    fn incr_quickack(&mut self, n: u32) {
        let by_window = (self.window() / (2 * self.advmss)).max(2) as u32;
        self.quickacks = self.quickacks.max(n.min(by_window));
    }

    /// Linux `__tcp_ack_snd_check(sk, ofo_possible = 1)`: ACK now when more
    /// than one full segment arrived in order since the last ACK, in
    /// quick-ACK mode, or when asked; with nothing held out of order, delay
    /// it; with data held out of order, send the first three ACKs for each
    /// cumulative ACK point at once and compress the ones after
    /// (`tcp_comp_sack_*`: held min(1 ms, RTT/20), at most 44).
    fn ack_snd_check(&mut self, ack_now: bool, now: SimTime, out: &mut impl FnMut(TcpAck)) {
        if self.rcv_nxt - self.rcv_wup >= 2 || self.quickacks > 0 || ack_now {
            return out(self.make_ack(now));
        }
        if self.ooo.is_empty() {
            if self.delack_at == SimTime::NEVER {
                self.delack_at = now + self.delack;
            }
            return;
        }
        if self.compressed >= COMP_SACK_NR {
            return out(self.make_ack(now));
        }
        if self.comp_rcv_nxt != self.rcv_nxt {
            self.comp_rcv_nxt = self.rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < FASTRETRANS_THRESH {
            self.dup_acks += 1;
            return out(self.make_ack(now));
        }
        self.compressed += 1;
        if self.comp_at == SimTime::NEVER {
            // tcp_rcv_rtt_est, or the handshake's srtt if smaller; the
            // receiver's own RTT is 0 until measured.
            let mut rtt = self.rcv_rtt();
            if self.syn_rtt > Dur::ZERO && self.syn_rtt < rtt {
                rtt = self.syn_rtt;
            }
            self.comp_at = now + COMP_SACK_DELAY.min(rtt / 20);
        }
    }

    /// Linux `tcp_sack_new_ofo_skb`: the new segment extends a block of the
    /// list (which moves to the front, merging with any it now touches) or
    /// becomes a new first block, the fourth falling out. A change beyond
    /// the first two blocks first flushes a compressed ACK, so that every
    /// range goes out in one of the first two places at least once.
    fn sack_new_ofo(&mut self, seq: u64, now: SimTime, out: &mut impl FnMut(TcpAck)) {
        let (start, end) = (seq, seq + 1);
        let n = self.num_sacks;
        let hit = self.sacks[..n].iter().position(|b| start <= b.end && b.start <= end);
        if hit.unwrap_or(n) >= SACK_BLOCKS_EXPECTED && self.compressed > 0 {
            out(self.make_ack(now));
        }
        match hit {
            Some(i) => {
                let b = &mut self.sacks[i];
                b.start = b.start.min(start);
                b.end = b.end.max(end);
                self.sacks[..=i].rotate_right(1);
                // tcp_sack_maybe_coalesce: the first block swallows the
                // blocks it now overlaps or touches.
                let mut k = 1;
                while k < self.num_sacks {
                    let (head, other) = (self.sacks[0], self.sacks[k]);
                    if other.start <= head.end && head.start <= other.end {
                        self.sacks[0] = SackBlock { start: head.start.min(other.start), end: head.end.max(other.end) };
                        self.sacks.copy_within(k + 1..self.num_sacks, k);
                        self.num_sacks -= 1;
                    } else {
                        k += 1;
                    }
                }
            }
            None => {
                let n = n.min(NUM_SACKS - 1);
                self.sacks.copy_within(..n, 1);
                self.sacks[0] = SackBlock { start, end };
                self.num_sacks = n + 1;
            }
        }
    }

    /// In-order data reached the out-of-order queue: what it joins is
    /// delivered and its SACK blocks go. True when the queue empties:
    /// RFC 5681 §4.2, as Linux, ACKs at once when the gap is filled. Kept
    /// out of line, as `insert_ooo`: they run only with data held out of
    /// order, and `on_data` is inlined into the simulator's loop.
    #[inline(never)]
    fn join_ooo(&mut self) -> bool {
        if self.ooo[0].start == self.rcv_nxt {
            let r = self.ooo.pop_front().expect("a range");
            self.rcv_nxt = r.end;
            self.delivered_bytes += r.bytes;
        }
        self.sack_remove();
        self.ooo.is_empty()
    }

    /// Linux `tcp_sack_remove`: drop the blocks rcv_nxt now covers (all of
    /// them once nothing is held out of order).
    fn sack_remove(&mut self) {
        if self.ooo.is_empty() {
            self.num_sacks = 0;
            return;
        }
        let mut k = 0;
        while k < self.num_sacks {
            if self.sacks[k].start <= self.rcv_nxt {
                self.sacks.copy_within(k + 1..self.num_sacks, k);
                self.num_sacks -= 1;
            } else {
                k += 1;
            }
        }
    }

    /// The earliest time this receiver needs to be woken: the delayed-ACK
    /// timer or the compressed-ACK timer.
    pub fn next_timer(&self) -> SimTime {
        self.delack_at.min(self.comp_at)
    }

    /// The delayed-ACK or compressed-ACK timer fired.
    pub fn on_timer(&mut self, now: SimTime) -> Option<TcpAck> {
        let due = (now >= self.delack_at && self.rcv_nxt > self.rcv_wup) || (now >= self.comp_at && self.compressed > 0);
        if now >= self.delack_at {
            self.delack_at = SimTime::NEVER;
        }
        if now >= self.comp_at {
            self.comp_at = SimTime::NEVER;
        }
        due.then(|| self.make_ack(now))
    }

    /// The ACK as a packet on the reverse path, from the flow's template.
    /// `ecn`: the receiver's `ack_ecn`.
    pub fn ack_packet(ack: TcpAck, ecn: Ecn, now: SimTime, tmpl: &Packet) -> Packet {
        Packet { size: ack_wire_size(ack.sack.len() as u8), ecn, sent_at: now, hdr: Header::TcpAck(ack), ..*tmpl }
    }

    /// Returns false for a duplicate of data already held.
    #[inline(never)]
    fn insert_ooo(&mut self, seq: u64, bytes: u64) -> bool {
        let i = self.ooo.partition_point(|r| r.end < seq);
        if i < self.ooo.len() && self.ooo[i].start <= seq && seq < self.ooo[i].end {
            return false;
        }
        if i < self.ooo.len() && self.ooo[i].end == seq {
            // Extend range i to the right, maybe merging with i+1.
            self.ooo[i].end += 1;
            self.ooo[i].bytes += bytes;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].start == self.ooo[i].end {
                let n = self.ooo.remove(i + 1).expect("range i + 1");
                self.ooo[i].end = n.end;
                self.ooo[i].bytes += n.bytes;
            }
        } else if i < self.ooo.len() && self.ooo[i].start == seq + 1 {
            self.ooo[i].start = seq;
            self.ooo[i].bytes += bytes;
        } else {
            self.ooo.insert(i, Range { start: seq, end: seq + 1, bytes });
        }
        true
    }

    fn make_ack(&mut self, now: SimTime) -> TcpAck {
        //= Linux tcp_event_ack_sent: the ACK ends any pending delayed or
        // compressed ACK and moves rcv_wup; quick-ACK mode counts it.
        self.rcv_wup = self.rcv_nxt;
        self.delack_at = SimTime::NEVER;
        self.comp_at = SimTime::NEVER;
        self.compressed = 0;
        self.quickacks = self.quickacks.saturating_sub(1);
        let mut ack = TcpAck {
            ack: self.rcv_nxt,
            ece: self.ece,
            tsecr: self.ts_recent,
            cep: self.ce_packets,
            ceb: self.ce_bytes,
            esce: self.sce && self.sce_state,
            rwnd: Some(self.window().min(u64::from(MAX_RWND)) as u32),
            tsval: now,
            ..Default::default()
        };
        //= RFC 2883 §4: a D-SACK block comes first, then the SACK blocks
        // in the order of Linux's list (most recently changed first).
        let room = usize::from(self.sack_blocks);
        let mut used = 0;
        if let Some(d) = self.dsack.take().filter(|_| room > 0) {
            ack.push_sack(SackBlock { start: d, end: d + 1 });
            used = 1;
        }
        for b in self.sacks[..self.num_sacks].iter().take(room.saturating_sub(used)) {
            ack.push_sack(*b);
        }
        ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u64) -> TcpSeg {
        TcpSeg { seq, len: 1448, ..Default::default() }
    }
    /// Deliver one segment; the ACK it released at once, if any.
    fn data(r: &mut TcpReceiver, seg: &TcpSeg, ecn: Ecn, now: SimTime) -> Option<TcpAck> {
        let mut acks = Vec::new();
        r.on_data(seg, ecn, now, &mut |a| acks.push(a));
        assert!(acks.len() <= 1, "one ACK expected, got {acks:?}");
        acks.pop()
    }
    fn rx() -> TcpReceiver {
        TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Classic)
    }

    /// RFC 2883: a duplicate below rcv_nxt, or inside a held range, is
    /// reported at once in the first SACK block, the SACK blocks after it.
    #[test]
    fn duplicates_are_reported_as_dsack_first() {
        let mut r = rx();
        data(&mut r, &seg(0), Ecn::NotEct, SimTime::ZERO);
        data(&mut r, &seg(1), Ecn::NotEct, SimTime::ZERO);
        // Below rcv_nxt (2): D-SACK [0, 1).
        let a = data(&mut r, &seg(0), Ecn::NotEct, SimTime::ZERO).expect("immediate");
        assert_eq!((a.ack, a.sack.len()), (2, 1));
        assert_eq!(a.sack_block(0), SackBlock { start: 0, end: 1 });
        // Out of order, then a duplicate of it: D-SACK [5, 6) inside SACK [5, 6).
        data(&mut r, &seg(5), Ecn::NotEct, SimTime::ZERO);
        let a = data(&mut r, &seg(5), Ecn::NotEct, SimTime::ZERO).expect("immediate");
        assert_eq!(a.sack.len(), 2);
        assert_eq!(a.sack_block(0), SackBlock { start: 5, end: 6 });
        assert_eq!(a.sack_block(1), SackBlock { start: 5, end: 6 });
        // Reported once.
        let a = data(&mut r, &seg(7), Ecn::NotEct, SimTime::ZERO).expect("ooo");
        assert_eq!(a.sack_block(0), SackBlock { start: 7, end: 8 });
        assert_eq!(a.sack.len(), 2);
    }

    /// chromi/sce receiver: ESCE follows the SCE state of the data
    /// (ECT(1) on, ECT(0) off) with an immediate ACK at each change; off
    /// unless SCE was negotiated.
    #[test]
    fn esce_echoes_sce_marked_data_with_an_ack_at_each_change() {
        let mut r = rx();
        r.enable_sce();
        assert!(data(&mut r, &seg(0), Ecn::Ect0, SimTime(0)).is_none());
        let a = data(&mut r, &seg(1), Ecn::Ect1, SimTime(1)).unwrap();
        assert!(a.esce && !a.ece);
        assert!(data(&mut r, &seg(2), Ecn::Ect1, SimTime(2)).is_none(), "no change: delayed ACK");
        let a = data(&mut r, &seg(3), Ecn::Ect1, SimTime(3)).unwrap();
        assert!(a.esce);
        // A retransmission (Not-ECT) keeps the state; ECT(0) ends it at once.
        assert!(data(&mut r, &seg(4), Ecn::NotEct, SimTime(4)).is_none());
        let a = data(&mut r, &seg(5), Ecn::Ect0, SimTime(5)).unwrap();
        assert!(!a.esce);
        assert_eq!(r.sce_packets, 3);
        let mut plain = rx();
        data(&mut plain, &seg(0), Ecn::Ect1, SimTime(0));
        assert!(!data(&mut plain, &seg(1), Ecn::Ect1, SimTime(1)).unwrap().esce);
    }

    /// Linux `tcp_measure_rcv_mss` + `tcp_cleanup_rbuf`: a full segment
    /// with PSH is ACKed when the application has read it, not a delayed-ACK
    /// time later; kernels before October 2023 (`ack_on_push = false`) wait.
    #[test]
    fn a_psh_segment_is_acked_at_once() {
        let psh = |q: u64| TcpSeg { psh: true, ..seg(q) };
        let mut r = rx();
        assert!(data(&mut r, &seg(0), Ecn::NotEct, SimTime(0)).is_none());
        assert_eq!(data(&mut r, &seg(1), Ecn::NotEct, SimTime(1)).expect("second segment").ack, 2);
        assert_eq!(data(&mut r, &psh(2), Ecn::NotEct, SimTime(2)).expect("PSH").ack, 3);
        assert!(data(&mut r, &seg(3), Ecn::NotEct, SimTime(3)).is_none(), "no PSH: delayed");
        let mut old = TcpReceiver::new(&TcpConfig { quickacks: 0, ack_on_push: false, ..Default::default() }, EcnMode::Classic);
        assert!(data(&mut old, &psh(0), Ecn::NotEct, SimTime(0)).is_none());
        assert_eq!(old.delack_at, SimTime(40_000_000));
    }

    #[test]
    fn acks_every_second_segment_and_delays_the_odd_one() {
        let mut r = rx();
        assert!(data(&mut r, &seg(0), Ecn::NotEct, SimTime(0)).is_none());
        assert_eq!(r.delack_at, SimTime(40_000_000));
        let a = data(&mut r, &seg(1), Ecn::NotEct, SimTime(1)).unwrap();
        assert_eq!(a.ack, 2);
        assert!(data(&mut r, &seg(2), Ecn::NotEct, SimTime(2)).is_none());
        assert!(r.on_timer(SimTime(10)).is_none());
        assert_eq!(r.on_timer(SimTime(40_000_002)).unwrap().ack, 3);
    }

    #[test]
    fn out_of_order_gets_immediate_sack_most_recent_first() {
        let mut r = rx();
        data(&mut r, &seg(0), Ecn::NotEct, SimTime(0));
        let a = data(&mut r, &seg(2), Ecn::NotEct, SimTime(1)).unwrap();
        assert_eq!((a.ack, a.sack.len()), (1, 1));
        assert_eq!(a.sack_block(0), SackBlock { start: 2, end: 3 });
        let a = data(&mut r, &seg(5), Ecn::NotEct, SimTime(2)).unwrap();
        assert_eq!(a.sack.len(), 2);
        assert_eq!(a.sack_block(0), SackBlock { start: 5, end: 6 });
        assert_eq!(a.sack_block(1), SackBlock { start: 2, end: 3 });
        let a = data(&mut r, &seg(3), Ecn::NotEct, SimTime(3)).unwrap();
        assert_eq!(a.sack_block(0), SackBlock { start: 2, end: 4 });
        // Fill the hole at 1: cumulative ACK jumps over 2..4.
        let a = data(&mut r, &seg(1), Ecn::NotEct, SimTime(4)).unwrap();
        assert_eq!(a.ack, 4);
        assert_eq!(a.sack.len(), 1);
        assert_eq!(r.delivered_bytes, 4 * 1448);
    }

    /// RFC 3168 §6.1.3; Linux `__tcp_ecn_check_ce` enters quick-ACK mode
    /// for two ACKs at the first CE.
    #[test]
    fn ece_is_sticky_until_cwr() {
        let mut r = rx();
        let a = data(&mut r, &seg(0), Ecn::Ce, SimTime(0)).unwrap();
        assert!(a.ece);
        let a = data(&mut r, &seg(1), Ecn::Ect0, SimTime(1)).expect("quick-ACK mode");
        assert!(a.ece, "ECE stays set until CWR");
        assert!(data(&mut r, &seg(2), Ecn::Ect0, SimTime(2)).is_none(), "delayed again");
        let cwr = TcpSeg { cwr: true, ..seg(3) };
        let a = data(&mut r, &cwr, Ecn::Ect0, SimTime(3)).unwrap();
        assert!(!a.ece, "CWR ended the echo");
        assert_eq!(a.cep, 1);
    }

    /// RFC 7323 §2.3: the window field with the largest scale (14) carries at
    /// most 65 535 << 14 bytes, whatever the buffer.
    #[test]
    fn the_advertised_window_is_capped_at_the_largest_scaled_window() {
        let big = TcpConfig { quickacks: 0, rmem_default: crate::units::Bytes(8 << 30), ..Default::default() };
        let mut r = TcpReceiver::new(&big, EcnMode::Classic);
        data(&mut r, &seg(0), Ecn::NotEct, SimTime::ZERO);
        let a = data(&mut r, &seg(1), Ecn::NotEct, SimTime::ZERO).expect("second segment: ACK");
        assert_eq!(a.rwnd, Some(MAX_RWND));
        let a = data(&mut rx(), &seg(5), Ecn::NotEct, SimTime::ZERO).expect("out of order: ACK");
        assert_eq!(a.rwnd, Some(65_536));
    }

    const MS: u64 = 1_000_000;

    fn stamped(seq: u64, len: u32, tsecr_ms: u64) -> TcpSeg {
        TcpSeg { seq, len, tsecr: SimTime(tsecr_ms * MS), ..Default::default() }
    }

    /// Held ranges grow at either end and merge when a segment closes the
    /// gap between two; filling the hole below them delivers their bytes.
    #[test]
    fn held_ranges_extend_both_ways_merge_and_deliver_their_bytes() {
        let mut r = rx();
        let sized = |seq: u64, len: u32| TcpSeg { seq, len, ..Default::default() };
        data(&mut r, &sized(0, 1000), Ecn::NotEct, SimTime(0));
        data(&mut r, &sized(3, 30), Ecn::NotEct, SimTime(1));
        let a = data(&mut r, &sized(2, 20), Ecn::NotEct, SimTime(2)).expect("out of order");
        assert_eq!(a.sack_list()[..1], [SackBlock { start: 2, end: 4 }], "extended to the left");
        data(&mut r, &sized(6, 60), Ecn::NotEct, SimTime(3));
        // The fourth ACK for the same cumulative point is compressed.
        assert!(data(&mut r, &sized(4, 40), Ecn::NotEct, SimTime(4)).is_none());
        assert!(data(&mut r, &sized(5, 50), Ecn::NotEct, SimTime(5)).is_none());
        let a = r.on_timer(r.next_timer()).expect("the compressed ACK");
        assert_eq!((a.sack.len(), a.sack_block(0)), (1, SackBlock { start: 2, end: 7 }), "one merged range");
        let a = data(&mut r, &sized(1, 10), Ecn::NotEct, SimTime(6)).expect("hole filled");
        assert_eq!((a.ack, a.sack.len()), (7, 0));
        assert_eq!(r.delivered_bytes, 1000 + 10 + 20 + 30 + 40 + 50 + 60);
    }

    /// Linux quick-ACK mode at the start of a connection: the first
    /// `quickacks` segments are each ACKed at once, then every second one.
    #[test]
    fn the_first_segments_are_acked_at_once() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 3, ..Default::default() }, EcnMode::Off);
        let acked: Vec<bool> = (0..7).map(|q| data(&mut r, &seg(q), Ecn::NotEct, SimTime(q)).is_some()).collect();
        assert_eq!(acked, [true, true, true, false, true, false, true]);
    }

    /// The ACK packet carries the ACK, from the flow's reverse template.
    #[test]
    fn an_ack_packet_carries_its_ack() {
        let mut r = rx();
        data(&mut r, &TcpSeg { ts: SimTime(55), ..seg(0) }, Ecn::NotEct, SimTime(0));
        let a = data(&mut r, &TcpSeg { ts: SimTime(77), ..seg(1) }, Ecn::NotEct, SimTime(1)).unwrap();
        //= RFC 7323 §4.3: the ACK of two segments echoes the earlier TSval.
        assert_eq!((a.tsecr, a.tsval), (SimTime(55), SimTime(1)));
        let tmpl = Packet { flow: crate::packet::FlowId(7), hdr: Header::Probe(Default::default()), ..Default::default() };
        let p = TcpReceiver::ack_packet(a, r.ack_ecn, SimTime(5), &tmpl);
        assert_eq!((p.flow, p.sent_at, p.size), (crate::packet::FlowId(7), SimTime(5), ack_wire_size(0)));
        assert_eq!((p.hdr, p.ecn), (Header::TcpAck(a), Ecn::NotEct));
        // An Accurate ECN receiver's pure ACKs carry the ECT codepoint it was given.
        let mut acc = TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Accurate(Ecn::Ect1));
        let a = data(&mut acc, &seg(0), Ecn::Ect1, SimTime(0)).unwrap();
        assert_eq!(TcpReceiver::ack_packet(a, acc.ack_ecn, SimTime(1), &tmpl).ecn, Ecn::Ect1);
    }

    /// RFC 2883 §4 with RFC 2018's limit: a D-SACK block takes one of the
    /// three slots, leaving two for Linux's first two SACK blocks.
    #[test]
    fn a_dsack_leaves_room_for_two_sack_blocks() {
        let mut r = rx();
        for q in [2, 4, 6, 8] {
            data(&mut r, &seg(q), Ecn::NotEct, SimTime(q));
        }
        // 8's ACK was compressed; the duplicate of 4 touches the third
        // block, which first flushes that ACK (with the D-SACK).
        let b = |s: u64| SackBlock { start: s, end: s + 1 };
        let a = data(&mut r, &seg(4), Ecn::NotEct, SimTime(9)).expect("flushed");
        assert_eq!(a.sack_list(), [b(4), b(8), b(6)]);
        let a = r.on_timer(r.next_timer()).expect("compressed");
        assert_eq!(a.sack_list(), [b(4), b(8), b(6)], "4 moved to the front; 2 is fourth, never sent");
    }

    /// RFC 7323 §5 (Linux tcp_paws_check, TCP_PAWS_WINDOW = 1): data whose
    /// TSval is more than 1 ms older than ts_recent is dropped, with a
    /// duplicate ACK; ts_recent moves only with a segment at the ACKed edge.
    #[test]
    fn paws_drops_data_older_than_the_segment_that_filled_a_hole() {
        let mut r = rx();
        let at = |seq: u64, ts_ms: u64| TcpSeg { ts: SimTime(ts_ms * MS), ..seg(seq) };
        data(&mut r, &at(0, 10), Ecn::NotEct, SimTime(0));
        data(&mut r, &at(1, 11), Ecn::NotEct, SimTime(1));
        data(&mut r, &at(3, 12), Ecn::NotEct, SimTime(2));
        assert_eq!(r.ts_recent, SimTime(10 * MS), "1 and 3 were not at the ACKed edge");
        // The retransmission of 2, sent at 20 ms, fills the hole.
        let a = data(&mut r, &at(2, 20), Ecn::NotEct, SimTime(3)).unwrap();
        assert_eq!((a.ack, a.tsecr), (4, SimTime(20 * MS)));
        // 5, sent at 18 ms, arrives after it: 2 ms older, dropped, dup ACK.
        let before = r.received_bytes;
        let a = data(&mut r, &at(5, 18), Ecn::NotEct, SimTime(4)).expect("duplicate ACK");
        assert_eq!((a.ack, a.sack.len(), r.paws_rejected), (4, 0, 1));
        assert_eq!(r.received_bytes - before, 1448, "a dropped segment still arrived");
        // 4 from 19 ms is within the window: kept.
        data(&mut r, &at(4, 19), Ecn::NotEct, SimTime(5));
        assert_eq!((r.rcv_nxt, r.paws_rejected), (5, 1));
    }

    /// Linux `tcp_sequence` rejects a duplicate that ends below rcv_wup
    /// before `tcp_replace_ts_recent` runs: a spurious retransmission of
    /// data already ACKed leaves ts_recent alone (the original still on its
    /// way is not PAWS-dropped); one that ends at rcv_wup passes and
    /// moves it.
    #[test]
    fn a_duplicate_below_the_acked_edge_does_not_move_ts_recent() {
        let mut r = rx();
        let at = |seq: u64, ts_ms: u64| TcpSeg { ts: SimTime(ts_ms * MS), ..seg(seq) };
        // Each second segment is ACKed: 2 arrives at the ACKed edge.
        for q in 0..4 {
            data(&mut r, &at(q, 10 + q), Ecn::NotEct, SimTime(q));
        }
        assert_eq!((r.rcv_nxt, r.rcv_wup, r.ts_recent), (4, 4, SimTime(12 * MS)));
        // A retransmission of 0 sent at 30 ms: D-SACKed, ts_recent kept.
        let a = data(&mut r, &at(0, 30), Ecn::NotEct, SimTime(4)).expect("D-SACK at once");
        assert_eq!(r.rcv_wup, 4);
        assert_eq!((a.sack_list()[0].start, a.tsecr), (0, SimTime(12 * MS)));
        assert_eq!(r.ts_recent, SimTime(12 * MS));
        // 4, sent at 14 ms, is still accepted.
        data(&mut r, &at(4, 14), Ecn::NotEct, SimTime(5));
        assert_eq!((r.rcv_nxt, r.paws_rejected), (5, 0));
        // A duplicate of 4, ending at rcv_wup = 5, sent at 31 ms moves it.
        assert_eq!(r.rcv_wup, 5, "ACKed at once in quick-ACK mode");
        data(&mut r, &at(4, 31), Ecn::NotEct, SimTime(6));
        assert_eq!(r.ts_recent, SimTime(31 * MS));
        // 5 from 30 ms passes PAWS (1 ms older) but does not move it back.
        data(&mut r, &at(5, 30), Ecn::NotEct, SimTime(7));
        assert_eq!((r.rcv_nxt, r.ts_recent), (6, SimTime(31 * MS)));
    }

    /// Linux's SACK list: four blocks, the most recently changed first; a
    /// fifth range pushes the oldest out for good, and a segment next to
    /// a forgotten range is reported alone (tcp_sack_new_ofo_skb).
    #[test]
    fn the_sack_list_forgets_its_fifth_range() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 16, ..Default::default() }, EcnMode::Off);
        let b = |s: u64, e: u64| SackBlock { start: s, end: e };
        data(&mut r, &seg(0), Ecn::NotEct, SimTime(0));
        let mut last = None;
        for q in [2, 4, 6, 8, 10] {
            last = data(&mut r, &seg(q), Ecn::NotEct, SimTime(q));
        }
        assert_eq!(last.unwrap().sack_list(), [b(10, 11), b(8, 9), b(6, 7)]);
        assert_eq!(r.sacks[..r.num_sacks], [b(10, 11), b(8, 9), b(6, 7), b(4, 5)]);
        // 3 joins the range 2..3 in the queue, but 2's block is gone.
        let a = data(&mut r, &seg(3), Ecn::NotEct, SimTime(11)).unwrap();
        assert_eq!(a.sack_list(), [b(3, 5), b(10, 11), b(8, 9)], "3 merged with 4's block only");
        // 1 fills the hole: the cumulative ACK covers 2..5 and drops its block.
        let a = data(&mut r, &seg(1), Ecn::NotEct, SimTime(12)).unwrap();
        assert_eq!((a.ack, a.sack_list()), (5, [b(10, 11), b(8, 9), b(6, 7)]));
    }

    /// `tcp_sack_maybe_coalesce`: a block that the extended first block now
    /// touches is swallowed, and the blocks after it move up in order.
    #[test]
    fn an_extended_block_swallows_the_one_it_reaches_and_keeps_the_rest() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 16, ..Default::default() }, EcnMode::Off);
        let b = |s: u64, e: u64| SackBlock { start: s, end: e };
        data(&mut r, &seg(0), Ecn::NotEct, SimTime(0));
        for q in [20, 12, 10] {
            data(&mut r, &seg(q), Ecn::NotEct, SimTime(q));
        }
        assert_eq!(r.sacks[..r.num_sacks], [b(10, 11), b(12, 13), b(20, 21)]);
        let a = data(&mut r, &seg(11), Ecn::NotEct, SimTime(30)).unwrap();
        assert_eq!((a.sack.len(), a.sack_list()), (2, [b(10, 13), b(20, 21), b(0, 0)]));
    }

    /// Without SACK (`sack_blocks = 0`, no SACK negotiated) a duplicate is
    /// ACKed with no D-SACK block either.
    #[test]
    fn without_sack_a_duplicate_gets_no_dsack() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 0, sack_blocks: 0, ..Default::default() }, EcnMode::Off);
        data(&mut r, &seg(0), Ecn::NotEct, SimTime(0));
        data(&mut r, &seg(1), Ecn::NotEct, SimTime(1));
        let a = data(&mut r, &seg(0), Ecn::NotEct, SimTime(2)).expect("immediate");
        assert_eq!((a.ack, a.sack.len()), (2, 0));
    }

    /// Linux SACK compression (`__tcp_ack_snd_check`): three ACKs at once
    /// per cumulative ACK point, then ACKs held min(1 ms, RTT/20), at most
    /// 44 of them; a new cumulative point starts the count again.
    #[test]
    fn sack_compression_holds_acks_after_three_duplicates() {
        let mut r = rx();
        r.set_syn_rtt(Dur::from_millis(10));
        let ms = |x: u64| SimTime::ZERO + Dur::from_millis(x);
        data(&mut r, &seg(0), Ecn::NotEct, ms(0));
        let acked: Vec<bool> = (2..8).map(|q| data(&mut r, &seg(q), Ecn::NotEct, ms(1)).is_some()).collect();
        assert_eq!(acked, [true, true, true, false, false, false]);
        // Receiver RTT unknown yet (0): the handshake's is not smaller, so
        // the hold is min(1 ms, 0 / 20) = 0.
        assert_eq!(r.next_timer(), ms(1));
        assert_eq!(r.on_timer(ms(1)).unwrap().sack_block(0), SackBlock { start: 2, end: 8 });
        // With an RTT: min(1 ms, 10 ms / 20) = 0.5 ms.
        r.rcv_rtt_x8 = 8 * Dur::from_millis(30).0;
        data(&mut r, &seg(9), Ecn::NotEct, ms(2));
        assert_eq!(r.next_timer(), ms(2) + Dur::from_micros(500));
        // A hole filled (rcv_nxt moves): three at once again.
        let a = data(&mut r, &seg(1), Ecn::NotEct, ms(3)).expect("new cumulative point");
        assert_eq!(a.ack, 8);
        assert_eq!(r.next_timer(), SimTime::NEVER, "the held ACK went with it");
        let acked: Vec<bool> = (11..16).map(|q| data(&mut r, &seg(q), Ecn::NotEct, ms(4)).is_some()).collect();
        assert_eq!(acked, [true, true, true, false, false]);
        // At most 44 held: the 45th goes at once.
        let mut r = rx();
        data(&mut r, &seg(0), Ecn::NotEct, ms(0));
        let acked: Vec<u64> = (2..50).filter(|&q| data(&mut r, &seg(q), Ecn::NotEct, ms(1)).is_some()).collect();
        assert_eq!(acked, [2, 3, 4, 49]);
    }

    /// Without a handshake RTT the hold follows the receiver's own RTT
    /// estimate alone: min(1 ms, 20 ms / 20) = 1 ms.
    #[test]
    fn sack_compression_without_a_handshake_rtt_holds_for_rtt_over_twenty() {
        let mut r = rx();
        r.rcv_rtt_x8 = 8 * Dur::from_millis(20).0;
        let ms = |x: u64| SimTime::ZERO + Dur::from_millis(x);
        data(&mut r, &seg(0), Ecn::NotEct, ms(0));
        let acked: Vec<bool> = (2..6).map(|q| data(&mut r, &seg(q), Ecn::NotEct, ms(1)).is_some()).collect();
        assert_eq!(acked, [true, true, true, false]);
        assert_eq!(r.next_timer(), ms(2));
        // A wake-up before the hold ends sends nothing and keeps the hold.
        assert!(r.on_timer(ms(1) + Dur::from_micros(500)).is_none());
        assert_eq!(r.next_timer(), ms(2));
        assert_eq!(r.on_timer(ms(2)).expect("held ACK").sack_block(0), SackBlock { start: 2, end: 6 });
        assert_eq!(r.next_timer(), SimTime::NEVER);
    }

    /// `tcp_incr_quickack`: quick ACKs for at most half the advertised
    /// window in segments (64 KiB / (2 · 1448) = 22 with the default
    /// 128 KiB buffer), and never fewer than already granted.
    #[test]
    fn quick_acks_are_capped_at_half_the_window() {
        let mut r = rx();
        assert_eq!(r.window(), 65_536);
        r.incr_quickack(64);
        assert_eq!(r.quickacks, 22);
        r.incr_quickack(3);
        assert_eq!(r.quickacks, 22);
    }

    /// tcp_rcv_rtt_measure_ts / tcp_rcv_rtt_update: one sample per new
    /// TSecr, from full-sized segments only; the first sample and any smaller
    /// one replace the estimate, a larger one moves it by 1/8.
    #[test]
    fn the_receiver_rtt_follows_linux_timestamp_estimate() {
        let mut r = rx();
        // (segment length, TSecr ms, arrival ms, estimate ms afterwards, why)
        let steps = [
            (1448, 0, 5, 0.0, "TSecr 0: no timestamp echoed"),
            (1448, 1, 11, 10.0, "first sample"),
            (1448, 1, 31, 10.0, "the same TSecr again: no sample"),
            (100, 2, 40, 10.0, "a short segment: no sample"),
            (1448, 2, 41, 10.0, "the short segment used up its TSecr"),
            (1448, 45, 45, 10.0, "no time elapsed: no sample"),
            (1448, 50, 55, 5.0, "smaller: replaces"),
            (1448, 60, 73, 6.0, "larger: 5 - 5/8 + 13/8"),
        ];
        for (seq, (len, tsecr, now, want, why)) in steps.into_iter().enumerate() {
            data(&mut r, &stamped(seq as u64, len, tsecr), Ecn::NotEct, SimTime(now * MS));
            assert_eq!(r.rcv_rtt().0 as f64 / MS as f64, want, "{why}");
        }
    }

    /// tcp_rcv_space_adjust: once per receiver RTT, when more was read than
    /// in the last one, the buffer becomes 2 × (2 × copied + 16 MSS + 2 ×
    /// its growth), the advertised window half of it.
    #[test]
    fn the_receive_buffer_grows_once_per_rtt_by_linux_rule() {
        let mut r = rx();
        let at = |ms: u64| SimTime(ms * MS);
        assert_eq!(r.rcvbuf, 131_072);
        data(&mut r, &stamped(0, 1448, 1), Ecn::NotEct, at(11)); // receiver RTT 10 ms; 1 448 B < space
        for q in 1..=20 {
            data(&mut r, &stamped(q, 1448, 1), Ecn::NotEct, at(15)); // within the RTT
        }
        assert_eq!(r.rcvbuf, 131_072);
        let a = data(&mut r, &stamped(21, 1448, 1), Ecn::NotEct, at(21)).expect("second segment");
        // copied 21 × 1448 = 30 408 > space 14 480: window 2 × 30 408 + 16 × 1448
        // = 83 984, grown by 83 984 × 15 928 / 14 480 = 92 382 twice → 268 748.
        assert_eq!(r.rcvbuf, 537_496);
        assert_eq!(a.rwnd, Some(268_748), "the ACK of that segment advertises the new window");
        for q in 22..=30 {
            data(&mut r, &stamped(q, 1448, 1), Ecn::NotEct, at(25));
        }
        data(&mut r, &stamped(31, 1448, 1), Ecn::NotEct, at(31));
        assert_eq!(r.rcvbuf, 537_496, "10 segments read in this RTT, fewer than the last: no change");
        let capped = TcpConfig { quickacks: 0, rmem_max: crate::units::Bytes(200_000), ..Default::default() };
        let mut c = TcpReceiver::new(&capped, EcnMode::Classic);
        for q in 0..=21 {
            data(&mut c, &stamped(q, 1448, 1), Ecn::NotEct, at(if q == 0 { 11 } else if q < 21 { 15 } else { 21 }));
        }
        assert_eq!(c.rcvbuf, 200_000, "capped at tcp_rmem[2]");
    }

    /// RFC 9768 §3.2.2.5.1: an Accurate ECN receiver ACKs at once when the
    /// data's codepoint changes, and otherwise delays as usual.
    #[test]
    fn accurate_ecn_acks_at_once_on_a_codepoint_change() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Accurate(Ecn::Ect0));
        assert!(data(&mut r, &seg(0), Ecn::Ect0, SimTime(0)).is_some(), "Not-ECT → ECT(0)");
        assert!(data(&mut r, &seg(1), Ecn::Ect0, SimTime(1)).is_none());
        let a = data(&mut r, &seg(2), Ecn::Ce, SimTime(2)).expect("ECT(0) → CE");
        assert_eq!((a.cep, a.ceb, a.ece), (1, 1448, false), "AccECN counts CE packets and bytes instead of echoing ECE");
        assert!(data(&mut r, &seg(3), Ecn::Ce, SimTime(3)).is_none());
        let mut classic = rx();
        assert!(data(&mut classic, &seg(0), Ecn::Ect0, SimTime(0)).is_none(), "classic ECN: no change-triggered ACK");
    }
}
