//! Behaviour tests: `ScreamTx` driven by synthetic RFC 8888 reports from a
//! tiny path model (sent at t, arriving at t + owd + queue, chosen ECN/loss).
use super::*;
use crate::media::rfc8888::MAX_REPORTED;
use crate::units::Rate;

/// 2/1024 s: with send gaps and queue delays in whole ticks, arrival offsets
/// are exact in ATO units (1/1024 s), so qdelay and jitter stay exactly 0.
const TICK: Dur = Dur(1_953_125);
/// RTP bytes per packet (1200 B payload + 12 B RTP header).
const SIZE: u32 = 1212;

#[derive(Copy, Clone, Debug)]
enum Fate {
    Arrive { queue: Dur, ecn: Ecn },
    Drop,
}
const OK: Fate = Fate::Arrive { queue: Dur::ZERO, ecn: Ecn::Ect0 };
const CE: Fate = Fate::Arrive { queue: Dur::ZERO, ecn: Ecn::Ce };

struct Harness {
    tx: ScreamTx,
    now: SimTime,
    seq: u32,
    owd: Dur,
    fb_delay: Dur,
}

impl Harness {
    fn new(cfg: &MediaConfig, l4s: bool, owd_ms: u64, fb_ms: u64) -> Self {
        let tx = ScreamTx::new(cfg, l4s, SimTime::ZERO);
        Harness { tx, now: SimTime::ZERO, seq: 0, owd: Dur::from_millis(owd_ms), fb_delay: Dur::from_millis(fb_ms) }
    }

    /// One video frame: `on_new_frame`, then `n` packets `gap` apart (one RTP
    /// timestamp). The receiver reports every `per_report` packets (the
    /// report covers them, ending at the highest received, sent at the last
    /// arrival); feedback reaches the sender `fb_delay` later. Hooks run in
    /// time order; `each_fb` sees the controller after every feedback.
    fn run(
        &mut self,
        n: u32,
        gap: Dur,
        per_report: u32,
        fate: impl Fn(u32) -> Fate,
        mut each_fb: impl FnMut(SimTime, &mut ScreamTx),
    ) {
        let (t0, first) = (self.now, self.seq);
        let ts = (t0.0 as u128 * 90_000 / 1_000_000_000) as u32;
        self.tx.on_new_frame(t0, n * SIZE, u64::from(n * SIZE), Dur::ZERO);
        let tx_at = |k: u32| t0 + gap * u64::from(k);
        let arrival = |k: u32| match fate(k) {
            Fate::Arrive { queue, ecn } => Some((tx_at(k) + self.owd + queue, ecn)),
            Fate::Drop => None,
        };
        // Events: (time, kind 0 = tx / 1 = feedback, index).
        let mut events: Vec<(SimTime, u8, usize)> = (0..n).map(|k| (tx_at(k), 0, k as usize)).collect();
        let mut reports = Vec::new();
        let mut start = 0;
        while start < n {
            let end = (start + per_report).min(n) - 1;
            let Some(hi) = (start..=end).rev().find(|&k| arrival(k).is_some()) else {
                start = end + 1;
                continue;
            };
            assert!(hi + 1 - start <= MAX_REPORTED as u32);
            let report_time = (start..=hi).filter_map(|k| arrival(k).map(|a| a.0)).max().unwrap();
            let mut r = Report { report_time, begin_seq: first + start, num: (hi + 1 - start) as u16, ..Default::default() };
            for k in start..=hi {
                if let Some((at, ecn)) = arrival(k) {
                    let i = (k - start) as usize;
                    r.received |= 1 << i;
                    r.ecn[i] = ecn;
                    r.ato[i] = (u128::from(report_time.since(at).0) * 1024 / 1_000_000_000) as u16;
                }
            }
            events.push((report_time + self.fb_delay, 1, reports.len()));
            reports.push(r);
            start = end + 1;
        }
        events.sort();
        for &(t, kind, i) in &events {
            if kind == 0 {
                self.tx.on_transmit(t, first + i as u32, SIZE, ts, i as u32 + 1 == n);
            } else {
                self.tx.on_feedback(t, &reports[i]);
                each_fb(t, &mut self.tx);
            }
            self.now = self.now.max(t);
        }
        self.seq = first + n;
    }

    /// A round of `n` packets, TICK apart, one report, no observer.
    fn round(&mut self, n: u32) {
        self.run(n, TICK, n, |_| OK, |_, _| {});
    }
}

fn cfg() -> MediaConfig {
    MediaConfig::default()
}

/// The §5 rate law from the controller's own cwnd, sRTT and MSS.
fn rate_law(cwnd: u64, srtt: Dur, mss: f64) -> f64 {
    let c = cwnd as f64;
    let rtt = (srtt.as_secs_f64() + 0.001).clamp(0.001, 0.2);
    8.0 * c / rtt * (1.0 - (mss / c - 0.1).clamp(0.0, 0.2)) / 1.1 * mss / (mss + 20.0)
}

#[track_caller]
fn assert_close(got: f64, want: f64, rel: f64) {
    assert!((got - want).abs() <= rel * want.abs(), "got {got}, want {want} (±{rel})");
}

#[test]
fn starts_from_init_rate_window_and_first_target_is_cwnd_over_srtt() {
    let mut h = Harness::new(&cfg(), false, 10, 10);
    assert_eq!(h.tx.state().cwnd, 12_500, "cwnd₀ = initrate[kbps]·100/8");
    assert_eq!(h.tx.target_bitrate(SimTime::ZERO), Some(1e6), "initial target = clamp(init, min, max)");
    h.round(3);
    let s = h.tx.state();
    assert_eq!(s.srtt, SRTT_INIT, "sRTT is still the 50 ms start value at the first feedback");
    let u = h.tx.last_update().expect("the new frame triggers updateCwnd");
    // 3 packets in flight: cwnd₀ + inc > MSS + 2·maxBIF, the growth gate holds.
    assert!(!u.inc_applied && u.increment > 0.0);
    assert_eq!(s.cwnd, 12_500);
    let target = h.tx.target_bitrate(h.now).unwrap();
    let m = f64::from(SIZE);
    assert_close(target, rate_law(s.cwnd, s.srtt, m), 1e-12);
    assert_close(target, 8.0 * 12_500.0 / 0.051 / 1.1 * m / (m + 20.0), 1e-12); // ≈ 1.75 Mbps
    assert!(target > 1.7e6 && target < 1.8e6);
}

#[test]
fn grows_one_mss_per_rtt_then_multiplicatively_after_200_rtts() {
    let mut h = Harness::new(&cfg(), false, 20, 20);
    let mss = f64::from(SIZE);
    for _ in 0..5 {
        let c0 = h.tx.state().cwnd;
        let n = (c0 / u64::from(SIZE)) as u32;
        h.round(n);
        let s = h.tx.state();
        let grew = (s.cwnd - c0) as f64;
        let additive = f64::from(n * SIZE) * mss / c0 as f64;
        // postCong = t/(200·sRTT): the multiplicative term is only phasing in.
        let post = (h.now.as_secs_f64() / (200.0 * s.srtt.as_secs_f64())).min(1.0);
        assert!(post < 0.05);
        let want = additive * (1.0 + 0.05 * c0 as f64 / mss * post);
        assert!((grew - want).abs() <= 1.0, "grew {grew}, want {want}");
        assert!(grew > 0.85 * mss && grew < 1.05 * mss, "≈ 1 MSS per RTT, grew {grew}");
    }
    // Idle past 200 RTTs: the multiplicative term is fully phased in.
    h.now = SimTime::from_secs_f64(12.0);
    let c0 = h.tx.state().cwnd;
    let n = (c0 / u64::from(SIZE)) as u32;
    h.round(n);
    let u = h.tx.last_update().unwrap();
    assert_eq!(u.post_cong, 1.0);
    let grew = (h.tx.state().cwnd - c0) as f64;
    let additive = f64::from(n * SIZE) * mss / c0 as f64;
    let want = additive * (1.0 + 0.05 * c0 as f64 / mss);
    assert_close(grew, want, 0.01);
    assert!(grew > 1.4 * additive, "5 %/RTT term at cwnd ≈ 10 MSS adds ≈ 50 %");
}

