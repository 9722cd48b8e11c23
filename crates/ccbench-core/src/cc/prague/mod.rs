//! TCP Prague v0.7 (L4STeam/linux net/ipv4/tcp_prague.c, 2024;
//! draft-briscoe-iccrg-prague-congestion-control; RFC 9331 §4, the
//! "Prague requirements"), with v0.6's classic-ECN-bottleneck detection
//! (`prague_ecn_fallback`) as an option.
//!
//! Versions: `cc_params.version` = "v0.7" (default), "v0.6" (L4STeam 5.15:
//! α₀ = 1, RTT independence after 500 rounds, window only, pacing from the
//! integer cwnd) or "2020-04" (L4STeam `e741f5ac`, modelled with v0.6's
//! laws and classic-ECN detection, and without the `in_loss` gate: a loss
//! halves the fractional window as a debt that slow start does not pay, so
//! on a drop-only path the window keeps growing and ssthresh, hence the
//! detector's slowest filter gain, stays put; see `version.rs` for the
//! sources and what is inferred). The differences are one table in
//! `version.rs`; an explicit key overrides its version's default.
//!
//! Prague sets cwnd and the pacing rate itself (`cong_control`). Per ACK:
//! `acked` = delivered − CE-marked (the first CE ever halves the window once
//! when α₀ = 0); no growth in loss recovery or when not cwnd-limited; Linux
//! slow start below ssthresh; else the fractional window grows by
//! acked·ai/frac_cwnd with ai = 1 segment, or (srtt/rtt_target)² once
//! RTT-independent (the rate then grows as at the target RTT). At a round end
//! (and ≥ rtt_target after the last update when RTT-independent)
//! α ← α − α·g + g·F, F = ΔCE/Δdelivered. The real cwnd steps ±1 segment
//! per ACK towards ⌈frac_cwnd⌉ (≥ 2), ssthresh = cwnd on each decrement.
//! Pacing: MTU·max(frac_cwnd, in_flight)/srtt, ×2 while cwnd < ssthresh/2.
//! CE (CWR entry): frac_cwnd −= frac_cwnd·α/2, at most once per rtt_target
//! when RTT-independent. Loss (Recovery entry, RTO): halve, no growth until
//! Open (2020-04: no gate, see above); α is not touched; `ssthresh()`
//! leaves ssthresh unchanged. Rate mode (cwnd_mode 1, or
//! 2 while CE was seen and cwnd·MTU ≤ cwnd_transit·1500 B) acts once
//! RTT-independent: the state is a rate growing by 1500 B/vRTT per vRTT
//! (vRTT = max(srtt, rtt_target)), cut ×(1 − α/2) on CE and ×½ on loss, paced
//! +3 % in the first half of each vRTT after an α update and −3 % after; the
//! window follows the rate.
//!
//! Units: time in ns (Linux: µs); frac_cwnd in 2^-20 segment; α in 2^-24,
//! stored ×2^shift_g (`upscaled_alpha`); rates in bytes/s inside, bit/s at
//! `pacing_rate()`; "MTU" = mss + 52 B (Linux `tcp_mss_to_mtu`). Linux's
//! rate↔window conversions take 2^20 µs as a second (`RTT2SEC_SHIFT`); that
//! 4.9 % is kept ([`LINUX_SEC_NS`]).
//!
//! Deviations from the L4STeam kernel:
//! - `rtt_independence = false` is ours (like v0.6 `prague_rtt_scaling = 0`):
//!   ai stays 1; no α-update or CE-cut spacing; no rate mode.
//! - State is initialised at the first hook call (Linux: `prague_init` after
//!   the handshake); pacing stays off until the first RTT sample.
//! - Rounds assume `tcp.snd_una`/`in_flight` are current when the hooks run,
//!   as in Linux (snd_una is updated before `cong_control`).
//! - The TCP layer resets cwnd to 1 before `on_state(Loss)`; the RTO's loss
//!   response uses the cwnd seen by `ssthresh()` (Linux's CA_EVENT_LOSS
//!   precedes the reset).
//! - Not modelled: `prague_max_tso_segs` (0, no cap), shrinking the MSS to
//!   150 B at low rates (`prague_valid_mtu`: the MSS is fixed),
//!   `snd_cwnd_clamp`, `sk_max_pacing_rate`, the "prague-reno" fallback when
//!   AccECN is not negotiated.
//! - ecn_fallback (v0.6 only) runs on v0.7's state; its score uses exact
//!   log2 where v0.6 uses integer logs with a carried remainder. v0.6's
//!   reference levels are 1/16 of their intended size, as in the 5.15
//!   tree (see `version.rs`).

mod version;

use serde::{Deserialize, Serialize};

