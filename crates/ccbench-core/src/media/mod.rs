//! Real-time media: SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2; the
//! Ericsson C++ implementation is authoritative where they differ) over RTP
//! with RFC 8888 feedback, a video encoder model and the BW test tool's
//! microburst pacing. A second transport beside TCP, sans-IO like it: the
//! simulator hands it time and packets and takes the packets it emits.

pub mod encoder;
pub mod rfc8888;
pub mod scream;
pub mod sender;

use serde::{Deserialize, Serialize};

use crate::units::{Dur, Rate};
pub use scream::version::{ScreamVersion, VersionParams};

/// A media flow's parameters, named after the SCReAM BW test tool's options
/// (`scream_bw_test_tx`), with its defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// `-initrate`: start rate (cwnd₀ = initrate·100/8 B).
    pub init_rate: Rate,
    /// `-minrate` / `-maxrate`: target bitrate clamp.
    pub min_rate: Rate,
    pub max_rate: Rate,
    /// `-fps`.
    pub fps: f64,
    /// `-rand`: frame size × (1 + U(−0.5, 0.5)·rand/100), i.e. ±rand/2 %.
    pub rand: f64,
    /// `-mtu`: RTP payload bytes per packet (packet = payload + 12 B RTP).
    pub mtu: u32,
    /// `-delaytarget`.
    pub delay_target: Dur,
    /// `-scale`: loss and classic-ECN beta.
    pub scale: f64,
    /// `-paceheadroom`, `-adaptivepaceheadroom`, `-maxwindowheadroom`,
    /// `-inflightheadroom`, `-mulincrease`.
    pub pace_headroom: f64,
    pub adaptive_pace_headroom: f64,
    pub max_window_headroom: f64,
    pub inflight_headroom: f64,
    pub mul_increase: f64,
    /// `-nopace`: no pacing at all.
    pub pacing: bool,
    /// Pacing as the BW tool does it (bursts of `microburst_interval` of
    /// paced time, then a sleep) or as the library computes it (each packet
    /// at its own paced time).
    pub pacing_mode: PacingMode,
    /// `-microburstinterval` (0.2 … 20 ms in the tool).
    pub microburst_interval: Dur,
    /// The tool's transmit loop as Linux runs it (scream_sender.cpp
    /// `transmitRtpThread`): after a microburst it asks `usleep` for the
    /// sleep less 100 µs and runs again this much later than it asked
    /// (timer slack, wake-up and its own loop). Under `ccbench emulate` on
    /// Linux 6.18 `usleep` overshoots by 65.7 µs and the gap between the
    /// code's bursts is the sleep less 28 µs, which 68 µs reproduces
    /// (docs/scream-real.md); `100us` makes the period the nominal sleep.
    pub wakeup: Dur,
    /// Time between a microburst's packets (a `sendto` call and the loop:
    /// 3.7 µs at the bottleneck's input, measured likewise); 0 sends a
    /// burst at one instant.
    pub send_gap: Dur,
    /// `-hysteresis` (0 … 0.2).
    pub hysteresis: f64,
    /// `-reordertime`.
    pub reorder_time: Dur,
    /// `-relaxedpacing`.
    pub relaxed_pacing: bool,
    /// Which SCReAM code to run: `"head"` (today's, the default),
    /// `"76a298a"` (2024-10-31: the test record's activity of that day and
    /// the interop, whose e0af5ef has the same code) or `"994f9a4"`
    /// (2024-10-28); dates and older names are accepted as aliases. The
    /// version table is in `scream/version.rs`; the receiver follows it too.
    pub version: ScreamVersion,
    /// Override of the version's L4S α filter. Absent: the version's (HEAD:
    /// fast attack α ← f/8 + 7α/8 when f ≥ α, slow decay α ← α·127/128;
    /// 2024: symmetric with g = 1/32). A number g: the symmetric EWMA
    /// α ← g·f + (1 − g)·α (ScreamV2Tx.cpp with ScreamTx.h `kL4sG`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l4s_alpha_gain: Option<f64>,
    /// Max RTP queue delay before the queue is flushed (BW tool 0.2 s).
    pub max_rtp_queue_delay: Dur,
    /// Receiver `-nreported` and `-ackdiff` (default nreported/2).
    pub nreported: u32,
    pub ackdiff: Option<u32>,
    /// Override of the receiver's feedback interval once running. Absent:
    /// the version's (HEAD 40 ms, 2024 5 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback_interval: Option<Dur>,
}

impl MediaConfig {
    /// The version row with this config's overrides applied.
    pub fn version_params(&self) -> VersionParams {
        let mut p = self.version.params();
        if let Some(g) = self.l4s_alpha_gain {
            p.alpha_filter = scream::version::AlphaFilter::Symmetric(g);
        }
        if let Some(fb) = self.feedback_interval {
            p.feedback_interval = fb;
        }
        p
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PacingMode {
    Microburst,
    Library,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig {
            init_rate: Rate(1_000_000),
            min_rate: Rate(1_000_000),
            max_rate: Rate(500_000_000),
            fps: 50.0,
            rand: 0.0,
            mtu: 1200,
            delay_target: Dur::from_millis(60),
            scale: 0.7,
            pace_headroom: 1.5,
            adaptive_pace_headroom: 1.5,
            max_window_headroom: 5.0,
            inflight_headroom: 2.0,
            mul_increase: 0.05,
            pacing: true,
            pacing_mode: PacingMode::Microburst,
            microburst_interval: Dur::from_micros(500),
            wakeup: Dur::from_micros(68),
            send_gap: Dur(3_700),
            hysteresis: 0.0,
            reorder_time: Dur::from_millis(30),
            relaxed_pacing: false,
            version: ScreamVersion::Head,
            l4s_alpha_gain: None,
            max_rtp_queue_delay: Dur::from_millis(200),
            nreported: 64,
            ackdiff: None,
            feedback_interval: None,
        }
    }
}

/// RTP (12) + UDP (8) + IPv4 (20) + Ethernet (14) header bytes around an
/// RTP payload, as a qdisc counts the packet.
pub const RTP_OVERHEAD: u32 = 12 + 8 + 20 + 14;
/// RTCP feedback overhead beyond the report words: UDP + IPv4 + Ethernet.
pub const RTCP_IP_OVERHEAD: u32 = 8 + 20 + 14;
