//! SCE-aware TCP: `reno-sce`, `cubic-sce`, `dctcp-sce` (chromi/sce
//! `tcp_reno_sce.c`, `tcp_cubic_sce.c`, `tcp_dctcp_sce.c`;
//! draft-morton-tsvwg-sce, draft-grimes-tcpm-tcpsce).
//!
//! An SCE-capable sender sends ECT(0) as usual; an SCE AQM rewrites
//! ECT(0)→ECT(1) at a lower threshold than CE; the receiver echoes the
//! codepoint of the data it ACKs in the ESCE flag (`TcpAck::esce`, the old
//! NS bit), and the sender's algorithm sees it in its `in_ack_event`
//! (`AckEvent::esce`), before the ACK's CE/loss handling and cwnd growth.
//!
//! cubic-sce ([`CubicSce`]) follows tcp_cubic_sce.c `bictcp_handle_ack`
//! line by line on top of `cubic.rs`'s CUBIC, whose `ack_cnt` then counts
//! bytes as that file's does (stored versions 0139ea04 and 1280a6d0 have
//! the same handler; the SCE-L4S tests ran 0eddf2ad, which is not stored):
//!
//! - `acked_bytes` = the ACK's advance of snd_una in bytes; an ACK that
//!   does not advance it counts `mss` (Linux's dupack rule; window-update
//!   ACKs, which count 0 there, are not told apart here);
//! - `mss` is the sender's `icsk_ack.rcv_mss`. A pure sender never
//!   receives data, so that stays `tcp_initialize_rcv_mss`'s value,
//!   min(MSS, `TCP_MSS_DEFAULT` = 536): with 1448-byte segments the
//!   byte counts run 1448/536 ≈ 2.7 times what the comments intend;
//! - ESCE while no CUBIC epoch runs (slow start, a CWR/Recovery episode
//!   and its first ACK after): only ssthresh = cwnd/2, no step-down. In
//!   slow start that ends it; during a reduction it lowers the target PRR
//!   steers to, so a CE cut followed by SCE marks ends at half the
//!   PRR-reduced window, not at 7/8;
//! - ESCE with an epoch running: `Cubic::on_sce` (curve moved to the
//!   present, `ack_cnt −= acked_bytes·sqrt_cnt`, one segment off per
//!   `mss·cwnd` of debt, ssthresh = cwnd/2), and `recent_sce` = cwnd + 1
//!   ACKs; every ACK that counts decrements it;
//! - growth: `bictcp_cong_avoid` runs for every ACK that delivers data,
//!   marked or not (Linux calls `cong_avoid` after `in_ack_event`), adding
//!   `mss` per segment to `ack_cnt`; CUBIC's Reno-friendly W_est is not
//!   touched by SCE, so once cwnd is below it cwnd regrows at up to one
//!   segment per two ACKed;
//! - `ssthresh()` (CE and loss alike): 7/8 of cwnd while `recent_sce`,
//!   else CUBIC's β; RTO (`TCP_CA_Loss`) clears `recent_sce`.
//!
//! Known behaviour (tcp_cubic_sce.c, kept): an ESCE ACK that arrives below
//! the curve's inflection point (t < K, i.e. within K of a CE or loss
//! reduction) computes `offs = bic_K − t` with the new K = 0 and the old t
//! as an unsigned 64-bit value; the cube wraps and the plateau drops
//! through zero to about 2^32 − 2^24 (`Cubic::on_sce`), leaving cnt at
//! its floor of 2 — cwnd +1 per two ACKed segments, marked or not — until
//! the next `ssthresh()`. Between CE marks cubic-sce then grows by
//! cwnd/2 per RTT against SCE steps of about 2.7·√cwnd − 1 per RTT of
//! full marking.
//!
//! reno-sce and dctcp-sce ([`Sce`]) keep a per-segment law: an SCE
//! response per SCE-marked segment, in segments of cwnd: reno-sce
//! √cwnd/(2·cwnd) (a full RTT of SCE marks takes √cwnd/2 segments off),
//! dctcp-sce 1/2 (a full RTT of SCE halves cwnd, DCTCP-like without α);
//! the decrease accumulates and cwnd steps down by whole segments (≥ 2);
//! no growth for SCE-marked segments; SCE in slow start ends it
//! (ssthresh = cwnd/2); a CE reduction within cwnd ACKed segments of an
//! SCE mark cuts to 7/8 (reno-sce's 12.5 %), a loss takes the base's cut.
//! CE otherwise keeps the base's RFC 3168 response and loss the base's
//! halving, DCTCP its α law. Without SCE marks every hook is the base's.
//!
//! Units: segments. Deviations: reno-sce's ECE response in one stored
//! version of tcp_reno_sce.c (a 25 % cut spread over the RTT without recent
//! SCE) is replaced by RFC 3168's halving, so that reno-sce equals Reno on a
//! classic-ECN path. tcp_reno_sce.c and tcp_dctcp_sce.c also count in
//! bytes against `rcv_mss`-sized units (reno-sce's growth is
//! `snd_cwnd_cnt += acked_bytes` against `rcv_mss·cwnd`, ≈ 2.7 segments per
//! RTT with 1448-byte segments); that is not modelled yet. cubic-sce runs
//! CUBIC's HyStart as `cubic.rs` has it (tcp_cubic_sce.c carries the older
//! ACK-train rule without the TSO cushion).

