//! TCP sender: SACK scoreboard, loss detection by RACK alone as Linux's
//! default (`tcp_recovery` = 1; RFC 8985 §6.2, net/ipv4/tcp_recovery.c,
//! state in `tcp/rack.rs`: until reordering is seen the window is 0 once
//! DupThresh segments are SACKed, then min_rtt/4 × steps, with its timer),
//! reordering detection and D-SACK-driven window growth, undo of spurious
//! recoveries (Linux tcp_input.c `tcp_try_undo_recovery` with the timestamp
//! test `tcp_packet_delayed`, `tcp_try_undo_partial` when a partial ACK
//! echoes a timestamp from before the first retransmission,
//! `tcp_try_undo_dsack`, also once the recovery has ended, as
//! `undo_marker` outlives it), PRR during Recovery
//! and CWR (RFC 6937, as Linux `tcp_cwnd_reduction`), RFC 6298 RTO with
//! Linux's 200 ms floor and exponential backoff, restarted when the head
//! segment is retransmitted (`tcp_xmit_retransmit_queue`), RFC 3168 ECN (ECT(0) on
//! new data only, CWR after a reduction, at most one reduction per window),
//! and Linux internal pacing (`tcp_update_pacing_rate`: ratio × MSS × cwnd /
//! srtt, 200 % while cwnd < ssthresh/2, 120 % after, in payload bytes as
//! Linux times `skb->len`, headers not counted; a packet sent after its
//! departure time brings the next one closer by that lateness, at most half
//! its own pacing time, `tcp_update_skb_after_send`), and TSO/GSO: new data
//! leaves in GSO packets of `tcp_tso_segs` segments (tcp_output.c
//! `tcp_tso_autosize`, capped by the algorithm, e.g. Prague), back to back,
//! the last of each with PSH when it has more than one (`__tcp_transmit_skb`),
//! and `tcp_tso_should_defer` (Linux 6.18, with the min(1 ms, srtt/2) rule
//! of commit 295ce1eb) holds back a smaller one while an ACK is due soon.
//!
//! Socket buffers: new data is sent only while the write queue (every
//! segment not cumulatively ACKed, charged at its GSO skb truesize, ≈ MSS +
//! 1.4 %) fits in `sk_sndbuf`, and only inside the receiver's advertised
//! window (`tcp_snd_wnd_test`). `sk_sndbuf` starts at `tcp_wmem[1]` and
//! `tcp_sndbuf_expand` raises it, while not cwnd-limited, to 2 ×
//! max(10, cwnd, reordering + 1) × per-MSS worst-case skb memory (4352 B
//! for a 1500 B MTU on x86-64), capped at `tcp_wmem[2]`: the 4 MiB default
//! holds about 2850 segments, as the kernel's cwnd stops near 2800.
//!
//! Units: segments for windows, ns for time, bit/s for pacing, bytes for
//! buffers.
//! Deviations from Linux: no tail-loss probe, no F-RTO and no undo after a
//! timeout (`tcp_try_undo_loss`);
//! retransmissions go one segment at a time, and a GSO packet is sized when
//! sent rather than when the application wrote it; RACK's reordering timer is its own, where
//! Linux's replaces the RTO timer while armed; RACK.rtt is the RTT of the
//! most recently sent delivered segment (RFC 8985), where Linux keeps the
//! last one it processed; the
//! application always refills the send buffer at once (a bulk writer like
//! iperf3), and memory pressure (`tcp_mem`) is not modelled.

use super::accecn::AccEcnFeedback;
use super::rack::{Rack, TIMEOUT_MIN};
use super::rate::RateSampler;
use super::scoreboard::{Scoreboard, EVER_RETRANS};
use super::TcpConfig;
use crate::cc::{AckEvent, AnyCc, CaState, CongestionControl, EcnMode, TcpCcState, INFINITE_SSTHRESH};
use crate::packet::{Ecn, Header, Packet, TcpAck, TcpSeg};
use crate::units::{mul_div, Dur, Rate, SimTime};

/// Maximum RTO (TCP_RTO_MAX).
const RTO_MAX: Dur = Dur::from_secs(120);
/// Linux x86-64 sizes for `tcp_sndbuf_expand`'s worst case (one skb per
/// MSS): MAX_TCP_HEADER and the aligned `skb_shared_info` and `sk_buff`.
const MAX_TCP_HEADER: u64 = 320;
const SHINFO_SIZE: u64 = 320;
const SKB_SIZE: u64 = 256;
/// A GSO skb of the write queue: up to 64 KiB of payload plus its head,
/// `skb_shared_info` and `sk_buff` (≈ 900 B of truesize per skb).
const GSO_SKB_BYTES: u64 = 65_536;
const GSO_SKB_OVERHEAD: u64 = MAX_TCP_HEADER + SHINFO_SIZE + SKB_SIZE;
/// TSO sizing and deferral: `sk_gso_max_size` (GSO_LEGACY_MAX_SIZE),
/// `tcp_tso_rtt_log`, `tcp_tso_win_divisor`, and the longest a GSO packet
/// is held back (1 ms, NSEC_PER_MSEC in `tcp_tso_should_defer`).
const GSO_MAX_SIZE: u64 = 65_536;
const TSO_RTT_LOG: u32 = 9;
const TSO_WIN_DIVISOR: u64 = 3;
const TSO_DEFER_MAX: Dur = Dur::from_millis(1);

/// What one ACK produced, for the metrics.
#[derive(Default, Copy, Clone)]
pub struct AckOutcome {
    /// RTT sample (RFC 6298, Karn-filtered) taken from this ACK.
    pub rtt: Option<Dur>,
}

pub struct TcpSender {
    cfg: TcpConfig,
    pub cc: AnyCc,
    pub t: TcpCcState,
    pub sb: Scoreboard,
    ecn: EcnMode,
    /// Template for outgoing packets (flow, tuple, DSCP).
    tmpl: Packet,
    /// Segments the application will ever send (None = unlimited), and the
    /// payload of the last one.
    total_segs: Option<u64>,
    last_len: u32,
    /// Between the app's start and stop.
    pub active: bool,

    pub ca_state: CaState,
    /// snd_nxt when the current reduction (Recovery, CWR, Loss) began.
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    cwr_pending: bool,

    srtt: Option<Dur>,
    rttvar: Dur,
    rto: Dur,
    pub rto_at: SimTime,

