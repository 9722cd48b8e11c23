//! A short, fixed-seed run of the fuzz campaign (`make fuzz` runs it for a
//! set time): the same inputs every time, each read, resolved and run under
//! small limits, none of which may panic, hang, outgrow its memory or disk
//! limit, or be refused without saying what and where.

use ccbench_fuzz::{check, gen, Counting, Outcome};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

#[global_allocator]
static A: Counting = Counting;

#[test]
fn fixed_seed_inputs_break_no_rule() {
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let strategy = gen::input();
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..2000 {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        match check(&input) {
            Ok(o) => *seen.entry(o).or_insert(0) += 1,
            Err(f) => panic!("{}\n--- overrides {:?}\n{}", f.what, input.overrides, input.text),
        }
    }
    // The inputs reach every stage: refused as written, refused as too
    // costly, run to the end.
    for o in [Outcome::Rejected, Outcome::Refused, Outcome::Ran] {
        assert!(seen.get(&o).copied().unwrap_or(0) >= 10, "{seen:?}");
    }
}
