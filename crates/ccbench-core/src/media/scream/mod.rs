//! SCReAM v2 sender congestion control: reference window (`cwnd`, the
//! draft's `ref_wnd`), send gate, pacing rate and media target bitrate.
//!
//! Specs: draft-ietf-ccwg-rfc8298bis-screamv2 (§"Reference Window Update",
//! §"Media rate control"); the Ericsson C++ code is authoritative where they
//! differ (scream: code/ScreamV2Tx.cpp `incomingStandardizedFeedback`,
//! `markAcked`, `detectLoss`, `updateCwnd`, `isOkToTransmit`; code/ScreamTx.h;
//! code/ScreamV2TxStream.cpp). The constants are those of EricssonResearch/scream
//! at c8f84c3 (HEAD when this was written); BW-tool defaults come from
//! [`MediaConfig`].
//!
//! Versions: `media.version` selects a row of [`version`]'s table. `head`
//! (the default) is the law described here; `76a298a` (2024-10-31; e0af5ef) and
//! `994f9a4` (2024-10-28) are the code the published experiments ran; their
//! differences (L4S backoff and re-anchor, increase law and phase-in, rate
//! from cwnd, send gate, sRTT filter, sclI and cwndI, virtual CE, α filter,
//! receiver cadence) are listed with file:line in `version.rs` and
//! implemented in the hooks `backoff_2024`, `virtual_ce_2024` and the
//! `v.*_2024` branches of `update_cwnd`, `ok_to_transmit`, `on_rtt` and
//! `update_target_bitrate`.
//!
//! Units: time is `SimTime`/`Dur` in integer nanoseconds (the code's Q16 NTP
//! time and its 18 h wrap do not exist here); sRTT filters run in integer ns
//! like the code's Q16 filters. Windows and flight are in bytes (RTP header +
//! payload, as the code counts them). Rates are f64 bit/s. Delay filters
//! (qdelayAvg, jitter) are f64 seconds inside the control law.
//!
//! Deviations and omissions (stated, not hidden):
//! - One media stream: no priority split, no credit scheduler; the rate
//!   share is `R` itself.
//! - `cwndI` is the window just before the last reduction in `head`; the
//!   2024 versions keep the code's median of 9 (`updateCwndI`); same time
//!   gates (0.5 s for loss, sRTT for CE).
//! - The experimental `maxPolicedCwnd` guard, SBD (off in the code),
//!   clock-drift compensation, MSS adaptation (`-mtu a,b,c`), the adaptive
//!   target-rate scale (off in the BW tool), the long-congestion RTP-queue
//!   refresh and `ceDensity` (1 while pacing is on) are omitted.
//!   `relFrameSizeHigh` is fixed at 1 (only used in the near-max cap).
//! - §6 base-delay reset is kept in its code form: `queueDelayMinSlowAvg` is
//!   the per-100-sRTT minimum qdelay (taken if lower, else EWMA 1/8); above
//!   T/8 the *reported* target is halved once per 60 s for max(100 ms,
//!   5·sRTT), then the base-OWD history is reset.
//! - The 0.5 s deadlock reset of bytes in flight runs in
//!   [`ScreamTx::on_new_frame`] (the send gate takes no time argument); a
//!   frame arriving is when the code's `isOkToTransmit` would run.
//! - Loss detection runs once per feedback (after all its entries), not also
//!   on marker packets; the RTT sample is the report's last entry.
//! - Pacing rate is computed on demand from the current target, RTP-in rate
//!   and adaptive scale (the code caches it at each `updateCwnd`).
//! - The target uses sRTT (fact sheet §5); an older code version used
//!   min(sRTT, sRttSh).

use std::collections::VecDeque;

use super::rfc8888::Report;
use super::MediaConfig;
use version::{AlphaFilter, PhaseIn, VersionParams};
use crate::packet::Ecn;
use crate::units::{Dur, SimTime};

#[cfg(test)]
mod tests;
pub mod version;

/// `kInitMss`: MSS after each 1 s reset, bytes.
const INIT_MSS: u32 = 100;
/// Initial sRTT and sRttSh (code: 0.05 s).
const SRTT_INIT: Dur = Dur::from_millis(50);
/// `kMinCongestionBackOffInterval`: 30 ms, also the rttScale norm.
const BACKOFF_INTERVAL: Dur = Dur::from_millis(30);
/// L4S α update interval cap (min(10 ms, sRTT)).
const ALPHA_INTERVAL: Dur = Dur::from_millis(10);
/// `kSrttVirtual`: 25 ms.
const VIRTUAL_RTT: Dur = Dur::from_millis(25);
const L4S_ALPHA_INIT: f64 = 0.1;
/// 2024: "L4S active" = a CE event within this long (ScreamV2Tx.cpp:821 at
/// 76a298a, 5·65535 in Q16).
const L4S_ACTIVE_WINDOW: Dur = Dur::from_secs(5);
/// 2024: re-anchor after this long without congestion (:1585).
const REANCHOR_2024: Dur = Dur::from_secs(5);
/// 2024: `kBytesInFlightLimit` and `kMaxBytesInFlightLimitCompensation`.
const BIF_LIMIT: f64 = 0.9;
const BIF_LIMIT_MAX_COMP: f64 = 1.5;
/// `kCwndIHistSize` of the 2024 code.
const CWND_I_HIST: usize = 9;
/// `kMinWindowHeadroom`.
const MIN_WINDOW_HEADROOM: f64 = 1.5;
/// Rate estimators (tx, ACKed, RTP-in) window.
const RATE_INTERVAL: Dur = Dur::from_millis(100);
const RATE_RTP_HIST: usize = 4;
/// "Slow update" (near-max cap, max bytes in flight history).
const SLOW_UPDATE_INTERVAL: Dur = Dur::from_millis(50);
/// 20 × 50 ms = the last 1 s of max bytes in flight.
const MAX_BIF_HIST: usize = 20;
const MSS_RESET_INTERVAL: Dur = Dur::from_secs(1);
/// Base OWD: min over 50 slots of 10 s.
const BASE_OWD_SLOTS: usize = 50;
const BASE_OWD_SLOT: Dur = Dur::from_secs(10);
/// RTP timestamp clock (video, 90 kHz).
const RTP_TS_RATE: f64 = 90_000.0;
/// Unacknowledged packets this far behind the highest ACK are lost.
const LOSS_SEQ_WINDOW: u32 = 512;
/// RTP + UDP bytes around the payload (`kPacketOverhead`).
const PACKET_OVERHEAD: f64 = 20.0;
const MIN_PACING_RATE: f64 = 50e3;
const DEADLOCK_TIMEOUT: Dur = Dur::from_millis(500);
const RELAXED_PACING_LOW: f64 = 0.8;
const RELAXED_PACING_MAX_FACTOR: f64 = 5.0;
/// Fixed rate headroom divisor of §5.
const RATE_HEADROOM: f64 = 1.1;
/// RFC 8888 ATO value for "arrival time unavailable".
const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// Base-delay reset (§6): once per 60 s, target halved for max(100 ms, 5·sRTT).
const BASE_DELAY_RESET_INTERVAL: Dur = Dur::from_secs(60);