use super::cubic::{Cubic, CubicConfig};
use super::{AckEvent, CaState, CongestionControl, EcnMode, TcpCcState};
use crate::rng::SimRng;
use crate::units::{Dur, Rate};

/// The SCE response law.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SceLaw {
    Reno,
    Dctcp,
}

/// An SCE-aware wrapper around a base algorithm.
pub struct Sce<B> {
    pub base: B,
    law: SceLaw,
    /// SCE decrease owed, segments (< 1 carried over).
    pending: f64,
    /// Segments ACKed since the last SCE mark (u32::MAX: none yet).
    since_sce: u32,
    /// The base's ssthresh at the last reduction entry, for a loss that
    /// follows a softened CE cut.
    base_ssthresh: Option<u32>,
    /// SCE-marked segments seen, for tests and summaries.
    pub sce_acked: u64,
}

impl<B> Sce<B> {
    pub fn new(base: B, law: SceLaw) -> Sce<B> {
        Sce { base, law, pending: 0.0, since_sce: u32::MAX, base_ssthresh: None, sce_acked: 0 }
    }

    /// Decrease per SCE-marked segment, segments.
    fn per_mark(&self, cwnd: u32) -> f64 {
        let w = f64::from(cwnd.max(1));
        match self.law {
            SceLaw::Reno => w.sqrt() / (2.0 * w),
            SceLaw::Dctcp => 0.5,
        }
    }

    fn recent_sce(&self, tcp: &TcpCcState) -> bool {
        self.since_sce < tcp.cwnd
    }
}

impl<B: CongestionControl> CongestionControl for Sce<B> {
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        let base = self.base.ssthresh(tcp);
        self.base_ssthresh = Some(base);
        if self.law != SceLaw::Dctcp && self.recent_sce(tcp) {
            // A CE after recent SCE marks: the queue is near the SCE
            // threshold, not overflowing; cut gently.
            return base.max((tcp.cwnd - tcp.cwnd / 8).max(2));
        }
        base
    }

    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        let sce = tcp.acked_sce.min(acked);
        if sce == 0 {
            return self.base.cong_avoid(tcp, acked);
        }
        if tcp.in_slow_start() {
            tcp.ssthresh = (tcp.cwnd / 2).max(2);
        }
        self.pending += f64::from(sce) * self.per_mark(tcp.cwnd);
        while self.pending >= 1.0 && tcp.cwnd > 2 {
            tcp.cwnd -= 1;
            self.pending -= 1.0;
        }
        if tcp.cwnd <= 2 {
            self.pending = 0.0;
        }
        if acked > sce {
            self.base.cong_avoid(tcp, acked - sce);
        }
    }

    fn on_rtt(&mut self, tcp: &mut TcpCcState, rtt: Dur) {
        self.base.on_rtt(tcp, rtt);
    }

    fn on_state(&mut self, tcp: &mut TcpCcState, state: CaState) {
        self.base.on_state(tcp, state);
        // A loss takes the base's cut even after recent SCE.
        if self.law != SceLaw::Dctcp && matches!(state, CaState::Recovery | CaState::Loss) {
            if let Some(b) = self.base_ssthresh.take() {
                tcp.ssthresh = tcp.ssthresh.min(b);
            }
        }
    }

    fn on_ack_event(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) {
        if tcp.acked_sce > 0 {
            self.since_sce = 0;
            self.sce_acked += u64::from(tcp.acked_sce);
        } else {
            self.since_sce = self.since_sce.saturating_add(ev.acked);
        }
        self.base.on_ack_event(tcp, ev);
    }

    fn on_tx_start(&mut self, tcp: &TcpCcState, idle: Dur) {
        self.base.on_tx_start(tcp, idle);
    }
    fn undo_cwnd(&mut self, tcp: &TcpCcState, prior_cwnd: u32) -> u32 {
        self.base.undo_cwnd(tcp, prior_cwnd)
    }
    fn ecn_mode(&self) -> EcnMode {
        self.base.ecn_mode()
    }
    /// chromi/sce's modules (dctcp-sce too) set no `TCP_CONG_NEEDS_ECN`:
    /// its test beds turn ECN on with `tcp_ecn = 1`.
    fn needs_ecn(&self) -> bool {
        false
    }
    fn cong_control(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) -> bool {
        self.base.cong_control(tcp, ev)
    }
    fn pacing_rate(&self, tcp: &TcpCcState) -> Option<Rate> {
        self.base.pacing_rate(tcp)
    }
    fn alpha(&self) -> Option<f64> {
        self.base.alpha()
    }
    fn set_rng(&mut self, rng: SimRng) {
        self.base.set_rng(rng);
    }
    fn sce(&self) -> bool {
        true
    }
}

