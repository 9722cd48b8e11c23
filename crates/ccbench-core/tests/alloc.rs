//! Hot-path rule: no heap allocation per packet. A counting allocator
//! measures allocations while a warmed-up simulation moves ~100k packets;
//! only amortized growth of the metric columns and queues is allowed. The
//! allocator is process-wide, so every qdisc runs in this one test, one
//! scenario after another.

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

#[track_caller]
fn assert_no_allocation_per_packet(what: &str, text: &str, warm_s: u64, until_s: u64) {
    let parsed = scenario::parse(text, what, &[]).unwrap();
    let mut sim = scenario::build::build(&parsed.scenario);
    sim.run_until(SimTime::ZERO + Dur::from_secs(warm_s));
    let (a0, p0) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    sim.run_until(SimTime::ZERO + Dur::from_secs(until_s));
    let (a1, p1) = (ALLOCS.load(Ordering::Relaxed), sim.sent);
    let (packets, allocs) = (p1 - p0, a1 - a0);
    assert!(packets > 100_000, "{what}: {packets} packets");
    assert!(allocs * 1000 < packets, "{what}: {allocs} allocations for {packets} packets");
}

#[test]
fn steady_state_does_not_allocate_per_packet() {
    let b1 = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/b1-cubic-fq_codel.toml")).unwrap();
    let b1 = b1.replace("duration = \"60s\"", "duration = \"30s\"");
    assert_no_allocation_per_packet("b1 fq_codel", &b1, 10, 20);
    // The other AQMs in B1's place.
    for q in [
        r#"{ kind = "pie" }"#,
        r#"{ kind = "fq_pie", ecn = true }"#,
        r#"{ kind = "red", limit = 1000000, avpkt = 1000, adaptive = true, bandwidth = "100Mbit" }"#,
        r#"{ kind = "cake", bandwidth = "100Mbit", overhead_preset = "ethernet" }"#,
        r#"{ kind = "twin_codel_af", bandwidth = "100Mbit" }"#,
        r#"{ kind = "lfq_cobalt", bandwidth = "100Mbit", sce_thresh = 8 }"#,
    ] {
        let text = b1.replace(r#"{ kind = "fq_codel" }"#, q);
        assert!(text.contains(q));
        assert_no_allocation_per_packet(q, &text, 10, 20);
    }
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
    assert_no_allocation_per_packet("network qdiscs", text, 10, 40);
}
