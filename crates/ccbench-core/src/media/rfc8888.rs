//! RFC 8888 congestion-control feedback (CCFB) and the SCReAM BW test
//! tool's receiver (scream: code/ScreamRx.cpp, code/scream_receiver.cpp →
//! `scream_bw_test_rx`, at c8f84c3).
//!
//! Report contents (RFC 8888 §3.1): per media SSRC a `begin_seq`, a count,
//! and per sequence number R (received), ECN (2 bits) and ATO, the arrival
//! time offset before the Report Timestamp in 1/1024 s (13 bits). Like the
//! tool, every report covers a fixed window of `nreported` (default 64, at
//! most [`MAX_REPORTED`]) sequence numbers ending at the highest received,
//! so consecutive reports overlap and survive RTCP loss. Lost packets are
//! R = 0; a late (reordered) packet still inside the window shows up as
//! received in the next report.
//!
//! Triggers (scream_receiver.cpp main loop and `rtcpPeriodicThread`):
//! - on arrival, when highest − last reported highest ≥ `ackdiff` (default
//!   nreported/2; before the first report "last reported" is the first
//!   sequence − 1, so in-order traffic gets a report every `ackdiff`
//!   packets), or when the packet has the marker bit (end of frame);
//! - a poll: whenever packets arrived since the last report and at least
//!   `rtcpFbInterval` passed since the last report (of any trigger). The
//!   interval is 0.2 s (the tool's initial 13107 in Q16) until 100 ms after
//!   the first RTP packet, then the version's feedback interval: 40 ms
//!   today (ScreamRx.cpp `kMaxRtcpInterval`), 5 ms in the 2024 code
//!   (`media.version = "76a298a"`: ScreamRx.cpp:426-430 at 76a298a sets
//!   min(5 ms, 1/rate) with rate ≤ 100 Hz, i.e. always 5 ms), unless
//!   `media.feedback_interval` overrides it.
//!
//! Units: time in ns; ATO in 1/1024 s; sizes in bytes.
//! Modelling choices and deviations:
//! - The receiver clock starts at 0 with "last feedback" = 0 (as the tool's
//!   `lastFeedbackT` = 0), so a flow starting at t ≈ 0 gets its first poll
//!   report at 0.2 s unless a marker or `ackdiff` comes first.
//! - The 0.5 ms poll thread is an exact deadline here (the tool adds up to
//!   0.5 ms of latency); the interval switch happens at first packet
//!   + 100 ms exactly (the tool switches on the first arrival after that).
//! - ATO = ⌊(report_time − arrival)·1024 s⁻¹⌋, truncated as the tool's
//!   Q16 `>> 6`, saturating at 0x1FFE (0x1FFF means unavailable).
//! - `num_reports` is kept as the plain count (RFC 8888 §3.1, pion); the
//!   tool's count − 1 quirk only matters on the wire.
//! - No separate catch-up report for packets older than the window (they
//!   are counted but never reported), no NAT keep-alives, no reset after
//!   2 s without RTP, one SSRC per receiver.
//! - Reports are snapshots in a preallocated ring of [`REPORT_RING`]
//!   entries; a feedback packet names its snapshot by id and must be
//!   consumed before the ring wraps (1024 reports, seconds at any rate).

use super::MediaConfig;
use crate::packet::{Ecn, Rtp};
use crate::units::{Dur, SimTime};

/// Most sequence numbers one report covers.
pub const MAX_REPORTED: usize = 64;
/// Report snapshots kept (ids index this ring modulo its size).
pub const REPORT_RING: usize = 1024;
/// Largest ATO value SCReAM writes (0x1FFF = "unavailable").
pub const ATO_MAX: u16 = 0x1FFE;
/// The tool's initial `rtcpFbInterval` (13107/65536 s ≈ 0.2 s).
const FB_INTERVAL_INIT: Dur = Dur::from_millis(200);
/// After this long since the first RTP packet the interval becomes
/// `feedback_interval`.
const FB_INTERVAL_SWITCH: Dur = Dur::from_millis(100);

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

/// ATO in 1/1024 s for a packet that arrived `age` before the report,
/// truncated and saturated at [`ATO_MAX`].
pub fn ato_of(age: Dur) -> u16 {
    let q = u128::from(age.nanos()) * 1024 / 1_000_000_000;
    q.min(u128::from(ATO_MAX)) as u16
}

