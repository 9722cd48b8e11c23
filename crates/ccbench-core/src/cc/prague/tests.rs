//! TCP Prague against the v0.7 laws (L4STeam tcp_prague.c).
use super::*;

/// Congestion avoidance at `cwnd` segments and srtt `srtt_ms`, pipe full.
fn ca(cwnd: u32, srtt_ms: u64) -> TcpCcState {
    let mut t = TcpCcState::new(SimTime(0), 1448, cwnd);
    t.ssthresh = cwnd;
    t.srtt = Dur::from_millis(srtt_ms);
    t.min_rtt = t.srtt;
    t.snd_nxt = u64::from(cwnd);
    t.in_flight = cwnd;
    t
}
fn started(cfg: PragueConfig, t: &TcpCcState) -> Prague {
    let mut p = cfg.build();
    p.start(t);
    p
}
fn ev(acked: u32, acked_ce: u32) -> AckEvent {
    AckEvent { acked, acked_ce, ..Default::default() }
}
fn set_alpha(p: &mut Prague, a: f64) {
    p.upscaled_alpha = ((a * MAX_ALPHA as f64) as u64) << p.cfg.shift_g;
}

/// A minimal TCP layer around Prague: one ACK per segment spaced
/// srtt/in_flight apart, CWR entered on a CE ACK while Open (ssthresh()
/// then on_state) and left once the window present at entry is ACKed,
/// cwnd segments kept in flight, every `mark_every`-th segment CE.
struct Flow {
    p: Prague,
    t: TcpCcState,
    state: CaState,
    high_seq: u64,
    mark_every: u64,
}

impl Flow {
    fn ack(&mut self, ce: u32) {
        let (p, t) = (&mut self.p, &mut self.t);
        t.now += t.srtt / u64::from(t.in_flight.max(1));
        t.snd_una += 1;
        t.delivered += 1;
        t.delivered_ce += u64::from(ce);
        let e = ev(1, ce);
        p.on_ack_event(t, &e);
        if self.state == CaState::Cwr && t.snd_una >= self.high_seq {
            self.state = CaState::Open;
            p.on_state(t, CaState::Open);
        }
        if ce > 0 && self.state == CaState::Open {
            t.ssthresh = p.ssthresh(t);
            self.high_seq = t.snd_nxt;
            self.state = CaState::Cwr;
            p.on_state(t, CaState::Cwr);
        }
        assert!(p.cong_control(t, &e));
        t.snd_nxt = t.snd_nxt.max(t.snd_una + u64::from(t.cwnd));
        t.in_flight = (t.snd_nxt - t.snd_una) as u32;
    }
    /// Runs for `d`; returns the time-averaged cwnd.
    fn run(&mut self, d: Dur) -> f64 {
        let (start, mut area) = (self.t.now, 0.0);
        while self.t.now < start + d {
            let ce = (self.mark_every > 0 && (self.t.snd_una + 1) % self.mark_every == 0) as u32;
            let (t0, w) = (self.t.now, f64::from(self.t.cwnd));
            self.ack(ce);
            area += w * self.t.now.since(t0).as_secs_f64();
        }
        area / self.t.now.since(start).as_secs_f64()
    }
}

#[test]
fn sends_ect1_with_accecn_and_alpha_starts_per_alpha_mode() {
    let t = ca(10, 20);
    let p = started(PragueConfig::default(), &t);
    assert_eq!(p.ecn_mode(), EcnMode::Accurate(Ecn::Ect1));
    assert_eq!(p.alpha(), Some(0.0));
    let p1 = started(PragueConfig { alpha_mode: AlphaMode::InitOne, ..Default::default() }, &t);
    assert_eq!(p1.alpha(), Some(1.0));
}

#[test]
fn first_ce_halves_frac_cwnd_once_in_alpha_mode_0() {
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    p.cong_control(&mut t, &ev(1, 1));
    assert_eq!(p.frac_cwnd(), 20.0);
    p.cong_control(&mut t, &ev(1, 1));
    assert_eq!(p.frac_cwnd(), 20.0, "only the first mark ever halves");
    // The halving rounds up (`(frac_cwnd + 1) >> 1`): 2k + 1 units become k + 1.
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    p.frac_cwnd = (40 << CWND_UNIT) + 1;
    p.cong_control(&mut t, &ev(1, 1));
    assert_eq!(p.frac_cwnd, (20 << CWND_UNIT) + 1);
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig { alpha_mode: AlphaMode::InitOne, ..Default::default() }, &t);
    p.cong_control(&mut t, &ev(1, 1));
    assert_eq!(p.frac_cwnd(), 40.0);
}

#[test]
fn ce_cut_is_frac_cwnd_times_one_minus_half_alpha() {
    for (alpha, want) in [(1.0, 20.0), (0.5, 30.0), (0.25, 35.0), (0.0, 40.0)] {
        let mut t = ca(40, 20);
        let mut p = started(PragueConfig::default(), &t);
        set_alpha(&mut p, alpha);
        assert_eq!(p.ssthresh(&t), 40, "ssthresh() leaves ssthresh alone");
        p.on_state(&mut t, CaState::Cwr);
        assert_eq!(p.frac_cwnd(), want, "α = {alpha}");
    }
}

