//! Which SCReAM code a media flow runs: the version table.
//!
//! Every difference between the code versions ccbench models lives here, as
//! one row of parameters per version; `ScreamTx` and the receiver read the
//! row and branch on its named hooks, never on the version itself. Sources:
//! EricssonResearch/scream at the named commit (paths under `code/`; line
//! numbers are at that commit), summarised in reference/scream-2024.md.
//!
//! - `head` (default): today's code as reference/scream.md describes it
//!   (HEAD c8f84c3). A user who sets nothing gets this.
//! - `2024-10`: commits `76a298a` (2024-10-31) and `e0af5ef` (the interop;
//!   its control law is identical), with the BW test tool of the same commit
//!   and the receiver of that time:
//!   - L4S backoff α/2 · max(0.5, 1 − MSS/cwnd), and when qdelay < T/4 also
//!     · max(0.25, sclI) (ScreamV2Tx.cpp:1567-1583); no ÷rttScale, no ×0.25
//!     undershoot guard, no jitter scale.
//!   - re-anchor after 5 s without congestion: cwnd ← min(cwnd,
//!     maxBytesInFlightPrev), backoff ≥ 0.25, α ≥ 0.25 (:1585-1609).
//!   - multiplicative-increase phase-in over a fixed 4 s: the BW tool's
//!     `postCongestionDelay` (scream_sender.cpp:68, 593; used
//!     ScreamV2Tx.cpp:1314-1316, 1689).
//!   - increase × max(0.25, sclI) while L4S is active, else × sclI
//!     (:1658-1666); × min(1, sRTT/25 ms); × max(0.5, 1 − MSS/cwnd) (:1679);
//!     the only gate is the max-allowed window (:1699-1702). "L4S active" =
//!     L4S on and a CE event within the last 5 s (:821).
//!   - target from cwnd: 8·cwnd/clamp(sRTT + 1 ms) ÷ min(1.5, flight ratio /
//!     0.9) only while L4S is inactive (:1727), small-window penalty,
//!     ÷ relFrameSizeHigh (1 here), × MSS/(MSS + 20) (:1720-1747); the
//!     stream's target is clamp(rateShare) (ScreamV2TxStream.cpp:300): no
//!     ÷1.1, no RTP-queue factor (1 + raf).
//!   - send gate cwnd · 1.5 · relFrameSizeHigh + MSS (:66, 426).
//!   - sRTT: plain EWMA, never slowed (:958-963).
//!   - sclI = clamp((4·(cwnd − cwndI)/cwndI)², 0.1, 1), computed before the
//!     reduction (:1522-1527); cwndI = median of the last 9 inflexion points
//!     (`updateCwndI`, :1279-1302; ScreamTx.h:107).
//!   - virtual CE only when L4S is inactive or α < 0.1·αlim, with αlim =
//!     2·MSS·8/(target·sRTT); it fires above qdelayAvg > T/2 with αv =
//!     min(1, αlim + max(0, (qdelayAvg − T/4)/(3T/4))) and backs off αv/2
//!     (:757-781, 1617-1623); qdelayAvg is the plain filter of qdelay, every
//!     min(30 ms, sRTT): follow down at once, else EWMA 1/4 (:747-755).
//!   - the base-delay reset (rate halved briefly once per 60 s) also runs
//!     whenever L4S is inactive (:1097).
//!   - L4S α: symmetric EWMA, gain 1/32 (:45, 736).
//!   - receiver feedback at most every 5 ms once running (ScreamRx.cpp:
//!     426-430: min(5 ms, 1/rate) with rate ≤ 100 Hz); HEAD: 40 ms.
//! - `2024-10-28`: commit `994f9a4`, what the test record's Test 2 ran.
//!   As `2024-10` except (ScreamV2Tx.cpp at 994f9a4): virtual CE already
//!   above qdelayAvg > T/4 (:773); no sclI scaling of the L4S backoff;
//!   increase × sclI only while L4S is inactive, × 1 while active
//!   (:1633-1640); sclI and the multiplicative term from the window after
//!   the reduction. The tool's default microburst interval was 1 ms
//!   (scream_sender.cpp:32-33); ccbench's `microburst_interval` is not
//!   version-selected, set it explicitly.
//!
//! Not modelled in the 2024 rows (stated, not hidden): the 2024 filter of
//! `queueDelayMinAvg` (min per 50 ms, else EWMA 0.005, :1408-1414) — the
//! base-delay reset condition uses HEAD's per-100-sRTT minimum instead; the
//! 2024 base-delay refresh while L4S is inactive (:317, 939); the virtual-CE
//! αv formula of :777 (dead code: overwritten on the next line); the
//! pacing headroom floor of 1.5 before the first congestion (:1359-1365;
//! the BW tool's headroom is 1.5 anyway).
//!
//! Overrides: `media.l4s_alpha_gain` and `media.feedback_interval`, when
//! set, win over the row.

