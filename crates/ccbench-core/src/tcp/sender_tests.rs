//! Unit tests for the TCP sender against its sources: RFC 6298 (RTO
//! arithmetic and backoff), RFC 6937 (PRR, both branches), RFC 6675
//! (DupThresh, NextSeg), RFC 8985 (RACK's time rule), RFC 3168 (CWR, Not-ECT
//! retransmissions), Linux `tcp_fastretrans_alert` (CWR exit), Linux
//! `tcp_update_pacing_rate`, and finite transfers.

use super::*;
use crate::cc::cubic::CubicConfig;
use crate::cc::dctcp::DctcpConfig;
use crate::cc::reno::RenoConfig;
use crate::cc::CcConfig;
use crate::packet::SackBlock;
use crate::tcp::scoreboard::{LOST, RETRANS};
use crate::tcp::receiver::TcpReceiver;

fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}
fn at(x: u64) -> SimTime {
    SimTime::ZERO + ms(x)
}
fn us(x: u64) -> SimTime {
    SimTime::ZERO + Dur::from_micros(x)
}

fn reno_cc() -> CcConfig {
    CcConfig::Reno(RenoConfig::default())
}
fn cubic_cc() -> CcConfig {
    CcConfig::Cubic(CubicConfig::default())
}
fn dctcp_cc() -> CcConfig {
    CcConfig::Dctcp(DctcpConfig::default())
}

fn sender(cc: CcConfig, ecn: EcnMode, cfg: TcpConfig, bytes: Option<u64>) -> TcpSender {
    TcpSender::new(cfg, cc.build(), ecn, Packet::default(), bytes, SimTime::ZERO, Some(ms(100)))
}

/// Reno in congestion avoidance (ssthresh = cwnd), no ECN, unlimited data.
fn reno(cwnd: u32) -> TcpSender {
    let mut s = sender(
        reno_cc(),
        EcnMode::Off,
        TcpConfig {
            init_cwnd: cwnd,
            ..Default::default()
        },
        None,
    );
    s.t.ssthresh = cwnd;
    s
}

/// A paced Reno sender (Linux with fq) with initial window `cwnd`, with
/// or without TSO.
fn paced_reno(cwnd: u32, tso: bool) -> TcpSender {
    let cfg = TcpConfig {
        pacing: true,
        init_cwnd: cwnd,
        tso,
        ..Default::default()
    };
    sender(reno_cc(), EcnMode::Off, cfg, None)
}

/// A Reno sender whose host delays each packet by up to 1 ms (`tx_jitter`),
/// with initial window `cwnd` and its random stream set.
fn jittered_reno(cwnd: u32) -> TcpSender {
    let cfg = TcpConfig {
        tx_jitter: ms(1),
        init_cwnd: cwnd,
        ..Default::default()
    };
    let mut s = sender(reno_cc(), EcnMode::Off, cfg, None);
    s.set_rng(crate::rng::SimRng::for_component(1, "tcp:test"));
    s
}

/// A config whose send buffer holds at most `segs` segments (1468 B of
/// truesize each), with initial window `cwnd`.
fn send_buffer_of(segs: u64, cwnd: u32) -> TcpConfig {
    TcpConfig {
        init_cwnd: cwnd,
        wmem_default: crate::units::Bytes(4096),
        wmem_max: crate::units::Bytes(segs * 1468),
        ..Default::default()
    }
}

fn start(s: &mut TcpSender, now: SimTime) -> Vec<Packet> {
    let mut v = Vec::new();
    s.start(now, &mut |p| v.push(p));
    v
}
fn ack(s: &mut TcpSender, a: TcpAck, now: SimTime) -> Vec<Packet> {
    let mut v = Vec::new();
    s.on_ack(&a, now, &mut |p| v.push(p));
    v
}
fn timer(s: &mut TcpSender, now: SimTime) -> Vec<Packet> {
    let mut v = Vec::new();
    s.on_timer(now, &mut |p| v.push(p));
    v
}
fn cum(n: u64) -> TcpAck {
    TcpAck {
        ack: n,
        ..Default::default()
    }
}
fn sack(n: u64, blocks: &[(u64, u64)]) -> TcpAck {
    let mut a = cum(n);
    for &(start, end) in blocks {
        a.push_sack(SackBlock { start, end });
    }
    a
}
fn seg(p: &Packet) -> TcpSeg {
    match p.hdr {
        Header::TcpData(s) => s,
        _ => panic!("not data"),
    }
}
fn seqs(v: &[Packet]) -> Vec<u64> {
    v.iter().map(|p| seg(p).seq).collect()
}
/// `a` echoing the timestamp `tsecr`.
fn echoing(mut a: TcpAck, tsecr: SimTime) -> TcpAck {
    a.tsecr = tsecr;
    a
}
/// Ten segments out at 0 ms; at 100 ms 1..3 are SACKed, so 0 is marked
/// lost at once (no reordering known) and retransmitted: what goes out.
fn head_lost(s: &mut TcpSender) -> Vec<Packet> {
    start(s, at(0));
    ack(s, sack(0, &[(1, 4)]), at(100))
}

// ---- RFC 6298 ---------------------------------------------------------

#[test]
fn rto_arithmetic_follows_rfc6298_with_linux_floor() {
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), None);
    s.srtt = None;
    // §2.2: first sample R: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR.
    s.update_rtt(ms(400));
    assert_eq!((s.srtt, s.rttvar, s.rto), (Some(ms(400)), ms(200), ms(1200)));
    // §2.3 with β = 1/4, α = 1/8: RTTVAR = 3/4·200 + 1/4·|400 − 240| = 190,
    // SRTT = 7/8·400 + 1/8·240 = 380, RTO = 380 + 760.
    s.update_rtt(ms(240));
    assert_eq!((s.srtt, s.rttvar, s.rto), (Some(ms(380)), ms(190), ms(1140)));
    assert_eq!(s.t.srtt, ms(380), "the CC sees srtt");
    // The 200 ms floor applies to the variance term (Linux tcp_set_rto):
    // a steady 20 ms path converges to 20 + 200 ms, not to 200 ms.
    for _ in 0..200 {
        s.update_rtt(ms(20));
    }
    assert_eq!(s.srtt, Some(ms(20)));
    assert!(s.rttvar < ms(1));
    assert_eq!(s.rto, ms(220));
    // Capped at TCP_RTO_MAX.
    s.update_rtt(Dur::from_secs(200));
    assert_eq!(s.rto, RTO_MAX);
}

#[test]
fn rtt_samples_skip_retransmitted_segments_karn() {
    let mut s = reno(10);
    start(&mut s, at(0));
    let mut v = Vec::new();
    let r = s.on_ack(&sack(0, &[(1, 4)]), at(100), &mut |p| v.push(p));
    assert_eq!(r.rtt, Some(ms(100)), "SACKed segments sent once give a sample");
    assert_eq!(seqs(&v)[0], 0, "fast retransmit");
    let r = s.on_ack(&sack(4, &[]), at(150), &mut |p| v.push(p));
    assert!(r.rtt.is_none(), "RFC 6298 §3 (Karn): only the retransmitted seg 0 is new");
    let r = s.on_ack(&cum(5), at(160), &mut |p| v.push(p));
    assert_eq!(r.rtt, Some(ms(160)), "seg 4 was sent once, at 0");
}

#[test]
fn rto_fires_backs_off_and_collapses_cwnd() {
    let mut s = reno(4);
    let out = start(&mut s, at(0));
    assert_eq!(out.len(), 4);
    // syn RTT 100 ms: RTO = 100 + max(200, 4·50) = 300 ms, armed at send.
    assert_eq!(s.rto, ms(300));
    assert_eq!(s.rto_at, at(300));
    assert!(timer(&mut s, at(299)).is_empty());
    assert_eq!(s.rto_count, 0);
    let out = timer(&mut s, at(300));
    // RFC 5681 §3.1 (4): ssthresh = max(FlightSize/2, 2); cwnd = 1 (LW).
    assert_eq!((s.t.cwnd, s.t.ssthresh, s.ca_state), (1, 2, CaState::Loss));
    assert_eq!(seqs(&out), vec![0]);
    // §5.5: RTO doubles; §5.6 the timer restarts with it.
    assert_eq!((s.rto, s.rto_at), (ms(600), at(900)));
    timer(&mut s, at(900));
    assert_eq!((s.rto, s.rto_at), (ms(1200), at(2100)));
    assert_eq!(s.rto_count, 2);
    assert_eq!(s.t.ssthresh, 2, "no new ssthresh while already in Loss");
    let mut now = at(2100);
    for _ in 0..20 {
        timer(&mut s, now);
        now = s.rto_at;
    }
    assert_eq!(s.rto, RTO_MAX, "backoff capped at 120 s");
    assert_eq!(s.retransmits, 22);
}

#[test]
fn rto_timer_rearms_on_new_ack_and_stops_when_all_acked() {
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), Some(10 * 1448));
    start(&mut s, at(0));
    assert_eq!(s.rto_at, at(300));
    ack(&mut s, cum(2), at(100));
    // RTT 100 = srtt: RTTVAR 3/4·50 = 37.5, RTO = 100 + max(200, 150) = 300.
    assert_eq!(s.rto, ms(300));
    assert_eq!(s.rto_at, at(400), "§5.3: restarted from this ACK");
    ack(&mut s, sack(2, &[(3, 4)]), at(150));
    assert_eq!(s.rto_at, at(400), "a SACK that does not advance una does not rearm");
    ack(&mut s, cum(10), at(160));
    assert_eq!(s.rto_at, SimTime::NEVER, "§5.2: all data ACKed, timer off");
    assert!(s.finished());
}

// ---- RFC 6675 / RFC 8985 ----------------------------------------------

#[test]
fn dupthresh_marks_holes_below_three_sacked_and_nextseg_retransmits_lowest_first() {
    let mut s = reno(10);
    start(&mut s, at(0)); // segs 0..10, all sent at 0: RACK cannot fire
                          // Two SACKed above the holes 0, 1: not lost (IsLost needs DupThresh).
    let out = ack(&mut s, sack(0, &[(2, 4)]), at(100));
    assert_eq!(s.sb.lost_out, 0);
    assert_eq!(s.ca_state, CaState::Disorder);
    assert_eq!(seqs(&out), vec![10, 11], "pipe 8 < cwnd 10: new data");
    // The third SACKed segment makes both holes lost.
    let out = ack(&mut s, sack(0, &[(2, 5)]), at(101));
    assert_eq!(s.sb.lost_out, 2);
    assert_eq!((s.ca_state, s.t.ssthresh), (CaState::Recovery, 5));
    // NextSeg rule 1: the lowest lost segment first.
    assert_eq!(seqs(&out), vec![0]);
    assert!(seg(&out[0]).retrans);
    // PRR allows one more per two ACKs; a lost segment beats new data.
    assert!(ack(&mut s, sack(0, &[(2, 6)]), at(102)).is_empty());
    let out = ack(&mut s, sack(0, &[(2, 7)]), at(103));
    assert_eq!(seqs(&out), vec![1]);
    // Then new data (rule 2) once nothing lost remains and pipe (4) is
    // below ssthresh (5).
    ack(&mut s, sack(0, &[(2, 8)]), at(104));
    assert!(ack(&mut s, sack(0, &[(2, 9)]), at(105)).is_empty(), "pipe = ssthresh");
    let out = ack(&mut s, sack(0, &[(2, 10)]), at(106));
    assert_eq!(seqs(&out), vec![12]);
}