    /// RACK and the reordering it has seen (tcp_recovery.c), and its
    /// reordering timer (`ICSK_TIME_REO_TIMEOUT`).
    pub rack: Rack,
    reo_at: SimTime,
    /// Undo of a spurious recovery (Linux `undo_marker`, `undo_retrans`,
    /// `retrans_stamp`, `prior_ssthresh`): set at entry, D-SACKs of the
    /// retransmissions or a timestamp echo older than the first
    /// retransmission prove the originals arrived.
    undo_marker: Option<u64>,
    undo_retrans: i64,
    retrans_stamp: SimTime,
    prior_ssthresh: u32,
    /// Reductions undone (Linux TCPFULLUNDO + TCPDSACKUNDO +
    /// TCPPARTIALUNDO).
    pub undos: u64,
    /// Of them, undone on a partial ACK (TCPPARTIALUNDO).
    pub partial_undos: u64,
    /// This ACK proved the hole filled by a delayed original while a
    /// retransmission is still out: it marks nothing lost and sends no
    /// retransmission (`tcp_try_undo_partial` returning true).
    hold_retrans: bool,

    pub pacing_rate: Rate,
    next_send: SimTime,
    /// How late the current GSO packet left, still to pay back from its
    /// segments' pacing times.
    pace_credit: Dur,
    /// Set when sending stopped only because of pacing.
    pace_blocked: bool,
    /// Set when sending stopped only because of the host's send jitter.
    jitter_blocked: bool,
    /// Linux `tcp_wstamp_ns` of an unpaced flow: when data last left.
    last_xmit: SimTime,
    /// Linux `tp->cwnd_usage_seq`: `tcp_cwnd_validate` forgets whether
    /// cwnd limited once this is ACKed.
    cwnd_usage_seq: u64,
    last_cc_event: SimTime,

    pub retransmits: u64,
    pub rto_count: u64,
    /// Window reductions for ECN (entries to CWR).
    pub ecn_reductions: u64,
    /// What this sender has read of the receiver's AccECN counters.
    accecn: AccEcnFeedback,
    /// The algorithm sets cwnd itself (`cong_control` returned true).
    cc_owns_cwnd: bool,
    /// Delivered and CE-marked delivered segments, for the CE-fraction series.
    pub ce_delivered: u64,
    /// Delivery-rate sampling (tcp_rate.c).
    pub rate: RateSampler,
    /// `sk_sndbuf`, bytes; write-queue truesize charged per segment; and
    /// `tcp_sndbuf_expand`'s per-MSS memory.
    pub sndbuf: u64,
    seg_truesize: u64,
    per_mss: u64,
    /// Right edge of the receiver's window (`snd_una + snd_wnd`), segments.
    snd_wnd_end: u64,
    /// TSval of the newest ACK (`ts_recent`), echoed on data.
    ts_recent: SimTime,
    /// Random stream for `tx_jitter` (None: no jitter), the time of the
    /// last ACK, and the departure time drawn for the next packet.
    jitter_rng: Option<crate::rng::SimRng>,
    jitter_base: SimTime,
    jitter_target: SimTime,
}

/// Send a GSO packet's held last segment, with PSH when the packet has
/// more than one (Linux `__tcp_transmit_skb` forces PSH on every GSO packet
/// so that the receiver's GRO flushes it; a single segment keeps its own).
fn end_gso(held: &mut Option<Packet>, segs: u32, out: &mut impl FnMut(Packet)) {
    if let Some(mut p) = held.take() {
        if let Header::TcpData(s) = &mut p.hdr {
            s.psh |= segs > 1;
        }
        out(p);
    }
}

impl TcpSender {
    /// `syn_rtt` is the RTT the handshake would have measured (Linux seeds
    /// srtt, rttvar, RTO and min_rtt from the SYN/SYN-ACK exchange); the
    /// handshake itself is not simulated.
    pub fn new(cfg: TcpConfig, cc: AnyCc, ecn: EcnMode, tmpl: Packet, bytes: Option<u64>, now: SimTime, syn_rtt: Option<Dur>) -> Self {
        let mss = cfg.mss();
        let (total_segs, last_len) = match bytes {
            None => (None, mss),
            Some(b) => {
                let n = b.div_ceil(u64::from(mss)).max(1);
                let rem = (b - (n - 1) * u64::from(mss)) as u32;
                (Some(n), rem.max(1))
            }
        };
        let t = TcpCcState::new(now, mss, cfg.init_cwnd);
        let mut s = TcpSender {
            rto: cfg.init_rto,
            cfg,
            cc,
            t,
            sb: Scoreboard::default(),
            ecn,
            tmpl,
            total_segs,
            last_len,
            active: false,
            ca_state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            cwr_pending: false,
            srtt: None,
            rttvar: Dur::ZERO,
            rto_at: SimTime::NEVER,
            rack: Rack::default(),
            reo_at: SimTime::NEVER,
            undo_marker: None,
            undo_retrans: 0,
            retrans_stamp: SimTime::NEVER,
            prior_ssthresh: 0,
            undos: 0,
            partial_undos: 0,
            hold_retrans: false,
            pacing_rate: Rate::UNLIMITED,
            next_send: SimTime::ZERO,
            pace_credit: Dur::ZERO,
            pace_blocked: false,
            jitter_blocked: false,
            last_xmit: SimTime::ZERO,
            cwnd_usage_seq: 0,
            last_cc_event: now,
            retransmits: 0,
            rto_count: 0,
            ecn_reductions: 0,
            accecn: AccEcnFeedback::default(),
            cc_owns_cwnd: false,
            ce_delivered: 0,
            rate: RateSampler::default(),
            sndbuf: 0,
            seg_truesize: 0,
            per_mss: 0,
            snd_wnd_end: 0,
            ts_recent: SimTime::ZERO,
            jitter_rng: None,
            jitter_base: SimTime::ZERO,
            jitter_target: SimTime::NEVER,
        };
        let mss64 = u64::from(mss);
        s.sndbuf = s.cfg.wmem_default.0;
        s.seg_truesize = mss64 + (GSO_SKB_OVERHEAD * mss64).div_ceil(GSO_SKB_BYTES);
        // max(mss_clamp, mss_cache): the MSS option is MTU − 40 (no timestamps).
        s.per_mss = (mss64 + 12 + MAX_TCP_HEADER + SHINFO_SIZE).next_power_of_two() + SKB_SIZE;
        //= Linux tcp_init_buffer_space: expand once at establishment; the
        // SYN-ACK's window is tcp_rmem[1]'s.
        s.sndbuf_expand();
        s.snd_wnd_end = s.cfg.rmem_default.0 / 2 / mss64;
        s.t.paced = s.pacing_on();
        if let Some(r) = syn_rtt {
            s.update_rtt(r);
            s.t.min_rtt = r;
        }
        s
    }