#[test]
fn growth_is_capped_by_bytes_in_flight_headroom() {
    let mut h = Harness::new(&cfg(), false, 20, 20);
    // Two packets per RTT: MSS + 2·maxBIF = 1212 + 2·2424 < cwnd₀, no growth.
    for _ in 0..20 {
        h.round(2);
    }
    assert_eq!(h.tx.state().cwnd, 12_500);
    // Twelve packets per RTT: growth stops at MSS + 2·12·1212.
    let cap = u64::from(SIZE) + 2 * 12 * u64::from(SIZE);
    for _ in 0..100 {
        h.round(12);
    }
    let c = h.tx.state().cwnd;
    assert!(c <= cap && c + 2 * u64::from(SIZE) > cap, "cwnd {c}, cap {cap}");
}

#[test]
fn loss_cuts_cwnd_by_beta_once_per_srtt_and_requests_a_refresh() {
    let mut h = Harness::new(&cfg(), false, 40, 40);
    for _ in 0..30 {
        h.round(10); // sRTT converges to ≈ 80 ms
    }
    let srtt = h.tx.state().srtt;
    assert!(srtt > Dur::from_millis(70) && srtt < Dur::from_millis(95), "sRTT {srtt:?}");
    let lost_k = |k: u32| (k % 25) < 6; // 6 consecutive losses per report: lossRate > 1 %
    let mut cuts = Vec::new();
    h.run(75, TICK, 25, |k| if lost_k(k) { Fate::Drop } else { OK }, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::Loss) {
            assert_eq!(u.cwnd_reduced, tx.cwnd_min.max((u.cwnd_before as f64 * 0.7) as u64));
            cuts.push(t);
        }
    });
    // Reports arrive 25 ticks (48.8 ms < sRTT) apart: 1st and 3rd cut, 2nd not.
    assert_eq!(cuts.len(), 2, "{cuts:?}");
    assert!(cuts[1].since(cuts[0]) > srtt);
    assert_eq!(h.tx.state().packets_lost, 18);
    assert_eq!(h.tx.target_bitrate(h.now), None, "refresh once after loss");
    assert!(h.tx.target_bitrate(h.now).is_some());
}

#[test]
fn sporadic_loss_at_low_delay_is_no_congestion_event_but_refreshes() {
    let mut h = Harness::new(&cfg(), false, 20, 20);
    for _ in 0..10 {
        h.round(10);
    }
    h.run(40, TICK, 40, |k| if k == 3 { Fate::Drop } else { OK }, |_, _| {});
    assert_eq!(h.tx.state().packets_lost, 1);
    assert_ne!(h.tx.last_update().unwrap().signal, Some(Signal::Loss));
    assert_eq!(h.tx.target_bitrate(h.now), None);
}

#[test]
fn classic_ce_cuts_by_beta_at_most_every_30ms() {
    let mut h = Harness::new(&cfg(), false, 10, 10);
    let mut cuts: Vec<(SimTime, CwndUpdate)> = Vec::new();
    h.run(80, TICK, 3, |_| CE, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t {
            assert!(u.cwnd_after <= u.cwnd_before, "all packets CE-marked: no growth");
            if u.signal == Some(Signal::ClassicCe) {
                cuts.push((t, u));
            }
        }
    });
    assert!(cuts.len() >= 4, "{}", cuts.len());
    for (_, u) in &cuts {
        assert_eq!(u.cwnd_reduced, 2424u64.max((u.cwnd_before as f64 * 0.7) as u64));
    }
    for w in cuts.windows(2) {
        let gap = w[1].0.since(w[0].0);
        // Feedback every 3 ticks (5.9 ms): a cut on the first one after 30 ms.
        assert!(gap > Dur::from_millis(30) && gap < Dur::from_millis(37), "{gap:?}");
    }
}

#[test]
fn l4s_alpha_gain_selects_the_earlier_symmetric_ewma() {
    // l4s_alpha_gain = 1/32: α ← f/32 + 31α/32 on every update, up and down.
    let mut h = Harness::new(&MediaConfig { l4s_alpha_gain: Some(1.0 / 32.0), ..cfg() }, true, 10, 10);
    let mut alpha = L4S_ALPHA_INIT;
    let gap = TICK * 3;
    h.run(40, gap, 4, |k| if k % 4 == 0 { CE } else { OK }, |_, tx| {
        alpha = 0.25 / 32.0 + 31.0 * alpha / 32.0;
        assert_close(tx.state().alpha, alpha, 1e-12);
    });
    h.run(20, gap, 4, |_| OK, |_, tx| {
        alpha *= 31.0 / 32.0;
        assert_close(tx.state().alpha, alpha, 1e-12);
    });
}

#[test]
fn l4s_alpha_follows_marked_fraction_and_backoff_is_half_alpha() {
    let mut h = Harness::new(&cfg(), true, 10, 10);
    let mut alpha = L4S_ALPHA_INIT;
    let mut first_cut = None;
    // One CE in four packets, a report per 4 packets (23 ms apart > 10 ms).
    let gap = TICK * 3;
    h.run(40, gap, 4, |k| if k % 4 == 0 { CE } else { OK }, |t, tx| {
        alpha = if 0.25 >= alpha { 0.25 / 8.0 + 7.0 * alpha / 8.0 } else { alpha * 127.0 / 128.0 };
        assert_close(tx.state().alpha, alpha, 1e-12);
        assert_eq!(tx.state().ce_fraction, 0.25);
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::L4sCe) && first_cut.is_none() {
            first_cut = Some((u, tx.state().srtt, alpha));
        }
    });
    let (u, srtt, alpha_then) = first_cut.expect("an L4S backoff");
    assert!(!u.undershoot && u.scl_i == 1.0);
    let rtt_scale = (srtt.as_secs_f64() / 0.03).max(1.0);
    assert!(rtt_scale > 1.0, "sRTT starts at 50 ms: ÷rttScale is exercised");
    assert_close(u.alpha, alpha_then, 1e-12);
    let b = u.alpha / 2.0 / rtt_scale;
    assert_eq!(u.cwnd_reduced, (u.cwnd_before as f64 * (1.0 - b)) as u64);
    // No marks: slow decay ×127/128 per update.
    h.run(40, gap, 4, |_| OK, |_, tx| {
        alpha *= 127.0 / 128.0;
        assert_close(tx.state().alpha, alpha, 1e-12);
    });
}

#[test]
fn l4s_backoff_is_divided_by_rtt_scale_on_long_paths() {
    let mut h = Harness::new(&cfg(), true, 40, 40);
    for _ in 0..30 {
        h.round(10);
    }
    let mut cut = None;
    h.run(24, TICK * 3, 8, |k| if k % 2 == 0 { CE } else { OK }, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::L4sCe) && cut.is_none() {
            cut = Some((u, tx.state()));
        }
    });
    let (u, s) = cut.expect("an L4S backoff");
    let rtt_scale = s.srtt.as_secs_f64() / 0.03;
    assert!(rtt_scale > 2.3, "sRTT ≈ 80 ms");
    assert_close(u.rtt_scale, rtt_scale, 1e-12);
    let b = u.alpha / 2.0 * if u.undershoot { 0.25 } else { 1.0 } / rtt_scale;
    assert_eq!(u.cwnd_reduced, (u.cwnd_before as f64 * (1.0 - b)) as u64);
}

/// Runs 80 packets with queue delay `q` (after 5 unqueued ones that set the
/// base OWD) and returns the virtual-CE updates.
fn virtual_ce_cuts(q: Dur) -> (Vec<CwndUpdate>, bool) {
    let mut h = Harness::new(&cfg(), false, 10, 10);
    let mut cuts = Vec::new();
    let mut shrank = false;
    let fate = move |k: u32| Fate::Arrive { queue: if k < 5 { Dur::ZERO } else { q }, ecn: Ecn::Ect0 };
    h.run(80, TICK * 4, 3, fate, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t {
            shrank |= u.cwnd_reduced < u.cwnd_before;
            if u.signal == Some(Signal::VirtualCe) {
                cuts.push(u);
            }
        }
    });
    (cuts, shrank)
}