/// Linux `TCP_MSS_DEFAULT` and `TCP_MIN_MSS`: the bounds of
/// `tcp_initialize_rcv_mss`, which sets a sender's `rcv_mss` at connection
/// set-up to min(advmss, mss_cache, rcv_wnd/2, 536), at least 88; only
/// received data (`tcp_measure_rcv_mss`) moves it, and a bulk sender gets
/// none.
const TCP_MSS_DEFAULT: u32 = 536;
const TCP_MIN_MSS: u32 = 88;

/// The `rcv_mss` of a sender that receives only ACKs.
pub fn sender_rcv_mss(mss: u32) -> u32 {
    mss.min(TCP_MSS_DEFAULT).max(TCP_MIN_MSS)
}

/// cubic-sce: chromi/sce tcp_cubic_sce.c (module header).
pub struct CubicSce {
    pub base: Cubic,
    /// snd_una at the last ACK (`ca->prior_snd_una`), segments.
    prior_snd_una: u64,
    /// ACKs left in which a CE or loss cut is 7/8 (`ca->recent_sce`).
    recent_sce: u32,
    /// SCE-marked segments seen, for tests and summaries.
    pub sce_acked: u64,
}

impl CubicSce {
    pub fn new(cfg: &CubicConfig) -> CubicSce {
        CubicSce { base: Cubic::for_sce(cfg, TCP_MSS_DEFAULT), prior_snd_una: 0, recent_sce: 0, sce_acked: 0 }
    }
}

