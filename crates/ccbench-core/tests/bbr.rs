//! BBR v1 end to end (Linux net/ipv4/tcp_bbr.c): startup, drain, gain
//! cycling, PROBE_RTT, convergence of two flows and sharing with CUBIC.

mod common;
use common::*;

use ccbench_core::metrics::{FlowSeries, LinkSeries};
use ccbench_core::RunOutput;

/// (time s, value) of flow number `idx`'s series.
fn fseries(out: &RunOutput, idx: u32, f: impl Fn(&FlowSeries, usize) -> f64) -> Vec<(f64, f64)> {
    let fs = &out.metrics.flow_series;
    (0..fs.time_s.len()).filter(|&i| fs.flow[i] == idx).map(|i| (fs.time_s[i], f(fs, i))).collect()
}
/// (time s, value) of link number `idx`'s series.
fn lseries(out: &RunOutput, idx: u32, f: impl Fn(&LinkSeries, usize) -> f64) -> Vec<(f64, f64)> {
    let ls = &out.metrics.link_series;
    (0..ls.time_s.len()).filter(|&i| ls.link[i] == idx).map(|i| (ls.time_s[i], f(ls, i))).collect()
}

/// 50 Mbit/s × 40 ms in 1514 B packets.
const BDP_50M_40MS: f64 = 50e6 * 0.040 / (1514.0 * 8.0);
/// What 50 Mbit/s of 1514 B frames carries of TCP payload (1448 B each),
/// Mbit/s: the unit of BBR's bandwidth estimate and pacing rate.
const PAYLOAD_50M: f64 = 50.0 * 1448.0 / 1514.0;

/// STARTUP's 2/ln 2 gain doubles the delivery rate every round: from 10
/// packets the flow reaches the bottleneck rate within ⌈log2(BDP/10)⌉
/// rounds plus one round of feedback delay (and one of slack for the
/// pacing ramp), with no loss in a deep buffer.
#[test]
fn startup_reaches_the_bottleneck_rate_in_log2_bdp_rounds() {
    for seed in 1..=5 {
        eprintln!("seed {seed}");
        startup_reaches_the_bottleneck_rate_in_log2_bdp_rounds_at(seed);
    }
}

fn startup_reaches_the_bottleneck_rate_in_log2_bdp_rounds_at(seed: u64) {
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "pfifo", limit = 1000 }"#, "3s", &tcp("bbr", "bbr", ""));
    let out = run(&text, &["metrics.interval=\"5ms\"", &format!("seed={seed}")]);
    let ideal = 50.0 * 1448.0 / 1514.0;
    let good = fseries(&out, 0, |fs, i| fs.goodput_mbps[i]);
    // First 20 ms window averaging ≥ 90 % of the link.
    let t_full = good.windows(4).find(|w| w.iter().map(|x| x.1).sum::<f64>() / 4.0 >= 0.9 * ideal).map(|w| w[0].0).unwrap();
    let rounds = (BDP_50M_40MS / 10.0).log2().ceil() + 2.0;
    assert!(t_full <= rounds * 0.040 + 0.040, "full rate at {t_full} s, bound {} RTTs", rounds);
    // and not faster than the doubling allows (the first RTT delivers 10).
    assert!(t_full >= (BDP_50M_40MS / 10.0).log2().floor() * 0.040, "{t_full}");
    assert_eq!(flow(&out.summary, "bbr").retransmits, 0);
}

/// DRAIN (pacing gain 1/2.885) empties the ~2 BDP queue STARTUP built in
/// about one round, and ends when in-flight is down to one BDP plus the
/// cwnd's quantisation budget (`bbr_check_drain`); PROBE_BW then keeps
/// in-flight around one BDP.
#[test]
fn drain_brings_inflight_to_about_one_bdp() {
    for seed in 1..=5 {
        eprintln!("seed {seed}");
        drain_brings_inflight_to_about_one_bdp_at(seed);
    }
}