use serde::{Deserialize, Serialize};

use crate::units::Dur;

/// `media.version`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScreamVersion {
    #[default]
    #[serde(rename = "head")]
    Head,
    #[serde(rename = "2024-10")]
    V2024_10,
    #[serde(rename = "2024-10-28")]
    V2024_10_28,
}

/// How the L4S α follows the marked fraction f.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum AlphaFilter {
    /// α ← up·f + (1 − up)·α when f ≥ α, else α ← α·(1 − down).
    FastAttack { up: f64, down: f64 },
    /// α ← g·f + (1 − g)·α.
    Symmetric(f64),
}

/// When the multiplicative increase is fully phased in after congestion.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum PhaseIn {
    /// After this many sRTTs.
    Rtts(u32),
    /// After this fixed time.
    Fixed(Dur),
}

/// One row of the version table.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct VersionParams {
    pub alpha_filter: AlphaFilter,
    /// sclI = clamp((gain·(cwnd − cwndI)/cwndI)², 0.1, 1).
    pub scl_i_gain: f64,
    /// cwndI is the median of this many inflexion points (1 = the last).
    pub cwnd_i_hist: usize,
    /// sclI and the multiplicative term use the window after the reduction.
    pub scl_i_after_reduction: bool,
    pub phase_in: PhaseIn,
    /// Hook: the 2024 L4S/virtual-CE backoff and re-anchor (else HEAD's).
    pub backoff_2024: bool,
    /// 2024 L4S backoff × max(0.25, sclI) when qdelay < T/4.
    pub backoff_scl_i: bool,
    /// Hook: the 2024 increase law (else HEAD's).
    pub increase_2024: bool,
    /// 2024 increase factor while L4S is active: max(0.25, sclI) (true) or
    /// 1 (false); while inactive it is sclI either way.
    pub increase_scl_i_floor_active: bool,
    /// Hook: the 2024 target rate from cwnd (else HEAD's).
    pub rate_2024: bool,
    /// Hook: fixed send gate cwnd·1.5 + MSS (else jitter-scaled headroom).
    pub send_gate_fixed: bool,
    /// sRTT slowed to 1/1024 when application-limited and falling.
    pub srtt_app_limited_slow: bool,
    /// Hook: 2024 virtual CE (only when L4S is inactive or α tiny; plain
    /// qdelayAvg), else HEAD's (always, qdelayAvg above the slow minimum).
    pub virtual_ce_2024: bool,
    /// Virtual CE fires above qdelayAvg > T · this.
    pub virtual_ce_threshold: f64,
    /// The base-delay reset also runs while L4S is inactive.
    pub base_delay_reset_when_inactive: bool,
    /// Receiver feedback interval once running.
    pub feedback_interval: Dur,
}

/// The HEAD L4S α filter constants (ScreamTx.h `kL4sGUp`/`kL4sGDown`).
pub const HEAD_ALPHA: AlphaFilter = AlphaFilter::FastAttack {
    up: 1.0 / 8.0,
    down: 1.0 / 128.0,
};