#[test]
fn rack_marks_lost_after_rack_rtt_plus_quarter_min_rtt() {
    let mut s = reno(4);
    s.t.cwnd = 1;
    start(&mut s, at(0)); // seg 0 at 0
    s.t.cwnd = 4;
    let mut v = Vec::new();
    s.try_send(at(10), &mut |p| v.push(p)); // segs 1..4 at 10 ms
    assert_eq!(seqs(&v), vec![1, 2, 3]);
    // Seg 1 (sent at 10) delivered at 60: RACK.rtt = 50, reo_wnd =
    // min_rtt/4 = 50/4 (syn RTT 100, then 50): fewer than DupThresh
    // segments are SACKed and no reordering was seen.
    ack(&mut s, sack(0, &[(1, 2)]), at(60));
    assert_eq!(s.t.min_rtt, ms(50));
    assert_eq!((s.rack.xmit, s.rack.rtt), (at(10), ms(50)));
    assert_eq!(s.sb.lost_out, 0);
    // Seg 2, sent at the same time with a higher sequence, delivered at 62
    // (tcp_rack_sent_after's tie-break): RACK.rtt = 52; seg 0 is lost at
    // 0 + 52 + 12.5 ms.
    ack(&mut s, sack(0, &[(1, 3)]), us(62_000));
    assert_eq!((s.rack.rtt, s.rack.end_seq), (ms(52), 3));
    assert_eq!(s.sb.lost_out, 0, "62 ms < 64.5 ms");
    // The reordering timer: 2.5 ms rounded up to whole jiffies + TCP_TIMEOUT_MIN.
    assert_eq!(s.next_timer(), at(67));
    // An ACK that delivers nothing new does not scan (rack.advanced).
    ack(&mut s, sack(0, &[(1, 3)]), us(64_600));
    assert_eq!(s.sb.lost_out, 0);
    let out = timer(&mut s, at(67));
    assert_eq!(s.sb.lost_out, 1, "the timer marks it");
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(seqs(&out), vec![0]);
    // Seg 3 was sent at RACK.xmit_time after seg 2: never marked by RACK.
    ack(&mut s, sack(0, &[(1, 3)]), at(1000));
    assert_eq!(s.sb.get(3).flags & LOST, 0);
}

#[test]
fn rack_finds_a_lost_retransmission() {
    let mut s = reno(10);
    let out = head_lost(&mut s);
    assert_eq!(seqs(&out)[0], 0, "fast retransmit at 100 ms");
    // Segments sent after the retransmission are SACKed; the retransmission
    // is not: RACK marks it lost again. In Recovery with no reordering
    // seen reo_wnd is 0, so at once.
    s.t.cwnd = 20;
    let mut v = Vec::new();
    s.try_send(at(110), &mut |p| v.push(p));
    let last = seg(v.last().unwrap()).seq;
    let out = ack(&mut s, sack(0, &[(1, last + 1)]), at(210));
    assert_eq!(s.rack.xmit, at(110));
    assert!(s.sb.get(0).flags & LOST != 0);
    assert_eq!(seqs(&out)[0], 0, "seg 0 retransmitted a second time");
    assert_eq!(s.retransmits, 2);
}

// ---- Reordering: RACK window, D-SACK, undo (tcp_recovery.c, tcp_input.c)

#[test]
fn a_late_original_is_reordering_and_widens_rack_to_a_quarter_min_rtt() {
    let mut s = reno(10);
    start(&mut s, at(0));
    // 1..4 SACKed, 0 missing: three SACKed, no reordering seen: reo_wnd 0,
    // seg 0 lost at once and retransmitted.
    let out = ack(&mut s, sack(0, &[(1, 4)]), at(100));
    assert_eq!((seqs(&out)[0], s.ca_state), (0, CaState::Recovery));
    assert_eq!(s.rack.reord_seen, 0);
    // The original arrives after all (its ACK echoes its own timestamp, sent
    // at 0, before the retransmission at 100 ms): reordering of 4 segments,
    // and the recovery is undone (Linux tcp_try_undo_recovery, timestamps).
    let a = echoing(cum(10), us(1));
    ack(&mut s, a, at(101));
    assert_eq!(s.rack.reord_seen, 0, "seg 0 was retransmitted: not counted");
    assert_eq!((s.ca_state, s.undos), (CaState::Open, 1));
    assert_eq!(s.t.cwnd, 10, "cwnd restored");
    // A segment never retransmitted delivered below the highest SACK is
    // reordering (tcp_check_sack_reordering): degree 5, and from then on
    // RACK waits min_rtt/4 even with DupThresh segments SACKed.
    let mut s = reno(10);
    start(&mut s, at(0));
    ack(&mut s, sack(0, &[(3, 5)]), at(100)); // two SACKed: waits min_rtt/4
    assert_eq!(s.sb.lost_out, 0);
    ack(&mut s, sack(1, &[(3, 5)]), at(101)); // seg 0 arrives late
    assert_eq!((s.rack.reord_seen, s.rack.reordering), (1, 5));
    ack(&mut s, sack(1, &[(3, 8)]), at(102)); // five SACKed above 1 and 2
    assert_eq!(s.sb.lost_out, 0, "reo_wnd = 25 ms once reordering is seen");
    // The reordering timer: 25 ms + TCP_TIMEOUT_MIN; then both are lost.
    assert_eq!(s.next_timer(), at(129));
    let out = timer(&mut s, at(129));
    assert_eq!(s.sb.lost_out, 2, "lost after RACK.rtt + 25 ms");
    assert_eq!((seqs(&out)[0], s.ca_state), (1, CaState::Recovery));
}

#[test]
fn dsack_of_every_retransmission_undoes_the_reduction() {
    let mut s = reno(10);
    let out = head_lost(&mut s);
    assert_eq!((seqs(&out)[0], s.t.ssthresh), (0, 5));
    // The original and the retransmission both arrive: the receiver reports
    // the second copy as D-SACK below the cumulative ACK.
    let a = echoing(sack(10, &[(0, 1)]), at(100)); // the retransmission's echo: timestamps cannot tell
    ack(&mut s, a, at(200));
    assert_eq!(s.undos, 1);
    assert!(s.rack.dsack_seen || s.rack.reo_wnd_steps == 2, "D-SACK noted for RACK");
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.t.cwnd, 10, "Reno's undo_cwnd: max(cwnd, prior_cwnd)");
    assert_eq!(s.t.ssthresh, 10, "prior_ssthresh = max(ssthresh, 3/4 cwnd) restored");
}

#[test]
fn a_real_loss_is_not_undone() {
    let mut s = reno(10);
    head_lost(&mut s);
    // Only the retransmission arrives (TSecr = its send time).
    let a = echoing(cum(10), at(100));
    ack(&mut s, a, at(200));
    assert_eq!((s.undos, s.ca_state, s.t.ssthresh), (0, CaState::Open, 5));
    assert!(s.t.cwnd <= 6, "cwnd = ssthresh at the end of Recovery, then +1 at most: {}", s.t.cwnd);
}

#[test]
fn dsack_blocks_are_recognised_as_rfc2883_defines_them() {
    // ACKs that deliver nothing new, so the D-SACK stays pending in RACK.
    let seen = |blocks: &[(u64, u64)]| {
        let mut s = reno(10);
        start(&mut s, at(0));
        ack(&mut s, sack(2, &[(4, 8)]), at(100));
        s.rack.dsack_seen = false;
        ack(&mut s, sack(2, blocks), at(101));
        s.rack.dsack_seen
    };
    assert!(seen(&[(1, 2), (4, 8)]), "first block below the cumulative ACK");
    assert!(!seen(&[(2, 3), (4, 8)]), "a block starting at the cumulative ACK is a SACK");
    assert!(seen(&[(5, 6), (4, 8)]), "inside the second block");
    assert!(seen(&[(4, 8), (4, 8)]), "equal to the second block");
    assert!(!seen(&[(3, 6), (4, 8)]), "overlapping, not inside");
    assert!(!seen(&[(5, 9), (4, 8)]), "overlapping at the right edge");
    assert!(!seen(&[(4, 8)]), "a lone block above the ACK");
}

#[test]
fn dsacks_of_this_episode_count_against_its_retransmissions() {
    // Two holes (2 and 3) retransmitted in one recovery episode that began
    // with snd_una = 2; D-SACKs answer them one by one.
    let mut s = reno(10);
    start(&mut s, at(0));
    let out = ack(&mut s, sack(2, &[(4, 8)]), at(100));
    assert_eq!(s.ca_state, CaState::Recovery);
    assert_eq!(seqs(&out)[..2], [2, 3]);
    assert_eq!(s.undo_retrans, 2);
    // A duplicate of data below the episode (segment 1) does not count.
    ack(&mut s, sack(2, &[(1, 2), (4, 8)]), at(101));
    assert_eq!(s.undo_retrans, 2);
    // Segment 3's duplicate counts one.
    ack(&mut s, sack(2, &[(3, 4), (3, 8)]), at(102));
    assert_eq!(s.undo_retrans, 1);
    assert_eq!(s.undos, 0, "one retransmission still unanswered");
    // Segment 2's: every retransmission was spurious: undo at once.
    ack(&mut s, sack(8, &[(2, 3)]), at(103));
    assert_eq!((s.undo_retrans, s.undos, s.ca_state), (0, 1, CaState::Open));
}

#[test]
fn delivery_counters_follow_each_ack() {
    let mut s = sender(reno_cc(), EcnMode::Classic, TcpConfig { init_cwnd: 10, ..Default::default() }, None);
    start(&mut s, at(0));
    ack(&mut s, cum(2), at(100));
    assert_eq!((s.t.delivered, s.t.delivered_ce, s.ce_delivered), (2, 0, 0));
    // Classic ECN: every segment an ECE ACK delivers counts as CE.
    let mut a = cum(5);
    a.ece = true;
    ack(&mut s, a, at(101));
    assert_eq!((s.t.delivered, s.t.delivered_ce, s.ce_delivered), (5, 3, 3));
    // ESCE: the delivered segments arrived SCE-marked.
    let mut a = cum(7);
    a.esce = true;
    ack(&mut s, a, at(102));
    assert_eq!((s.t.acked_sce, s.t.delivered_sce), (2, 2));
    let mut a = cum(8);
    a.esce = true;
    ack(&mut s, a, at(103));
    assert_eq!(s.t.delivered_sce, 3);
}