pub use version::{LossLaw, PacingLaw, PragueVersion, VersionParams};

use super::{AckEvent, CaState, CongestionControl, EcnMode, TcpCcState};
use crate::packet::{Ecn, TCP_IP_HDR};
use crate::units::{Dur, Rate, SimTime};

const CWND_UNIT: u32 = 20;
const ONE_CWND: u64 = 1 << CWND_UNIT;
const ALPHA_BITS: u32 = 24;
/// α = 1.0 (`PRAGUE_MAX_ALPHA`).
const MAX_ALPHA: u64 = 1 << ALPHA_BITS;
/// Minimum real cwnd (`MIN_CWND_RTT`), segments.
const MIN_CWND: u32 = 2;
/// Pacing floor, bytes/s (100 kbit/s, `MINIMUM_RATE`).
const MINIMUM_RATE: u64 = 12_500;
/// Reference packet size for the increase laws (`MTU_SYS`), bytes.
const MTU_SYS: u64 = 1500;
/// Rate-mode dither: 4/128 ≈ 3 % (`RATE_OFFSET`, `OFFSET_UNIT`).
const RATE_OFFSET: u64 = 4;
const OFFSET_UNIT: u32 = 7;
/// Gain of the slow srtt average `hsrtt`: 1/128.
const HSRTT_SHIFT: u32 = 7;
/// `prague_burst_shift`: a GSO packet lasts at most 2^-12 s at the pacing rate.
const BURST_SHIFT: u32 = 12;
/// Above this srtt the increase is not scaled (`MAX_SCALED_RTT`).
const MAX_SCALED_RTT: Dur = Dur::from_millis(100);
/// Linux's "second" in rate↔window conversions: 2^20 µs, in ns.
pub const LINUX_SEC_NS: u128 = (1 << 20) * 1000;

/// `prague_alpha_mode`: how α starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum AlphaMode {
    /// 0: α₀ = 0, the window is halved once at the first CE mark (v0.7).
    HalveAtFirstMark,
    /// 1: α₀ = 1 (v0.6, DCTCP).
    InitOne,
}

/// `prague_cwnd_mode`: window or rate as the controlled state.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum CwndMode {
    /// 0: fractional window only.
    FracWin,
    /// 1: rate mode once RTT-independent.
    Rate,
    /// 2: rate mode while the window is ≤ cwnd_transit·1500 B (and CE seen).
    Switch,
}

/// `prague_ecn_fallback` (v0.6): classic-ECN bottleneck detection.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum EcnFallback {
    /// 0: none.
    Off,
    /// 1: detect, and floor the α of CE cuts once the score says classic.
    DetectAndFallback,
    /// 2: detect only (the score is kept, see [`Prague::classic_ecn_score`]).
    DetectOnly,
}

macro_rules! u8_enum {
    ($t:ty, $what:literal, [$($v:ident = $n:literal),+]) => {
        impl TryFrom<u8> for $t {
            type Error = String;
            fn try_from(n: u8) -> Result<Self, String> {
                match n {
                    $($n => Ok(<$t>::$v),)+
                    _ => Err(format!(concat!($what, " must be one of {:?}, got {}"), [$($n),+], n)),
                }
            }
        }
        impl From<$t> for u8 {
            fn from(m: $t) -> u8 {
                match m { $(<$t>::$v => $n,)+ }
            }
        }
    };
}
u8_enum!(AlphaMode, "alpha_mode", [HalveAtFirstMark = 0, InitOne = 1]);
u8_enum!(CwndMode, "cwnd_mode", [FracWin = 0, Rate = 1, Switch = 2]);
u8_enum!(EcnFallback, "ecn_fallback", [Off = 0, DetectAndFallback = 1, DetectOnly = 2]);

/// Prague's knobs; defaults are the module parameters of `version`
/// (v0.7 unless set; see `version.rs` for the table). A key given
/// explicitly overrides the version's default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "PragueConfigRaw")]
pub struct PragueConfig {
    /// The kernel tree modelled: "2020-04", "v0.6" or "v0.7".
    pub version: PragueVersion,
    /// Virtual RTT for RTT independence (`prague_rtt_target`).
    pub rtt_target: Dur,
    /// Rounds after slow start before RTT independence (`prague_rtt_transition`).
    pub rtt_transition: u32,
    /// RTT independence on/off (v0.7 always on; v0.6 `prague_rtt_scaling`).
    pub rtt_independence: bool,
    /// 0: α₀ = 0, halve at the first mark; 1: α₀ = 1 (`prague_alpha_mode`).
    pub alpha_mode: AlphaMode,
    /// 0 fractional window, 1 rate, 2 switch (`prague_cwnd_mode`).
    pub cwnd_mode: CwndMode,
    /// Switch point of cwnd_mode 2, in 1500 B packets (`prague_cwnd_transit`).
    pub cwnd_transit: u32,
    /// 0 off, 1 detect + fallback, 2 detect only (v0.6 `prague_ecn_fallback`).
    pub ecn_fallback: EcnFallback,
    /// EWMA gain g = 2^-shift_g (`PRAGUE_SHIFT_G`); clamped to ≤ 16.
    pub shift_g: u32,
}

