//! STUB: SCReAM v2 congestion control (replaced by the full model). The
//! public API below is the contract the media sender uses.
use super::rfc8888::Report;
use super::MediaConfig;
use crate::units::{Dur, SimTime};

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

pub struct ScreamTx {
    target: f64,
}

impl ScreamTx {
    /// `l4s`: the flow sends ECT(1) and reacts to CE as L4S (α); otherwise
    /// CE is a classic signal.
    pub fn new(cfg: &MediaConfig, l4s: bool, now: SimTime) -> Self {
        let _ = (l4s, now);
        ScreamTx { target: cfg.init_rate.bps() as f64 }
    }
    /// An RTP packet (`size` = RTP header + payload bytes) was sent now.
    pub fn on_transmit(&mut self, now: SimTime, seq: u32, size: u32, rtp_ts: u32, marker: bool) {
        let _ = (now, seq, size, rtp_ts, marker);
    }
    /// RFC 8888 feedback arrived now.
    pub fn on_feedback(&mut self, now: SimTime, report: &Report) {
        let _ = (now, report);
    }
    /// The send gate: may a packet of `size` bytes go now?
    pub fn ok_to_transmit(&self, size: u32) -> bool {
        let _ = size;
        true
    }
    /// Pacing rate in bit/s (0 = no pacing).
    pub fn pacing_rate_bps(&self) -> f64 {
        1.5 * self.target
    }
    /// A new video frame was handed to the RTP queue: its bytes, the RTP
    /// queue's bytes and the age of its oldest packet (adaptive pacing, the
    /// RTP-queue rate adjustment).
    pub fn on_new_frame(&mut self, now: SimTime, frame_bytes: u32, rtp_queue_bytes: u64, rtp_queue_delay: Dur) {
        let _ = (now, frame_bytes, rtp_queue_bytes, rtp_queue_delay);
    }
    /// The RTP queue was flushed (discard): the next target is a refresh.
    pub fn on_rtp_queue_discard(&mut self, now: SimTime) {
        let _ = now;
    }
    /// Target bitrate for the encoder, bit/s; `None` once after a loss or
    /// discard (the BW tool then sends an empty "refresh" frame).
    pub fn target_bitrate(&mut self, now: SimTime) -> Option<f64> {
        let _ = now;
        Some(self.target)
    }
    pub fn state(&self) -> ScreamState {
        ScreamState::default()
    }
}
