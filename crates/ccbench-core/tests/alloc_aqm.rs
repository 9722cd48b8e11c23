//! The no-allocation-per-packet rule for RED, PIE and FQ-PIE (a separate
//! binary from alloc.rs: the counting allocator is process-wide, so the
//! qdiscs run one after another in one test).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use ccbench_core::scenario;
use ccbench_core::units::{Dur, SimTime};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn red_pie_and_fq_pie_do_not_allocate_per_packet() {
    let base = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/b1-cubic-fq_codel.toml")).unwrap();
    for q in [
        r#"{ kind = "pie" }"#,
        r#"{ kind = "fq_pie", ecn = true }"#,
        r#"{ kind = "red", limit = 1000000, avpkt = 1000, adaptive = true, bandwidth = "100Mbit" }"#,
    ] {
        let text = base.replace(r#"{ kind = "fq_codel" }"#, q);
        assert!(text.contains(q));
        let parsed = scenario::parse(&text, "b1", &["duration=\"30s\"".into()]).unwrap();
        let mut sim = scenario::build::build(&parsed.scenario);
        sim.run_until(SimTime::ZERO + Dur::from_secs(10));
        let (a0, p0) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
        sim.run_until(SimTime::ZERO + Dur::from_secs(20));
        let (a1, p1) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
        let (packets, allocs) = (p1 - p0, a1 - a0);
        assert!(packets > 100_000, "{q}: {packets} packets");
        assert!(allocs * 1000 < packets, "{q}: {allocs} allocations for {packets} packets");
    }
}