#[test]
fn virtual_ce_backs_off_above_half_the_delay_target() {
    let (cuts, _) = virtual_ce_cuts(TICK * 23); // 44.9 ms > T/2 = 30 ms
    assert!(!cuts.is_empty());
    for u in &cuts {
        let qavg = u.qdelay_avg.as_secs_f64();
        assert!(qavg > 0.030, "virtual CE only above T/2: {qavg}");
        let alpha_v = ((qavg - 0.030) / 0.030).clamp(0.0, 1.0) / u.rtt_scale;
        assert_close(u.alpha, alpha_v, 1e-6);
        let b = alpha_v / 2.0 * if u.undershoot { 0.25 } else { 1.0 } / u.rtt_scale;
        assert_eq!(u.cwnd_reduced, 2424u64.max((u.cwnd_before as f64 * (1.0 - b)) as u64));
    }
    let (cuts, shrank) = virtual_ce_cuts(TICK * 12); // 23.4 ms < T/2
    assert!(cuts.is_empty() && !shrank, "no backoff below T/2");
}

#[test]
fn target_is_clamped_to_min_and_max_rate() {
    let mut c = cfg();
    c.max_rate = Rate(1_200_000);
    let mut h = Harness::new(&c, false, 10, 10);
    h.round(3);
    assert_eq!(h.tx.target_bitrate(h.now), Some(1.2e6));
    // A 300 ms path: R = 8·12500/0.2 s/1.1 ≈ 0.45 Mbps < min 1 Mbps.
    let mut h = Harness::new(&cfg(), false, 150, 150);
    for _ in 0..15 {
        h.round(2);
    }
    let s = h.tx.state();
    assert!(rate_law(s.cwnd, s.srtt, f64::from(SIZE)) < 0.5e6);
    assert_eq!(h.tx.target_bitrate(h.now), Some(1e6));
}

#[test]
fn small_window_penalty_and_raf_lower_the_target() {
    let mut c = cfg();
    c.init_rate = Rate(500_000);
    c.min_rate = Rate(100_000);
    let mut h = Harness::new(&c, false, 10, 10);
    h.round(2);
    let s = h.tx.state();
    let r = rate_law(s.cwnd, s.srtt, f64::from(SIZE));
    assert!(f64::from(SIZE) / s.cwnd as f64 > 0.1, "penalty active");
    assert_close(h.tx.target_bitrate(h.now).unwrap(), r, 1e-12);
    // RTP-queue delay 60 ms at a 20 ms frame period: raf += 0.2·(0.06 − 0.01)/0.02/8.
    // The harness frame was at t = 0; framePeriod = 0.9·newest + 0.1·old.
    let (mut fp, mut raf, mut last) = (0.02f64, 0.0f64, 0.0f64);
    for t_ms in [40u64, 60, 80, 100] {
        h.tx.on_new_frame(SimTime::from_secs_f64(t_ms as f64 / 1e3), 0, 0, Dur::from_millis(60));
        fp = 0.9 * (t_ms as f64 / 1e3 - last) + 0.1 * fp;
        last = t_ms as f64 / 1e3;
        raf = (raf + 0.2 * (0.06 - fp / 2.0) / fp / 8.0).clamp(0.0, 0.5);
    }
    assert!(raf > 0.15);
    assert_close(h.tx.target_bitrate(h.now).unwrap(), r / (1.0 + raf), 1e-9);
}

#[test]
fn send_gate_allows_cwnd_times_window_headroom_plus_mss() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    let mut n = 0;
    while tx.ok_to_transmit(SIZE) {
        tx.on_transmit(SimTime::ZERO, n, SIZE, 0, false);
        n += 1;
    }
    // bytesInFlight + size ≤ 12500·5 + 1212.
    assert_eq!(n, (12_500 * 5 + SIZE) / SIZE);
    // Nothing sent for 0.5 s: the deadlock guard clears the flight.
    tx.on_new_frame(SimTime::from_secs_f64(0.6), 2500, 2500, Dur::ZERO);
    assert_eq!(tx.state().bytes_in_flight, 0);
    assert!(tx.ok_to_transmit(SIZE));
}

#[test]
fn pacing_rate_is_headroom_times_target_with_adaptive_scale_and_floor() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    assert_eq!(tx.pacing_rate_bps(), 1.5e6);
    // Nominal frame = 1 Mbps · 20 ms / 8 = 2500 B; a 3× frame caps at 1.5.
    tx.on_new_frame(SimTime::ZERO, 7500, 7500, Dur::ZERO);
    assert_eq!(tx.pacing_rate_bps(), 2.25e6);
    tx.on_new_frame(SimTime(20_000_000), 3000, 3000, Dur::ZERO);
    assert_close(tx.pacing_rate_bps(), 1.5e6 * 1.2, 1e-12);
    let mut c = cfg();
    (c.init_rate, c.min_rate) = (Rate(10_000), Rate(10_000));
    assert_eq!(ScreamTx::new(&c, false, SimTime::ZERO).pacing_rate_bps(), 50e3);
    c.pacing = false;
    assert_eq!(ScreamTx::new(&c, false, SimTime::ZERO).pacing_rate_bps(), 0.0);
}

#[test]
fn rtp_queue_discard_requests_one_refresh() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_rtp_queue_discard(SimTime::ZERO);
    assert_eq!(tx.target_bitrate(SimTime::ZERO), None);
    assert_eq!(tx.target_bitrate(SimTime::ZERO), Some(1e6));
}

fn scripted_trace(l4s: bool) -> Vec<(u64, u64, u64, u64, u64, u64)> {
    scripted_trace_of(&cfg(), l4s)
}

fn scripted_trace_of(c: &MediaConfig, l4s: bool) -> Vec<(u64, u64, u64, u64, u64, u64)> {
    let mut h = Harness::new(c, l4s, 15, 15);
    let mut out = Vec::new();
    for r in 0..40u32 {
        let fate = move |k: u32| match (r + k) % 17 {
            0 => Fate::Drop,
            1 | 2 => Fate::Arrive { queue: TICK * u64::from(r % 20), ecn: Ecn::Ce },
            _ => Fate::Arrive { queue: TICK * u64::from(r % 20), ecn: Ecn::Ect1 },
        };
        h.run(20, TICK * 2, 5, fate, |t, tx| {
            let s = tx.state();
            let target = tx.target_bitrate(t).map_or(0, f64::to_bits);
            out.push((s.cwnd, s.bytes_in_flight, s.srtt.0, s.qdelay.0, s.alpha.to_bits(), target));
        });
    }
    out
}

#[test]
fn same_inputs_give_the_same_trajectory() {
    for l4s in [false, true] {
        let a = scripted_trace(l4s);
        assert_eq!(a, scripted_trace(l4s));
        assert!(a.iter().any(|x| x.0 != a[0].0), "the script moves cwnd");
        for v in [ScreamVersion::V2024_10_31, ScreamVersion::V2024_10_28] {
            let b = scripted_trace_of(&cfg_v(v), l4s);
            assert_eq!(b, scripted_trace_of(&cfg_v(v), l4s));
            assert_ne!(a, b, "{v:?} follows its own law");
        }
    }
}

// ---- media.version = "2024-10" / "2024-10-28" (version.rs): each law that
// differs from HEAD, checked against the 2024 code's formula and against
// HEAD's where the two must differ.

fn cfg_v(v: ScreamVersion) -> MediaConfig {
    MediaConfig { version: v, ..cfg() }
}
use crate::media::ScreamVersion;
const V24: ScreamVersion = ScreamVersion::V2024_10_31;
const V28: ScreamVersion = ScreamVersion::V2024_10_28;