/// Congestion-control state for the metrics.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ScreamState {
    /// Reference window (ref_wnd), bytes.
    pub cwnd: u64,
    pub bytes_in_flight: u64,
    pub srtt: Dur,
    /// Queue delay estimate (OWD − base OWD) of the last ACKed packet.
    pub qdelay: Dur,
    /// L4S α (0..1).
    pub alpha: f64,
    /// CE-marked share of the packets the last feedback newly ACKed.
    pub ce_fraction: f64,
    pub packets_lost: u64,
}

/// The congestion signal that drove a window reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    Loss,
    ClassicCe,
    L4sCe,
    VirtualCe,
}

/// What one `updateCwnd` did (for tests and traces).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CwndUpdate {
    pub at: SimTime,
    pub signal: Option<Signal>,
    /// Window before the update, after the reduction, and at the end, bytes.
    pub cwnd_before: u64,
    pub cwnd_reduced: u64,
    pub cwnd_after: u64,
    /// The computed increment (bytes) and whether the growth gate let it in.
    pub increment: f64,
    pub inc_applied: bool,
    /// α (L4S CE) or αv (virtual CE, after its first ÷rttScale) used.
    pub alpha: f64,
    pub rtt_scale: f64,
    /// The ×0.25 undershoot guard (target < 0.8·ACKed rate) was active.
    pub undershoot: bool,
    pub qdelay_avg: Dur,
    pub post_cong: f64,
    pub scl_i: f64,
}

/// One transmitted RTP packet awaiting feedback.
#[derive(Copy, Clone, Debug)]
struct TxPkt {
    seq: u32,
    tx: SimTime,
    size: u32,
    rtp_ts: u32,
    acked: bool,
    lost: bool,
    /// At or below the highest reported seq: has left the flight (SACK-like).
    after_edge: bool,
}

pub struct ScreamTx {
    // ---- parameters
    l4s: bool,
    delay_target: Dur,
    loss_beta: f64,
    ecn_beta: f64,
    pace_headroom: f64,
    max_adaptive_pace: f64,
    max_window_headroom: f64,
    inflight_headroom: f64,
    mul_increase: f64,
    reorder_time: Dur,
    relaxed_pacing: bool,
    /// The version row (with overrides): every version difference.
    v: VersionParams,
    pacing: bool,
    min_rate: f64,
    max_rate: f64,
    hysteresis: f64,
    /// `cwndMinLow` = 2·(mtu + 12) in the BW tool, bytes.
    cwnd_min_low: u64,
    init_time: SimTime,

    // ---- window and flight
    cwnd: u64,
    cwnd_min: u64,
    /// `cwndI`: window before the last congestion reduction (initially 1).
    cwnd_i: u64,
    /// 2024 inflexion-point history (median of `v.cwnd_i_hist`).
    cwnd_i_hist: [u64; CWND_I_HIST],
    cwnd_i_ix: usize,
    last_cwnd_i_update: SimTime,
    mss: u32,
    prev_mss: u32,
    last_mss_reset: SimTime,
    bytes_in_flight: u64,
    max_bif: u64,
    max_bif_prev: u64,
    max_bif_hist: [u64; MAX_BIF_HIST],
    max_bif_ix: usize,
    pkts: VecDeque<TxPkt>,
    last_transmit: SimTime,
    bytes_newly_acked: u64,
    bytes_newly_acked_ce: u64,

    // ---- RTT and delay
    srtt: Dur,
    srtt_sh: Dur,
    srtt_sh_prev: Dur,
    last_srtt_update: SimTime,
    /// OWD in signed ns (sender and receiver clocks are the simulator's).
    base_owd_cur: i64,
    base_owd_hist: [i64; BASE_OWD_SLOTS],
    base_owd_ix: usize,
    base_owd_hist_min: i64,
    last_base_owd_add: SimTime,
    qdelay: Dur,
    qdelay_avg_s: f64,
    last_qdelay_avg_update: SimTime,
    qdelay_min_slow_avg_s: f64,
    qdelay_min_win_s: f64,
    qdelay_min_win_start: SimTime,
    lat_max_avg_s: f64,
    lat_min_avg_s: f64,
    lat_diff_avg_s: f64,
    /// `latencyDiffCwndScale` (draft `ref_wnd_delay_scale`), 0..1.
    lat_diff_scale: f64,
    last_rate_limit: SimTime,
    can_reset_base_delay: bool,

    // ---- feedback, loss, events
    hi_seq_ack: Option<u32>,
    ts_ack_high: Option<u32>,
    /// Tx time of the most recently ACKed packet (`timeTxAck`).
    tx_ack: SimTime,
    loss_rate: f64,
    packets_lost: u64,
    repair_loss: bool,
    rtp_queue_discard: bool,
    was_repair: bool,
    loss_event: bool,
    ce_event: bool,
    virtual_ce_event: bool,
    ce_this_fb: bool,
    last_event: SimTime,
    last_congestion: SimTime,
    last_cwnd_update: Option<SimTime>,
    last_slow_update: SimTime,

    // ---- L4S
    alpha: f64,
    alpha_v: f64,
    last_alpha_update: SimTime,
    pkts_delivered: u64,
    pkts_marked: u64,
    fraction_marked: f64,
    ce_fraction: f64,
    /// 2024 `isL4sActive`: L4S on and a CE event within 5 s.
    l4s_active: bool,
    last_ce_event: Option<SimTime>,
    /// Bytes in flight when the last feedback arrived, and its ratio to
    /// cwnd before the update (2024 rate law).
    prev_bif: u64,

    // ---- rate estimators
    last_rate_update: SimTime,
    bytes_tx_win: u64,
    bytes_acked_win: u64,
    bytes_rtp_win: u64,
    rate_tx_avg: f64,
    rate_acked: f64,
    rate_rtp_hist: [f64; RATE_RTP_HIST],
    rate_rtp_ix: usize,
    rate_rtp_avg: f64,

    // ---- the media stream
    rate_share: f64,
    target: f64,
    target_h: f64,
    raf: f64,
    frame_period_s: f64,
    last_frame: Option<SimTime>,
    adapt_scale: f64,
    new_frame: bool,

