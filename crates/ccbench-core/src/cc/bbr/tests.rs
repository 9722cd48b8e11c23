use super::*;
use crate::cc::RateSample;

const MS: u64 = 1_000_000;

fn tcp() -> TcpCcState {
    let mut t = TcpCcState::new(SimTime(0), 1448, 10);
    t.srtt = Dur::from_millis(10);
    t.min_rtt = Dur::from_millis(10);
    t.app_limited = 0;
    t
}

/// One ACK that ends a round: `d` segments delivered over `interval_ms`
/// (the sample), `lost` newly lost, the clock advanced by `step_ms`; the
/// RTT sample is `t.srtt`.
fn round(b: &mut Bbr, t: &mut TcpCcState, d: u64, interval_ms: u64, lost: u32, step_ms: u64) {
    t.now = SimTime(t.now.0 + step_ms * MS);
    let prior = t.delivered;
    t.delivered += d;
    t.lost += u64::from(lost);
    t.delivered_mstamp = t.now;
    t.rs = RateSample {
        prior_delivered: prior,
        prior_mstamp: Some(SimTime(t.now.0 - interval_ms * MS)),
        delivered: Some(d),
        interval: Some(Dur::from_millis(interval_ms)),
        acked_sacked: d as u32,
        losses: lost,
        prior_in_flight: t.in_flight,
        rtt: Some(t.srtt),
        ..RateSample::default()
    };
    b.cong_control(t, &AckEvent::default());
}

#[test]
fn gains_and_pacing_margin_are_linux_constants() {
    assert_eq!(HIGH_GAIN, 739); // 2/ln 2 in 1/256, rounded up
    assert_eq!(DRAIN_GAIN, 88);
    // 1 packet/ms at gain 1: 1448 B × 1000/s × 99 %.
    let r = rate_bytes_per_sec(1448, BW_UNIT / 1000, BBR_UNIT);
    assert!((r as f64 / (1448.0 * 1000.0 * 0.99) - 1.0).abs() < 1e-3, "{r}");
    // Initial pacing: 2.885 × 10 packets / 10 ms srtt.
    let (init, seen) = init_rate(&tcp());
    assert!(seen);
    assert!((init as f64 / (2.885 * 10.0 * 1448.0 / 0.010 * 0.99) - 1.0).abs() < 2e-3, "{init}");
}

/// `bbr_reset_probe_bw_mode`: the first phase is random over 7 of the 8
/// phases, never the 0.75 drain phase.
#[test]
fn probe_bw_never_starts_in_the_drain_phase() {
    let mut b = Bbr::new(SimRng::for_component(3, "cc:x"));
    let t = tcp();
    let mut seen = [0u32; CYCLE_LEN];
    for _ in 0..7000 {
        b.reset_probe_bw_mode(&t);
        seen[b.cycle_idx()] += 1;
    }
    assert_eq!(seen[1], 0, "{seen:?}");
    for (i, &n) in seen.iter().enumerate().filter(|x| x.0 != 1) {
        assert!((850..1150).contains(&n), "phase {i}: {n} of 7000");
    }
}

/// Full pipe: three rounds with < 25 % bw growth end STARTUP; DRAIN sets
/// ssthresh to the BDP and paces at 1/2.885.
#[test]
fn three_flat_rounds_end_startup() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 300;
    // Growing 2× per round: still STARTUP.
    for d in [10, 20, 40, 80] {
        round(&mut b, &mut t, d, 10, 0, 10);
        assert_eq!(b.mode(), Mode::Startup);
    }
    // 100 (+25 %: counts as growth), then flat.
    round(&mut b, &mut t, 100, 10, 0, 10);
    for i in 0..2 {
        round(&mut b, &mut t, 110, 10, 0, 10);
        assert_eq!(b.mode(), Mode::Startup, "flat round {i}");
    }
    round(&mut b, &mut t, 110, 10, 0, 10);
    assert!(b.full_bw_reached());
    assert_eq!(b.mode(), Mode::Drain);
    assert_eq!(b.pacing_gain(), DRAIN_GAIN as f64 / 256.0);
    // BDP at 11 packets/ms × 10 ms = 110, plus the quantisation budget.
    // (the budget is 3 TSO goals at STARTUP's pacing rate: 31 segments of
    // ~1 ms at 2.885 × 11 packets/ms).
    assert!((110..=110 + 3 * 32 + 1).contains(&t.ssthresh), "{}", t.ssthresh);
    // In-flight down to the BDP: PROBE_BW.
    t.in_flight = 100;
    round(&mut b, &mut t, 110, 10, 0, 10);
    assert_eq!(b.mode(), Mode::ProbeBw);
}