#[test]
fn v2024_send_gate_is_one_and_a_half_cwnd_plus_mss() {
    let count = |v| {
        let mut tx = ScreamTx::new(&cfg_v(v), false, SimTime::ZERO);
        let mut n = 0;
        while tx.ok_to_transmit(SIZE) {
            tx.on_transmit(SimTime::ZERO, n, SIZE, 0, false);
            n += 1;
        }
        n
    };
    // kCwndOverhead = 1.5 (ScreamV2Tx.cpp:66, 426): 12500·1.5 + 1212.
    assert_eq!(count(V24), (12_500 * 3 / 2 + SIZE) / SIZE);
    assert_eq!(count(ScreamVersion::Head), (12_500 * 5 + SIZE) / SIZE);
}

/// First L4S cut on an 80 ms path after 30 clean rounds.
fn first_l4s_cut(v: ScreamVersion) -> (CwndUpdate, ScreamState) {
    let mut h = Harness::new(&cfg_v(v), true, 40, 40);
    for _ in 0..30 {
        h.round(10);
    }
    let mut cut = None;
    h.run(24, TICK * 3, 8, |k| if k % 2 == 0 { CE } else { OK }, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::L4sCe) && cut.is_none() {
            cut = Some((u, tx.state()));
        }
    });
    cut.expect("an L4S backoff")
}

#[test]
fn v2024_l4s_backoff_is_half_alpha_times_small_window_factor_without_rtt_scale() {
    let (u, s) = first_l4s_cut(V24);
    assert!(s.srtt > Dur::from_millis(60), "long path: HEAD would divide by rttScale");
    assert!(h_time_below_reanchor(u.at));
    let mss = f64::from(SIZE);
    // α/2 · max(0.5, 1 − MSS/cwnd), · max(0.25, sclI) as qdelay = 0 < T/4.
    let b = u.alpha / 2.0 * (1.0 - mss / u.cwnd_before as f64).max(0.5) * u.scl_i.max(0.25);
    assert_eq!(u.cwnd_reduced, (u.cwnd_before as f64 * (1.0 - b)) as u64);
    // HEAD's law (÷ rttScale ≈ 2.5, no small-window factor) would cut less.
    assert!(u.rtt_scale > 2.0);
    let head_law = (u.cwnd_before as f64 * (1.0 - u.alpha / 2.0 / u.rtt_scale)) as u64;
    assert!(u.cwnd_reduced + 100 < head_law, "{} vs {head_law}", u.cwnd_reduced);
    // And HEAD itself follows its own law on the same path.
    let (uh, _) = first_l4s_cut(ScreamVersion::Head);
    let bh = uh.alpha / 2.0 * if uh.undershoot { 0.25 } else { 1.0 } / uh.rtt_scale;
    assert_eq!(uh.cwnd_reduced, (uh.cwnd_before as f64 * (1.0 - bh)) as u64);
}

fn h_time_below_reanchor(t: SimTime) -> bool {
    t < SimTime::from_secs_f64(5.0)
}

#[test]
fn v2024_reanchors_after_5s_without_congestion_with_quarter_floors() {
    let mut h = Harness::new(&cfg_v(V24), true, 10, 10);
    while h.now < SimTime::from_secs_f64(5.5) {
        h.round(10);
    }
    let max_bif_prev = h.tx.max_bif_prev;
    assert!(max_bif_prev > 0);
    let mut cut = None;
    h.run(8, TICK * 3, 8, |k| if k % 2 == 0 { CE } else { OK }, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::L4sCe) && cut.is_none() {
            cut = Some(u);
        }
    });
    let u = cut.expect("an L4S backoff");
    // α (≈ 0.11 after one update) is raised to 0.25 and the backoff to ≥ 0.25,
    // applied to min(cwnd, maxBytesInFlightPrev) (ScreamV2Tx.cpp:1585-1609).
    assert_eq!(u.alpha, 0.25);
    let anchored = u.cwnd_before.min(max_bif_prev);
    assert_eq!(u.cwnd_reduced, h.tx.cwnd_min.max((anchored as f64 * 0.75) as u64));
}

#[test]
fn v2024_multiplicative_increase_phases_in_over_4s_not_200_rtts() {
    for v in [V24, ScreamVersion::Head] {
        let mut h = Harness::new(&cfg_v(v), false, 10, 10);
        while h.now < SimTime::from_secs_f64(1.0) {
            h.round(10);
        }
        let u = h.tx.last_update().unwrap();
        let t = u.at.as_secs_f64();
        let want = if v == V24 { t / 4.0 } else { (t / (200.0 * h.tx.state().srtt.as_secs_f64())).min(1.0) };
        assert_close(u.post_cong, want, 1e-9);
    }
}

#[test]
fn v2024_increase_damps_small_windows_and_has_no_max_rate_gate() {
    let mut c = cfg_v(V24);
    c.max_rate = Rate(1_200_000); // target sits at max
    let mut h = Harness::new(&c, false, 10, 10);
    let mss = f64::from(SIZE);
    for _ in 0..5 {
        h.round(10);
    }
    h.round(10);
    let u = h.tx.last_update().unwrap();
    // cwnd after the 50 ms slow update (near-max cap), as the code reads it.
    let c0 = u.cwnd_before;
    assert!(u.signal.is_none() && u.scl_i == 1.0 && !h.tx.l4s_active);
    let srtt = h.tx.state().srtt.as_secs_f64();
    let ratio = mss / c0 as f64;
    // acked·MSS/cwnd · sclI · min(1, sRTT/25 ms) · max(0.5, 1 − MSS/cwnd)
    // · (1 + 0.05·cwnd/MSS · t/4 s · sclI) (ScreamV2Tx.cpp:1651-1691).
    let want = 10.0 * mss * ratio * (srtt / 0.025).min(1.0) * (1.0 - ratio).max(0.5)
        * (1.0 + 0.05 * c0 as f64 / mss * (u.at.as_secs_f64() / 4.0) * u.scl_i);
    assert_close(u.increment, want, 1e-9);
    assert!(h.tx.target >= h.tx.max_rate);
    assert!(u.inc_applied, "2024: the only gate is the max-allowed window");
    // HEAD: target at max rate stops growth.
    let mut c = cfg();
    c.max_rate = Rate(1_200_000);
    let mut h = Harness::new(&c, false, 10, 10);
    for _ in 0..6 {
        h.round(10);
    }
    assert!(!h.tx.last_update().unwrap().inc_applied);
}

#[test]
fn v2024_target_is_cwnd_rate_without_headroom_or_raf_but_with_flight_ratio() {
    let mut h = Harness::new(&cfg_v(V24), false, 10, 10);
    for _ in 0..20 {
        h.round(10);
    }
    let u = h.tx.last_update().unwrap();
    let s = h.tx.state();
    let mss = f64::from(SIZE);
    // All 10 packets were in flight when the report came.
    let bif_ratio = (10.0 * mss / u.cwnd_before as f64).min(1.0);
    let rtt = (s.srtt.as_secs_f64() + 0.001).clamp(0.001, 0.2);
    let mut r = 8.0 * u.cwnd_after as f64 / rtt;
    if bif_ratio > 0.9 {
        r /= (bif_ratio / 0.9).min(1.5);
    }
    r *= 1.0 - (mss / u.cwnd_reduced as f64 - 0.1).clamp(0.0, 0.2);
    r *= mss / (mss + 20.0);
    assert_close(h.tx.target, r, 1e-9);
    // A 60 ms RTP queue raises raf in HEAD; the 2024 target ignores it.
    let before = h.tx.target;
    for k in 1..=4u64 {
        h.tx.on_new_frame(h.now + Dur::from_millis(20 * k), 0, 0, Dur::from_millis(60));
    }
    assert!(h.tx.raf > 0.1);
    assert_eq!(h.tx.target, before);
}

