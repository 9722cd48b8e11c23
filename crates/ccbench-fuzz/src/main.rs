//! `make fuzz`: generate inputs ([`ccbench_fuzz::gen`]) and check each
//! ([`ccbench_fuzz::check`]) for a set time, then print how many ran and how
//! each ended. An input that breaks a rule is written to `OUT/fail-N.toml`
//! (its overrides as comments) and counted; the exit status is 1 if any did.
//! A watchdog reports an input still running after a minute of wall time
//! (a hang the engine did not stop) with the input, and exits 1.
//!
//!     ccbench-fuzz [--seconds S] [--seed N] [--out DIR] [--max-inputs N]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccbench_fuzz::{check, gen, Counting};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

#[global_allocator]
static A: Counting = Counting;

/// Wall time after which an input counts as hung.
const HANG: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let seconds: u64 = arg("--seconds").map_or(60, |s| s.parse().expect("--seconds N"));
    let seed: u64 = arg("--seed").map_or(1, |s| s.parse().expect("--seed N"));
    let max_inputs: u64 = arg("--max-inputs").map_or(u64::MAX, |s| s.parse().expect("--max-inputs N"));
    let out = std::path::PathBuf::from(arg("--out").unwrap_or_else(|| "target/fuzz".into()));
    std::fs::create_dir_all(&out).expect("create the output directory");

    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let strategy = gen::input();

    // The watchdog: the input in progress and when it started.
    let current: Arc<Mutex<(Instant, Option<gen::Input>)>> = Arc::new(Mutex::new((Instant::now(), None)));
    {
        let (current, out) = (current.clone(), out.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(5));
            let c = current.lock().unwrap();
            if let (t, Some(input)) = &*c {
                if t.elapsed() > HANG {
                    let path = out.join("hang.toml");
                    std::fs::write(&path, render(input)).ok();
                    eprintln!("HANG: an input has run for over {} s; written to {}", HANG.as_secs(), path.display());
                    std::process::exit(1);
                }
            }
        });
    }

    let t0 = Instant::now();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = 0u64;
    let mut n = 0u64;
    while t0.elapsed() < Duration::from_secs(seconds) && n < max_inputs {
        let input = strategy.new_tree(&mut runner).expect("generate an input").current();
        *current.lock().unwrap() = (Instant::now(), Some(input.clone()));
        let outcome = check(&input);
        *current.lock().unwrap() = (Instant::now(), None);
        n += 1;
        let key = match &outcome {
            Ok(o) => format!("{o:?}"),
            Err(f) => {
                failures += 1;
                let path = out.join(format!("fail-{failures}.toml"));
                std::fs::write(&path, format!("# {}\n{}", f.what.replace('\n', "\n# "), render(&input))).ok();
                eprintln!("FAIL ({}): {}", path.display(), f.what.lines().next().unwrap_or(""));
                "Failure".into()
            }
        };
        *counts.entry(key).or_default() += 1;
        if n % 10_000 == 0 {
            eprintln!("{n} inputs in {:.0} s: {counts:?}", t0.elapsed().as_secs_f64());
        }
    }
    println!("ccbench-fuzz seed {seed}: {n} inputs in {:.1} s: {counts:?}", t0.elapsed().as_secs_f64());
    if failures > 0 {
        std::process::exit(1);
    }
}

/// An input as a scenario file with its overrides as comments.
fn render(input: &gen::Input) -> String {
    let sets: String = input.overrides.iter().map(|o| format!("# --set {o}\n")).collect();
    format!("{sets}{}", input.text)
}
