//! SCE-aware TCP: `reno-sce`, `cubic-sce`, `dctcp-sce` (chromi/sce
//! `tcp_reno_sce.c`, `tcp_cubic_sce.c`, `tcp_dctcp_sce.c`;
//! draft-morton-tsvwg-sce, draft-grimes-tcpm-tcpsce).
//!
//! An SCE-capable sender sends ECT(0) as usual; an SCE AQM rewrites
//! ECT(0)→ECT(1) at a lower threshold than CE; the receiver echoes the
//! codepoint of the data it ACKs in the ESCE flag (`TcpAck::esce`, the old
//! NS bit), and the sender counts the segments an ESCE ACK delivers as
//! SCE-marked (`TcpCcState::acked_sce`). Each algorithm wraps its base
//! (composition: the base's code is not touched) and adds:
//!
//! - an SCE response per SCE-marked segment, in segments of cwnd:
//!   reno-sce √cwnd/(2·cwnd) (a full RTT of SCE marks takes √cwnd/2
//!   segments off), cubic-sce √cwnd/cwnd (√cwnd per RTT), dctcp-sce 1/2
//!   (a full RTT of SCE halves cwnd, DCTCP-like without α); the
//!   decrease accumulates and cwnd steps down by whole segments (≥ 2);
//! - no growth for SCE-marked segments (only unmarked ACKed segments go to
//!   the base's `cong_avoid`);
//! - SCE in slow start ends it: ssthresh = cwnd/2;
//! - cubic-sce: each SCE ACK in congestion avoidance restarts the cubic
//!   curve at the present window (K = 0: cwnd sits on the plateau);
//! - a CE reduction (CWR) within cwnd ACKs of an SCE mark cuts to 7/8 of
//!   cwnd (cubic-sce's β = 7/8 after recent SCE; reno-sce's 12.5 %).
//!
//! CE otherwise keeps the base's RFC 3168 response and loss the base's
//! halving (Reno) or β = 0.7 (CUBIC), DCTCP its α law. Without SCE marks
//! (a non-SCE path) every hook is exactly the base's.
//!
//! Units: segments. Deviations: reno-sce's ECE response in one stored
//! version of tcp_reno_sce.c (a 25 % cut spread over the RTT without recent
//! SCE) is replaced by RFC 3168's halving, so that reno-sce equals Reno on a
//! classic-ECN path; cubic-sce moves the cubic inflection point to the
//! present through CUBIC's public `ssthresh()` (which ends the epoch and
//! records W_max) rather than by scaling K inside CUBIC.

use super::{AckEvent, CaState, CongestionControl, EcnMode, TcpCcState};
use crate::rng::SimRng;
use crate::units::{Dur, Rate};