#[test]
fn the_reordering_timer_starts_one_recovery_and_reduces_by_prr() {
    let mut s = reno(4);
    s.t.cwnd = 1;
    start(&mut s, at(0));
    s.t.cwnd = 4;
    s.try_send(at(10), &mut |_| {});
    ack(&mut s, sack(0, &[(1, 3)]), us(62_000));
    assert_eq!((s.sb.lost_out, s.t.lost), (0, 0));
    timer(&mut s, at(67));
    assert_eq!((s.sb.lost_out, s.t.lost, s.ca_state), (1, 1, CaState::Recovery));
    let (high, ssthresh) = (s.high_seq, s.t.ssthresh);
    assert_eq!(ssthresh, 2);
    // PRR ran for the timer's loss: cwnd = pipe + 1 (the forced retransmit).
    assert_eq!(s.t.cwnd, s.sb.in_flight());
    // A second loss found by the timer inside the same recovery does not
    // restart it: new data sent at 68 ms is SACKed at 121 ms; with
    // reordering seen (reo_wnd = min_rtt/4) seg 0's retransmission (67 ms)
    // waits out the window and the timer marks it lost again.
    s.rack.reord_seen = 1;
    s.t.cwnd = 10;
    let mut v = Vec::new();
    s.try_send(at(68), &mut |p| v.push(p));
    let new_seq = seg(&v[0]).seq;
    assert_eq!(s.sb.get(0).flags & RETRANS, RETRANS, "seg 0 was retransmitted at 67 ms");
    let lost_before = s.t.lost;
    // Everything but seg 0 up to the first new segment is SACKed.
    ack(&mut s, sack(0, &[(1, new_seq + 1)]), at(121));
    assert_eq!(s.t.lost, lost_before, "the retransmission is still inside the window");
    let t = s.next_timer();
    assert!(t > at(121) && t < at(140), "{t:?}");
    timer(&mut s, t);
    assert_eq!(s.t.lost, lost_before + 1, "the retransmission is lost again");
    assert_eq!((s.high_seq, s.t.ssthresh, s.ca_state), (high, ssthresh, CaState::Recovery));
}

#[test]
fn an_rto_counts_everything_outstanding_as_lost() {
    let mut s = reno(10);
    start(&mut s, at(0));
    ack(&mut s, cum(2), at(100));
    let outstanding = u64::from(s.sb.packets_out());
    assert!(outstanding >= 8);
    let t = s.rto_at;
    timer(&mut s, t);
    assert_eq!((s.rto_count, s.t.lost), (1, outstanding));
    let t = s.rto_at;
    timer(&mut s, t);
    assert_eq!(s.rto_count, 2);
}

#[test]
fn send_buffer_covers_the_learned_reordering_degree() {
    // Linux tcp_sndbuf_expand: nr_segs = max(10, cwnd, reordering + 1).
    let mut s = reno(10);
    s.rack.reordering = 100;
    s.sndbuf = 0;
    s.sndbuf_expand();
    assert_eq!(s.sndbuf, 2 * 101 * s.per_mss);
}

// ---- RFC 6937 PRR ----------------------------------------------------

#[test]
fn prr_sends_ssthresh_over_prior_cwnd_per_delivered_segment() {
    // RFC 6937 §5 example: one loss in a window of 20, Reno (ssthresh 10):
    // PRR sends one segment per two ACKs, prr_out = ⌈prr_delivered·10/20⌉.
    // The example sends segment by segment (no TSO deferral before the loss).
    let mut s = reno(20);
    s.cfg.tso = false;
    start(&mut s, at(0));
    let mut sent_per_ack = Vec::new();
    for k in 1..=19u64 {
        let out = ack(&mut s, sack(0, &[(1, 1 + k)]), at(100 + k));
        if s.ca_state == CaState::Recovery {
            sent_per_ack.push(out.len());
            let d = u64::from(s.prr_delivered);
            if k < 19 {
                assert!(s.sb.in_flight() > s.t.ssthresh, "pipe above ssthresh");
                assert_eq!(u64::from(s.prr_out), (d * 10).div_ceil(20), "after {k} SACKs");
            } else {
                // pipe has reached ssthresh: the reduction bound holds it there.
                assert_eq!((s.sb.in_flight(), s.prr_out), (10, 8));
            }
        }
    }
    assert_eq!(s.prior_cwnd, 20);
    assert_eq!(s.t.ssthresh, 10);
    assert_eq!(sent_per_ack, vec![1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0]);
    // Recovery ends once high_seq is ACKed: cwnd = ssthresh.
    let high = s.high_seq;
    ack(&mut s, sack(20, &[]), at(200));
    assert_eq!(s.ca_state, CaState::Recovery);
    ack(&mut s, cum(high), at(201));
    assert_eq!((s.ca_state, s.t.cwnd), (CaState::Open, 10));
}

#[test]
fn prr_slow_start_reduction_bound_when_pipe_below_ssthresh() {
    // Twelve of twenty lost: pipe (5) < ssthresh (10), RFC 6937 PRR-SSRB.
    let mut s = reno(20);
    start(&mut s, at(0));
    let out = ack(&mut s, sack(0, &[(12, 15)]), at(100));
    assert_eq!(s.sb.lost_out, 12);
    // sndcnt = min(ssthresh − pipe, max(prr_delivered − prr_out, delivered))
    //        = min(5, 3) = 3: three retransmissions.
    assert_eq!(seqs(&out), vec![0, 1, 2]);
    assert_eq!(s.t.cwnd, 8);
    // una advances with nothing newly lost: one more (the "+1" of SSRB).
    // pipe 7, delta 3, sndcnt = max(4 − 3, 1) + 1 = 2.
    let out = ack(&mut s, sack(1, &[(12, 15)]), at(101));
    assert_eq!(seqs(&out), vec![3, 4]);
    assert_eq!(s.t.cwnd, 9);
    // A SACK with nothing new delivered changes nothing.
    let before = s.t.cwnd;
    assert!(ack(&mut s, sack(1, &[(12, 15)]), at(102)).is_empty());
    assert_eq!(s.t.cwnd, before);
}

// ---- Pacing (Linux tcp_update_pacing_rate) ----------------------------

#[test]
fn pacing_rate_is_ratio_times_window_over_srtt() {
    let mut s = reno(10);
    s.t.ssthresh = INFINITE_SSTHRESH;
    s.update_pacing_rate();
    // 200 % · 10 · 1448 B / 100 ms = 289 600 B/s.
    assert_eq!(s.pacing_rate, Rate(289_600 * 8));
    // 120 % once cwnd >= ssthresh/2 (10 < 20/2 is false).
    s.t.ssthresh = 20;
    s.update_pacing_rate();
    assert_eq!(s.pacing_rate, Rate(173_760 * 8));
    s.t.ssthresh = 22;
    s.update_pacing_rate();
    assert_eq!(s.pacing_rate, Rate(289_600 * 8));
    // max(cwnd, packets_out).
    start(&mut s, at(0));
    s.t.cwnd = 5;
    s.update_pacing_rate();
    assert_eq!(s.pacing_rate, Rate(289_600 * 8));
}

#[test]
fn paced_sender_spaces_packets_at_the_pacing_rate() {
    // Without TSO one segment per release time (with TSO one GSO packet:
    // `a_paced_sender_sends_one_gso_packet_per_release_time`).
    let mut s = paced_reno(10, false);
    assert!(s.t.paced);
    start(&mut s, at(0));
    let out = ack(&mut s, cum(2), at(100));
    // Slow start: cwnd 12, srtt 100 ms → 200 % · 12 · 1448 B / 0.1 s.
    let rate = Rate(2 * 12 * 1448 * 8 * 10);
    assert_eq!(s.pacing_rate, rate);
    assert_eq!(out.len(), 1, "the second packet waits for its release time");
    // Linux times the payload (`skb->len`), not the headers.
    let gap = rate.tx_time(1448);
    // The ACK released it long after its departure time (the last one
    // left at 0): Linux pays the lateness back, at most half a gap.
    let next = at(100) + (gap - gap / 2);
    assert_eq!(s.next_timer(), next);
    assert!(timer(&mut s, SimTime(next.0 - 1)).is_empty());
    assert_eq!(timer(&mut s, next).len(), 1);
    // On time: the whole gap. Late by less than half a gap: the schedule
    // holds (the next release is a gap after the one missed).
    assert_eq!(s.next_timer(), next + gap);
    let late = next + gap + Dur::from_micros(50);
    assert_eq!(timer(&mut s, late).len(), 1);
    assert_eq!(s.next_timer(), next + gap + gap);
    // Unpaced: the same ACK releases the whole opening at once.
    let mut u = reno(10);
    u.cfg.tso = false;
    u.t.ssthresh = INFINITE_SSTHRESH;
    assert!(!u.t.paced);
    start(&mut u, at(0));
    assert_eq!(ack(&mut u, cum(2), at(100)).len(), 4);
}

// ---- TSO: Linux tcp_tso_autosize and tcp_tso_should_defer --------------

#[test]
fn tso_packets_hold_about_a_millisecond_at_the_pacing_rate() {
    let mut s = reno(10);
    s.t.min_rtt = ms(20);
    // 66 Mbit/s = 8,250,000 B/s; >> 10: 8056 B, 5 segments of 1448 B.
    s.pacing_rate = Rate(66_000_000);
    assert_eq!(s.tso_segs(), 5);
    // 122 B: tcp_min_tso_segs.
    s.pacing_rate = Rate(1_000_000);
    assert_eq!(s.tso_segs(), 2);
    // 122,070 B: capped at gso_max_size (64 KiB).
    s.pacing_rate = Rate(1_000_000_000);
    assert_eq!(s.tso_segs(), 65_536 / 1448);
    // Short paths add 64 KiB >> (min_rtt_us >> 9): 1 ms → 32 KiB, 2 ms → 8 KiB.
    s.pacing_rate = Rate(66_000_000);
    s.t.min_rtt = ms(1);
    assert_eq!(s.tso_segs(), (8056 + 32_768) / 1448);
    s.t.min_rtt = ms(2);
    assert_eq!(s.tso_segs(), (8056 + 8192) / 1448);
}

/// Linux `__tcp_transmit_skb`: PSH on the last segment of every GSO packet
/// of more than one segment (and tcp_push's at the end of the data); a
/// segment sent alone, a retransmission here, carries none.
#[test]
fn gso_packets_end_with_psh() {
    let psh = |v: &[Packet]| v.iter().filter(|p| seg(p).psh).map(|p| seg(p).seq).collect::<Vec<_>>();
    // 2-segment GSO packets (200 % · 10 · 1448 B / 100 ms is 283 B per ms).
    let mut s = reno(10);
    assert_eq!(s.tso_segs(), 2);
    assert_eq!(psh(&start(&mut s, at(0))), [1, 3, 5, 7, 9]);
    // 3-segment GSO packets: the last of each, not the one in the middle.
    let mut g = reno(12);
    g.pacing_rate = Rate(40_000_000);
    g.t.min_rtt = ms(100);
    assert_eq!(g.tso_segs(), 3);
    assert_eq!(psh(&start(&mut g, at(0))), [2, 5, 8, 11]);
    let mut n = reno(10);
    n.cfg.tso = false;
    assert!(psh(&start(&mut n, at(0))).is_empty());
    // Three segments of data: a GSO packet of two, then the last alone.
    let mut f = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), Some(3 * 1448));
    assert_eq!(psh(&start(&mut f, at(0))), [1, 2]);
    let mut r = reno(10);
    let rtx = head_lost(&mut r);
    assert!(seg(&rtx[0]).retrans && !seg(&rtx[0]).psh);
}