impl CongestionControl for CubicSce {
    /// `bictcp_recalc_ssthresh`: CUBIC's epoch end and W_max, then 7/8
    /// while `recent_sce`, else β — for CE and loss alike.
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        let beta = self.base.ssthresh(tcp);
        if self.recent_sce > 0 {
            return (tcp.cwnd * 7 / 8).max(2);
        }
        beta
    }

    /// `bictcp_cong_avoid`: CUBIC's growth for every ACKed segment.
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        self.base.cong_avoid(tcp, acked);
    }

    fn on_rtt(&mut self, tcp: &mut TcpCcState, rtt: Dur) {
        self.base.on_rtt(tcp, rtt);
    }

    /// `bictcp_state`: on RTO `bictcp_reset` also clears `recent_sce`.
    fn on_state(&mut self, tcp: &mut TcpCcState, state: CaState) {
        self.base.on_state(tcp, state);
        if state == CaState::Loss {
            self.recent_sce = 0;
        }
    }

    /// `bictcp_handle_ack`.
    fn on_ack_event(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) {
        let mss = sender_rcv_mss(tcp.mss);
        self.base.set_sce_mss(mss);
        let advanced = tcp.snd_una.saturating_sub(self.prior_snd_una);
        self.prior_snd_una = tcp.snd_una;
        // A dupack counts as one mss.
        let acked_bytes = if advanced == 0 { mss } else { (advanced * u64::from(tcp.mss)).min(u64::from(u32::MAX)) as u32 };
        self.sce_acked += u64::from(tcp.acked_sce);
        if ev.esce {
            if !self.base.epoch_running() {
                // "drop out of slow-start"
                tcp.ssthresh = tcp.cwnd / 2;
            } else {
                self.recent_sce = tcp.cwnd + 1;
                self.base.on_sce(tcp, acked_bytes);
            }
        }
        self.recent_sce = self.recent_sce.saturating_sub(1);
    }

    fn on_tx_start(&mut self, tcp: &TcpCcState, idle: Dur) {
        self.base.on_tx_start(tcp, idle);
    }
    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tcp: &TcpCcState, prior_cwnd: u32) -> u32 {
        self.base.undo_cwnd(tcp, prior_cwnd)
    }
    fn ecn_mode(&self) -> EcnMode {
        self.base.ecn_mode()
    }
    /// No `TCP_CONG_NEEDS_ECN`, as for the other SCE modules.
    fn needs_ecn(&self) -> bool {
        false
    }
    fn sce(&self) -> bool {
        true
    }

    fn hystart_exit(&self) -> Option<super::HystartExit> {
        self.base.hystart_exit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{cubic::CubicConfig, dctcp::DctcpConfig, reno::RenoConfig, CcConfig};
    use crate::units::SimTime;

    fn ca(cwnd: u32) -> TcpCcState {
        ca_with(cwnd, 1448)
    }

    fn ca_with(cwnd: u32, mss: u32) -> TcpCcState {
        let mut t = TcpCcState::new(SimTime(0), mss, cwnd);
        t.ssthresh = cwnd;
        t.srtt = Dur::from_millis(20);
        t.min_rtt = t.srtt;
        t
    }

    /// One RTT of ACKs (one per segment), all SCE-marked.
    fn marked_rtt<B: CongestionControl>(c: &mut Sce<B>, t: &mut TcpCcState) {
        let n = t.cwnd;
        for _ in 0..n {
            t.acked_sce = 1;
            let ev = AckEvent { acked: 1, esce: true, ..Default::default() };
            c.on_ack_event(t, &ev);
            c.cong_avoid(t, 1);
        }
        t.acked_sce = 0;
    }

    #[test]
    fn a_full_rtt_of_sce_takes_the_reference_decrease() {
        // reno-sce: √100/2 = 5 segments; dctcp-sce: half.
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        let mut t = ca(100);
        marked_rtt(&mut r, &mut t);
        assert!((94..=95).contains(&t.cwnd), "reno-sce {}", t.cwnd);
        let mut d = Sce::new(DctcpConfig::default().build(), SceLaw::Dctcp);
        let mut t = ca(100);
        marked_rtt(&mut d, &mut t);
        // cwnd shrinks as it goes: 100 ACKs at −1/2 each, but the loop
        // ends when the first 100 ACKs are done: ≈ 50.
        assert_eq!(t.cwnd, 50, "dctcp-sce");
    }

    #[test]
    fn sce_in_slow_start_ends_it_and_marked_segments_do_not_grow_cwnd() {
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        let mut t = ca(40);
        t.ssthresh = u32::MAX / 2;
        t.acked_sce = 1;
        r.cong_avoid(&mut t, 1);
        assert_eq!(t.ssthresh, 20);
        assert!(t.cwnd <= 40);
    }

    #[test]
    fn ce_after_recent_sce_cuts_to_seven_eighths_and_loss_still_halves() {
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        let mut t = ca(80);
        assert_eq!(r.ssthresh(&t), 40, "no SCE yet: RFC 3168 halving");
        t.acked_sce = 1;
        r.on_ack_event(&mut t, &AckEvent { acked: 1, ..Default::default() });
        t.acked_sce = 0;
        assert_eq!(r.ssthresh(&t), 70);
        t.ssthresh = 70;
        r.on_state(&mut t, CaState::Recovery);
        assert_eq!(t.ssthresh, 40, "a loss is a loss");
        // cwnd ACKs later the SCE is no longer recent.
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        t.acked_sce = 1;
        r.on_ack_event(&mut t, &AckEvent { acked: 1, ..Default::default() });
        t.acked_sce = 0;
        r.on_ack_event(&mut t, &AckEvent { acked: 80, ..Default::default() });
        assert_eq!(r.ssthresh(&t), 40);
    }

    /// A base that answers every hook distinctively and logs what reaches it.
    #[derive(Default)]
    struct Recorder {
        log: Vec<String>,
    }

    impl CongestionControl for Recorder {
        fn ssthresh(&mut self, _tcp: &TcpCcState) -> u32 {
            33
        }
        fn cong_avoid(&mut self, _tcp: &mut TcpCcState, acked: u32) {
            self.log.push(format!("cong_avoid {acked}"));
        }
        fn on_rtt(&mut self, _tcp: &mut TcpCcState, rtt: Dur) {
            self.log.push(format!("rtt {}", rtt.nanos()));
        }
        fn on_tx_start(&mut self, _tcp: &TcpCcState, idle: Dur) {
            self.log.push(format!("tx_start {}", idle.nanos()));
        }
        fn undo_cwnd(&mut self, _tcp: &TcpCcState, prior_cwnd: u32) -> u32 {
            prior_cwnd + 7
        }
        fn ecn_mode(&self) -> EcnMode {
            EcnMode::Off
        }
        fn cong_control(&mut self, _tcp: &mut TcpCcState, ev: &AckEvent) -> bool {
            self.log.push(format!("cong_control {}", ev.acked));
            true
        }
        fn pacing_rate(&self, _tcp: &TcpCcState) -> Option<Rate> {
            Some(Rate(12_345))
        }
        fn alpha(&self) -> Option<f64> {
            Some(0.25)
        }
        fn set_rng(&mut self, _rng: SimRng) {
            self.log.push("rng".into());
        }
    }

    #[test]
    fn hooks_without_an_sce_response_are_the_bases() {
        let mut s = Sce::new(Recorder::default(), SceLaw::Reno);
        let mut t = ca(40);
        s.on_rtt(&mut t, Dur(5_000));
        s.on_tx_start(&t, Dur(9_000));
        assert!(s.cong_control(&mut t, &AckEvent { acked: 3, ..Default::default() }));
        s.set_rng(SimRng::for_component(1, "x"));
        assert_eq!(s.base.log, ["rtt 5000", "tx_start 9000", "cong_control 3", "rng"]);
        assert_eq!(s.undo_cwnd(&t, 50), 57);
        assert_eq!(s.ecn_mode(), EcnMode::Off);
        assert_eq!(s.pacing_rate(&t), Some(Rate(12_345)));
        assert_eq!(s.alpha(), Some(0.25));
        assert!(s.sce() && !Recorder::default().sce());
    }

    #[test]
    fn sce_marked_segments_are_counted_and_split_from_unmarked_ones() {
        let mut s = Sce::new(Recorder::default(), SceLaw::Dctcp);
        let mut t = ca(40);
        for (marked, acked) in [(2, 2), (0, 3), (3, 5)] {
            t.acked_sce = marked;
            s.on_ack_event(&mut t, &AckEvent { acked, ..Default::default() });
            s.cong_avoid(&mut t, acked);
        }
        assert_eq!(s.sce_acked, 5);
        // Only the unmarked segments reach the base's growth.
        assert_eq!(s.base.log, ["cong_avoid 3", "cong_avoid 2"]);
    }

    /// One ACK of `segs` new segments at `t.now`, ESCE or not, through
    /// `in_ack_event` and then `cong_avoid`, as tcp_ack runs them.
    fn ack(c: &mut dyn CongestionControl, t: &mut TcpCcState, segs: u32, esce: bool) {
        t.snd_una += u64::from(segs);
        t.delivered += u64::from(segs);
        t.acked_sce = if esce { segs } else { 0 };
        c.on_ack_event(t, &AckEvent { acked: segs, esce, ..Default::default() });
        c.cong_avoid(t, segs);
        t.acked_sce = 0;
    }

    fn cubic_sce() -> crate::cc::AnyCc {
        CcConfig::CubicSce(Default::default()).build()
    }

    /// Congestion avoidance at cwnd `w` with an epoch started at 1 s by one
    /// unmarked ACK.
    fn cubic_sce_in_ca(w: u32) -> (crate::cc::AnyCc, TcpCcState) {
        cubic_sce_in_ca_with(w, 1448)
    }

    /// [`cubic_sce_in_ca`] with segments of `mss` bytes.
    fn cubic_sce_in_ca_with(w: u32, mss: u32) -> (crate::cc::AnyCc, TcpCcState) {
        let mut c = cubic_sce();
        let mut t = ca_with(w, mss);
        t.now = SimTime::from_secs_f64(1.0);
        ack(&mut c, &mut t, 1, false);
        assert_eq!(t.cwnd, w);
        (c, t)
    }

    /// RTT samples reach CUBIC underneath (`bictcp_acked`): HyStart's
    /// delay test ends slow start for cubic-sce as for CUBIC, a round after
    /// a 20 ms minimum when the round's RTTs stay ≥ 4 ms above it.
    #[test]
    fn cubic_sce_hands_rtt_samples_to_cubics_hystart() {
        let run = |mut c: crate::cc::AnyCc| {
            let mut t = ca(32);
            t.ssthresh = crate::cc::INFINITE_SSTHRESH;
            t.now = SimTime::from_secs_f64(1.0);
            t.snd_nxt = 100;
            c.on_rtt(&mut t, Dur::from_millis(20));
            t.snd_una = 150;
            t.snd_nxt = 300;
            for _ in 0..10 {
                t.now = t.now + Dur::from_millis(5);
                c.on_rtt(&mut t, Dur::from_millis(30));
            }
            // The exit is reported through the dispatch, with the detector's name.
            let exit = c.hystart_exit().map(|e| (e.by.name(), e.cwnd));
            (t.ssthresh, exit)
        };
        let delay = (32, Some(("delay", 32)));
        assert_eq!(run(CcConfig::Cubic(Default::default()).build()), delay, "CUBIC's HyStart");
        assert_eq!(run(cubic_sce()), delay);
        assert_eq!(crate::cc::HystartDetector::AckTrain.name(), "ack-train");
    }

    /// One ESCE ACK for five segments debits all their bytes at once
    /// (5·1448·9 = 65 160 ≥ 100·536): cwnd steps down on that ACK, and the
    /// five marked segments are counted.
    #[test]
    fn cubic_sce_debits_every_byte_an_esce_ack_covers() {
        let mut c = CubicSce::new(&CubicConfig::default());
        let mut t = ca(100);
        t.now = SimTime::from_secs_f64(1.0);
        ack(&mut c, &mut t, 1, false);
        t.now = t.now + Dur::from_millis(1);
        ack(&mut c, &mut t, 5, true);
        assert_eq!(t.cwnd, 99);
        assert_eq!(c.sce_acked, 5);
    }

    /// Idle restart, undo and the SCE flag: cubic-sce answers as CUBIC
    /// (`bictcp_cwnd_event` shifts the epoch by the idle time, so growth
    /// resumes where it stopped; undo restores the window before the cut).
    #[test]
    fn cubic_sce_restarts_after_idle_and_undoes_as_cubic() {
        let after_idle = |mut c: crate::cc::AnyCc, idle_hook: bool| {
            let mut t = ca(100);
            t.now = SimTime::from_secs_f64(1.0);
            ack(&mut c, &mut t, 1, false);
            t.now = t.now + Dur::from_secs(5);
            if idle_hook {
                c.on_tx_start(&t, Dur::from_secs(5));
            }
            for _ in 0..100 {
                ack(&mut c, &mut t, 1, false);
            }
            t.cwnd
        };
        let cubic = || CcConfig::Cubic(Default::default()).build();
        assert!(after_idle(cubic(), false) > after_idle(cubic(), true), "the idle time would count as growth");
        assert_eq!(after_idle(cubic_sce(), true), after_idle(cubic(), true));
        // A reduction from 80 undone at 50 restores 80.
        let mut c = cubic_sce();
        let mut t = ca(80);
        t.ssthresh = c.ssthresh(&t);
        t.cwnd = 50;
        assert_eq!(c.undo_cwnd(&t, 80), 80);
        assert!(c.sce());
    }

    #[test]
    fn a_bulk_senders_rcv_mss_is_tcp_mss_default() {
        assert_eq!(sender_rcv_mss(1448), 536);
        assert_eq!(sender_rcv_mss(500), 500);
        assert_eq!(sender_rcv_mss(60), 88);
    }

    /// tcp_cubic_sce.c `bictcp_handle_ack`: each ESCE ACK debits
    /// acked_bytes·sqrt_cnt = 1448·9 from ack_cnt at cwnd 100 (sqrt_cnt =
    /// ⌈√100⌉ − 1), `bictcp_cong_avoid` credits 536 (rcv_mss) per segment,
    /// and one segment comes off per 536·100 of debt: the fifth marked
    /// segment takes the first one off (5·13032 − 4·536 ≥ 53600), where a
    /// √cwnd-per-RTT law would need ten.
    #[test]
    fn cubic_sce_steps_down_one_segment_per_rcv_mss_times_cwnd_of_debt() {
        let (mut c, mut t) = cubic_sce_in_ca(100);
        assert_eq!(marks_to_first_step_down(&mut c, &mut t), 5);
        // "drop out of slow-start": ssthresh follows every ESCE ACK.
        assert_eq!(t.ssthresh, 49);
    }

    /// `rcv_mss` is read on every ACK: with 500-byte segments (rcv_mss 500,
    /// not the 536 it starts from) the debt unit is 500·100 and each marked
    /// segment debits 500·9 and credits 500, so the 13th takes the first
    /// segment off (4000·n + 500 ≥ 50 000); with 536 kept it would be the 14th.
    #[test]
    fn cubic_sce_reads_rcv_mss_on_every_ack() {
        let (mut c, mut t) = cubic_sce_in_ca_with(100, 500);
        assert_eq!(marks_to_first_step_down(&mut c, &mut t), 13);
    }

    /// One-segment ESCE ACKs 1 ms apart until cwnd first moves: how many it
    /// took (cwnd must then be one segment lower).
    fn marks_to_first_step_down(c: &mut crate::cc::AnyCc, t: &mut TcpCcState) -> u32 {
        let w = t.cwnd;
        for n in 1..=1000 {
            t.now = t.now + Dur::from_millis(1);
            ack(c, t, 1, true);
            if t.cwnd != w {
                assert_eq!(t.cwnd, w - 1, "after {n} marked segments");
                return n;
            }
        }
        panic!("cwnd {w} never stepped down");
    }

    /// `bictcp_handle_ack` with no epoch running (`!ca->epoch_start`): an
    /// ESCE ACK only sets ssthresh = cwnd/2. In slow start that ends it
    /// with cwnd kept, even for an ACK of ten marked segments.
    #[test]
    fn cubic_sce_esce_in_slow_start_only_halves_ssthresh() {
        let mut c = cubic_sce();
        let mut t = ca(40);
        t.ssthresh = crate::cc::INFINITE_SSTHRESH;
        ack(&mut c, &mut t, 10, true);
        assert_eq!((t.cwnd, t.ssthresh), (40, 20));
    }

    /// The same branch during a CE or loss reduction (`ssthresh()` ended
    /// the epoch): ssthresh, PRR's target, halves again.
    #[test]
    fn cubic_sce_esce_during_a_reduction_lowers_its_target_to_half_of_cwnd() {
        let (mut c, mut t) = cubic_sce_in_ca(80);
        t.ssthresh = c.ssthresh(&t);
        assert_eq!(t.ssthresh, 56, "CUBIC's β: no SCE yet");
        c.on_state(&mut t, CaState::Cwr);
        t.cwnd = 70; // part way down under PRR
        t.snd_una += 1;
        c.on_ack_event(&mut t, &AckEvent { acked: 1, esce: true, ..Default::default() });
        assert_eq!((t.cwnd, t.ssthresh), (70, 35));
    }

    /// `bictcp_recalc_ssthresh` gives 7/8 while `recent_sce` (cwnd + 1
    /// ACKs from the last ESCE, counted per ACK whatever it covers) for a
    /// loss as for CE; an RTO clears it.
    #[test]
    fn cubic_sce_cuts_to_seven_eighths_for_cwnd_acks_after_sce_loss_included() {
        let (mut c, mut t) = cubic_sce_in_ca(80);
        t.now = t.now + Dur::from_millis(1);
        ack(&mut c, &mut t, 1, true);
        assert_eq!(t.cwnd, 80);
        // 80 ACKs of two segments: 79 leave it recent, the 80th ends it.
        for _ in 0..79 {
            t.now = t.now + Dur::from_millis(1);
            ack(&mut c, &mut t, 2, false);
        }
        let w = t.cwnd;
        assert_eq!(c.ssthresh(&t), w * 7 / 8);
        let mut r = t.clone();
        r.ssthresh = w * 7 / 8;
        c.on_state(&mut r, CaState::Recovery);
        assert_eq!(r.ssthresh, w * 7 / 8, "a loss gets 7/8 too");
        t.now = t.now + Dur::from_millis(1);
        ack(&mut c, &mut t, 2, false);
        assert_eq!(c.ssthresh(&t), (u64::from(t.cwnd) * 717 / 1024) as u32);
        // RTO: bictcp_reset.
        let (mut c, mut t) = cubic_sce_in_ca(80);
        t.now = t.now + Dur::from_millis(1);
        ack(&mut c, &mut t, 1, true);
        c.on_state(&mut t, CaState::Loss);
        assert_eq!(c.ssthresh(&t), 56);
    }

    /// Known behaviour of tcp_cubic_sce.c: an ESCE ACK below the inflection
    /// point (t < K after a reduction) computes the new plateau from
    /// `(u64)(0 − t)` cubed; the u32 plateau wraps to ≈ 2^32 − 2^24 and
    /// CUBIC's cnt stays at its floor of 2, so cwnd grows one segment per
    /// two ACKed (half a window per RTT) until the next reduction. CUBIC
    /// in the same place grows about one segment in 23.
    #[test]
    fn cubic_sce_mark_below_the_inflection_point_leaves_cnt_at_two() {
        let grow = |mark: bool| {
            let mut c = cubic_sce();
            let mut t = ca(100);
            t.now = SimTime::from_secs_f64(1.0);
            t.ssthresh = c.ssthresh(&t); // W_max = 100, ssthresh 70
            t.cwnd = t.ssthresh;
            ack(&mut c, &mut t, 1, false); // the epoch starts, K ≈ 4.2 s
            t.now = t.now + Dur::from_millis(50);
            ack(&mut c, &mut t, 1, mark);
            let before = t.cwnd;
            t.now = t.now + Dur::from_millis(40); // past the 31-jiffy gate
            for _ in 0..20 {
                t.now = t.now + Dur::from_millis(1);
                ack(&mut c, &mut t, 1, false);
            }
            t.cwnd - before
        };
        assert!(grow(false) <= 1, "CUBIC's concave region: {}", grow(false));
        assert_eq!(grow(true), 10, "cnt = 2 after the wrap");
    }

    /// Above K an ESCE ACK moves the inflection point to the present: the
    /// plateau becomes the curve's present value and K the time since the
    /// (moved) epoch start, so the window levels off instead of following
    /// the convex part of the old curve.
    #[test]
    fn cubic_sce_mark_above_the_inflection_point_moves_the_plateau_to_now() {
        let grow = |mark: bool| {
            // The cubic curve alone (the Reno-friendly estimate would lead).
            let cfg = CubicConfig { tcp_friendliness: false, ..Default::default() };
            let mut c = CcConfig::CubicSce(cfg).build();
            let mut t = ca(100);
            t.now = SimTime::from_secs_f64(1.0);
            t.ssthresh = c.ssthresh(&t); // W_max = 100
            t.ssthresh = 50;
            // An epoch with K = 0 at cwnd 100: W(t) = 100 + C·t³.
            for _ in 0..2000 {
                t.now = t.now + Dur::from_millis(1);
                ack(&mut c, &mut t, 1, false);
            }
            t.now = t.now + Dur::from_millis(1);
            ack(&mut c, &mut t, 1, mark);
            let before = t.cwnd;
            for _ in 0..1000 {
                t.now = t.now + Dur::from_millis(1);
                ack(&mut c, &mut t, 1, false);
            }
            (before, t.cwnd - before)
        };
        let (b, g) = grow(false);
        assert!((102..=104).contains(&b) && g >= 6, "convex: {b} then +{g}");
        let (b, g) = grow(true);
        assert!((102..=104).contains(&b) && g <= 1, "levelled: {b} then +{g}");
    }

    /// Without SCE marks cubic-sce is CUBIC but for its byte count of
    /// ACKs (`acked·rcv_mss` against `cwnd·beta_scale·rcv_mss/8`, the count
    /// restarting at 0 rather than `acked` with each epoch): the windows
    /// stay within one segment.
    #[test]
    fn without_sce_marks_cubic_sce_tracks_cubic() {
        let mut s = cubic_sce();
        let mut b = CcConfig::Cubic(Default::default()).build();
        let (mut ts, mut tb) = (ca(30), ca(30));
        for i in 0..5000u64 {
            for (c, t) in [(&mut s, &mut ts), (&mut b, &mut tb)] {
                t.now = SimTime(i * 1_000_000);
                if i % 1000 == 999 {
                    t.ssthresh = c.ssthresh(t);
                    c.on_state(t, CaState::Recovery);
                    t.cwnd = t.ssthresh;
                    c.on_state(t, CaState::Open);
                } else {
                    ack(c, t, 1, false);
                }
            }
            assert!(ts.cwnd.abs_diff(tb.cwnd) <= 1, "ACK {i}: {} vs {}", ts.cwnd, tb.cwnd);
        }
    }

    /// Without SCE marks reno-sce is Reno: same cwnd trajectory.
    #[test]
    fn without_sce_marks_reno_sce_is_reno() {
        let mut s = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        let mut b = RenoConfig::default().build();
        let (mut ts, mut tb) = (ca(30), ca(30));
        for i in 0..5000u64 {
            for (c, t) in [(&mut s as &mut dyn CongestionControl, &mut ts), (&mut b as &mut dyn CongestionControl, &mut tb)] {
                t.now = SimTime(i * 1_000_000);
                if i % 1000 == 999 {
                    t.ssthresh = c.ssthresh(t);
                    c.on_state(t, CaState::Recovery);
                    t.cwnd = t.ssthresh;
                    c.on_state(t, CaState::Open);
                } else {
                    ack(c, t, 1, false);
                }
            }
            assert_eq!((ts.cwnd, ts.ssthresh), (tb.cwnd, tb.ssthresh), "ACK {i}");
        }
    }
}