    last_update: Option<CwndUpdate>,
}

impl ScreamTx {
    /// `l4s`: the flow sends ECT(1) and reacts to CE as L4S (α); otherwise
    /// CE is a classic signal.
    pub fn new(cfg: &MediaConfig, l4s: bool, now: SimTime) -> Self {
        let min_rate = cfg.min_rate.bps() as f64;
        let max_rate = cfg.max_rate.bps() as f64;
        // BW tool: initrate is raised to minrate; cwnd₀ = initrate[kbps]·100/8 B.
        let init = cfg.init_rate.bps().max(cfg.min_rate.bps());
        let cwnd = (init / 80).max(1);
        let target = (init as f64).clamp(min_rate, max_rate.max(min_rate));
        let cwnd_min_low = 2 * (u64::from(cfg.mtu) + 12);
        ScreamTx {
            l4s,
            delay_target: cfg.delay_target,
            loss_beta: cfg.scale,
            ecn_beta: cfg.scale,
            pace_headroom: cfg.pace_headroom,
            max_adaptive_pace: cfg.adaptive_pace_headroom,
            max_window_headroom: cfg.max_window_headroom,
            inflight_headroom: cfg.inflight_headroom,
            mul_increase: cfg.mul_increase,
            reorder_time: cfg.reorder_time,
            relaxed_pacing: cfg.relaxed_pacing,
            v: cfg.version_params(),
            pacing: cfg.pacing,
            min_rate,
            max_rate,
            hysteresis: cfg.hysteresis,
            cwnd_min_low,
            init_time: now,
            cwnd: cwnd.max(cwnd_min_low),
            cwnd_min: cwnd_min_low.max(2 * u64::from(INIT_MSS)),
            cwnd_i: 1,
            cwnd_i_hist: [0; CWND_I_HIST],
            cwnd_i_ix: 0,
            last_cwnd_i_update: now,
            mss: INIT_MSS,
            prev_mss: INIT_MSS,
            last_mss_reset: now,
            bytes_in_flight: 0,
            max_bif: 0,
            max_bif_prev: 0,
            max_bif_hist: [0; MAX_BIF_HIST],
            max_bif_ix: 0,
            pkts: VecDeque::new(),
            last_transmit: now,
            bytes_newly_acked: 0,
            bytes_newly_acked_ce: 0,
            srtt: SRTT_INIT,
            srtt_sh: SRTT_INIT,
            srtt_sh_prev: SRTT_INIT,
            last_srtt_update: now,
            base_owd_cur: i64::MAX,
            base_owd_hist: [i64::MAX; BASE_OWD_SLOTS],
            base_owd_ix: 0,
            base_owd_hist_min: i64::MAX,
            last_base_owd_add: now,
            qdelay: Dur::ZERO,
            qdelay_avg_s: 0.0,
            last_qdelay_avg_update: now,
            qdelay_min_slow_avg_s: 0.0,
            qdelay_min_win_s: f64::INFINITY,
            qdelay_min_win_start: now,
            lat_max_avg_s: 0.0,
            lat_min_avg_s: 0.0,
            lat_diff_avg_s: 0.0,
            lat_diff_scale: 1.0,
            last_rate_limit: now,
            can_reset_base_delay: false,
            hi_seq_ack: None,
            ts_ack_high: None,
            tx_ack: now,
            loss_rate: 0.0,
            packets_lost: 0,
            repair_loss: false,
            rtp_queue_discard: false,
            was_repair: false,
            loss_event: false,
            ce_event: false,
            virtual_ce_event: false,
            ce_this_fb: false,
            last_event: now,
            last_congestion: SimTime::ZERO,
            last_cwnd_update: None,
            last_slow_update: now,
            alpha: if l4s { L4S_ALPHA_INIT } else { 0.0 },
            alpha_v: 0.0,
            last_alpha_update: now,
            pkts_delivered: 0,
            pkts_marked: 0,
            fraction_marked: 0.0,
            ce_fraction: 0.0,
            l4s_active: false,
            last_ce_event: None,
            prev_bif: 0,
            last_rate_update: now,
            bytes_tx_win: 0,
            bytes_acked_win: 0,
            bytes_rtp_win: 0,
            rate_tx_avg: 0.0,
            rate_acked: 0.0,
            rate_rtp_hist: [0.0; RATE_RTP_HIST],
            rate_rtp_ix: 0,
            rate_rtp_avg: 0.0,
            // The share starts at minBitrate; the first frame sets the target to it.
            rate_share: min_rate,
            target,
            target_h: target,
            raf: 0.0,
            frame_period_s: 0.02,
            last_frame: None,
            adapt_scale: 1.0,
            new_frame: false,
            last_update: None,
        }
    }

    /// An RTP packet (`size` = RTP header + payload bytes) was sent now.
    pub fn on_transmit(&mut self, now: SimTime, seq: u32, size: u32, rtp_ts: u32, marker: bool) {
        let _ = marker; // frames are signalled through `on_new_frame`
        self.tick(now);
        debug_assert!(self.pkts.back().is_none_or(|p| p.seq < seq), "RTP seq must increase");
        self.pkts.push_back(TxPkt { seq, tx: now, size, rtp_ts, acked: false, lost: false, after_edge: false });
        self.bytes_in_flight += u64::from(size);
        self.bytes_tx_win += u64::from(size);
        self.last_transmit = now;
        // MSS = largest packet seen; cwndMin = max(cwndMinLow, 2·MSS).
        self.mss = self.mss.max(size);
        self.cwnd_min = self.cwnd_min_low.max(2 * u64::from(self.mss()));
        self.cwnd = self.cwnd.max(self.cwnd_min);
    }