#[test]
fn prague_caps_gso_packets_at_its_burst_size() {
    // At 1 Gbit/s autosizing alone gives 64 KiB (45 segments); Prague's
    // max_tso_burst starts at 1 (its own rate is set on the first ACK).
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), None);
    s.pacing_rate = Rate(1_000_000_000);
    assert_eq!(s.tso_segs(), 45);
    let mut p = sender(CcConfig::Prague(Default::default()), EcnMode::Accurate(Ecn::Ect1), TcpConfig::default(), None);
    p.pacing_rate = Rate(1_000_000_000);
    assert_eq!(p.tso_segs(), 1);
}

/// A Reno sender in congestion avoidance with 100 segments out since t = 0
/// (srtt 100 ms, so the oldest one's ACK is due at 100 ms), room for one
/// more, and a send 0.5 ms ago: the state in which Linux defers.
fn deferring_sender() -> TcpSender {
    let mut s = reno(100);
    s.snd_wnd_end = 10_000;
    assert_eq!(start(&mut s, at(0)).len(), 100, "nothing deferred with no ACK due soon");
    s.t.cwnd = 101;
    s.last_xmit = us(99_500);
    assert!(s.tso_deferral(at(100), 5).is_some());
    s
}

#[test]
fn tso_defers_only_while_an_ack_is_due_soon_and_the_send_would_be_small() {
    let now = at(100);
    let check = |f: &dyn Fn(&mut TcpSender)| {
        let mut s = deferring_sender();
        f(&mut s);
        s.tso_deferral(now, 5).is_some()
    };
    // Not during loss recovery; CWR and Disorder defer.
    assert!(!check(&|s| s.ca_state = CaState::Recovery));
    assert!(!check(&|s| s.ca_state = CaState::Loss));
    assert!(check(&|s| s.ca_state = CaState::Cwr));
    assert!(check(&|s| s.ca_state = CaState::Disorder));
    // Not if the last write is more than 1 ms old.
    assert!(check(&|s| s.last_xmit = at(99)));
    assert!(!check(&|s| s.last_xmit = SimTime(now.0 - 1_000_001)));
    // Not once a full GSO packet fits cwnd.
    assert!(check(&|s| s.t.cwnd = 104));
    assert!(!check(&|s| s.t.cwnd = 105));
    // The receive window limits too; deferring for it is not for cwnd.
    assert!(check(&|s| {
        s.t.cwnd = 105;
        s.snd_wnd_end = 104;
    }));
    let mut s = deferring_sender();
    assert_eq!(s.tso_deferral(now, 5), Some(true));
    s.snd_wnd_end = 101;
    assert_eq!(s.tso_deferral(now, 5), Some(false));
    // Not if the next ACK is due later than min(1 ms, srtt/2).
    assert!(check(&|s| s.srtt = Some(ms(101))));
    assert!(!check(&|s| s.srtt = Some(Dur(ms(101).0 + 1))));
    // Not for the last data of a finite transfer (FIN).
    assert!(!check(&|s| s.total_segs = Some(101)));
    assert!(check(&|s| s.total_segs = Some(102)));
}

#[test]
fn tso_sends_a_third_of_the_window_and_waits_at_most_half_an_srtt() {
    // tcp_tso_win_divisor = 3: with 9 segments out, room for 5 of cwnd 14 is
    // over a third of it and goes; 4 of cwnd 13 is under and waits.
    let mut s = reno(9);
    assert_eq!(start(&mut s, at(0)).len(), 9);
    s.last_xmit = at(100);
    s.t.cwnd = 13;
    assert!(s.tso_deferral(at(100), 45).is_some());
    s.t.cwnd = 14;
    assert!(s.tso_deferral(at(100), 45).is_none());
    // On a 1.5 ms path the wait is bounded by srtt/2 (0.75 ms), not 1 ms.
    s.t.cwnd = 13;
    s.srtt = Some(Dur::from_micros(1500));
    s.last_xmit = us(700);
    assert!(s.tso_deferral(us(700), 45).is_none(), "ACK due in 0.8 ms");
    s.last_xmit = us(800);
    assert!(s.tso_deferral(us(800), 45).is_some(), "ACK due in 0.7 ms");
}

#[test]
fn tso_makes_one_segment_acks_release_pairs() {
    // The pacing rate at cwnd 100 and srtt 100 ms is 1.74 MB/s, so GSO
    // packets are 2 segments (tcp_min_tso_segs). The first ACK comes 100 ms
    // after the last send and releases what it can; after that a single
    // segment of room waits for the next ACK, 0.1 ms later.
    let mut s = reno(100);
    s.snd_wnd_end = 10_000;
    start(&mut s, at(0));
    let mut sent = Vec::new();
    let mut times = Vec::new();
    for n in 1..=7u64 {
        let now = at(100) + Dur::from_micros(100 * (n - 1));
        let out = ack(&mut s, cum(n), now);
        assert_eq!(s.tso_segs(), 2);
        sent.push(out.len());
        times.extend(out.iter().map(|p| p.sent_at));
        if out.is_empty() {
            assert!(s.t.is_cwnd_limited(), "deferring for cwnd counts as cwnd-limited");
        }
    }
    assert_eq!(sent, [1, 0, 2, 0, 2, 0, 2]);
    // The pair leaves together.
    assert_eq!(times[1], times[2]);
    // An ACK more than 1 ms after the last send releases a single segment.
    assert_eq!(ack(&mut s, cum(8), at(102)).len(), 1);
}

#[test]
fn a_gso_packet_takes_at_most_half_of_cwnd() {
    // tcp_cwnd_test: at 1 Gbit/s autosizing asks for 45 segments, but a GSO
    // packet may take only cwnd/2 = 10; the next waits for its release time.
    let mut s = paced_reno(20, true);
    s.pacing_rate = Rate(1_000_000_000);
    assert_eq!(s.tso_segs(), 45);
    let out = start(&mut s, at(0));
    assert_eq!(out.len(), 10);
    assert!(s.pace_blocked);
}

#[test]
fn deferring_for_cwnd_marks_the_flow_cwnd_limited_and_for_rwnd_does_not() {
    for (wnd_end, limited) in [(10_000, true), (101, false)] {
        let mut s = deferring_sender();
        s.snd_wnd_end = wnd_end;
        s.t.cwnd_limited = false;
        s.cwnd_usage_seq = 0;
        let mut out = Vec::new();
        s.try_send(at(100), &mut |p| out.push(p));
        assert!(out.is_empty());
        assert_eq!(s.t.cwnd_limited, limited, "window end {wnd_end}");
    }
}

#[test]
fn nothing_sent_and_not_cwnd_limited_leaves_the_cwnd_use_alone() {
    // Linux calls tcp_cwnd_validate only when tcp_write_xmit sent something
    // or was cwnd-limited: a sender held by its send buffer keeps the flag.
    let mut s = sender(reno_cc(), EcnMode::Off, send_buffer_of(10, 20), None);
    assert_eq!(start(&mut s, at(0)).len(), 10);
    s.t.cwnd_limited = true;
    s.cwnd_usage_seq = 0;
    let mut out = Vec::new();
    s.try_send(at(1), &mut |p| out.push(p));
    assert!(out.is_empty() && s.t.cwnd_limited);
}

#[test]
fn a_paced_sender_sends_one_gso_packet_per_release_time() {
    let mut s = paced_reno(10, true);
    start(&mut s, at(0));
    let out = ack(&mut s, cum(2), at(100));
    // 2.78 Mbit/s: 339 B per 1/1024 s, so 2-segment GSO packets, and the
    // next one leaves two segments' time later.
    assert_eq!(s.tso_segs(), 2);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].sent_at, out[1].sent_at);
    // The ACK-clocked packet left late: half its two segments' time is
    // paid back (Linux tcp_update_skb_after_send).
    let gap = s.pacing_rate.tx_time(1448);
    let due = at(100) + (gap - gap / 2) * 2;
    assert_eq!(s.next_timer(), due);
    // The next leaves 3/4 of a segment's time late: the whole lateness is
    // paid back from the packet's two segments' time.
    let late = Dur(gap.0 * 3 / 4);
    let sent = due + late;
    assert_eq!(timer(&mut s, sent).len(), 2);
    assert_eq!(s.next_send, sent + (gap * 2 - late));
}

// ---- Finite transfers and ECN codepoints -------------------------------

#[test]
fn finite_transfer_ends_with_a_short_last_segment() {
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), Some(3000));
    let out = start(&mut s, at(0));
    let lens: Vec<u32> = out.iter().map(|p| seg(p).len).collect();
    assert_eq!(lens, vec![1448, 1448, 104]);
    assert_eq!(out[2].size, crate::packet::tcp_wire_size(104));
    assert!(!s.finished());
    // The last segment is lost; its retransmission keeps its length.
    ack(&mut s, cum(2), at(100));
    let rto_at = s.rto_at;
    let out = timer(&mut s, rto_at);
    assert_eq!((seg(&out[0]).seq, seg(&out[0]).len), (2, 104));
    assert!(ack(&mut s, cum(3), at(1000)).is_empty(), "nothing after the last segment");
    assert!(s.finished());
    // An exact multiple of the MSS ends with a full segment; 0 bytes sends one.
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), Some(2 * 1448));
    let lens: Vec<u32> = start(&mut s, at(0)).iter().map(|p| seg(p).len).collect();
    assert_eq!(lens, vec![1448, 1448]);
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig::default(), Some(1));
    let lens: Vec<u32> = start(&mut s, at(0)).iter().map(|p| seg(p).len).collect();
    assert_eq!(lens, vec![1]);
}

#[test]
fn retransmissions_are_not_ect_with_classic_ecn() {
    let cfg = TcpConfig {
        init_cwnd: 10,
        ..Default::default()
    };
    let mut s = sender(reno_cc(), EcnMode::Classic, cfg.clone(), None);
    s.t.ssthresh = 10;
    let out = start(&mut s, at(0));
    assert!(out.iter().all(|p| p.ecn == Ecn::Ect0), "RFC 3168 §6.1.5: new data is ECT(0)");
    let out = ack(&mut s, sack(0, &[(1, 4)]), at(100));
    assert!(seg(&out[0]).retrans);
    assert_eq!(out[0].ecn, Ecn::NotEct, "fast retransmission");
    let rto_at = s.rto_at;
    let out = timer(&mut s, rto_at);
    assert!(seg(&out[0]).retrans);
    assert_eq!(out[0].ecn, Ecn::NotEct, "RTO retransmission");
    // Accurate ECN (L4S): every packet carries the codepoint (RFC 9331 §4).
    let mut s = sender(reno_cc(), EcnMode::Accurate(Ecn::Ect1), cfg, None);
    s.t.ssthresh = 10;
    let out = head_lost(&mut s);
    assert!(seg(&out[0]).retrans);
    assert_eq!(out[0].ecn, Ecn::Ect1);
}