#[test]
fn ce_cut_at_most_once_per_rtt_target_when_rtt_independent() {
    for (indep, want) in [(true, [30.0, 30.0, 22.5]), (false, [30.0, 22.5, 16.875])] {
        let mut t = ca(40, 5);
        let mut p = started(PragueConfig { rtt_independence: indep, ..Default::default() }, &t);
        p.round = 4;
        set_alpha(&mut p, 0.5);
        for (ms, w) in [0, 10, 26].into_iter().zip(want) {
            t.now = SimTime(ms * 1_000_000);
            p.on_state(&mut t, CaState::Cwr);
            p.on_state(&mut t, CaState::Open);
            assert_eq!(p.frac_cwnd(), w, "rtt_independence {indep}, CWR at {ms} ms");
        }
    }
}

#[test]
fn loss_halves_window_and_stops_growth_until_open() {
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    set_alpha(&mut p, 0.1);
    t.ssthresh = p.ssthresh(&t);
    p.on_state(&mut t, CaState::Recovery);
    assert_eq!(p.frac_cwnd(), 20.0, "Reno-friendly halving regardless of α");
    p.cong_control(&mut t, &ev(2, 0));
    assert_eq!(p.frac_cwnd(), 20.0, "no increase in loss recovery");
    p.on_state(&mut t, CaState::Open);
    p.cong_control(&mut t, &ev(2, 0));
    assert!(p.frac_cwnd() > 20.0);
    // RTO from Open: the TCP layer resets cwnd before on_state(Loss).
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    t.ssthresh = p.ssthresh(&t);
    t.cwnd = 1;
    p.on_state(&mut t, CaState::Loss);
    assert_eq!(p.frac_cwnd(), 20.0);
    assert_eq!(p.undo_cwnd(&t, 0), 40);
}

#[test]
fn cwnd_moves_one_segment_per_ack_towards_frac_cwnd() {
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    p.on_state(&mut t, CaState::Recovery);
    for i in 1..=25 {
        p.cong_control(&mut t, &ev(2, 0));
        assert_eq!(t.cwnd, (40 - i).max(20));
        assert_eq!(t.ssthresh, t.cwnd, "ssthresh follows each decrement");
    }
    p.on_state(&mut t, CaState::Open);
    p.frac_cwnd = 30 << CWND_UNIT;
    for i in 1..=12 {
        p.cong_control(&mut t, &ev(1, 0));
        assert_eq!(t.cwnd, (20 + i).min(31));
    }
}

#[test]
fn increase_is_scaled_by_srtt_over_target_squared_when_rtt_independent() {
    // Per-ACK increase × frac_cwnd = ai (segments²) for one unmarked segment.
    let ai = |indep: bool, srtt_ms: u64, round: u32| {
        let mut t = ca(40, srtt_ms);
        let mut p = started(PragueConfig { rtt_independence: indep, ..Default::default() }, &t);
        p.round = round;
        p.update_ai(&t);
        let w = p.frac_cwnd();
        p.cong_control(&mut t, &ev(1, 0));
        (p.frac_cwnd() - w) * w
    };
    let ratio = ai(true, 10, 4) / ai(false, 10, 4);
    assert!((ratio - 0.16).abs() < 1e-3, "(10/25)² expected, got {ratio}");
    assert!((ai(true, 10, 4) / 0.16 - 1.0).abs() < 1e-3);
    assert_eq!(ai(true, 30, 4), ai(false, 30, 4), "no scaling at srtt ≥ rtt_target");
    assert_eq!(ai(true, 10, 3), ai(false, 10, 3), "no scaling before rtt_transition rounds");
}

#[test]
fn pacing_is_mtu_window_over_srtt_doubled_in_slow_start() {
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    assert_eq!(p.pacing_rate(&t), None);
    p.cong_control(&mut t, &ev(1, 0));
    // 1500 B / 20 ms = 75 kB/s per segment; 40 segments: 24 Mbit/s.
    assert_eq!(p.pacing_rate(&t), Some(Rate(24_000_000)));
    // Slow start: 200 % while cwnd < ssthresh/2, 100 % above.
    for (cwnd, ratio) in [(10, 2), (20, 1)] {
        let mut t = TcpCcState::new(SimTime(0), 1448, cwnd);
        (t.srtt, t.ssthresh) = (Dur::from_millis(20), 32);
        let mut p = started(PragueConfig::default(), &t);
        p.cong_control(&mut t, &ev(1, 0));
        assert_eq!(t.cwnd, cwnd + 1);
        assert_eq!(p.pacing_rate(&t), Some(Rate(ratio * u64::from(cwnd + 1) * 600_000)));
    }
    let mut t = TcpCcState::new(SimTime(0), 1448, 10);
    let mut p = started(PragueConfig::default(), &t);
    p.cong_control(&mut t, &ev(1, 0));
    assert_eq!(p.pacing_rate(&t), None, "pacing off until srtt is known");
}

