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
//! | loss (`loss`) | halving as a debt, no `in_loss` gate | halve, no growth until Open | halve, no growth until Open |
//! | classic-ECN detection (`ecn_fallback`) | available, off by default | available, off by default; reference levels 1/16 scale (always drifts classic) | (kept available) |
//!
//! Every row except `loss` can be overridden by its own key; `version`
//! only sets the defaults. Sources: v0.6 and v0.7 from the L4STeam
//! `tcp_prague.c` (MODULE_VERSION "0.6": `prague_init` sets α = 1,
//! DEFAULT_RTT_TRANSITION 500, `prague_update_pacing_rate` uses
//! max(snd_cwnd, packets in flight)).
//!
//! "2020-04": the file at `e741f5ac` itself is not in any stored copy we
//! could find (searched: the code index for `prague_ecn_fallback`,
//! `prague_classic_ecn_detection`, `classic_ecn`, `prague_enter_loss`;
//! L4STeam/linux is too large to fetch; read: google/bbr@51f3dd16
//! `net/ipv4/tcp_prague.c`, ij1/linux-accecn@06e9a045 (same code), and
//! dejeneboru/mdtcp-mprague `net/mptcp/mprague_coupled*.c`, the
//! RTT-independence variant: an MPTCP fork of an earlier L4STeam tree with
//! neither the detection nor `in_loss`). The model brackets it:
//! - The detection heuristic is that of google/bbr@51f3dd16 (the only
//!   stored file that has `prague_ecn_fallback`; `e741f5ac` had the option,
//!   the SCE/L4S report loads it): inputs, thresholds and the α floor as in
//!   `ClassicEcn` in `mod.rs`.
//! - Loss (`LossLaw::Debt`): the 51f3dd16 file stops growth while
//!   `in_loss`, the older mprague file has no `in_loss` at all; both cut
//!   the same way (`prague_enter_loss`: cwnd_cnt −= cwnd/2 + cwnd_cnt/2, i.e.
//!   the fractional window halves, α untouched) and leave ssthresh alone
//!   (`prague_ssthresh`). The L4S team's re-run of the report's tests
//!   (L4STeam/l4steam.github.io `ect1-tests/README.md`) was made "after
//!   fixing a bug reported in the original set of experiments"; the
//!   report's symptom (loss ignored in L4S mode, full receive window at
//!   90 % loss on a drop-only queue, normal response once classic CE cuts
//!   have set ssthresh) is what the code without `in_loss` does, so
//!   "2020-04" is modelled without it. This is our inference, not a read
//!   of `e741f5ac`. Deviation: after an RTO Linux's debt is relative to
//!   the reset cwnd (cwnd_cnt ≈ −cwnd_before/2 against cwnd 1, paid down to
//!   2 segments once slow start ends); the model halves the fractional
//!   window absolutely, as it does for every version.
//! - Desensitisation on loss: as the code has it, the heuristic has no
//!   loss input; it runs only at α updates after a CE mark, and its RTT
//!   filters' gain 2^-g, g = min(18, ⌊log2 ssthresh⌋·1.5 + 1), is reset only
//!   in `ssthresh()` from the current ssthresh. A loss never lowers
//!   ssthresh, and without `in_loss` a loss in slow start never ends slow
//!   start, so ssthresh stays "infinite" and the filters stay at the
//!   slowest gain 2^-18: the detector is frozen by losses. The report
//!   describes this only by its effect.
//!
//! Searched again (2026-11-23) for `e741f5ac` or a dated tree near it:
//! `find_files net/ipv4/tcp_prague.c` lists 17 repositories; read besides
//! the above: L4STeam/linux (one stored version, 02573a21: frac_cwnd,
//! α 2^-20, `in_loss`), L4STeam/tcp-prague@90aea47f (v0.7-era: α 2^-24,
//! rate mode, `in_loss`, stale `V0_LG`/`D0_LG`), JoakimMisund/net-next
//! @03aa0451 (paced chirping on the 51f3dd16 code, MODULE_VERSION 0.6),
//! dboru/linux@696e94e3 (the 2019 DCTCP-like Prague: no cwnd_cnt, no
//! detection); not read: dboru/mptcp, ij1/linux-flowstartup, the minuscat
//! 6.x trees (all later designs). The code index has the string
//! `e741f5ac` nowhere; L4STeam/tcp-prague's snapshot is 2.4 GB, over the
//! fetch limit; heistp/sce-l4s-ect1 (the report) names the commit (Test
//! Setup: "L4STeam/linux@e741f5ac… (from Apr 8, 2020)") but neither the
//! code nor the module options. No stored copy carries a date, so what
//! follows is still inference:
//! - Every stored tree that has `prague_ecn_fallback` also has `in_loss`.
//!   Without it, `prague_update_cwnd` returns from slow start before its
//!   `adjust` step, so a loss's debt is never paid while cwnd < ssthresh
//!   (ssthresh is only set by that step): exactly the report's "loss
//!   ignored in L4S mode". The `in_loss` gate (skip growth, go straight to
//!   `adjust`) is the fix that symptom calls for, which fits the L4S team's
//!   "after fixing a bug reported in the original set of experiments". So
//!   "2020-04" stays without the gate; a tree with it is `loss = Gated`.
//! - The 2020-era trees (51f3dd16, 02573a21, 03aa0451) keep α in 2^-20
//!   units and RTTs for the RTT-independence law in 128 µs units
//!   (`RTT_UNIT` 7); the model uses 2^-24 and ns for every version (α's
//!   resolution and a ≤ 128 µs rounding of srtt/rtt_target only).
//!   `DEFAULT_RTT_TRANSITION` 500, `prague_rtt_target` 25 ms, α₀ = 1,
//!   pacing from max(snd_cwnd, in_flight) ×2 below ssthresh/2, and the
//!   detector's constants and gains are as in the table for all three.
//! - v0.6: the 5.15 tree (and L4STeam/tcp-prague@90aea47f) moved α to
//!   2^-24 units but kept `V0_LG`/`D0_LG` at their 2^-20 values (L4STeam/
//!   linux issue #38), so the detector's reference levels count 1/16:
//!   with `ecn_fallback` on it reaches the classic clamp behind an L4S
//!   queue too (`ecn_fallback_ref_shift`; tests/prague_versions.rs).

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