impl Default for PragueConfig {
    fn default() -> Self {
        PragueConfig::for_version(PragueVersion::default())
    }
}

/// The config as written: unset keys take the version's defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PragueConfigRaw {
    version: Option<PragueVersion>,
    rtt_target: Option<Dur>,
    rtt_transition: Option<u32>,
    rtt_independence: Option<bool>,
    alpha_mode: Option<AlphaMode>,
    cwnd_mode: Option<CwndMode>,
    cwnd_transit: Option<u32>,
    ecn_fallback: Option<EcnFallback>,
    shift_g: Option<u32>,
}

impl From<PragueConfigRaw> for PragueConfig {
    fn from(r: PragueConfigRaw) -> Self {
        let d = PragueConfig::for_version(r.version.unwrap_or_default());
        PragueConfig {
            version: d.version,
            rtt_target: r.rtt_target.unwrap_or(d.rtt_target),
            rtt_transition: r.rtt_transition.unwrap_or(d.rtt_transition),
            rtt_independence: r.rtt_independence.unwrap_or(d.rtt_independence),
            alpha_mode: r.alpha_mode.unwrap_or(d.alpha_mode),
            cwnd_mode: r.cwnd_mode.unwrap_or(d.cwnd_mode),
            cwnd_transit: r.cwnd_transit.unwrap_or(d.cwnd_transit),
            ecn_fallback: r.ecn_fallback.unwrap_or(d.ecn_fallback),
            shift_g: r.shift_g.unwrap_or(d.shift_g),
        }
    }
}

impl PragueConfig {
    /// The module defaults of one kernel tree.
    pub fn for_version(version: PragueVersion) -> PragueConfig {
        let v = version.params();
        PragueConfig {
            version,
            rtt_target: Dur::from_millis(25),
            rtt_transition: v.rtt_transition,
            rtt_independence: true,
            alpha_mode: v.alpha_mode,
            cwnd_mode: v.cwnd_mode,
            cwnd_transit: 4,
            ecn_fallback: v.ecn_fallback,
            shift_g: 4,
        }
    }

    pub fn build(&self) -> Prague {
        let cfg = PragueConfig { shift_g: self.shift_g.min(16), ..self.clone() };
        Prague {
            cfg,
            started: false,
            upscaled_alpha: 0,
            alpha_stamp: SimTime::ZERO,
            cwr_stamp: None,
            ai_ack_increase: ONE_CWND,
            hsrtt: 0,
            frac_cwnd: 0,
            rate_bytes: MINIMUM_RATE,
            loss_rate_bytes: 0,
            loss_cwnd: 0,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            round: 0,
            saw_ce: false,
            in_loss: false,
            rate_mode: false,
            pacing: None,
            ca_state: CaState::Open,
            cwnd_at_ssthresh: 0,
            classic: ClassicEcn::new(self.version.params().ecn_fallback_ref_shift),
        }
    }
}

/// A Prague sender's congestion-control state; build with [`PragueConfig::build`].
pub struct Prague {
    cfg: PragueConfig,
    started: bool,
    /// α·2^shift_g in 2^-24 (`upscaled_alpha`).
    upscaled_alpha: u64,
    /// Time of the last α update (`alpha_stamp`) and CE cut (`cwr_stamp`).
    alpha_stamp: SimTime,
    cwr_stamp: Option<SimTime>,
    /// Increase per unmarked ACKed segment, 2^-20 segment (`ai_ack_increase`).
    ai_ack_increase: u64,
    /// Slow srtt average, ns << HSRTT_SHIFT (`hsrtt_us`).
    hsrtt: u64,
    /// Fractional window, 2^-20 segment.
    frac_cwnd: u64,
    /// Internal rate, bytes/s (the state in rate mode), and its value at loss.
    rate_bytes: u64,
    loss_rate_bytes: u64,
    /// cwnd at the last loss, for undo.
    loss_cwnd: u32,
    /// The round ends when snd_una reaches `next_seq`; counters at its start.
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// Rounds since slow start ended (`round`).
    round: u32,
    /// CE seen: an AQM is on the path.
    saw_ce: bool,
    /// In a loss reduction: no increase until Open.
    in_loss: bool,
    /// The rate-mode bit (`cwnd_mode`); effective only when RTT-independent.
    rate_mode: bool,
    /// The pacing rate set on the last ACK.
    pacing: Option<Rate>,
    /// The last state the TCP layer reported (`icsk_ca_state`).
    ca_state: CaState,
    cwnd_at_ssthresh: u32,
    classic: ClassicEcn,
}

