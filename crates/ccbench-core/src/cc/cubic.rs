//! CUBIC congestion control (RFC 9438 §4) as implemented by Linux
//! net/ipv4/tcp_cubic.c, with Linux's original HyStart (not HyStart++).
//!
//! Units: windows in segments; the law runs in Linux's fixed point — β and
//! C scaled by 1024, K and t in 2^-10 s — with integer arithmetic only
//! (the cube root is an exact integer root). Time is `SimTime`/`Dur` (ns).
//!
//! Deviations from Linux (CONFIG_HZ=1000 is assumed for jiffies):
//! - `update()` keeps Linux's gates (cnt recomputed at most once per 1 ms
//!   jiffy; skipped while cwnd is unchanged for ≤ HZ/32), but t − K is
//!   computed from ns time, not jiffies, and K uses an exact cube root
//!   instead of the table + one Newton step (≈0.2 % error).
//! - HyStart's ACK-train cushion `hystart_ack_delay()` derives the pacing
//!   rate Linux would compute (200 % × cwnd·mss/srtt in slow start) and a
//!   64 KiB `gso_max_size`. The ACK-train threshold is halved only when
//!   the sender is not paced (`sk_pacing_status == SK_PACING_NONE`, the
//!   default without fq; `tcp.pacing = true` is the paced case).
//! - `undo_cwnd` returns max(cwnd, cwnd at the last `ssthresh()`), which
//!   equals Linux's `tcp_reno_undo_cwnd` using `prior_cwnd`.
//! - Linux's `initial_ssthresh` module parameter is not modelled.

use serde::{Deserialize, Serialize};

use super::{CaState, CongestionControl, HystartDetector, HystartExit, TcpCcState};
use crate::units::{Dur, SimTime};

/// Fixed-point scale of β and C (`BICTCP_BETA_SCALE`).
const BETA_SCALE: u64 = 1024;
/// K and t are in 2^-BICTCP_HZ seconds.
const BICTCP_HZ: u32 = 10;
/// One jiffy at CONFIG_HZ=1000; Linux's `HZ / 32` is 31 of them.
const JIFFY_NS: u64 = 1_000_000;
const HZ_DIV_32: u64 = 31;
/// RTT samples this soon after an epoch starts are ignored.
const SAMPLE_HOLDOFF: Dur = Dur::from_secs(1);
const HYSTART_ACK_TRAIN: u32 = 0x1;
const HYSTART_DELAY: u32 = 0x2;
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN: Dur = Dur::from_millis(4);
const HYSTART_DELAY_MAX: Dur = Dur::from_millis(16);
/// Linux's default `sk_gso_max_size`, bytes.
const GSO_MAX_SIZE: u128 = 65_536;

/// Linux module parameters (defaults as in tcp_cubic.c).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// Multiplicative decrease β_cubic (RFC 9438 §4.1.1, §4.6), in 1/1024.
    pub beta: u32,
    /// C (RFC 9438 §4.1.1) = bic_scale·10/1024 segments/s³ (41 → ≈0.4).
    pub bic_scale: u32,
    /// RFC 9438 §4.7 fast convergence.
    pub fast_convergence: bool,
    /// RFC 9438 §4.3 Reno-friendly region.
    pub tcp_friendliness: bool,
    /// HyStart (Linux's ACK-train / delay slow-start exit).
    pub hystart: bool,
    /// Bitmask: 1 = ACK train, 2 = delay increase.
    pub hystart_detect: u32,
    /// HyStart runs only while cwnd ≥ this, segments.
    pub hystart_low_window: u32,
    /// Maximum spacing of ACKs counted as one train.
    pub hystart_ack_delta: Dur,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            beta: 717,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta: Dur::from_millis(2),
        }
    }
}

impl CubicConfig {
    pub fn build(&self) -> Cubic {
        let beta = u64::from(self.beta.min(1023));
        let cube_rtt_scale = u64::from(self.bic_scale.max(1)) * 10;
        Cubic {
            cfg: self.clone(),
            beta,
            // 8(1+β)/(3(1−β)): ×8 ACKed windows per Reno-friendly segment.
            beta_scale: (8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta)).max(1),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale,
            s: State::default(),
            hy: HyStart::new(SimTime::ZERO, 0),
            loss_cwnd: 0,
            sce_mss: None,
            exit: None,
        }
    }
}

/// CUBIC state, cleared on RTO (Linux `bictcp_reset`).
#[derive(Clone, Debug, Default)]
struct State {
    /// ACKed segments per +1 cwnd.
    cnt: u32,
    /// W_max (RFC 9438 §4.1.2, `last_max_cwnd`); 0 before the first loss.
    w_max: u32,
    /// cwnd and jiffy at the last recomputation.
    last_cwnd: u32,
    last_time: u64,
    /// Plateau of the current curve (`bic_origin_point`).
    origin: u32,
    /// K (RFC 9438 §4.2), 2^-10 s.
    k: u64,
    /// Minimum RTT; zero until the first sample.
    delay_min: Dur,
    /// Start of the congestion-avoidance epoch.
    epoch_start: Option<SimTime>,
    /// ACKed segments not yet credited to `w_est`; for cubic-sce bytes
    /// of its `mss` per segment, less its SCE debits (may go negative).
    ack_cnt: i64,
    /// W_est (RFC 9438 §4.3, `tcp_cwnd`).
    w_est: u32,
    /// HyStart already ended slow start.
    found: bool,
}

/// Per-round HyStart state (Linux `bictcp_hystart_reset`).
#[derive(Clone, Debug)]
struct HyStart {
    round_start: SimTime,
    /// The round ends when snd_una passes this.
    end_seq: u64,
    last_ack: SimTime,
    /// Minimum RTT in this round.
    curr_rtt: Dur,
    sample_cnt: u8,
}

impl HyStart {
    fn new(now: SimTime, end_seq: u64) -> HyStart {
        HyStart {
            round_start: now,
            end_seq,
            last_ack: now,
            curr_rtt: Dur::MAX,
            sample_cnt: 0,
        }
    }
}

