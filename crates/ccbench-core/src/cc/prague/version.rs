//! Prague versions (`cc_params.version`): the parameters and hooks that
//! differ between the kernel trees experiments ran, in one table.
//!
//! | | `"2020-04"` | `"v0.6"` | `"v0.7"` (default) |
//! |---|---|---|---|
//! | tree | L4STeam/linux `e741f5ac` (SCE/L4S tests, April 2020) | L4STeam 5.15 (2024 SCReAM tests) | L4STeam today |
//! | α₀ (`alpha_mode`) | 1 | 1 | 0, halve at the first CE |
//! | RTT-independence after (`rtt_transition`) | 500 rounds | 500 rounds | 4 rounds |
//! | controlled state (`cwnd_mode`) | window | window | window, rate at ≤ 4 packets |
//! | pacing | MTU·max(cwnd, in_flight)/srtt | MTU·max(cwnd, in_flight)/srtt | MTU·max(frac_cwnd, in_flight)/srtt |
//! | classic-ECN detection (`ecn_fallback`) | available, off by default | available, off by default | (kept available) |
//!
//! Every row can still be overridden by its own key; `version` only sets
//! the defaults. Sources: v0.6 and v0.7 from the L4STeam `tcp_prague.c`
//! (MODULE_VERSION "0.6": `prague_init` sets α = 1, DEFAULT_RTT_TRANSITION
//! 500, `prague_update_pacing_rate` uses max(snd_cwnd, packets in flight)).
//! The April 2020 tree's own file was not available to us: "2020-04" uses
//! the v0.6 code's laws and detection heuristic (`prague_ecn_fallback`,
//! `prague_classic_ecn_detection`), which the SCE/L4S report describes for
//! that tree. Its behaviour on loss in L4S mode and any desensitisation of
//! the heuristic after losses are known only from the report and are not
//! modelled.

use serde::{Deserialize, Serialize};

use super::{AlphaMode, CwndMode, EcnFallback};

/// A Prague kernel tree, as named in scenarios.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PragueVersion {
    #[serde(rename = "2020-04")]
    V2020_04,
    #[serde(rename = "v0.6")]
    V0_6,
    #[default]
    #[serde(rename = "v0.7")]
    V0_7,
}

/// What the pacing rate is computed from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PacingLaw {
    /// MTU·max(⌊frac_cwnd⌋, in_flight)/srtt (v0.7).
    FracCwnd,
    /// MTU·max(snd_cwnd, in_flight)/srtt (v0.6 and 2020).
    Cwnd,
}

/// The per-version defaults and hooks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct VersionParams {
    pub alpha_mode: AlphaMode,
    pub rtt_transition: u32,
    pub cwnd_mode: CwndMode,
    pub ecn_fallback: EcnFallback,
    pub pacing: PacingLaw,
}

impl PragueVersion {
    /// The table above.
    pub fn params(self) -> VersionParams {
        match self {
            PragueVersion::V2020_04 | PragueVersion::V0_6 => VersionParams {
                alpha_mode: AlphaMode::InitOne,
                rtt_transition: 500,
                cwnd_mode: CwndMode::FracWin,
                ecn_fallback: EcnFallback::Off,
                pacing: PacingLaw::Cwnd,
            },
            PragueVersion::V0_7 => VersionParams {
                alpha_mode: AlphaMode::HalveAtFirstMark,
                rtt_transition: 4,
                cwnd_mode: CwndMode::Switch,
                ecn_fallback: EcnFallback::Off,
                pacing: PacingLaw::FracCwnd,
            },
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            PragueVersion::V2020_04 => "2020-04",
            PragueVersion::V0_6 => "v0.6",
            PragueVersion::V0_7 => "v0.7",
        }
    }
}