    /// Give the sender its random stream; used only with host timing noise.
    pub fn set_rng(&mut self, rng: crate::rng::SimRng) {
        if self.cfg.host_noise().is_on() {
            self.jitter_rng = Some(rng);
        }
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    pub fn ecn_mode(&self) -> EcnMode {
        self.ecn
    }

    /// Earliest time this sender needs to be woken (RTO, RACK's
    /// reordering timer or pacing).
    pub fn next_timer(&self) -> SimTime {
        let pace = if self.pace_blocked { self.next_send } else { SimTime::NEVER };
        let jitter = if self.jitter_blocked { self.jitter_target } else { SimTime::NEVER };
        self.rto_at.min(self.reo_at).min(pace).min(jitter)
    }

    /// All data the application will send has been delivered.
    pub fn finished(&self) -> bool {
        matches!(self.total_segs, Some(n) if self.sb.una >= n)
    }

    fn has_new_data(&self) -> bool {
        self.active && self.total_segs.is_none_or(|n| self.sb.nxt() < n)
    }

    /// Another new segment fits the send buffer (`sk_stream_memory_free`:
    /// the application could write it) and the receive window
    /// (`tcp_snd_wnd_test`).
    fn buffers_allow_new(&self) -> bool {
        u64::from(self.sb.packets_out()) * self.seg_truesize < self.sndbuf && self.sb.nxt() < self.snd_wnd_end
    }

    /// Linux `tcp_sndbuf_expand`.
    fn sndbuf_expand(&mut self) {
        let nr_segs = u64::from(self.t.cwnd).max(10).max(u64::from(self.rack.reordering) + 1);
        let sndmem = 2 * nr_segs * self.per_mss;
        if self.sndbuf < sndmem {
            self.sndbuf = sndmem.min(self.cfg.wmem_max.0).max(self.sndbuf);
        }
    }

    fn seg_len(&self, seq: u64) -> u32 {
        match self.total_segs {
            Some(n) if seq + 1 == n => self.last_len,
            _ => self.t.mss,
        }
    }

    fn in_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Recovery | CaState::Cwr)
    }

    /// The application starts (or resumes) sending.
    pub fn start(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.active = true;
        self.jitter_base = now;
        self.try_send(now, out);
    }

    /// The application stops offering new data.
    pub fn stop(&mut self) {
        self.active = false;
    }

    /// A timer fired: retransmission timeout, RACK's reordering timer or
    /// pacing release.
    pub fn on_timer(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.t.now = now;
        if now >= self.reo_at {
            self.reo_at = SimTime::NEVER;
            self.rack_reo_timeout(now);
        }
        if now >= self.rto_at {
            self.rto_at = SimTime::NEVER;
            if self.sb.packets_out() > 0 {
                self.on_rto(now);
            }
        }
        self.try_send(now, out);
    }

    /// Linux `tcp_rack_reo_timeout`: segments that waited out the
    /// reordering window are lost; start Recovery if not in it.
    fn rack_reo_timeout(&mut self, now: SimTime) {
        let newly = self.detect_losses(now);
        if newly == 0 {
            return;
        }
        self.t.lost += u64::from(newly);
        self.sync_cc_view();
        if self.ca_state != CaState::Recovery && self.ca_state != CaState::Loss {
            self.enter_recovery();
            if !self.cc_owns_cwnd {
                self.prr(1, false, 0);
            }
        }
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rto_count += 1;
        self.undo_marker = None;
        self.reo_at = SimTime::NEVER;
        //= RFC 5681 §3.1 eq. (4) on timeout; Linux tcp_enter_loss only
        // recomputes ssthresh when not already reducing.
        if matches!(self.ca_state, CaState::Open | CaState::Disorder) {
            self.t.ssthresh = self.cc.ssthresh(&self.t);
        }
        self.t.cwnd = 1;
        self.t.cwnd_cnt = 0;
        self.ca_state = CaState::Loss;
        self.high_seq = self.sb.nxt();
        self.cc.on_state(&mut self.t, CaState::Loss);
        let lost_before = self.sb.lost_out;
        self.sb.mark_all_lost();
        self.t.lost += u64::from(self.sb.lost_out.saturating_sub(lost_before));
        //= RFC 6298 §5.5: back off the timer.
        self.rto = (self.rto * 2).min(RTO_MAX);
        self.rto_at = now + self.rto;
        self.last_cc_event = now;
    }

    /// Process an ACK. Packets to transmit are handed to `out`.
    pub fn on_ack(&mut self, ack: &TcpAck, now: SimTime, out: &mut impl FnMut(Packet)) -> AckOutcome {
        self.t.now = now;
        let mut res = AckOutcome::default();
        if ack.ack > self.sb.nxt() {
            return res; // Acknowledges data never sent: ignore.
        }
        //= Linux tcp_ack: an ACK below snd_una is older than one already
        // processed (reordered on the way back): `old_ack` tags its SACK
        // blocks and runs loss recovery, but the ACK feeds no RTT, window,
        // timestamp, ECN or congestion-control input.
        let old = ack.ack < self.sb.una;
        let una_advanced = ack.ack > self.sb.una;
        // FLAG_TS_PROGRESS: a TSval (1 ms clock) newer than any before.
        let ts_progress = ack.tsval.0 / 1_000_000 > self.ts_recent.0 / 1_000_000;
        if !old {
            self.ts_recent = self.ts_recent.max(ack.tsval);
            self.snd_wnd_end = match ack.rwnd {
                // The receiver never shrinks its window's right edge.
                Some(w) => self.snd_wnd_end.max(ack.ack + u64::from(w) / u64::from(self.t.mss)),
                // An ACK without a window (a peer that does not limit) lifts it.
                None => u64::MAX,
            };
        }
        let mut delivered: u32 = 0;
        let mut delivered_bytes: u64 = 0;
        // Linux: srtt from the oldest newly ACKed never-retransmitted
        // segment (seq_rtt), the CC hook from the newest (ca_rtt).
        let mut oldest: Option<SimTime> = None;
        let mut newest: Option<SimTime> = None;
        // Lowest never-retransmitted segment delivered, against the highest
        // SACKed sequence before this ACK (tcp_check_sack_reordering).
        let mut low = u64::MAX;
        let prior_fack = self.fack();
        let prior_una = self.sb.una;
        //= RFC 2883 §4: a first SACK block below the cumulative ACK, or
        // inside the second block, reports a duplicate (D-SACK).
        let blocks = ack.sack_list();
        let sacks = &blocks[..ack.sack.len()];
        let dsack = sacks.first().filter(|d| d.start < ack.ack || sacks.get(1).is_some_and(|b| d.start >= b.start && d.end <= b.end));
        if let Some(d) = dsack {
            self.rack.dsack_seen = true;
            // Linux tcp_check_dsack: a duplicate of data sent in this
            // recovery episode answers one of its retransmissions.
            if self.undo_retrans > 0 && self.undo_marker.is_some_and(|m| d.end > m) {
                self.undo_retrans = (self.undo_retrans - (d.end - d.start) as i64).max(0);
            }
        }
        self.rate.begin_ack(self.sb.in_flight());
        {
            let rate = &mut self.rate;
            let rack = &mut self.rack;
            let min_rtt = self.t.min_rtt;
            let mut on_delivered = |seq: u64, s: &super::scoreboard::Seg| {
                rate.on_delivered(seq, s);
                delivered += 1;
                delivered_bytes += u64::from(s.len);
                let ever = s.flags & EVER_RETRANS != 0;
                if !ever {
                    oldest = Some(oldest.map_or(s.sent_at, |o: SimTime| o.min(s.sent_at)));
                    newest = Some(newest.map_or(s.sent_at, |o: SimTime| o.max(s.sent_at)));
                    low = low.min(seq);
                }
                rack.advance(seq, s.sent_at, ever, now, min_rtt);
            };
            self.sb.advance(ack.ack, &mut on_delivered);
            for b in sacks.iter().skip(usize::from(dsack.is_some())) {
                self.sb.sack(b.start, b.end, &mut on_delivered);
            }
        }
        // The hooks below see the scoreboard after this ACK.
        self.sync_cc_view();
        if low < prior_fack {
            let fack = self.fack();
            self.rack.check_reordering(low, prior_fack, fack);
        }
        self.t.delivered += u64::from(delivered);
        if old {
            self.old_ack(now, out);
            return res;
        }
        // CE feedback: Accurate ECN's ACE field and option, read as Linux
        // does (`tcp/accecn.rs`); a classic (RFC 3168) flow only sees ECE,
        // and Linux counts all of an ECE ACK's delivered packets as CE-marked.
        let acked_ce = match self.ecn {
            EcnMode::Accurate(_) => self.accecn.process(ack, delivered, delivered_bytes, ts_progress, self.t.mss),
            _ if ack.ece => delivered,
            _ => 0,
        };
        self.ce_delivered += u64::from(acked_ce);
        self.t.delivered_ce += u64::from(acked_ce);
        self.rack.update_reo_wnd(self.rate.prior_delivered(), self.t.delivered);
        // SCE echo: the segments an ESCE ACK delivers arrived SCE-marked.
        self.t.acked_sce = if ack.esce { delivered } else { 0 };
        self.t.delivered_sce += u64::from(self.t.acked_sce);

        if let Some(sent) = oldest {
            let r = now.since(sent);
            self.update_rtt(r);
            res.rtt = Some(r);
        }
        let mut ca_rtt = None;
        if let Some(sent) = newest {
            let r = now.since(sent);
            self.t.min_rtt = self.t.min_rtt.min(r);
            self.cc.on_rtt(&mut self.t, r);
            ca_rtt = Some(r);
        }
        if una_advanced {
            //= RFC 6298 §5.3: restart the timer when new data is ACKed
            // (Linux tcp_rearm_rto); the backoff ends with a fresh sample.
            self.rto_at = if self.sb.packets_out() > 0 { now + self.rto } else { SimTime::NEVER };
        }
        let ev = AckEvent { acked: delivered, acked_ce, ece: ack.ece, esce: ack.esce };
        self.cc.on_ack_event(&mut self.t, &ev);

        //= Linux tcp_fastretrans_alert, state E: a partial ACK in Recovery
        // (one that does not end it) may prove the hole was filled by a
        // delayed original.
        self.hold_retrans = self.ca_state == CaState::Recovery
            && una_advanced
            && self.sb.una < self.high_seq
            && self.try_undo_partial(prior_una, ack.tsecr);
        //= Linux tcp_fastretrans_alert: D-SACK undo in Recovery, and in
        // Open/Disorder for a recovery that ended before the D-SACKs came.
        if !self.hold_retrans && matches!(self.ca_state, CaState::Recovery | CaState::Open | CaState::Disorder) {
            self.try_undo_dsack();
        }
        let newly_lost = if self.rack.advanced && !self.hold_retrans { self.detect_losses(now) } else { 0 };
        self.t.lost += u64::from(newly_lost);
        self.sync_cc_view();
        self.rate.generate(&mut self.t, delivered, newly_lost, ca_rtt, now);
        self.update_state(&ev, una_advanced, newly_lost, ack.tsecr);

        self.sync_cc_view();
        //= Linux tcp_new_space / tcp_should_expand_sndbuf: grow the send
        // buffer when the ACK freed space and cwnd is not what limits.
        if delivered > 0 && self.sb.in_flight() < self.t.cwnd {
            self.sndbuf_expand();
        }
        self.update_pacing_rate();
        self.jitter_base = now;
        self.try_send(now, out);
        self.hold_retrans = false;
        res
    }

    /// The rest of Linux's `old_ack` path (`tcp_fastretrans_alert` and
    /// `tcp_xmit_recovery`): D-SACK undo, RACK loss detection and entry to
    /// Recovery; no window change until a current ACK arrives.
    fn old_ack(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        if matches!(self.ca_state, CaState::Recovery | CaState::Open | CaState::Disorder) {
            self.try_undo_dsack();
        }
        let newly_lost = if self.rack.advanced { self.detect_losses(now) } else { 0 };
        self.t.lost += u64::from(newly_lost);
        if self.sb.lost_out > 0 && !matches!(self.ca_state, CaState::Recovery | CaState::Loss) {
            self.enter_recovery();
        }
        self.sync_cc_view();
        self.try_send(now, out);
    }

    /// Linux `tcp_cwnd_validate` at the end of each transmit attempt: a
    /// cwnd-limited attempt sets the flag at once; it is cleared only by
    /// an attempt after the window it covered was ACKed, and meanwhile
    /// the largest `packets_out` is kept for slow start's test.
    fn cwnd_validate(&mut self, limited: bool) {
        let packets_out = self.sb.packets_out();
        if self.sb.una >= self.cwnd_usage_seq
            || limited
            || (!self.t.cwnd_limited && packets_out > self.t.max_packets_out)
        {
            self.t.cwnd_limited = limited;
            self.t.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.sb.nxt();
        }
    }

    //= RFC 6298 §2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|,
    // SRTT <- 7/8 SRTT + 1/8 R'; RTO = SRTT + max(min_rto, 4 RTTVAR), the
    // Linux form of the floor (tcp_set_rto with rttvar >= tcp_rto_min).
    fn update_rtt(&mut self, r: Dur) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = if s > r { s - r } else { r - s };
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        let srtt = self.srtt.unwrap();
        self.t.srtt = srtt;
        self.rto = (srtt + (self.rttvar * 4).max(self.cfg.min_rto)).min(RTO_MAX);
    }

    /// Highest SACKed sequence (`tcp_highest_sack_seq`), or snd_una.
    fn fack(&self) -> u64 {
        if self.sb.sacked_out > 0 {
            self.sb.high_sacked
        } else {
            self.sb.una
        }
    }

    /// RACK loss detection (Linux `tcp_rack_detect_loss`, RFC 8985 §6.2):
    /// a segment sent before the most recently delivered one and
    /// unacknowledged for longer than RACK.rtt + reo_wnd is lost; this also
    /// finds lost retransmissions. Linux's default (`tcp_recovery` = 1)
    /// marks losses by RACK alone: until reordering is seen, reo_wnd is 0
    /// once DupThresh segments are SACKed, which is RFC 6675's rule in the
    /// time domain. Segments still inside the window arm the reordering
    /// timer. Returns the count newly marked.
    fn detect_losses(&mut self, now: SimTime) -> u32 {
        self.rack.advanced = false;
        if self.sb.sacked_out == 0 {
            return 0;
        }
        let in_recovery = matches!(self.ca_state, CaState::Recovery | CaState::Loss);
        let srtt = self.srtt.unwrap_or(Dur::MAX);
        let reo_wnd = self.rack.reo_wnd(in_recovery, self.sb.sacked_out, self.t.min_rtt, srtt);
        let deadline_slack = self.rack.rtt + reo_wnd;
        let mut wait = Dur::ZERO;
        // Only segments below the highest SACKed one, and sent no later
        // than RACK's segment (the scan stops after those).
        let end = self.sb.high_sacked.min(self.sb.nxt());
        let rack = &self.rack;
        let newly = self.sb.scan_sent(rack.xmit, end, |seq, s| {
            if seq >= end || rack.sent_after(s.sent_at, seq + 1) {
                return false;
            }
            let waited = now.since(s.sent_at);
            if waited < deadline_slack {
                wait = wait.max(deadline_slack - waited);
            }
            waited >= deadline_slack
        });
        if wait > Dur::ZERO {
            //= Linux tcp_rack_mark_lost: usecs_to_jiffies(timeout) + TCP_TIMEOUT_MIN.
            let jiffy = Dur::from_millis(1).nanos();
            self.reo_at = now + Dur(wait.nanos().div_ceil(jiffy) * jiffy) + TIMEOUT_MIN;
        }
        newly
    }

    /// Linux `tcp_enter_recovery`: start the undo record; remember the
    /// ssthresh to restore unless already reducing (CWR).
    fn enter_recovery(&mut self) {
        self.undo_marker = Some(self.sb.una);
        self.undo_retrans = if self.sb.retrans_out > 0 { i64::from(self.sb.retrans_out) } else { -1 };
        self.prior_ssthresh = 0;
        if self.ca_state == CaState::Cwr {
            // Already reducing for ECN: keep ssthresh, switch to Recovery.
            self.ca_state = CaState::Recovery;
            self.high_seq = self.sb.nxt();
            self.cc.on_state(&mut self.t, CaState::Recovery);
        } else {
            //= Linux tcp_current_ssthresh outside a reduction.
            self.prior_ssthresh = self.t.ssthresh.max(self.t.cwnd / 2 + self.t.cwnd / 4);
            self.enter_reduction(CaState::Recovery);
        }
    }

    /// Linux `tcp_undo_cwnd_reduction`: the reduction was spurious. Every
    /// algorithm is asked, those that own cwnd too (Prague restores its
    /// pre-loss window and rate, BBR restarts its full-pipe search), and
    /// ssthresh returns to the prior one: undone in slow start, slow start
    /// goes on.
    fn undo_reduction(&mut self) {
        if self.prior_ssthresh != 0 {
            self.t.cwnd = self.cc.undo_cwnd(&self.t, self.prior_cwnd);
            self.t.ssthresh = self.t.ssthresh.max(self.prior_ssthresh);
        }
        self.undo_marker = None;
        self.undos += 1;
        self.rack.advanced = true;
    }

    /// Linux `tcp_try_undo_dsack`: D-SACKs answered every retransmission.
    fn try_undo_dsack(&mut self) {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist = (self.rack.reo_wnd_persist + 1).min(super::rack::RECOVERY_THRESH);
            self.undo_reduction();
            self.try_to_open();
        }
    }

    /// Linux `tcp_packet_delayed`: the ACK echoes a timestamp (1 ms TSval
    /// clock) from before the first retransmission; a zero TSecr carries
    /// no timestamp, as in Linux.
    fn packet_delayed(&self, tsecr: SimTime) -> bool {
        let ms = |t: SimTime| t.0 / 1_000_000;
        self.retrans_stamp != SimTime::NEVER && tsecr != SimTime::ZERO && ms(tsecr) < ms(self.retrans_stamp)
    }

    /// Linux `tcp_may_undo` at the end of Recovery: no retransmission was
    /// needed (all D-SACKed), or the originals arrived (`packet_delayed`).
    fn may_undo(&self, tsecr: SimTime) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed(tsecr))
    }

    /// Linux `tcp_any_retrans_done`: a retransmission is in flight, or the
    /// head segment was ever retransmitted.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || self.sb.segs.front().is_some_and(|s| s.flags & EVER_RETRANS != 0)
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK in Recovery echoes a
    /// timestamp from before the first retransmission, so the hole it
    /// filled was filled by the delayed original: the path reorders more
    /// than assumed (`tcp_check_sack_reordering` from the prior snd_una).
    /// With a retransmission still out, the ACK only holds back loss
    /// marking and retransmission (returns true); otherwise the reduction
    /// is undone, every loss mark cleared for RACK to re-examine, and the
    /// flow leaves Recovery (`tcp_try_keep_open`). Undone this early, no
    /// congestion-avoidance ACK has run, so CUBIC's epoch has not started.
    fn try_undo_partial(&mut self, prior_una: u64, tsecr: SimTime) -> bool {
        if self.undo_marker.is_none() || !self.packet_delayed(tsecr) {
            return false;
        }
        let fack = self.fack();
        self.rack.check_reordering(prior_una, fack, fack);
        if self.sb.retrans_out > 0 {
            return true;
        }
        self.sb.unmark_all_lost();
        self.undo_reduction();
        self.partial_undos += 1;
        self.try_to_open();
        false
    }

    /// Linux `tcp_try_to_open` (CWR keeps its own exit): the first
    /// retransmission's time is forgotten once none is left at the head or
    /// in flight, and `tcp_try_keep_open` chooses Disorder while anything
    /// is SACKed, marked lost or retransmitted there, else Open.
    fn try_to_open(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp = SimTime::NEVER;
        }
        let left_out = self.sb.sacked_out + self.sb.lost_out > 0;
        let state = if left_out || self.any_retrans_done() { CaState::Disorder } else { CaState::Open };
        if self.ca_state != state {
            self.ca_state = state;
            self.cc.on_state(&mut self.t, state);
            self.high_seq = self.sb.nxt();
        }
    }

    fn enter_reduction(&mut self, state: CaState) {
        self.high_seq = self.sb.nxt();
        self.prior_cwnd = self.t.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.t.ssthresh = self.cc.ssthresh(&self.t);
        self.ca_state = state;
        self.cc.on_state(&mut self.t, state);
        self.last_cc_event = self.t.now;
    }

    fn end_reduction(&mut self) {
        if self.t.ssthresh < INFINITE_SSTHRESH && !self.cc_owns_cwnd {
            self.t.cwnd = self.t.ssthresh.max(1);
        }
        self.t.cwnd_cnt = 0;
        self.ca_state = CaState::Open;
        self.cc.on_state(&mut self.t, CaState::Open);
        // Linux keeps undo_marker: D-SACKs arriving later may still undo.
        self.retrans_stamp = SimTime::NEVER;
    }

    fn update_state(&mut self, ev: &AckEvent, una_advanced: bool, newly_lost: u32, tsecr: SimTime) {
        let delivered = ev.acked;
        // Leave a finished reduction (Linux tcp_fastretrans_alert, state
        // D): the whole window present at entry is ACKed. CWR is held until
        // something *above* high_seq is ACKed (`snd_una != high_seq`): the
        // ACK of high_seq itself can still carry the ECE that started it,
        // and must not start a second reduction.
        let done = match self.ca_state {
            CaState::Cwr => self.sb.una > self.high_seq,
            _ => self.sb.una >= self.high_seq,
        };
        if self.ca_state != CaState::Open && self.ca_state != CaState::Disorder && done {
            if self.ca_state == CaState::Recovery && self.may_undo(tsecr) {
                //= Linux tcp_try_undo_recovery: the originals arrived.
                self.undo_reduction();
                self.ca_state = CaState::Open;
                self.cc.on_state(&mut self.t, CaState::Open);
                self.retrans_stamp = SimTime::NEVER;
            } else if self.in_reduction() {
                if self.ca_state == CaState::Recovery {
                    self.rack.reo_wnd_persist = self.rack.reo_wnd_persist.saturating_sub(1);
                }
                self.end_reduction();
            } else {
                self.ca_state = CaState::Open;
                self.cc.on_state(&mut self.t, CaState::Open);
                self.retrans_stamp = SimTime::NEVER;
            }
        }
        if self.sb.lost_out > 0 && !matches!(self.ca_state, CaState::Recovery | CaState::Loss) {
            self.enter_recovery();
        }
        //= RFC 3168 §6.1.2: react to ECE at most once per window of data.
        // With Accurate ECN a rising CE counter does the same (Linux enters
        // CWR; DCTCP/Prague size the cut from their own α).
        let congestion = match self.ecn {
            EcnMode::Classic => ev.ece,
            EcnMode::Accurate(_) => ev.acked_ce > 0,
            EcnMode::Off => false,
        };
        if congestion && matches!(self.ca_state, CaState::Open | CaState::Disorder) {
            //= Linux tcp_enter_cwr: an ECN reduction is never undone.
            self.undo_marker = None;
            self.enter_reduction(CaState::Cwr);
            self.ecn_reductions += 1;
            self.cwr_pending = self.ecn == EcnMode::Classic;
        }
        //= Linux tcp_fastretrans_alert: an ACK in Disorder, or one in Open
        // that SACKs, goes through tcp_try_to_open.
        if self.ca_state == CaState::Disorder || (self.ca_state == CaState::Open && self.sb.sacked_out > 0) {
            self.try_to_open();
        }
        if self.cc.cong_control(&mut self.t, ev) {
            self.cc_owns_cwnd = true;
        } else if self.in_reduction() {
            self.prr(delivered, una_advanced, newly_lost);
        } else if delivered > 0 && self.may_raise_cwnd(una_advanced) {
            self.cc.cong_avoid(&mut self.t, delivered);
        }
    }

    //= Linux tcp_may_raise_cwnd (tcp_input.c): while the reordering degree
    // is still the default `tcp_reordering`, the window grows only on an ACK
    // that advances snd_una (RFC 5681's in-order delivery), by what that ACK
    // delivered; a segment SACKed on an earlier ACK never counts. Once the
    // path is known to reorder more, any forward progress grows it.
    fn may_raise_cwnd(&self, una_advanced: bool) -> bool {
        una_advanced || self.rack.reordering > super::rack::REORDERING_INIT
    }

    //= RFC 6937 §3 (Linux tcp_cwnd_reduction): proportional rate reduction
    // while pipe > ssthresh, slow-start reduction bound below it.
    fn prr(&mut self, delivered: u32, una_advanced: bool, newly_lost: u32) {
        // Linux returns when nothing was newly ACKed or SACKed.
        if delivered == 0 {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = i64::from(self.sb.in_flight());
        let ssthresh = i64::from(self.t.ssthresh);
        let delta = ssthresh - pipe;
        let prr_delivered = i64::from(self.prr_delivered);
        let prr_out = i64::from(self.prr_out);
        let mut sndcnt = if delta < 0 {
            let prior = i64::from(self.prior_cwnd.max(1));
            (prr_delivered * ssthresh + prior - 1) / prior - prr_out
        } else {
            let mut s = (prr_delivered - prr_out).max(i64::from(delivered));
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force the fast retransmit when entering recovery.
        sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.t.cwnd = (pipe + sndcnt).max(1) as u32;
    }

    /// Pacing applies: asked for in the config, or set by the algorithm.
    fn pacing_on(&self) -> bool {
        self.cfg.pacing || self.cc.pacing_rate(&self.t).is_some()
    }

    /// Linux `tcp_update_pacing_rate`, unless the algorithm sets the rate.
    /// Like Linux (and `ss`), the rate is computed even when pacing is not
    /// enforced.
    fn update_pacing_rate(&mut self) {
        if let Some(r) = self.cc.pacing_rate(&self.t) {
            self.pacing_rate = r;
            return;
        }
        let Some(srtt) = self.srtt else { return };
        if srtt == Dur::ZERO {
            return;
        }
        let ratio = if self.t.cwnd < self.t.ssthresh / 2 { self.cfg.pacing_ss_ratio } else { self.cfg.pacing_ca_ratio };
        let w = u64::from(self.t.cwnd.max(self.sb.packets_out()));
        // mss·w·ratio/100 bytes per srtt, per second: ratio·10⁹/100 = ratio·10⁷ exactly.
        let bytes_per_s = mul_div(u64::from(self.t.mss) * w, u64::from(ratio) * 10_000_000, srtt.nanos());
        self.pacing_rate = Rate((bytes_per_s * 8).min(u128::from(u64::MAX)) as u64);
    }

    /// Linux `tcp_tso_segs` / `tcp_tso_autosize`: segments per GSO packet,
    /// about 1 ms of data at the pacing rate (`sk_pacing_shift` 10), plus
    /// `gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log)` on short paths, at
    /// most 64 KiB, at least the algorithm's `min_tso_segs`, at most its
    /// own cap (Prague).
    pub fn tso_segs(&self) -> u32 {
        // Before the first ACK the rate is unset (`Rate::UNLIMITED`, 0) and
        // the minimum applies; the initial window leaves at once anyway.
        let mut bytes = (self.pacing_rate.0 / 8) >> 10;
        let r = (self.t.min_rtt.nanos() / 1000) >> TSO_RTT_LOG;
        if r < 32 {
            bytes += GSO_MAX_SIZE >> r;
        }
        let segs = (bytes.min(GSO_MAX_SIZE) / u64::from(self.t.mss)).max(u64::from(self.cc.min_tso_segs())) as u32;
        self.cc.max_tso_segs(&self.t).map_or(segs, |cap| segs.min(cap))
    }

    /// Linux 6.18 `tcp_tso_should_defer`: hold back new data that would go
    /// as a GSO packet smaller than `goal` while an ACK that frees more of
    /// the window is due soon, so that a bulk flow leaves in ~1 ms bursts.
    /// `Some(true)` defers for cwnd (`is_cwnd_limited`), `Some(false)` for
    /// the receive window.
    fn tso_deferral(&self, now: SimTime, goal: u32) -> Option<bool> {
        if matches!(self.ca_state, CaState::Recovery | CaState::Loss) {
            return None;
        }
        // Only if the last write was recent (tcp_wstamp_ns is the paced
        // departure time, which may lie ahead).
        let wstamp = if self.pacing_on() { self.next_send } else { self.last_xmit };
        if now > wstamp + TSO_DEFER_MAX {
            return None;
        }
        let nxt = self.sb.nxt();
        let send_win = self.snd_wnd_end.saturating_sub(nxt);
        let cong_win = u64::from(self.t.cwnd - self.sb.in_flight());
        let limit = send_win.min(cong_win);
        if limit >= u64::from(goal) {
            return None;
        }
        // At least 1/tcp_tso_win_divisor of the window can go.
        let mss = u64::from(self.t.mss);
        let chunk = self.snd_wnd_end.saturating_sub(self.sb.una).min(u64::from(self.t.cwnd)) * mss / TSO_WIN_DIVISOR;
        if limit * mss >= chunk {
            return None;
        }
        // Not if the next ACK is further away than min(1 ms, srtt/2): the
        // oldest unacknowledged segment is ACKed about srtt after it left.
        if self.sb.packets_out() == 0 {
            return None;
        }
        let srtt = self.srtt.unwrap_or(Dur::ZERO);
        let expected_ack = self.sb.get(self.sb.una).sent_at + srtt;
        if expected_ack > now + Dur(srtt.nanos() / 2).min(TSO_DEFER_MAX) {
            return None;
        }
        // The last data of a finite transfer (FIN) is not held.
        self.total_segs.is_none_or(|n| n - nxt > limit).then_some(cong_win < send_win)
    }

    /// Send what cwnd, pacing and the application allow (Linux
    /// `tcp_write_xmit`): retransmissions of lost segments first, then new
    /// data, with TSO a GSO packet of up to `tso_segs` segments at a time.
    pub fn try_send(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.pace_blocked = false;
        self.jitter_blocked = false;
        let mut sent = false;
        let mut deferred = false;
        // Segments of the current GSO packet still to go: they leave
        // together, whatever pacing and jitter say.
        let mut burst = 0u32;
        // The GSO packet's last segment so far, held back until the packet
        // is complete, and how many segments it has.
        let mut held: Option<Packet> = None;
        let mut gso_len = 0u32;
        loop {
            if self.sb.in_flight() >= self.t.cwnd {
                break;
            }
            let lost = if self.hold_retrans { None } else { self.sb.next_lost() };
            if lost.is_none() && !(self.has_new_data() && self.buffers_allow_new()) {
                if !self.has_new_data() {
                    RateSampler::check_app_limited(&mut self.t, self.sb.in_flight(), self.sb.lost_out, self.sb.retrans_out);
                }
                break;
            }
            if burst > 0 && lost.is_none() {
                burst -= 1;
            } else {
                burst = 0;
                end_gso(&mut held, gso_len, out);
                gso_len = 0;
                if !self.may_send_at(now) {
                    break;
                }
                if self.cfg.tso && lost.is_none() {
                    let goal = self.tso_segs();
                    if goal > 1 {
                        if let Some(for_cwnd) = self.tso_deferral(now, goal) {
                            deferred = for_cwnd;
                            break;
                        }
                    }
                    // tcp_cwnd_test: one GSO packet takes at most half of cwnd.
                    burst = goal.min((self.t.cwnd / 2).max(1)) - 1;
                }
            }
            // With no burst left no segment can join this GSO packet: the
            // segment is its last and leaves at once, marked as end_gso
            // would mark it, without waiting in `held`.
            let last = burst == 0;
            self.send_one(now, lost, &mut |mut p| {
                if let Some(prev) = held.take() {
                    out(prev);
                }
                if last {
                    if let Header::TcpData(s) = &mut p.hdr {
                        s.psh |= gso_len > 0;
                    }
                    out(p);
                } else {
                    held = Some(p);
                }
            });
            gso_len += 1;
            sent = true;
        }
        end_gso(&mut held, gso_len, out);
        // Linux validates only in tcp_write_xmit, i.e. with data to send;
        // deferring for lack of cwnd (not of receive window) counts as
        // cwnd-limited.
        let limited = self.pace_blocked || self.jitter_blocked || deferred || self.sb.in_flight() >= self.t.cwnd;
        if sent || (limited && self.has_new_data()) {
            self.cwnd_validate(limited);
        }
        self.sync_cc_view();
    }

    /// Pacing and the host's send jitter let the next packet (or GSO
    /// packet) leave now; otherwise note which of them holds it.
    fn may_send_at(&mut self, now: SimTime) -> bool {
        if now < self.next_send && self.pacing_on() {
            // Linux hands paced packets to the qdisc with a future
            // departure time, so they count as in flight: a flow held
            // back only by pacing is cwnd-limited (tcp_cwnd_validate).
            self.pace_blocked = true;
            return false;
        }
        if let Some(rng) = &mut self.jitter_rng {
            // Each packet leaves a random 0..tx_jitter after the ACK
            // that released it, in order: a burst spreads over at most
            // tx_jitter and the delays do not add up.
            if self.jitter_target == SimTime::NEVER {
                self.jitter_target = self.jitter_base + self.cfg.host_noise().draw(rng);
            }
            if now < self.jitter_target {
                // Committed to the host's queue: counts as cwnd-limited.
                self.jitter_blocked = true;
                return false;
            }
            self.jitter_target = SimTime::NEVER;
        }
        true
    }

    /// Transmit one segment: the retransmission of `lost`, or new data.
    fn send_one(&mut self, now: SimTime, lost: Option<u64>, out: &mut impl FnMut(Packet)) {
        let packets_out = self.sb.packets_out();
        let (seq, retrans) = match lost {
            Some(seq) => {
                self.sb.on_retransmit(seq, now);
                self.retransmits += 1;
                //= Linux tcp_xmit_retransmit_queue: retransmitting the head
                // restarts the RTO (unless RACK's reordering timer holds it).
                if seq == self.sb.una && self.reo_at == SimTime::NEVER {
                    self.rto_at = now + self.rto;
                }
                //= Linux tcp_retransmit_skb: stamp the first, count all.
                if self.retrans_stamp == SimTime::NEVER {
                    self.retrans_stamp = now;
                }
                self.undo_retrans = self.undo_retrans.max(0) + 1;
                (seq, true)
            }
            None => {
                if self.sb.packets_out() == 0 && now > self.last_cc_event {
                    self.cc.on_tx_start(&self.t, now.since(self.last_cc_event));
                }
                let seq = self.sb.nxt();
                self.sb.push(now, self.seg_len(seq));
                (seq, false)
            }
        };
        let seg = self.sb.get_mut(seq);
        self.rate.on_sent(&mut self.t, seg, packets_out, now);
        let len = self.seg_len(seq);
        let ecn = match self.ecn {
            //= RFC 3168 §6.1.5: retransmissions are not ECT.
            EcnMode::Classic if !retrans => Ecn::Ect0,
            EcnMode::Accurate(e) => e,
            _ => Ecn::NotEct,
        };
        let cwr = !retrans && std::mem::take(&mut self.cwr_pending);
        // PSH: the end of the application's data (tcp_push at the end of
        // its last write); try_send marks the end of each GSO packet.
        let psh = !retrans && self.total_segs == Some(seq + 1);
        let pkt = Packet {
            size: crate::packet::tcp_wire_size(len),
            ecn,
            sent_at: now,
            hdr: Header::TcpData(TcpSeg { seq, len, ts: now, retrans, cwr, psh, tsecr: self.ts_recent }),
            ..self.tmpl
        };
        if self.in_reduction() {
            self.prr_out += 1;
        }
        if !self.pacing_rate.is_unlimited() && self.pacing_on() {
            //= Linux tcp_update_skb_after_send: a packet that leaves after
            // its departure time (a late timer, an ACK-clocked send) pays
            // that lateness back, up to half of each packet's pacing time,
            // Linux's allowance for the host's own delays; the credit is
            // the GSO packet's, spread over its segments.
            if now >= self.next_send {
                self.pace_credit = now.since(self.next_send);
                self.next_send = now;
            }
            // Linux times `skb->len`, the payload: the rate is in payload
            // bytes (as `ss` shows it), the headers ride free.
            let tx = self.pacing_rate.tx_time(u64::from(len));
            let cut = (tx / 2).min(self.pace_credit);
            self.pace_credit = self.pace_credit - cut;
            self.next_send += tx - cut;
        }
        if self.rto_at == SimTime::NEVER {
            self.rto_at = now + self.rto;
        }
        self.last_cc_event = now;
        self.last_xmit = now;
        out(pkt);
    }

    /// Copy the scoreboard's position into the state the CC reads.
    fn sync_cc_view(&mut self) {
        self.t.edt = self.next_send;
        self.t.snd_una = self.sb.una;
        self.t.snd_nxt = self.sb.nxt();
        self.t.in_flight = self.sb.in_flight();
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