/// A CUBIC sender's congestion-control state; build with [`CubicConfig::build`].
pub struct Cubic {
    cfg: CubicConfig,
    /// β in 1/1024.
    beta: u64,
    beta_scale: u64,
    /// 1024·C.
    cube_rtt_scale: u64,
    /// 2^40 / (1024·C): K = ∛(cube_factor·(W_max − cwnd)) in 2^-10 s.
    cube_factor: u64,
    s: State,
    hy: HyStart,
    /// cwnd when `ssthresh()` last ran, for undo.
    loss_cwnd: u32,
    /// cubic-sce's `ca->mss` (its SCE handler sets it on every ACK):
    /// `ack_cnt` then counts `mss` bytes per ACKed segment, as
    /// tcp_cubic_sce.c does; `None` is mainline's count of segments.
    sce_mss: Option<u32>,
    /// Where HyStart ended slow start (kept across an RTO's reset).
    exit: Option<HystartExit>,
}

/// ⌊∛a⌋, exact. The f64 root is within one of the true one for every u128
/// (rounding a to 53 bits moves its cube root by far less than 1), so one
/// above it is never below ⌊∛a⌋ and the search only steps down.
fn icbrt(a: u128) -> u64 {
    let mut x = (a as f64).cbrt() as u64 + 1;
    while u128::from(x).checked_pow(3).is_none_or(|c| c > a) {
        x -= 1;
    }
    x
}

fn elapsed(now: SimTime, since: SimTime) -> Dur {
    Dur(now.0.saturating_sub(since.0))
}

impl Cubic {
    /// Linux `bictcp_update`: sets `cnt` for `cwnd` at `now`.
    fn update(&mut self, cwnd: u32, acked: u32, now: SimTime) {
        let s = &mut self.s;
        let jiffies = now.0 / JIFFY_NS;
        // tcp_cubic_sce.c adds acked·mss in bictcp_cong_avoid, just before.
        let unit = i64::from(self.sce_mss.unwrap_or(1));
        s.ack_cnt += i64::from(acked) * unit;
        if s.last_cwnd == cwnd && jiffies.saturating_sub(s.last_time) <= HZ_DIV_32 {
            return;
        }
        // The cubic part runs at most once per jiffy; an epoch reset forces it.
        if s.epoch_start.is_none() || jiffies != s.last_time {
            s.last_cwnd = cwnd;
            s.last_time = jiffies;
            if s.epoch_start.is_none() {
                s.epoch_start = Some(now);
                // tcp_cubic_sce.c starts the count at 0, mainline at acked.
                s.ack_cnt = if self.sce_mss.is_some() { 0 } else { i64::from(acked) };
                s.w_est = cwnd;
                //= RFC 9438 §4.2: K = cubic_root((W_max - cwnd_epoch)/C)
                (s.k, s.origin) = if s.w_max <= cwnd {
                    (0, cwnd)
                } else {
                    let k = icbrt(u128::from(self.cube_factor) * u128::from(s.w_max - cwnd));
                    (k, s.w_max)
                };
            }
            let epoch = s.epoch_start.unwrap_or(now);
            // t is one delay_min ahead: the window should reach W(t) an RTT from now.
            let t_ns = u128::from((elapsed(now, epoch) + s.delay_min).0);
            let t = (t_ns << BICTCP_HZ) / 1_000_000_000;
            let k = u128::from(s.k);
            let offs = t.abs_diff(k);
            //= RFC 9438 §4.2: W_cubic(t) = C*(t-K)^3 + W_max
            let cube = offs.saturating_mul(offs).saturating_mul(offs);
            let delta =
                u128::from(self.cube_rtt_scale).saturating_mul(cube) >> (10 + 3 * BICTCP_HZ);
            let delta = delta.min(u128::from(u32::MAX)) as u32;
            let target = if t < k {
                s.origin.saturating_sub(delta)
            } else {
                s.origin.saturating_add(delta)
            };
            s.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                cwnd.saturating_mul(100)
            };
            // Before the first loss grow at least 5 % per RTT.
            if s.w_max == 0 {
                s.cnt = s.cnt.min(20);
            }
        }
        //= RFC 9438 §4.3: W_est += alpha_cubic * segments_acked / cwnd
        // Linux: +1 per cwnd·beta_scale/8 ACKed (cwnd·15/8 for β = 717).
        if self.cfg.tcp_friendliness {
            // tcp_cubic_sce.c: scale = beta_scale·mss, delta = cwnd·scale/8.
            let delta = match self.sce_mss {
                None => (i64::from(cwnd) * self.beta_scale as i64) >> 3,
                Some(mss) => i64::from(cwnd) * self.beta_scale as i64 * i64::from(mss) / 8,
            }
            .max(1);
            if s.ack_cnt > delta {
                let n = s.ack_cnt / delta;
                s.ack_cnt -= n * delta;
                s.w_est = s.w_est.saturating_add(n as u32);
            }
            if s.w_est > cwnd {
                s.cnt = s.cnt.min(cwnd / (s.w_est - cwnd));
            }
        }
        // At most +1 per 2 ACKed: ≤ 1.5× per RTT.
        s.cnt = s.cnt.max(2);
    }

    fn hystart_reset(&mut self, tcp: &TcpCcState) {
        self.hy = HyStart::new(tcp.now, tcp.snd_nxt);
    }

    /// Linux `hystart_ack_delay`: min(1 ms, 4·gso_max_size / pacing_rate).
    fn ack_train_cushion(tcp: &TcpCcState) -> Dur {
        let rate_den = 2 * u128::from(tcp.cwnd.max(tcp.in_flight)) * u128::from(tcp.mss);
        if tcp.srtt == Dur::ZERO || rate_den == 0 {
            return Dur::ZERO; // Linux: no pacing rate yet (~0) → 0
        }
        let ns = 4 * GSO_MAX_SIZE * u128::from(tcp.srtt.0) / rate_den;
        Dur(ns.min(1_000_000) as u64)
    }

    /// A detector fired: slow start ends at this cwnd (Linux also counts
    /// the detector and adds the cwnd to its TCPHystart*Cwnd counter).
    fn found(&mut self, tcp: &mut TcpCcState, by: HystartDetector) {
        self.s.found = true;
        tcp.ssthresh = tcp.cwnd;
        self.exit.get_or_insert(HystartExit { by, cwnd: tcp.cwnd, at: tcp.now });
    }

    fn hystart_update(&mut self, tcp: &mut TcpCcState, delay: Dur) {
        if tcp.snd_una > self.hy.end_seq {
            self.hystart_reset(tcp);
        }
        if tcp.cwnd < self.cfg.hystart_low_window {
            return;
        }
        let now = tcp.now;
        if self.cfg.hystart_detect & HYSTART_ACK_TRAIN != 0
            && elapsed(now, self.hy.last_ack) <= self.cfg.hystart_ack_delta
        {
            self.hy.last_ack = now;
            // The train passes delay_min (plus TSO cushion), halved when
            // unpaced: pacing may delay packets up to RTT/2 in slow start.
            let mut threshold = self.s.delay_min + Self::ack_train_cushion(tcp);
            if !tcp.paced {
                threshold = threshold / 2;
            }
            if elapsed(now, self.hy.round_start) > threshold {
                self.found(tcp, HystartDetector::AckTrain);
            }
        }
        if self.cfg.hystart_detect & HYSTART_DELAY != 0 {
            self.hy.curr_rtt = self.hy.curr_rtt.min(delay);
            if self.hy.sample_cnt < HYSTART_MIN_SAMPLES {
                self.hy.sample_cnt += 1;
            } else {
                let dm = self.s.delay_min;
                let thresh = (dm / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
                if self.hy.curr_rtt > dm + thresh {
                    self.found(tcp, HystartDetector::Delay);
                }
            }
        }
    }
}

