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
    round_with(b, t, d, interval_ms, lost, step_ms, false);
}

/// `round`, its sample app-limited or not.
fn round_with(b: &mut Bbr, t: &mut TcpCcState, d: u64, interval_ms: u64, lost: u32, step_ms: u64, app_limited: bool) {
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
        is_app_limited: app_limited,
        ..RateSample::default()
    };
    b.cong_control(t, &AckEvent::default());
}

#[test]
fn gains_and_pacing_margin_are_linux_constants() {
    assert_eq!(HIGH_GAIN, 739); // 2/ln 2 in 1/256, rounded up
    assert_eq!(DRAIN_GAIN, 88);
    assert_eq!(CWND_GAIN, 512);
    assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
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
    // Samples taken at the minimum window are marked app-limited up to what is now sent.
    assert_eq!(t.app_limited, t.delivered + u64::from(t.in_flight));
    t.in_flight = 4;
    let entered = t.now;
    while b.mode() == Mode::ProbeRtt {
        round(&mut b, &mut t, 4, 10, 0, 10);
        assert!(t.now.since(entered) < Dur::from_millis(300));
    }
    assert!(t.now.since(entered) > PROBE_RTT_MODE, "{:?}", t.now.since(entered));
    assert!(t.cwnd > CWND_MIN_TARGET, "saved cwnd restored");
}

/// `bbr_update_min_rtt` (Linux 1b9e2a8c99a5): only a strictly lower RTT
/// restarts the 10 s window, so a path whose RTT sits exactly at the
/// minimum still gets PROBE_RTT every 10 s.
#[test]
fn rtt_equal_to_the_minimum_does_not_postpone_probe_rtt() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 50;
    round(&mut b, &mut t, 10, 10, 0, 10);
    let stamp = b.min_rtt_stamp;
    // Every sample equals min_rtt (10 ms).
    while b.mode() != Mode::ProbeRtt {
        round(&mut b, &mut t, 10, 10, 0, 50);
        assert!(t.now.0 < 10_200 * MS, "no PROBE_RTT by {:?}", t.now);
    }
    assert_eq!(b.probe_rtt_entries, 1);
    assert!(t.now.since(stamp) > MIN_RTT_WIN, "entered after {:?}", t.now.since(stamp));
    // A strictly lower sample does restart the window.
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 50;
    round(&mut b, &mut t, 10, 10, 0, 10);
    while t.now.0 < 8_000 * MS {
        round(&mut b, &mut t, 10, 10, 0, 50);
    }
    t.srtt = Dur::from_micros(9_999);
    round(&mut b, &mut t, 10, 10, 0, 50);
    t.srtt = Dur::from_millis(10);
    while t.now.0 < 17_000 * MS {
        round(&mut b, &mut t, 10, 10, 0, 50);
        assert_ne!(b.mode(), Mode::ProbeRtt, "at {:?}", t.now);
    }
}

/// One ACK at `at_us`, newly delivering `acked` segments, with a rate
/// sample of 11 packets/ms; it starts a round only if `new_round`.
fn ack_at(b: &mut Bbr, t: &mut TcpCcState, acked: u32, at_us: u64, new_round: bool) {
    t.now = SimTime(at_us * 1000);
    let prior = if new_round { b.next_rtt_delivered } else { b.next_rtt_delivered - 1 };
    t.delivered += u64::from(acked);
    t.delivered_mstamp = t.now;
    t.rs = RateSample {
        prior_delivered: prior,
        prior_mstamp: Some(SimTime(t.now.0.saturating_sub(10 * MS))),
        delivered: Some(110),
        interval: Some(Dur::from_millis(10)),
        acked_sacked: acked,
        prior_in_flight: t.in_flight,
        rtt: Some(t.srtt),
        ..RateSample::default()
    };
    b.cong_control(t, &AckEvent::default());
}

/// A flow in PROBE_BW with bw = 11 packets/ms, min_rtt 10 ms.
fn cruising() -> (Bbr, TcpCcState) {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 300;
    for d in [10, 20, 40, 80, 110, 110, 110, 110] {
        round(&mut b, &mut t, d, 10, 0, 10);
    }
    t.in_flight = 100;
    round(&mut b, &mut t, 110, 10, 0, 10);
    assert_eq!(b.mode(), Mode::ProbeBw);
    assert!((b.bw_pps() - 11_000.0).abs() < 1.0, "{}", b.bw_pps());
    (b, t)
}