/// Arrival record of one sequence number (slot `seq % MAX_REPORTED`).
#[derive(Copy, Clone, Debug)]
struct Slot {
    /// Which sequence number the slot holds (tag; `u32::MAX` = empty).
    seq: u32,
    at: SimTime,
    ecn: Ecn,
}

const EMPTY: Slot = Slot { seq: u32::MAX, at: SimTime::ZERO, ecn: Ecn::NotEct };

/// The BW tool's RTP receiver: records arrivals and produces RFC 8888
/// reports on the triggers in the module docs.
pub struct MediaReceiver {
    /// Sequence numbers per report (1..=64).
    nreported: u32,
    /// Report when highest − last reported highest ≥ this.
    ackdiff: u32,
    feedback_interval: Dur,
    slots: [Slot; MAX_REPORTED],
    highest: Option<u32>,
    /// Highest sequence covered by the last report (first seq − 1 before).
    last_reported: i64,
    /// Packets arrived since the last report (`nRtpSinceLastRtcp`).
    unreported: u32,
    last_feedback: SimTime,
    first_rx: Option<SimTime>,
    reports: Box<[Report]>,
    next_id: u32,
    /// RTP packets received (duplicates included).
    pub packets: u64,
    /// RTP bytes (header + payload) received.
    pub bytes: u64,
    /// CE-marked packets received.
    pub ce_packets: u64,
    /// Reports produced.
    pub reports_sent: u64,
}

impl MediaReceiver {
    pub fn new(cfg: &MediaConfig) -> Self {
        let nreported = cfg.nreported.clamp(1, MAX_REPORTED as u32);
        MediaReceiver {
            nreported,
            ackdiff: cfg.ackdiff.unwrap_or(nreported / 2).max(1),
            feedback_interval: cfg.version_params().feedback_interval,
            slots: [EMPTY; MAX_REPORTED],
            highest: None,
            last_reported: 0,
            unreported: 0,
            last_feedback: SimTime::ZERO,
            first_rx: None,
            reports: vec![Report::default(); REPORT_RING].into_boxed_slice(),
            next_id: 0,
            packets: 0,
            bytes: 0,
            ce_packets: 0,
            reports_sent: 0,
        }
    }

    /// An RTP packet arrived with IP ECN field `ecn`. Returns the id of a
    /// report to send now, if feedback is due.
    pub fn on_rtp(&mut self, rtp: &Rtp, ecn: Ecn, now: SimTime) -> Option<u32> {
        self.packets += 1;
        self.bytes += u64::from(rtp.rtp_bytes);
        self.ce_packets += u64::from(ecn == Ecn::Ce);
        if self.first_rx.is_none() {
            self.first_rx = Some(now);
            self.last_reported = i64::from(rtp.seq) - 1;
        }
        self.unreported += 1;
        let s = rtp.seq;
        let highest = match self.highest {
            Some(h) if h >= s => h,
            _ => s,
        };
        self.highest = Some(highest);
        // Record it if it is still inside the reporting window; keep the
        // first arrival of a duplicate.
        if highest - s < self.nreported {
            let slot = &mut self.slots[s as usize % MAX_REPORTED];
            if slot.seq != s {
                *slot = Slot { seq: s, at: now, ecn };
            }
        }
        let ackdiff_due = i64::from(highest) - self.last_reported >= i64::from(self.ackdiff);
        if ackdiff_due || rtp.marker || self.poll_due(now) {
            return Some(self.make_report(now));
        }
        None
    }

    /// When the poll wants to send (packets unreported), else `NEVER`.
    pub fn next_timer(&self) -> SimTime {
        let Some(first) = self.first_rx else { return SimTime::NEVER };
        if self.unreported == 0 {
            return SimTime::NEVER;
        }
        let switch = first + FB_INTERVAL_SWITCH;
        let short = self.last_feedback + self.feedback_interval;
        if short >= switch {
            short
        } else {
            // Before the switch the 0.2 s interval applies; at the switch
            // the short one (already elapsed) does.
            switch.min(self.last_feedback + FB_INTERVAL_INIT)
        }
    }

    /// The poll fired: returns a report id if feedback is due now.
    pub fn on_timer(&mut self, now: SimTime) -> Option<u32> {
        if self.poll_due(now) {
            Some(self.make_report(now))
        } else {
            None
        }
    }