/// `bbr_lt_bw_sampling`: two 4-round intervals with ≥ 20 % loss and the
/// same delivery rate mean a policer; BBR then uses the long-term rate
/// (not the max-filtered burst rate) at gain 1, for 48 rounds.
#[test]
fn policer_is_detected_and_its_rate_used_for_48_rounds() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 10;
    // Burst samples say 6 packets/ms; the long-term rate is 3 packets/ms
    // (30 delivered per 10 ms), with 10 lost per 40 delivered (25 %).
    let mut n = 0;
    while !b.lt_use_bw() {
        round(&mut b, &mut t, 30, 5, 10, 10);
        n += 1;
        assert!(n < 12, "policer not detected");
    }
    // First loss starts sampling; two 4-round intervals.
    assert!((8..=10).contains(&n), "{n} rounds");
    assert!((b.bw_pps() - 3000.0).abs() < 10.0, "lt bw {} pkt/s", b.bw_pps());
    assert!(b.bw.get() * 1_000_000 / BW_UNIT >= 5900, "the max filter still holds the burst rate");
    if b.mode() == Mode::ProbeBw {
        assert_eq!(b.pacing_gain(), 1.0);
    }
    // Without further loss, 48 PROBE_BW rounds later the estimate is dropped.
    t.in_flight = 0;
    let mut k = 0;
    while b.lt_use_bw() {
        round(&mut b, &mut t, 30, 10, 0, 10);
        k += 1;
        assert!(k <= 60, "lt_bw kept for {k} rounds");
    }
    assert!(k >= LT_BW_MAX_RTTS as usize, "{k}");
}

/// `bbr_set_cwnd_to_recover_or_restore`: the first round of Recovery is
/// packet-conserving (cwnd = in_flight + acked) and the pre-loss cwnd is
/// restored when Recovery ends.
#[test]
fn recovery_conserves_packets_then_restores_cwnd() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 80;
    t.cwnd = 100;
    round(&mut b, &mut t, 10, 10, 0, 10);
    let before = t.cwnd;
    let _ = b.ssthresh(&t);
    b.on_state(&mut t, CaState::Recovery);
    t.in_flight = 60;
    round(&mut b, &mut t, 5, 10, 3, 1);
    assert_eq!(t.cwnd, 65);
    b.on_state(&mut t, CaState::Open);
    t.in_flight = 50;
    round(&mut b, &mut t, 5, 10, 0, 1);
    assert!(t.cwnd >= before, "{} < {before}", t.cwnd);
}

/// PROBE_RTT: after 10 s without a lower RTT sample, cwnd is capped at 4
/// and held for 200 ms (and a round) once in-flight ≤ 4.
#[test]
fn probe_rtt_caps_cwnd_at_4_for_200_ms() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 50;
    for _ in 0..5 {
        round(&mut b, &mut t, 10, 10, 0, 10);
    }
    // RTT samples above the minimum for 10 s.
    t.srtt = Dur::from_millis(12);
    while t.now.0 < 10_100 * MS {
        round(&mut b, &mut t, 10, 10, 0, 50);
    }
    assert_eq!(b.mode(), Mode::ProbeRtt);
    assert_eq!(t.cwnd, CWND_MIN_TARGET);
    t.in_flight = 4;
    let entered = t.now;
    while b.mode() == Mode::ProbeRtt {
        round(&mut b, &mut t, 4, 10, 0, 10);
        assert!(t.now.since(entered) < Dur::from_millis(300));
    }
    assert!(t.now.since(entered) > PROBE_RTT_MODE, "{:?}", t.now.since(entered));
    assert!(t.cwnd > CWND_MIN_TARGET, "saved cwnd restored");
}