    /// RFC 8888 feedback arrived now.
    pub fn on_feedback(&mut self, now: SimTime, report: &Report) {
        self.tick(now);
        let num = usize::from(report.num).min(report.ato.len());
        if num == 0 {
            return;
        }
        self.max_bif = self.max_bif.max(self.bytes_in_flight);
        self.prev_bif = self.bytes_in_flight;
        let end = report.begin_seq + num as u32 - 1;
        if self.hi_seq_ack.is_some_and(|hi| end + LOSS_SEQ_WINDOW < hi) {
            return; // stale, far out-of-order feedback (code: > 512 behind)
        }
        let a = self.loss_alpha();
        let (mut fb_pkts, mut fb_ce) = (0u32, 0u32);
        for i in 0..num {
            if report.received >> i & 1 == 0 {
                continue;
            }
            let Some(ix) = self.find(report.begin_seq + i as u32) else { continue };
            let p = &mut self.pkts[ix];
            if p.acked || p.lost {
                continue;
            }
            p.acked = true;
            let (tx, size, ts) = (p.tx, u64::from(p.size), p.rtp_ts);
            fb_pkts += 1;
            self.pkts_delivered += 1;
            if report.ecn[i] == Ecn::Ce {
                self.bytes_newly_acked_ce += size;
                self.pkts_marked += 1;
                fb_ce += 1;
                self.ce_this_fb = true;
            }
            if self.ts_ack_high.is_none_or(|h| (ts.wrapping_sub(h) as i32) > 0) {
                self.ts_ack_high = Some(ts);
            }
            self.tx_ack = tx;
            self.loss_rate *= 1.0 - a;
            if report.ato[i] != ATO_UNAVAILABLE {
                if let Some((arrival, _)) = report.arrival(i) {
                    self.on_owd(now, arrival.diff_ns(tx));
                }
            }
            if i == num - 1 {
                self.on_rtt(now, now.since(tx));
            }
        }
        self.ce_fraction = if fb_pkts > 0 { f64::from(fb_ce) / f64::from(fb_pkts) } else { 0.0 };
        self.detect_loss(now, end);
        self.hi_seq_ack = Some(self.hi_seq_ack.map_or(end, |h| h.max(end)));
        self.after_feedback(now);
        // 2024 `isL4sActive`, set after the update as the code does (:821).
        self.l4s_active = self.l4s && self.last_ce_event.is_some_and(|t| now.since(t) < L4S_ACTIVE_WINDOW);
    }

    /// The send gate (§4): bytesInFlight + size ≤ cwnd·H + MSS, with
    /// H = 1.5 + (maxWindowHeadroom − 1.5)·latencyDiffCwndScale.
    /// 2024 (`v.send_gate_fixed`): H = 1.5 (`kCwndOverhead` ·
    /// relFrameSizeHigh, the latter 1 here).
    /// Heap the records of packets sent and not yet reported take (a ring,
    /// by its capacity).
    pub fn held_bytes(&self) -> u64 {
        (self.pkts.capacity() * std::mem::size_of::<TxPkt>()) as u64
    }

    pub fn ok_to_transmit(&self, size: u32) -> bool {
        if self.v.send_gate_fixed {
            let gate = self.cwnd as f64 * MIN_WINDOW_HEADROOM + f64::from(self.mss());
            return (self.bytes_in_flight + u64::from(size)) as f64 <= gate;
        }
        let h = MIN_WINDOW_HEADROOM + (self.max_window_headroom - MIN_WINDOW_HEADROOM) * self.lat_diff_scale;
        (self.bytes_in_flight + u64::from(size)) as f64 <= self.cwnd as f64 * h + f64::from(self.mss())
    }

    /// Pacing rate in bit/s (0 = no pacing): max(50 kbps,
    /// paceHeadroom·adaptScale·max(target, RTP-in rate)), relaxed near max.
    pub fn pacing_rate_bps(&self) -> f64 {
        if !self.pacing {
            return 0.0;
        }
        let mut p = (self.pace_headroom * self.adapt_scale * self.target.max(self.rate_rtp_avg)).max(MIN_PACING_RATE);
        if self.relaxed_pacing && self.target > RELAXED_PACING_LOW * self.max_rate {
            let nominal = self.target / self.max_rate;
            let relax = ((nominal - RELAXED_PACING_LOW) / (1.0 - RELAXED_PACING_LOW)).min(1.0);
            p /= (1.0 - relax).clamp(1.0 / RELAXED_PACING_MAX_FACTOR, 1.0);
        }
        p
    }

    /// A new video frame was handed to the RTP queue: its bytes, the RTP
    /// queue's bytes and the age of its oldest packet (adaptive pacing, the
    /// RTP-queue rate adjustment).
    pub fn on_new_frame(&mut self, now: SimTime, frame_bytes: u32, rtp_queue_bytes: u64, rtp_queue_delay: Dur) {
        self.tick(now);
        // Deadlock guard (isOkToTransmit): nothing sent for 0.5 s → flight 0.
        if now.since(self.last_transmit) > DEADLOCK_TIMEOUT && self.bytes_in_flight > 0 {
            self.pkts.clear();
            self.bytes_in_flight = 0;
        }
        self.bytes_rtp_win += u64::from(frame_bytes);
        self.new_frame = true;
        // framePeriod: EWMA with weight 0.9 on the newest interval.
        if let Some(last) = self.last_frame {
            self.frame_period_s = 0.9 * now.since(last).as_secs_f64() + 0.1 * self.frame_period_s;
        }
        self.last_frame = Some(now);
        let fp = self.frame_period_s.max(1e-3);
        // adaptScale = clamp(frameSize/frameSizeAvg, 1, 1.5) if the nominal frame > 500 B.
        let frame_size_avg = self.target * fp / 8.0;
        let frame_size = rtp_queue_bytes.max(u64::from(frame_bytes)) as f64;
        self.adapt_scale =
            if frame_size_avg > 500.0 { (frame_size / frame_size_avg).clamp(1.0, self.max_adaptive_pace.max(1.0)) } else { 1.0 };
        // raf: I-controller on the RTP-queue delay around framePeriod/2.
        let q = rtp_queue_delay.as_secs_f64();
        self.raf = (self.raf + 0.2 * (q - fp / 2.0) / fp / 8.0).clamp(0.0, 0.5);
        self.update_target_bitrate();
    }

    /// The RTP queue was flushed (discard): the next target is a refresh.
    pub fn on_rtp_queue_discard(&mut self, now: SimTime) {
        let _ = now;
        self.rtp_queue_discard = true;
    }

    /// Target bitrate for the encoder, bit/s; `None` once after a loss or
    /// discard (the BW tool then sends an empty "refresh" frame).
    pub fn target_bitrate(&mut self, now: SimTime) -> Option<f64> {
        let mut rate = self.target_h;
        // §6 base-delay reset: a standing qdelay floor above T/8 halves the
        // target briefly (once per 60 s), then the base-OWD history is reset.
        let inactive = self.v.base_delay_reset_when_inactive && !self.l4s_active;
        if inactive || self.qdelay_min_slow_avg_s > self.delay_target.as_secs_f64() / 8.0 {
            if now.since(self.last_rate_limit) > BASE_DELAY_RESET_INTERVAL {
                self.last_rate_limit = now;
            }
            if now.since(self.last_rate_limit) < Dur::from_millis(100).max(self.srtt * 5) {
                rate *= 0.5;
                self.can_reset_base_delay = true;
            } else if self.can_reset_base_delay {
                self.reset_base_delay(now);
                self.can_reset_base_delay = false;
            }
        }
        let refresh = std::mem::take(&mut self.rtp_queue_discard) | std::mem::take(&mut self.repair_loss);
        if refresh && !self.was_repair {
            self.was_repair = true;
            return None;
        }
        self.was_repair = false;
        Some(rate)
    }