/// On through PROBE_BW to phase `idx`, a phase a round: 11 ms rounds
/// (longer than min_rtt) with in flight above 1.25 BDP and its budget, so
/// neither the 1.25 nor the 0.75 phase is held or cut short.
fn to_phase(b: &mut Bbr, t: &mut TcpCcState, idx: usize) {
    t.in_flight = 200;
    while b.cycle_idx() != idx {
        round(b, t, 110, 10, 0, 11);
    }
}

/// The cwnd `bbr_set_cwnd` aims at with `extra` packets of aggregation.
fn target_with(b: &Bbr, extra: u32) -> u32 {
    b.quantization_budget(b.bdp_at(b.bw(), CWND_GAIN) + extra)
}

/// `bbr_update_ack_aggregation` on a synthetic ACK train. ACKs of 2
/// segments every 200 µs (10 packets/ms, below the 11/ms estimate) never
/// run ahead of bw × time: each one restarts the epoch and the excess is
/// the 2 segments it carries. After 4 ms of silence, 5 ACKs of 10 segments
/// 50 µs apart (a receiver or link that aggregates) run ahead: the epoch
/// starts at the first, and by the fifth 50 segments arrived where
/// ⌊bw × 200 µs⌋ = 2 were expected, so extra_acked = 48, which the cwnd
/// target then carries (`bbr_ack_aggregation_cwnd`, gain 1).
#[test]
fn extra_acked_measures_an_aggregated_ack_train() {
    let (mut b, mut t) = cruising();
    b.extra_acked = [0; 2];
    // 20 ms after the last round's ACK: the epoch restarts at the first ACK.
    let t0 = t.now.0 / 1000 + 20_000;
    for i in 0..20 {
        ack_at(&mut b, &mut t, 2, t0 + 200 * i, false);
    }
    assert_eq!(b.extra_acked(), 2, "steady train");
    assert_eq!(t.cwnd, target_with(&b, 2));
    let t1 = t0 + 200 * 19 + 4000;
    for i in 0..5 {
        ack_at(&mut b, &mut t, 10, t1 + 50 * i, false);
    }
    assert_eq!(b.extra_acked(), 48);
    assert_eq!(b.ack_aggregation_cwnd(), 48);
    // cwnd grows by at most the ACKed segments towards the new target.
    assert_eq!(t.cwnd, target_with(&b, 48).min(target_with(&b, 2) + 50));
    // The ACK clock resumes at the estimate (2 per 182 µs): the epoch runs
    // on, ACKs no longer run ahead, and the excess does not grow.
    for i in 1..=10 {
        ack_at(&mut b, &mut t, 2, t1 + 200 + 182 * i, false);
    }
    assert_eq!(b.extra_acked(), 48);
}

/// The aggregation allowance is capped by cwnd (per sample) and by 100 ms
/// at the estimated bw (`bbr_extra_acked_max_us`), and forgotten after
/// two windows of 5 rounds (`bbr_extra_acked_win_rtts`) without
/// aggregation: 6 to 10 rounds, depending on where the window stood.
#[test]
fn extra_acked_is_capped_and_expires_after_5_to_10_rounds() {
    let (mut b, mut t) = cruising();
    b.extra_acked = [0; 2];
    t.cwnd = 30;
    let t0 = t.now.0 / 1000 + 20_000;
    ack_at(&mut b, &mut t, 100, t0, false);
    assert_eq!(b.extra_acked(), 30, "capped by cwnd");
    // 100 ms at 11 packets/ms = 1100 packets (1099 after bw's integer
    // scaling, as in Linux): a 2000-segment burst counts 1099.
    t.cwnd = 5000;
    ack_at(&mut b, &mut t, 2000, t0 + 20_000, false);
    assert_eq!(b.extra_acked(), 2000);
    assert_eq!(b.ack_aggregation_cwnd(), 1099);
    // Expiry: a fresh flow, one burst of 40 after a silence, then 5 ms of
    // silence (the epoch falls behind bw × time, so later ACKs do not carry
    // the burst into the next window) and rounds of 10 ms with a steady ACK
    // clock below the estimate. The burst's window lives out its 5 rounds
    // (w of them already counted), the next window 5 more: 10 − w rounds.
    let (mut b, mut t) = cruising();
    b.extra_acked = [0; 2];
    let mut at = t.now.0 / 1000 + 20_000;
    ack_at(&mut b, &mut t, 40, at, false);
    assert_eq!(b.extra_acked(), 40);
    let w = b.extra_acked_win_rtts;
    at += 5000;
    let mut rounds = 0;
    while b.extra_acked() >= 40 {
        for i in 0..40 {
            ack_at(&mut b, &mut t, 2, at, i == 0);
            at += 250;
        }
        rounds += 1;
        assert!(rounds <= 10, "still {} after {rounds} rounds", b.extra_acked());
    }
    assert_eq!(rounds, 10 - w, "forgotten after {rounds} rounds, window at {w}");
    assert!(b.extra_acked() <= 2, "{}", b.extra_acked());
}

