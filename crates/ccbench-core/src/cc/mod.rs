//! Congestion control. The [`CongestionControl`] trait mirrors Linux's
//! `tcp_congestion_ops` hooks (include/net/tcp.h), named after events:
//! `ssthresh()` on a loss or ECN congestion signal, `cong_avoid()` per ACK
//! while not reducing, `on_rtt()` (pkts_acked), `on_state()` (set_state),
//! `on_ack_event()` (in_ack_event), `undo_cwnd()`. The TCP machinery
//! (recovery, PRR, CWR, RTO) lives in `tcp/` and is shared by every
//! algorithm; one file per algorithm here. Dispatch is static via [`AnyCc`].

pub mod bbr;
pub mod cubic;
pub mod dctcp;
pub mod prague;
pub mod reno;
pub mod sce;

use serde::{Deserialize, Serialize};

use crate::packet::Ecn;
use crate::rng::SimRng;
use crate::units::{Dur, Rate, SimTime};

/// "Infinite" ssthresh before the first reduction (Linux TCP_INFINITE_SSTHRESH).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// A per-ACK rate sample (Linux `struct rate_sample`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `tp.delivered` when the sample's segment was sent.
    pub prior_delivered: u64,
    /// `delivered_mstamp` when that segment was sent (`None`: no sample).
    pub prior_mstamp: Option<SimTime>,
    /// Segments delivered over `interval` (`None`: invalid sample).
    pub delivered: Option<u64>,
    /// max(send interval, ACK interval) (`None`: invalid or < min_rtt).
    pub interval: Option<Dur>,
    /// Send-phase and ACK-phase lengths.
    pub snd_interval: Dur,
    pub rcv_interval: Dur,
    /// Segments newly ACKed or SACKed by this ACK.
    pub acked_sacked: u32,
    /// Segments newly marked lost on this ACK.
    pub losses: u32,
    /// In flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// The sample's segment was sent while app-limited.
    pub is_app_limited: bool,
    /// The sample's segment was a retransmission.
    pub is_retrans: bool,
    /// RTT of the most recently sent, never-retransmitted segment this ACK
    /// delivered (Linux `rs->rtt_us` = ca_rtt).
    pub rtt: Option<Dur>,
    /// End sequence (seq + 1) of the sample's segment.
    pub(crate) last_end_seq: u64,
}

impl RateSample {
    /// Delivery rate in segments per second, when the sample is valid.
    pub fn rate_pps(&self) -> Option<f64> {
        match (self.delivered, self.interval) {
            (Some(d), Some(i)) if i > Dur::ZERO => Some(d as f64 / i.as_secs_f64()),
            _ => None,
        }
    }
}

/// The part of a TCP sender's state a congestion control reads and writes:
/// the fields of Linux's `tcp_sock` the CC modules touch. Windows count
/// segments.
#[derive(Clone, Debug)]
pub struct TcpCcState {
    pub now: SimTime,
    /// Congestion window, segments (`snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, segments.
    pub ssthresh: u32,
    /// Additive-increase accumulator (`snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Payload bytes per full segment.
    pub mss: u32,
    /// Smoothed RTT (zero before the first sample).
    pub srtt: Dur,
    /// Minimum RTT seen.
    pub min_rtt: Dur,
    /// Segments sent and not yet cumulatively ACKed or SACKed (in flight).
    pub in_flight: u32,
    /// Linux `tp->is_cwnd_limited` and `tp->max_packets_out`, kept by the
    /// sender's `tcp_cwnd_validate`: whether cwnd limited a transmission
    /// since the window now in flight began, else the largest
    /// `packets_out` seen in it. Read them through `is_cwnd_limited()`.
    pub cwnd_limited: bool,
    pub max_packets_out: u32,
    /// Oldest unacknowledged and next new segment numbers.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Segments delivered (ACKed or SACKed) so far, and those of them that
    /// arrived CE-marked (from AccECN counters or ECE accounting).
    pub delivered: u64,
    pub delivered_ce: u64,
    /// Time of the latest delivery (`delivered_mstamp`, tcp_rate.c).
    pub delivered_mstamp: SimTime,
    /// Non-zero while app-limited: the `delivered` count that ends the
    /// app-limited bubble (`tp->app_limited`).
    pub app_limited: u64,
    /// Segments marked lost so far (`tp->lost`).
    pub lost: u64,
    /// This ACK's delivery-rate sample (`struct rate_sample`).
    pub rs: RateSample,
    /// Earliest departure time of the next paced segment (`tcp_wstamp_ns`).
    pub edt: SimTime,
    /// Segments this ACK delivered that the receiver echoed as SCE-marked
    /// (ESCE), and their running total (SCE-aware flows only).
    pub acked_sce: u32,
    pub delivered_sce: u64,
    /// The sender paces (Linux `sk_pacing_status != SK_PACING_NONE`: fq
    /// on the sender, `tcp.pacing`, or an algorithm that sets its rate).
    pub paced: bool,
}