/// `⌈√cwnd⌉ − 1`, the largest s with s² < cwnd: tcp_cubic_sce.c's
/// `sqrt_cnt`, which `bictcp_cong_avoid` steps to this value on every
/// congestion-avoidance ACK and the SCE step-down keeps there.
pub(crate) fn sqrt_cnt(cwnd: u32) -> u32 {
    let mut s = (f64::from(cwnd)).sqrt() as u32 + 1;
    while s > 0 && s * s >= cwnd {
        s -= 1;
    }
    s
}

/// The parts of chromi/sce's tcp_cubic_sce.c that live inside CUBIC's
/// state; `cc/sce.rs` (`CubicSce`) drives them from its ACK handler.
impl Cubic {
    /// A CUBIC whose `ack_cnt` counts bytes (`acked·mss`), as
    /// tcp_cubic_sce.c's does.
    pub(crate) fn for_sce(cfg: &CubicConfig, mss: u32) -> Cubic {
        let mut c = cfg.build();
        c.sce_mss = Some(mss);
        c
    }

    /// `ca->mss = inet_csk(sk)->icsk_ack.rcv_mss` (each ACK).
    pub(crate) fn set_sce_mss(&mut self, mss: u32) {
        self.sce_mss = Some(mss);
    }

    /// An epoch runs (`ca->epoch_start != 0`): set by the first
    /// congestion-avoidance ACK, cleared by `ssthresh()` and on RTO.
    pub(crate) fn epoch_running(&self) -> bool {
        self.s.epoch_start.is_some()
    }

    /// tcp_cubic_sce.c `bictcp_handle_ack`, its branch for an ESCE ACK
    /// while an epoch runs, `acked_bytes` being the ACK's advance of
    /// snd_una in bytes:
    ///
    /// 1. "Reduce gradient of CUBIC function": with t = now − epoch_start
    ///    (jiffies, then 2^-10 s) above K, the epoch moves on by K and K
    ///    becomes t, the plateau (`bic_origin_point`) rising to the
    ///    curve's present value; below K, the epoch restarts now, K goes to
    ///    0 and the plateau moves by `delta2 − delta1`, where delta2 is the
    ///    cube of `bic_K − t` taken as u64: for t > 0 that wraps, delta2 is
    ///    2^24 − 1 and the u32 plateau drops through zero to about
    ///    2^32 − 2^24. The source does exactly this; it leaves cnt at its
    ///    floor of 2 (cwnd +1 per 2 ACKed segments) until the next
    ///    `ssthresh()` resets the epoch.
    /// 2. "A full cwnd of ESCE results in sqrt(cwnd) reduction":
    ///    `ack_cnt −= acked_bytes·sqrt_cnt`, and while `ack_cnt ≤ −mss·cwnd`
    ///    (cwnd as on entry) cwnd steps down by one (not below 2) and the
    ///    plateau with it. `mss` is the sender's `rcv_mss`, so with
    ///    1448-byte segments each marked segment weighs 1448/536 ≈ 2.7
    ///    `sqrt_cnt`; every ACKed segment credits `mss` back in
    ///    `bictcp_cong_avoid`.
    /// 3. ssthresh = cwnd/2 ("drop out of slow-start").
    pub(crate) fn on_sce(&mut self, tcp: &mut TcpCcState, acked_bytes: u32) {
        let Some(epoch) = self.s.epoch_start else {
            return;
        };
        let mss = self.sce_mss.unwrap_or(tcp.mss);
        let cnt_over = i64::from(mss) * i64::from(tcp.cwnd);
        let sqrt_cnt = sqrt_cnt(tcp.cwnd);
        let scale = self.cube_rtt_scale;
        // (cube_rtt_scale·offs³) >> 40 in u64 arithmetic, kept as u32.
        let cube = |offs: u64| -> u32 {
            (scale.wrapping_mul(offs).wrapping_mul(offs).wrapping_mul(offs) >> (10 + 3 * BICTCP_HZ)) as u32
        };
        let s = &mut self.s;
        let now_j = tcp.now.0 / JIFFY_NS;
        let epoch_j = epoch.0 / JIFFY_NS;
        // t = ((now − epoch_start) << BICTCP_HZ) / HZ, no delay_min here.
        let mut t = (now_j.saturating_sub(epoch_j) << BICTCP_HZ) as i64 / 1000;
        let k = s.k as i64;
        if t < k {
            let delta1 = cube((k - t) as u64);
            s.epoch_start = Some(tcp.now);
            let mut k_new = (k - t) as u32;
            k_new = if acked_bytes < sqrt_cnt { k_new * (sqrt_cnt - acked_bytes) / sqrt_cnt } else { 0 };
            // `offs = ca->bic_K - t` with t still the old epoch's: negative, as u64.
            let delta2 = cube((i64::from(k_new) - t) as u64);
            s.k = u64::from(k_new);
            s.origin = s.origin.wrapping_sub(delta2.wrapping_sub(delta1));
        } else {
            let delta1 = cube((t - k) as u64);
            // epoch_start += (bic_K·HZ) >> BICTCP_HZ jiffies.
            s.epoch_start = Some(epoch + Dur(((s.k * 1000) >> BICTCP_HZ) * JIFFY_NS));
            t -= k;
            let k_new = if acked_bytes < sqrt_cnt { t * i64::from(acked_bytes) / i64::from(sqrt_cnt) } else { t };
            let delta2 = cube((t - k_new) as u64);
            s.k = k_new as u64;
            s.origin = s.origin.wrapping_add(delta1.wrapping_sub(delta2));
        }
        s.ack_cnt -= i64::from(acked_bytes) * i64::from(sqrt_cnt);
        // (The source also steps its stored sqrt_cnt down with cwnd here; ours is
        // recomputed from cwnd on each use.)
        while cnt_over > 0 && s.ack_cnt <= -cnt_over {
            s.ack_cnt += cnt_over;
            if tcp.cwnd > 2 {
                tcp.cwnd -= 1;
            }
            s.origin = s.origin.saturating_sub(1);
        }
        tcp.ssthresh = tcp.cwnd / 2;
    }
}