/// `bbr_quantization_budget` and `bbr_tso_segs_goal`: 3 TSO bursts of
/// ~1 ms at the pacing rate (`sk_pacing_shift` 10), at least 2 segments
/// from 1.2 Mbit/s up and 1 below (`bbr_min_tso_segs`), rounded up to an
/// even count, +2 only in PROBE_BW's 1.25 phase.
#[test]
fn quantization_budget_by_rate_and_phase() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    // 6,000,000 B/s >> 10 = 5859 B = 4 segments of 1448.
    b.pacing_rate = 6_000_000;
    assert_eq!(b.tso_segs_goal(), 4);
    b.mode = Mode::Startup;
    assert_eq!(b.quantization_budget(83), 96); // 83 + 12 = 95, even: 96
    assert_eq!(b.quantization_budget(84), 96);
    b.mode = Mode::ProbeBw;
    for idx in 0..CYCLE_LEN {
        b.cycle_idx = idx;
        let want = if idx == 0 { 98 } else { 96 };
        assert_eq!(b.quantization_budget(83), want, "phase {idx}");
    }
    b.mode = Mode::ProbeRtt;
    b.cycle_idx = 0;
    assert_eq!(b.quantization_budget(83), 96);
    // Below bbr_min_tso_rate (1.2 Mbit/s = 150,000 B/s): 1 segment.
    b.pacing_rate = 149_999;
    assert_eq!(b.tso_segs_goal(), 1);
    assert_eq!(b.quantization_budget(7), 10);
    b.pacing_rate = 150_000;
    assert_eq!(b.tso_segs_goal(), 2);
    // GSO's 64 KB cap: 45 segments at any higher rate.
    b.pacing_rate = 125_000_000;
    assert_eq!(b.tso_segs_goal(), 45);
}

/// `bbr_packets_in_net_at_edt`: in flight now, plus the TSO burst about to
/// leave when the gain is > 1, less what the estimated bw delivers before
/// the next departure time (EDT); never negative.
#[test]
fn in_flight_at_the_next_departure_time() {
    let (mut b, mut t) = cruising();
    b.pacing_rate = 6_000_000; // tso_segs_goal 4
    t.edt = t.now + Dur::from_millis(2);
    // 11 packets/ms (184549 in BW_UNIT) × 2000 µs = 21.99: 21 delivered.
    b.pacing_gain = BBR_UNIT;
    assert_eq!(b.packets_in_net_at_edt(&t, 100), 79);
    b.pacing_gain = BBR_UNIT * 5 / 4;
    assert_eq!(b.packets_in_net_at_edt(&t, 100), 83);
    b.pacing_gain = BBR_UNIT * 3 / 4;
    assert_eq!(b.packets_in_net_at_edt(&t, 100), 79);
    // A departure time in the past counts as now.
    t.edt = SimTime(t.now.0 - 5 * MS);
    assert_eq!(b.packets_in_net_at_edt(&t, 100), 100);
    // More delivered before the EDT than in flight: 0.
    t.edt = t.now + Dur::from_millis(20);
    assert_eq!(b.packets_in_net_at_edt(&t, 100), 0);
}