#[test]
fn v2024_srtt_is_a_plain_ewma_even_when_application_limited() {
    let srtt_after_drop = |v| {
        let mut h = Harness::new(&cfg_v(v), false, 50, 50);
        for _ in 0..30 {
            h.round(2); // 2 packets per RTT: application-limited
        }
        h.owd = Dur::from_millis(5);
        h.fb_delay = Dur::from_millis(5);
        for _ in 0..40 {
            h.round(2);
        }
        h.tx.state().srtt
    };
    let (v24, head) = (srtt_after_drop(V24), srtt_after_drop(ScreamVersion::Head));
    assert!(v24 < Dur::from_millis(20), "2024 follows the RTT down: {v24:?}");
    assert!(head > Dur::from_millis(80), "HEAD's 1/1024 filter barely moves: {head:?}");
}

#[test]
fn v2024_scl_i_has_gain_4_and_cwnd_i_is_the_median_of_9() {
    let mut tx = ScreamTx::new(&cfg_v(V24), false, SimTime::ZERO);
    (tx.cwnd, tx.cwnd_i) = (11_000, 10_000);
    assert_close(tx.scl_i(), (4.0f64 * 0.1).powi(2), 1e-12);
    let mut th = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    (th.cwnd, th.cwnd_i) = (11_000, 10_000);
    assert_close(th.scl_i(), (8.0f64 * 0.1).powi(2), 1e-12);
    // updateCwndI: the first call fills the history, then a running median.
    for (c, want) in [(20_000, 20_000), (50_000, 20_000), (1_000, 20_000), (30_000, 20_000)] {
        tx.cwnd = c;
        tx.update_cwnd_i();
        assert_eq!(tx.cwnd_i, want);
    }
    for c in [30_000, 30_000, 30_000, 30_000, 30_000] {
        tx.cwnd = c;
        tx.update_cwnd_i();
    }
    // History now 50k, 1k, 30k ×7 (the first 20k fills were overwritten).
    assert_eq!(tx.cwnd_i, 30_000);
    th.cwnd = 1_000;
    th.update_cwnd_i();
    assert_eq!(th.cwnd_i, 1_000, "HEAD: the last window");
}

#[test]
fn v2024_virtual_ce_only_while_l4s_is_inactive_with_the_2024_alpha() {
    let now = SimTime::from_secs_f64(1.0);
    let fresh = |v| {
        let mut tx = ScreamTx::new(&cfg_v(v), true, SimTime::ZERO);
        (tx.alpha, tx.qdelay_avg_s, tx.srtt, tx.mss) = (0.5, 0.040, Dur::from_millis(20), SIZE);
        tx
    };
    let mut tx = fresh(V24);
    tx.l4s_active = true;
    tx.virtual_ce_2024(now, Dur::from_millis(20));
    assert!(!tx.virtual_ce_event, "L4S active and α ≫ αlim: no virtual CE");
    tx.l4s_active = false;
    tx.virtual_ce_2024(now, Dur::from_millis(20));
    assert!(tx.virtual_ce_event);
    let alpha_lim = 2.0 / tx.target * f64::from(SIZE) * 8.0 / 0.020;
    assert_close(tx.alpha_v, (alpha_lim + (0.040 - 0.015) / 0.045).min(1.0), 1e-12);
    // Threshold T/2 (76a298a) vs T/4 (994f9a4) of queueDelayAvg.
    for (v, fires) in [(V24, false), (V28, true)] {
        let mut tx = fresh(v);
        tx.qdelay_avg_s = 0.020; // between T/4 = 15 ms and T/2 = 30 ms
        tx.virtual_ce_2024(now, Dur::from_millis(20));
        assert_eq!(tx.virtual_ce_event, fires, "{v:?}");
    }
}

#[test]
fn v2024_virtual_ce_backs_off_half_alpha_v_without_rtt_scale() {
    let mut h = Harness::new(&cfg_v(V24), false, 10, 10);
    let mut cuts = Vec::new();
    let fate = |k: u32| Fate::Arrive { queue: if k < 5 { Dur::ZERO } else { TICK * 23 }, ecn: Ecn::Ect0 };
    h.run(80, TICK * 4, 3, fate, |t, tx| {
        let u = tx.last_update().unwrap();
        if u.at == t && u.signal == Some(Signal::VirtualCe) {
            cuts.push(u);
        }
    });
    assert!(!cuts.is_empty());
    for u in &cuts {
        let qavg = u.qdelay_avg.as_secs_f64();
        assert!(qavg > 0.030);
        assert!(u.alpha >= ((qavg - 0.015) / 0.045).min(1.0) - 1e-9);
        assert_eq!(u.cwnd_reduced, h.tx.cwnd_min.max((u.cwnd_before as f64 * (1.0 - u.alpha / 2.0)) as u64));
    }
}

#[test]
fn v2024_alpha_is_the_symmetric_1_32_ewma_and_the_gain_key_still_overrides() {
    let mut h = Harness::new(&cfg_v(V24), true, 10, 10);
    let mut alpha = L4S_ALPHA_INIT;
    h.run(40, TICK * 3, 4, |k| if k % 4 == 0 { CE } else { OK }, |_, tx| {
        alpha = 0.25 / 32.0 + 31.0 * alpha / 32.0;
        assert_close(tx.state().alpha, alpha, 1e-12);
    });
    let c = MediaConfig { l4s_alpha_gain: Some(0.5), ..cfg_v(V24) };
    assert_eq!(c.version_params().alpha_filter, version::AlphaFilter::Symmetric(0.5));
}

#[test]
fn v2024_10_28_increase_is_not_scaled_while_l4s_is_active() {
    // Same state, L4S active, cwnd near cwndI (sclI small): 76a298a scales
    // by max(0.25, sclI), 994f9a4 not at all.
    let inc = |v| {
        let mut h = Harness::new(&cfg_v(v), true, 10, 10);
        for _ in 0..5 {
            h.round(10);
        }
        (h.tx.cwnd_i, h.tx.l4s_active, h.tx.last_congestion) = (h.tx.cwnd, true, h.now);
        h.round(10);
        h.tx.last_update().unwrap()
    };
    let (a, b) = (inc(V24), inc(V28));
    assert!(a.scl_i < 0.25 && b.scl_i < 0.25, "{} {}", a.scl_i, b.scl_i);
    // Both phase-in terms are ≈ 1 (t since congestion ≈ one round ≪ 4 s).
    assert_close(a.increment / b.increment, 0.25, 0.02);
}

#[test]
fn v2024_base_delay_reset_also_runs_while_l4s_is_inactive() {
    // getTargetBitrate at 76a298a (:1097): `!isL4sActive || queueDelayMinAvg
    // > T/8` halves the target for max(100 ms, 5 sRTT) once per 60 s.
    let t = SimTime::from_secs_f64(61.0);
    let target = |v, active| {
        let mut tx = ScreamTx::new(&cfg_v(v), true, SimTime::ZERO);
        tx.l4s_active = active;
        (tx.target_bitrate(t).unwrap(), tx.target_h)
    };
    let (r, th) = target(V24, false);
    assert_eq!(r, th / 2.0, "2024, L4S inactive: halved");
    let (r, th) = target(V24, true);
    assert_eq!(r, th, "2024, L4S active and no standing queue: not halved");
    let (r, th) = target(ScreamVersion::Head, false);
    assert_eq!(r, th, "HEAD: only a standing queue above T/8 triggers it");
}

/// The sent-packet lookup finds every kept packet, with consecutive numbers
/// and across gaps, and nothing below the oldest, in a gap or past the newest.
#[test]
fn sent_packets_are_found_by_sequence_number_across_gaps() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    assert_eq!(tx.find(0), None, "nothing sent");
    let seqs = [10u32, 11, 12, 15, 16, 40, 41];
    for &s in &seqs {
        tx.on_transmit(SimTime::ZERO, s, 1000, 0, false);
    }
    for (ix, &s) in seqs.iter().enumerate() {
        assert_eq!(tx.find(s), Some(ix), "seq {s}");
    }
    for s in [0, 9, 13, 14, 17, 39, 42, 1000] {
        assert_eq!(tx.find(s), None, "seq {s}");
    }
}

/// `m` milliseconds into the run.
fn ms(m: u64) -> SimTime {
    SimTime(m * 1_000_000)
}