/// Round-to-nearest a / b, b > 0.
fn div_closest(a: u128, b: u128) -> u128 {
    (a + b / 2) / b
}

impl Prague {
    /// α in [0, 1].
    pub fn alpha_frac(&self) -> f64 {
        (self.upscaled_alpha >> self.cfg.shift_g) as f64 / MAX_ALPHA as f64
    }
    /// The fractional window, segments.
    pub fn frac_cwnd(&self) -> f64 {
        self.frac_cwnd as f64 / ONE_CWND as f64
    }
    /// Whether the rate-mode bit is set (acting only when RTT-independent).
    pub fn rate_mode(&self) -> bool {
        self.rate_mode
    }
    /// The classic-ECN evidence score in α units: ≤ 8 L4S, 9 transition,
    /// 17 classic (0 unless ecn_fallback is on).
    pub fn classic_ecn_score(&self) -> f64 {
        self.classic.score
    }

    /// The detector's RTT-filter gain exponent g (gain 2^-g; 18 until the
    /// first `ssthresh()` call).
    pub fn classic_gain_shift(&self) -> u32 {
        self.classic.g_srtt
    }
    /// The detector's smoothed RTT (`srtt_pace_us >> g_srtt_shift`).
    pub fn classic_srtt(&self) -> Dur {
        Dur(self.classic.srtt_pace >> self.classic.g_srtt)
    }

    fn mtu(tcp: &TcpCcState) -> u64 {
        u64::from(tcp.mss + TCP_IP_HDR)
    }

    /// Linux `prague_init`, at the first hook call.
    fn start(&mut self, tcp: &TcpCcState) {
        if self.started {
            return;
        }
        self.started = true;
        self.alpha_stamp = tcp.now;
        self.upscaled_alpha = match self.cfg.alpha_mode {
            AlphaMode::HalveAtFirstMark => 0,
            AlphaMode::InitOne => MAX_ALPHA << self.cfg.shift_g,
        };
        self.frac_cwnd = u64::from(tcp.cwnd) << CWND_UNIT;
        self.rate_bytes = if tcp.srtt > Dur::ZERO {
            (Self::per_packet_rate(tcp) * u64::from(tcp.cwnd.max(tcp.in_flight))).max(MINIMUM_RATE)
        } else {
            MINIMUM_RATE
        };
        // hsrtt defaults to 1 µs without an RTT estimate.
        self.hsrtt = tcp.srtt.nanos().max(1000) << HSRTT_SHIFT;
        self.rate_mode = self.cfg.cwnd_mode == CwndMode::Rate;
        self.new_round(tcp);
    }

    fn is_rtt_indep(&self, tcp: &TcpCcState) -> bool {
        self.cfg.rtt_independence && !tcp.in_slow_start() && self.round >= self.cfg.rtt_transition
    }
    fn rate_mode_active(&self, tcp: &TcpCcState) -> bool {
        self.rate_mode && self.is_rtt_indep(tcp)
    }
    fn since(now: SimTime, stamp: SimTime) -> Dur {
        Dur(now.0.saturating_sub(stamp.0))
    }
    /// `prague_virtual_rtt`: max(rtt_target, srtt).
    fn vrtt(&self, tcp: &TcpCcState) -> Dur {
        self.cfg.rtt_target.max(tcp.srtt)
    }

    /// Bytes/s for one MTU per srtt (Linux divides by srtt_us when known).
    fn per_packet_rate(tcp: &TcpCcState) -> u64 {
        let mtu = u128::from(Self::mtu(tcp));
        match tcp.srtt.nanos() {
            0 => (mtu * 8_000_000) as u64,
            s => (mtu * 1_000_000_000 / u128::from(s)) as u64,
        }
    }
    /// `prague_frac_cwnd_to_pacing_rate`: MTU·frac_cwnd/srtt, ≥ 100 kbit/s.
    fn frac_cwnd_to_rate(&self, tcp: &TcpCcState) -> u64 {
        let r = (u128::from(Self::per_packet_rate(tcp)) * u128::from(self.frac_cwnd)) >> CWND_UNIT;
        (r as u64).max(MINIMUM_RATE)
    }
    /// `prague_pacing_rate_to_frac_cwnd`: rate·hsrtt/MTU in 2^-20 segment,
    /// with Linux's 2^20 µs second.
    fn rate_to_frac_cwnd(&self, tcp: &TcpCcState) -> u64 {
        let rtt = match self.hsrtt >> HSRTT_SHIFT {
            0 => tcp.srtt.nanos(),
            h => h,
        };
        let num = u128::from(self.rate_bytes) * u128::from(rtt) * u128::from(ONE_CWND);
        (num / LINUX_SEC_NS).div_ceil(u128::from(Self::mtu(tcp))) as u64
    }
    /// `prague_frac_cwnd_to_snd_cwnd`: ⌈frac_cwnd⌉, ≥ 2.
    fn frac_to_cwnd(&self) -> u32 {
        let c = self.frac_cwnd.div_ceil(ONE_CWND).min(u64::from(u32::MAX)) as u32;
        c.max(MIN_CWND)
    }