/// Linux's PROBE_BW gains (`bbr_cwnd_gain` 2, `bbr_pacing_gain` 5/4, 3/4,
/// then 1 six times): each phase paces at its gain × bw × 99 %, so at a
/// steady 11 packets/ms the 1.25 and 0.75 phases pace 1.25 and 0.75 times
/// the cruising phases; the cwnd target is 2 BDP (220 packets) plus the
/// quantization budget.
#[test]
fn probe_bw_phases_pace_at_their_gains() {
    let (mut b, mut t) = cruising();
    // Enough in flight that the 1.25 phase ends after one min_rtt, as the 0.75 phase does.
    t.in_flight = 200;
    let mut rate = [0u64; CYCLE_LEN];
    for _ in 0..2 * CYCLE_LEN {
        round(&mut b, &mut t, 110, 10, 0, 11);
        assert_eq!(b.pacing_bytes_per_sec(), rate_bytes_per_sec(1448, b.bw(), PACING_GAIN[b.cycle_idx()]));
        rate[b.cycle_idx()] = b.pacing_bytes_per_sec();
    }
    let cruise = 11.0 * 1448.0 * 1000.0 * 0.99;
    for (i, want) in [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0].into_iter().enumerate() {
        assert!((rate[i] as f64 / (want * cruise) - 1.0).abs() < 1e-3, "phase {i}: {} B/s", rate[i]);
    }
    let budget = b.quantization_budget(0);
    assert!((220..=222).contains(&(target_with(&b, 0) - budget)), "{} - {budget}", target_with(&b, 0));
}

/// `bbr_init` paces at 2.885 × cwnd / srtt from the first hook; STARTUP
/// raises the rate with a faster sample but never lowers it before the
/// pipe is full (`bbr_set_pacing_rate`), after which it follows the estimate.
#[test]
fn startup_pacing_starts_from_the_rtt_and_only_rises() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 300;
    b.on_state(&mut t, CaState::Open); // the first hook starts BBR
    let init = init_rate(&t).0;
    assert_eq!(b.pacing_bytes_per_sec(), init);
    assert!(!b.full_bw_reached());
    // 1 packet in 10 ms: far below the initial rate, which stays.
    round(&mut b, &mut t, 1, 10, 0, 10);
    assert_eq!(b.pacing_bytes_per_sec(), init);
    // 40 packets/ms × 2.885 is above it: taken.
    round(&mut b, &mut t, 400, 10, 0, 10);
    assert_eq!(b.pacing_bytes_per_sec(), rate_bytes_per_sec(1448, b.bw(), HIGH_GAIN));
    assert!(b.pacing_bytes_per_sec() > init);
    assert!(!b.full_bw_reached());
}

/// `bbr_save_cwnd`: outside recovery and PROBE_RTT the saved cwnd is the
/// current one, even when smaller than the last saved; in recovery it only
/// grows.
#[test]
fn save_cwnd_takes_the_current_cwnd_outside_recovery() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    b.on_state(&mut t, CaState::Open);
    t.cwnd = 100;
    let _ = b.ssthresh(&t);
    assert_eq!(b.prior_cwnd, 100);
    t.cwnd = 40;
    let _ = b.ssthresh(&t);
    assert_eq!(b.prior_cwnd, 40);
    b.prev_ca_state = CaState::Recovery;
    t.cwnd = 30;
    let _ = b.ssthresh(&t);
    assert_eq!(b.prior_cwnd, 40);
    t.cwnd = 70;
    let _ = b.ssthresh(&t);
    assert_eq!(b.prior_cwnd, 70);
}

/// `bbr_set_cwnd_to_recover_or_restore`: outside the packet-conserving round,
/// newly lost packets come off cwnd before it grows by what was ACKed.
#[test]
fn losses_come_off_cwnd_outside_packet_conservation() {
    let (mut b, mut t) = cruising();
    // On through a whole gain cycle to a cruising phase with cwnd at its target.
    t.in_flight = 200;
    for _ in 0..CYCLE_LEN {
        round(&mut b, &mut t, 110, 10, 0, 11);
    }
    to_phase(&mut b, &mut t, 2);
    let full = t.cwnd;
    assert_eq!(full, target_with(&b, b.ack_aggregation_cwnd()));
    // A cwnd saved long ago is restored only when a recovery ends, not here.
    b.prior_cwnd = 2 * full;
    round(&mut b, &mut t, 2, 10, 7, 1);
    assert_eq!(t.cwnd, full - 5);
}