    pub fn state(&self) -> ScreamState {
        ScreamState {
            cwnd: self.cwnd,
            bytes_in_flight: self.bytes_in_flight,
            srtt: self.srtt,
            qdelay: self.qdelay,
            alpha: self.alpha,
            ce_fraction: self.ce_fraction,
            packets_lost: self.packets_lost,
        }
    }

    /// `getMss()`: max(current, previous) MSS estimate, bytes.
    pub fn mss(&self) -> u32 {
        self.mss.max(self.prev_mss)
    }

    /// The last `updateCwnd`, if any.
    pub fn last_update(&self) -> Option<CwndUpdate> {
        self.last_update
    }

    /// Averaged queue delay (`queueDelayAvg`).
    pub fn qdelay_avg(&self) -> Dur {
        Dur::from_secs_f64(self.qdelay_avg_s)
    }

    // ------------------------------------------------------------------

    /// Per-packet loss-rate EWMA gain: min(0.0025, MSS/cwnd/2).
    fn loss_alpha(&self) -> f64 {
        (0.0025f64).min(f64::from(self.mss()) / self.cwnd as f64 / 2.0)
    }

    fn find(&self, seq: u32) -> Option<usize> {
        // Reports repeat sequence numbers already acknowledged and dropped
        // from the front; and RTP numbers packets consecutively, so a packet
        // is usually where its distance from the first says. The search
        // covers any gap.
        let first = self.pkts.front()?.seq;
        if seq < first {
            return None;
        }
        let guess = (seq - first) as usize;
        if self.pkts.get(guess).is_some_and(|p| p.seq == seq) {
            return Some(guess);
        }
        let ix = self.pkts.partition_point(|p| p.seq < seq);
        (self.pkts.get(ix)?.seq == seq).then_some(ix)
    }

    /// Periodic work the code does in `isOkToTransmit`: rate estimators
    /// every 100 ms and the 1 s MSS reset.
    fn tick(&mut self, now: SimTime) {
        let dt = now.since(self.last_rate_update);
        if dt >= RATE_INTERVAL {
            let s = dt.as_secs_f64();
            let rate_tx = self.bytes_tx_win as f64 * 8.0 / s;
            self.rate_tx_avg = 0.5 * self.rate_tx_avg + 0.5 * rate_tx;
            self.rate_acked = self.bytes_acked_win as f64 * 8.0 / s;
            self.rate_rtp_hist[self.rate_rtp_ix] = self.bytes_rtp_win as f64 * 8.0 / s;
            self.rate_rtp_ix = (self.rate_rtp_ix + 1) % RATE_RTP_HIST;
            self.rate_rtp_avg = self.rate_rtp_hist.iter().sum::<f64>() / RATE_RTP_HIST as f64;
            (self.bytes_tx_win, self.bytes_acked_win, self.bytes_rtp_win) = (0, 0, 0);
            self.last_rate_update = now;
        }
        if now.since(self.last_mss_reset) > MSS_RESET_INTERVAL {
            self.prev_mss = self.mss;
            self.mss = INIT_MSS;
            self.cwnd_min = self.cwnd_min_low.max(3 * u64::from(self.mss()));
            self.cwnd = self.cwnd.max(self.cwnd_min);
            self.last_mss_reset = now;
        }
    }

    /// RTT sample of the last packet of a feedback: sRttSh ← (7·sRttSh + rtt)/8;
    /// sRtt ← (7·sRtt + sRttSh)/8 at most once per sRttSh (1023/1024 when
    /// application-limited and the RTT is falling).
    fn on_rtt(&mut self, now: SimTime, rtt: Dur) {
        if rtt >= Dur::from_secs(15) {
            return;
        }
        self.srtt_sh_prev = self.srtt_sh;
        self.srtt_sh = (self.srtt_sh * 7 + rtt) / 8;
        if now.since(self.last_srtt_update) > self.srtt_sh {
            let app_limited = self.v.srtt_app_limited_slow
                && self.cwnd > u64::from(self.mss()) + 2 * self.max_bif.max(self.max_bif_prev);
            self.srtt = if app_limited && self.srtt_sh < self.srtt {
                Dur(((u128::from(self.srtt.0) * 1023 + u128::from(self.srtt_sh.0)) / 1024) as u64)
            } else {
                (self.srtt * 7 + self.srtt_sh) / 8
            };
            self.last_srtt_update = now;
        }
    }

    /// OWD sample (ns): base OWD over 50 × 10 s slots, qdelay, jitter
    /// extremes and the slow minimum window.
    fn on_owd(&mut self, now: SimTime, owd: i64) {
        self.base_owd_cur = self.base_owd_cur.min(owd);
        if now.since(self.last_base_owd_add) >= BASE_OWD_SLOT {
            self.base_owd_ix = (self.base_owd_ix + 1) % BASE_OWD_SLOTS;
            self.base_owd_hist[self.base_owd_ix] = self.base_owd_cur;
            self.base_owd_cur = i64::MAX;
            self.base_owd_hist_min = self.base_owd_hist.iter().copied().min().unwrap_or(i64::MAX);
            self.last_base_owd_add = now;
        }
        let base = self.base_owd_cur.min(self.base_owd_hist_min);
        self.qdelay = Dur(owd.saturating_sub(base).max(0) as u64);
        let q = self.qdelay.as_secs_f64();
        self.lat_max_avg_s = self.lat_max_avg_s.max(q).min(self.delay_target.as_secs_f64());
        self.lat_min_avg_s = self.lat_min_avg_s.min(q);
        self.qdelay_min_win_s = self.qdelay_min_win_s.min(q);
    }

    fn reset_base_delay(&mut self, now: SimTime) {
        self.base_owd_cur = i64::MAX;
        self.base_owd_hist = [i64::MAX; BASE_OWD_SLOTS];
        self.base_owd_hist_min = i64::MAX;
        self.last_base_owd_add = now;
        self.qdelay_min_slow_avg_s = 0.0;
        self.qdelay = Dur::ZERO;
    }