// ---- CWR (RFC 3168 §6.1.2, Linux tcp_fastretrans_alert state D) -------

/// cwnd 20 in congestion avoidance, 20 segments out at 0; the ACK of 0..2
/// carries ECE (or a CE count). Then every ACK up to and including
/// high_seq = 20 echoes it; the ACK of the CWR segment does not.
fn one_mark(cc: CcConfig, ecn: EcnMode) -> TcpSender {
    let cfg = TcpConfig {
        init_cwnd: 20,
        ..Default::default()
    };
    let mut s = sender(cc, ecn, cfg, None);
    s.t.ssthresh = 20;
    start(&mut s, at(0));
    let mark = |n: u64, echo: bool| TcpAck {
        ack: n,
        ece: echo && ecn == EcnMode::Classic,
        cep: 1,
        ..Default::default()
    };
    let mut cwr_segs = 0;
    let mut first_ssthresh = None;
    for (k, n) in (2..=20).step_by(2).enumerate() {
        for p in ack(&mut s, mark(n, true), at(100 + k as u64)) {
            cwr_segs += u32::from(seg(&p).cwr);
        }
        first_ssthresh.get_or_insert(s.t.ssthresh);
        assert_eq!(s.t.ssthresh, first_ssthresh.unwrap(), "ACK {n}: a second reduction");
        assert_eq!(s.high_seq, 20);
    }
    assert_eq!(s.sb.una, s.high_seq);
    assert_eq!(s.ca_state, CaState::Cwr, "held until something above high_seq is ACKed");
    let high = s.high_seq;
    ack(&mut s, mark(high + 1, false), at(130));
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.t.cwnd, first_ssthresh.unwrap(), "cwnd = ssthresh at the end of CWR");
    if ecn == EcnMode::Classic {
        assert_eq!(cwr_segs, 1, "one CWR segment");
    }
    s
}

#[test]
fn one_ce_mark_gives_one_reduction_reno_cubic_dctcp() {
    let s = one_mark(reno_cc(), EcnMode::Classic);
    assert_eq!(s.t.ssthresh, 10, "Reno: β = 1/2");
    let s = one_mark(cubic_cc(), EcnMode::Classic);
    assert_eq!(s.t.ssthresh, 14, "CUBIC: β = 717/1024");
    let s = one_mark(dctcp_cc(), EcnMode::Accurate(Ecn::Ect0));
    // DCTCP: cwnd·(1 − α/2) with α after this ACK's update: the first
    // window had F = 1/2, α = 1024·15/16 + 512/16 = 992; 20 − ⌊20·992/2048⌋.
    assert_eq!(s.t.ssthresh, 11);
}

/// Sender and receiver joined by a fixed one-way delay, no queue; data
/// segments whose sequence is in `ce` arrive CE-marked (first transmission
/// only). Returns the sender after `dur` and each ssthresh change.
fn pair(cc: CcConfig, ecn: EcnMode, ce: &[u64], dur: Dur) -> (TcpSender, Vec<u32>, u32) {
    let owd = ms(25);
    let cfg = TcpConfig {
        init_cwnd: 20,
        quickacks: 0,
        ..Default::default()
    };
    let mut s = TcpSender::new(cfg.clone(), cc.build(), ecn, Packet::default(), None, SimTime::ZERO, Some(owd * 2));
    s.t.ssthresh = 20;
    let mut r = TcpReceiver::new(&cfg, ecn);
    let mut data: Vec<(SimTime, Packet)> = Vec::new();
    let mut acks: Vec<(SimTime, TcpAck)> = Vec::new();
    let mut now = SimTime::ZERO;
    let mut out = Vec::new();
    s.start(now, &mut |p| out.push(p));
    let mut changes = Vec::new();
    let mut last = s.t.ssthresh;
    let mut cwr = 0;
    let end = SimTime::ZERO + dur;
    loop {
        for mut p in out.drain(..) {
            let sg = seg(&p);
            cwr += u32::from(sg.cwr);
            if ce.contains(&sg.seq) && !sg.retrans && p.ecn != Ecn::NotEct {
                p.ecn = Ecn::Ce;
            }
            data.push((now + owd, p));
        }
        let next_data = data.first().map_or(SimTime::NEVER, |d| d.0);
        let next_ack = acks.first().map_or(SimTime::NEVER, |a| a.0);
        now = next_data.min(next_ack).min(r.next_timer()).min(s.next_timer());
        if now >= end {
            break;
        }
        if next_data == now {
            let (_, p) = data.remove(0);
            r.on_data(&seg(&p), p.ecn, now, &mut |a| acks.push((now + owd, a)));
        } else if next_ack == now {
            let (_, a) = acks.remove(0);
            s.on_ack(&a, now, &mut |p| out.push(p));
        } else if r.next_timer() == now {
            if let Some(a) = r.on_timer(now) {
                acks.push((now + owd, a));
            }
        } else {
            s.on_timer(now, &mut |p| out.push(p));
        }
        if s.t.ssthresh != last {
            changes.push(s.t.ssthresh);
            last = s.t.ssthresh;
        }
    }
    (s, changes, cwr)
}

#[test]
fn each_ce_mark_in_a_closed_loop_gives_exactly_one_reduction() {
    // The mark lands at every position of a window in turn, so some ACK
    // covers exactly high_seq while the receiver still echoes ECE.
    for (cc, ecn, beta) in [
        (reno_cc(), EcnMode::Classic, 0.5),
        (cubic_cc(), EcnMode::Classic, 717.0 / 1024.0),
        (dctcp_cc(), EcnMode::Accurate(Ecn::Ect0), 0.5),
    ] {
        for mark in 60..100 {
            let (s, changes, cwr) = pair(cc.clone(), ecn, &[mark], ms(1000));
            assert_eq!(changes.len(), 1, "{cc:?} mark {mark}: ssthresh {changes:?}");
            if ecn == EcnMode::Classic {
                assert_eq!(cwr, 1, "{cc:?} mark {mark}");
                // Reno/CUBIC: cwnd before the cut was 20-22 (CA from 20).
                // A second cut would leave about half of that.
                let w = f64::from(changes[0]) / beta;
                assert!((19.0..=26.0).contains(&w), "{cc:?} mark {mark}: ssthresh {}", changes[0]);
            }
            assert_eq!(s.retransmits, 0);
            assert_eq!(s.ca_state, CaState::Open);
        }
    }
}

#[test]
fn hystart_exits_later_when_paced() {
    // Linux hystart_update halves the ACK-train threshold only for
    // unpaced sockets. The ACK train of a 20 ms path is as long as the
    // window's serialization; a paced CUBIC waits for a train of delay_min,
    // an unpaced one for delay_min/2.
    let exit = |pacing: bool| {
        let cfg = TcpConfig {
            pacing,
            ..Default::default()
        };
        let train_only = CubicConfig {
            hystart_detect: 1,
            ..Default::default()
        };
        let mut s = TcpSender::new(
            cfg,
            CcConfig::Cubic(train_only).build(),
            EcnMode::Off,
            Packet::default(),
            None,
            SimTime::ZERO,
            Some(ms(20)),
        );
        // ACKs come back spaced by a 10 Mbit/s bottleneck (1.2 ms apart).
        let gap = Rate(10_000_000).tx_time(1514);
        let mut sent: Vec<SimTime> = Vec::new();
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut |p| out.push(p));
        let mut link_free = SimTime::ZERO;
        let mut acks: std::collections::VecDeque<(SimTime, u64)> = Default::default();
        let mut now;
        while s.t.ssthresh == INFINITE_SSTHRESH {
            for p in out.drain(..) {
                let sq = seg(&p).seq;
                let depart = link_free.max(p.sent_at) + gap;
                link_free = depart;
                sent.push(depart);
                acks.push_back((depart + ms(20), sq + 1));
            }
            let paced_at = s.next_timer();
            let (t_ack, n) = *acks.front().expect("acks");
            if paced_at < t_ack {
                now = paced_at;
                s.on_timer(now, &mut |p| out.push(p));
                continue;
            }
            acks.pop_front();
            now = t_ack;
            s.on_ack(&cum(n), now, &mut |p| out.push(p));
            assert!(now < at(5000));
        }
        s.t.ssthresh
    };
    let unpaced = exit(false);
    let paced = exit(true);
    // ~delay_min/2 vs ~delay_min worth of 1.2 ms ACK spacing past the round
    // start: the paced exit window is larger.
    assert!(unpaced >= 16, "unpaced exit {unpaced}");
    assert!(paced > unpaced + unpaced / 4, "paced exit {paced} vs unpaced {unpaced}");
}

#[test]
fn tx_jitter_spreads_a_burst_within_the_jitter_without_adding_up() {
    let mut s = jittered_reno(20);
    let mut sent = start(&mut s, at(0)).len();
    while sent < 20 {
        let t = s.next_timer();
        assert!(t <= at(1));
        sent += timer(&mut s, t).len();
    }
    // One ACK for 10 segments in slow start releases 20 packets; each
    // leaves at max(previous, ack + U(0, 1 ms)).
    let mut times = Vec::new();
    let mut now = at(100);
    let mut out = ack(&mut s, cum(10), now);
    times.extend(out.iter().map(|p| p.sent_at));
    while times.len() < 20 {
        now = s.next_timer();
        assert!(now >= at(100) && now <= at(101), "wake-up {now:?}");
        out = timer(&mut s, now);
        times.extend(out.iter().map(|p| p.sent_at));
    }
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in order");
    assert!(times.iter().all(|&t| t >= at(100) && t <= at(101)), "{times:?}");
    assert!(times.last().unwrap() > &at(100), "some delay drawn");
    // Without the random stream (tx_jitter 0) the burst leaves at once.
    let mut s = reno(20);
    s.t.ssthresh = INFINITE_SSTHRESH;
    start(&mut s, at(0));
    assert_eq!(ack(&mut s, cum(10), at(100)).len(), 20);
}

// ---- Socket buffers (Linux tcp_sndbuf_expand, tcp_snd_wnd_test) -------