    /// `prague_ai_ack_increase`: 1 segment, or (srtt/target)² segment
    /// once RTT-independent below the target.
    fn update_ai(&mut self, tcp: &TcpCcState) {
        let srtt = tcp.srtt;
        let target = self.cfg.rtt_target;
        self.ai_ack_increase = if !self.cfg.rtt_independence
            || self.round < self.cfg.rtt_transition
            || srtt == Dur::ZERO
            || srtt > MAX_SCALED_RTT
            || srtt >= target
        {
            ONE_CWND
        } else {
            // Reduced RTT dependence (RFC 9331 §4.3): scaled by
            // (srtt/rtt_target)², the rate grows as at the target RTT.
            let r = u128::from(srtt.nanos());
            let t = u128::from(target.nanos());
            div_closest((r * r) << CWND_UNIT, t * t) as u64
        };
    }

    /// `prague_new_round`.
    fn new_round(&mut self, tcp: &TcpCcState) {
        self.next_seq = tcp.snd_nxt;
        self.old_delivered = tcp.delivered;
        self.old_delivered_ce = tcp.delivered_ce;
        if !tcp.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.update_ai(tcp);
    }

    /// `prague_should_update_ewma`.
    fn should_update_alpha(&self, tcp: &TcpCcState) -> bool {
        tcp.snd_una >= self.next_seq
            && (!self.is_rtt_indep(tcp) || Self::since(tcp.now, self.alpha_stamp) >= self.cfg.rtt_target)
    }

    /// `prague_update_alpha`, at a round end.
    fn update_alpha(&mut self, tcp: &TcpCcState) {
        if self.saw_ce {
            if self.cfg.ecn_fallback != EcnFallback::Off {
                self.classic.on_round(tcp);
            }
            // DCTCP's α = (1 − g)·α + g·F (RFC 8257 §3.3), kept as α/g so
            // the remainder carries over.
            let mut f = tcp.delivered_ce - self.old_delivered_ce;
            if f > 0 {
                f = (f << ALPHA_BITS) / (tcp.delivered - self.old_delivered).max(1);
            }
            let a = self.upscaled_alpha - (self.upscaled_alpha >> self.cfg.shift_g) + f;
            self.alpha_stamp = tcp.now;
            self.upscaled_alpha = a.min(MAX_ALPHA << self.cfg.shift_g);
        }
        self.hsrtt = self.hsrtt + tcp.srtt.nanos() - (self.hsrtt >> HSRTT_SHIFT);
        self.new_round(tcp);
    }