#[test]
fn alpha_decays_and_updates_only_at_round_ends() {
    let mut t = ca(20, 20);
    let mut p = started(PragueConfig::default(), &t);
    t.snd_nxt = 40; // the round started at init ends at segment 20
    let ack = |p: &mut Prague, t: &mut TcpCcState, ce: u32| {
        t.snd_una += 1;
        t.delivered += 1;
        t.delivered_ce += u64::from(ce);
        p.cong_control(t, &ev(1, ce));
    };
    ack(&mut p, &mut t, 1);
    assert_eq!(p.upscaled_alpha, 0, "mid-round: no update");
    for _ in 1..20 {
        ack(&mut p, &mut t, 0);
    }
    // F = 1/20 at the round end: α/g = F.
    assert_eq!(p.upscaled_alpha, (1 << 24) / 20);
    let a = p.upscaled_alpha;
    for _ in 1..20 {
        ack(&mut p, &mut t, 0);
    }
    assert_eq!(p.upscaled_alpha, a, "no decay before the round ends");
    ack(&mut p, &mut t, 0);
    assert_eq!(p.upscaled_alpha, a - (a >> 4));
    // RTT-independent: round ends closer than rtt_target do not update.
    p.round = 4;
    p.alpha_stamp = t.now;
    let a = p.upscaled_alpha;
    t.now += Dur::from_millis(10);
    ack(&mut p, &mut t, 0);
    assert_eq!(p.upscaled_alpha, a);
    t.now += Dur::from_millis(15);
    ack(&mut p, &mut t, 0);
    assert_eq!(p.upscaled_alpha, a - (a >> 4));
}

#[test]
fn ecn_fallback_floors_alpha_when_delay_varies() {
    let run = |fallback: EcnFallback, jitter_ms: u64| {
        let mut t = ca(40, 20);
        let mut p = started(PragueConfig { ecn_fallback: fallback, ..Default::default() }, &t);
        p.saw_ce = true;
        p.ssthresh(&t); // gain from ssthresh 40: 2^-8
        for _ in 0..50 {
            for i in 0..40 {
                p.on_rtt(&mut t, Dur::from_millis(20 + jitter_ms * (i % 2)));
            }
            p.update_alpha(&t);
        }
        p.on_state(&mut t, CaState::Cwr);
        (p.classic_ecn_score(), p.frac_cwnd())
    };
    let (score, w) = run(EcnFallback::DetectAndFallback, 10);
    assert!(score > CLASSIC_ECN, "score {score}");
    // α = 0 (no marks), floored at 0.625: cut by 31.25 %.
    assert_eq!(w, 27.5);
    let (score, w) = run(EcnFallback::DetectOnly, 10);
    assert!(score > CLASSIC_ECN && w == 40.0);
    let (score, w) = run(EcnFallback::DetectAndFallback, 0);
    assert!(score == 0.0 && w == 40.0, "steady RTT reads as L4S: score {score}");
    assert_eq!(run(EcnFallback::Off, 10), (0.0, 40.0));
}

/// The `classic` series is the score above the L4S band, 0..1: the α floor
/// 0.625·(min(score, 9) − 8) over 0.625; nothing without the detector.
#[test]
fn classic_series_is_the_detectors_score_above_the_l4s_band() {
    let t = ca(40, 20);
    let mut p = started(PragueConfig { ecn_fallback: EcnFallback::DetectAndFallback, ..Default::default() }, &t);
    for (score, want) in [(0.0, 0.0), (8.0, 0.0), (8.25, 0.25), (9.0, 1.0), (17.0, 1.0)] {
        p.classic.score = score;
        assert_eq!(p.classic(), Some(want), "score {score}");
        let floor = p.classic.alpha_floor() as f64 / MAX_ALPHA as f64;
        assert!((floor - 0.625 * want).abs() < 1e-6, "score {score}: floor {floor}");
    }
    let mut only = started(PragueConfig { ecn_fallback: EcnFallback::DetectOnly, ..Default::default() }, &t);
    only.classic.score = 17.0;
    assert_eq!(only.classic(), Some(1.0), "detect-only still reports what it detects");
    let off = started(PragueConfig { ecn_fallback: EcnFallback::Off, ..Default::default() }, &t);
    assert_eq!(off.classic(), None);
}

#[test]
fn small_windows_switch_to_rate_mode_with_dithered_pacing() {
    let mut t = ca(3, 10);
    let mut p = started(PragueConfig::default(), &t);
    p.saw_ce = true;
    p.round = 4;
    p.alpha_stamp = t.now;
    p.cong_control(&mut t, &ev(1, 0));
    assert!(p.rate_mode());
    let pace = |p: &Prague, up: bool| {
        let (r, off) = (p.rate_bytes, (4 * p.rate_bytes) >> 7);
        Some(Rate(8 * if up { r + off } else { r - off }))
    };
    p.cong_control(&mut t, &ev(1, 0));
    assert_eq!(p.pacing, pace(&p, true), "+3 % in the first half vRTT");
    t.now += Dur::from_millis(13);
    p.cong_control(&mut t, &ev(1, 0));
    assert_eq!(p.pacing, pace(&p, false), "−3 % in the second half");
    let r = p.rate_bytes;
    p.on_state(&mut t, CaState::Recovery);
    assert_eq!(p.rate_bytes, r - r / 2, "loss halves the rate");
    let mut big = ca(40, 10);
    let mut q = started(PragueConfig::default(), &big);
    q.saw_ce = true;
    q.cong_control(&mut big, &ev(1, 0));
    assert!(!q.rate_mode(), "40 × 1500 B > cwnd_transit");
}