    /// `detectLoss`: every seq ≤ `end` leaves the flight (SACK-like, lost ones
    /// included); an unACKed packet is lost when tx + reorderTime + (highest
    /// ACKed RTP ts − its ts)/90 kHz < tx of the most recently ACKed packet,
    /// or when it is > 512 seqs behind.
    fn detect_loss(&mut self, now: SimTime, end: u32) {
        let delay_target_s = self.delay_target.as_secs_f64();
        for ix in 0..self.pkts.len() {
            let p = self.pkts[ix];
            if p.seq > end {
                break;
            }
            if !p.after_edge {
                self.bytes_newly_acked += u64::from(p.size);
                self.bytes_acked_win += u64::from(p.size);
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(u64::from(p.size));
                self.pkts[ix].after_edge = true;
            }
            if p.acked || p.lost {
                continue;
            }
            let ts_diff = self.ts_ack_high.map_or(0, |h| h.wrapping_sub(p.rtp_ts) as i32);
            let late = ts_diff >= 0
                && p.tx + self.reorder_time + Dur::from_secs_f64(f64::from(ts_diff) / RTP_TS_RATE) < self.tx_ack;
            if late || p.seq + LOSS_SEQ_WINDOW < end {
                self.pkts[ix].lost = true;
                self.packets_lost += 1;
                self.repair_loss = true;
                let a = self.loss_alpha();
                self.loss_rate = (1.0 - a) * self.loss_rate + a;
                // A loss event: > sRTT since the last event, beta < 1, and
                // lossRate > 1 % or qdelayAvg > T/4 (sporadic loss is ignored).
                if now.since(self.last_event) > self.srtt
                    && self.loss_beta < 1.0
                    && (self.loss_rate > 0.01 || self.qdelay_avg_s > delay_target_s / 4.0)
                {
                    self.loss_event = true;
                }
            }
        }
        while self.pkts.front().is_some_and(|p| p.after_edge && (p.acked || p.lost)) {
            self.pkts.pop_front();
        }
    }

    /// The code's `isLast` block: CE event, α, qdelayAvg and jitter filters,
    /// virtual CE, and the `updateCwnd` cadence.
    fn after_feedback(&mut self, now: SimTime) {
        let backoff_iv = BACKOFF_INTERVAL.min(self.srtt);
        let target_s = self.delay_target.as_secs_f64();
        if now.since(self.last_event) > backoff_iv && self.ce_this_fb {
            self.ce_event = true;
            self.last_event = now;
            self.last_ce_event = Some(now);
        }
        self.ce_this_fb = false;
        if self.l4s {
            if now.since(self.last_alpha_update) > ALPHA_INTERVAL.min(self.srtt) {
                self.last_alpha_update = now;
                if self.pkts_delivered > 0 {
                    let f = self.pkts_marked as f64 / self.pkts_delivered as f64;
                    self.alpha = match self.v.alpha_filter {
                        AlphaFilter::Symmetric(g) => (g * f + (1.0 - g) * self.alpha).min(1.0),
                        AlphaFilter::FastAttack { up, .. } if f >= self.alpha => {
                            (up * f + (1.0 - up) * self.alpha).min(1.0)
                        }
                        AlphaFilter::FastAttack { down, .. } => self.alpha * (1.0 - down),
                    };
                    (self.pkts_delivered, self.pkts_marked) = (0, 0);
                    self.fraction_marked = f;
                }
            }
        } else {
            self.alpha = 0.0;
        }
        if now.since(self.last_qdelay_avg_update) > backoff_iv {
            // 2024: the plain qdelay (:747-755); HEAD: above the slow minimum.
            let floor = if self.v.virtual_ce_2024 { 0.0 } else { self.qdelay_min_slow_avg_s };
            let x = (self.qdelay.as_secs_f64() - floor).max(0.0);
            self.qdelay_avg_s = if x < self.qdelay_avg_s { x } else { 0.75 * self.qdelay_avg_s + 0.25 * x };
            // Jitter scale: EWMA 1/32 of clamp(maxAvg − minAvg, 0, 20 ms).
            let spread = (self.lat_max_avg_s - self.lat_min_avg_s).clamp(0.0, 0.020);
            self.lat_diff_avg_s += (spread - self.lat_diff_avg_s) / 32.0;
            self.lat_diff_scale = (1.0 - self.lat_diff_avg_s / 0.010).clamp(0.0, 1.0);
            self.lat_max_avg_s *= 15.0 / 16.0;
            self.lat_min_avg_s = 15.0 / 16.0 * self.lat_min_avg_s + self.lat_max_avg_s / 16.0;
            self.last_qdelay_avg_update = now;
        }
        // §6: per-100-sRTT minimum of qdelay (taken if lower, else EWMA 1/8).
        if now.since(self.qdelay_min_win_start) >= self.srtt * 100 {
            let m = self.qdelay_min_win_s;
            if m.is_finite() {
                self.qdelay_min_slow_avg_s =
                    if m < self.qdelay_min_slow_avg_s { m } else { 0.875 * self.qdelay_min_slow_avg_s + 0.125 * m };
            }
            self.qdelay_min_win_s = f64::INFINITY;
            self.qdelay_min_win_start = now;
        }
        if self.v.virtual_ce_2024 {
            self.virtual_ce_2024(now, backoff_iv);
        } else if self.qdelay_avg_s > target_s / 2.0 && now.since(self.last_event) > backoff_iv {
            // Virtual CE: qdelayAvg > T/2, backoff ramps to 50 % at T.
            self.virtual_ce_event = true;
            self.alpha_v = ((self.qdelay_avg_s - target_s / 2.0) / (target_s / 2.0)).clamp(0.0, 1.0) / self.rtt_scale();
        }
        // A falling RTT while everything is marked: queues are draining.
        if self.srtt_sh_prev > self.srtt_sh && self.fraction_marked == 1.0 {
            self.ce_event = false;
        }
        let event = self.loss_event || self.ce_event || self.virtual_ce_event;
        if event {
            self.last_event = now;
        }
        let last = *self.last_cwnd_update.get_or_insert(now);
        if now.since(last) > backoff_iv || event || self.new_frame {
            self.update_cwnd(now);
            self.update_target_bitrate();
            (self.ce_event, self.virtual_ce_event, self.new_frame) = (false, false, false);
            self.last_cwnd_update = Some(now);
        }
    }

    /// rttScale = max(1, sRTT/30 ms).
    fn rtt_scale(&self) -> f64 {
        (self.srtt.as_secs_f64() / BACKOFF_INTERVAL.as_secs_f64()).max(1.0)
    }