fn drain_brings_inflight_to_about_one_bdp_at(seed: u64) {
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "pfifo", limit = 1000 }"#, "2s", &tcp("bbr", "bbr", QUIET));
    let out = run(&text, &["metrics.interval=\"5ms\"", &format!("seed={seed}")]);
    let backlog = lseries(&out, 0, |ls, i| ls.backlog_pkts[i] as f64);
    let pacing = fseries(&out, 0, |fs, i| fs.pacing_mbps[i]);
    let inflight = fseries(&out, 0, |fs, i| fs.inflight_pkts[i]);
    // STARTUP paces at up to 2.885 × 50 Mbit/s, DRAIN at 0.35 × 50.
    let high = pacing.iter().position(|x| x.1 > 100.0).unwrap();
    let start = high + pacing[high..].iter().position(|x| x.1 < 20.0).unwrap();
    let end = start + pacing[start..].iter().position(|x| x.1 > 40.0).unwrap();
    let queue_at_start = backlog[start - 1].1;
    assert!(queue_at_start > 1.5 * BDP_50M_40MS, "STARTUP queue {queue_at_start}");
    let rtt = 0.040 + queue_at_start * 1514.0 * 8.0 / 50e6;
    let took = pacing[end].0 - pacing[start].0;
    assert!(took <= 1.2 * rtt, "DRAIN took {took} s, one round is {rtt} s");
    assert!(backlog[end].1 <= 0.1 * BDP_50M_40MS, "queue left {}", backlog[end].1);
    let at_exit = inflight[end].1;
    assert!((BDP_50M_40MS..=1.15 * BDP_50M_40MS).contains(&at_exit), "in-flight {at_exit} at DRAIN exit, BDP {BDP_50M_40MS}");
    let mut later: Vec<f64> = inflight.iter().filter(|x| x.0 > pacing[end].0 + 0.2).map(|x| x.1).collect();
    later.sort_by(f64::total_cmp);
    let median = later[later.len() / 2];
    assert!((median / BDP_50M_40MS - 1.0).abs() < 0.1, "median in-flight {median} vs BDP {BDP_50M_40MS}");
}

/// The min-RTT estimate expires after 10 s without a lower sample (a
/// standing queue in a 1-BDP FIFO keeps it from refreshing), so PROBE_RTT
/// comes every ~10 s and holds cwnd at 4 for at least 200 ms.
#[test]
fn probe_rtt_every_10_s_for_at_least_200_ms() {
    for seed in 1..=5 {
        eprintln!("seed {seed}");
        probe_rtt_every_10_s_for_at_least_200_ms_at(seed);
    }
}

fn probe_rtt_every_10_s_for_at_least_200_ms_at(seed: u64) {
    let text = dumbbell("50Mbit", 20.0, r#"{ kind = "pfifo", limit = 83 }"#, "35s", &tcp("bbr", "bbr", QUIET));
    let out = run(&text, &["metrics.interval=\"10ms\"", &format!("seed={seed}")]);
    let cwnd = fseries(&out, 0, |fs, i| fs.cwnd_pkts[i]);
    let mut runs: Vec<(f64, f64)> = Vec::new(); // (start, end) of cwnd ≤ 4
    for &(t, c) in cwnd.iter().filter(|x| x.0 > 1.0) {
        match runs.last_mut() {
            Some(r) if c <= 4.0 && (t - r.1) < 0.015 => r.1 = t,
            _ if c <= 4.0 => runs.push((t, t)),
            _ => {}
        }
    }
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in &runs {
        // Samples every 10 ms: a run of n samples lasted ≥ (n−1)·10 ms.
        assert!(r.1 - r.0 >= 0.19, "PROBE_RTT lasted {:?}", r);
        assert!(r.1 - r.0 <= 0.35, "PROBE_RTT lasted {:?}", r);
    }
    assert!((runs[0].0 - 10.0).abs() < 0.2, "{runs:?}");
    for w in runs.windows(2) {
        let gap = w[1].0 - w[0].1;
        assert!((10.0..10.3).contains(&gap), "10 s from the end of one PROBE_RTT to the next: {gap}");
    }
}

/// PROBE_BW's gain cycle in the pacing rate: 8 phases of one min_rtt,
/// 1.25 then 0.75 then six at 1.0 of the bandwidth estimate × 0.99.
#[test]
fn gain_cycle_is_visible_in_the_pacing_rate() {
    for seed in 1..=5 {
        eprintln!("seed {seed}");
        gain_cycle_is_visible_in_the_pacing_rate_at(seed);
    }
}

fn gain_cycle_is_visible_in_the_pacing_rate_at(seed: u64) {
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "pfifo", limit = 165 }"#, "6s", &tcp("bbr", "bbr", ""));
    let out = run(&text, &["metrics.interval=\"5ms\"", &format!("seed={seed}")]);
    let pacing: Vec<(f64, f64)> = fseries(&out, 0, |fs, i| fs.pacing_mbps[i]).into_iter().filter(|x| x.0 > 2.0 && x.0 < 6.0).collect();
    let mut v: Vec<f64> = pacing.iter().map(|x| x.1).collect();
    v.sort_by(f64::total_cmp);
    let base = v[v.len() / 2];
    // Gain 1: the link rate (the bw estimate) less Linux's 1 % margin.
    assert!((base / PAYLOAD_50M - 0.99).abs() < 0.005, "cruise pacing {base} Mbit/s");
    let level = |x: f64| ((x / base) * 4.0).round() / 4.0; // nearest quarter
    let lv: Vec<f64> = pacing.iter().map(|x| level(x.1)).collect();
    assert!(lv.iter().all(|&g| g == 0.75 || g == 1.0 || g == 1.25), "{lv:?}");
    // Each 1.25 phase is followed directly by a 0.75 phase.
    let mut probes = 0;
    for w in lv.windows(2) {
        if w[0] == 1.25 && w[1] != 1.25 {
            assert_eq!(w[1], 0.75, "{lv:?}");
            probes += 1;
        }
    }
    // One probe per 8 phases of ~40 ms: ≈ 12 in 4 s.
    assert!((10..=13).contains(&probes), "{probes} probes in 4 s");
    // Exact ratios of the 1.25 and 0.75 phases.
    let hi = pacing.iter().map(|x| x.1).fold(0.0, f64::max);
    let lo = pacing.iter().map(|x| x.1).fold(f64::MAX, f64::min);
    assert!((hi / base - 1.25).abs() < 0.01 && (lo / base - 0.75).abs() < 0.01, "{lo} {base} {hi}");
}