#[test]
fn send_buffer_starts_expanded_and_grows_with_cwnd_to_wmem_max() {
    let mut s = reno(10);
    assert_eq!(s.srtt(), Some(ms(100)));
    // per_mss = roundup_pow_of_two(1460 + 320 + 320) + 256 = 4352 B; the
    // write queue charges 1448 + ⌈896·1448/65536⌉ = 1468 B per segment.
    assert_eq!((s.per_mss, s.seg_truesize), (4352, 1468));
    // tcp_init_buffer_space: 2 × max(10, cwnd) × 4352 > tcp_wmem[1] = 16384.
    assert_eq!(s.sndbuf, 2 * 10 * 4352);
    s.t.cwnd = 100;
    s.sndbuf_expand();
    assert_eq!(s.sndbuf, 2 * 100 * 4352);
    s.t.cwnd = 50;
    s.sndbuf_expand();
    assert_eq!(s.sndbuf, 2 * 100 * 4352, "never shrinks");
    s.t.cwnd = 1000;
    s.sndbuf_expand();
    assert_eq!(s.sndbuf, 4_194_304, "capped at tcp_wmem[2]");
    // A small cwnd still gets room for TCP_INIT_CWND segments.
    let cfg = TcpConfig {
        init_cwnd: 2,
        wmem_default: crate::units::Bytes(4096),
        ..Default::default()
    };
    let s = sender(reno_cc(), EcnMode::Off, cfg, None);
    assert_eq!(s.sndbuf, 2 * 10 * 4352);
}

#[test]
fn send_buffer_and_receive_window_each_stop_new_data() {
    // wmem_max 10 × 1468 B: at most 10 segments unacknowledged, whatever cwnd.
    let small = send_buffer_of(10, 20);
    let mut s = sender(reno_cc(), EcnMode::Off, small.clone(), None);
    assert_eq!(s.sndbuf, 10 * 1468);
    assert_eq!(start(&mut s, at(0)).len(), 10);
    // SACKed segments stay in the write queue until cumulatively ACKed.
    assert!(ack(&mut s, sack(0, &[(1, 3)]), at(100)).is_empty());
    assert_eq!(seqs(&ack(&mut s, cum(3), at(101))), vec![10, 11, 12]);
    // The receiver's window: right edge = ack + rwnd / mss, never shrinking
    // (segment by segment: TSO would hold back the last odd segment).
    let mut s = reno(20);
    s.cfg.tso = false;
    s.t.ssthresh = INFINITE_SSTHRESH;
    assert_eq!(s.snd_wnd_end, 65_536 / 1448, "the SYN-ACK's window: tcp_rmem[1] / 2");
    start(&mut s, at(0));
    s.t.cwnd = 100; // cwnd is not what limits here
    let a = TcpAck {
        ack: 2,
        rwnd: Some(5 * 1448),
        ..Default::default()
    };
    let out = ack(&mut s, a, at(100));
    assert_eq!(seqs(&out), (20..45).collect::<Vec<_>>(), "the old edge (45) stays");
    let a = TcpAck {
        ack: 30,
        rwnd: Some(20 * 1448 + 1447),
        ..Default::default()
    };
    let out = ack(&mut s, a, at(101));
    assert_eq!(seqs(&out), (45..50).collect::<Vec<_>>(), "edge 30 + 20");
    // Retransmissions are not held back by either limit.
    let mut s = sender(reno_cc(), EcnMode::Off, small, None);
    start(&mut s, at(0));
    let rto_at = s.rto_at;
    assert_eq!(seqs(&timer(&mut s, rto_at)), vec![0]);
}

#[test]
fn data_echoes_the_newest_ack_timestamp() {
    let mut s = reno(4);
    let out = start(&mut s, at(0));
    assert_eq!(seg(&out[0]).tsecr, SimTime::ZERO);
    let a = TcpAck {
        ack: 1,
        tsval: at(60),
        ..Default::default()
    };
    let out = ack(&mut s, a, at(110));
    assert!(out.iter().all(|p| seg(p).tsecr == at(60)));
    // An older TSval (reordered ACK) does not move ts_recent back.
    let a = TcpAck {
        ack: 2,
        tsval: at(50),
        ..Default::default()
    };
    let out = ack(&mut s, a, at(111));
    assert!(out.iter().all(|p| seg(p).tsecr == at(60)));
}

/// Linux `tcp_cwnd_validate`: a sender that fills cwnd at every ACK is
/// cwnd-limited at every ACK, so Reno gains exactly one segment per window
/// ACKed, round after round, even when the increase lands on the ACK that
/// ends a round (sampling the flight only at round ends would miss it and
/// stall growth for the next round).
#[test]
fn a_sender_filling_cwnd_grows_every_round() {
    let mut s = reno(10);
    s.cfg.tso = false;
    assert_eq!(start(&mut s, at(0)).len(), 10);
    let mut grown = Vec::new();
    for n in 1..=60u64 {
        let out = ack(&mut s, cum(n), at(100 + n));
        assert!(!out.is_empty(), "each ACK releases new data");
        if [10, 21, 33, 46, 60].contains(&n) {
            grown.push(s.t.cwnd);
        }
    }
    assert_eq!(grown, vec![11, 12, 13, 14, 15]);
}

/// `tcp_is_cwnd_limited`: held below cwnd by the send buffer, a sender in
/// slow start still grows cwnd to twice the flight it reached, and no
/// further; in congestion avoidance it does not grow at all.
#[test]
fn a_sender_held_below_cwnd_grows_only_to_twice_its_flight() {
    let small = send_buffer_of(6, 10);
    let mut s = sender(reno_cc(), EcnMode::Off, small.clone(), None);
    assert_eq!(start(&mut s, at(0)).len(), 6);
    for n in 1..=40u64 {
        ack(&mut s, cum(n), at(100 + n));
    }
    assert_eq!(s.t.cwnd, 12, "slow start: 2 × max_packets_out (6)");
    let mut s = sender(reno_cc(), EcnMode::Off, small, None);
    s.t.ssthresh = 10;
    start(&mut s, at(0));
    for n in 1..=40u64 {
        ack(&mut s, cum(n), at(100 + n));
    }
    assert_eq!(s.t.cwnd, 10, "congestion avoidance: never cwnd-limited");
}

/// `tcp_cwnd_validate`: while not cwnd-limited, a flight that grows within
/// the window raises max_packets_out at once, and slow start may grow cwnd
/// to twice the new flight.
#[test]
fn a_growing_flight_raises_the_slow_start_limit_within_the_window() {
    let small = send_buffer_of(6, 10);
    let mut s = sender(reno_cc(), EcnMode::Off, small, None);
    assert_eq!(start(&mut s, at(0)).len(), 6);
    s.sndbuf = 8 * 1468; // the application's buffer grows: 8 segments fit
    assert_eq!(ack(&mut s, cum(1), at(100)).len(), 3, "the flight grows to 8");
    for n in 2..=5 {
        ack(&mut s, cum(n), at(100 + n));
    }
    assert_eq!(s.t.cwnd, 15, "one per ACKed segment while below 2 × 8");
}

/// `tcp_undo_cwnd_reduction` restores ssthresh to the prior one, which
/// entering Recovery took as max(ssthresh, ¾ cwnd) (`tcp_current_ssthresh`).
#[test]
fn undo_restores_three_quarters_of_cwnd_as_ssthresh() {
    let mut s = reno(10);
    s.t.ssthresh = 5; // congestion avoidance above ssthresh
    head_lost(&mut s);
    let a = echoing(sack(10, &[(0, 1)]), at(100));
    ack(&mut s, a, at(200));
    assert_eq!(s.undos, 1);
    assert_eq!(s.t.ssthresh, 7, "max(5, 10/2 + 10/4)");
}

/// `tcp_packet_delayed` compares TSecr with the first retransmission's
/// time on the 1 ms TSval clock: an echo from earlier in the same
/// millisecond is not evidence of a spurious retransmission.
#[test]
fn timestamps_undo_only_with_an_echo_from_an_earlier_millisecond() {
    for (echo_us, undone) in [(100_200u64, 0u64), (99_900, 1)] {
        let mut s = reno(10);
        start(&mut s, at(0));
        let out = ack(&mut s, sack(0, &[(1, 4)]), us(100_700));
        assert_eq!(seqs(&out)[0], 0, "retransmitted at 100.7 ms");
        let a = echoing(cum(10), us(echo_us));
        ack(&mut s, a, at(200));
        assert_eq!(s.undos, undone, "echo at {echo_us} µs");
    }
}

/// Linux `tcp_try_undo_partial`: a partial ACK in Recovery (below
/// high_seq) echoing a timestamp from before the first retransmission
/// shows the hole was filled by the delayed original. With no
/// retransmission left in flight the reduction is undone at once, before
/// the recovery would end: window and (slow-start) ssthresh restored, loss
/// marks cleared, the reordering learned, the flow out of Recovery.
#[test]
fn a_partial_ack_from_a_delayed_original_undoes_the_recovery_at_once() {
    let mut s = reno(10);
    s.t.ssthresh = crate::cc::INFINITE_SSTHRESH; // slow start
    let out = head_lost(&mut s);
    assert_eq!((seqs(&out)[0], s.ca_state, s.t.ssthresh), (0, CaState::Recovery, 5));
    // The original 0 arrives (echo: its own send time, 0 ms); 4..9 are
    // still out, so 4 < high_seq = 10: a partial ACK.
    let a = echoing(cum(4), us(1));
    ack(&mut s, a, at(101));
    assert_eq!((s.ca_state, s.undos, s.partial_undos), (CaState::Open, 1, 1));
    assert_eq!(s.t.ssthresh, crate::cc::INFINITE_SSTHRESH, "slow start resumes");
    assert!(s.t.cwnd >= 10, "cwnd {}", s.t.cwnd);
    assert_eq!(s.sb.lost_out, 0);
    assert_eq!((s.rack.reord_seen, s.rack.reordering), (1, 4), "4 segments past the hole");
    // Two holes, one retransmitted: the original of 0 arrives, its
    // retransmission is answered, and 1's loss mark is cleared with the
    // undo (RACK, knowing the reordering now, waits for it).
    let mut s = reno(10);
    start(&mut s, at(0));
    let out = ack(&mut s, sack(0, &[(2, 5)]), at(100));
    assert_eq!((seqs(&out), s.sb.lost_out), (vec![0], 2));
    let a = echoing(sack(1, &[(2, 5)]), us(1));
    let out = ack(&mut s, a, at(101));
    assert_eq!((s.partial_undos, s.sb.lost_out), (1, 0));
    s.sb.check();
    assert!(out.iter().all(|p| !seg(p).retrans), "1 is not retransmitted: {:?}", seqs(&out));
    // The same partial ACK echoing the retransmission proves nothing.
    let mut s = reno(10);
    head_lost(&mut s);
    let a = echoing(cum(4), at(100));
    ack(&mut s, a, at(101));
    assert_eq!((s.ca_state, s.undos, s.partial_undos), (CaState::Recovery, 0, 0));
}