    /// `updateCwnd` (§3): reductions, then the increase law, then the rate
    /// share. The version row picks HEAD's or the 2024 form of each step.
    fn update_cwnd(&mut self, now: SimTime) {
        let srtt_s = self.srtt.as_secs_f64();
        // Flight ratio before the update (2024 rate law; the code computes it
        // just before calling updateCwnd, :807).
        let bif_ratio = (self.prev_bif as f64 / self.cwnd.max(1) as f64).min(1.0);
        let since_cong = now.since(self.last_congestion).as_secs_f64();
        let mut post_cong = match self.v.phase_in {
            PhaseIn::Rtts(n) => since_cong / (f64::from(n) * srtt_s),
            PhaseIn::Fixed(d) => since_cong / d.as_secs_f64(),
        }
        .clamp(0.0, 1.0);
        self.slow_update(now);
        let mss = f64::from(self.mss());
        let cwnd_before = self.cwnd;
        let mut scl_i = self.scl_i();
        let rtt_scale = self.rtt_scale();
        let undershoot = !self.v.backoff_2024 && self.target < 0.8 * self.rate_acked;
        let mut signal = None;
        let mut alpha_used = 0.0;
        let scale = |c: u64, f: f64| (c as f64 * f) as u64;
        if self.loss_event {
            if now.since(self.last_cwnd_i_update) > Dur::from_millis(500) {
                self.last_cwnd_i_update = now;
                self.update_cwnd_i();
            }
            self.cwnd = self.cwnd_min.max(scale(self.cwnd, self.loss_beta));
            self.loss_event = false;
            self.last_congestion = now;
            post_cong = 0.0;
            signal = Some(Signal::Loss);
        } else if self.ce_event || self.virtual_ce_event {
            if now.since(self.last_cwnd_i_update) > self.srtt {
                self.last_cwnd_i_update = now;
                self.update_cwnd_i();
            }
            if self.v.backoff_2024 {
                (signal, alpha_used) = self.backoff_2024(now, scl_i);
            } else {
                (signal, alpha_used) = self.backoff_head(now, scl_i, undershoot, rtt_scale);
            }
            self.ce_event = false;
            self.virtual_ce_event = false;
            self.last_congestion = now;
            post_cong = 0.0;
        }
        let cwnd_reduced = self.cwnd;
        // 994f9a4 computes sclI and the multiplicative term after the cut.
        let cwnd_ext = if self.v.scl_i_after_reduction {
            scl_i = self.scl_i();
            self.cwnd
        } else {
            cwnd_before
        };
        let cwnd_f = self.cwnd as f64;
        let cwnd_ratio = mss / cwnd_f;

        let acked = self.bytes_newly_acked.saturating_sub(self.bytes_newly_acked_ce) as f64;
        let mut inc = acked * cwnd_ratio;
        let max_allowed = mss + self.max_bif.max(self.max_bif_prev) as f64 * self.inflight_headroom;
        let inc_applied;
        if self.v.increase_2024 {
            // 2024 (:1651-1702): sclI floor only while L4S is active, the
            // small-window damping, a fixed-time phase-in, one gate.
            inc *= match (self.l4s_active, self.v.increase_scl_i_floor_active) {
                (true, true) => scl_i.max(0.25),
                (true, false) => 1.0,
                (false, _) => scl_i,
            };
            inc *= (srtt_s / VIRTUAL_RTT.as_secs_f64()).min(1.0);
            inc *= (1.0 - cwnd_ratio).max(0.5);
            let ext = self.mul_increase * cwnd_ext as f64 / mss;
            let phase_in_on = match self.v.phase_in {
                PhaseIn::Fixed(d) => d > Dur::from_millis(200),
                PhaseIn::Rtts(_) => true,
            };
            inc *= if ext > 0.0 && phase_in_on { 1.0 + ext * post_cong * scl_i } else { 1.0 + ext };
            let candidate = self.cwnd + (inc + 0.5) as u64;
            inc_applied = candidate as f64 <= max_allowed;
            if inc_applied {
                self.cwnd = candidate;
            }
        } else {
            // Increase: ≈ 1 MSS per RTT plus a multiplicative term phased in
            // over 200 RTTs after congestion and damped near cwndI.
            inc *= scl_i.max(0.25)
                * (srtt_s / VIRTUAL_RTT.as_secs_f64()).min(1.0)
                * self.lat_diff_scale.clamp(0.1, 1.0);
            inc *= 1.0 + (self.mul_increase * cwnd_f / mss) * post_cong * scl_i;
            let candidate = self.cwnd + (inc + 0.5) as u64;
            inc_applied = candidate as f64 <= max_allowed && self.target < self.max_rate;
            if inc_applied {
                self.cwnd = candidate;
            }
        }
        self.cwnd = self.cwnd.max(self.cwnd_min);
        (self.bytes_newly_acked, self.bytes_newly_acked_ce) = (0, 0);

        // §5: R = 8·cwnd/clamp(sRTT + 1 ms, 1 ms, 200 ms) × small-window
        // penalty / 1.1 × MSS/(MSS + 20). 2024 (:1720-1747): no ÷1.1, but
        // ÷ min(1.5, flight ratio/0.9) while L4S is inactive.
        let rtt = (srtt_s + 0.001).clamp(0.001, 0.2);
        let mut r = 8.0 * self.cwnd as f64 / rtt;
        if self.v.rate_2024 {
            if !self.l4s_active && bif_ratio > BIF_LIMIT {
                r /= BIF_LIMIT_MAX_COMP.min(bif_ratio / BIF_LIMIT);
            }
        } else {
            r /= RATE_HEADROOM;
        }
        r *= 1.0 - (cwnd_ratio - 0.1).clamp(0.0, 0.2);
        r *= mss / (mss + PACKET_OVERHEAD);
        self.rate_share = r;

        self.last_update = Some(CwndUpdate {
            at: now,
            signal,
            cwnd_before,
            cwnd_reduced,
            cwnd_after: self.cwnd,
            increment: inc,
            inc_applied,
            alpha: alpha_used,
            rtt_scale,
            undershoot,
            qdelay_avg: self.qdelay_avg(),
            post_cong,
            scl_i,
        });
    }

    /// sclI = clamp((g·(cwnd − cwndI)/cwndI)², 0.1, 1), g = 8 (HEAD) or 4.
    fn scl_i(&self) -> f64 {
        let rel = self.v.scl_i_gain * (self.cwnd as f64 - self.cwnd_i as f64) / self.cwnd_i as f64;
        (rel * rel).clamp(0.1, 1.0)
    }

    /// The inflexion point: the current window (HEAD) or the median of the
    /// last 9 (2024 `updateCwndI`: the first call fills the history).
    fn update_cwnd_i(&mut self) {
        let n = self.v.cwnd_i_hist.clamp(1, CWND_I_HIST);
        if n == 1 {
            self.cwnd_i = self.cwnd;
            return;
        }
        if self.cwnd_i_hist[0] == 0 {
            self.cwnd_i_hist[..n].fill(self.cwnd);
        }
        self.cwnd_i_hist[self.cwnd_i_ix % n] = self.cwnd;
        self.cwnd_i_ix = (self.cwnd_i_ix + 1) % n;
        self.cwnd_i = version::median(&self.cwnd_i_hist, n);
    }