    /// `prague_update_cwnd`.
    fn update_cwnd(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) {
        let mut acked = i64::from(ev.acked);
        if ev.acked_ce > 0 {
            // α₀ = 0: halve once at the first mark ever. (In slow start an
            // ACK with unmarked segments then resets frac_cwnd to cwnd, as
            // in Linux; the halving sticks once an all-CE ACK or CA comes.)
            if !self.saw_ce && self.cfg.alpha_mode == AlphaMode::HalveAtFirstMark {
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= i64::from(ev.acked_ce);
        }
        let debt = self.cfg.version.params().loss == LossLaw::Debt;
        // The in_loss gate (v0.6, v0.7); 2020-04 has none.
        let gated = self.in_loss && !debt;
        if acked > 0 && !gated && tcp.is_cwnd_limited() {
            let mut acked = acked as u64;
            if tcp.in_slow_start() {
                let before = tcp.cwnd;
                acked = u64::from(tcp.slow_start(acked as u32));
                if debt {
                    // 2020-04: slow start moves snd_cwnd and leaves the
                    // carry (a loss or CE debt) unpaid (`cwnd_cnt`).
                    self.frac_cwnd += u64::from(tcp.cwnd - before) << CWND_UNIT;
                } else {
                    self.frac_cwnd = u64::from(tcp.cwnd) << CWND_UNIT;
                }
                if acked == 0 {
                    self.update_ai(tcp);
                    return;
                }
            }
            if self.rate_mode_active(tcp) {
                // +1500 B per vRTT per vRTT: the rate grows by
                // 1500 B/vRTT spread over a vRTT's worth of ACKs.
                let vrtt = u128::from(self.vrtt(tcp).nanos()).max(1);
                let increase = u128::from(acked * MTU_SYS) * LINUX_SEC_NS / vrtt;
                let wnd = (u128::from(self.rate_bytes) * vrtt).div_ceil(u128::from(Self::mtu(tcp)) * LINUX_SEC_NS);
                if wnd > 0 {
                    self.rate_bytes += div_closest(increase, wnd) as u64;
                }
                self.frac_cwnd = (self.frac_cwnd + acked).max(self.rate_to_frac_cwnd(tcp));
            } else {
                // frac_cwnd += acked·ai/frac_cwnd (unmarked segments only),
                // normalised to 1500 B packets.
                let mut increase = u128::from(acked) * u128::from(self.ai_ack_increase);
                if self.frac_cwnd > 0 {
                    increase = div_closest(increase << CWND_UNIT, u128::from(self.frac_cwnd));
                }
                let increase = (increase * u128::from(MTU_SYS) / u128::from(Self::mtu(tcp))) as u64;
                self.frac_cwnd += increase.max(acked);
                self.rate_bytes = (self.rate_bytes + acked).max(self.frac_cwnd_to_rate(tcp));
            }
        }
        // Step cwnd by one segment towards ⌈frac_cwnd⌉.
        let target = self.frac_to_cwnd();
        if tcp.cwnd > target {
            tcp.cwnd -= 1;
            tcp.ssthresh = tcp.cwnd;
            self.update_ai(tcp);
        } else if tcp.cwnd < target {
            tcp.cwnd += 1;
            self.update_ai(tcp);
        }
    }

    /// `prague_update_pacing_rate`.
    fn update_pacing(&mut self, tcp: &TcpCcState) {
        let mut rate = if self.rate_mode_active(tcp) {
            let offset = (RATE_OFFSET * self.rate_bytes) >> OFFSET_UNIT;
            if Self::since(tcp.now, self.alpha_stamp) >= self.vrtt(tcp) / 2 {
                self.rate_bytes - offset
            } else {
                self.rate_bytes + offset
            }
        } else {
            let window = match self.cfg.version.params().pacing {
                PacingLaw::FracCwnd => self.frac_cwnd >> CWND_UNIT,
                PacingLaw::Cwnd => u64::from(tcp.cwnd),
            };
            let inflight = window.max(u64::from(tcp.in_flight));
            self.rate_bytes = (Self::per_packet_rate(tcp) * inflight).max(MINIMUM_RATE);
            self.rate_bytes
        };
        if tcp.cwnd < tcp.ssthresh / 2 {
            rate <<= 1;
        }
        self.pacing = (tcp.srtt > Dur::ZERO).then(|| Rate(rate.saturating_mul(8)));
    }

    /// `prague_enter_cwr`: the CE response.
    fn enter_cwr(&mut self, tcp: &TcpCcState) {
        // When RTT-independent, at most one reduction per rtt_target.
        if self.is_rtt_indep(tcp) && self.cwr_stamp.is_some_and(|s| Self::since(tcp.now, s) < self.cfg.rtt_target) {
            return;
        }
        self.cwr_stamp = Some(tcp.now);
        let mut alpha = self.upscaled_alpha >> self.cfg.shift_g;
        if self.cfg.ecn_fallback == EcnFallback::DetectAndFallback {
            alpha = alpha.max(self.classic.alpha_floor());
        }
        if self.rate_mode_active(tcp) {
            let reduction = (u128::from(self.rate_bytes) * u128::from(alpha)) >> (ALPHA_BITS + 1);
            self.rate_bytes = (self.rate_bytes - reduction as u64).max(MINIMUM_RATE);
            self.frac_cwnd = self.rate_to_frac_cwnd(tcp);
        } else {
            // Scalable decrease (RFC 9331 §4.3): −α/2, rounded to nearest.
            let reduction =
                (u128::from(alpha) * u128::from(self.frac_cwnd) + u128::from(MAX_ALPHA)) >> (ALPHA_BITS + 1);
            self.frac_cwnd -= reduction as u64;
            self.rate_bytes = self.frac_cwnd_to_rate(tcp);
        }
    }

    /// `prague_enter_loss`: Reno-friendly halving (RFC 9331 §4.3).
    fn enter_loss(&mut self, tcp: &TcpCcState) {
        self.loss_cwnd = tcp.cwnd;
        self.loss_rate_bytes = self.rate_bytes;
        if self.rate_mode_active(tcp) {
            self.rate_bytes -= self.rate_bytes >> 1;
            self.frac_cwnd = self.rate_to_frac_cwnd(tcp);
        } else {
            self.frac_cwnd -= self.frac_cwnd >> 1;
            self.rate_bytes = self.frac_cwnd_to_rate(tcp);
        }
        self.in_loss = true;
    }
}

impl CongestionControl for Prague {
    /// Linux `prague_ssthresh`: unchanged (Prague cuts its own window).
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        self.start(tcp);
        self.cwnd_at_ssthresh = tcp.cwnd;
        if self.cfg.ecn_fallback != EcnFallback::Off {
            self.classic.update_gain(tcp.ssthresh);
        }
        tcp.ssthresh
    }

