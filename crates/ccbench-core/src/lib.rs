//! ccbench-core: a deterministic packet-level simulator for congestion
//! control and AQM experiments. No Python, no global state, no wall clock.
//!
//! Layers, lowest first: `units` → `packet` → `qdisc`/`cc`/`media`/`metrics`
//! → `tcp`/`link` → `flow` → `sim` → `scenario` (the spec, which builds the
//! runtime below it and is never named by it; `tests/layers.rs` checks the
//! rules).
//! [`run`] is the one-call entry point.

pub mod cc;
pub mod event;
pub mod flow;
pub mod forwarder;
pub mod guard;
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
    /// Warnings about the scenario (see [`scenario::Parsed::warnings`]).
    pub warnings: Vec<Problem>,
}

pub fn run(text: &str, file: &str, overrides: &[String], interrupt: &mut dyn FnMut() -> bool) -> Result<Option<RunOutput>, ScenarioError> {
    run_with_progress(text, file, overrides, &mut |_, _| interrupt())
}

/// As [`run`]; `tick(now_s, end_s)` is called every few thousand events
/// (progress, Ctrl-C) and stops the run by returning true. A run that
/// outgrows `limits.memory` or `limits.disk`, or whose clock stalls, stops
/// with an error naming the limit, and returns no partial results.
pub fn run_with_progress(text: &str, file: &str, overrides: &[String], tick: &mut dyn FnMut(f64, f64) -> bool) -> Result<Option<RunOutput>, ScenarioError> {
    run_with_spill(text, file, overrides, tick, None)
}

/// As [`run_with_progress`]; with `spill`, tables are handed to its sink in
/// chunks during the run and the output keeps only the rest, so memory
/// stays flat in run length (see [`sim::Sim::run_until_io`]).
pub fn run_with_spill(
    text: &str,
    file: &str,
    overrides: &[String],
    tick: &mut dyn FnMut(f64, f64) -> bool,
    spill: Option<sim::Spill<'_>>,
) -> Result<Option<RunOutput>, ScenarioError> {
    let parsed = scenario::parse_opts(text, file, overrides, spill.is_some())?;
    run_parsed(parsed, file, tick, spill)
}

/// As [`run_with_spill`], for a scenario the caller has already parsed
/// ([`scenario::parse_opts`] with `streamed` = whether it spills), so one
/// that needs the scenario before the run (its length) parses it once.
/// `file` names the scenario in errors.
pub fn run_parsed(
    parsed: scenario::Parsed,
    file: &str,
    tick: &mut dyn FnMut(f64, f64) -> bool,
    spill: Option<sim::Spill<'_>>,
) -> Result<Option<RunOutput>, ScenarioError> {
    let mut sim = scenario::build::build(&parsed.scenario);
    let end = sim.end;
    let end_s = end.as_secs_f64();
    if !sim.run_until_io(end, &mut |now| tick(now.as_secs_f64(), end_s), spill) {
        if let Some(stop) = sim.guard.stop.take() {
            let (key, message) = (stop.key().to_string(), stop.message().to_string());
            return Err(ScenarioError { problems: vec![Problem { file: file.to_string(), line: None, col: None, key, message }] });
        }
        return Ok(None);
    }
    let summary = sim.summary();
    Ok(Some(RunOutput { summary, scenario: parsed.scenario, metrics: std::mem::take(&mut sim.metrics), warnings: parsed.warnings }))
}