    /// HEAD's CE / virtual-CE reduction: α/2 ÷ rttScale with the undershoot
    /// guard, sclI and jitter scaling, and the re-anchor after 100 sRTT.
    fn backoff_head(&mut self, now: SimTime, scl_i: f64, undershoot: bool, rtt_scale: f64) -> (Option<Signal>, f64) {
        let scale = |c: u64, f: f64| (c as f64 * f) as u64;
        let target_s = self.delay_target.as_secs_f64();
        let (mut signal, mut alpha_used) = (None, 0.0);
        if self.ce_event {
            if self.l4s {
                let mut b = self.alpha / 2.0;
                if undershoot {
                    b *= 0.25;
                }
                b /= rtt_scale;
                if self.qdelay.as_secs_f64() < target_s / 4.0 {
                    b *= scl_i.max(0.25) * self.lat_diff_scale.clamp(0.25, 1.0);
                }
                // Re-anchor after a long rate-limited period.
                let long = VIRTUAL_RTT.max(self.srtt) * 100;
                if now.since(self.last_congestion) > long && self.max_bif_prev > 0 {
                    self.cwnd = self.cwnd.min(self.max_bif_prev);
                }
                self.cwnd = self.cwnd_min.max(scale(self.cwnd, 1.0 - b));
                alpha_used = self.alpha;
                signal = Some(Signal::L4sCe);
            } else {
                self.cwnd = self.cwnd_min.max(scale(self.cwnd, self.ecn_beta));
                signal = Some(Signal::ClassicCe);
            }
            self.virtual_ce_event = false;
        }
        if self.virtual_ce_event {
            let mut b = self.alpha_v / 2.0;
            if undershoot {
                b *= 0.25;
            }
            b /= rtt_scale; // the code divides by rttScale a second time
            self.cwnd = self.cwnd_min.max(scale(self.cwnd, 1.0 - b));
            alpha_used = self.alpha_v;
            signal = Some(Signal::VirtualCe);
        }
        (signal, alpha_used)
    }

    /// The 2024 reduction (76a298a ScreamV2Tx.cpp:1560-1630): L4S CE backs
    /// off α/2 · max(0.5, 1 − MSS/cwnd) [· max(0.25, sclI) below T/4 of
    /// queue delay], re-anchoring after 5 s without congestion (backoff and
    /// α ≥ 0.25); a virtual CE wins over a real one and backs off αv/2; a
    /// classic CE cuts by beta.
    fn backoff_2024(&mut self, now: SimTime, scl_i: f64) -> (Option<Signal>, f64) {
        let scale = |c: u64, f: f64| (c as f64 * f) as u64;
        if self.l4s && !self.virtual_ce_event {
            let mut b = self.alpha / 2.0 * (1.0 - f64::from(self.mss()) / self.cwnd as f64).max(0.5);
            if self.v.backoff_scl_i && self.qdelay < self.delay_target / 4 {
                b *= scl_i.max(0.25);
            }
            if now.since(self.last_congestion) > REANCHOR_2024 {
                self.cwnd = self.cwnd.min(self.max_bif_prev);
                b = b.max(0.25);
                self.alpha = self.alpha.max(0.25);
            }
            self.cwnd = self.cwnd_min.max(scale(self.cwnd, 1.0 - b));
            (Some(Signal::L4sCe), self.alpha)
        } else if self.virtual_ce_event {
            self.cwnd = self.cwnd_min.max(scale(self.cwnd, 1.0 - self.alpha_v / 2.0));
            (Some(Signal::VirtualCe), self.alpha_v)
        } else {
            self.cwnd = self.cwnd_min.max(scale(self.cwnd, self.ecn_beta));
            (Some(Signal::ClassicCe), 0.0)
        }
    }

    /// 2024 virtual CE (:757-781): only while L4S is inactive or α is below
    /// a tenth of αlim = 2·MSS·8/(target·sRTT); above qdelayAvg > T·thr,
    /// αv = min(1, αlim + max(0, (qdelayAvg − T/4)/(3T/4))).
    fn virtual_ce_2024(&mut self, now: SimTime, backoff_iv: Dur) {
        let target_s = self.delay_target.as_secs_f64();
        let alpha_lim = 2.0 / self.target * f64::from(self.mss()) * 8.0 / self.srtt.as_secs_f64();
        let allowed = self.alpha < 0.1 * alpha_lim || !self.l4s_active;
        if allowed && self.qdelay_avg_s > target_s * self.v.virtual_ce_threshold && now.since(self.last_event) > backoff_iv {
            self.virtual_ce_event = true;
            self.alpha_v = (alpha_lim + ((self.qdelay_avg_s - target_s / 4.0) / (0.75 * target_s)).max(0.0)).min(1.0);
        }
    }

    /// Every 50 ms: max bytes in flight history, the near-max cwnd cap, and
    /// (after 2 s) the maxBytesInFlight → maxBytesInFlightPrev hand-over.
    fn slow_update(&mut self, now: SimTime) {
        if now.since(self.last_slow_update) <= SLOW_UPDATE_INTERVAL {
            return;
        }
        self.max_bif_hist[self.max_bif_ix] = self.max_bif;
        self.max_bif_ix = (self.max_bif_ix + 1) % MAX_BIF_HIST;
        if self.target > 0.95 * self.max_rate {
            let hist = self.max_bif_hist.iter().copied().max().unwrap_or(0).max(self.max_bif) as f64;
            let rate_cap = self.pace_headroom * self.max_rate / 8.0 * (self.srtt.as_secs_f64() + 0.001);
            self.cwnd = self.cwnd.min(hist.max(rate_cap) as u64);
        }
        if now.since(self.init_time) > Dur::from_secs(2) {
            self.max_bif_prev = self.max_bif;
            self.max_bif = 0;
        }
        self.last_slow_update = now;
    }

    /// Per-stream target = clamp(share/(1 + raf), min, max); the
    /// encoder-facing value follows with hysteresis (+h / −h/4).
    /// 2024: clamp(rateShare) only (ScreamV2TxStream.cpp:300 at 76a298a).
    fn update_target_bitrate(&mut self) {
        let raf = if self.v.rate_2024 { 0.0 } else { self.raf };
        self.target = (self.rate_share / (1.0 + raf)).clamp(self.min_rate, self.max_rate.max(self.min_rate));
        let diff = (self.target - self.target_h) / self.target_h;
        if self.target_h <= 0.0 || diff > self.hysteresis || diff < -self.hysteresis / 4.0 {
            self.target_h = self.target;
        }
    }
}
