//! Property tests on random scenarios: packet conservation at every stop
//! (sent = delivered + dropped + held by links), per-qdisc counter
//! identities, and time that never runs backwards (the engine asserts it).
//! Links carry every qdisc kind, including the non-work-conserving ones
//! (tbf, htb, netem with loss/duplication/jitter/reorder/slots, stacked),
//! rate and qdisc replace/change schedules, and header rewriting; a second
//! property checks that nothing stays stuck once the sources stop.

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
    (1u32..200, 0u32..40, prop::sample::select(vec!["pfifo", "bfifo", "codel", "fq_codel", "red", "pie", "fq_pie", "tbf", "htb", "netem", "netem_slot", "netem_stack", "htb_netem", "cake", "twin_codel_af", "lfq_cobalt"]), 2u32..300, prop::sample::select(vec![0.0, 0.0, 0.01, 0.05]))
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
            "red" => format!(
                "{{ kind = \"red\", limit = \"{}b\", avpkt = 1000, min = 1500, max = 4500, burst = 3, ecn = {}, adaptive = true }}",
                l.limit * 1500,
                l.limit % 2 == 0
            ),
            "pie" => format!("{{ kind = \"pie\", limit = {}, ecn = {}, target = \"2ms\" }}", l.limit, l.limit % 2 == 0),
            "fq_pie" => format!("{{ kind = \"fq_pie\", limit = {}, flows = 16, ecn = true, target = \"2ms\" }}", l.limit),
            "fq_codel" => format!("{{ kind = \"fq_codel\", limit = {}, flows = 16 }}", l.limit),
            "tbf" => format!("{{ kind = \"tbf\", rate = \"{}Mbit\", burst = \"3000b\", latency = \"50ms\" }}", l.limit % 50 + 1),
            "htb" => format!("{{ kind = \"htb\", rate = \"{}Mbit\", child = {{ kind = \"fq_codel\", limit = {} }}, stab = {{ overhead = 10, linklayer = \"atm\" }} }}", l.limit % 50 + 1, l.limit),
            "netem" => format!(
                "{{ kind = \"netem\", delay = \"5ms\", jitter = \"{}ms\", limit = {}, ecn = true, duplicate = 2, reorder = {{ p = 5, gap = 3 }}, loss = {{ model = \"gemodel\", p = 1, r = 30 }} }}",
                l.limit % 8,
                l.limit
            ),
            "netem_slot" => format!("{{ kind = \"netem\", delay = \"200us\", limit = {}, slot = {{ min = \"800us\", max = \"10ms\", packets = 42 }} }}", l.limit),
            "netem_stack" => format!("{{ kind = \"netem\", delay = \"2ms\", rate = \"{}Mbit\", child = {{ kind = \"netem\", delay = \"1ms\", jitter = \"3ms\", limit = {} }} }}", l.limit % 50 + 1, l.limit),
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
            // SCE/CE marking behind its own shaper, ECN flows or not.
            "twin_codel_af" => format!("{{ kind = \"twin_codel_af\", bandwidth = \"{}kbit\", limit = {}, sce = {} }}", l.rate_mbit * 900, l.limit, l.limit % 5),
            "lfq_cobalt" => format!("{{ kind = \"lfq_cobalt\", bandwidth = \"{}kbit\", limit = {}, sce_thresh = {}, memlimit = \"{}b\" }}", l.rate_mbit * 900, l.limit, l.limit % 9, (l.limit % 3) * 20000),
            _ => format!("{{ kind = \"htb\", rate = \"{}Mbit\", child = {{ kind = \"netem\", delay = \"1ms\", jitter = \"1ms\", limit = {} }} }}", l.limit % 50 + 1, l.limit),
        };
        s += &format!("[[links]]\nid = \"l{i}\"\nrate = \"{}Mbit\"\ndelay = \"{}ms\"\nloss = {}\nqdisc = {q}\n", l.rate_mbit, l.delay_ms, l.loss);
        // Time-varying topology and header rewriting on some links.
        match l.limit % 5 {
            0 => s += "schedule = [{ at = \"1s\", qdisc = { kind = \"codel\" } }, { at = \"2500ms\", change = { limit = 5 } }]\n",
            1 => s += "schedule = [{ at = \"1500ms\", rate = \"1Mbit\" }]\nrewrite = { ecn = \"ect1\", dscp = 0 }\n",
            2 if l.qdisc.starts_with("netem") => s += "schedule = [{ at = \"1s\", change = { delay = \"30ms\" } }]\n",
            2 if l.qdisc == "tbf" || l.qdisc.starts_with("htb") => s += "schedule = [{ at = \"1s\", change = { rate = \"2Mbit\" } }]\n",
            _ => {}
        }
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
            prop_assert_eq!(c.sent + c.duplicated, c.delivered + c.dropped + c.held, "{:?}", c);
            for l in &sim.links {
                // Link identity: arrivals + copies = lost + dropped + departed + queued.
                let queued = l.qdisc.len() as u64 + u64::from(l.busy());
                prop_assert_eq!(l.arrivals + l.stats.duplicates, l.lost + l.stats.drops() + l.tx_pkts + queued);
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

    /// Non-work-conserving qdiscs never stall: once every source has
    /// stopped, everything still queued or in flight leaves (delivered or
    /// dropped). A stopped TCP sender still retransmits what it had sent
    /// (the application stops offering data, the socket does not close),
    /// and after a rate cut that recovery can take RTO backoffs of many
    /// seconds; so the run goes on until every sender has nothing left
    /// outstanding (which must happen: TCP recovers on these paths), then
    /// 30 s more for the links to empty.
    #[test]
    fn everything_queued_eventually_leaves(
        (links, flows) in prop::collection::vec(link_p(), 1..4)
            .prop_flat_map(|links| { let n = links.len(); (Just(links), prop::collection::vec(flow_p(n), 1..5)) }),
    ) {
        let mut text = scenario_text(&links, &flows).replace("duration = \"4s\"", "duration = \"900s\"");
        // Every flow stops at 3 s; TCP senders stop sending new data, pings stop probing.
        text = text.replace("[[flows]]\n", "[[flows]]\nstop = \"3s\"\n");
        let parsed = scenario::parse(&text, "prop.toml", &[]).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut sim = scenario::build::build(&parsed.scenario);
        let outstanding = |sim: &ccbench_core::sim::Sim| -> u32 {
            sim.flows.iter().map(|f| match &f.ep {
                ccbench_core::flow::Endpoints::Tcp { tx, .. } => tx.sb.packets_out(),
                _ => 0,
            }).sum()
        };
        let mut t = 30;
        sim.run_until(SimTime::ZERO + Dur::from_secs(t));
        while outstanding(&sim) > 0 && t < 870 {
            t += 5;
            sim.run_until(SimTime::ZERO + Dur::from_secs(t));
        }
        prop_assert_eq!(outstanding(&sim), 0, "senders still recovering at {} s", t);
        sim.run_until(SimTime::ZERO + Dur::from_secs(t + 30));
        let c = sim.conservation();
        prop_assert_eq!(c.held, 0, "{:?}", c);
        prop_assert_eq!(c.sent + c.duplicated, c.delivered + c.dropped);
    }
}
