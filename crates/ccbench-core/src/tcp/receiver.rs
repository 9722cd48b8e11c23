//! TCP receiver: cumulative ACK + SACK blocks (RFC 2018), delayed ACKs as
//! Linux does them (an ACK for every second full segment, a delayed-ACK
//! timer otherwise, quick ACKs at start, immediate ACKs for out-of-order
//! data and hole fills), and ECN feedback: RFC 3168's sticky ECE until CWR,
//! plus Accurate ECN counters (RFC 9768 r.cep/r.ceb) carried on every ACK.
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
//! of the next ACK, which is sent at once.
//!
//! Deviations: the delayed-ACK timer is a fixed `delack` (Linux
//! adapts ato between 40 and 200 ms); the window/buffer ratio is fixed at
//! 1/2 (Linux measures it from skb truesize) and `rcv_ssthresh` slow growth
//! and out-of-order memory are not modelled.
//! At an SCE state change chromi/sce first ACKs the earlier data with the
//! old state; here one ACK covers both, so at most one delayed segment per
//! change is echoed with the new state.

use super::{ack_wire_size, TcpConfig};
use crate::cc::EcnMode;
use crate::packet::{Ecn, Header, Packet, SackBlock, TcpAck, TcpSeg, MAX_RWND};
use crate::units::SimTime;

/// A received range above rcv_nxt, with its payload bytes and a recency
/// stamp for SACK block ordering.
#[derive(Copy, Clone, Debug)]
struct Range {
    start: u64,
    end: u64,
    bytes: u64,
    touched: u64,
}

pub struct TcpReceiver {
    pub rcv_nxt: u64,
    ooo: Vec<Range>,
    stamp: u64,
    /// Full segments received since the last ACK.
    unacked: u32,
    quickacks: u32,
    pub delack_at: SimTime,
    ece: bool,
    classic_ecn: bool,
    accurate_ecn: bool,
    /// Codepoint of the last data packet (AccECN change-triggered ACKs).
    last_ecn: Ecn,
    /// Codepoint of this receiver's pure ACKs (ECT with Accurate ECN).
    pub ack_ecn: Ecn,
    last_ts: SimTime,
    sack_blocks: u8,
    /// Duplicate segment to report as D-SACK on the next ACK.
    dsack: Option<u64>,
    delack: crate::units::Dur,
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
            ooo: Vec::new(),
            stamp: 0,
            unacked: 0,
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
            last_ts: SimTime::ZERO,
            sack_blocks: cfg.sack_blocks,
            dsack: None,
            delack: cfg.delack,
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