/// v0.7's steady state (tcp_prague.c header): r = (1/p − 1) Mbit/s ×
/// 25 ms/max(RTT, 25 ms) for 1500 B packets. At RTT ≥ 25 ms each round
/// adds (1 − p) segments and one cut removes W·α/2 with α → p, so
/// W = 2(1/p − 1). Below 25 ms RTT-independence adds (1 − p)(R/25 ms)²
/// per round and cuts once per interval T ≥ 25 ms, so the rate is the
/// law's × T/25 ms; T is the first CWR entry (a CE mark while Open)
/// ≥ 25 ms after the last cut, so T ≤ 25 ms + max(mark spacing, RTT).
#[test]
fn steady_state_rate_follows_the_scalable_law_and_is_rtt_independent() {
    let mark_every = 21; // p = 1/21: law = 20 Mbit/s × 0.96 (2 segments/25 ms = 0.96 Mbit/s)
    let run = |indep: bool, rtt_ms: u64| {
        let t = ca(20, rtt_ms);
        let p = started(PragueConfig { rtt_independence: indep, ..Default::default() }, &t);
        let mut f = Flow { p, t, state: CaState::Open, high_seq: 0, mark_every };
        f.run(Dur::from_secs(20));
        let w = f.run(Dur::from_secs(40));
        (w * 12_000.0 / (rtt_ms as f64 / 1000.0) / 1e6, w)
    };
    let law = (mark_every - 1) as f64 * 0.96;
    for (rtt, indep, want) in [(25, true, law), (50, true, law / 2.0), (10, false, law * 2.5)] {
        let (r, _) = run(indep, rtt);
        assert!((r / want - 1.0).abs() < 0.1, "RTT {rtt} ms, indep {indep}: {r:.2} Mbit/s, want ≈ {want:.2}");
    }
    let (r, w) = run(true, 10);
    let spacing_ms = (mark_every as f64 * 10.0 / w).max(10.0);
    let hi = law * (1.0 + spacing_ms / 25.0);
    assert!(r > 0.95 * law && r < 1.05 * hi, "RTT 10 ms, indep: {r:.2} Mbit/s, want {law:.2}..{hi:.2}");
}

#[test]
fn config_parses_kernel_style_modes_and_rejects_others() {
    let c: PragueConfig = toml::from_str("rtt_target = \"10ms\"\ncwnd_mode = 0\necn_fallback = 1").unwrap();
    assert_eq!(c.rtt_target, Dur::from_millis(10));
    assert_eq!((c.cwnd_mode, c.ecn_fallback), (CwndMode::FracWin, EcnFallback::DetectAndFallback));
    assert_eq!(c.rtt_transition, 4);
    let e = toml::from_str::<PragueConfig>("cwnd_mode = 3").unwrap_err().to_string();
    assert!(e.contains("cwnd_mode"), "{e}");
    assert!(toml::from_str::<PragueConfig>("alpha_mode = 2").is_err());
    assert!(toml::from_str::<PragueConfig>("rtt_scaling = 1").is_err());
}

