//! flent test shapes as scenario templates: a `[test]` table adds the flows
//! of a flent test (see flent's tests/*.conf; composition as in
//! flent's tests/rrul.conf and tests/tcp_*.conf): netperf-like bulk TCP flows that
//! run `length` starting after `delay`, and probes from 0 to
//! length + 2·delay (flent's TOTAL_LENGTH). The resolved scenario lists
//! the expanded flows, so it stays the whole truth of the run.
//!
//! | name | flows |
//! |---|---|
//! | tcp_1up / tcp_1down | 1 TCP upload / download + ICMP ping |
//! | tcp_nup / tcp_ndown | `streams` TCP uploads / downloads + ICMP ping |
//! | rrul | 4 uploads + 4 downloads marked BE (CS0), BK (CS1), CS5, EF; UDP probes EF, BK, BE; ICMP ping |
//! | ping | ICMP ping + UDP probe (no delay padding) |

use serde::{Deserialize, Serialize};

use super::{EcnSetting, FlowKind, FlowSpec};
use crate::cc::CcKind;
use crate::units::Dur;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeName {
    Tcp1up,
    Tcp1down,
    TcpNup,
    TcpNdown,
    Rrul,
    Ping,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestShape {
    pub name: ShapeName,
    /// Links from the client to the server (uploads, probe requests).
    pub up: Vec<String>,
    /// Links from the server back to the client (downloads, replies).
    pub down: Vec<String>,
    /// flent LENGTH: how long the TCP flows run.
    #[serde(default = "default_length")]
    pub length: Dur,
    /// flent DELAY: TCP flows start this late and probes run this long
    /// after them.
    #[serde(default = "default_delay")]
    pub delay: Dur,
    /// Streams of tcp_nup / tcp_ndown (flent `upload_streams` /
    /// `download_streams`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<CcKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnSetting>,
    /// Probe interval (flent STEP_SIZE with fping).
    #[serde(default = "default_step")]
    pub step: Dur,
    /// Each TCP flow starts up to this much after `delay` (the flows'
    /// `start_jitter`; seeded; 0 leaves the TCP flows their default).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub start_jitter: Dur,
}

fn default_length() -> Dur {
    Dur::from_secs(60)
}
fn default_delay() -> Dur {
    Dur::from_secs(5)
}
fn default_step() -> Dur {
    Dur::from_millis(200)
}

/// rrul's markings: (label, DSCP).
pub const RRUL_MARKS: [(&str, u8); 4] = [("BE", 0), ("BK", 8), ("CS5", 40), ("EF", 46)];

impl TestShape {
    /// Simulated time the test needs (flent TOTAL_LENGTH).
    pub fn total(&self) -> Dur {
        match self.name {
            ShapeName::Ping => self.length,
            _ => self.length + self.delay * 2,
        }
    }

    fn flow(&self, id: String, upload: bool, kind: FlowKind) -> FlowSpec {
        let (path, reverse) = if upload { (self.up.clone(), self.down.clone()) } else { (self.down.clone(), self.up.clone()) };
        let tcp = kind == FlowKind::Tcp;
        FlowSpec {
            id,
            kind,
            path,
            reverse,
            start: if tcp { self.delay } else { Dur::ZERO },
            start_jitter: (tcp && self.start_jitter > Dur::ZERO).then_some(self.start_jitter),
            stop: Some(if tcp { self.delay + self.length } else { self.total() }),
            count: 1,
            start_step: Dur::ZERO,
            access_delay: Dur::ZERO,
            access_delay_rev: None,
            dscp: 0,
            // Downloads are sent by the server to the client.
            src: (!upload).then(|| "server".to_string()),
            dst: (!upload).then(|| "client".to_string()),
            cc: if tcp { self.cc } else { None },
            cc_params: None,
            bytes: None,
            ecn: if tcp { self.ecn } else { None },
            tcp: None,
            interval: (!tcp).then_some(self.step),
            size: None,
            media: None,
            intervals: Vec::new(),
        }
    }

    /// The flows of this test.
    pub fn flows(&self) -> Vec<FlowSpec> {
        let ping = |s: &Self, id: &str| s.flow(id.into(), true, FlowKind::Ping);
        let n = self.streams.unwrap_or(1);
        let mut v = Vec::new();
        match self.name {
            ShapeName::Tcp1up | ShapeName::TcpNup => {
                let mut f = self.flow("tcp_upload".into(), true, FlowKind::Tcp);
                f.count = if self.name == ShapeName::Tcp1up { 1 } else { n };
                v.push(f);
                v.push(ping(self, "ping_icmp"));
            }
            ShapeName::Tcp1down | ShapeName::TcpNdown => {
                let mut f = self.flow("tcp_download".into(), false, FlowKind::Tcp);
                f.count = if self.name == ShapeName::Tcp1down { 1 } else { n };
                v.push(f);
                v.push(ping(self, "ping_icmp"));
            }
            ShapeName::Rrul => {
                for (dir, up) in [("upload", true), ("download", false)] {
                    for (label, dscp) in RRUL_MARKS {
                        let mut f = self.flow(format!("tcp_{dir}_{label}"), up, FlowKind::Tcp);
                        f.dscp = dscp;
                        v.push(f);
                    }
                }
                for (label, dscp) in [("EF", 46), ("BK", 8), ("BE", 0)] {
                    let mut p = ping(self, &format!("ping_udp_{label}"));
                    p.dscp = dscp;
                    v.push(p);
                }
                v.push(ping(self, "ping_icmp"));
            }
            ShapeName::Ping => {
                v.push(ping(self, "ping_icmp"));
                v.push(ping(self, "ping_udp"));
            }
        }
        v
    }
}