impl CongestionControl for Cubic {
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        let s = &mut self.s;
        s.epoch_start = None;
        //= RFC 9438 §4.7: W_max = cwnd * (1 + beta_cubic) / 2 when below the last W_max
        let cwnd = u64::from(tcp.cwnd);
        s.w_max = if tcp.cwnd < s.w_max && self.cfg.fast_convergence {
            (cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE)) as u32
        } else {
            tcp.cwnd
        };
        self.loss_cwnd = tcp.cwnd;
        //= RFC 9438 §4.6: ssthresh = cwnd * beta_cubic
        ((cwnd * self.beta / BETA_SCALE) as u32).max(2)
    }

    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        let acked = tcp.ca_acked(acked);
        if acked == 0 {
            return;
        }
        self.update(tcp.cwnd, acked, tcp.now);
        tcp.cong_avoid_ai(self.s.cnt, acked);
    }

    fn on_rtt(&mut self, tcp: &mut TcpCcState, rtt: Dur) {
        // Discard delay samples right after a reduction.
        if let Some(e) = self.s.epoch_start {
            if elapsed(tcp.now, e) < SAMPLE_HOLDOFF {
                return;
            }
        }
        let delay = rtt.max(Dur(1));
        if self.s.delay_min == Dur::ZERO || self.s.delay_min > delay {
            self.s.delay_min = delay;
        }
        if self.cfg.hystart && !self.s.found && tcp.in_slow_start() {
            self.hystart_update(tcp, delay);
        }
    }

    //= RFC 9438 §4.8: on RTO, reset the CUBIC state (and HyStart).
    fn on_state(&mut self, tcp: &mut TcpCcState, state: CaState) {
        if state == CaState::Loss {
            self.s = State::default();
            self.hystart_reset(tcp);
        }
    }

    /// Keep growth on the cubic curve across app-limited idle time.
    fn on_tx_start(&mut self, tcp: &TcpCcState, idle: Dur) {
        if let Some(e) = self.s.epoch_start {
            if idle > Dur::ZERO {
                self.s.epoch_start = Some((e + idle).min(tcp.now));
            }
        }
    }

    fn undo_cwnd(&mut self, tcp: &TcpCcState, _prior_cwnd: u32) -> u32 {
        tcp.cwnd.max(self.loss_cwnd)
    }

    fn hystart_exit(&self) -> Option<HystartExit> {
        self.exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;

    const C: f64 = 0.4;

    fn cubic() -> Cubic {
        CubicConfig::default().build()
    }
    fn with(f: impl FnOnce(&mut CubicConfig)) -> Cubic {
        let mut cfg = CubicConfig::default();
        f(&mut cfg);
        cfg.build()
    }
    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }
    fn flow(cwnd: u32) -> TcpCcState {
        TcpCcState::new(SimTime::ZERO, 1448, cwnd)
    }

    /// Congestion avoidance at 1 s, after a loss at `w_max`, delay_min `rtt`.
    fn after_loss(c: &mut Cubic, w_max: u32, rtt: Dur) -> TcpCcState {
        let mut t = flow(w_max);
        t.ssthresh = w_max;
        c.on_rtt(&mut t, rtt);
        t.cwnd = c.ssthresh(&t);
        t.ssthresh = t.cwnd;
        t.now = SimTime::from_secs_f64(1.0);
        t
    }

    /// `rounds` RTTs of ACK clocking: each round ACKs its starting window one
    /// segment at a time, evenly over `rtt`. Returns (s since first ACK, cwnd)
    /// at each round end; asserts cnt ≥ 2 throughout.
    #[track_caller]
    fn drive(c: &mut Cubic, t: &mut TcpCcState, rtt: Dur, rounds: u64) -> Vec<(f64, u32)> {
        let start = t.now;
        let mut out = Vec::new();
        for r in 0..rounds {
            let n = u64::from(t.cwnd);
            for i in 0..n {
                t.now = start + rtt * r + rtt.mul_ratio(i, n);
                c.cong_avoid(t, 1);
                assert!(c.s.cnt >= 2, "cnt {} < 2", c.s.cnt);
            }
            out.push(((rtt * (r + 1)).as_secs_f64(), t.cwnd));
        }
        out
    }

    /// `bictcp_update` returns at once while cwnd is unchanged and no more
    /// than HZ/32 jiffies passed since the cubic part last ran.
    #[test]
    fn the_cubic_part_reruns_after_hz_over_32_jiffies_with_cwnd_unchanged() {
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, ms(20));
        c.cong_avoid(&mut t, 1);
        let (cnt, w) = (c.s.cnt, t.cwnd);
        c.s.origin = 10_000; // a plateau far above: running again lowers cnt
        c.update(w, 0, t.now + ms(31));
        assert_eq!(c.s.cnt, cnt, "within 31 jiffies");
        c.update(w, 0, t.now + ms(33));
        assert!(c.s.cnt < cnt, "after 33 jiffies: {} vs {cnt}", c.s.cnt);
    }

    /// `sqrt_cnt` is ⌈√cwnd⌉ − 1, the largest s with s² < cwnd.
    #[test]
    fn sqrt_cnt_is_the_largest_root_below_cwnd() {
        let got: Vec<u32> = [0, 1, 2, 4, 5, 9, 10, 99, 100, 101].map(sqrt_cnt).to_vec();
        assert_eq!(got, [0, 0, 1, 1, 2, 2, 3, 9, 9, 10]);
    }

    /// A cubic-sce epoch started at 0 with K = 1024 (1 s in 2^-10 s),
    /// plateau 1000, rcv_mss 536, cwnd 100 (sqrt_cnt 9).
    fn sce_epoch() -> (Cubic, TcpCcState) {
        let mut c = Cubic::for_sce(&CubicConfig::default(), 536);
        (c.s.epoch_start, c.s.k, c.s.origin) = (Some(SimTime::ZERO), 1024, 1000);
        (c, flow(100))
    }

    /// [`sce_epoch`] given one ESCE ACK of `acked` bytes at `secs`, after `set` changed it.
    fn sce_mark(secs: f64, acked: u32, set: impl FnOnce(&mut Cubic, &mut TcpCcState)) -> (Cubic, TcpCcState) {
        let (mut c, mut t) = sce_epoch();
        t.now = SimTime::from_secs_f64(secs);
        set(&mut c, &mut t);
        c.on_sce(&mut t, acked);
        (c, t)
    }

    /// tcp_cubic_sce.c `bictcp_handle_ack` above K, worked by hand with
    /// cube(x) = 410·x³ >> 40: at 5 s, t = 5120, so t − K = 4096 and
    /// cube(4096) = 25. A whole-segment ACK (acked ≥ sqrt_cnt) makes K the
    /// 4096 since the epoch moved on by (1024·HZ) >> 10 = 1000 jiffies and
    /// lifts the plateau by 25 − cube(0); ack_cnt is debited 1448·9, and
    /// ssthresh goes to cwnd/2. An ACK of 3 bytes (below sqrt_cnt) keeps
    /// K = 4096·3/9 = 1365 and lifts it by 25 − cube(2731) = 25 − 7.
    #[test]
    fn sce_above_the_inflection_point_follows_bictcp_handle_ack() {
        let (c, t) = sce_mark(5.0, 1448, |_, _| ());
        assert_eq!((c.s.k, c.s.origin, c.s.epoch_start), (4096, 1025, Some(SimTime::from_secs_f64(1.0))));
        assert_eq!((c.s.ack_cnt, t.cwnd, t.ssthresh), (-13_032, 100, 50));
        let (c, _) = sce_mark(5.0, 3, |_, _| ());
        assert_eq!((c.s.k, c.s.origin, c.s.ack_cnt), (1365, 1018, -27));
    }

    /// Below K (at 0.5 s, t = 512): the epoch restarts now, K becomes
    /// (1024 − 512)·(9 − 4)/9 = 284 for an ACK of 4 bytes (0 for a whole
    /// segment), and the plateau moves by cube(K_new − t) − cube(512), the
    /// first taken as u64 of a negative number: 2^24 − 1, so the u32
    /// plateau wraps below zero.
    #[test]
    fn sce_below_the_inflection_point_wraps_the_plateau_as_the_source_does() {
        let (c, t) = sce_mark(0.5, 4, |_, _| ());
        assert_eq!((c.s.k, c.s.epoch_start), (284, Some(t.now)));
        assert_eq!(c.s.origin, 1000u32.wrapping_sub((1 << 24) - 1));
        let (c, _) = sce_mark(0.5, 1448, |_, _| ());
        assert_eq!((c.s.k, c.s.origin), (0, 1000u32.wrapping_sub((1 << 24) - 1)));
    }

    /// At K exactly (t = 1024 at 1 s) the branch above K runs: the epoch
    /// moves on by 1000 jiffies, K becomes 0 and the plateau stays (no
    /// wrap). Far below a large K (8192, t = 512) the old curve's offset
    /// cube(7680) = 168 enters the plateau's move.
    #[test]
    fn sce_at_and_far_below_the_inflection_point() {
        let (c, _) = sce_mark(1.0, 1448, |_, _| ());
        assert_eq!((c.s.k, c.s.origin, c.s.epoch_start), (0, 1000, Some(SimTime::from_secs_f64(1.0))));
        let (c, _) = sce_mark(0.5, 1448, |c, _| c.s.k = 8192);
        assert_eq!((c.s.k, c.s.origin), (0, 1000u32.wrapping_sub(((1 << 24) - 1) - 168)));
    }

    /// The debt is paid in segments: each `rcv_mss·cwnd` (53 600 at cwnd
    /// 100) of it takes one segment and one unit of plateau off, with cwnd
    /// as it was on entry; never below two segments; without an epoch
    /// nothing happens.
    #[test]
    fn sce_debt_takes_one_segment_per_rcv_mss_times_cwnd() {
        let (c, t) = sce_mark(5.0, 1448, |c, _| c.s.ack_cnt = -53_600 + 13_032 - 1);
        assert_eq!((t.cwnd, c.s.ack_cnt, c.s.origin), (99, -1, 1024));
        let (c, t) = sce_mark(5.0, 1448, |c, _| c.s.ack_cnt = -2 * 53_600);
        assert_eq!((t.cwnd, c.s.ack_cnt), (98, -13_032));
        let (mut c, mut t) = sce_mark(5.0, 1448, |c, t| (t.cwnd, c.s.ack_cnt) = (2, -10 * 536 * 2));
        assert_eq!(t.cwnd, 2);
        c.s.epoch_start = None;
        let before = (c.s.k, c.s.origin, c.s.ack_cnt, t.cwnd, t.ssthresh);
        c.on_sce(&mut t, 1448);
        assert_eq!(before, (c.s.k, c.s.origin, c.s.ack_cnt, t.cwnd, t.ssthresh));
    }

    /// `bictcp_acked`: delay samples within one second of the epoch's
    /// start (a reduction) are discarded; from one second on they count.
    #[test]
    fn delay_samples_are_ignored_for_one_second_after_a_reduction() {
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, ms(100));
        let start = t.now;
        c.update(t.cwnd, 1, start); // the epoch starts
        t.now = start + Dur(Dur::from_secs(1).0 - 1);
        c.on_rtt(&mut t, ms(50));
        assert_eq!(c.s.delay_min, ms(100));
        t.now = start + Dur::from_secs(1);
        c.on_rtt(&mut t, ms(50));
        assert_eq!(c.s.delay_min, ms(50));
    }

    #[test]
    fn k_matches_rfc9438_for_wmax_100_cwnd_70() {
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, ms(100));
        assert_eq!(t.cwnd, 70);
        c.cong_avoid(&mut t, 1);
        let k = c.s.k as f64 / 1024.0;
        let want = (30.0 / C).cbrt(); // 4.2172 s
        assert!((k - want).abs() / want < 0.002, "K = {k}, want {want}");
        assert_eq!(c.s.origin, 100);
        // The target is one delay_min ahead: 100 − ⌊C·(K − 0.1 s)³⌋ = 73.
        assert_eq!(c.s.cnt, 70 / (73 - 70));
    }

    #[test]
    fn ssthresh_is_beta_times_cwnd_with_floor_two() {
        let mut c = cubic();
        for (cwnd, want) in [(100, 70), (1000, 700), (10, 7), (2, 2), (1, 2)] {
            assert_eq!(c.ssthresh(&flow(cwnd)), want, "cwnd {cwnd}");
        }
        c.ssthresh(&flow(50));
        assert_eq!(c.undo_cwnd(&flow(35), 0), 50);
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_previous_peak() {
        for (fc, want) in [(true, 68), (false, 80)] {
            let mut c = with(|c| c.fast_convergence = fc);
            c.ssthresh(&flow(100));
            assert_eq!(c.s.w_max, 100);
            c.ssthresh(&flow(80));
            assert_eq!(c.s.w_max, want, "fast_convergence {fc}"); // 80·1741/2048
            c.ssthresh(&flow(90));
            assert_eq!(c.s.w_max, 90);
        }
    }

    #[test]
    fn window_follows_cubic_curve_back_to_w_max_and_beyond() {
        let rtt = ms(100);
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, rtt);
        let k = (30.0 / C).cbrt();
        let w = |s: f64| C * (s - k).powi(3) + 100.0;
        let trace = drive(&mut c, &mut t, rtt, 95);
        for &(s, cwnd) in trace.iter().filter(|(s, _)| *s >= 0.5) {
            let err = (f64::from(cwnd) - w(s)).abs() / w(s);
            assert!(err < 0.03, "t={s:.1}s cwnd {cwnd} vs W(t) {:.1}", w(s));
        }
        let at = |s: f64| trace.iter().find(|(x, _)| *x >= s).unwrap().1;
        assert!(at(k).abs_diff(100) <= 2, "cwnd at K: {}", at(k));
        assert!(at(k + 5.0) >= 145, "convex region: {}", at(k + 5.0));
        // Convex: growth accelerates after K.
        assert!(at(k + 5.0) - at(k + 4.0) > 2 * (at(k + 2.0) - at(k + 1.0)));
    }

    #[test]
    fn reno_friendly_region_dominates_at_short_rtt() {
        let run = |friendly: bool| {
            let mut c = with(|c| c.tcp_friendliness = friendly);
            let mut t = after_loss(&mut c, 20, ms(10));
            assert_eq!(t.cwnd, 14);
            drive(&mut c, &mut t, ms(10), 100);
            t.cwnd
        };
        // α = 3(1−β)/(1+β) ≈ 0.53 segment per RTT → ≈ 14 + 53 after 100 RTTs.
        let cwnd = run(true);
        assert!((14 + 45..=14 + 65).contains(&cwnd), "friendly cwnd {cwnd}");
        // Pure cubic is still below W_max = 20 after 1 s (K ≈ 2.5 s).
        assert!(run(false) <= 20, "cubic-only cwnd {}", run(false));
    }

    #[test]
    fn growth_at_most_one_and_a_half_per_rtt() {
        let mut c = cubic();
        let mut t = flow(100);
        t.ssthresh = 100;
        c.ssthresh(&t); // W_max = 100 = cwnd → K = 0
        c.cong_avoid(&mut t, 1);
        // 10 s later the curve is at ≈ 500: far above cwnd.
        t.now = SimTime::from_secs_f64(10.0);
        let before = t.cwnd;
        for _ in 0..before {
            c.cong_avoid(&mut t, 1);
            assert_eq!(c.s.cnt, 2);
        }
        assert!(t.cwnd <= before * 3 / 2 + 1, "cwnd {before} -> {}", t.cwnd);
    }

    #[test]
    fn growth_before_first_loss_is_about_five_percent_per_rtt() {
        let mut c = cubic();
        let mut t = flow(100);
        t.ssthresh = 100; // e.g. after a HyStart exit: W_max = 0
        c.on_rtt(&mut t, ms(100));
        drive(&mut c, &mut t, ms(100), 1);
        assert_eq!((c.s.cnt, t.cwnd), (20, 105));
    }

    /// Slow start at `cwnd`, then one HyStart round per `(n, gap, rtt)`: the
    /// first ACK passes the previous round's end, then `n` ACKs `gap` apart
    /// with RTT `rtt`. Returns (round, ACK) that ended slow start, if any.
    fn hystart(c: &mut Cubic, cwnd: u32, rounds: &[(u64, Dur, Dur)]) -> Option<(usize, u64)> {
        hystart_paced(c, cwnd, false, rounds)
    }

    fn hystart_paced(
        c: &mut Cubic,
        cwnd: u32,
        paced: bool,
        rounds: &[(u64, Dur, Dur)],
    ) -> Option<(usize, u64)> {
        let mut t = flow(cwnd);
        t.paced = paced;
        t.snd_nxt = u64::from(cwnd);
        for (r, &(n, gap, rtt)) in rounds.iter().enumerate() {
            let end = t.snd_nxt;
            t.snd_nxt += u64::from(cwnd);
            t.now += ms(50);
            for i in 0..n {
                t.snd_una = end + 1 + i;
                t.now += gap;
                c.on_rtt(&mut t, rtt);
                if t.ssthresh != INFINITE_SSTHRESH {
                    assert_eq!(t.ssthresh, cwnd);
                    return Some((r, i));
                }
            }
        }
        None
    }

    #[test]
    fn hystart_delay_increase_ends_slow_start() {
        // delay_min 20 ms → threshold max(4 ms, 2.5 ms) = 4 ms; 200 ms → 16 ms
        // (clamped). The check starts at the 9th sample of a round.
        for (rtt1, rtt2, want) in [
            (20, 25, Some((1, 8))),
            (20, 24, None), // exactly at the threshold: Linux's test is strict
            (20, 23, None),
            (200, 217, Some((1, 8))),
            (200, 215, None),
        ] {
            let got = hystart(
                &mut cubic(),
                32,
                &[(10, ms(3), ms(rtt1)), (10, ms(3), ms(rtt2))],
            );
            assert_eq!(got, want, "{rtt1} ms then {rtt2} ms");
        }
    }

    #[test]
    fn no_hystart_below_low_window() {
        let rounds = [(10, ms(3), ms(20)), (10, ms(3), ms(40))];
        assert_eq!(hystart(&mut cubic(), 15, &rounds), None);
        assert_eq!(hystart(&mut cubic(), 16, &rounds), Some((1, 8)));
    }

    #[test]
    fn hystart_ack_train_past_half_delay_min_ends_slow_start() {
        // 1 ms spacing; unpaced threshold (20 ms + 0 cushion)/2 = 10 ms.
        let rounds = [(10, ms(3), ms(20)), (20, ms(1), ms(20))];
        assert_eq!(hystart(&mut cubic(), 32, &rounds), Some((1, 11)));
        let mut delay_only = with(|c| c.hystart_detect = HYSTART_DELAY);
        assert_eq!(hystart(&mut delay_only, 32, &rounds), None);
    }

    /// What Linux counts in TCPHystartTrainDetect/TrainCwnd and
    /// DelayDetect/DelayCwnd: the detector and the cwnd it left as ssthresh;
    /// kept when an RTO resets CUBIC's state.
    #[test]
    fn hystart_records_which_detector_ended_slow_start() {
        let exit = |c: &Cubic| c.hystart_exit().map(|e| (e.by, e.cwnd, e.at > SimTime::ZERO));
        let mut c = cubic();
        assert_eq!(hystart(&mut c, 32, &[(10, ms(3), ms(20)), (10, ms(3), ms(25))]), Some((1, 8)));
        assert_eq!(exit(&c), Some((HystartDetector::Delay, 32, true)));
        let mut t = flow(32);
        c.on_state(&mut t, CaState::Loss);
        assert_eq!(exit(&c), Some((HystartDetector::Delay, 32, true)));
        let mut c = cubic();
        assert_eq!(hystart(&mut c, 48, &[(10, ms(3), ms(20)), (20, ms(1), ms(20))]), Some((1, 11)));
        assert_eq!(exit(&c), Some((HystartDetector::AckTrain, 48, true)));
        let mut c = cubic();
        assert_eq!(hystart(&mut c, 32, &[(10, ms(3), ms(20)), (10, ms(3), ms(23))]), None);
        assert_eq!(exit(&c), None);
    }

    #[test]
    fn hystart_detect_bitmask_selects_the_exit_rules() {
        // A delay increase with ACKs 3 ms apart (no train): only bit 2 exits.
        let delay = [(10, ms(3), ms(20)), (10, ms(3), ms(25))];
        // A train (1 ms apart) at constant delay: only bit 1 exits.
        let train = [(10, ms(3), ms(20)), (20, ms(1), ms(20))];
        for (mask, d, t) in [(0, None, None), (1, None, Some((1, 11))), (2, Some((1, 8)), None), (3, Some((1, 8)), Some((1, 11)))] {
            let mut c = with(|c| c.hystart_detect = mask);
            assert_eq!(hystart(&mut c, 32, &delay), d, "mask {mask}, delay");
            let mut c = with(|c| c.hystart_detect = mask);
            assert_eq!(hystart(&mut c, 32, &train), t, "mask {mask}, train");
        }
        // hystart = false disables both.
        let mut c = with(|c| c.hystart = false);
        assert_eq!(hystart(&mut c, 32, &delay), None);
    }

    #[test]
    fn integer_cube_root_is_exact_where_f64_rounds_up() {
        // 2^120 − 1 rounds to 2^120 as f64, whose cube root is exactly 2^40:
        // the correction must step down.
        for n in [1u64, 2, 3, 1000, 4_217, 1 << 20, (1 << 40) - 3, 1 << 40] {
            let cube = u128::from(n).pow(3);
            assert_eq!(icbrt(cube), n, "cbrt({n}^3)");
            assert_eq!(icbrt(cube - 1), n - 1, "cbrt({n}^3 - 1)");
            assert_eq!(icbrt(cube + 1), n, "cbrt({n}^3 + 1)");
        }
        assert_eq!(icbrt(0), 0);
        assert_eq!(icbrt(u128::MAX), 6_981_463_658_331, "⌊∛(2^128 − 1)⌋");
    }

    #[test]
    fn w_est_gains_one_segment_per_cwnd_times_15_over_8_acked() {
        // tcp_cubic.c tcp_friendliness: delta = cwnd·beta_scale >> 3 =
        // 70·15/8 = 131 ACKed segments per +1 of W_est (tcp_cwnd).
        let mut c = cubic();
        let t = after_loss(&mut c, 100, ms(100));
        assert_eq!(t.cwnd, 70);
        let t0 = t.now;
        c.update(70, 131, t0); // epoch starts: W_est = cwnd, ack_cnt = 131
        assert_eq!((c.s.w_est, c.s.ack_cnt), (70, 131), "not yet more than delta");
        c.update(70, 1, t0 + ms(40)); // 132 > 131: one credit
        assert_eq!((c.s.w_est, c.s.ack_cnt), (71, 1));
        // The cubic target (≈ 73 at t + delay_min = 0.14 s) is steeper:
        // cnt = 70 / 3 = 23 < 70 / (71 − 70).
        assert_eq!(c.s.cnt, 23);
        c.update(70, 393, t0 + ms(80)); // 394 = 3·131 + 1
        assert_eq!((c.s.w_est, c.s.ack_cnt), (74, 1));
        // Now the Reno-friendly window leads: cnt = 70 / (74 − 70) = 17 < 23.
        assert_eq!(c.s.cnt, 70 / 4);
        // Within the same jiffy and cwnd the update returns early but
        // still counts the ACKs.
        c.update(70, 5, t0 + ms(80));
        assert_eq!((c.s.w_est, c.s.ack_cnt), (74, 6));
        // An exact multiple is credited in full (n = ack_cnt / delta).
        c.update(70, 256, t0 + ms(120)); // 262 = 2·131
        assert_eq!((c.s.w_est, c.s.ack_cnt), (76, 0));
        // Without tcp_friendliness W_est is never credited.
        let mut c = with(|c| c.tcp_friendliness = false);
        let t = after_loss(&mut c, 100, ms(100));
        c.update(70, 1000, t.now);
        c.update(70, 1000, t.now + ms(40));
        assert_eq!(c.s.w_est, 70);
    }

    #[test]
    fn hystart_ack_train_threshold_is_halved_only_when_unpaced() {
        // tcp_cubic.c hystart_update: threshold = delay_min + cushion, >>= 1
        // only for SK_PACING_NONE. 1 ms spacing, delay_min 20 ms, no cushion
        // (srtt unknown): unpaced ends after 11 ms, paced after 21 ms.
        let rounds = [(10, ms(3), ms(20)), (30, ms(1), ms(20))];
        assert_eq!(hystart_paced(&mut cubic(), 32, false, &rounds), Some((1, 11)));
        assert_eq!(hystart_paced(&mut cubic(), 32, true, &rounds), Some((1, 21)));
        let short = [(10, ms(3), ms(20)), (21, ms(1), ms(20))];
        assert_eq!(hystart_paced(&mut cubic(), 32, true, &short), None);
    }

    #[test]
    fn hystart_cushion_is_four_gso_frames_at_the_slow_start_pacing_rate() {
        // hystart_ack_delay: min(1 ms, 4 * 65536 B / rate), rate = 2 * cwnd *
        // mss / srtt. cwnd 100, mss 1448, srtt 10 ms: 4*65536*10ms/289600 B
        // = 9.05 ms -> capped at 1 ms; cwnd 1000, srtt 1 ms: 0.0905 ms.
        let mut t = flow(100);
        t.srtt = ms(10);
        assert_eq!(Cubic::ack_train_cushion(&t), ms(1));
        t.cwnd = 1000;
        t.srtt = ms(1);
        let want = 4 * 65_536 * 1_000_000 / (2 * 1000 * 1448);
        assert_eq!(Cubic::ack_train_cushion(&t), Dur(want));
        t.in_flight = 2000; // max(cwnd, packets in flight)
        assert_eq!(Cubic::ack_train_cushion(&t), Dur(want / 2));
        t.srtt = Dur::ZERO;
        assert_eq!(Cubic::ack_train_cushion(&t), Dur::ZERO);
    }

    #[test]
    fn rto_resets_cubic_and_hystart_state() {
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, ms(100));
        c.cong_avoid(&mut t, 1);
        assert!(c.s.epoch_start.is_some() && c.s.w_max == 100);
        t.snd_nxt = 500;
        c.on_state(&mut t, CaState::Loss);
        assert_eq!(
            (c.s.w_max, c.s.epoch_start, c.s.delay_min),
            (0, None, Dur::ZERO)
        );
        assert_eq!(c.hy.end_seq, 500);
        c.ssthresh(&t);
        assert_eq!(c.s.w_max, 70); // no fast convergence against a stale W_max
    }

    #[test]
    fn idle_time_shifts_the_epoch() {
        let mut c = cubic();
        let mut t = after_loss(&mut c, 100, ms(100));
        c.cong_avoid(&mut t, 1); // epoch starts at 1 s
        t.now = SimTime::from_secs_f64(5.0);
        c.on_tx_start(&t, Dur::from_secs(2));
        assert_eq!(c.s.epoch_start, Some(SimTime::from_secs_f64(3.0)));
        c.on_tx_start(&t, Dur::from_secs(10));
        assert_eq!(c.s.epoch_start, Some(t.now));
    }

    #[test]
    fn config_defaults_and_strict_parsing() {
        let c: CubicConfig = toml::from_str("hystart_ack_delta = \"3ms\"").unwrap();
        assert_eq!(
            c,
            CubicConfig {
                hystart_ack_delta: ms(3),
                ..Default::default()
            }
        );
        assert!(toml::from_str::<CubicConfig>("betta = 700").is_err());
        let c = cubic();
        assert_eq!((c.beta_scale, c.cube_rtt_scale), (15, 410));
    }
}