/// A report of `n` packets from `first`, all received at `at` with `ecn`.
fn report_of(first: u32, n: u32, at: SimTime, ecn: Ecn) -> Report {
    let mut r = Report { report_time: at, begin_seq: first, num: n as u16, ..Default::default() };
    for i in 0..n as usize {
        r.received |= 1 << i;
        r.ecn[i] = ecn;
        r.ato[i] = 0;
    }
    r
}

/// RFC 8888 reports repeat what earlier ones said: a packet counts as
/// delivered (and CE-marked) once, however often it is reported.
#[test]
fn each_packet_is_counted_once_however_often_reported() {
    // Not L4S: the α update would consume the counts.
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    for s in 0..5 {
        tx.on_transmit(SimTime(s * 1_000_000), s as u32, SIZE, 0, false);
    }
    // Seq 0 not (yet) received: it keeps 1–4 in the sent list.
    let r = report_of(1, 4, SimTime(20_000_000), Ecn::Ce);
    tx.on_feedback(SimTime(30_000_000), &r);
    assert_eq!((tx.pkts_delivered, tx.pkts_marked, tx.packets_lost), (4, 4, 0));
    assert_eq!(tx.pkts.len(), 5);
    tx.on_feedback(SimTime(40_000_000), &r);
    assert_eq!((tx.pkts_delivered, tx.pkts_marked, tx.packets_lost), (4, 4, 0));
}

/// The loss-rate EWMA decays by (1 − α) for each packet acknowledged, α =
/// min(0.0025, MSS / cwnd / 2) taken when the feedback arrives.
#[test]
fn loss_rate_decays_by_alpha_per_acked_packet() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    for s in 0..5 {
        tx.on_transmit(SimTime(s * 1_000_000), s as u32, SIZE, 0, false);
    }
    tx.loss_rate = 0.5;
    let a = tx.loss_alpha();
    assert!(a > 0.0 && a <= 0.0025);
    tx.on_feedback(SimTime(30_000_000), &report_of(0, 5, SimTime(20_000_000), Ecn::Ect0));
    assert_close(tx.loss_rate, 0.5 * (1.0 - a).powi(5), 1e-12);
}

/// cwndMin = max(cwndMinLow, 2 · MSS), MSS the largest packet seen; cwnd
/// never below it.
#[test]
fn cwnd_min_is_twice_the_largest_packet() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    let low = 2 * (1200 + 12);
    assert_eq!(tx.cwnd_min_low, low);
    tx.on_transmit(SimTime::ZERO, 0, 1000, 0, false);
    assert_eq!(tx.cwnd_min, low.max(2 * u64::from(tx.mss())));
    tx.cwnd = 1000;
    tx.on_transmit(SimTime::ZERO, 1, 1500, 0, false);
    assert_eq!(tx.mss(), 1500);
    assert_eq!((tx.cwnd_min, tx.cwnd), (3000, 3000));
}

/// L4S counts as active for 5 s after a CE congestion event (`isL4sActive`),
/// and only for an L4S flow.
#[test]
fn l4s_is_active_for_5_s_after_a_ce_event() {
    for l4s in [true, false] {
        let mut tx = ScreamTx::new(&cfg(), l4s, SimTime::ZERO);
        tx.on_transmit(ms(0), 0, SIZE, 0, false);
        tx.on_feedback(ms(100), &report_of(0, 1, ms(90), Ecn::Ce));
        assert_eq!(tx.l4s_active, l4s, "right after the CE event (l4s {l4s})");
        tx.on_transmit(ms(4_000), 1, SIZE, 0, false);
        tx.on_feedback(ms(4_050), &report_of(1, 1, ms(4_040), Ecn::Ect1));
        assert_eq!(tx.l4s_active, l4s, "4.95 s after it");
        tx.on_transmit(ms(5_090), 2, SIZE, 0, false);
        tx.on_feedback(ms(5_150), &report_of(2, 1, ms(5_140), Ecn::Ect1));
        assert!(!tx.l4s_active, "5.05 s after it");
    }
}

/// Relaxed pacing (`enableRelaxedPacing`): above 80 % of the max rate the
/// pacing rate is divided by 1 − (target/max − 0.8)/0.2, by at most 1/5.
#[test]
fn relaxed_pacing_opens_up_near_the_max_rate() {
    let mut c = cfg();
    c.relaxed_pacing = true;
    let mut tx = ScreamTx::new(&c, false, SimTime::ZERO);
    let max = tx.max_rate;
    for (frac, factor) in [(0.5, 1.0), (0.8, 1.0), (0.9, 2.0), (0.95, 4.0), (0.99, 5.0), (1.0, 5.0)] {
        tx.target = frac * max;
        let plain = (tx.pace_headroom * tx.adapt_scale * tx.target.max(tx.rate_rtp_avg)).max(50e3);
        assert_close(tx.pacing_rate_bps(), plain * factor, 1e-9);
    }
}

/// α of the loss-rate EWMA: 0.0025, or MSS / cwnd / 2 once cwnd is above
/// 200 MSS.
#[test]
fn loss_alpha_shrinks_with_large_windows() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_transmit(SimTime::ZERO, 0, SIZE, 0, false);
    tx.cwnd = 100_000;
    assert_eq!(tx.loss_alpha(), 0.0025);
    tx.cwnd = 1_000_000;
    assert_close(tx.loss_alpha(), f64::from(SIZE) / 1e6 / 2.0, 1e-12);
}

/// The rate estimators every 100 ms: sent bits per interval into a ½ EWMA,
/// acknowledged bits as they are, and the RTP-queue input rate as the mean
/// of the last 4 intervals (a ring).
#[test]
fn rate_estimators_run_every_100_ms() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_new_frame(ms(0), 10_000, 10_000, Dur::ZERO);
    for s in 0..5 {
        tx.on_transmit(ms(s), s as u32, 1000, 0, false);
    }
    tx.on_feedback(ms(50), &report_of(0, 5, ms(40), Ecn::Ect0));
    tx.tick(ms(100));
    assert_close(tx.rate_tx_avg, 0.5 * 400e3, 1e-12);
    assert_close(tx.rate_acked, 400e3, 1e-12);
    assert_close(tx.rate_rtp_avg, 800e3 / 4.0, 1e-12);
    tx.on_new_frame(ms(110), 10_000, 10_000, Dur::ZERO);
    tx.on_transmit(ms(120), 5, 1000, 0, false);
    tx.on_transmit(ms(121), 6, 1000, 0, false);
    tx.tick(ms(200));
    assert_close(tx.rate_tx_avg, 0.5 * 200e3 + 0.5 * 160e3, 1e-12);
    assert_close(tx.rate_acked, 0.0, 1e-12);
    assert_close(tx.rate_rtp_avg, 2.0 * 800e3 / 4.0, 1e-12);
    for k in 3..=6 {
        tx.on_new_frame(ms(100 * k - 90), 10_000, 10_000, Dur::ZERO);
        tx.tick(ms(100 * k));
        assert_close(tx.rate_rtp_avg, 800e3 * (k.min(4) as f64) / 4.0, 1e-12);
    }
}

/// The MSS estimate is reset every second: `getMss` keeps the previous
/// second's largest packet, so one large packet counts for 1–2 s; the
/// reset sets cwndMin to max(cwndMinLow, 3 · MSS).
#[test]
fn mss_estimate_is_reset_every_second() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_transmit(ms(0), 0, 1500, 0, false);
    assert_eq!(tx.mss(), 1500);
    tx.on_transmit(ms(1_050), 1, 1000, 0, false);
    assert_eq!(tx.mss(), 1500, "the previous second's");
    tx.on_transmit(ms(2_100), 2, 1000, 0, false);
    assert_eq!(tx.mss(), 1000);
    tx.tick(ms(3_150));
    assert_eq!((tx.mss(), tx.cwnd_min), (1000, 3000));
    assert!(tx.cwnd >= 3000);
}