/// `bbr_lt_bw_interval_done`: a second lossy interval whose rate is within
/// 1/8 of the first, or within 4 kbit/s of it, means a policer (their mean
/// is used); 20 % apart and more than 4 kbit/s is a new first interval.
#[test]
fn policer_needs_two_intervals_within_an_eighth_or_4_kbit() {
    let t = tcp();
    let three_per_ms = BW_UNIT * 3 / 1000;
    for (first, second, policed) in [
        (three_per_ms, three_per_ms * 11 / 10, true),
        (three_per_ms, three_per_ms * 9 / 10, true),
        (three_per_ms, three_per_ms * 12 / 10, false),
        (20, 25, true), // 25 % apart, but 5 units ≈ 427 B/s < 500 B/s
        (20, 27, false),
    ] {
        let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
        b.lt_bw = first;
        b.lt_bw_interval_done(&t, second);
        assert_eq!(b.lt_use_bw(), policed, "{first} then {second}");
        assert_eq!(b.lt_bw, if policed { (first + second) / 2 } else { second });
    }
}

/// The TSO goal's cap is Linux's GSO_MAX_SIZE − 1 − MAX_TCP_HEADER = 65215
/// bytes: with 1019-byte segments 63 of them (64 would be 65216 bytes).
#[test]
fn tso_goal_is_capped_below_64_kb() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    b.mss = 1019;
    b.pacing_rate = 1_000_000_000;
    assert_eq!(b.tso_segs_goal(), 63);
}

/// `bbr_is_next_cycle_phase`: the 1.25 phase lasts one min_rtt and then
/// until in flight reaches 1.25 BDP or a loss; the 0.75 phase one min_rtt
/// or until in flight is down to one BDP; the others one min_rtt. ACKs
/// every 2 ms; a phase ends at the first ACK more than 10 ms after it began.
#[test]
fn probe_bw_phase_lengths_follow_in_flight() {
    let (mut b, mut t) = cruising();
    to_phase(&mut b, &mut t, 0);
    // A cruising phase ignores in flight.
    for (phase, in_flight) in [(0, 200), (1, 200), (2, 10)] {
        t.in_flight = in_flight;
        let start = t.now;
        while b.cycle_idx() == phase {
            round(&mut b, &mut t, 110, 10, 0, 2);
        }
        assert_eq!(t.now.since(start), Dur::from_millis(12), "phase {phase}");
    }
    // Round again to 1.25, now with in flight below 1.25 BDP: it holds past a min_rtt until a loss.
    to_phase(&mut b, &mut t, 0);
    t.in_flight = 100;
    for i in 0..15 {
        round(&mut b, &mut t, 110, 10, 0, 2);
        assert_eq!(b.cycle_idx(), 0, "ACK {i}");
    }
    round(&mut b, &mut t, 110, 10, 1, 2);
    assert_eq!(b.cycle_idx(), 1);
    // In flight at most one BDP: the 0.75 phase ends at its first ACK.
    round(&mut b, &mut t, 110, 10, 0, 2);
    assert_eq!(b.cycle_idx(), 2);
}

/// STARTUP grows cwnd by what is ACKed only while it is below its target
/// (2.885 BDP, the aggregation allowance and the budget), once 10 segments
/// are delivered; at the target it holds.
#[test]
fn startup_cwnd_stops_at_its_target() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 300;
    let target = |b: &Bbr| b.quantization_budget(b.bdp_at(b.bw(), HIGH_GAIN) + b.ack_aggregation_cwnd());
    round_with(&mut b, &mut t, 20, 10, 0, 10, true);
    // App-limited samples of 2 packets/ms: no full-pipe test, the target settles.
    let mut held = 0;
    for _ in 0..10 {
        let before = target(&b);
        t.cwnd = before;
        round_with(&mut b, &mut t, 20, 10, 0, 10, true);
        assert_eq!(b.mode(), Mode::Startup);
        if target(&b) == before {
            assert_eq!(t.cwnd, before, "at its target");
            held += 1;
        }
        let below = target(&b) - 1;
        t.cwnd = below;
        round_with(&mut b, &mut t, 20, 10, 0, 10, true);
        if target(&b) == below + 1 {
            assert_eq!(t.cwnd, below + 20, "one below its target");
            held += 1;
        }
    }
    assert!(held >= 10, "the target stood still in only {held} of 20 rounds");
}

