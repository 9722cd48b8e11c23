//! Helpers for the integration tests.
#![allow(dead_code)]

use ccbench_core::metrics::summary::{FlowSummary, LinkSummary, ProbeSummary, Summary};
use ccbench_core::RunOutput;

#[track_caller]
pub fn run(text: &str, overrides: &[&str]) -> RunOutput {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match ccbench_core::run(text, "test.toml", &o, &mut || false) {
        Ok(Some(out)) => out,
        Ok(None) => panic!("interrupted"),
        Err(e) => panic!("{e}"),
    }
}

pub fn flow<'a>(s: &'a Summary, id: &str) -> &'a FlowSummary {
    s.flows
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no flow {id}"))
}
pub fn link<'a>(s: &'a Summary, id: &str) -> &'a LinkSummary {
    s.links
        .iter()
        .find(|l| l.id == id)
        .unwrap_or_else(|| panic!("no link {id}"))
}
pub fn probe<'a>(s: &'a Summary, id: &str) -> &'a ProbeSummary {
    s.probes
        .iter()
        .find(|l| l.id == id)
        .unwrap_or_else(|| panic!("no probe {id}"))
}

/// A dumbbell: `rate` bottleneck with `qdisc`, symmetric delay for a base
/// RTT of `rtt_ms`, an uncongested return link, and the given flows.
pub fn dumbbell(rate: &str, rtt_ms: f64, qdisc: &str, duration: &str, flows: &str) -> String {
    format!(
        r#"
name = "dumbbell"
duration = "{duration}"
seed = 1
[[links]]
id = "bottleneck"
rate = "{rate}"
delay = "{half}ms"
qdisc = {qdisc}
[[links]]
id = "return"
rate = "1Gbit"
delay = "{half}ms"
{flows}
"#,
        half = rtt_ms / 2.0
    )
}

pub const PING: &str = r#"
[[flows]]
id = "ping"
kind = "ping"
interval = "100ms"
path = ["bottleneck"]
reverse = ["return"]
"#;

/// A TCP flow's keys that turn the default host timing noise off (start
/// jitter, per-packet jitter and stalls): for tests of a mechanism's exact
/// law, where the noise only blurs what is measured.
pub const QUIET: &str = "start_jitter = \"0s\"\ntcp = { tx_jitter = \"0s\", tx_stall_prob = 0.0, ack_jitter = \"0s\", ack_stall_prob = 0.0 }";

pub fn tcp(id: &str, cc: &str, extra: &str) -> String {
    format!("[[flows]]\nid = \"{id}\"\ncc = \"{cc}\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n{extra}\n")
}

/// A SCReAM flow (the BW test tool's `-mtu 1360`) over the dumbbell; `extra`
/// adds `media` keys (", rand = 50").
pub fn media(id: &str, ecn: &str, extra: &str) -> String {
    format!(
        "[[flows]]\nid = \"{id}\"\nkind = \"media\"\necn = \"{ecn}\"\nmedia = {{ mtu = 1360 {extra} }}\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n"
    )
}