impl ScreamVersion {
    pub fn params(self) -> VersionParams {
        let head = VersionParams {
            alpha_filter: HEAD_ALPHA,
            scl_i_gain: 8.0,
            cwnd_i_hist: 1,
            scl_i_after_reduction: false,
            phase_in: PhaseIn::Rtts(200),
            backoff_2024: false,
            backoff_scl_i: true,
            increase_2024: false,
            increase_scl_i_floor_active: true,
            rate_2024: false,
            send_gate_fixed: false,
            srtt_app_limited_slow: true,
            virtual_ce_2024: false,
            virtual_ce_threshold: 0.5,
            base_delay_reset_when_inactive: false,
            feedback_interval: Dur::from_millis(40),
        };
        let v2024_10 = VersionParams {
            alpha_filter: AlphaFilter::Symmetric(1.0 / 32.0),
            scl_i_gain: 4.0,
            cwnd_i_hist: 9,
            phase_in: PhaseIn::Fixed(Dur::from_secs(4)),
            backoff_2024: true,
            increase_2024: true,
            rate_2024: true,
            send_gate_fixed: true,
            srtt_app_limited_slow: false,
            virtual_ce_2024: true,
            base_delay_reset_when_inactive: true,
            feedback_interval: Dur::from_millis(5),
            ..head
        };
        match self {
            ScreamVersion::Head => head,
            ScreamVersion::V2024_10 => v2024_10,
            ScreamVersion::V2024_10_28 => VersionParams {
                scl_i_after_reduction: true,
                backoff_scl_i: false,
                increase_scl_i_floor_active: false,
                virtual_ce_threshold: 0.25,
                ..v2024_10
            },
        }
    }
}

/// Median of the first `n` entries (n odd, ≤ 9), no allocation.
pub(crate) fn median(hist: &[u64], n: usize) -> u64 {
    let mut tmp = [0u64; 9];
    let n = n.min(tmp.len()).min(hist.len());
    tmp[..n].copy_from_slice(&hist[..n]);
    tmp[..n].sort_unstable();
    tmp[n / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_their_scenario_names() {
        #[derive(Deserialize)]
        struct W {
            v: ScreamVersion,
        }
        let parse = |s: &str| toml::from_str::<W>(&format!("v = \"{s}\"")).map(|w| w.v);
        assert_eq!(parse("head").unwrap(), ScreamVersion::Head);
        assert_eq!(parse("2024-10").unwrap(), ScreamVersion::V2024_10);
        assert_eq!(parse("2024-10-28").unwrap(), ScreamVersion::V2024_10_28);
        assert!(parse("2024").is_err());
        assert_eq!(ScreamVersion::default(), ScreamVersion::Head);
    }

    #[test]
    fn the_2024_rows_carry_the_constants_of_their_commits() {
        let (h, a, b) = (
            ScreamVersion::Head.params(),
            ScreamVersion::V2024_10.params(),
            ScreamVersion::V2024_10_28.params(),
        );
        // kL4sG = 1/32 (76a298a ScreamV2Tx.cpp:45); HEAD fast attack 1/8, decay 1/128.
        assert_eq!(a.alpha_filter, AlphaFilter::Symmetric(1.0 / 32.0));
        assert_eq!(h.alpha_filter, HEAD_ALPHA);
        // sclI factor 4 and a median of 9 (kCwndIHistSize) vs 8 and the last.
        assert_eq!(
            (a.scl_i_gain, a.cwnd_i_hist, h.scl_i_gain, h.cwnd_i_hist),
            (4.0, 9, 8.0, 1)
        );
        // The BW tool's postCongestionDelay = 4 s vs 200 sRTT.
        assert_eq!(
            (a.phase_in, h.phase_in),
            (PhaseIn::Fixed(Dur::from_secs(4)), PhaseIn::Rtts(200))
        );
        // Receiver: 5 ms (ScreamRx.cpp:430 then) vs 40 ms.
        assert_eq!(
            (a.feedback_interval, h.feedback_interval),
            (Dur::from_millis(5), Dur::from_millis(40))
        );
        // 994f9a4: virtual CE from T/4, no sclI backoff scaling, ×1 increase while active.
        assert_eq!(
            (a.virtual_ce_threshold, b.virtual_ce_threshold),
            (0.5, 0.25)
        );
        assert!(a.backoff_scl_i && !b.backoff_scl_i);
        assert!(a.increase_scl_i_floor_active && !b.increase_scl_i_floor_active);
        assert!(!a.scl_i_after_reduction && b.scl_i_after_reduction);
    }

    #[test]
    fn median_of_nine_ignores_one_outlier() {
        assert_eq!(median(&[5, 1, 9, 3, 7, 100, 2, 8, 6], 9), 6);
        assert_eq!(median(&[42], 1), 42);
    }
}
