//! ccbench-core: a deterministic packet-level simulator for congestion
//! control and AQM experiments. No Python, no global state, no wall clock.
//!
//! Layers, lowest first: `units` → `packet` → `qdisc`/`cc`/`tcp`/`link` →
//! `sim` → `metrics` → `scenario`. [`run`] is the one-call entry point.

pub mod cc;
pub mod event;
pub mod flow;
pub mod link;
pub mod media;
pub mod metrics;
pub mod packet;
pub mod qdisc;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod tcp;
pub mod units;

pub use scenario::{Problem, ScenarioError};

/// The outcome of one run.
pub struct RunOutput {
    pub summary: metrics::summary::Summary,
    pub scenario: scenario::Scenario,
    pub metrics: metrics::Metrics,
}

/// Parse, build and run a scenario. `interrupt` is polled now and then; a
/// run it stops returns `None`.
pub fn run(text: &str, file: &str, overrides: &[String], interrupt: &mut dyn FnMut() -> bool) -> Result<Option<RunOutput>, ScenarioError> {
    let parsed = scenario::parse(text, file, overrides)?;
    let mut sim = scenario::build::build(&parsed.scenario);
    let end = sim.end;
    if !sim.run_until_with(end, interrupt) {
        return Ok(None);
    }
    let summary = sim.summary();
    Ok(Some(RunOutput { summary, scenario: parsed.scenario, metrics: std::mem::take(&mut sim.metrics) }))
}
