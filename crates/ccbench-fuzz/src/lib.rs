//! Fuzzing ccbench's scenario reader and simulator (`make fuzz`, and a
//! short fixed-seed campaign in `make test`).
//!
//! Every input ([`gen`]) goes through [`check`]: it is read as `ccbench
//! validate` reads it, with its overrides, then run as `ccbench run` runs
//! it (tables handed out as the run goes) under limits that keep a run
//! short. Whatever the input, nothing may panic, a refusal must say what and
//! where, the resolved scenario must read back, and a run must stay within
//! its memory limit (measured by a counting allocator: [`Counting`]), its
//! disk limit and a bounded number of events (no hang).

pub mod gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};

use ccbench_core::scenario;

/// A global allocator that counts the bytes allocated and not freed, and
/// their peak: declare it `#[global_allocator]` in a binary or test.
pub struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let v = LIVE.fetch_add(l.size() as i64, Ordering::Relaxed) + l.size() as i64;
        PEAK.fetch_max(v, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let v = LIVE.fetch_add(n as i64 - l.size() as i64, Ordering::Relaxed) + n as i64 - l.size() as i64;
        PEAK.fetch_max(v, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

/// Bytes allocated and not freed now (with [`Counting`] installed); also
/// restarts the peak from here, for [`peak_above`].
pub fn live_from_here() -> i64 {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    base
}

/// The most bytes allocated at once since [`live_from_here`] returned `base`.
pub fn peak_above(base: i64) -> i64 {
    PEAK.load(Ordering::Relaxed) - base
}

/// Bytes allocated and not freed since [`live_from_here`] returned `base`.
pub fn live_above(base: i64) -> i64 {
    LIVE.load(Ordering::Relaxed) - base
}

/// Limits every input runs under (as `--set`, after its own overrides), so
/// that a campaign runs many inputs: a run estimated above them is refused.
pub const RUN_LIMITS: [&str; 3] = ["limits.memory=\"64mb\"", "limits.disk=\"64mb\"", "limits.events=500000"];
const MEMORY_LIMIT: i64 = 64 << 20;
const DISK_LIMIT: u64 = 64 << 20;

/// What became of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Refused as written (syntax, values, references).
    Rejected,
    /// Valid, but refused under [`RUN_LIMITS`] (estimated too costly).
    Refused,
    /// Ran to its end.
    Ran,
    /// Stopped while running by its memory, disk or clock guard.
    Stopped,
}

/// What must never happen, with the input that made it happen.
#[derive(Debug)]
pub struct Failure {
    pub what: String,
}

/// Read and run one input; `Err` if it broke a rule (see the crate docs).
pub fn check(input: &gen::Input) -> Result<Outcome, Failure> {
    let fail = |what: String| Failure { what };
    let caught = catch_unwind(AssertUnwindSafe(|| check_unguarded(input)));
    match caught {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(fail(format!("panic: {}", msg.unwrap_or_default())))
        }
    }
}

fn located(e: &scenario::ScenarioError) -> Result<(), Failure> {
    if e.problems.is_empty() {
        return Err(Failure { what: "an error with no problem in it".into() });
    }
    for p in &e.problems {
        if p.message.trim().is_empty() || p.file.is_empty() {
            return Err(Failure { what: format!("a problem that says nothing: {p:?}") });
        }
        if p.message.len() > 4096 {
            return Err(Failure { what: format!("a message of {} bytes: {}...", p.message.len(), &p.message[..200]) });
        }
    }
    Ok(())
}

fn check_unguarded(input: &gen::Input) -> Result<Outcome, Failure> {
    let fail = |what: String| Err(Failure { what });
    let parsed = match scenario::parse_opts(&input.text, "fuzz.toml", &input.overrides, true) {
        Ok(p) => p,
        Err(e) => {
            located(&e)?;
            return Ok(Outcome::Rejected);
        }
    };
    // What `validate --resolved` prints must read back as the same scenario.
    let resolved = parsed.scenario.to_toml();
    match scenario::parse_opts(&resolved, "resolved.toml", &[], true) {
        Ok(again) if again.scenario.to_toml() == resolved => {}
        Ok(_) => return fail(format!("the resolved scenario reads back differently:\n{resolved}")),
        Err(e) => return fail(format!("the resolved scenario does not read back: {e}\n{resolved}")),
    }
    let mut overrides = input.overrides.clone();
    overrides.extend(RUN_LIMITS.iter().map(|s| s.to_string()));
    let estimate = match scenario::parse_opts(&input.text, "fuzz.toml", &overrides, true) {
        Ok(p) => scenario::limits::estimate(&p.scenario),
        Err(e) => {
            located(&e)?;
            return Ok(Outcome::Refused);
        }
    };
    // No hang: the engine stops a stalled clock, and a run may take more
    // events than estimated, but not without bound.
    let max_events = (64.0 * estimate.events).max(f64::from(1u32 << 25));
    // The engine calls back every 65 536 events and each time its clock
    // passes another thousandth of the run: all calls beyond a thousand are
    // event-count calls, so they bound the events from below.
    let mut calls = 0u32;
    let mut events = 0.0;
    let mut runaway = false;
    let mut written = 0u64;
    let mut sink = |_: &'static str, t: ccbench_core::metrics::Table, _: &mut Vec<ccbench_core::metrics::Table>| {
        written += t.iter().map(|(_, c)| c.len() as u64 * if c.dtype() == "u32" { 4 } else { 8 }).sum::<u64>();
        true
    };
    let base = live_from_here();
    let out = ccbench_core::run_with_spill(
        &input.text,
        "fuzz.toml",
        &overrides,
        &mut |_, _| {
            calls += 1;
            events = f64::from(calls.saturating_sub(1000)) * 65536.0;
            runaway = events > max_events;
            runaway
        },
        Some((1 << 20, &mut sink)),
    );
    let peak = peak_above(base);
    if peak > 2 * MEMORY_LIMIT + (16 << 20) {
        return fail(format!("{} MiB allocated under a limit of {} MiB", peak >> 20, MEMORY_LIMIT >> 20));
    }
    // The guard counts rows at their nominal size (`metrics::ROW_BYTES`),
    // within a quarter of their bytes in memory (before compression).
    if written > DISK_LIMIT * 5 / 4 + (32 << 20) {
        return fail(format!("{} MiB of tables written under a limit of {} MiB", written >> 20, DISK_LIMIT >> 20));
    }
    match out {
        Ok(Some(_)) => Ok(Outcome::Ran),
        Ok(None) if runaway => fail(format!("still running after {events:.3e} events, {:.3e} estimated", estimate.events)),
        Ok(None) => fail("interrupted without a reason".into()),
        Err(e) => {
            located(&e)?;
            let stop = e.problems.len() == 1 && e.problems[0].line.is_none();
            if stop { Ok(Outcome::Stopped) } else { fail(format!("refused while running: {e}")) }
        }
    }
}