    /// A data segment arrived. Returns an ACK to send now, if one is due.
    pub fn on_data(&mut self, seg: &TcpSeg, ecn: Ecn, now: SimTime) -> Option<TcpAck> {
        let mut immediate = false;
        // RFC 3168 §6.1.3: CWR ends the ECE echo; a CE on the same packet
        // starts it again.
        if seg.cwr {
            self.ece = false;
        }
        // RFC 9768 §3.2.2.5.1 (Linux): ACK at once when the codepoint changes.
        if self.accurate_ecn && ecn != self.last_ecn {
            immediate = true;
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
                immediate = true;
            }
        }
        self.received_bytes += u64::from(seg.len);
        if ecn == Ecn::Ce {
            self.ce_packets += 1;
            self.ce_bytes += u64::from(seg.len);
            if self.classic_ecn && !self.ece {
                self.ece = true;
                immediate = true; // Linux enters quick-ACK mode on CE.
            }
        }
        self.rcv_rtt_measure_ts(seg, now);
        if seg.seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.delivered_bytes += u64::from(seg.len);
            self.last_ts = seg.ts;
            if !self.ooo.is_empty() {
                // Filled (part of) a hole: ACK at once (RFC 5681 §4.2).
                immediate = true;
                if self.ooo[0].start == self.rcv_nxt {
                    let r = self.ooo.remove(0);
                    self.rcv_nxt = r.end;
                    self.delivered_bytes += r.bytes;
                }
            }
            self.unacked += 1;
            self.rcv_space_adjust(now);
        } else if seg.seq > self.rcv_nxt {
            if !self.insert_ooo(seg.seq, u64::from(seg.len)) {
                self.dsack = Some(seg.seq);
            }
            immediate = true;
        } else {
            self.dsack = Some(seg.seq);
            immediate = true; // Duplicate: ACK at once.
        }
        if immediate || self.unacked >= 2 || self.quickacks > 0 {
            self.quickacks = self.quickacks.saturating_sub(1);
            return Some(self.make_ack(now));
        }
        if self.delack_at == SimTime::NEVER {
            self.delack_at = now + self.delack;
        }
        None
    }

    /// The delayed-ACK timer fired.
    pub fn on_timer(&mut self, now: SimTime) -> Option<TcpAck> {
        if now >= self.delack_at {
            self.delack_at = SimTime::NEVER;
            if self.unacked > 0 {
                return Some(self.make_ack(now));
            }
        }
        None
    }

    /// The ACK as a packet on the reverse path, from the flow's template.
    pub fn ack_packet(&self, ack: TcpAck, now: SimTime, tmpl: &Packet) -> Packet {
        Packet { size: ack_wire_size(ack.sack.len() as u8), ecn: self.ack_ecn, sent_at: now, hdr: Header::TcpAck(ack), ..*tmpl }
    }

    /// Returns false for a duplicate of data already held.
    fn insert_ooo(&mut self, seq: u64, bytes: u64) -> bool {
        self.stamp += 1;
        let i = self.ooo.partition_point(|r| r.end < seq);
        if i < self.ooo.len() && self.ooo[i].start <= seq && seq < self.ooo[i].end {
            self.ooo[i].touched = self.stamp; // duplicate inside a range
            return false;
        }
        if i < self.ooo.len() && self.ooo[i].end == seq {
            // Extend range i to the right, maybe merging with i+1.
            self.ooo[i].end += 1;
            self.ooo[i].bytes += bytes;
            self.ooo[i].touched = self.stamp;
            if i + 1 < self.ooo.len() && self.ooo[i + 1].start == self.ooo[i].end {
                let n = self.ooo.remove(i + 1);
                self.ooo[i].end = n.end;
                self.ooo[i].bytes += n.bytes;
            }
        } else if i < self.ooo.len() && self.ooo[i].start == seq + 1 {
            self.ooo[i].start = seq;
            self.ooo[i].bytes += bytes;
            self.ooo[i].touched = self.stamp;
        } else {
            self.ooo.insert(i, Range { start: seq, end: seq + 1, bytes, touched: self.stamp });
        }
        true
    }

    fn make_ack(&mut self, _now: SimTime) -> TcpAck {
        self.unacked = 0;
        self.delack_at = SimTime::NEVER;
        let mut ack = TcpAck {
            ack: self.rcv_nxt,
            ece: self.ece,
            tsecr: self.last_ts,
            cep: self.ce_packets,
            ceb: self.ce_bytes,
            esce: self.sce && self.sce_state,
            rwnd: Some(self.window().min(u64::from(MAX_RWND)) as u32),
            tsval: _now,
            ..Default::default()
        };
        //= RFC 2883 §4: a D-SACK block comes first, then the SACK blocks.
        let mut first = 0;
        if let Some(d) = self.dsack.take().filter(|_| self.sack_blocks > 0) {
            ack.push_sack(SackBlock { start: d, end: d + 1 });
            first = 1;
        }
        // RFC 2018 §4: the first block holds the most recently received
        // segment, then the most recently reported others.
        let n = (self.sack_blocks as usize).min(self.ooo.len()).min(3 - first);
        if n > 0 {
            let mut idx: [usize; 3] = [usize::MAX; 3];
            for k in 0..n {
                let mut best: Option<usize> = None;
                for (j, r) in self.ooo.iter().enumerate() {
                    if idx[..k].contains(&j) {
                        continue;
                    }
                    if best.is_none_or(|b| r.touched > self.ooo[b].touched) {
                        best = Some(j);
                    }
                }
                idx[k] = best.unwrap();
            }
            for &j in idx.iter().take(n) {
                ack.push_sack(SackBlock { start: self.ooo[j].start, end: self.ooo[j].end });
            }
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
    fn rx() -> TcpReceiver {
        TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Classic)
    }

    /// RFC 2883: a duplicate below rcv_nxt, or inside a held range, is
    /// reported at once in the first SACK block, the SACK blocks after it.
    #[test]
    fn duplicates_are_reported_as_dsack_first() {
        let mut r = rx();
        r.on_data(&seg(0), Ecn::NotEct, SimTime::ZERO);
        r.on_data(&seg(1), Ecn::NotEct, SimTime::ZERO);
        // Below rcv_nxt (2): D-SACK [0, 1).
        let a = r.on_data(&seg(0), Ecn::NotEct, SimTime::ZERO).expect("immediate");
        assert_eq!((a.ack, a.sack.len()), (2, 1));
        assert_eq!(a.sack_block(0), SackBlock { start: 0, end: 1 });
        // Out of order, then a duplicate of it: D-SACK [5, 6) inside SACK [5, 6).
        r.on_data(&seg(5), Ecn::NotEct, SimTime::ZERO);
        let a = r.on_data(&seg(5), Ecn::NotEct, SimTime::ZERO).expect("immediate");
        assert_eq!(a.sack.len(), 2);
        assert_eq!(a.sack_block(0), SackBlock { start: 5, end: 6 });
        assert_eq!(a.sack_block(1), SackBlock { start: 5, end: 6 });
        // Reported once.
        let a = r.on_data(&seg(7), Ecn::NotEct, SimTime::ZERO).expect("ooo");
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
        assert!(r.on_data(&seg(0), Ecn::Ect0, SimTime(0)).is_none());
        let a = r.on_data(&seg(1), Ecn::Ect1, SimTime(1)).unwrap();
        assert!(a.esce && !a.ece);
        assert!(r.on_data(&seg(2), Ecn::Ect1, SimTime(2)).is_none(), "no change: delayed ACK");
        let a = r.on_data(&seg(3), Ecn::Ect1, SimTime(3)).unwrap();
        assert!(a.esce);
        // A retransmission (Not-ECT) keeps the state; ECT(0) ends it at once.
        assert!(r.on_data(&seg(4), Ecn::NotEct, SimTime(4)).is_none());
        let a = r.on_data(&seg(5), Ecn::Ect0, SimTime(5)).unwrap();
        assert!(!a.esce);
        assert_eq!(r.sce_packets, 3);
        let mut plain = rx();
        plain.on_data(&seg(0), Ecn::Ect1, SimTime(0));
        assert!(!plain.on_data(&seg(1), Ecn::Ect1, SimTime(1)).unwrap().esce);
    }

    #[test]
    fn acks_every_second_segment_and_delays_the_odd_one() {
        let mut r = rx();
        assert!(r.on_data(&seg(0), Ecn::NotEct, SimTime(0)).is_none());
        assert_eq!(r.delack_at, SimTime(40_000_000));
        let a = r.on_data(&seg(1), Ecn::NotEct, SimTime(1)).unwrap();
        assert_eq!(a.ack, 2);
        assert!(r.on_data(&seg(2), Ecn::NotEct, SimTime(2)).is_none());
        assert!(r.on_timer(SimTime(10)).is_none());
        assert_eq!(r.on_timer(SimTime(40_000_002)).unwrap().ack, 3);
    }

    #[test]
    fn out_of_order_gets_immediate_sack_most_recent_first() {
        let mut r = rx();
        r.on_data(&seg(0), Ecn::NotEct, SimTime(0));
        let a = r.on_data(&seg(2), Ecn::NotEct, SimTime(1)).unwrap();
        assert_eq!((a.ack, a.sack.len()), (1, 1));
        assert_eq!(a.sack_block(0), SackBlock { start: 2, end: 3 });
        let a = r.on_data(&seg(5), Ecn::NotEct, SimTime(2)).unwrap();
        assert_eq!(a.sack.len(), 2);
        assert_eq!(a.sack_block(0), SackBlock { start: 5, end: 6 });
        assert_eq!(a.sack_block(1), SackBlock { start: 2, end: 3 });
        let a = r.on_data(&seg(3), Ecn::NotEct, SimTime(3)).unwrap();
        assert_eq!(a.sack_block(0), SackBlock { start: 2, end: 4 });
        // Fill the hole at 1: cumulative ACK jumps over 2..4.
        let a = r.on_data(&seg(1), Ecn::NotEct, SimTime(4)).unwrap();
        assert_eq!(a.ack, 4);
        assert_eq!(a.sack.len(), 1);
        assert_eq!(r.delivered_bytes, 4 * 1448);
    }

    #[test]
    fn ece_is_sticky_until_cwr() {
        let mut r = rx();
        let a = r.on_data(&seg(0), Ecn::Ce, SimTime(0)).unwrap();
        assert!(a.ece);
        r.on_data(&seg(1), Ecn::Ect0, SimTime(1));
        let a = r.on_data(&seg(2), Ecn::Ect0, SimTime(2)).unwrap();
        assert!(a.ece, "ECE stays set until CWR");
        let cwr = TcpSeg { cwr: true, ..seg(3) };
        assert!(r.on_data(&cwr, Ecn::Ect0, SimTime(3)).is_none());
        let a = r.on_data(&seg(4), Ecn::Ect0, SimTime(4)).unwrap();
        assert!(!a.ece, "CWR ended the echo");
        assert_eq!(a.cep, 1);
    }

    /// RFC 7323 §2.3: the window field with the largest scale (14) carries at
    /// most 65 535 << 14 bytes, whatever the buffer.
    #[test]
    fn the_advertised_window_is_capped_at_the_largest_scaled_window() {
        let big = TcpConfig { quickacks: 0, rmem_default: crate::units::Bytes(8 << 30), ..Default::default() };
        let mut r = TcpReceiver::new(&big, EcnMode::Classic);
        r.on_data(&seg(0), Ecn::NotEct, SimTime::ZERO);
        let a = r.on_data(&seg(1), Ecn::NotEct, SimTime::ZERO).expect("second segment: ACK");
        assert_eq!(a.rwnd, Some(MAX_RWND));
        let a = rx().on_data(&seg(5), Ecn::NotEct, SimTime::ZERO).expect("out of order: ACK");
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
        r.on_data(&sized(0, 1000), Ecn::NotEct, SimTime(0));
        r.on_data(&sized(3, 30), Ecn::NotEct, SimTime(1));
        let a = r.on_data(&sized(2, 20), Ecn::NotEct, SimTime(2)).expect("out of order");
        assert_eq!(a.sack_list()[..1], [SackBlock { start: 2, end: 4 }], "extended to the left");
        r.on_data(&sized(6, 60), Ecn::NotEct, SimTime(3));
        r.on_data(&sized(4, 40), Ecn::NotEct, SimTime(4));
        let a = r.on_data(&sized(5, 50), Ecn::NotEct, SimTime(5)).expect("out of order");
        assert_eq!((a.sack.len(), a.sack_block(0)), (1, SackBlock { start: 2, end: 7 }), "one merged range");
        let a = r.on_data(&sized(1, 10), Ecn::NotEct, SimTime(6)).expect("hole filled");
        assert_eq!((a.ack, a.sack.len()), (7, 0));
        assert_eq!(r.delivered_bytes, 1000 + 10 + 20 + 30 + 40 + 50 + 60);
    }

    /// Linux quick-ACK mode at the start of a connection: the first
    /// `quickacks` segments are each ACKed at once, then every second one.
    #[test]
    fn the_first_segments_are_acked_at_once() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 3, ..Default::default() }, EcnMode::Off);
        let acked: Vec<bool> = (0..7).map(|q| r.on_data(&seg(q), Ecn::NotEct, SimTime(q)).is_some()).collect();
        assert_eq!(acked, [true, true, true, false, true, false, true]);
    }

    /// The ACK packet carries the ACK, from the flow's reverse template.
    #[test]
    fn an_ack_packet_carries_its_ack() {
        let mut r = rx();
        r.on_data(&seg(0), Ecn::NotEct, SimTime(0));
        let a = r.on_data(&TcpSeg { ts: SimTime(77), ..seg(1) }, Ecn::NotEct, SimTime(1)).unwrap();
        assert_eq!((a.tsecr, a.tsval), (SimTime(77), SimTime(1)), "TSecr echoes the segment's TSval (RFC 7323)");
        let tmpl = Packet { flow: crate::packet::FlowId(7), hdr: Header::Probe(Default::default()), ..Default::default() };
        let p = r.ack_packet(a, SimTime(5), &tmpl);
        assert_eq!((p.flow, p.sent_at, p.size), (crate::packet::FlowId(7), SimTime(5), ack_wire_size(0)));
        assert_eq!((p.hdr, p.ecn), (Header::TcpAck(a), Ecn::NotEct));
        // An Accurate ECN receiver's pure ACKs carry the ECT codepoint it was given.
        let mut acc = TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Accurate(Ecn::Ect1));
        let a = acc.on_data(&seg(0), Ecn::Ect1, SimTime(0)).unwrap();
        assert_eq!(acc.ack_packet(a, SimTime(1), &tmpl).ecn, Ecn::Ect1);
    }

    /// RFC 2883 §4 with RFC 2018's limit: a D-SACK block takes one of the
    /// three slots, leaving two for the most recently received ranges.
    #[test]
    fn a_dsack_leaves_room_for_two_sack_blocks() {
        let mut r = rx();
        for q in [2, 4, 6, 8] {
            r.on_data(&seg(q), Ecn::NotEct, SimTime(q));
        }
        let a = r.on_data(&seg(4), Ecn::NotEct, SimTime(9)).expect("duplicate: ACK at once");
        assert_eq!(a.sack_list(), [SackBlock { start: 4, end: 5 }, SackBlock { start: 4, end: 5 }, SackBlock { start: 8, end: 9 }]);
        let a = r.on_data(&seg(10), Ecn::NotEct, SimTime(10)).expect("out of order");
        assert_eq!(a.sack_list(), [SackBlock { start: 10, end: 11 }, SackBlock { start: 4, end: 5 }, SackBlock { start: 8, end: 9 }]);
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
            r.on_data(&stamped(seq as u64, len, tsecr), Ecn::NotEct, SimTime(now * MS));
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
        r.on_data(&stamped(0, 1448, 1), Ecn::NotEct, at(11)); // receiver RTT 10 ms; 1 448 B < space
        for q in 1..=20 {
            r.on_data(&stamped(q, 1448, 1), Ecn::NotEct, at(15)); // within the RTT
        }
        assert_eq!(r.rcvbuf, 131_072);
        let a = r.on_data(&stamped(21, 1448, 1), Ecn::NotEct, at(21)).expect("second segment");
        // copied 21 × 1448 = 30 408 > space 14 480: window 2 × 30 408 + 16 × 1448
        // = 83 984, grown by 83 984 × 15 928 / 14 480 = 92 382 twice → 268 748.
        assert_eq!(r.rcvbuf, 537_496);
        assert_eq!(a.rwnd, Some(268_748), "the ACK of that segment advertises the new window");
        for q in 22..=30 {
            r.on_data(&stamped(q, 1448, 1), Ecn::NotEct, at(25));
        }
        r.on_data(&stamped(31, 1448, 1), Ecn::NotEct, at(31));
        assert_eq!(r.rcvbuf, 537_496, "10 segments read in this RTT, fewer than the last: no change");
        let capped = TcpConfig { quickacks: 0, rmem_max: crate::units::Bytes(200_000), ..Default::default() };
        let mut c = TcpReceiver::new(&capped, EcnMode::Classic);
        for q in 0..=21 {
            c.on_data(&stamped(q, 1448, 1), Ecn::NotEct, at(if q == 0 { 11 } else if q < 21 { 15 } else { 21 }));
        }
        assert_eq!(c.rcvbuf, 200_000, "capped at tcp_rmem[2]");
    }

    /// RFC 9768 §3.2.2.5.1: an Accurate ECN receiver ACKs at once when the
    /// data's codepoint changes, and otherwise delays as usual.
    #[test]
    fn accurate_ecn_acks_at_once_on_a_codepoint_change() {
        let mut r = TcpReceiver::new(&TcpConfig { quickacks: 0, ..Default::default() }, EcnMode::Accurate(Ecn::Ect0));
        assert!(r.on_data(&seg(0), Ecn::Ect0, SimTime(0)).is_some(), "Not-ECT → ECT(0)");
        assert!(r.on_data(&seg(1), Ecn::Ect0, SimTime(1)).is_none());
        let a = r.on_data(&seg(2), Ecn::Ce, SimTime(2)).expect("ECT(0) → CE");
        assert_eq!((a.cep, a.ceb, a.ece), (1, 1448, false), "AccECN counts CE packets and bytes instead of echoing ECE");
        assert!(r.on_data(&seg(3), Ecn::Ce, SimTime(3)).is_none());
        let mut classic = rx();
        assert!(classic.on_data(&seg(0), Ecn::Ect0, SimTime(0)).is_none(), "classic ECN: no change-triggered ACK");
    }
}