/// Linux's `tcp_undo_cwnd_reduction` asks every algorithm, those with
/// their own `cong_control` too: Prague's spurious recovery of a reordered
/// first flight is undone, ssthresh back to infinity, so slow start goes on
/// (it stayed at Prague's reduced window before).
#[test]
fn an_undo_restores_ssthresh_for_an_algorithm_that_owns_cwnd() {
    let mut p = sender(CcConfig::Prague(Default::default()), EcnMode::Accurate(Ecn::Ect1), TcpConfig::default(), None);
    head_lost(&mut p);
    assert_eq!(p.ca_state, CaState::Recovery);
    assert!(p.t.ssthresh < 10, "ssthresh {}", p.t.ssthresh);
    let a = echoing(cum(4), us(1));
    ack(&mut p, a, at(101));
    assert_eq!((p.undos, p.t.ssthresh), (1, crate::cc::INFINITE_SSTHRESH));
    assert!(p.t.cwnd >= 10, "cwnd {}", p.t.cwnd);
}

/// `tcp_try_undo_partial` with a retransmission still in flight: the ACK
/// learns the reordering but marks nothing more lost and retransmits
/// nothing; the recovery goes on.
#[test]
fn a_partial_ack_from_a_delayed_original_holds_retransmissions_while_one_is_out() {
    let mut s = three_lost_two_retransmitted();
    // The original 0 fills the hole while 1's retransmission is out: 2 is
    // not retransmitted on this ACK, though PRR would allow it.
    let a = echoing(sack(1, &[(3, 8)]), us(1));
    let out = ack(&mut s, a, at(101));
    assert!(out.iter().all(|p| !seg(p).retrans), "no retransmission: {:?}", seqs(&out));
    assert_eq!((s.ca_state, s.undos, s.sb.retrans_out), (CaState::Recovery, 0, 1));
    assert_eq!(s.rack.reord_seen, 1);
    // The next ACK is an ordinary one: 2 goes out.
    let out = ack(&mut s, sack(1, &[(3, 9)]), us(101_100));
    assert_eq!(seqs(&out)[0], 2);
}

/// Ten segments out, 3..5 SACKed at 100 ms: 0, 1 and 2 lost; PRR lets
/// their retransmissions out one delivered segment at a time, 0 and 1 by
/// 100.2 ms.
fn three_lost_two_retransmitted() -> TcpSender {
    let mut s = reno(10);
    start(&mut s, at(0));
    let out = ack(&mut s, sack(0, &[(3, 6)]), at(100));
    assert_eq!((seqs(&out), s.sb.lost_out), (vec![0], 3));
    let out = ack(&mut s, sack(0, &[(3, 7)]), us(100_200));
    assert_eq!((seqs(&out), s.sb.retrans_out), (vec![1], 2));
    s
}

/// Linux `tcp_fastretrans_alert` tries `tcp_try_undo_partial` only on an
/// ACK that advances snd_una: a duplicate ACK echoing the same old
/// timestamp (the receiver's ts_recent stays put while data is out of
/// order) proves nothing and holds nothing back.
#[test]
fn a_duplicate_ack_in_recovery_is_no_partial_ack() {
    let mut s = three_lost_two_retransmitted();
    let out = ack(&mut s, echoing(sack(0, &[(3, 8)]), us(1)), at(101));
    assert_eq!(seqs(&out)[0], 2, "PRR sends the next retransmission");
    assert_eq!((s.ca_state, s.rack.reord_seen), (CaState::Recovery, 0));
}

/// Linux `tcp_try_to_open` after an undo: Disorder while segments are
/// still SACKed above the hole, Open once nothing is left out; ACKs in
/// Open or Disorder keep choosing by the same rule.
#[test]
fn an_undo_leaves_disorder_while_segments_are_sacked_and_open_when_none_are() {
    // Holes 0 and 1 (2..4 SACKed), 0 retransmitted; 0's original arrives
    // with 2..4 still SACKed above 1.
    let mut s = reno(10);
    start(&mut s, at(0));
    ack(&mut s, sack(0, &[(2, 5)]), at(100));
    ack(&mut s, echoing(sack(1, &[(2, 5)]), us(1)), at(101));
    assert_eq!((s.partial_undos, s.sb.sacked_out, s.ca_state), (1, 3, CaState::Disorder));
    assert_eq!(s.retrans_stamp, SimTime::NEVER, "no retransmission left at the head or in flight");
    // 1 arrives: nothing SACKed any more.
    ack(&mut s, cum(5), us(101_500));
    assert_eq!(s.ca_state, CaState::Open);
    // A SACK in Open leads to Disorder again.
    ack(&mut s, sack(5, &[(6, 7)]), at(102));
    assert_eq!(s.ca_state, CaState::Disorder);
}

/// Linux `tcp_should_expand_sndbuf`: an ACK that frees space grows the send
/// buffer to cover cwnd only when cwnd is not what limits the flight.
#[test]
fn an_ack_grows_the_send_buffer_only_when_below_cwnd() {
    let mut s = reno(10);
    start(&mut s, at(0));
    assert_eq!(s.sndbuf, 2 * 10 * 4352);
    s.t.cwnd = 200; // 9 in flight after the ACK: below cwnd
    ack(&mut s, cum(1), at(100));
    assert_eq!(s.sndbuf, 2 * 200 * 4352);
    // cwnd-limited (9 in flight, cwnd 9): the buffer stays as it is.
    let mut s = reno(10);
    start(&mut s, at(0));
    s.sndbuf = 15 * 1468;
    s.t.cwnd = 9;
    s.t.ssthresh = 9;
    ack(&mut s, cum(1), at(100));
    assert_eq!(s.sndbuf, 15 * 1468);
}

/// Packets held back by pacing or by the host's transmit jitter count as
/// in flight, as in Linux (they sit in the qdisc with a departure time):
/// such a sender is cwnd-limited although its flight is below cwnd, so it
/// keeps growing in congestion avoidance.
#[test]
fn a_sender_held_by_pacing_or_jitter_is_cwnd_limited() {
    let mut s = paced_reno(10, false);
    s.t.ssthresh = 10; // congestion avoidance: only the flag says limited
    assert_eq!(start(&mut s, at(0)).len(), 10, "the initial window is not paced");
    // All ACKed (the window that set the flag is covered): one packet leaves,
    // the next waits for its release time with 1 of 10 in flight.
    assert_eq!(ack(&mut s, cum(10), at(100)).len(), 1);
    assert!(s.pace_blocked && s.t.is_cwnd_limited());
    let mut s = jittered_reno(10);
    s.t.ssthresh = 10;
    let sent = start(&mut s, at(0)).len();
    assert!(sent < 10 && s.jitter_blocked, "{sent} sent at once");
    assert!(s.t.is_cwnd_limited());
    // Unheld and below cwnd: not limited.
    let mut s = sender(reno_cc(), EcnMode::Off, send_buffer_of(6, 10), None);
    s.t.ssthresh = 10;
    assert_eq!(start(&mut s, at(0)).len(), 6);
    assert!(!s.t.is_cwnd_limited());
}

/// RACK's raised reordering window persists for `TCP_RACK_RECOVERY_THRESH`
/// recoveries: each Recovery that ends without undo uses one up; the end of
/// an ECN reduction (CWR) does not.
#[test]
fn a_recovery_ending_without_undo_uses_up_one_persistence() {
    let mut s = reno(10);
    start(&mut s, at(0));
    s.rack.reo_wnd_persist = 5;
    ack(&mut s, sack(0, &[(1, 4)]), at(100));
    assert_eq!(s.ca_state, CaState::Recovery);
    let a = echoing(cum(10), at(100)); // only the retransmission arrived: no undo
    ack(&mut s, a, at(200));
    assert_eq!((s.undos, s.ca_state), (0, CaState::Open));
    assert_eq!(s.rack.reo_wnd_persist, 4);
    let cfg = TcpConfig {
        init_cwnd: 20,
        ..Default::default()
    };
    let mut s = sender(reno_cc(), EcnMode::Classic, cfg, None);
    start(&mut s, at(0));
    s.rack.reo_wnd_persist = 5;
    let ece = |n: u64| TcpAck {
        ack: n,
        ece: true,
        ..Default::default()
    };
    ack(&mut s, ece(2), at(100));
    assert_eq!(s.ca_state, CaState::Cwr);
    ack(&mut s, cum(21), at(130));
    assert_eq!(s.ca_state, CaState::Open);
    assert_eq!(s.rack.reo_wnd_persist, 5);
}

/// RACK's loss scan skips segments already marked lost and not yet
/// retransmitted (RFC 8985 §6.2; Linux `tcp_rack_detect_loss` skips
/// `TCPCB_LOST` without `TCPCB_SACKED_RETRANS`): after an RTO marked
/// everything lost, a SACK of an original does not arm the reordering timer
/// for the lost segments below it, as it would for ones still in flight.
#[test]
fn the_loss_scan_skips_segments_already_lost() {
    let mut s = reno(10);
    start(&mut s, at(0));
    s.rack.reord_seen = 1; // a reordering window: min_rtt / 4
    s.t.min_rtt = ms(20);
    let rto_at = s.rto_at;
    assert_eq!(seqs(&timer(&mut s, rto_at)), vec![0], "RTO: all lost, the first resent");
    assert_eq!(s.reo_at, SimTime::NEVER);
    // The original of segment 2 arrives: RACK moves to it (sent at 0);
    // segment 1, sent with it, is already marked lost.
    ack(&mut s, sack(0, &[(2, 3)]), rto_at + ms(1));
    assert!(s.rack.xmit == SimTime::ZERO && s.rack.end_seq == 3);
    assert_eq!(s.reo_at, SimTime::NEVER, "no timer for segments already lost");
}

/// Linux `bictcp_cwnd_event(CA_EVENT_TX_START)`: a sender that resumes
/// with nothing in flight tells the CC how long it was idle, and CUBIC
/// moves its epoch by that much, so the window grows after a long pause as
/// after a short one instead of jumping along the curve the pause covered.
#[test]
fn resuming_after_idle_keeps_cubic_on_its_curve() {
    let after_pause = |pause: Dur| -> u32 {
        let cfg = TcpConfig {
            init_cwnd: 20,
            ..Default::default()
        };
        let mut s = sender(cubic_cc(), EcnMode::Off, cfg, Some(40 * 1448));
        s.t.ssthresh = 10; // congestion avoidance: CUBIC's curve from the first ACK
        assert_eq!(start(&mut s, at(0)).len(), 20);
        ack(&mut s, cum(20), at(100));
        ack(&mut s, cum(40), at(200));
        assert_eq!(s.sb.packets_out(), 0, "all delivered: idle");
        // The application writes 40 more segments after the pause.
        s.total_segs = Some(80);
        let resume = at(200) + pause;
        s.t.now = resume; // what an application write at `resume` would see
        let mut sent = Vec::new();
        s.try_send(resume, &mut |p| sent.push(p));
        assert!(!sent.is_empty());
        let n = seqs(&sent).last().copied().unwrap() + 1;
        ack(&mut s, cum(n), resume + ms(100));
        s.t.cwnd
    };
    let short = after_pause(ms(1));
    assert_eq!(after_pause(Dur::from_secs(5)), short, "5 s idle, then the same growth as after 1 ms");
}

// ---- ACKs reordered on the way back (Linux tcp_ack `old_ack`) ---------

