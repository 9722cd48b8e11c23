//! Property tests on random scenarios: packet conservation at every stop
//! (sent = delivered + dropped + held by links), per-qdisc counter
//! identities, and time that never runs backwards (the engine asserts it).

use ccbench_core::qdisc::Qdisc;
use ccbench_core::scenario;
use ccbench_core::units::{Dur, SimTime};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct LinkP {
    rate_mbit: u32,
    delay_ms: u32,
    qdisc: &'static str,
    limit: u32,
    loss: f64,
}

#[derive(Debug, Clone)]
struct FlowP {
    ping: bool,
    cc: &'static str,
    ecn: bool,
    pacing: bool,
    path: Vec<usize>,
    start_ms: u32,
    bytes: Option<u32>,
}

fn link_p() -> impl Strategy<Value = LinkP> {
    (1u32..200, 0u32..40, prop::sample::select(vec!["pfifo", "bfifo", "codel", "fq_codel", "cake"]), 2u32..300, prop::sample::select(vec![0.0, 0.0, 0.01, 0.05]))
        .prop_map(|(rate_mbit, delay_ms, qdisc, limit, loss)| LinkP { rate_mbit, delay_ms, qdisc, limit, loss })
}

fn flow_p(nlinks: usize) -> impl Strategy<Value = FlowP> {
    (
        any::<bool>(),
        prop::sample::select(vec!["reno", "cubic"]),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(0..nlinks, 1..=nlinks),
        0u32..2000,
        prop::option::of(1000u32..500_000),
    )
        .prop_map(|(ping, cc, ecn, pacing, path, start_ms, bytes)| FlowP { ping, cc, ecn, pacing, path, start_ms, bytes })
}

fn scenario_text(links: &[LinkP], flows: &[FlowP]) -> String {
    let mut s = String::from("duration = \"4s\"\nseed = 7\n");
    for (i, l) in links.iter().enumerate() {
        let q = match l.qdisc {
            "pfifo" => format!("{{ kind = \"pfifo\", limit = {} }}", l.limit),
            "bfifo" => format!("{{ kind = \"bfifo\", limit = \"{}b\" }}", l.limit * 1500),
            "codel" => format!("{{ kind = \"codel\", limit = {}, ecn = true }}", l.limit),
            // Cake: shaped below the link rate or unlimited, egress or
            // ingress, with the ACK filter and a small memory limit.
            "cake" => {
                let bw = if l.limit % 3 == 0 { "0".to_string() } else { format!("{}kbit", l.rate_mbit * 900) };
                let mode = ["triple_isolate", "flows", "dual_dsthost"][(l.limit % 3) as usize];
                format!(
                    "{{ kind = \"cake\", bandwidth = \"{bw}\", ingress = {}, ack_filter = \"{}\", memlimit = \"{}b\", flow_mode = \"{mode}\", overhead_preset = \"ethernet\" }}",
                    l.limit % 2 == 0,
                    ["on", "aggressive", "off"][(l.delay_ms % 3) as usize],
                    l.limit * 1500
                )
            }
            _ => format!("{{ kind = \"fq_codel\", limit = {}, flows = 16 }}", l.limit),
        };
        s += &format!("[[links]]\nid = \"l{i}\"\nrate = \"{}Mbit\"\ndelay = \"{}ms\"\nloss = {}\nqdisc = {q}\n", l.rate_mbit, l.delay_ms, l.loss);
    }
    for (i, f) in flows.iter().enumerate() {
        let path: Vec<String> = f.path.iter().map(|j| format!("\"l{j}\"")).collect();
        let rev: Vec<String> = f.path.iter().rev().map(|j| format!("\"l{j}\"")).collect();
        s += &format!("[[flows]]\nid = \"f{i}\"\npath = [{}]\nreverse = [{}]\nstart = \"{}ms\"\n", path.join(","), rev.join(","), f.start_ms);
        if f.ping {
            s += "kind = \"ping\"\ninterval = \"20ms\"\n";
        } else {
            s += &format!("cc = \"{}\"\necn = {}\ntcp = {{ pacing = {} }}\n", f.cc, f.ecn, f.pacing);
            if let Some(b) = f.bytes {
                s += &format!("bytes = \"{b}b\"\n");
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn packets_are_conserved_at_every_stop(
        (links, flows) in prop::collection::vec(link_p(), 1..4)
            .prop_flat_map(|links| { let n = links.len(); (Just(links), prop::collection::vec(flow_p(n), 1..5)) }),
        stops in prop::collection::vec(1u64..4000, 1..5),
    ) {
        let text = scenario_text(&links, &flows);
        let parsed = scenario::parse(&text, "prop.toml", &[]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut sim = scenario::build::build(&parsed.scenario);
        let mut stops = stops;
        stops.sort();
        for ms in stops.into_iter().chain([4000]) {
            sim.run_until(SimTime::ZERO + Dur::from_millis(ms));
            let c = sim.conservation();
            prop_assert_eq!(c.sent, c.delivered + c.dropped + c.held, "{:?}", c);
            for l in &sim.links {
                // Link identity: arrivals = lost + dropped + departed + queued.
                let queued = l.qdisc.len() as u64 + u64::from(l.busy());
                prop_assert_eq!(l.arrivals, l.lost + l.stats.drops() + l.tx_pkts + queued);
                prop_assert_eq!(l.qdisc.len() == 0, l.qdisc.bytes() == 0);
            }
            for f in &sim.flows {
                if let ccbench_core::flow::Endpoints::Tcp { tx, .. } = &f.ep {
                    tx.sb.check();
                    prop_assert!(tx.t.cwnd >= 1);
                }
            }
        }
    }
}