/// HEAD's sRTT, application-limited with the RTT falling, moves 1/1024 of
/// the way to sRttSh per update (the code's slow filter).
#[test]
fn app_limited_srtt_follows_a_falling_rtt_by_1_1024() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    assert!(tx.v.srtt_app_limited_slow);
    (tx.srtt, tx.srtt_sh, tx.cwnd, tx.max_bif, tx.max_bif_prev) =
        (Dur::from_millis(100), Dur::from_millis(10), 100_000, 1000, 1000);
    tx.on_rtt(SimTime(1_000_000_000), Dur::from_millis(10));
    assert_eq!(tx.srtt_sh, Dur::from_millis(10));
    assert_eq!(tx.srtt, Dur((100_000_000 * 1023 + 10_000_000) / 1024));
}

/// The base one-way delay is the minimum over 50 slots of 10 s: a low OWD
/// seen once sets the base for 500 s, then is forgotten.
#[test]
fn base_owd_is_remembered_for_50_slots_of_10_s() {
    let s = |k: u64| SimTime(k * 10_000_000_000);
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_owd(s(0), 10_000_000);
    for k in 1..=50 {
        tx.on_owd(s(k), 30_000_000);
        assert_eq!(tx.qdelay, Dur::from_millis(20), "slot {k}");
    }
    tx.on_owd(s(51), 30_000_000);
    assert_eq!(tx.qdelay, Dur::ZERO);
}

/// detectLoss: an unACKed packet is lost once sent more than reorderTime
/// (30 ms) plus its frame's age in RTP time (90 kHz) before the most
/// recently ACKed one; a packet of a frame 1 s older in RTP time is not
/// lost 100 ms of sending time later, one of the same frame is.
#[test]
fn loss_detection_allows_for_the_rtp_time_between_frames() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    tx.on_transmit(ms(0), 0, SIZE, 0, false);
    tx.on_transmit(ms(100), 1, SIZE, 90_000, false);
    tx.on_feedback(ms(150), &report_of(1, 1, ms(140), Ecn::Ect0));
    assert_eq!(tx.packets_lost, 0);
    tx.on_transmit(ms(300), 2, SIZE, 180_000, false);
    tx.on_transmit(ms(341), 3, SIZE, 180_000, false);
    tx.on_feedback(ms(400), &report_of(3, 1, ms(390), Ecn::Ect0));
    assert_eq!(tx.packets_lost, 1);
    assert!(tx.pkts.iter().find(|p| p.seq == 2).unwrap().lost);
    assert!(!tx.pkts.iter().find(|p| p.seq == 0).is_some_and(|p| p.lost));
}

/// A loss is a congestion event only with lossRate > 1 % or qdelayAvg
/// strictly above T/4: at exactly T/4 a sporadic loss is not, just above it is.
#[test]
fn sporadic_loss_needs_qdelay_strictly_above_a_quarter_of_the_target() {
    for (above, event) in [(0.0, false), (1e-9, true)] {
        let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
        tx.on_transmit(ms(0), 0, SIZE, 0, false);
        tx.on_transmit(ms(100), 1, SIZE, 0, false);
        tx.qdelay_avg_s = tx.delay_target.as_secs_f64() / 4.0 + above;
        tx.on_feedback(ms(150), &report_of(1, 1, ms(140), Ecn::Ect0));
        assert_eq!(tx.packets_lost, 1);
        assert!(tx.loss_rate < 0.01);
        let seen = tx.loss_event || tx.last_update().is_some_and(|u| u.signal == Some(Signal::Loss));
        assert_eq!(seen, event, "qdelayAvg T/4 + {above}");
    }
}

/// α is updated at most once per min(10 ms, sRTT): a feedback exactly
/// 10 ms after the last update leaves it, one a nanosecond later moves it.
#[test]
fn l4s_alpha_updates_strictly_after_its_interval() {
    let mut tx = ScreamTx::new(&cfg(), true, SimTime::ZERO);
    tx.on_transmit(SimTime::ZERO, 0, SIZE, 0, false);
    tx.on_transmit(SimTime::ZERO, 1, SIZE, 0, false);
    let before = tx.alpha;
    tx.on_feedback(SimTime(10_000_000), &report_of(0, 1, SimTime(5_000_000), Ecn::Ce));
    assert_eq!(tx.alpha, before);
    tx.on_feedback(SimTime(10_000_001), &report_of(1, 1, SimTime(5_000_000), Ecn::Ce));
    assert!(tx.alpha > before, "{} -> {}", before, tx.alpha);
}

/// The jitter scale of the send gate: spread = clamp(maxAvg − minAvg, 0,
/// 20 ms) into an EWMA of 1/32, scale = 1 − avg / 10 ms; maxAvg decays by
/// 15/16 and minAvg moves 1/16 towards it, once per backoff interval.
#[test]
fn jitter_filters_shrink_the_send_gate_scale() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    (tx.lat_max_avg_s, tx.lat_min_avg_s, tx.lat_diff_avg_s) = (0.020, 0.0, 0.0);
    tx.after_feedback(SimTime(31_000_000));
    assert_close(tx.lat_diff_avg_s, 0.020 / 32.0, 1e-12);
    assert_close(tx.lat_diff_scale, 1.0 - 0.020 / 32.0 / 0.010, 1e-12);
    assert_close(tx.lat_max_avg_s, 0.020 * 15.0 / 16.0, 1e-12);
    assert_close(tx.lat_min_avg_s, 0.020 * 15.0 / 16.0 / 16.0, 1e-12);
}

/// Without an event or a new frame, the window is updated at most once per
/// backoff interval, min(30 ms, sRTT).
#[test]
fn cwnd_updates_at_most_once_per_backoff_interval_without_events() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    let first = SimTime(1_000_000_000);
    tx.after_feedback(first); // the interval starts at the first feedback
    tx.after_feedback(first + Dur::from_millis(10));
    assert!(tx.last_update().is_none());
    tx.after_feedback(first + Dur::from_millis(31));
    assert_eq!(tx.last_update().unwrap().at, first + Dur::from_millis(31));
    tx.after_feedback(first + Dur::from_millis(50));
    assert_eq!(tx.last_update().unwrap().at, first + Dur::from_millis(31));
}

/// A HEAD L4S flow's CE cut with the queue at T/2 (no sclI or jitter
/// scaling), α = 0.5, sRTT 50 ms: α/2 ÷ rttScale, a quarter of that when the
/// target is below 80 % of the acknowledged rate (undershoot); cwndI is
/// taken at most once per sRTT.
fn head_l4s_cut(target: f64, rate_acked: f64) -> (ScreamTx, CwndUpdate) {
    let mut tx = ScreamTx::new(&cfg(), true, SimTime::ZERO);
    (tx.cwnd, tx.alpha, tx.target, tx.rate_acked) = (100_000, 0.5, target, rate_acked);
    tx.qdelay = tx.delay_target / 2;
    tx.last_congestion = SimTime(500_000_000);
    tx.ce_event = true;
    tx.update_cwnd(SimTime(1_000_000_000));
    let u = tx.last_update().unwrap();
    (tx, u)
}

#[test]
fn head_l4s_cut_is_a_quarter_on_undershoot_and_sets_cwnd_i_once_per_srtt() {
    let (_, u) = head_l4s_cut(1e6, 1e6);
    assert!(!u.undershoot);
    assert_close(u.rtt_scale, 50.0 / 30.0, 1e-12);
    assert_eq!(u.cwnd_reduced, (100_000.0 * (1.0 - 0.25 / u.rtt_scale)) as u64);
    let (mut tx, u) = head_l4s_cut(1e6, 2e6);
    assert!(u.undershoot);
    assert_eq!(u.cwnd_reduced, (100_000.0 * (1.0 - 0.25 * 0.25 / u.rtt_scale)) as u64);
    assert_eq!(tx.cwnd_i, 100_000, "cwndI is the window before the cut");
    // Another CE 10 ms later (< sRTT): cwndI stays; 51 ms later it is taken again.
    tx.ce_event = true;
    tx.update_cwnd(SimTime(1_010_000_000));
    assert_eq!(tx.cwnd_i, 100_000);
    let before = tx.cwnd;
    assert_ne!(before, 100_000);
    tx.ce_event = true;
    tx.update_cwnd(SimTime(1_061_000_000));
    assert_eq!(tx.cwnd_i, before);
}