impl TcpCcState {
    pub fn new(now: SimTime, mss: u32, init_cwnd: u32) -> Self {
        TcpCcState {
            now,
            cwnd: init_cwnd,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            mss,
            srtt: Dur::ZERO,
            min_rtt: Dur::MAX,
            in_flight: 0,
            cwnd_limited: true,
            max_packets_out: 0,
            snd_una: 0,
            snd_nxt: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_mstamp: now,
            // Linux tcp_init_sock: app-limited until the first delivery.
            app_limited: u64::MAX,
            lost: 0,
            rs: RateSample::default(),
            edt: now,
            acked_sce: 0,
            delivered_sce: 0,
            paced: false,
        }
    }
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_slow_start`: cwnd grows by the ACKed segments up to
    /// ssthresh; returns the ACKed segments left over for congestion avoidance.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd).min(acked);
        self.cwnd = cwnd;
        left
    }

    /// Linux `tcp_is_cwnd_limited`: growth is allowed while cwnd limits
    /// sending, and in slow start until cwnd is twice what was in flight.
    pub fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited || (self.in_slow_start() && self.cwnd < 2 * self.max_packets_out)
    }

    /// The prelude every Linux `cong_avoid` shares: no growth unless
    /// cwnd-limited, then slow start. Returns the ACKed segments left for
    /// congestion avoidance (0: nothing more to do).
    pub fn ca_acked(&mut self, acked: u32) -> u32 {
        if !self.is_cwnd_limited() {
            return 0;
        }
        if self.in_slow_start() {
            return self.slow_start(acked);
        }
        acked
    }

    /// Linux `tcp_cong_avoid_ai`: +1 segment per `w` ACKed segments.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }
}

/// Linux `tcp_ca_state`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    Disorder,
    Cwr,
    Recovery,
    Loss,
}

/// Per-ACK delivery information (`in_ack_event` / rate sample).
#[derive(Copy, Clone, Debug, Default)]
pub struct AckEvent {
    /// Segments newly ACKed or SACKed by this ACK.
    pub acked: u32,
    /// Of those, segments that arrived CE-marked: the AccECN counter delta
    /// with Accurate ECN, all of them on an ECE ACK with classic ECN.
    pub acked_ce: u32,
    /// The ACK carried ECE (classic feedback).
    pub ece: bool,
    /// The ACK carried ESCE (SCE feedback, chromi/sce `CA_ACK_ESCE`).
    pub esce: bool,
}

/// How a flow uses ECN: the codepoint it sends and the feedback it reads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EcnMode {
    /// Not-ECT.
    Off,
    /// RFC 3168: ECT(0) on new data only (§6.1.5), ECE/CWR feedback, at
    /// most one reaction per window.
    Classic,
    /// Accurate ECN feedback (RFC 9768): the sender sees exact CE counts.
    /// The codepoint goes on every packet, retransmissions and the
    /// receiver's pure ACKs included (DCTCP: ECT(0); L4S: ECT(1), RFC 9331 §4).
    Accurate(Ecn),
}

impl EcnMode {
    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "off",
            EcnMode::Classic => "classic",
            EcnMode::Accurate(Ecn::Ect1) => "l4s",
            EcnMode::Accurate(_) => "accecn",
        }
    }
}

pub trait CongestionControl {
    /// Linux `ssthresh()`: the new slow-start threshold after a loss or an
    /// ECN congestion signal. The TCP layer then reduces cwnd towards it (PRR).
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32;
    /// Linux `cong_avoid()`: grow cwnd for `acked` newly ACKed segments.
    /// Called only while not reducing (Open/Disorder).
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32);
    /// Linux `pkts_acked()`: an RTT sample from this ACK.
    fn on_rtt(&mut self, _tcp: &mut TcpCcState, _rtt: Dur) {}
    /// Linux `set_state()`.
    /// May adjust ssthresh (DCTCP sets the Reno cut on entering Recovery).
    fn on_state(&mut self, _tcp: &mut TcpCcState, _state: CaState) {}
    /// Linux `in_ack_event()`, before the ACK's loss/ECN state changes and
    /// cwnd growth; may change cwnd and ssthresh (chromi/sce's SCE handlers).
    fn on_ack_event(&mut self, _tcp: &mut TcpCcState, _ev: &AckEvent) {}
    /// Linux `cwnd_event(CA_EVENT_TX_START)`: sending resumes after the
    /// flight drained (app-limited idle), `idle` long.
    fn on_tx_start(&mut self, _tcp: &TcpCcState, _idle: Dur) {}
    /// Linux `undo_cwnd()`: the window to restore after a spurious reduction.
    fn undo_cwnd(&mut self, tcp: &TcpCcState, prior_cwnd: u32) -> u32 {
        tcp.cwnd.max(prior_cwnd)
    }
    /// The ECN behaviour this algorithm wants when the flow enables ECN.
    fn ecn_mode(&self) -> EcnMode {
        EcnMode::Classic
    }
    /// Linux `TCP_CONG_NEEDS_ECN`: the connection negotiates ECN whatever
    /// the host's `tcp_ecn` says (DCTCP, Prague); other algorithms follow
    /// `tcp_ecn`, whose default (2) does not ask for it.
    fn needs_ecn(&self) -> bool {
        false
    }
    /// Linux `cong_control()`: an algorithm that sets cwnd (and pacing)
    /// itself on every ACK returns true, and the TCP layer then applies no
    /// PRR, no `cong_avoid` and no cwnd = ssthresh at the end of a
    /// reduction (Prague, BBR). Called after loss/ECN state processing.
    fn cong_control(&mut self, _tcp: &mut TcpCcState, _ev: &AckEvent) -> bool {
        false
    }
    /// A pacing rate the algorithm sets itself (Linux `sk_pacing_rate`
    /// written by the CC); `None` keeps Linux's cwnd/srtt rule. Returning
    /// `Some` turns pacing on for the flow.
    fn pacing_rate(&self, _tcp: &TcpCcState) -> Option<Rate> {
        None
    }
    /// A per-algorithm series value for the cwnd plot (e.g. DCTCP's α);
    /// `None` if the algorithm has none.
    fn alpha(&self) -> Option<f64> {
        None
    }
    /// How far a classic-ECN detector has switched the algorithm to its
    /// classic fallback: 0 in L4S mode, 1 fully classic (Prague with
    /// `ecn_fallback`); `None` for an algorithm without one.
    fn classic(&self) -> Option<f64> {
        None
    }
    /// Give the algorithm its own random stream (seeded from the scenario
    /// seed and the flow's name); algorithms without randomness ignore it.
    fn set_rng(&mut self, _rng: SimRng) {}
    /// The algorithm reads SCE feedback (the receiver then echoes ESCE).
    fn sce(&self) -> bool {
        false
    }
    /// Linux `min_tso_segs()`: the smallest GSO packet, segments
    /// (`tcp_min_tso_segs`, 2, unless the algorithm says otherwise).
    fn min_tso_segs(&self) -> u32 {
        2
    }
    /// A cap on the GSO packet the algorithm sets itself (Prague's
    /// `tso_segs`); `None` leaves Linux's autosizing alone.
    fn max_tso_segs(&self, _tcp: &TcpCcState) -> Option<u32> {
        None
    }
    /// Where HyStart ended slow start, if it did (CUBIC's): what Linux
    /// counts as TCPHystartTrainDetect/TrainCwnd or DelayDetect/DelayCwnd.
    fn hystart_exit(&self) -> Option<HystartExit> {
        None
    }
}

/// HyStart's end of slow start: which detector, the cwnd it left as
/// ssthresh, and when.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HystartExit {
    pub by: HystartDetector,
    pub cwnd: u32,
    pub at: SimTime,
}

/// HyStart's two detectors (Linux `HYSTART_ACK_TRAIN`, `HYSTART_DELAY`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HystartDetector {
    AckTrain,
    Delay,
}

impl HystartDetector {
    /// The name summary.json gives it.
    pub fn name(self) -> &'static str {
        match self {
            HystartDetector::AckTrain => "ack-train",
            HystartDetector::Delay => "delay",
        }
    }
}

/// Which algorithm a flow uses, as written in a scenario (`cc = "cubic"`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    Reno,
    #[default]
    Cubic,
    Dctcp,
    Prague,
    Bbr,
    #[serde(rename = "reno-sce")]
    RenoSce,
    #[serde(rename = "cubic-sce")]
    CubicSce,
    #[serde(rename = "dctcp-sce")]
    DctcpSce,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Reno => "reno",
            CcKind::Cubic => "cubic",
            CcKind::Dctcp => "dctcp",
            CcKind::Prague => "prague",
            CcKind::Bbr => "bbr",
            CcKind::RenoSce => "reno-sce",
            CcKind::CubicSce => "cubic-sce",
            CcKind::DctcpSce => "dctcp-sce",
        }
    }
}

/// A flow's congestion control with its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algo", rename_all = "snake_case")]
pub enum CcConfig {
    Reno(reno::RenoConfig),
    Cubic(cubic::CubicConfig),
    Dctcp(dctcp::DctcpConfig),
    Prague(prague::PragueConfig),
    Bbr(bbr::BbrConfig),
    /// SCE-aware variants take their base's parameters.
    #[serde(rename = "reno-sce")]
    RenoSce(reno::RenoConfig),
    #[serde(rename = "cubic-sce")]
    CubicSce(cubic::CubicConfig),
    #[serde(rename = "dctcp-sce")]
    DctcpSce(dctcp::DctcpConfig),
}

impl CcConfig {
    /// The parameters as a table (without the `algo` tag), as a resolved
    /// scenario writes them under `cc_params`.
    pub fn params_table(&self) -> toml::Table {
        let mut t = toml::Table::try_from(self).expect("cc config serializes");
        t.remove("algo");
        t
    }

    pub fn default_for(kind: CcKind) -> CcConfig {
        match kind {
            CcKind::Reno => CcConfig::Reno(Default::default()),
            CcKind::Cubic => CcConfig::Cubic(Default::default()),
            CcKind::Dctcp => CcConfig::Dctcp(Default::default()),
            CcKind::Prague => CcConfig::Prague(Default::default()),
            CcKind::Bbr => CcConfig::Bbr(Default::default()),
            CcKind::RenoSce => CcConfig::RenoSce(Default::default()),
            CcKind::CubicSce => CcConfig::CubicSce(Default::default()),
            CcKind::DctcpSce => CcConfig::DctcpSce(Default::default()),
        }
    }
    pub fn kind(&self) -> CcKind {
        match self {
            CcConfig::Reno(_) => CcKind::Reno,
            CcConfig::Cubic(_) => CcKind::Cubic,
            CcConfig::Dctcp(_) => CcKind::Dctcp,
            CcConfig::Prague(_) => CcKind::Prague,
            CcConfig::Bbr(_) => CcKind::Bbr,
            CcConfig::RenoSce(_) => CcKind::RenoSce,
            CcConfig::CubicSce(_) => CcKind::CubicSce,
            CcConfig::DctcpSce(_) => CcKind::DctcpSce,
        }
    }
    pub fn build(&self) -> AnyCc {
        match self {
            CcConfig::Reno(c) => AnyCc::Reno(c.build()),
            CcConfig::Cubic(c) => AnyCc::Cubic(c.build()),
            CcConfig::Dctcp(c) => AnyCc::Dctcp(c.build()),
            CcConfig::Prague(c) => AnyCc::Prague(Box::new(c.build())),
            CcConfig::Bbr(c) => AnyCc::Bbr(Box::new(c.build())),
            CcConfig::RenoSce(c) => AnyCc::RenoSce(sce::Sce::new(c.build(), sce::SceLaw::Reno)),
            CcConfig::CubicSce(c) => AnyCc::CubicSce(Box::new(sce::CubicSce::new(c))),
            CcConfig::DctcpSce(c) => AnyCc::DctcpSce(Box::new(sce::Sce::new(c.build(), sce::SceLaw::Dctcp))),
        }
    }
}

/// Static dispatch over the algorithms.
pub enum AnyCc {
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    Dctcp(dctcp::Dctcp),
    Prague(Box<prague::Prague>),
    Bbr(Box<bbr::Bbr>),
    RenoSce(sce::Sce<reno::Reno>),
    CubicSce(Box<sce::CubicSce>),
    DctcpSce(Box<sce::Sce<dctcp::Dctcp>>),
}

macro_rules! cc_dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Reno($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Dctcp($c) => $e,
            AnyCc::Prague($c) => $e,
            AnyCc::Bbr($c) => $e,
            AnyCc::RenoSce($c) => $e,
            AnyCc::CubicSce($c) => $e,
            AnyCc::DctcpSce($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        cc_dispatch!(self, c => c.ssthresh(tcp))
    }
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        cc_dispatch!(self, c => c.cong_avoid(tcp, acked))
    }
    fn on_rtt(&mut self, tcp: &mut TcpCcState, rtt: Dur) {
        cc_dispatch!(self, c => c.on_rtt(tcp, rtt))
    }
    fn on_state(&mut self, tcp: &mut TcpCcState, state: CaState) {
        cc_dispatch!(self, c => c.on_state(tcp, state))
    }
    fn on_ack_event(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) {
        cc_dispatch!(self, c => c.on_ack_event(tcp, ev))
    }
    fn on_tx_start(&mut self, tcp: &TcpCcState, idle: Dur) {
        cc_dispatch!(self, c => c.on_tx_start(tcp, idle))
    }
    fn undo_cwnd(&mut self, tcp: &TcpCcState, prior: u32) -> u32 {
        cc_dispatch!(self, c => c.undo_cwnd(tcp, prior))
    }
    fn ecn_mode(&self) -> EcnMode {
        cc_dispatch!(self, c => c.ecn_mode())
    }
    fn needs_ecn(&self) -> bool {
        cc_dispatch!(self, c => c.needs_ecn())
    }
    fn alpha(&self) -> Option<f64> {
        cc_dispatch!(self, c => c.alpha())
    }
    fn classic(&self) -> Option<f64> {
        cc_dispatch!(self, c => c.classic())
    }
    fn cong_control(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) -> bool {
        cc_dispatch!(self, c => c.cong_control(tcp, ev))
    }
    fn pacing_rate(&self, tcp: &TcpCcState) -> Option<Rate> {
        cc_dispatch!(self, c => c.pacing_rate(tcp))
    }
    fn set_rng(&mut self, rng: SimRng) {
        cc_dispatch!(self, c => c.set_rng(rng))
    }
    fn sce(&self) -> bool {
        cc_dispatch!(self, c => c.sce())
    }
    fn min_tso_segs(&self) -> u32 {
        cc_dispatch!(self, c => c.min_tso_segs())
    }
    fn max_tso_segs(&self, tcp: &TcpCcState) -> Option<u32> {
        cc_dispatch!(self, c => c.max_tso_segs(tcp))
    }
    fn hystart_exit(&self) -> Option<HystartExit> {
        cc_dispatch!(self, c => c.hystart_exit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_leftover() {
        let mut t = TcpCcState::new(SimTime(0), 1448, 10);
        t.ssthresh = 14;
        assert_eq!(t.slow_start(6), 2);
        assert_eq!(t.cwnd, 14);
    }

    #[test]
    fn cong_avoid_ai_adds_one_per_window() {
        let mut t = TcpCcState::new(SimTime(0), 1448, 10);
        for _ in 0..10 {
            t.cong_avoid_ai(10, 1);
        }
        assert_eq!(t.cwnd, 11);
        assert_eq!(t.cwnd_cnt, 0);
    }

    /// TCP_CONG_NEEDS_ECN is in the flags of tcp_dctcp.c and tcp_prague.c
    /// only; the SCE modules and the classic algorithms follow tcp_ecn.
    #[test]
    fn only_dctcp_and_prague_need_ecn() {
        use CcKind::*;
        for kind in [Reno, Cubic, Dctcp, Prague, Bbr, RenoSce, CubicSce, DctcpSce] {
            let cc = CcConfig::default_for(kind).build();
            assert_eq!(cc.needs_ecn(), matches!(kind, Dctcp | Prague), "{kind:?}");
        }
    }
}