    /// Unused: `cong_control` owns cwnd.
    fn cong_avoid(&mut self, _tcp: &mut TcpCcState, _acked: u32) {}

    fn on_rtt(&mut self, _tcp: &mut TcpCcState, rtt: Dur) {
        if self.cfg.ecn_fallback != EcnFallback::Off {
            self.classic.on_rtt(rtt);
        }
    }

    /// Linux `prague_state` and `prague_cwnd_event(CA_EVENT_LOSS)`.
    fn on_state(&mut self, tcp: &mut TcpCcState, state: CaState) {
        self.start(tcp);
        if state == self.ca_state {
            return;
        }
        match state {
            CaState::Recovery => self.enter_loss(tcp),
            CaState::Cwr => self.enter_cwr(tcp),
            CaState::Open => self.in_loss = false,
            // RTO: Linux raises CA_EVENT_LOSS (with the pre-RTO cwnd) only
            // when the timeout found the connection Open/Disorder.
            CaState::Loss if matches!(self.ca_state, CaState::Open | CaState::Disorder) => {
                let mut before = tcp.clone();
                before.cwnd = self.cwnd_at_ssthresh.max(1);
                self.enter_loss(&before);
            }
            CaState::Loss | CaState::Disorder => {}
        }
        self.ca_state = state;
    }

    fn on_ack_event(&mut self, tcp: &mut TcpCcState, _ev: &AckEvent) {
        self.start(tcp);
    }

    /// Linux `prague_cwnd_undo`.
    fn undo_cwnd(&mut self, tcp: &TcpCcState, _prior_cwnd: u32) -> u32 {
        self.in_loss = false;
        self.rate_bytes = self.rate_bytes.max(self.loss_rate_bytes);
        self.frac_cwnd = self.rate_to_frac_cwnd(tcp);
        self.loss_cwnd.max(tcp.cwnd)
    }

    /// RFC 9331 §4.1: ECT(1) on every packet, Accurate ECN feedback.
    fn ecn_mode(&self) -> EcnMode {
        EcnMode::Accurate(Ecn::Ect1)
    }

    /// tcp_prague.c: `.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN`.
    fn needs_ecn(&self) -> bool {
        true
    }

    /// Linux `prague_cong_control`.
    fn cong_control(&mut self, tcp: &mut TcpCcState, ev: &AckEvent) -> bool {
        self.start(tcp);
        self.update_cwnd(tcp, ev);
        if self.should_update_alpha(tcp) {
            self.update_alpha(tcp);
        }
        self.update_pacing(tcp);
        if self.cfg.cwnd_mode == CwndMode::Switch {
            let cwnd_bytes = u64::from(tcp.cwnd) * Self::mtu(tcp);
            if self.saw_ce && cwnd_bytes <= u64::from(self.cfg.cwnd_transit) * MTU_SYS {
                self.rate_mode = true;
                self.frac_cwnd = self.rate_to_frac_cwnd(tcp);
            } else {
                self.rate_mode = false;
                self.rate_bytes = self.frac_cwnd_to_rate(tcp);
            }
        }
        true
    }

    fn pacing_rate(&self, _tcp: &TcpCcState) -> Option<Rate> {
        self.pacing
    }

    /// `prague_tso_segs` (v0.6: `max_tso_segs`): a GSO packet holds at most
    /// 2^-prague_burst_shift s (≈ 244 µs) at the pacing rate, at least one
    /// segment (`max_tso_burst` starts at 1).
    fn max_tso_segs(&self, tcp: &TcpCcState) -> Option<u32> {
        let bytes_per_s = self.pacing.map_or(0, |r| r.0 / 8);
        Some(((bytes_per_s / Self::mtu(tcp)) >> BURST_SHIFT).max(1) as u32)
    }

    fn alpha(&self) -> Option<f64> {
        Some(self.alpha_frac())
    }

    /// The detector's score above the L4S band: its α floor
    /// 0.625·(min(score, 9) − 8) over 0.625 (`prague_classic_ecn_fallback`).
    fn classic(&self) -> Option<f64> {
        (self.cfg.ecn_fallback != EcnFallback::Off).then(|| self.classic.fallback())
    }
}