/// What a loss (Recovery entry, RTO) does to the window.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LossLaw {
    /// Halve the fractional window; no increase until the TCP layer is
    /// Open again (`in_loss`; v0.6, v0.7).
    Gated,
    /// Halve the fractional window as a debt the real cwnd pays one
    /// segment per ACK outside slow start; growth goes on in recovery and
    /// slow start keeps the debt (`cwnd_cnt`) without paying it (2020-04,
    /// no `in_loss`).
    Debt,
}

/// The per-version defaults and hooks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct VersionParams {
    pub alpha_mode: AlphaMode,
    pub rtt_transition: u32,
    pub cwnd_mode: CwndMode,
    pub ecn_fallback: EcnFallback,
    pub pacing: PacingLaw,
    pub loss: LossLaw,
    /// Bits by which the classic-ECN detector's reference levels (`V0_LG`,
    /// `D0_LG`: log2 750 µs and log2 2 ms) lag α's scaling: 4 in the 5.15
    /// tree, whose α went from 2^-20 to 2^-24 units while the constants
    /// kept their 2^-20 values (L4STeam/linux issue #38), so they count
    /// 1/16 of what they should and the score drifts to "classic" on any
    /// path; 0 where they match.
    pub ecn_fallback_ref_shift: u32,
}

impl PragueVersion {
    /// The table above.
    pub fn params(self) -> VersionParams {
        match self {
            PragueVersion::V2020_04 => VersionParams {
                loss: LossLaw::Debt,
                ecn_fallback_ref_shift: 0,
                ..PragueVersion::V0_6.params()
            },
            PragueVersion::V0_6 => VersionParams {
                alpha_mode: AlphaMode::InitOne,
                rtt_transition: 500,
                cwnd_mode: CwndMode::FracWin,
                ecn_fallback: EcnFallback::Off,
                pacing: PacingLaw::Cwnd,
                loss: LossLaw::Gated,
                ecn_fallback_ref_shift: 4,
            },
            PragueVersion::V0_7 => VersionParams {
                alpha_mode: AlphaMode::HalveAtFirstMark,
                rtt_transition: 4,
                cwnd_mode: CwndMode::Switch,
                ecn_fallback: EcnFallback::Off,
                pacing: PacingLaw::FracCwnd,
                loss: LossLaw::Gated,
                ecn_fallback_ref_shift: 0,
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
