//! STUB: media sender (replaced by the full model): sends at the start rate.
use super::rfc8888::Report;
use super::{MediaConfig, RTP_OVERHEAD};
use crate::packet::{Ecn, Header, Packet, Rtp};
use crate::rng::SimRng;
use crate::units::{Dur, SimTime};

/// What the metrics record about a media sender (units in the names).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct MediaStats {
    pub target_bps: f64,
    pub tx_rate_bps: f64,
    pub rtp_queue_delay: Dur,
    pub qdelay: Dur,
    pub srtt: Dur,
    pub cwnd_bytes: u64,
    pub bytes_in_flight: u64,
    /// CE-marked share of the packets newly acknowledged (last update).
    pub ce_fraction: f64,
    pub alpha: f64,
    pub packets_sent: u64,
    pub rtp_bytes_sent: u64,
    pub packets_lost: u64,
    pub frames: u64,
    pub rtp_discards: u64,
}

pub struct MediaSender {
    cfg: MediaConfig,
    ect: Ecn,
    tmpl: Packet,
    next_frame: SimTime,
    seq: u32,
    active: bool,
    stats: MediaStats,
}

impl MediaSender {
    pub fn new(cfg: &MediaConfig, ect: Ecn, tmpl: Packet, _rng: SimRng, _now: SimTime) -> Self {
        MediaSender { cfg: cfg.clone(), ect, tmpl, next_frame: SimTime::NEVER, seq: 0, active: false, stats: MediaStats::default() }
    }
    pub fn start(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.active = true;
        self.next_frame = now;
        self.on_timer(now, out);
    }
    pub fn stop(&mut self) {
        self.active = false;
        self.next_frame = SimTime::NEVER;
    }
    pub fn on_timer(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        if !self.active || now < self.next_frame {
            return;
        }
        let bytes = (self.cfg.init_rate.bps() as f64 / self.cfg.fps / 8.0) as u32;
        let n = bytes.div_ceil(self.cfg.mtu).max(1);
        for k in 0..n {
            let payload = if k + 1 == n { bytes - k * self.cfg.mtu } else { self.cfg.mtu };
            let rtp = Rtp { seq: self.seq, ts: 0, marker: k + 1 == n, rtp_bytes: payload + 12 };
            self.seq += 1;
            self.stats.packets_sent += 1;
            out(Packet { size: payload + RTP_OVERHEAD, ecn: self.ect, sent_at: now, hdr: Header::Rtp(rtp), ..self.tmpl });
        }
        self.next_frame = now + Dur::from_secs_f64(1.0 / self.cfg.fps);
    }
    pub fn on_feedback(&mut self, _report: &Report, _now: SimTime, _out: &mut impl FnMut(Packet)) {}
    pub fn next_timer(&self) -> SimTime {
        self.next_frame
    }
    pub fn stats(&self) -> MediaStats {
        self.stats
    }
    /// Current pacing rate, bit/s.
    pub fn pacing_rate_bps(&self) -> f64 {
        0.0
    }
    /// RTP bytes of a full-size packet (payload MTU + 12 B header).
    pub fn packet_bytes(&self) -> u32 {
        self.cfg.mtu + 12
    }
}