    /// The snapshot a feedback packet names.
    pub fn report(&self, id: u32) -> &Report {
        &self.reports[id as usize % REPORT_RING]
    }

    /// `rtcpFbInterval` in force at `now`.
    pub fn feedback_interval(&self, now: SimTime) -> Dur {
        match self.first_rx {
            Some(f) if now >= f + FB_INTERVAL_SWITCH => self.feedback_interval,
            _ => FB_INTERVAL_INIT,
        }
    }

    fn poll_due(&self, now: SimTime) -> bool {
        self.unreported > 0 && now.since(self.last_feedback.min(now)) >= self.feedback_interval(now)
    }

    /// Snapshot the window of `nreported` sequences ending at the highest.
    fn make_report(&mut self, now: SimTime) -> u32 {
        let highest = self.highest.expect("a report needs a received packet");
        let begin = highest.saturating_sub(self.nreported - 1);
        let num = highest - begin + 1;
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let r = &mut self.reports[id as usize % REPORT_RING];
        r.report_time = now;
        r.begin_seq = begin;
        r.num = num as u16;
        r.received = 0;
        for i in 0..MAX_REPORTED {
            let s = begin.wrapping_add(i as u32);
            let slot = &self.slots[s as usize % MAX_REPORTED];
            if i < num as usize && slot.seq == s {
                r.received |= 1 << i;
                r.ecn[i] = slot.ecn;
                r.ato[i] = ato_of(now.since(slot.at.min(now)));
            } else {
                r.ecn[i] = Ecn::NotEct;
                r.ato[i] = 0;
            }
        }
        self.last_reported = i64::from(highest);
        self.unreported = 0;
        self.last_feedback = now;
        self.reports_sent += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> MediaReceiver {
        MediaReceiver::new(&MediaConfig::default())
    }
    fn rtp(seq: u32, marker: bool) -> Rtp {
        Rtp { seq, ts: 0, marker, rtp_bytes: 1212 }
    }
    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }
    fn us(x: u64) -> SimTime {
        SimTime(x * 1_000)
    }

    #[test]
    fn reports_every_ackdiff_packets_in_order() {
        let mut r = rx();
        // 100 µs apart: no poll fires (0.2 s interval), no markers.
        let fired: Vec<u32> = (0..200).filter(|&s| r.on_rtp(&rtp(s, false), Ecn::Ect1, us(1000 + 100 * u64::from(s))).is_some()).collect();
        assert_eq!(fired, vec![31, 63, 95, 127, 159, 191]);
        assert_eq!(r.packets, 200);
        assert_eq!(r.bytes, 200 * 1212);
    }

    #[test]
    fn ackdiff_and_nreported_are_configurable() {
        let cfg = MediaConfig { nreported: 200, ackdiff: Some(8), ..Default::default() };
        let mut r = MediaReceiver::new(&cfg);
        let fired: Vec<u32> = (0..80).filter(|&s| r.on_rtp(&rtp(s, false), Ecn::NotEct, us(1000 + u64::from(s))).is_some()).collect();
        assert_eq!(fired, (0..10).map(|k| 8 * k + 7).collect::<Vec<_>>());
        assert_eq!((r.report(4).begin_seq, r.report(4).num), (0, 40));
        // nreported is capped at 64.
        assert_eq!((r.report(9).begin_seq, r.report(9).num), (79 - 63, 64));
    }