/// `version` sets the defaults of its tree; an explicit key still wins.
#[test]
fn version_sets_the_tree_defaults_and_keys_override() {
    let c: PragueConfig = toml::from_str("version = \"v0.6\"").unwrap();
    assert_eq!((c.alpha_mode, c.rtt_transition, c.cwnd_mode), (AlphaMode::InitOne, 500, CwndMode::FracWin));
    let c: PragueConfig = toml::from_str("version = \"v0.6\"\nrtt_transition = 8").unwrap();
    assert_eq!((c.alpha_mode, c.rtt_transition), (AlphaMode::InitOne, 8));
    let c: PragueConfig = toml::from_str("version = \"2020-04\"\necn_fallback = 1").unwrap();
    assert_eq!((c.version, c.ecn_fallback, c.rtt_transition), (PragueVersion::V2020_04, EcnFallback::DetectAndFallback, 500));
    assert_eq!(PragueConfig::default(), toml::from_str::<PragueConfig>("version = \"v0.7\"").unwrap());
    let e = toml::from_str::<PragueConfig>("version = \"v0.5\"").unwrap_err().to_string();
    assert!(e.contains("2020-04") && e.contains("v0.6") && e.contains("v0.7"), "{e}");
    // Round trip through the effective-parameter table.
    let c = PragueConfig::for_version(PragueVersion::V0_6);
    let back: PragueConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

/// v0.6 (and 2020-04): α starts at 1, so the first CE cut halves the
/// window (v0.7 halves once at the first mark, then α ≈ 0 cuts nothing).
#[test]
fn v0_6_first_ce_cut_halves_with_alpha_one() {
    for v in [PragueVersion::V0_6, PragueVersion::V2020_04] {
        let mut t = ca(40, 20);
        let mut p = started(PragueConfig::for_version(v), &t);
        assert_eq!(p.alpha(), Some(1.0));
        p.cong_control(&mut t, &ev(1, 1));
        assert_eq!(p.frac_cwnd(), 40.0, "{v:?}: no halving at the first mark");
        p.on_state(&mut t, CaState::Cwr);
        assert_eq!(p.frac_cwnd(), 20.0, "{v:?}: CE cut with α = 1");
    }
    let mut t = ca(40, 20);
    let mut p = started(PragueConfig::default(), &t);
    p.cong_control(&mut t, &ev(1, 1));
    p.on_state(&mut t, CaState::Cwr);
    assert_eq!(p.frac_cwnd(), 20.0, "v0.7: halved at the first mark, then α = 0 cuts nothing");
}

/// v0.6's RTT-independence transition takes 500 rounds after slow start;
/// v0.7's takes 4. At srtt 5 ms the v0.7 increase per ACK is scaled by
/// (5/25)² from round 4; v0.6 still adds a full 1/cwnd at round 499.
#[test]
fn rtt_independence_starts_after_500_rounds_in_v0_6() {
    let scaled = ((5u128 * 5) << CWND_UNIT).div_ceil(25 * 25) as u64;
    for (v, round, want) in [
        (PragueVersion::V0_7, 4, scaled),
        (PragueVersion::V0_6, 4, ONE_CWND),
        (PragueVersion::V0_6, 499, ONE_CWND),
        (PragueVersion::V0_6, 500, scaled),
    ] {
        let t = ca(40, 5);
        let mut p = started(PragueConfig::for_version(v), &t);
        p.round = round;
        p.update_ai(&t);
        assert!(p.ai_ack_increase.abs_diff(want) <= 1, "{v:?} round {round}: {} vs {want}", p.ai_ack_increase);
    }
}

/// Window-only law in v0.6: a 3-packet window with CE stays a window
/// (v0.7 switches to rate mode); v0.6 paces from the integer cwnd.
#[test]
fn v0_6_is_window_only_and_paces_from_cwnd() {
    let mut t = ca(3, 10);
    let mut p = started(PragueConfig::for_version(PragueVersion::V0_6), &t);
    p.saw_ce = true;
    p.round = 600;
    p.cong_control(&mut t, &ev(1, 0));
    assert!(!p.rate_mode(), "v0.6 has no rate mode");
    // cwnd 40 while frac_cwnd is 30.5 (a cut the window has not followed
    // yet): v0.6 paces 40 packets per srtt, v0.7 30.
    for (v, pkts) in [(PragueVersion::V0_6, 40u64), (PragueVersion::V0_7, 30)] {
        let mut t = ca(40, 10);
        t.in_flight = 20;
        let mut p = started(PragueConfig::for_version(v), &t);
        p.frac_cwnd = (61 << CWND_UNIT) / 2;
        p.update_pacing(&t);
        let want = Prague::per_packet_rate(&t) * pkts;
        assert_eq!(p.pacing, Some(Rate(want * 8)), "{v:?}");
    }
}

/// Rate mode forced on (`prague_cwnd_mode = 1`) and RTT-independent.
fn rate_mode_flow(srtt_ms: u64, rate_bytes: u64) -> (Prague, TcpCcState) {
    let t = ca(10, srtt_ms);
    let cfg = PragueConfig { cwnd_mode: CwndMode::Rate, ..Default::default() };
    let mut p = started(cfg, &t);
    p.round = 10;
    p.rate_bytes = rate_bytes;
    p.alpha_stamp = t.now;
    assert!(p.rate_mode_active(&t));
    (p, t)
}

#[test]
fn window_to_rate_conversion_is_mtu_times_window_over_srtt() {
    // prague_frac_cwnd_to_pacing_rate: 1500 B × 10.5 / 10 ms = 1 575 000 B/s.
    let t = ca(10, 10);
    let mut p = started(PragueConfig::default(), &t);
    p.frac_cwnd = 10 * ONE_CWND + ONE_CWND / 2;
    assert_eq!(p.frac_cwnd_to_rate(&t), 1_575_000);
    // Never below MINIMUM_RATE (100 kbit/s).
    p.frac_cwnd = ONE_CWND / 100;
    assert_eq!(p.frac_cwnd_to_rate(&t), 12_500);
}

#[test]
fn rate_to_window_conversion_uses_linux_2_pow_20_us_second() {
    // prague_pacing_rate_to_frac_cwnd: rate × hsrtt_us / 2^20 / MTU, rounded
    // up: 1.5 MB/s × 10 000 µs / 2^20 / 1500 B = 9.537 segments, i.e.
    // exactly 10^7 in 2^-20 units (a true second would give 10 segments).
    let (mut p, t) = rate_mode_flow(10, 1_500_000);
    assert_eq!(p.hsrtt >> HSRTT_SHIFT, 10_000_000);
    assert_eq!(p.rate_to_frac_cwnd(&t), 10_000_000);
    p.rate_bytes = 1_500_001; // 10 000 006.67, rounded up
    assert_eq!(p.rate_to_frac_cwnd(&t), 10_000_007);
    // hsrtt is the slow average: without it (0) srtt is used.
    p.hsrtt = 0;
    p.rate_bytes = 1_500_000;
    let t20 = ca(10, 20);
    assert_eq!(p.rate_to_frac_cwnd(&t20), 20_000_000);
}

#[test]
fn rate_mode_adds_1500_bytes_per_vrtt_per_vrtt() {
    // One ACKed segment at srtt 10 ms: vRTT = rtt_target = 25 ms. The
    // increase 1500 B × 2^20 µs / 25 ms = 62914 B/s is spread over the
    // vRTT's window ⌈600 000 B/s × 25 ms / (1500 B × 2^20 µs)⌉ = 10 ACKs:
    // +6291 B/s per ACK.
    let (mut p, mut t) = rate_mode_flow(10, 600_000);
    p.cong_control(&mut t, &ev(1, 0));
    assert_eq!(p.rate_bytes, 606_291);
    // The window follows the rate: frac_cwnd = max(frac + acked, rate→window).
    assert_eq!(p.frac_cwnd, p.rate_to_frac_cwnd(&t).max(10 * ONE_CWND + 1));
    // At srtt 50 ms the vRTT is the srtt: 1500 B × 2^20 µs / 50 ms = 31457 B/s
    // over ⌈600 000 × 50 ms / (1500 × 2^20 µs)⌉ = 20 ACKs: +1573 B/s.
    let (mut p, mut t) = rate_mode_flow(50, 600_000);
    p.cong_control(&mut t, &ev(1, 0));
    assert_eq!(p.rate_bytes, 601_573);
    // CE-marked segments add nothing.
    let (mut p, mut t) = rate_mode_flow(10, 600_000);
    p.saw_ce = true;
    p.cong_control(&mut t, &ev(1, 1));
    assert_eq!(p.rate_bytes, 600_000);
}

#[test]
fn rate_mode_ce_cut_is_rate_times_one_minus_half_alpha_and_loss_halves() {
    let (mut p, mut t) = rate_mode_flow(10, 800_000);
    set_alpha(&mut p, 0.5);
    p.on_state(&mut t, CaState::Cwr);
    assert_eq!(p.rate_bytes, 600_000, "800 000 × (1 − 0.5/2)");
    assert_eq!(p.frac_cwnd, p.rate_to_frac_cwnd(&t), "the window follows the rate");
    p.on_state(&mut t, CaState::Open);
    p.on_state(&mut t, CaState::Recovery);
    assert_eq!(p.rate_bytes, 300_000, "loss halves the rate");
    assert_eq!(p.loss_rate_bytes, 600_000, "kept for undo");
    // The floor holds.
    let (mut p, mut t) = rate_mode_flow(10, 13_000);
    set_alpha(&mut p, 1.0);
    p.on_state(&mut t, CaState::Cwr);
    assert_eq!(p.rate_bytes, MINIMUM_RATE);
}

#[test]
fn rto_halves_once_from_the_window_before_the_timeout() {
    // The TCP layer calls ssthresh() (cwnd 40), sets cwnd = 1, then
    // on_state(Loss): the halving uses 40, as Linux's CA_EVENT_LOSS comes
    // before the reset.
    let mut t = ca(40, 10);
    let mut p = started(PragueConfig { cwnd_mode: CwndMode::FracWin, ..Default::default() }, &t);
    assert_eq!(p.ssthresh(&t), 40, "prague_ssthresh leaves ssthresh");
    t.cwnd = 1;
    p.on_state(&mut t, CaState::Loss);
    assert_eq!(p.frac_cwnd, 20 * ONE_CWND);
    assert_eq!(p.loss_cwnd, 40);
    assert!(p.in_loss);
    // A timeout during Recovery does not halve again (Linux raises the
    // loss event only from Open/Disorder).
    let mut t = ca(40, 10);
    let mut p = started(PragueConfig { cwnd_mode: CwndMode::FracWin, ..Default::default() }, &t);
    p.on_state(&mut t, CaState::Recovery);
    assert_eq!(p.frac_cwnd, 20 * ONE_CWND);
    p.ssthresh(&t);
    t.cwnd = 1;
    p.on_state(&mut t, CaState::Loss);
    assert_eq!(p.frac_cwnd, 20 * ONE_CWND);
    // Open again ends the growth freeze.
    p.on_state(&mut t, CaState::Open);
    assert!(!p.in_loss);
}

/// 2020-04 loss law (`prague_enter_loss` without the later `in_loss`
/// gate): cwnd_cnt −= (cwnd << 19) + cwnd_cnt/2, i.e. frac_cwnd = (cwnd +
/// cwnd_cnt)/2, α untouched, ssthresh left as it was (`prague_ssthresh`).
/// In slow start `tcp_slow_start` moves snd_cwnd and returns before the
/// carry is paid, so the window keeps doubling; once not cwnd-limited the
/// debt is paid one segment per ACK, each step setting ssthresh = cwnd.
/// v0.6 stops growth until Open and pays from the first ACK.
#[test]
fn v2020_loss_halves_as_a_debt_that_slow_start_leaves_unpaid() {
    use crate::cc::INFINITE_SSTHRESH;
    for v in [PragueVersion::V2020_04, PragueVersion::V0_6] {
        let mut t = ca(100, 20);
        t.ssthresh = INFINITE_SSTHRESH;
        let mut p = started(PragueConfig::for_version(v), &t);
        set_alpha(&mut p, 0.25);
        t.ssthresh = p.ssthresh(&t);
        assert_eq!(t.ssthresh, INFINITE_SSTHRESH, "{v:?}: prague_ssthresh keeps ssthresh");
        p.on_state(&mut t, CaState::Recovery);
        assert_eq!(p.frac_cwnd(), 50.0, "{v:?}: (100 + 0)/2");
        assert_eq!(p.alpha(), Some(0.25), "{v:?}: loss leaves α");
        p.cong_control(&mut t, &ev(10, 0));
        if v == PragueVersion::V2020_04 {
            assert_eq!((t.cwnd, t.ssthresh, p.frac_cwnd()), (110, INFINITE_SSTHRESH, 60.0), "slow start, debt kept");
            t.cwnd_limited = false;
            for k in 1..=50 {
                p.cong_control(&mut t, &ev(1, 0));
                assert_eq!((t.cwnd, t.ssthresh), (110 - k, 110 - k), "debt paid one segment per ACK");
            }
            p.cong_control(&mut t, &ev(1, 0));
            assert_eq!((t.cwnd, p.frac_cwnd()), (60, 60.0), "paid off at ⌈frac_cwnd⌉");
        } else {
            assert_eq!((t.cwnd, t.ssthresh, p.frac_cwnd()), (99, 99, 50.0), "no growth, first step");
        }
    }
    // In congestion avoidance the 2020 window still grows during recovery:
    // frac_cwnd += acked/frac_cwnd (2/20 segment), v0.6 stays at 20.
    for (v, want) in [(PragueVersion::V2020_04, 20.1), (PragueVersion::V0_6, 20.0)] {
        let mut t = ca(40, 20);
        let mut p = started(PragueConfig::for_version(v), &t);
        t.ssthresh = p.ssthresh(&t);
        p.on_state(&mut t, CaState::Recovery);
        p.cong_control(&mut t, &ev(2, 0));
        assert!((p.frac_cwnd() - want).abs() < 1e-6, "{v:?}: {}", p.frac_cwnd());
        assert_eq!(t.cwnd, 39, "{v:?}");
    }
}

/// `prague_update_rtt_scaling` (called from `prague_ssthresh`) sets the
/// detector's filter gain 2^-g, g = min(18, ⌊log2 ssthresh⌋·1.5 + 1). A
/// loss in slow start leaves the 2020 tree in slow start with ssthresh
/// "infinite", so at the next loss g is still 18 and 2000 RTT samples 20 ms
/// above the filter move it by 20·(1 − (1 − 2^-18)^2000) ≈ 0.15 ms; v0.6
/// has paid 10 segments of the cut (ssthresh = 90, g = 10) and moves
/// 20·(1 − (1 − 2^-10)^2000) ≈ 17.2 ms.
#[test]
fn v2020_losses_keep_the_detector_at_its_slowest_gain() {
    use crate::cc::INFINITE_SSTHRESH;
    let gain_for = |s: u32| {
        let l = s.ilog2();
        (l + l / 2 + 1).min(18)
    };
    for (v, ssthresh) in [(PragueVersion::V2020_04, INFINITE_SSTHRESH), (PragueVersion::V0_6, 90)] {
        let mut t = ca(100, 20);
        t.ssthresh = INFINITE_SSTHRESH;
        let cfg = PragueConfig { ecn_fallback: EcnFallback::DetectAndFallback, ..PragueConfig::for_version(v) };
        let mut p = started(cfg, &t);
        p.on_rtt(&mut t, Dur::from_millis(20));
        t.ssthresh = p.ssthresh(&t);
        p.on_state(&mut t, CaState::Recovery);
        for _ in 0..10 {
            p.cong_control(&mut t, &ev(1, 0));
        }
        p.on_state(&mut t, CaState::Open);
        assert_eq!(t.ssthresh, ssthresh, "{v:?}");
        t.ssthresh = p.ssthresh(&t);
        p.on_state(&mut t, CaState::Recovery);
        let g = gain_for(ssthresh);
        assert_eq!((p.classic_gain_shift(), g), (g, [18, 10][usize::from(v == PragueVersion::V0_6)]), "{v:?}");
        for _ in 0..2000 {
            p.on_rtt(&mut t, Dur::from_millis(40));
        }
        let want = 40.0 - 20.0 * (1.0 - (-f64::from(g)).exp2()).powi(2000);
        let got = p.classic_srtt().nanos() as f64 / 1e6;
        assert!((got - want).abs() < 0.01, "{v:?}: filter srtt {got} ms, formula {want} ms");
    }
}

/// `prague_ai_ack_increase`: above MAX_SCALED_RTT (100 ms) the increase is
/// one segment even when the target RTT is larger still.
#[test]
fn no_scaling_above_max_scaled_rtt_whatever_the_target() {
    let cfg = PragueConfig { rtt_independence: true, rtt_target: Dur::from_millis(200), ..Default::default() };
    for (srtt_ms, scaled) in [(150, false), (100, true)] {
        let t = ca(40, srtt_ms);
        let mut p = started(cfg.clone(), &t);
        p.round = 1000;
        p.update_ai(&t);
        assert_eq!(p.ai_ack_increase != ONE_CWND, scaled, "srtt {srtt_ms} ms");
    }
}

/// Without an RTT estimate Prague starts its rate at MINIMUM_RATE.
#[test]
fn start_without_an_rtt_uses_the_minimum_rate() {
    let mut t = ca(10, 0);
    t.srtt = Dur::ZERO;
    let p = started(PragueConfig::default(), &t);
    assert_eq!(p.rate_bytes, MINIMUM_RATE);
    let p = started(PragueConfig::default(), &ca(10, 20));
    assert!(p.rate_bytes > MINIMUM_RATE);
}

/// `prague_update_rtt_scaling` changes the filters' gains without changing
/// the srtt/mdev they hold: g = ⌊log2 ssthresh⌋·1.5 + 1, at most 18.
#[test]
fn classic_ecn_gain_rescales_without_changing_the_estimates() {
    let mut c = ClassicEcn::new(0);
    c.on_rtt(Dur::from_millis(20));
    let held = |c: &ClassicEcn| (c.srtt_pace >> c.g_srtt, c.mdev_pace >> c.g_mdev);
    assert_eq!(held(&c), (20_000_000, 1000));
    c.update_gain(100); // ⌊log2 100⌋ = 6: 6 + 3 + 1
    assert_eq!((c.g_srtt, c.g_mdev), (10, 11));
    assert_eq!(held(&c), (20_000_000, 1000));
    c.update_gain(1 << 20); // 20 + 10 + 1 = 31, capped
    assert_eq!((c.g_srtt, c.g_mdev), (18, 19));
    assert_eq!(held(&c), (20_000_000, 1000));
}

/// The score moves by 0.5·log2(mdev / 750 µs) plus, when positive,
/// 0.5·log2((srtt − min_rtt) / 2 ms) per α update, clamped to [0, 17];
/// the α floor is 0.625·(min(score, 9) − 8) above 8.
#[test]
fn classic_ecn_score_follows_rtt_variation_and_queue_depth() {
    let mut t = ca(40, 20);
    t.min_rtt = Dur::from_millis(20);
    let mut c = ClassicEcn::new(0);
    let set = |c: &mut ClassicEcn, srtt_us: u64, mdev_us: u64| {
        c.srtt_pace = (srtt_us * 1000) << c.g_srtt;
        c.mdev_pace = (mdev_us * 1000) << c.g_mdev;
    };
    set(&mut c, 28_000, 3_000); // mdev 4 × 750 µs: +1; queue 8 ms = 4 × 2 ms: +1
    c.on_round(&t);
    assert!((c.score - 2.0).abs() < 1e-9, "{}", c.score);
    set(&mut c, 20_000, 6_000); // mdev 8 × 750 µs: +1.5; no queue
    c.on_round(&t);
    assert!((c.score - 3.5).abs() < 1e-9, "{}", c.score);
    set(&mut c, 20_500, 3_000); // queue 0.5 ms: the depth term would be negative and is left out
    c.on_round(&t);
    assert!((c.score - 4.5).abs() < 1e-9, "{}", c.score);
    set(&mut c, 20_000, 3);
    for _ in 0..20 {
        c.on_round(&t);
    }
    assert_eq!(c.score, 0.0, "clamped at 0");
    // No estimate yet, or no min_rtt: nothing moves.
    c.score = 1.0;
    c.srtt_pace = 0;
    c.mdev_pace = 3_000_000 << c.g_mdev;
    c.on_round(&t);
    assert_eq!(c.score, 1.0);
    set(&mut c, 28_000, 3_000);
    t.min_rtt = Dur::MAX;
    c.on_round(&t);
    assert_eq!(c.score, 1.0);
    // The reference levels shrink with ref_shift: 750 µs → 750^(1/2) µs.
    let mut c = ClassicEcn::new(1);
    t.min_rtt = Dur::from_millis(20);
    set(&mut c, 20_000, 3_000);
    c.on_round(&t);
    let want = 0.5 * (3000f64.log2() - 750f64.log2() / 2.0);
    assert!((c.score - want).abs() < 1e-9, "{} vs {want}", c.score);
    // The α floor.
    c.score = 8.0;
    assert_eq!(c.alpha_floor(), 0);
    c.score = 8.5;
    let half = MAX_ALPHA / 2;
    assert_eq!(c.alpha_floor(), (half >> 1) + (half >> 3));
    c.score = 12.0;
    assert_eq!(c.alpha_floor(), (MAX_ALPHA >> 1) + (MAX_ALPHA >> 3));
}

/// `prague_tso_segs`: ⌊pacing rate / MTU⌋ >> 12 segments, at least 1, so
/// Prague sends single segments below ~98 Mbit/s where autosizing would
/// send at least two.
#[test]
fn gso_packets_last_at_most_a_quarter_millisecond() {
    let t = ca(10, 20);
    let mut p = started(PragueConfig::default(), &t);
    p.pacing = None;
    assert_eq!(p.max_tso_segs(&t), Some(1), "max_tso_burst starts at 1");
    p.pacing = Some(Rate(10_000_000));
    assert_eq!(p.max_tso_segs(&t), Some(1));
    // 1 Gbit/s: 83,333 packets/s of 1500 B, >> 12 → 20.
    p.pacing = Some(Rate(1_000_000_000));
    assert_eq!(p.max_tso_segs(&t), Some(20));
    p.pacing = Some(Rate(8 * 1500 * 4096 * 3 - 8));
    assert_eq!(p.max_tso_segs(&t), Some(2));
}
