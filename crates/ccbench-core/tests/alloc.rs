//! Hot-path rule: no heap allocation per packet. A counting allocator
//! measures allocations while a warmed-up simulation moves ~100k packets;
//! only amortized growth of the metric columns and queues is allowed.

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
fn steady_state_does_not_allocate_per_packet() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/b1-cubic-fq_codel.toml")).unwrap();
    let parsed = scenario::parse(&text, "b1", &["duration=\"30s\"".into()]).unwrap();
    let mut sim = scenario::build::build(&parsed.scenario);
    sim.run_until(SimTime::ZERO + Dur::from_secs(10));
    let (a0, p0) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    sim.run_until(SimTime::ZERO + Dur::from_secs(20));
    let (a1, p1) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    let packets = p1 - p0;
    let allocs = a1 - a0;
    assert!(packets > 100_000, "{packets} packets");
    assert!(allocs * 1000 < packets, "{allocs} allocations for {packets} packets");

    // Shapers, netem (jitter, loss, duplication, slots, stacked) and rewriting.
    let text = r#"duration = "60s"
[[links]]
id = "b"
qdisc = { kind = "htb", rate = "100Mbit", stab = { overhead = 18 }, child = { kind = "fq_codel" } }
rewrite = { ecn = "ect1" }
[[links]]
id = "d"
qdisc = { kind = "netem", delay = "10ms", jitter = "2ms", rate = "1Gbit", limit = 100000, duplicate = 0.1, loss = { model = "gemodel", p = 0.1, r = 50 },
          child = { kind = "netem", delay = "200us", slot = { min = "100us", max = "1ms", packets = 42 } } }
[[links]]
id = "t"
qdisc = { kind = "tbf", rate = "1Gbit", burst = "100000b", limit = "10000000b" }
delay = "10ms"
[[flows]]
id = "f"
cc = "cubic"
count = 4
path = ["d", "b"]
reverse = ["t"]
"#;
    let parsed = scenario::parse(text, "net", &[]).unwrap();
    let mut sim = scenario::build::build(&parsed.scenario);
    sim.run_until(SimTime::ZERO + Dur::from_secs(10));
    let (a0, p0) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    sim.run_until(SimTime::ZERO + Dur::from_secs(40));
    let (a1, p1) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    let (packets, allocs) = (p1 - p0, a1 - a0);
    assert!(packets > 100_000, "{packets} packets");
    assert!(
        allocs * 1000 < packets,
        "network qdiscs: {allocs} allocations for {packets} packets"
    );
}