/// HEAD's L4S cut with the queue below T/4 is also scaled by max(sclI, 0.25)
/// and the jitter scale; after 100 · max(25 ms, sRTT) without congestion the
/// window is first re-anchored to the previous max bytes in flight.
#[test]
fn head_l4s_cut_scales_at_low_delay_and_reanchors_after_a_long_quiet() {
    let cut = |qdelay: Dur, quiet: Dur| {
        let mut tx = ScreamTx::new(&cfg(), true, SimTime::ZERO);
        (tx.cwnd, tx.alpha, tx.max_bif_prev, tx.lat_diff_scale) = (100_000, 0.6, 40_000, 1.0);
        tx.qdelay = qdelay;
        let now = SimTime(10_000_000_000);
        tx.last_congestion = SimTime(now.0 - quiet.0);
        tx.ce_event = true;
        let (signal, _) = tx.backoff_head(now, 0.5, false, 1.0);
        assert_eq!(signal, Some(Signal::L4sCe));
        tx.cwnd
    };
    let (low, high) = (Dur::ZERO, Dur::from_millis(30));
    let short = Dur::from_secs(1);
    assert_eq!(cut(high, short), 70_000); // 1 − 0.6/2
    assert_eq!(cut(low, short), 85_000); // 1 − 0.3 · 0.5
    // Quiet for 100 sRTT (5 s at 50 ms) and a bit: re-anchored to 40 000 first.
    assert_eq!(cut(high, Dur::from_millis(5_001)), 28_000);
    assert_eq!(cut(high, Dur::from_secs(5)), 70_000);
}

/// The 2024 reduction: a classic flow's CE cuts by beta; an L4S flow's by
/// α/2 · max(0.5, 1 − MSS/cwnd), times max(sclI, 0.25) with the queue
/// below T/4 (76a298a; not 994f9a4).
#[test]
fn v2024_cuts_classic_by_beta_and_l4s_by_alpha_with_scl_i_at_low_delay() {
    let cut = |v: ScreamVersion, l4s: bool, qdelay: Dur| {
        let mut tx = ScreamTx::new(&cfg_v(v), l4s, SimTime::ZERO);
        (tx.cwnd, tx.alpha) = (100_000, 0.6);
        tx.qdelay = qdelay;
        tx.last_congestion = SimTime(500_000_000);
        tx.ce_event = true;
        let (signal, _) = tx.backoff_2024(SimTime(1_000_000_000), 0.5);
        (signal.unwrap(), tx.cwnd)
    };
    let beta = cfg().scale;
    let (low, high) = (Dur::ZERO, Dur::from_millis(30));
    assert_eq!(cut(V24, false, low), (Signal::ClassicCe, (100_000.0 * beta) as u64));
    let b = 0.3 * (1.0 - f64::from(INIT_MSS) / 100_000.0f64).max(0.5);
    assert_eq!(cut(V24, true, high), (Signal::L4sCe, (100_000.0 * (1.0 - b)) as u64));
    assert_eq!(cut(V24, true, low), (Signal::L4sCe, (100_000.0 * (1.0 - b * 0.5)) as u64));
    assert_eq!(cut(V28, true, low), (Signal::L4sCe, (100_000.0 * (1.0 - b)) as u64));
}

/// 2024's multiplicative increase carries sclI twice: in the base increase
/// and in the phase-in term, 1 + 0.05 · cwnd/MSS · postCong · sclI.
#[test]
fn v2024_increase_is_scaled_by_scl_i_near_the_inflexion_point() {
    let mut c = cfg_v(V24);
    c.max_rate = Rate(1_200_000);
    let mut h = Harness::new(&c, false, 10, 10);
    let mss = f64::from(SIZE);
    for _ in 0..5 {
        h.round(10);
    }
    h.tx.cwnd_i = h.tx.cwnd * 10 / 11;
    h.round(10);
    let u = h.tx.last_update().unwrap();
    assert!(u.signal.is_none() && u.scl_i < 0.5 && u.scl_i >= 0.1, "sclI {}", u.scl_i);
    let (c0, srtt) = (u.cwnd_before as f64, h.tx.state().srtt.as_secs_f64());
    let ratio = mss / c0;
    let want = 10.0 * mss * ratio * u.scl_i * (srtt / 0.025).min(1.0) * (1.0 - ratio).max(0.5)
        * (1.0 + 0.05 * c0 / mss * u.post_cong * u.scl_i);
    assert!(u.post_cong > 0.0);
    assert_close(u.increment, want, 1e-9);
}

/// Every 50 ms: near the max rate (target > 95 % of it) cwnd is capped at
/// max(recent max bytes in flight, paceHeadroom · maxRate · (sRTT + 1 ms));
/// from 2 s after start, strictly, maxBytesInFlight hands over to its "prev".
#[test]
fn slow_update_caps_cwnd_near_max_rate_and_hands_over_after_2_s() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    let cap = tx.pace_headroom * tx.max_rate / 8.0 * 0.051;
    (tx.cwnd, tx.max_bif, tx.target) = (10_000_000, 5_000, 0.94 * tx.max_rate);
    tx.slow_update(SimTime(60_000_000));
    assert_eq!(tx.cwnd, 10_000_000, "at 94 % of the max rate");
    tx.target = 0.96 * tx.max_rate;
    tx.slow_update(SimTime(120_000_000));
    assert_eq!(tx.cwnd, cap as u64);
    assert_eq!(tx.max_bif_prev, 0);
    tx.last_slow_update = SimTime(1_900_000_000);
    tx.slow_update(SimTime(2_000_000_000));
    assert_eq!((tx.max_bif, tx.max_bif_prev), (5_000, 0), "at exactly 2 s");
    tx.slow_update(SimTime(2_060_000_000));
    assert_eq!((tx.max_bif, tx.max_bif_prev), (0, 5_000));
}

/// The encoder's target moves only past the hysteresis: up by more than h,
/// down by more than h/4 (relative to the last value handed out).
#[test]
fn target_hysteresis_is_h_up_and_a_quarter_of_h_down() {
    let mut c = cfg();
    (c.hysteresis, c.min_rate, c.max_rate) = (0.1, Rate(100_000), Rate(10_000_000));
    let mut tx = ScreamTx::new(&c, false, SimTime::ZERO);
    tx.target_h = 1e6;
    // Exactly +h and −h/4 do not move it.
    for (share, moves) in [(1.09e6, false), (1.1e6, false), (0.98e6, false), (0.975e6, false), (1.11e6, true),
                           (0.97e6, true)] {
        let before = tx.target_h;
        tx.rate_share = share;
        tx.update_target_bitrate();
        assert_eq!(tx.target_h != before, moves, "{before} -> {share}");
        tx.target_h = 1e6;
    }
}

/// §6's slow minimum of the queue delay: every 100 sRTT the window's
/// minimum is taken if lower, else folded in with weight 1/8.
#[test]
fn slow_qdelay_minimum_takes_lower_and_averages_higher() {
    let mut tx = ScreamTx::new(&cfg(), false, SimTime::ZERO);
    (tx.qdelay_min_slow_avg_s, tx.qdelay_min_win_s) = (0.010, 0.020);
    tx.after_feedback(SimTime(5_000_000_000)); // 100 × 50 ms
    assert_close(tx.qdelay_min_slow_avg_s, 0.875 * 0.010 + 0.125 * 0.020, 1e-12);
    assert!(tx.qdelay_min_win_s.is_infinite());
    tx.qdelay_min_win_s = 0.004;
    tx.after_feedback(SimTime(9_999_000_000));
    assert_close(tx.qdelay_min_slow_avg_s, 0.01125, 1e-12);
    tx.after_feedback(SimTime(10_000_000_000));
    assert_eq!(tx.qdelay_min_slow_avg_s, 0.004);
}