    #[test]
    fn marker_triggers_a_report() {
        let mut r = rx();
        assert!(r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10)).is_none());
        assert!(r.on_rtp(&rtp(1, false), Ecn::NotEct, ms(11)).is_none());
        let id = r.on_rtp(&rtp(2, true), Ecn::NotEct, ms(12)).unwrap();
        let rep = r.report(id);
        assert_eq!((rep.begin_seq, rep.num, rep.received), (0, 3, 0b111));
        assert_eq!(rep.report_time, ms(12));
    }

    #[test]
    fn poll_fires_only_when_new_data_exists() {
        let mut r = rx();
        assert_eq!(r.next_timer(), SimTime::NEVER);
        // Two packets at 10 ms, no marker: the 0.2 s start-up interval applies,
        // but the switch to 40 ms at first + 100 ms comes sooner.
        r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10));
        r.on_rtp(&rtp(1, false), Ecn::NotEct, ms(11));
        assert_eq!(r.next_timer(), ms(110));
        assert!(r.on_timer(ms(109)).is_none());
        let id = r.on_timer(ms(110)).unwrap();
        assert_eq!(r.report(id).num, 2);
        // Nothing new: no timer, polling gives nothing.
        assert_eq!(r.next_timer(), SimTime::NEVER);
        assert!(r.on_timer(ms(500)).is_none());
        // New data: due 40 ms after the last report.
        r.on_rtp(&rtp(2, false), Ecn::NotEct, ms(120));
        assert_eq!(r.next_timer(), ms(150));
        assert!(r.on_timer(ms(149)).is_none());
        assert!(r.on_timer(ms(150)).is_some());
        // A packet arriving after the interval elapsed is reported at once.
        assert!(r.on_rtp(&rtp(3, false), Ecn::NotEct, ms(200)).is_some());
    }

    #[test]
    fn startup_interval_is_200ms_from_receiver_start() {
        let mut r = rx();
        // First packet at 150 ms: interval still 0.2 s since t = 0.
        assert!(r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(150)).is_none());
        assert_eq!(r.next_timer(), ms(200));
        // First packet after 0.2 s: reported at once.
        let mut r = rx();
        assert!(r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(250)).is_some());
        assert_eq!(r.feedback_interval(ms(300)), Dur::from_millis(200));
        assert_eq!(r.feedback_interval(ms(350)), Dur::from_millis(40));
    }

    #[test]
    fn receiver_of_2024_polls_every_5ms_and_the_key_overrides_it() {
        use crate::media::ScreamVersion;
        // ScreamRx.cpp:426-430 at 76a298a: min(5 ms, 1/rate) once running.
        let cfg = MediaConfig { version: ScreamVersion::V2024_10_31, ..Default::default() };
        let mut r = MediaReceiver::new(&cfg);
        r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10));
        assert_eq!(r.on_timer(ms(110)).map(|id| r.report(id).num), Some(1));
        // A packet every ms, no marker, ackdiff 32: a poll report every 5 ms.
        let mut sent = Vec::new();
        for k in 1..=40u32 {
            let t = ms(110 + u64::from(k));
            if r.on_rtp(&rtp(k, false), Ecn::NotEct, t).is_some() {
                sent.push(t);
            }
            while r.next_timer() <= t {
                let at = r.next_timer();
                if r.on_timer(at).is_some() {
                    sent.push(at);
                }
            }
        }
        let gaps: Vec<Dur> = sent.windows(2).map(|w| w[1].since(w[0])).collect();
        assert_eq!(sent.len(), 8, "{sent:?}");
        assert!(gaps.iter().all(|&g| g == Dur::from_millis(5)), "{gaps:?}");
        assert_eq!(r.feedback_interval(ms(200)), Dur::from_millis(5));
        // HEAD: 40 ms; an explicit key wins over either version.
        let mut head = rx();
        head.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10));
        assert_eq!(head.feedback_interval(ms(200)), Dur::from_millis(40));
        let cfg = MediaConfig { feedback_interval: Some(Dur::from_millis(10)), ..cfg };
        let mut r = MediaReceiver::new(&cfg);
        r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10));
        assert_eq!(r.feedback_interval(ms(200)), Dur::from_millis(10));
    }

    #[test]
    fn window_covers_the_last_64_sequences_and_overlaps() {
        let mut r = rx();
        let mut ids = vec![];
        for s in 0..=100 {
            if let Some(id) = r.on_rtp(&rtp(s, false), Ecn::Ect1, us(1000 + u64::from(s))) {
                ids.push(id);
            }
        }
        let a = r.report(ids[1]); // at seq 63
        assert_eq!((a.begin_seq, a.num, a.received), (0, 64, u64::MAX));
        let b = r.report(ids[2]); // at seq 95
        assert_eq!((b.begin_seq, b.num, b.received), (32, 64, u64::MAX));
        // Overlap: 32..=63 appear in both, with the same arrival times.
        for s in 32..64u32 {
            let ta = a.arrival((s - a.begin_seq) as usize).unwrap();
            let tb = b.arrival((s - b.begin_seq) as usize).unwrap();
            assert!(ta.0.diff_ns(tb.0).abs() < 1_000_000, "seq {s}");
            assert_eq!(ta.1, Ecn::Ect1);
        }
        // First report: window starts at 0, only 32 sequences exist.
        let f = r.report(ids[0]);
        assert_eq!((f.begin_seq, f.num), (0, 32));
        assert_eq!(f.rtcp_bytes(), 8 + 8 + 64 + 4);
        assert_eq!(a.rtcp_bytes(), 148);
    }

    #[test]
    fn ato_quantizes_to_1024ths_and_saturates() {
        assert_eq!(ato_of(Dur::from_millis(10)), 10); // 10.24 → 10
        assert_eq!(ato_of(Dur::from_millis(1000)), 1024);
        assert_eq!(ato_of(Dur::from_nanos(976_562)), 0); // just under 1/1024 s
        assert_eq!(ato_of(Dur::from_nanos(976_563)), 1);
        assert_eq!(ato_of(Dur::from_secs(7)), 7168);
        assert_eq!(ato_of(Dur::from_secs(9)), ATO_MAX);

        let mut r = rx();
        r.on_rtp(&rtp(0, false), Ecn::Ce, ms(20));
        let id = r.on_rtp(&rtp(1, true), Ecn::Ect1, ms(30)).unwrap();
        let rep = r.report(id);
        assert_eq!(rep.ato[..2], [10, 0]);
        let (t0, e0) = rep.arrival(0).unwrap();
        assert_eq!(e0, Ecn::Ce);
        // Reconstructed arrival is within one ATO unit after the true one.
        assert!(t0 >= ms(20) && t0.since(ms(20)) < Dur(976_563), "{t0:?}");
        assert_eq!(r.ce_packets, 1);
        // A packet 9 s old saturates at 0x1FFE.
        let mut r = rx();
        r.on_rtp(&rtp(0, false), Ecn::NotEct, ms(10));
        let id = r.on_rtp(&rtp(1, true), Ecn::NotEct, ms(9010)).unwrap();
        assert_eq!(r.report(id).ato[0], ATO_MAX);
    }

    #[test]
    fn gaps_are_losses_and_late_packets_appear_in_later_reports() {
        let mut r = rx();
        for s in [0, 1, 3, 4] {
            r.on_rtp(&rtp(s, false), Ecn::NotEct, ms(10 + u64::from(s)));
        }
        let id = r.on_rtp(&rtp(5, true), Ecn::NotEct, ms(15)).unwrap();
        let rep = r.report(id).clone();
        assert_eq!((rep.begin_seq, rep.num, rep.received), (0, 6, 0b111011));
        assert!(rep.arrival(2).is_none());
        // Seq 2 arrives late (highest unchanged), then the next frame ends.
        assert!(r.on_rtp(&rtp(2, false), Ecn::NotEct, ms(17)).is_none());
        let id = r.on_rtp(&rtp(6, true), Ecn::NotEct, ms(18)).unwrap();
        let rep = r.report(id);
        assert_eq!((rep.begin_seq, rep.num, rep.received), (0, 7, 0b1111111));
        let (t2, _) = rep.arrival(2).unwrap();
        assert!(t2 >= ms(17) && t2 < ms(18));
        // A packet older than the window is counted but never reported.
        for s in 7..100 {
            r.on_rtp(&rtp(s, false), Ecn::NotEct, ms(20));
        }
        let before = r.packets;
        r.on_rtp(&rtp(2, false), Ecn::NotEct, ms(21));
        assert_eq!(r.packets, before + 1);
    }

    #[test]
    fn a_jump_past_the_window_leaves_no_stale_bits() {
        let mut r = rx();
        for s in 0..10 {
            r.on_rtp(&rtp(s, false), Ecn::NotEct, ms(10));
        }
        // seq 200 = 10 + 190: slots of 0..9 alias 128..137 etc., must read 0.
        let id = r.on_rtp(&rtp(200, true), Ecn::NotEct, ms(11)).unwrap();
        let rep = r.report(id);
        assert_eq!((rep.begin_seq, rep.num), (137, 64));
        assert_eq!(rep.received, 1 << 63);
    }

    #[test]
    fn report_ids_index_a_ring_of_snapshots() {
        let mut r = rx();
        let a = r.on_rtp(&rtp(0, true), Ecn::NotEct, ms(1)).unwrap();
        let b = r.on_rtp(&rtp(1, true), Ecn::NotEct, ms(2)).unwrap();
        assert_ne!(a, b);
        // The earlier snapshot is unchanged by the later report.
        assert_eq!(r.report(a).num, 1);
        assert_eq!(r.report(b).num, 2);
        assert_eq!(r.reports_sent, 2);
    }
}