/// The SCE response law.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SceLaw {
    Reno,
    Cubic,
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
            SceLaw::Cubic => w.sqrt() / w,
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
        if self.law == SceLaw::Cubic && !tcp.in_slow_start() {
            // Move the cubic curve's origin to the present window: CUBIC's
            // own ssthresh() ends the epoch and records W_max ≤ cwnd, so the
            // next epoch starts with K = 0 at this cwnd (the plateau), and
            // the Reno-friendly estimate restarts from it.
            let _ = self.base.ssthresh(tcp);
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

    fn on_ack_event(&mut self, tcp: &TcpCcState, ev: &AckEvent) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{cubic::CubicConfig, dctcp::DctcpConfig, reno::RenoConfig};
    use crate::units::SimTime;

    fn ca(cwnd: u32) -> TcpCcState {
        let mut t = TcpCcState::new(SimTime(0), 1448, cwnd);
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
            let ev = AckEvent { acked: 1, acked_ce: 0, ece: false };
            c.on_ack_event(t, &ev);
            c.cong_avoid(t, 1);
        }
        t.acked_sce = 0;
    }

    #[test]
    fn a_full_rtt_of_sce_takes_the_reference_decrease() {
        // reno-sce: √100/2 = 5 segments; cubic-sce: √100 = 10; dctcp-sce: half.
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        let mut t = ca(100);
        marked_rtt(&mut r, &mut t);
        assert!((94..=95).contains(&t.cwnd), "reno-sce {}", t.cwnd);
        let mut c = Sce::new(CubicConfig::default().build(), SceLaw::Cubic);
        let mut t = ca(100);
        marked_rtt(&mut c, &mut t);
        assert!((89..=91).contains(&t.cwnd), "cubic-sce {}", t.cwnd);
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
        r.on_ack_event(&t, &AckEvent { acked: 1, acked_ce: 0, ece: false });
        t.acked_sce = 0;
        assert_eq!(r.ssthresh(&t), 70);
        t.ssthresh = 70;
        r.on_state(&mut t, CaState::Recovery);
        assert_eq!(t.ssthresh, 40, "a loss is a loss");
        // cwnd ACKs later the SCE is no longer recent.
        let mut r = Sce::new(RenoConfig::default().build(), SceLaw::Reno);
        t.acked_sce = 1;
        r.on_ack_event(&t, &AckEvent { acked: 1, acked_ce: 0, ece: false });
        t.acked_sce = 0;
        r.on_ack_event(&t, &AckEvent { acked: 80, acked_ce: 0, ece: false });
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
        assert!(s.cong_control(&mut t, &AckEvent { acked: 3, acked_ce: 0, ece: false }));
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
            s.on_ack_event(&t, &AckEvent { acked, acked_ce: 0, ece: false });
            s.cong_avoid(&mut t, acked);
        }
        assert_eq!(s.sce_acked, 5);
        // Only the unmarked segments reach the base's growth.
        assert_eq!(s.base.log, ["cong_avoid 3", "cong_avoid 2"]);
    }

    /// cubic-sce in congestion avoidance: an SCE mark moves the cubic
    /// curve's origin to the present window, so growth right after it is
    /// the plateau's (K = 0), not the steep part of an old epoch.
    #[test]
    fn cubic_sce_mark_restarts_the_curve_at_the_present_window() {
        let grow = |mark: bool| {
            let mut c = Sce::new(CubicConfig::default().build(), SceLaw::Cubic);
            let mut t = ca(100);
            let ack = AckEvent { acked: 1, acked_ce: 0, ece: false };
            c.on_ack_event(&t, &ack);
            c.cong_avoid(&mut t, 1); // the epoch starts at 0
            t.now = SimTime(5_000_000_000); // 5 s on: 0.4·5³ = 50 segments above the origin
            if mark {
                t.acked_sce = 1;
                c.on_ack_event(&t, &ack);
                c.cong_avoid(&mut t, 1);
                t.acked_sce = 0;
            }
            let before = t.cwnd;
            for _ in 0..100 {
                c.on_ack_event(&t, &ack);
                c.cong_avoid(&mut t, 1);
            }
            t.cwnd - before
        };
        assert!(grow(false) >= 5, "old epoch: steep growth, {}", grow(false));
        assert!(grow(true) <= 1, "after SCE: on the plateau, {}", grow(true));
    }

    /// Without SCE marks every hook is the base's: same cwnd trajectory.
    #[test]
    fn without_sce_marks_it_is_the_base_algorithm() {
        let mut s = Sce::new(CubicConfig::default().build(), SceLaw::Cubic);
        let mut b = CubicConfig::default().build();
        let (mut ts, mut tb) = (ca(30), ca(30));
        for i in 0..5000u64 {
            for (c, t) in [(&mut s as &mut dyn CongestionControl, &mut ts), (&mut b as &mut dyn CongestionControl, &mut tb)] {
                t.now = SimTime(i * 1_000_000);
                let ev = AckEvent { acked: 1, acked_ce: 0, ece: false };
                c.on_ack_event(t, &ev);
                if i % 1000 == 999 {
                    t.ssthresh = c.ssthresh(t);
                    c.on_state(t, CaState::Recovery);
                    t.cwnd = t.ssthresh;
                    c.on_state(t, CaState::Open);
                } else {
                    c.cong_avoid(t, 1);
                }
            }
            assert_eq!((ts.cwnd, ts.ssthresh), (tb.cwnd, tb.ssthresh), "ACK {i}");
        }
    }
}