/// v0.6 `prague_classic_ecn_detection`: evidence that the CE marks come from
/// a classic (RFC 3168) AQM, from slow per-ACK RTT statistics. The score
/// integrates, once per α update, 0.5·log2(mdev/750 µs) (low RTT variation
/// pushes towards L4S) plus 0.5·log2(queue delay/2 ms) when positive
/// (a standing queue pushes towards classic), clamped to [0, 17].
struct ClassicEcn {
    /// Gains 2^-g_srtt and 2^-g_mdev of the filters (`g_srtt_shift`).
    g_srtt: u32,
    g_mdev: u32,
    /// srtt << g_srtt and mdev << g_mdev, ns (`srtt_pace_us`, `mdev_pace_us`).
    srtt_pace: u64,
    mdev_pace: u64,
    /// Score in α units (`classic_ecn`).
    score: f64,
    /// The reference levels are 2^-ref_shift of their intended size
    /// (`VersionParams::ecn_fallback_ref_shift`).
    ref_shift: u32,
}

/// Score thresholds: ≤ L_STICKY pure L4S, CLASSIC_ECN transition done,
/// C_STICKY the clamp.
const L_STICKY: f64 = 8.0;
const CLASSIC_ECN: f64 = 9.0;
const C_STICKY: f64 = 17.0;
const MAX_SRTT_BITS: u32 = 18;

impl ClassicEcn {
    fn new(ref_shift: u32) -> ClassicEcn {
        ClassicEcn { g_srtt: MAX_SRTT_BITS, g_mdev: MAX_SRTT_BITS + 1, srtt_pace: 0, mdev_pace: 0, score: 0.0, ref_shift }
    }

    /// `prague_rtt_estimator`, per RTT sample.
    fn on_rtt(&mut self, rtt: Dur) {
        let m = i128::from(rtt.nanos());
        if self.srtt_pace != 0 {
            let err = m - i128::from(self.srtt_pace >> self.g_srtt);
            self.srtt_pace = (i128::from(self.srtt_pace) + err) as u64;
            let dev = err.abs() - i128::from(self.mdev_pace >> self.g_mdev);
            self.mdev_pace = (i128::from(self.mdev_pace) + dev) as u64;
        } else {
            self.srtt_pace = (m as u64) << self.g_srtt;
            self.mdev_pace = 1000 << self.g_mdev; // 1 µs
        }
        self.srtt_pace = self.srtt_pace.max(1);
    }

    /// `prague_update_rtt_scaling` (from `ssthresh()`): g = ⌊log2 ssthresh⌋·1.5 + 1, ≤ 18.
    fn update_gain(&mut self, ssthresh: u32) {
        let lg = ssthresh.max(1).ilog2();
        let g = (lg + (lg >> 1) + 1).min(MAX_SRTT_BITS);
        let old = self.g_srtt;
        self.g_srtt = g;
        self.g_mdev = g + 1;
        if g > old {
            self.srtt_pace <<= g - old;
            self.mdev_pace <<= g - old;
        } else {
            self.srtt_pace >>= old - g;
            self.mdev_pace >>= old - g;
        }
    }

    /// Once per α update.
    fn on_round(&mut self, tcp: &TcpCcState) {
        let srtt = self.srtt_pace >> self.g_srtt;
        if srtt == 0 || tcp.min_rtt == Dur::MAX {
            return;
        }
        let lg_us = |ns: u64| (ns as f64 / 1000.0).max(1.0).log2();
        let scale = 1.0 / f64::from(1u32 << self.ref_shift);
        let mut s = self.score + 0.5 * (lg_us(self.mdev_pace >> self.g_mdev) - 750f64.log2() * scale);
        let min_rtt = tcp.min_rtt.nanos();
        if srtt > min_rtt {
            let depth = 0.5 * (lg_us(srtt - min_rtt) - 2000f64.log2() * scale);
            if depth > 0.0 {
                s += depth;
            }
        }
        self.score = s.clamp(0.0, C_STICKY);
    }

    /// How far the score is into the classic band: min(score, 9) − 8, at
    /// least 0 (0 L4S, 1 classic).
    fn fallback(&self) -> f64 {
        (self.score.min(CLASSIC_ECN) - L_STICKY).max(0.0)
    }

    /// `prague_classic_ecn_fallback`: α floor 0.625·(min(score, 9) − 8), in 2^-24.
    fn alpha_floor(&self) -> u64 {
        let c = (self.fallback() * MAX_ALPHA as f64) as u64;
        (c >> 1) + (c >> 3)
    }
}

#[cfg(test)]
mod tests;
