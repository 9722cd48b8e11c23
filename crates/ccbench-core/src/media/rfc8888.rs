//! STUB: RFC 8888 receiver (replaced by the full model).
use super::MediaConfig;
use crate::packet::{Ecn, Rtp};
use crate::units::SimTime;

/// Most sequence numbers one report covers.
pub const MAX_REPORTED: usize = 64;

/// One RFC 8888 report block snapshot (a single media SSRC).
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Report Timestamp: when the receiver sent it.
    pub report_time: SimTime,
    /// First (extended) sequence number covered and how many follow.
    pub begin_seq: u32,
    pub num: u16,
    /// Bit i: sequence begin_seq + i was received.
    pub received: u64,
    /// ECN codepoint of each received packet.
    pub ecn: [Ecn; MAX_REPORTED],
    /// Arrival Time Offset before report_time, in 1/1024 s (13 bits on the
    /// wire; 0x1FFE saturates, 0x1FFF = unavailable).
    pub ato: [u16; MAX_REPORTED],
}

impl Default for Report {
    fn default() -> Self {
        Report { report_time: SimTime::ZERO, begin_seq: 0, num: 0, received: 0, ecn: [Ecn::NotEct; MAX_REPORTED], ato: [0; MAX_REPORTED] }
    }
}

impl Report {
    /// Arrival time and ECN of sequence `begin_seq + i`, if it was received.
    pub fn arrival(&self, i: usize) -> Option<(SimTime, Ecn)> {
        if i >= self.num as usize || self.received >> i & 1 == 0 {
            return None;
        }
        let back = crate::units::Dur((u64::from(self.ato[i]) * 1_000_000_000) / 1024);
        Some((SimTime(self.report_time.0.saturating_sub(back.0)), self.ecn[i]))
    }
    /// RTCP bytes (RFC 8888 §3.1): 8 B header + SSRC, 8 B per report block
    /// header, 2 B per reported packet padded to 4, 4 B report timestamp.
    pub fn rtcp_bytes(&self) -> u32 {
        8 + 8 + (2 * u32::from(self.num)).div_ceil(4) * 4 + 4
    }
}

pub struct MediaReceiver {
    reports: Vec<Report>,
    next_id: u32,
    highest: Option<u32>,
    pub packets: u64,
    pub bytes: u64,
    pub ce_packets: u64,
}

impl MediaReceiver {
    pub fn new(_cfg: &MediaConfig) -> Self {
        MediaReceiver { reports: vec![Report::default(); 256], next_id: 0, highest: None, packets: 0, bytes: 0, ce_packets: 0 }
    }
    pub fn on_rtp(&mut self, rtp: &Rtp, ecn: Ecn, now: SimTime) -> Option<u32> {
        self.packets += 1;
        self.bytes += u64::from(rtp.rtp_bytes);
        self.ce_packets += u64::from(ecn == Ecn::Ce);
        self.highest = Some(self.highest.map_or(rtp.seq, |h| h.max(rtp.seq)));
        let id = self.next_id;
        self.next_id += 1;
        let r = &mut self.reports[id as usize % 256];
        *r = Report { report_time: now, begin_seq: rtp.seq, num: 1, received: 1, ..Default::default() };
        r.ecn[0] = ecn;
        Some(id)
    }
    pub fn next_timer(&self) -> SimTime {
        SimTime::NEVER
    }
    pub fn on_timer(&mut self, _now: SimTime) -> Option<u32> {
        None
    }
    pub fn report(&self, id: u32) -> &Report {
        &self.reports[id as usize % 256]
    }
}