/// Two BBR flows, the second starting 2 s later, converge to equal shares
/// (the late flow's STARTUP and the gain cycle's probing move them towards
/// fairness within a few PROBE_RTT periods).
#[test]
fn two_bbr_flows_converge() {
    for seed in 1..=5 {
        eprintln!("seed {seed}");
        two_bbr_flows_converge_at(seed);
    }
}

fn two_bbr_flows_converge_at(seed: u64) {
    let flows = tcp("a", "bbr", "") + &tcp("b", "bbr", "start = \"2s\"");
    let text = dumbbell("50Mbit", 40.0, r#"{ kind = "pfifo", limit = 330 }"#, "40s", &flows);
    let out = run(&text, &["metrics.warmup=\"20s\"", &format!("seed={seed}")]);
    let a = flow(&out.summary, "a").goodput_mbps;
    let b = flow(&out.summary, "b").goodput_mbps;
    let share = a / (a + b);
    assert!((share - 0.5).abs() < 0.1, "a {a} b {b}");
    assert!(link(&out.summary, "bottleneck").utilization.unwrap() > 0.95);
}

/// CUBIC and BBR through a 1-BDP FIFO: 50 Mbit/s, 20 ms, 83 packets;
/// `flow_keys` on both flows.
fn cubic_and_bbr(duration: &str, flow_keys: &str) -> String {
    let flows = tcp("cubic", "cubic", flow_keys) + &tcp("bbr", "bbr", flow_keys);
    dumbbell("50Mbit", 20.0, r#"{ kind = "pfifo", limit = 83 }"#, duration, &flows)
}

/// BBR against CUBIC in a 1-BDP FIFO (50 Mbit/s, 20 ms, 83 packets, 30 s):
/// BBR's model ignores the loss CUBIC backs off from, and takes most of the
/// link. Linux 6.18 through the same bottleneck (shared/anchors/kernel,
/// c_cubic_bbr_bdp and _r2): BBR 0.894 and 0.883 of the goodput; two more
/// runs on 2026-11-23: 0.871 and 0.875. Ten `ccbench compare` runs on
/// 2026-12-02 (whole run, as below; seeds 1-10 for the flows' start
/// jitter) give each flow's goodput, retransmits and sRTT and the queue's
/// mean delay ([`CUBIC_BESIDE_BBR_IN_LINUX`]); the model's means over seeds
/// 1-10 are held to their means within 10 % (goodput, sRTT) and 25 %
/// (retransmits, queue).
///
/// With the default hosts, where the model does not agree,
/// [`CUBIC_BESIDE_BBR_DISAGREES`] says so and the test holds it there:
/// outside its tolerance (so that it is taken off the list once it agrees)
/// and within 25 % (so that it cannot grow unseen).
#[test]
fn bbr_and_cubic_share_a_one_bdp_fifo_like_linux() {
    let model = cubic_beside_bbr("", &[]);
    against_linux(&model, &CUBIC_BESIDE_BBR_DISAGREES);
}

/// The same, with the emulator's forwarder modelled on both links
/// (`forwarder = "emulator"`: the kernel's packets left `ccbench-emu` when
/// its thread woke, 22 µs late in the median and now and then by
/// milliseconds, in bursts, and its ACKs came back the same way) and hosts
/// that add no timing noise of their own (the default noise was measured
/// through that forwarder, so it already holds some of it). Every figure
/// agrees; CUBIC's goodput comes to +4 % of the kernel's.
#[test]
fn bbr_and_cubic_share_a_one_bdp_fifo_like_linux_through_its_forwarder() {
    let model = cubic_beside_bbr(QUIET_HOSTS, &THROUGH_THE_FORWARDER);
    against_linux(&model, &[]);
}

/// Flow keys for hosts that add no timing noise of their own (the flows
/// still start up to 5 ms apart, as the kernel's did).
const QUIET_HOSTS: &str = r#"tcp = { tx_jitter = "0s", tx_stall_prob = 0.0, ack_jitter = "0s", ack_stall_prob = 0.0 }"#;
/// The dumbbell's links released as `ccbench-emu`'s forwarder releases them.
const THROUGH_THE_FORWARDER: [&str; 2] = [r#"links.bottleneck.forwarder="emulator""#, r#"links.return.forwarder="emulator""#];

/// One BBR flow through the emulator's forwarder, on quiet hosts: its
/// bursts of ACKs lift BBR's bandwidth estimate and so its queue. Through
/// a 1000-packet FIFO (30 s) that takes the model towards the kernel
/// (`ccbench compare`, 2026-12-01: 5.5 and 9.6 ms; exact release: 2.8-3.1
/// ms); in the 1-BDP FIFO of `one_bbr_flow_queues_and_retransmits_like_linux`
/// (20 s) it is above that test's kernel runs (2.8-3.6 ms, an idle host)
/// but within the kernel's range on the day the forwarder's lateness was
/// measured (three `ccbench compare` runs: 3.35, 4.10 and 6.17 ms; the
/// model 4.7-5.7 ms). Held per seed.
#[test]
fn one_bbr_flow_queues_more_through_the_forwarder() {
    for (limit, duration, range) in [(1000, "30s", 4.0..8.0), (83, "20s", 3.8..6.5)] {
        let text = dumbbell("50Mbit", 20.0, &format!("{{ kind = \"pfifo\", limit = {limit} }}"), duration, &tcp("bbr", "bbr", QUIET_HOSTS));
        for seed in 1..=4 {
            let over = [&format!("seed={seed}"), "metrics.warmup=\"0s\"", THROUGH_THE_FORWARDER[0], THROUGH_THE_FORWARDER[1]];
            let s = run(&text, &over.map(|x| x.as_ref())).summary;
            let q = link(&s, "bottleneck").sojourn_ms.mean.unwrap();
            eprintln!("limit {limit}, seed {seed}: queue {q:.2} ms, goodput {:.2}", flow(&s, "bbr").goodput_mbps);
            assert!(range.contains(&q), "limit {limit}, seed {seed}: queue {q} ms");
        }
    }
}

/// Per `ccbench compare` run: CUBIC goodput, retransmits, sRTT; BBR the
/// same; queue ms.
const CUBIC_BESIDE_BBR_IN_LINUX: [[f64; 7]; 10] = [
    [5.431, 165.0, 36.255, 41.815, 841.0, 35.500, 15.028],
    [5.969, 147.0, 36.000, 41.286, 811.0, 35.392, 14.880],
    [5.461, 150.0, 36.104, 41.767, 801.0, 35.291, 14.862],
    [5.844, 164.0, 35.931, 41.409, 778.0, 35.260, 14.837],
    [5.474, 155.0, 35.871, 41.753, 779.0, 35.158, 14.742],
    [4.993, 151.0, 36.488, 42.232, 876.0, 35.554, 15.057],
    [4.690, 215.0, 36.617, 42.560, 1178.0, 35.734, 15.178],
    [4.978, 149.0, 36.509, 42.254, 864.0, 35.531, 15.049],
    [4.640, 161.0, 36.876, 42.588, 887.0, 35.853, 15.287],
    [6.111, 176.0, 35.866, 41.198, 782.0, 35.304, 14.750],
];

/// The model's means over seeds 1-10 of the figures in
/// [`CUBIC_BESIDE_BBR_IN_LINUX`], with `flow_keys` on both flows and the
/// overrides `set`.
fn cubic_beside_bbr(flow_keys: &str, set: &[&str]) -> [f64; 7] {
    let text = cubic_and_bbr("30s", flow_keys);
    let seeds = 1..=10u64;
    let mut model = [0.0f64; 7];
    for seed in seeds.clone() {
        let seed_set = format!("seed={seed}");
        let over: Vec<&str> = [seed_set.as_str(), "metrics.warmup=\"0s\""].into_iter().chain(set.iter().copied()).collect();
        let out = run(&text, &over);
        let (c, b) = (flow(&out.summary, "cubic"), flow(&out.summary, "bbr"));
        let share = b.goodput_mbps / (b.goodput_mbps + c.goodput_mbps);
        assert!((0.83..=0.95).contains(&share), "seed {seed}: BBR share {share} (Linux 0.871-0.902)");
        let q = link(&out.summary, "bottleneck").sojourn_ms.mean.unwrap();
        let row = [c.goodput_mbps, c.retransmits as f64, c.rtt_ms.mean.unwrap(), b.goodput_mbps, b.retransmits as f64, b.rtt_ms.mean.unwrap(), q];
        for (m, v) in model.iter_mut().zip(row) {
            *m += v / seeds.clone().count() as f64;
        }
    }
    model
}

/// Each of the model's figures against the kernel's mean, within 10 %
/// (goodput, sRTT) or 25 % (retransmits, queue) unless `disagrees` lists it.
fn against_linux(model: &[f64; 7], disagrees: &[(&str, &str)]) {
    let names = ["CUBIC goodput", "CUBIC retransmits", "CUBIC sRTT", "BBR goodput", "BBR retransmits", "BBR sRTT", "queue delay"];
    let kernel = &CUBIC_BESIDE_BBR_IN_LINUX;
    for (i, name) in names.iter().enumerate() {
        let k = kernel.iter().map(|r| r[i]).sum::<f64>() / kernel.len() as f64;
        let tol = if matches!(i, 1 | 4 | 6) { 0.25 } else { 0.10 };
        let err = model[i] / k - 1.0;
        eprintln!("{name}: {:.2} vs the kernel's {k:.2} ({:+.1} %)", model[i], 100.0 * err);
        match disagrees.iter().find(|d| d.0 == *name) {
            Some((_, why)) => {
                assert!(err.abs() > tol, "{name} now agrees ({:+.1} %): take it off the list ({why})", 100.0 * err);
                assert!(err.abs() <= 0.25, "{name}: {:.2} vs the kernel's {k:.2}, further than known ({why})", model[i]);
            }
            None => assert!(err.abs() <= tol, "{name}: {:.2} vs the kernel's {k:.2}", model[i]),
        }
    }
}

/// BBR sizes its GSO packets from its pacing rate in payload bytes, as
/// Linux does (`tcp_tso_autosize`: 2^-10 s of `sk_pacing_rate`): beside
/// CUBIC at 50 Mbit/s it cruises at ≈ 43 Mbit/s of payload, 5.3 kB per
/// 1/1024 s, so 3 segments, 4 in the 1.25 phase and 2 in the 0.75 phase.
/// Linux 6.18's captures of this pair (the last segment of each GSO packet
/// carries PSH): 3 / 4 / 2 segments in 69.9 / 12.1 / 17.8 % and 70.1 /
/// 12.1 / 17.6 % of BBR's packets.
#[test]
fn bbr_gso_packets_are_sized_from_its_payload_rate_like_linux() {
    use ccbench_core::metrics::capture::{FLAG_PSH, KIND_DATA};
    for seed in 1..=3u64 {
        let out = run(&cubic_and_bbr("12s", ""), &[&format!("seed={seed}"), "metrics.capture=[\"bottleneck\"]"]);
        let c = &out.metrics.capture;
        // BBR is the flow with the most data segments.
        let data = |e: u32| (0..c.kind.len()).filter(move |&i| c.kind[i] == KIND_DATA && c.endpoint[i] == e);
        let bbr = (0..2).max_by_key(|&e| data(e).count()).unwrap();
        let mut sizes = [0u32; 8];
        let (mut n, mut last) = (0usize, 0u64);
        for i in data(bbr).filter(|&i| c.time_ns[i] > 3_000_000_000) {
            if c.seq[i] < last {
                n = 0; // a retransmission: start over at the next packet
            }
            last = c.seq[i];
            n += 1;
            if c.flags[i] & FLAG_PSH != 0 {
                sizes[n.min(7)] += 1;
                n = 0;
            }
        }
        let total: u32 = sizes.iter().sum();
        let share = |k: usize| f64::from(sizes[k]) / f64::from(total);
        eprintln!("seed {seed}: 2/3/4 segments {:.3} {:.3} {:.3} of {total}", share(2), share(3), share(4));
        for (k, linux) in [(3, 0.70), (4, 0.121), (2, 0.177)] {
            assert!((share(k) - linux).abs() < 0.04, "seed {seed}: {k}-segment packets {:.3}, Linux {linux}", share(k));
        }
    }
}

/// What the model of CUBIC beside BBR, with the default hosts, does not do
/// as Linux through `ccbench-emu` does.
const CUBIC_BESIDE_BBR_DISAGREES: [(&str, &str); 1] = [(
    "CUBIC goodput",
    "6.31 vs 5.36 Mbit/s (+18 %): the kernel's CUBIC meets ~8 % more loss \
     events per second and keeps a smaller window (14-15 vs 16.5 packets), \
     and its BBR paces ~1.3 % faster. The cause is the emulator's forwarder, \
     which the kernel's packets went through and the default hosts stand in \
     for only in part: with its release timing on both links the model gives \
     +12 %, and with hosts that add none of their own +4 % \
     (`..._through_its_forwarder`). Measured and not the cause: BBR's GSO \
     sizes, its cwnd (pacing-limited), i.i.d. receiver ACK delays",
)];

/// Single flow, 50 Mbit/s, 20 ms, 83-packet FIFO, with a ping probe, on
/// hosts without timing noise (`quiet`) or with the default; the return
/// link optionally delays each ACK by a uniform 0..2·`half_us` µs (netem,
/// no reordering: the range is below the 484 µs ACK spacing). Returns
/// (cruise pacing rate / the link's payload rate, mean queue sojourn ms,
/// mean ping ms).
fn single_flow_with_ack_noise(seed: u64, quiet: bool, half_us: u32) -> (f64, f64, f64) {
    let extra = if quiet { QUIET } else { "" };
    let mut text = dumbbell("50Mbit", 20.0, r#"{ kind = "pfifo", limit = 83 }"#, "20s", &(tcp("bbr", "bbr", extra) + PING));
    if half_us > 0 {
        let ret = "id = \"return\"\nrate = \"1Gbit\"\n";
        let netem = format!("{ret}qdisc = {{ kind = \"netem\", delay = \"{half_us}us\", jitter = \"{half_us}us\" }}\n");
        assert!(text.contains(ret));
        text = text.replacen(ret, &netem, 1);
    }
    let out = run(&text, &["metrics.interval=\"10ms\"", "metrics.warmup=\"3s\"", &format!("seed={seed}")]);
    let mut pacing: Vec<f64> = fseries(&out, 0, |fs, i| fs.pacing_mbps[i]).into_iter().filter(|x| x.0 > 3.0).map(|x| x.1).collect();
    pacing.sort_by(f64::total_cmp);
    let sojourn = link(&out.summary, "bottleneck").sojourn_ms.mean.unwrap();
    (pacing[pacing.len() / 2] / PAYLOAD_50M, sojourn, probe(&out.summary, "ping").rtt_ms.mean.unwrap())
}

/// Why irregular ACKs build BBR a queue. Linux 6.18's max-bw filter read
/// 0.7-0.8 % above the link's payload rate through the kernel anchor (ss
/// `bw` ≈ 48.6 vs 48.27 Mbit/s; replaying `tcp_rate.c` on a capture of its
/// ACKs gives the same +0.8 %): a late ACK stamps `delivered_mstamp` late
/// for the packets it releases, their samples read high, and
/// `bbr_update_bw` keeps the largest for 10 rounds. Paced at 0.99 × that,
/// the flow hardly drains the queue each 0.75 phase leaves. With an exact
/// ACK clock (hosts without noise) the estimate is the link rate; ACK
/// arrival noise of the size the kernel's bias implies (≈ 200 µs spread
/// on the return link) moves it the same way: bw +0.7 %, and queue and
/// ping grow by most of a millisecond (seeds 1-5).
#[test]
fn ack_timing_noise_biases_the_bw_filter_up_and_builds_queue() {
    for seed in 1..=5 {
        let (exact, q0, ping0) = single_flow_with_ack_noise(seed, true, 0);
        let (noisy, q1, ping1) = single_flow_with_ack_noise(seed, true, 100);
        eprintln!("seed {seed}: pacing/link {exact:.4} -> {noisy:.4}, queue {q0:.2} -> {q1:.2} ms, ping {ping0:.2} -> {ping1:.2} ms");
        // Exact ACK clock: the estimate is the link rate, paced at 99 %.
        assert!((exact - 0.99).abs() < 0.0005, "seed {seed}: {exact}");
        // Noisy ACKs: the max filter reads above the link rate.
        let bias = noisy / exact - 1.0;
        assert!((0.003..=0.012).contains(&bias), "seed {seed}: bw bias {bias}");
        assert!(q1 > q0 + 0.6, "seed {seed}: queue {q0} -> {q1} ms");
        // The return path's own added delay is 0.1 ms on average.
        assert!(ping1 > ping0 + 0.6, "seed {seed}: ping {ping0} -> {ping1} ms");
        // The default hosts' ACK noise (tcp::HostQueue) biases it too, less.
        let (default, _, _) = single_flow_with_ack_noise(seed, false, 0);
        assert!((0.001..0.005).contains(&(default / exact - 1.0)), "seed {seed}: default hosts' bias {}", default / exact - 1.0);
    }
}

/// One BBR flow with the default hosts against Linux 6.18 through the
/// same path (`ccbench compare`, whole 20 s run, an idle host, 2026-12-02):
/// goodput 47.2, 46.7, 46.7, 46.7 Mbit/s; retransmits 576, 218, 218, 216
/// (the first run had a 14 ms stall of the emulator and a second loss
/// episode); sRTT 24.1, 23.2, 23.5, 23.4 ms; queue delay 3.61, 2.78, 2.96,
/// 2.99 ms. Without the receiving host's ACK noise the model queued 2.55
/// ms.
#[test]
fn one_bbr_flow_queues_and_retransmits_like_linux() {
    // (goodput, retransmits, sRTT, queue delay) per kernel run.
    let kernel = [[47.2, 576.0, 24.1, 3.61], [46.7, 218.0, 23.2, 2.78], [46.7, 218.0, 23.5, 2.96], [46.7, 216.0, 23.4, 2.99]];
    let k: [f64; 4] = std::array::from_fn(|i| {
        let mut v = kernel.map(|r| r[i]);
        v.sort_by(f64::total_cmp);
        (v[1] + v[2]) / 2.0
    });
    for seed in 1..=5 {
        let text = dumbbell("50Mbit", 20.0, r#"{ kind = "pfifo", limit = 83 }"#, "20s", &tcp("bbr", "bbr", ""));
        let s = run(&text, &["metrics.warmup=\"0s\"", &format!("seed={seed}")]).summary;
        let f = flow(&s, "bbr");
        let q = link(&s, "bottleneck").sojourn_ms.mean.unwrap();
        let m = [f.goodput_mbps, f.retransmits as f64, f.rtt_ms.mean.unwrap(), q];
        let r: Vec<f64> = (0..4).map(|i| m[i] / k[i] - 1.0).collect();
        eprintln!("seed {seed}: {m:?} vs the kernel's medians: {r:.3?}");
        assert!(r[0].abs() < 0.10 && r[2].abs() < 0.10, "seed {seed}: goodput, sRTT {r:?}");
        assert!(r[1].abs() < 0.25 && r[3].abs() < 0.25, "seed {seed}: retransmits, queue {r:?}");
    }
}