/// `bbr_lt_bw_sampling` waits for the first loss (the policer's bucket
/// running dry) before it counts rounds, and an interval counts only with
/// at least 50/256 (~20 %) of its packets lost: 10 % loss never makes a policer.
#[test]
fn policer_sampling_starts_at_a_loss_and_needs_20_percent() {
    let mut b = Bbr::new(SimRng::for_component(1, "cc:x"));
    let mut t = tcp();
    t.in_flight = 10;
    for _ in 0..6 {
        round(&mut b, &mut t, 30, 5, 0, 10);
    }
    assert!(!b.lt_is_sampling);
    assert_eq!(b.lt_rtt_cnt, 0);
    round(&mut b, &mut t, 30, 5, 3, 10);
    assert!(b.lt_is_sampling);
    assert_eq!(b.lt_last_stamp_ms, t.now.0 / 1_000_000);
    for i in 0..40 {
        round(&mut b, &mut t, 30, 5, 3, 10);
        assert!(!b.lt_use_bw(), "policer after round {i} at 10 % loss");
    }
}

/// The max filter of bw keeps a sample for 10 rounds (`bbr_bw_rtts`), counted
/// by `rtt_cnt`: a one-off 20 packets/ms sample is the estimate for the
/// next rounds at 11 packets/ms, then forgotten.
#[test]
fn a_bw_sample_expires_after_ten_rounds() {
    let (mut b, mut t) = cruising();
    let rounds = b.rounds();
    round(&mut b, &mut t, 200, 10, 0, 10);
    assert_eq!(b.rounds(), rounds + 1);
    assert!((b.bw_pps() - 20_000.0).abs() < 1.0, "{}", b.bw_pps());
    let mut k = 0;
    while b.bw_pps() > 11_001.0 {
        round(&mut b, &mut t, 110, 10, 0, 10);
        k += 1;
        assert!(k <= 12, "20 packets/ms still the estimate after {k} rounds");
    }
    assert!(k >= 9, "forgotten after {k} rounds");
}

/// `sk_pacing_rate` is payload bytes per second (Linux paces `skb->len`),
/// the unit `ss` shows; the sender times payload against it.
#[test]
fn pacing_rate_is_the_payload_rate() {
    let (b, t) = cruising();
    let payload = b.pacing_bytes_per_sec();
    assert!(payload > 1_000_000, "{payload} B/s");
    assert_eq!(b.pacing_rate(&t).unwrap(), Rate(payload * 8));
}

/// `bbr_cwnd_event(CA_EVENT_TX_START)`: an app-limited flow restarting
/// from idle in PROBE_BW paces at gain 1 (not its phase's), marks the
/// restart and starts a new ACK-aggregation epoch; a flow that is not
/// app-limited is left alone.
#[test]
fn restart_from_idle_paces_at_the_estimate() {
    let (mut b, mut t) = cruising();
    to_phase(&mut b, &mut t, 0);
    let probing = b.pacing_bytes_per_sec();
    assert_eq!(probing, rate_bytes_per_sec(1448, b.bw(), PACING_GAIN[0]));
    t.now = SimTime(t.now.0 + 500 * MS);
    b.on_tx_start(&t, Dur::from_millis(500));
    assert_eq!(b.pacing_bytes_per_sec(), probing, "not app-limited");
    assert!(!b.idle_restart);
    t.app_limited = 1;
    b.ack_epoch_acked = 77;
    b.on_tx_start(&t, Dur::from_millis(500));
    assert_eq!(b.pacing_bytes_per_sec(), rate_bytes_per_sec(1448, b.bw(), BBR_UNIT));
    assert!(b.idle_restart);
    assert_eq!((b.ack_epoch_mstamp, b.ack_epoch_acked), (t.now, 0));
}