/// A DCTCP sender (AccECN, ECT(0)) in congestion avoidance with 20
/// segments out, after an ACK of 0..10 that reported 3 CE marks at 100 ms.
fn dctcp_after_marks() -> TcpSender {
    let mut s = sender(dctcp_cc(), EcnMode::Accurate(Ecn::Ect0), TcpConfig { init_cwnd: 20, ..Default::default() }, None);
    s.t.ssthresh = 20;
    start(&mut s, at(0));
    ack(&mut s, TcpAck { ack: 10, cep: 3, ceb: 3 * 1448, tsval: at(90), ..Default::default() }, at(100));
    assert_eq!(s.ce_delivered, 3);
    s
}

#[test]
fn an_ack_below_snd_una_feeds_no_congestion_control() {
    let mut s = dctcp_after_marks();
    let (cwnd, ssthresh, srtt, state) = (s.t.cwnd, s.t.ssthresh, s.srtt, s.ca_state);
    let (wnd, ts) = (s.snd_wnd_end, s.ts_recent);
    // The ACK of 0..4, sent before the one of 0..10, with cep 1: read as
    // current it would count (1 − 3) mod 8 = 6 marks (the full-width
    // difference, ~4·10^9).
    let late = TcpAck { ack: 4, cep: 1, ceb: 1448, tsval: at(80), rwnd: Some(1 << 30), ..Default::default() };
    ack(&mut s, late, at(101));
    assert_eq!((s.ce_delivered, s.t.delivered_ce, s.ecn_reductions), (3, 3, 1));
    assert_eq!((s.t.cwnd, s.t.ssthresh, s.srtt, s.ca_state), (cwnd, ssthresh, srtt, state));
    assert_eq!((s.snd_wnd_end, s.ts_recent), (wnd, ts), "no window or timestamp update");
    assert_eq!(s.t.delivered, 10);
}

/// A Reno sender in congestion avoidance with 20 segments out, after an
/// ACK of 0..5 at 100 ms.
fn reno_after_five_acked() -> TcpSender {
    let mut s = sender(reno_cc(), EcnMode::Off, TcpConfig { init_cwnd: 20, ..Default::default() }, None);
    s.t.ssthresh = 20;
    start(&mut s, at(0));
    ack(&mut s, cum(5), at(100));
    s
}

#[test]
fn an_old_ack_still_tags_its_sack_blocks() {
    let mut s = reno_after_five_acked();
    let cwnd = s.t.cwnd;
    // Reordered: an ACK of 0..3 reporting 6..9 arrives after the ACK of 0..5.
    ack(&mut s, sack(3, &[(6, 9)]), at(101));
    assert_eq!((s.sb.sacked_out, s.t.delivered), (3, 8), "SACKed by the old ACK");
    assert_eq!(s.t.cwnd, cwnd, "no growth from an old ACK");
    // Then the ACK of 0..5 reporting 6..13: the same three are not counted again.
    ack(&mut s, sack(5, &[(6, 13)]), at(102));
    assert_eq!((s.sb.sacked_out, s.t.delivered), (7, 12));
}

/// Linux's `old_ack` path still runs loss recovery: an old ACK whose SACK
/// blocks put three segments beyond a hole (before any reordering is seen,
/// RACK's window is then 0) marks the hole lost, enters Recovery and
/// retransmits it, with no window growth.
#[test]
fn an_old_acks_sack_blocks_can_start_recovery() {
    let mut s = reno_after_five_acked();
    assert_eq!((s.ca_state, s.t.lost), (CaState::Open, 0));
    let out = ack(&mut s, sack(3, &[(6, 9)]), at(101));
    assert_eq!((s.ca_state, s.t.lost, s.sb.lost_out), (CaState::Recovery, 1, 1));
    assert_eq!(seqs(&out).first(), Some(&5), "the hole goes out again: {:?}", seqs(&out));
}

#[test]
fn a_current_ack_without_progress_reads_no_ace_field() {
    let mut s = dctcp_after_marks();
    // A duplicate ACK of 10 sent before the one processed (older TSval,
    // cep 1): no forward progress, no newer timestamp: not read.
    ack(&mut s, TcpAck { ack: 10, cep: 1, ceb: 1448, tsval: at(85), ..Default::default() }, at(101));
    assert_eq!(s.ce_delivered, 3);
    // A newer one is: its two new marks count.
    ack(&mut s, TcpAck { ack: 12, cep: 5, ceb: 5 * 1448, tsval: at(95), ..Default::default() }, at(102));
    assert_eq!(s.ce_delivered, 5);
}

#[test]
fn an_older_ack_with_new_sack_information_is_read_as_linux_reads_it() {
    // Linux reads the ACE field of any ACK that newly ACKs or SACKs data,
    // even one sent before an ACK already processed (its SACK block may
    // have dropped out of the newer ACK's three): the field's change modulo
    // 8 then counts marks that were not made. Modelled as Linux does it.
    let mut s = dctcp_after_marks();
    ack(&mut s, TcpAck { ack: 10, cep: 2, ceb: 2 * 1448, tsval: at(85), ..sack(10, &[(15, 16)]) }, at(101));
    assert_eq!(s.ce_delivered, 3 + 7, "(2 − 3) mod 8 = 7");
}

#[test]
fn a_dsack_after_the_recovery_ended_still_undoes_it() {
    // Linux keeps undo_marker past the end of Recovery, and
    // tcp_fastretrans_alert tries the D-SACK undo in Open and Disorder too.
    let mut s = reno(10);
    head_lost(&mut s);
    // The ACK ending Recovery echoes the retransmission: no undo yet.
    let a = echoing(cum(10), at(100));
    ack(&mut s, a, at(200));
    assert_eq!((s.undos, s.ca_state, s.t.ssthresh), (0, CaState::Open, 5));
    // Then the receiver reports the original's second copy.
    let d = echoing(sack(10, &[(0, 1)]), at(100));
    ack(&mut s, d, at(201));
    assert_eq!((s.undos, s.t.ssthresh), (1, 10), "undone after the fact");
    assert!(s.t.cwnd >= 10);
    // An ECN reduction (tcp_enter_cwr) forgets the marker: no undo of it.
    let mut s = sender(reno_cc(), EcnMode::Classic, TcpConfig { init_cwnd: 10, ..Default::default() }, None);
    s.t.ssthresh = 10;
    head_lost(&mut s);
    let mut e = cum(10);
    e.ece = true;
    e.tsecr = at(100);
    ack(&mut s, e, at(200));
    assert_eq!(s.ca_state, CaState::Cwr);
    ack(&mut s, sack(10, &[(0, 1)]), at(201));
    assert_eq!(s.undos, 0, "a CWR episode started anew");
}

#[test]
fn retransmitting_the_head_restarts_the_rto() {
    // Linux tcp_xmit_retransmit_queue rearms the RTO when it resends
    // snd_una's segment (unless RACK's reordering timer holds the slot).
    let mut s = reno(10);
    start(&mut s, at(0));
    ack(&mut s, cum(1), at(100));
    let armed = s.rto_at;
    let out = ack(&mut s, sack(1, &[(2, 5)]), at(150));
    assert_eq!(seqs(&out)[0], 1, "the head is retransmitted");
    assert_eq!(s.rto_at, at(150) + s.rto, "restarted at the retransmission, not left at {armed:?}");
}

/// Linux `tcp_may_raise_cwnd`: with the default reordering degree (3) an
/// ACK that only SACKs does not grow the window, and the segments it SACKed
/// never count; the ACK that advances snd_una grows it by what it delivered.
/// Once the path is known to reorder more, a SACK grows it too.
#[test]
fn window_grows_on_sacks_only_once_reordering_is_known() {
    let slow_start = || sender(reno_cc(), EcnMode::Off, TcpConfig { init_cwnd: 10, ..Default::default() }, None);
    let mut s = slow_start();
    start(&mut s, at(0));
    ack(&mut s, sack(0, &[(1, 3)]), at(100));
    assert_eq!((s.t.cwnd, s.sb.lost_out), (10, 0), "two SACKed, nothing lost, no growth");
    ack(&mut s, cum(3), at(101));
    assert_eq!(s.t.cwnd, 11, "the hole's segment only: 1 and 2 were SACKed before");
    let mut s = slow_start();
    start(&mut s, at(0));
    s.rack.reordering = 5;
    ack(&mut s, sack(0, &[(1, 3)]), at(100));
    assert_eq!(s.t.cwnd, 12, "reordering 5 > 3: the SACKed segments grow it");
}

#[test]
fn retransmitting_a_later_hole_leaves_the_rto_where_the_head_put_it() {
    // Only snd_una's segment restarts the timer: the second hole, resent
    // two ACKs later by PRR, leaves it at the head's retransmission.
    let mut s = reno(10);
    start(&mut s, at(0));
    assert_eq!(seqs(&ack(&mut s, sack(0, &[(2, 5)]), at(101))), vec![0]);
    let armed = s.rto_at;
    assert_eq!(armed, at(101) + s.rto);
    ack(&mut s, sack(0, &[(2, 6)]), at(102));
    assert_eq!(seqs(&ack(&mut s, sack(0, &[(2, 7)]), at(103))), vec![1]);
    assert_eq!(s.rto_at, armed, "segment 1 is not the head");
}

/// Linux `tcp_ack`: an ACK that delivers nothing is read for AccECN only
/// when it carries FLAG_TS_PROGRESS, a TSval from a later millisecond
/// (TCP timestamps tick once per ms) than any seen before.
#[test]
fn a_duplicate_ack_reads_the_ace_field_only_with_a_later_millisecond_timestamp() {
    let mut s = dctcp_after_marks(); // ts_recent 90 ms
    let dup = |cep: u32, tsval: SimTime| TcpAck { ack: 10, cep, ceb: u64::from(cep) * 1448, tsval, ..Default::default() };
    ack(&mut s, dup(4, at(90) + Dur::from_micros(500)), at(101));
    assert_eq!(s.ce_delivered, 3, "90.5 ms: the same millisecond as 90 ms");
    ack(&mut s, dup(4, at(91) + Dur::from_micros(200)), at(102));
    assert_eq!(s.ce_delivered, 4, "91.2 ms: a later millisecond than 90.5 ms");
}

/// `__tcp_accecn_process` with 16 or more packets newly delivered: the
/// option's CE bytes against the bytes those packets carried estimate the
/// marks (here 1448 CE bytes of 20·1448 = one mark), not the ACE field's
/// safest wrap (17).
#[test]
fn many_packets_on_one_ack_count_marks_from_the_bytes_they_carried() {
    let mut s = sender(dctcp_cc(), EcnMode::Accurate(Ecn::Ect0), TcpConfig { init_cwnd: 40, ..Default::default() }, None);
    s.t.ssthresh = 40;
    start(&mut s, at(0));
    ack(&mut s, TcpAck { ack: 20, cep: 1, ceb: 1448, tsval: at(90), ..Default::default() }, at(100));
    assert_eq!(s.ce_delivered, 1);
}
