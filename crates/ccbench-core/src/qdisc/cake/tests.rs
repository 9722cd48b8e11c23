//! Cake against properties of sch_cake.c: fairness (flows and hosts),
//! sparse-flow priority, tins, the shaper's rate with overhead, ingress
//! accounting, `cake_set_rate` and the rtt presets.

use super::*;
use crate::packet::{Ecn, FlowId, Header};
use crate::qdisc::testing::{pkt, Harness};
use crate::qdisc::blocks::sce::SceRamp;

fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}

/// A constant-rate unresponsive source.
#[derive(Clone)]
struct Src {
    tuple: u32,
    size: u32,
    dscp: u8,
    src: u16,
    dst: u16,
    every: Dur,
    next: SimTime,
}

fn src(tuple: u32, size: u32, every: Dur) -> Src {
    Src {
        tuple,
        size,
        dscp: 0,
        src: 0,
        dst: 1,
        every,
        next: SimTime::ZERO,
    }
}

/// What left the qdisc: (time, tuple, qdisc length, sojourn, tin).
struct Out {
    t: SimTime,
    tuple: u32,
    size: u32,
    sojourn: Dur,
    tin: u8,
}

/// Feed the sources and dequeue whenever Cake's shaper allows, in 10 µs
/// steps, for `dur`.
fn run(q: &mut Cake, h: &mut Harness, srcs: &mut [Src], dur: Dur) -> Vec<Out> {
    let mut out = Vec::new();
    let step = Dur::from_micros(10);
    let mut now = SimTime::ZERO;
    while now < SimTime::ZERO + dur {
        for s in srcs.iter_mut() {
            while s.next <= now {
                let p = Packet {
                    flow: FlowId(s.tuple),
                    tuple: s.tuple,
                    size: s.size,
                    dscp: s.dscp,
                    src_host: s.src,
                    dst_host: s.dst,
                    sent_at: s.next,
                    ..Default::default()
                };
                h.enq(q, now, p);
                s.next += s.every;
            }
        }
        while let Some(p) = h.deq(q, now) {
            out.push(Out {
                t: now,
                tuple: p.tuple,
                size: p.size,
                sojourn: now.since(p.enq_at),
                tin: p.class,
            });
        }
        now += step;
    }
    out
}

fn bytes_of(out: &[Out], tuple: u32, after: SimTime) -> u64 {
    out.iter()
        .filter(|o| o.tuple == tuple && o.t >= after)
        .map(|o| u64::from(o.size))
        .sum()
}

fn cake(f: impl FnOnce(&mut CakeConfig)) -> Cake {
    let mut c = CakeConfig {
        bandwidth: Rate(10_000_000),
        ..Default::default()
    };
    f(&mut c);
    c.validate().unwrap();
    c.build()
}

#[test]
fn defaults_match_tc_cake() {
    let c: CakeConfig = toml::from_str("").unwrap();
    assert_eq!(c, CakeConfig::default());
    assert_eq!(
        (c.diffserv, c.flow_mode, c.rtt.0, c.limit),
        (Diffserv::Diffserv3, FlowMode::TripleIsolate, ms(100), 10240)
    );
    let q = c.build();
    // Unlimited: target 5 ms, interval 100 ms, quantum 1514, no memory cap
    // but limit·MTU.
    assert_eq!(
        (
            q.tins[0].cparams.target,
            q.tins[0].cparams.interval,
            q.tins[0].flow_quantum
        ),
        (ms(5), ms(100), 1514)
    );
    assert_eq!(q.buffer_limit(), 10240 * 1514);
    let c: CakeConfig = toml::from_str("bandwidth = \"10Mbit\"\nrtt = \"satellite\"\nflow_mode = \"dual_srchost\"\noverhead_preset = \"ethernet\"\nack_filter = \"aggressive\"\nmtu_scaling = \"2mtu_x_flows\"").unwrap();
    assert_eq!(
        (c.rtt.0, c.flow_mode, c.ack_filter, c.mtu_scaling),
        (
            ms(1000),
            FlowMode::DualSrchost,
            AckFilter::Aggressive,
            MtuScaling::TwoMtuXFlows
        )
    );
    assert!(toml::from_str::<CakeConfig>("rtt = \"moon\"")
        .unwrap_err()
        .to_string()
        .contains("interplanetary"));
    assert!(CakeConfig {
        overhead: Some(300),
        ..Default::default()
    }
    .validate()
    .is_err());
    assert!(CakeConfig {
        mpu: Some(257),
        ..Default::default()
    }
    .validate()
    .is_err());
}

#[test]
fn rtt_presets_set_interval_and_target_of_one_twentieth() {
    for (name, rtt) in Rtt::PRESETS {
        let c: CakeConfig = toml::from_str(&format!("rtt = \"{name}\"")).unwrap();
        let q = c.build();
        assert_eq!(q.tins[0].cparams.interval, rtt, "{name}");
        assert_eq!(q.tins[0].cparams.target, Dur(rtt.nanos() / 20), "{name}");
    }
}

#[test]
fn set_rate_scales_target_and_interval_with_the_mtu_time() {
    // 1 Mbit/s: 1514 B take 12.112 ms; target = 1.5·that, interval grows
    // by the same amount (cake_set_rate).
    let q = cake(|c| c.bandwidth = Rate(1_000_000));
    let p = &q.tins[0].cparams;
    let mtu = p.mtu_time.nanos() as f64 / 1e6;
    assert!((mtu - 12.112).abs() < 0.001, "{mtu}");
    assert_eq!(p.target, p.mtu_time * 3 / 2);
    assert_eq!(p.interval, ms(100) + p.target - ms(5));
    assert_eq!(
        q.tins[0].flow_quantum, 300,
        "125000 B/s >> 12 = 30, clamped to 300"
    );
    // 10 Mbit/s: best effort keeps 5 ms; the bulk tin (1/16 rate) does not.
    let q = cake(|_| {});
    assert_eq!(q.tins[0].cparams.target, ms(5));
    assert_eq!(q.tins[0].flow_quantum, 305);
    let bulk = &q.tins[1].cparams;
    assert!(bulk.target > ms(5) && bulk.target == bulk.mtu_time * 3 / 2);
    // memory limit: max(4 MiB, 4·rate·rtt) = 4 MiB at 10 Mbit/s, 100 ms
    assert_eq!(q.buffer_limit(), 4 << 20);
}

#[test]
fn overhead_presets_as_tc_defines_them() {
    let charge = |f: fn(&mut CakeConfig)| {
        let mut c = CakeConfig::default();
        f(&mut c);
        c.overhead_calc().charge(1514)
    };
    assert_eq!(charge(|_| {}), 1514, "raw");
    assert_eq!(
        charge(|c| c.overhead_preset = OverheadPreset::Ethernet),
        1538
    );
    assert_eq!(charge(|c| c.overhead_preset = OverheadPreset::Docsis), 1518);
    assert_eq!(
        charge(|c| c.overhead_preset = OverheadPreset::Conservative),
        1548usize.div_ceil(48) as u32 * 53
    );
    assert_eq!(
        charge(|c| c.overhead_preset = OverheadPreset::PppoePtm),
        1530 + 1530u32.div_ceil(64)
    );
    assert_eq!(
        charge(|c| c.overhead_preset = OverheadPreset::BridgedPtm),
        1522 + 1522u32.div_ceil(64)
    );
    assert_eq!(charge(|c| c.overhead = Some(-4)), 1496);
    assert_eq!(
        charge(|c| {
            c.overhead_preset = OverheadPreset::Ethernet;
            c.ether_vlan = true
        }),
        1542
    );
    let mut c = CakeConfig {
        overhead_preset: OverheadPreset::Ethernet,
        ..Default::default()
    };
    assert_eq!(
        c.overhead_calc().charge(54),
        84,
        "mpu 84 for a 40 B IP packet"
    );
    c.mpu = Some(0);
    assert_eq!(c.overhead_calc().charge(54), 78);
}

#[test]
fn shaper_long_run_rate_is_exact_with_each_overhead_setting() {
    let presets: [fn(&mut CakeConfig); 6] = [
        |_| {},
        |c| c.overhead_preset = OverheadPreset::Ethernet,
        |c| c.overhead_preset = OverheadPreset::Docsis,
        |c| c.overhead_preset = OverheadPreset::Conservative,
        |c| c.overhead_preset = OverheadPreset::PppoePtm,
        |c| {
            c.overhead = Some(20);
            c.mpu = Some(96);
            c.link_layer = Some(LinkLayer::Atm)
        },
    ];
    for (i, f) in presets.iter().enumerate() {
        for size in [1514u32, 600, 64] {
            let mut h = Harness::new();
            let mut q = cake(|c| {
                c.diffserv = Diffserv::Besteffort;
                f(c)
            });
            let charge = q.overhead.charge(size);
            // Offer twice the rate so the shaper is always busy.
            let every = Dur(u64::from(charge) * 8 * 1_000_000_000 / 20_000_000);
            let mut s = [src(1, size, every)];
            let out = run(&mut q, &mut h, &mut s, Dur::from_secs(4));
            let from = SimTime::ZERO + Dur::from_secs(1);
            let sent: Vec<&Out> = out.iter().filter(|o| o.t >= from).collect();
            let span = sent.last().unwrap().t.since(sent[0].t).as_secs_f64();
            let bits = (sent.len() - 1) as f64 * f64::from(charge) * 8.0;
            let rate = bits / span;
            assert!(
                (rate / 10e6 - 1.0).abs() < 2e-4,
                "setting {i}, {size} B: {rate:.0} bit/s"
            );
        }
    }
}

#[test]
fn a_flow_cannot_take_more_than_its_fair_share() {
    for n in [1u32, 3, 7] {
        let mut h = Harness::new();
        let mut q = cake(|c| {
            c.flow_mode = FlowMode::Flows;
            c.diffserv = Diffserv::Besteffort
        });
        let share = 10e6 / f64::from(n + 1);
        // The hog offers 5× its share, the others 1.5× theirs.
        let pkt_ns = |bps: f64| Dur((1514.0 * 8.0 / bps * 1e9) as u64);
        let mut srcs = vec![src(100, 1514, pkt_ns(5.0 * share))];
        for k in 0..n {
            srcs.push(src(k, 1514, pkt_ns(1.5 * share)));
        }
        let out = run(&mut q, &mut h, &mut srcs, Dur::from_secs(6));
        let from = SimTime::ZERO + Dur::from_secs(2);
        let hog = bytes_of(&out, 100, from) as f64 * 8.0 / 4.0;
        assert!(
            hog < share * 1.03,
            "n={n}: hog {hog:.0} bit/s vs share {share:.0}"
        );
        assert!(hog > share * 0.95, "n={n}: hog starved at {hog:.0}");
        for k in 0..n {
            let r = bytes_of(&out, k, from) as f64 * 8.0 / 4.0;
            assert!(
                (r / share - 1.0).abs() < 0.05,
                "n={n}: flow {k} got {r:.0} of {share:.0}"
            );
        }
    }
}

/// Host A with one flow and host B with four, each flow to its own server
/// (`toward_hosts`: the reverse, A and B are the servers, each flow from
/// its own client); host A's share of the bytes.
fn host_shares(mode: FlowMode, toward_hosts: bool) -> f64 {
    let mut h = Harness::new();
    let mut q = cake(|c| {
        c.flow_mode = mode;
        c.diffserv = Diffserv::Besteffort
    });
    let every = Dur::from_micros(400); // 30 Mbit/s offered per flow
    let ends = |host: u16, peer: u16| if toward_hosts { (peer, host) } else { (host, peer) };
    let mut a = src(1, 1514, every);
    (a.src, a.dst) = ends(10, 20);
    let mut srcs = vec![a];
    for k in 0..4 {
        let mut b = src(2 + k, 1514, every);
        (b.src, b.dst) = ends(11, 21 + k as u16);
        srcs.push(b);
    }
    let out = run(&mut q, &mut h, &mut srcs, Dur::from_secs(5));
    let from = SimTime::ZERO + Dur::from_secs(1);
    let a = bytes_of(&out, 1, from) as f64;
    let all: f64 = (1..6).map(|t| bytes_of(&out, t, from) as f64).sum();
    a / all
}

#[test]
fn triple_isolate_shares_between_hosts_with_different_flow_counts() {
    // Host fairness: A's single flow gets what B's four get together, for
    // source hosts (triple-isolate, dual-srchost) and destination hosts
    // (triple-isolate, dual-dsthost).
    for (mode, toward_hosts) in [
        (FlowMode::TripleIsolate, false),
        (FlowMode::DualSrchost, false),
        (FlowMode::TripleIsolate, true),
        (FlowMode::DualDsthost, true),
    ] {
        let a = host_shares(mode, toward_hosts);
        assert!((a - 0.5).abs() < 0.03, "{mode:?} (toward hosts: {toward_hosts}): host A share {a:.3}");
    }
    // Per-flow fairness: A gets one flow's fifth.
    let a = host_shares(FlowMode::Flows, false);
    assert!((a - 0.2).abs() < 0.02, "flows: host A share {a:.3}");
    // A dual mode on the other side sees five hosts with one flow each: per flow too.
    for (mode, toward_hosts) in [(FlowMode::DualDsthost, false), (FlowMode::DualSrchost, true)] {
        let a = host_shares(mode, toward_hosts);
        assert!((a - 0.2).abs() < 0.02, "{mode:?} (toward hosts: {toward_hosts}): host A share {a:.3}");
    }
}

#[test]
fn a_sparse_ping_sees_almost_no_queue_beside_bulk_flows() {
    let mut h = Harness::new();
    let mut q = cake(|c| c.diffserv = Diffserv::Besteffort);
    let mut srcs: Vec<Src> = (0..4)
        .map(|k| src(k, 1514, Dur::from_micros(500)))
        .collect();
    let mut ping = src(99, 98, ms(10));
    ping.next = SimTime::ZERO + Dur::from_micros(3_333);
    srcs.push(ping);
    let out = run(&mut q, &mut h, &mut srcs, Dur::from_secs(5));
    let from = SimTime::ZERO + Dur::from_secs(1);
    let pings: Vec<f64> = out
        .iter()
        .filter(|o| o.tuple == 99 && o.t >= from)
        .map(|o| o.sojourn.as_millis_f64())
        .collect();
    let mut bulk: Vec<f64> = out
        .iter()
        .filter(|o| o.tuple != 99 && o.t >= from)
        .map(|o| o.sojourn.as_millis_f64())
        .collect();
    bulk.sort_by(f64::total_cmp);
    assert!(pings.len() > 350);
    let worst = pings.iter().cloned().fold(0.0, f64::max);
    // At most one 1514 B packet ahead (1.21 ms at 10 Mbit/s).
    assert!(worst < 1.3, "ping sojourn up to {worst:.2} ms");
    assert!(
        bulk[bulk.len() / 2] > 4.0,
        "bulk median {:.2} ms",
        bulk[bulk.len() / 2]
    );
}

#[test]
fn diffserv3_maps_dscps_to_tins_and_enforces_the_thresholds() {
    let mut h = Harness::new();
    let mut q = cake(|c| c.flow_mode = FlowMode::Flows);
    let every = Dur::from_micros(800); // ~15 Mbit/s offered per class
    let mut be = src(1, 1514, every);
    let mut bk = src(2, 1514, every);
    let mut ef = src(3, 1514, every);
    (be.dscp, bk.dscp, ef.dscp) = (0, 8, 46);
    let out = run(&mut q, &mut h, &mut [be, bk, ef], Dur::from_secs(6));
    for o in &out {
        assert_eq!(o.tin, [0, 0, 1, 2][o.tuple as usize], "tuple {}", o.tuple);
    }
    let from = SimTime::ZERO + Dur::from_secs(2);
    let r = |t| bytes_of(&out, t, from) as f64 * 8.0 / 4.0 / 1e6;
    // Voice is held to its 1/4 threshold, bulk to 1/16; best effort the rest.
    let (be, bk, ef) = (r(1), r(2), r(3));
    assert!((ef - 2.5).abs() < 0.05, "voice {ef:.3} Mbit/s");
    assert!((bk - 0.625).abs() < 0.03, "bulk {bk:.3} Mbit/s");
    assert!((be - 6.875).abs() < 0.08, "best effort {be:.3} Mbit/s");
    // Alone, the voice tin may use the whole link (thresholds are not caps).
    let mut h = Harness::new();
    let mut q = cake(|_| {});
    let mut ef = src(3, 1514, every);
    ef.dscp = 46;
    let out = run(&mut q, &mut h, &mut [ef], Dur::from_secs(3));
    let ef = bytes_of(&out, 3, SimTime::ZERO + Dur::from_secs(1)) as f64 * 8.0 / 2.0 / 1e6;
    assert!((ef - 10.0).abs() < 0.1, "voice alone {ef:.3} Mbit/s");
}

#[test]
fn ingress_mode_counts_drops_against_the_shaper() {
    for ingress in [false, true] {
        let mut h = Harness::new();
        let mut q = cake(|c| {
            c.ingress = ingress;
            c.diffserv = Diffserv::Besteffort;
            c.memlimit = Some(Bytes(150_000))
        });
        // 20 Mbit/s offered by two unresponsive flows.
        let mut srcs = [
            src(1, 1514, Dur::from_micros(1211)),
            src(2, 1514, Dur::from_micros(1211)),
        ];
        let out = run(&mut q, &mut h, &mut srcs, Dur::from_secs(6));
        let from = SimTime::ZERO + Dur::from_secs(2);
        let sent = (bytes_of(&out, 1, from) + bytes_of(&out, 2, from)) as f64 * 8.0 / 4.0;
        let drops = h.stats.drops();
        assert!(drops > 1000, "ingress {ingress}: {drops} drops");
        if ingress {
            // Everything that arrived after the queue filled was charged:
            // what left plus what was dropped in the window is the rate.
            assert!(sent < 9.0e6, "ingress delivered {sent:.0} bit/s");
        } else {
            assert!(
                (sent / 10e6 - 1.0).abs() < 1e-3,
                "egress delivered {sent:.0} bit/s"
            );
        }
    }
    // Exactly: in ingress mode the shaper's clock advanced by every packet
    // that arrived (sent or dropped); offered 20 Mbit/s, so after the start
    // the clock runs at twice real time and delivery collapses towards the
    // share the failsafe allows.
    let mut h = Harness::new();
    let mut q = cake(|c| {
        c.ingress = true;
        c.diffserv = Diffserv::Besteffort;
        c.memlimit = Some(Bytes(150_000))
    });
    let mut srcs = [
        src(1, 1514, Dur::from_micros(1211)),
        src(2, 1514, Dur::from_micros(1211)),
    ];
    let out = run(&mut q, &mut h, &mut srcs, Dur::from_secs(4));
    let charged = q.time_next_packet.0 as f64;
    let per_pkt = 1514.0 * 8.0 / 10e6 * 1e9;
    let counted = (out.len() as u64 + h.stats.drops()) as f64;
    assert!(
        (charged / (counted * per_pkt) - 1.0).abs() < 1e-3,
        "clock {charged} vs {counted} packets"
    );
}

#[test]
fn ack_filter_drops_redundant_acks_in_the_queue() {
    let mut h = Harness::new();
    let mut q = cake(|c| {
        c.ack_filter = AckFilter::On;
        c.bandwidth = Rate(100_000)
    });
    for n in 1..=10u64 {
        let p = Packet {
            tuple: 5,
            size: 66,
            hdr: Header::TcpAck(crate::packet::TcpAck {
                ack: n,
                ..Default::default()
            }),
            ..Default::default()
        };
        h.enq(&mut q, SimTime::ZERO, p);
    }
    // Each new ACK finds two older redundant ones once three are queued:
    // one is kept at the head plus the newest two.
    assert_eq!(q.ack_drops, 8);
    assert_eq!(q.len(), 2);
    assert_eq!(h.stats.drops(), 8);
    let _ = Ecn::NotEct;
}

mod props {
    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Enq {
            tuple: u32,
            size: u32,
            dscp: u8,
            ack: Option<u64>,
            ecn: bool,
        },
        Deq,
        Wait(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..10, 64u32..=1514, prop::sample::select(vec![0u8, 8, 46, 10]), prop::option::of(0u64..20), any::<bool>())
                .prop_map(|(tuple, size, dscp, ack, ecn)| Op::Enq { tuple, size, dscp, ack, ecn }),
            3 => Just(Op::Deq),
            1 => (0u64..30_000_000).prop_map(Op::Wait),
        ]
    }

    fn check(q: &Cake) -> Result<(), TestCaseError> {
        let (mut n, mut b) = (0usize, 0u64);
        for tin in &q.tins {
            let (mut sparse, mut bulk, mut decaying) = (0, 0, 0);
            let mut tb = 0;
            for (i, f) in tin.flows.iter().enumerate() {
                let fb: u64 = f.q.iter().map(|p| u64::from(p.size)).sum();
                prop_assert_eq!(fb, f.backlog);
                (n, b, tb) = (n + f.q.len(), b + fb, tb + fb);
                let on = |l: &VecDeque<u16>| l.iter().filter(|&&x| usize::from(x) == i).count();
                let lists = (
                    on(&tin.new_flows),
                    on(&tin.old_flows),
                    on(&tin.decaying_flows),
                );
                let want = match f.list {
                    List::None => (0, 0, 0),
                    List::New => (1, 0, 0),
                    List::Old => (0, 1, 0),
                    List::Decaying => (0, 0, 1),
                };
                prop_assert_eq!(lists, want, "flow {} list", i);
                prop_assert!(
                    f.q.is_empty() || f.list != List::None,
                    "backlogged flow {} on no list",
                    i
                );
                match f.set {
                    FlowSet::Sparse | FlowSet::SparseWait => sparse += 1,
                    FlowSet::Bulk => bulk += 1,
                    FlowSet::Decaying => decaying += 1,
                    FlowSet::None => prop_assert_eq!(f.list, List::None),
                }
            }
            prop_assert_eq!(
                (sparse, bulk, decaying),
                (
                    tin.sparse_flow_count,
                    tin.bulk_flow_count,
                    tin.decaying_flow_count
                )
            );
            prop_assert_eq!(tb, tin.backlog);
        }
        prop_assert_eq!(q.len(), n);
        prop_assert_eq!(q.bytes(), b);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn conserves_packets_and_keeps_lists_and_counts_consistent(
            ops in proptest::collection::vec(op(), 1..400),
            shaped: bool, ingress: bool, mem in 3000u64..40_000,
            mode in prop::sample::select(vec![FlowMode::TripleIsolate, FlowMode::Flows, FlowMode::Flowblind, FlowMode::Hosts, FlowMode::DualSrchost]),
            filter in prop::sample::select(vec![AckFilter::Off, AckFilter::On, AckFilter::Aggressive]),
        ) {
            let mut h = Harness::new();
            let cfg = CakeConfig {
                bandwidth: if shaped { Rate(5_000_000) } else { Rate::UNLIMITED },
                ingress, flow_mode: mode, ack_filter: filter, memlimit: Some(Bytes(mem)),
                ..Default::default()
            };
            let mut q = cfg.build();
            let (mut now, mut arrived, mut departed) = (SimTime::ZERO, 0u64, 0u64);
            for o in ops {
                match o {
                    Op::Enq { tuple, size, dscp, ack, ecn } => {
                        let hdr = ack.map_or(Header::None, |a| Header::TcpAck(crate::packet::TcpAck { ack: a, ..Default::default() }));
                        let p = Packet { tuple, size, dscp, hdr, src_host: (tuple % 3) as u16, dst_host: 7, ecn: if ecn { Ecn::Ect0 } else { Ecn::NotEct }, ..Default::default() };
                        h.enq(&mut q, now, p);
                        arrived += 1;
                    }
                    Op::Deq => {
                        let got = h.deq(&mut q, now);
                        if got.is_none() && q.len() > 0 {
                            // Only the shaper may hold packets back, and it says until when.
                            let w = q.next_wakeup();
                            prop_assert!(shaped && w.is_some_and(|w| w > now), "held {} packets at {:?}, wake {:?}", q.len(), now, w);
                        }
                        departed += u64::from(got.is_some());
                    }
                    Op::Wait(ns) => now += Dur(ns),
                }
                prop_assert_eq!(arrived, departed + h.stats.drops() + q.len() as u64);
                prop_assert!(q.bytes() <= mem);
                check(&q)?;
            }
            // Draining (following the shaper's wake-ups) returns everything.
            for _ in 0..100_000 {
                match h.deq(&mut q, now) {
                    Some(_) => departed += 1,
                    None if q.len() == 0 => break,
                    None => now = q.next_wakeup().expect("a wake-up while holding packets"),
                }
            }
            prop_assert_eq!(arrived, departed + h.stats.drops());
            prop_assert_eq!((q.len(), q.bytes()), (0, 0));
        }
    }
}

#[test]
fn scenario_host_names_become_packet_host_ids() {
    let text = r#"
duration = "1s"
[[links]]
id = "up"
rate = "10Mbit"
qdisc = { kind = "cake", bandwidth = "5Mbit", flow_mode = "dual_srchost", overhead_preset = "docsis" }
[[links]]
id = "down"
rate = "10Mbit"
[[flows]]
id = "a"
path = ["up"]
reverse = ["down"]
[[flows]]
id = "b"
src = "laptop"
dst = "cdn"
path = ["up"]
reverse = ["down"]
[[flows]]
id = "c"
src = "laptop"
path = ["up"]
reverse = ["down"]
"#;
    let parsed = crate::scenario::parse(text, "hosts.toml", &[]).unwrap();
    let sim = crate::scenario::build::build(&parsed.scenario);
    let hosts: Vec<(u16, u16, u16, u16)> = sim
        .flows
        .iter()
        .map(|f| {
            (
                f.fwd_tmpl.src_host,
                f.fwd_tmpl.dst_host,
                f.rev_tmpl.src_host,
                f.rev_tmpl.dst_host,
            )
        })
        .collect();
    // client 0, server 1, then new names in order of first use; replies swap.
    assert_eq!(hosts, [(0, 1, 1, 0), (2, 3, 3, 2), (2, 1, 1, 2)]);
    let bad = text.replace("\"docsis\"", "\"docsis\", overhead = 999");
    let Err(err) = crate::scenario::parse(&bad, "hosts.toml", &[]) else {
        panic!("overhead 999 accepted")
    };
    let err = err.to_string();
    assert!(
        err.contains("hosts.toml") && err.contains("-64..=256"),
        "{err}"
    );
}

#[test]
fn unshaped_tins_share_by_their_drr_weights() {
    // No bandwidth: weighted DRR over tins with tin_quantum 1024 / 64 / 256
    // (diffserv3), here served by a 10 Mbit/s link (one dequeue per 1514 B).
    let mut h = Harness::new();
    let mut q = cake(|c| c.bandwidth = Rate::UNLIMITED);
    let every = Dur::from_micros(800);
    let mut srcs = [
        src(1, 1514, every),
        src(2, 1514, every),
        src(3, 1514, every),
    ];
    (srcs[1].dscp, srcs[2].dscp) = (8, 46);
    let tx = Dur::from_micros(1211);
    let mut now = SimTime::ZERO;
    let mut sent = [0u64; 3];
    while now < SimTime::ZERO + Dur::from_secs(6) {
        for s in srcs.iter_mut() {
            while s.next <= now {
                let p = Packet {
                    tuple: s.tuple,
                    size: s.size,
                    dscp: s.dscp,
                    ..Default::default()
                };
                h.enq(&mut q, now, p);
                s.next += s.every;
            }
        }
        if let Some(p) = h.deq(&mut q, now) {
            if now >= SimTime::ZERO + Dur::from_secs(2) {
                sent[p.tuple as usize - 1] += 1;
            }
        }
        now += tx;
    }
    let total = sent.iter().sum::<u64>() as f64;
    let share: Vec<f64> = sent.iter().map(|&n| n as f64 / total).collect();
    for (got, want) in share
        .iter()
        .zip([1024.0 / 1344.0, 64.0 / 1344.0, 256.0 / 1344.0])
    {
        assert!((got - want).abs() < 0.01, "shares {share:?}");
    }
}

#[test]
fn eight_way_set_association_gives_colliding_flows_their_own_queues() {
    use crate::qdisc::blocks::flow_hash::{jhash_1word, DEFAULT_PERTURBATION};
    let mut h = Harness::new();
    let mut q = cake(|c| {
        c.flow_mode = FlowMode::Flows;
        c.diffserv = Diffserv::Besteffort
    });
    // Nine tuples whose hashes land in the same set of 8 queues.
    let set_of =
        |t: u32| (jhash_1word(t, DEFAULT_PERTURBATION) as usize % hash::QUEUES) / hash::WAYS;
    let target = set_of(0);
    let tuples: Vec<u32> = (0..).filter(|&t| set_of(t) == target).take(9).collect();
    for (i, &t) in tuples.iter().enumerate() {
        h.enq(
            &mut q,
            SimTime::ZERO,
            Packet {
                tuple: t,
                size: 1000,
                ..Default::default()
            },
        );
        let busy = q.tins[0].flows.iter().filter(|f| !f.q.is_empty()).count();
        // The first eight take the eight ways; the ninth must share one.
        assert_eq!(busy, (i + 1).min(8), "after tuple {i}");
    }
    assert_eq!(q.tins[0].way_collisions, 1);
    let used: Vec<usize> = (0..hash::QUEUES)
        .filter(|&k| !q.tins[0].flows[k].q.is_empty())
        .collect();
    assert!(used.iter().all(|&k| k / hash::WAYS == target), "{used:?}");
    // A flow's later packets find its way again (tag hit), even after others.
    h.enq(
        &mut q,
        SimTime::ZERO,
        Packet {
            tuple: tuples[3],
            size: 1000,
            ..Default::default()
        },
    );
    let holding: Vec<usize> = q.tins[0]
        .flows
        .iter()
        .map(|f| f.q.iter().filter(|p| p.tuple == tuples[3]).count())
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(holding, [2], "both packets of one flow in one queue");
}

/// Cake-SCE (chromi/sce `sce`): `sce = true` is divisor 1, a linear ramp
/// from 0 at target/2 to 1 at target. An ECT(0) source 1 % above the
/// shaped rate makes the sojourn climb slowly through the ramp: no mark at
/// or below target/2, the marked count matches Σ p(sojourn) within 4σ
/// (5 seeds), every ECT(0) packet above target leaves ECT(1) or CE, and
/// Not-ECT packets are never SCE-marked.
#[test]
fn sce_marks_ect0_on_the_sojourn_ramp() {
    let c: CakeConfig = toml::from_str("sce = true").unwrap();
    assert_eq!(c.sce, 1);
    assert_eq!(toml::from_str::<CakeConfig>("sce = 4").unwrap().sce, 4);
    assert_eq!(toml::from_str::<CakeConfig>("sce = false").unwrap().sce, 0);
    assert!(toml::from_str::<CakeConfig>("sce = \"yes\"").is_err());
    for seed in 1..=5u64 {
        for ecn in [Ecn::Ect0, Ecn::NotEct] {
            let mut q = cake(|c| {
                c.sce = 1;
                c.diffserv = Diffserv::Besteffort;
            });
            let target = q.tins[0].cparams.target;
            let ramp = SceRamp::new(target, 1).unwrap();
            let mut h = Harness::new();
            h.rng = crate::rng::SimRng::for_component(seed, "cake-sce");
            let (mut expect, mut var, mut marked, mut above) = (0.0, 0.0, 0u32, 0u32);
            let mut ect1 = 0u64;
            let mut now = SimTime::ZERO;
            let mut next = SimTime::ZERO;
            while now < SimTime::ZERO + Dur::from_millis(600) {
                if next <= now {
                    let p = Packet { flow: FlowId(1), tuple: 1, size: 1500, ecn, hdr: Header::None, ..Default::default() };
                    h.enq(&mut q, now, p);
                    next += Dur::from_micros(1188);
                }
                while let Some(p) = h.deq(&mut q, now) {
                    let s = now.since(p.enq_at);
                    ect1 += u64::from(p.ecn == Ecn::Ect1);
                    if ecn == Ecn::NotEct {
                        assert_ne!(p.ecn, Ecn::Ect1);
                        continue;
                    }
                    if s <= target / 2 {
                        assert_eq!(p.ecn, Ecn::Ect0, "marked at {s:?}");
                    } else if s < target {
                        let pr = ramp.prob(s);
                        expect += pr;
                        var += pr * (1.0 - pr);
                        marked += u32::from(p.ecn == Ecn::Ect1);
                    } else if p.ecn != Ecn::Ect0 {
                        above += 1;
                    } else {
                        panic!("unmarked ECT(0) at {s:?} above target");
                    }
                }
                now += Dur::from_micros(10);
            }
            if ecn == Ecn::Ect0 {
                assert!(expect > 50.0, "seed {seed}: the ramp was crossed ({expect})");
                let dev = (f64::from(marked) - expect).abs();
                assert!(dev < 4.0 * var.sqrt(), "seed {seed}: {marked} marks vs {expect:.1} ± {:.1}", var.sqrt());
                assert!(above > 0);
                assert_eq!(q.tins[0].sce_marks, ect1, "seed {seed}: the tin counts every SCE mark");
            } else {
                assert_eq!(q.tins[0].sce_marks, 0);
            }
        }
    }
}

/// chromi/sce `cobalt_should_drop`: the SCE ramp's upper part (knee +
/// (sojourn − target)·ramp_hi) applies only while COBALT is `over_target`,
/// which also needs the sojourn past 2·mtu_time·bulk_flows and
/// 4·mtu_time. At 2 Mbit/s (mtu_time 6 ms, target 9.1 ms, floor 24 ms) with
/// divisor 4, a packet between target and the floor is marked on the lower
/// ramp, (sojourn − target/2)·ramp_lo: over 10 seeds the marks match Σ of
/// that within 4σ and miss Σ of the upper ramp by more.
#[test]
fn sce_past_target_but_below_cobalts_floor_takes_the_lower_ramp() {
    let (mut marked, mut lo, mut hi, mut var) = (0.0, 0.0, 0.0, 0.0);
    for seed in 1..=10u64 {
        let mut q = cake(|c| {
            c.sce = 4;
            c.diffserv = Diffserv::Besteffort;
            c.bandwidth = Rate(2_000_000);
        });
        let p = q.tins[0].cparams.clone();
        let floor = p.threshold(1);
        assert!(floor > p.target + ms(10), "{floor:?} vs {:?}", p.target);
        let ramp = SceRamp::new(p.target, 4).unwrap();
        let mut h = Harness::new();
        h.rng = crate::rng::SimRng::for_component(seed, "cake-sce-floor");
        // MTU-sized packets 1 % above the rate: the sojourn climbs 1 ms per 100 ms.
        let every = Dur(p.mtu_time.nanos() * 99 / 100);
        let (mut now, mut next) = (SimTime::ZERO, SimTime::ZERO);
        while now < SimTime::ZERO + Dur::from_secs(4) {
            if next <= now {
                let pk = Packet { flow: FlowId(1), tuple: 1, size: PSCHED_MTU, ecn: Ecn::Ect0, hdr: Header::None, ..Default::default() };
                h.enq(&mut q, now, pk);
                next += every;
            }
            while let Some(pk) = h.deq(&mut q, now) {
                let s = now.since(pk.enq_at);
                if s > p.target && s <= floor {
                    let (l, u) = (ramp.prob_cobalt(s, false), ramp.prob_cobalt(s, true));
                    lo += l;
                    hi += u;
                    var += l * (1.0 - l);
                    marked += f64::from(u8::from(pk.ecn == Ecn::Ect1));
                }
            }
            now += Dur::from_micros(50);
        }
    }
    let sd = var.sqrt();
    assert!(hi - lo > 6.0 * sd, "the ramps differ enough to tell: {lo:.0} vs {hi:.0} ± {sd:.1}");
    assert!((marked - lo).abs() < 4.0 * sd, "{marked} marks vs lower ramp {lo:.1} ± {sd:.1} (upper {hi:.1})");
}

/// cake_reconfigure: the memory limit is four intervals' worth of the rate
/// (at least 4 MiB), and never more than `limit` MTUs (15.5 MB with tc's
/// default limit, reached between 100 Mbit/s and 1 Gbit/s).
#[test]
fn the_memory_limit_follows_the_rate_up_to_limit_mtus() {
    let at = |bps: u64| cake(|c| c.bandwidth = Rate(bps)).buffer_limit();
    assert_eq!(at(10_000_000), 4 << 20);
    assert_eq!(at(100_000_000), 5_000_000);
    assert_eq!(at(1_000_000_000), 10240 * 1514);
}

/// cake_advance_shaper at 10 Mbit/s (1000 B take 800 µs): a tin clock
/// behind `now` moves on by the packet's time (no jump to now), one less
/// than a packet ahead is pushed to now + that time, one further ahead is
/// left; the global clock moves by the packet's time and the failsafe by
/// 1.5 times it, except for a dropped packet.
#[test]
fn the_shaper_clocks_advance_as_cake_advance_shaper() {
    let mut q = cake(|_| {});
    let at = |us: u64| SimTime::ZERO + Dur::from_micros(us);
    let now = at(10_000);
    for (tin_before, tin_after) in [(5_000, 5_800), (10_500, 10_800), (12_000, 12_000)] {
        q.tins[0].time_next_packet = at(tin_before);
        q.time_next_packet = at(5_000);
        q.failsafe_next_packet = at(5_000);
        q.advance_shaper(0, 1000, now, false);
        assert_eq!(q.tins[0].time_next_packet, at(tin_after), "tin clock at {tin_before} µs");
        assert_eq!((q.time_next_packet, q.failsafe_next_packet), (at(5_800), at(6_200)));
    }
    q.advance_shaper(0, 1000, now, true);
    assert_eq!((q.time_next_packet, q.failsafe_next_packet), (at(6_600), at(6_200)), "a drop leaves the failsafe");
}

/// cake_enqueue: a packet into an empty tin restarts that tin's clock at
/// `now` (no credit banked while idle); the global clocks restart only when
/// the whole qdisc was empty.
#[test]
fn an_idle_shaper_restarts_without_banked_credit() {
    let mut q = cake(|_| {});
    let mut h = Harness::new();
    let with_dscp = |dscp| Packet { dscp, ..pkt(1, Ecn::NotEct) };
    let at = |x| SimTime::ZERO + ms(x);
    h.enq(&mut q, at(1), with_dscp(0));
    assert_eq!((q.tins[0].time_next_packet, q.time_next_packet, q.failsafe_next_packet), (at(1), at(1), at(1)));
    h.enq(&mut q, at(5), with_dscp(8)); // CS1: the bulk tin, empty until now
    assert_eq!(q.tins[1].time_next_packet, at(5));
    assert_eq!((q.time_next_packet, q.failsafe_next_packet), (at(1), at(1)), "the qdisc was not empty");
}

/// Overflow with equally long queues drops from the first found (tins in
/// order; in each the new, old and decaying lists). sch_cake's overflow
/// heap also picks a longest queue, but among equals by its heap's history;
/// the model's choice is a deterministic stand-in for it.
#[test]
fn an_overflow_between_equal_queues_drops_from_the_first_found() {
    let mut q = cake(|c| {
        c.bandwidth = Rate(0);
        c.memlimit = Some(crate::units::Bytes(4000));
    });
    let mut h = Harness::new();
    for flow in 1..=3 {
        h.enq(&mut q, SimTime::ZERO, pkt(flow, Ecn::NotEct));
    }
    let left: Vec<u32> = std::iter::from_fn(|| h.deq(&mut q, SimTime::ZERO)).map(|p| p.tuple).collect();
    assert_eq!(left, [2, 3]);
}

#[test]
fn debug_output_names_the_config_and_the_queue_length() {
    let q = cake(|_| {});
    let s = format!("{q:?}");
    assert!(s.starts_with("Cake { cfg: CakeConfig") && s.ends_with("qlen: 0 }"), "{s}");
}

/// One tin, no shaper: the DRR++ and COBALT behaviour alone.
fn unshaped_besteffort() -> Cake {
    cake(|c| {
        c.bandwidth = Rate(0);
        c.diffserv = Diffserv::Besteffort;
    })
}

/// cake_dequeue: a flow found empty while its COBALT state is at rest
/// leaves every list; one found empty within an interval of its last packet
/// (COBALT's activity timer) waits on the decaying list.
#[test]
fn an_emptied_flow_is_forgotten_once_cobalt_is_at_rest() {
    for (found_at, decaying) in [(0, 1), (200, 0)] {
        let mut h = Harness::new();
        let mut q = unshaped_besteffort();
        h.enq(&mut q, SimTime::ZERO, pkt(1, Ecn::NotEct));
        for _ in 0..3 {
            h.enq(&mut q, SimTime::ZERO, pkt(2, Ecn::NotEct));
        }
        // Flow 1 sends, runs out of credit and is topped up on the old list;
        // the third dequeue finds it empty there and serves flow 2.
        for now in [0, 0, found_at] {
            assert!(h.deq(&mut q, SimTime::ZERO + ms(now)).is_some());
        }
        let b = &q.tins[0];
        assert_eq!((b.sparse_flow_count, b.bulk_flow_count, b.decaying_flow_count), (0, 1, decaying), "found at {found_at} ms");
        assert_eq!((b.decaying_flows.len(), b.old_flows.len()), (decaying as usize, 1));
    }
}

/// Ingress mode: a packet COBALT drops is charged to its tin's and its
/// flow's DRR credit as if it had been sent (the bytes did cross the link).
#[test]
fn ingress_drops_are_charged_to_the_tin_credit() {
    let mut h = Harness::new();
    let at = |x| SimTime::ZERO + ms(x);
    let mut q = cake(|c| {
        c.bandwidth = Rate(0);
        c.ingress = true;
        c.diffserv = Diffserv::Besteffort;
    });
    for _ in 0..10 {
        h.enq(&mut q, at(0), pkt(1, Ecn::NotEct));
    }
    assert!(h.deq(&mut q, at(200)).is_some());
    q.tins[0].tin_deficit = 10_000;
    let idx = q.tins[0].flows.iter().position(|f| !f.q.is_empty()).expect("the backlogged flow");
    q.tins[0].flows[idx].deficit = 10_000;
    let drops = h.stats.drops_aqm;
    assert!(h.deq(&mut q, at(400)).is_some());
    let dropped = (h.stats.drops_aqm - drops) as i32;
    assert!(dropped > 0, "COBALT dropped");
    let len = q.overhead.charge(PSCHED_MTU) as i32;
    assert_eq!(q.tins[0].tin_deficit, 10_000 - (dropped + 1) * len);
    assert_eq!(q.tins[0].flows[idx].deficit, 10_000 - (dropped + 1) * len, "and to its flow's");
}

/// Tin 0's bulk flows and the sums of its hosts' source and destination
/// bulk counts.
fn bulk_counts(q: &Cake) -> (u32, u32, u32) {
    let b = &q.tins[0];
    let bulk = b.flows.iter().filter(|f| f.set == FlowSet::Bulk).count() as u32;
    let src: u32 = b.hosts.iter().map(|h| u32::from(h.src_bulk)).sum();
    let dst: u32 = b.hosts.iter().map(|h| u32::from(h.dst_bulk)).sum();
    (bulk, src, dst)
}

/// The per-host bulk counts (cake_inc/dec_srchost/dsthost_bulk_flow_count)
/// follow the flows into and out of the bulk set: with every flow from and
/// to hosts of their own, each host's count is its one flow while bulk.
#[test]
fn host_bulk_counts_follow_flows_in_and_out_of_bulk() {
    let mut h = Harness::new();
    let mut q = unshaped_besteffort();
    for (flow, n) in [(1u32, 4), (2, 12), (3, 3)] {
        for _ in 0..n {
            let p = Packet { src_host: 10 + flow as u16, dst_host: 20 + flow as u16, ..pkt(flow, Ecn::NotEct) };
            h.enq(&mut q, SimTime::ZERO, p);
        }
    }
    let mut most = 0;
    while q.len() > 0 {
        h.deq(&mut q, SimTime::ZERO).expect("a packet");
        let (bulk, src, dst) = bulk_counts(&q);
        assert_eq!((src, dst), (bulk, bulk), "{} left", q.len());
        most = most.max(bulk);
    }
    assert_eq!((most, bulk_counts(&q).0), (3, 1), "all three were bulk; two left the set");
}

/// srchost / dsthost / hosts: one queue per host (or host pair), so each
/// host gets an equal share however many flows it has.
#[test]
fn host_modes_share_per_host() {
    for (mode, toward_hosts) in [(FlowMode::Srchost, false), (FlowMode::Dsthost, true), (FlowMode::Hosts, false), (FlowMode::Hosts, true)] {
        let a = host_shares(mode, toward_hosts);
        if mode == FlowMode::Hosts {
            // Five distinct host pairs: five queues.
            assert!((a - 0.2).abs() < 0.02, "{mode:?} (toward hosts: {toward_hosts}): host A share {a:.3}");
        } else {
            assert!((a - 0.5).abs() < 0.03, "{mode:?} (toward hosts: {toward_hosts}): host A share {a:.3}");
        }
    }
}

/// A ninth flow into a set whose eight ways hold bulk flows takes over the
/// queue its search ended on (sch_cake's set-associative collision): the
/// old owner's hosts lose that bulk flow, the newcomer's hosts gain it.
#[test]
fn a_way_collision_moves_the_bulk_count_to_the_new_hosts() {
    let mut h = Harness::new();
    let mut q = unshaped_besteffort();
    let set_of = |tuple: u32| crate::qdisc::blocks::flow_hash::jhash_1word(tuple, q.perturbation) as usize % hash::QUEUES / hash::WAYS;
    let mut by_set = std::collections::HashMap::<usize, Vec<u32>>::new();
    let tuples = (1u32..)
        .find_map(|t| {
            let v = by_set.entry(set_of(t)).or_default();
            v.push(t);
            (v.len() == hash::WAYS + 1).then(|| v.clone())
        })
        .unwrap();
    let nth = |i: usize| Packet { src_host: 100 + i as u16, dst_host: 200 + i as u16, ..pkt(tuples[i], Ecn::NotEct) };
    for i in 0..hash::WAYS {
        for _ in 0..3 {
            h.enq(&mut q, SimTime::ZERO, nth(i));
        }
    }
    for _ in 0..=hash::WAYS {
        h.deq(&mut q, SimTime::ZERO).expect("a packet");
    }
    assert_eq!(bulk_counts(&q), (8, 8, 8), "all eight ways bulk");
    h.enq(&mut q, SimTime::ZERO, nth(hash::WAYS));
    assert_eq!(q.tins[0].way_collisions, 1);
    assert_eq!(bulk_counts(&q), (8, 8, 8), "the taken-over queue's count moved hosts");
}

/// `quantum_div`, a table as in sch_cake.c: 65535 / i, and 65535 at 0.
#[test]
fn quantum_div_is_65535_over_the_load() {
    assert_eq!(hash::quantum_div(0), 65535);
    for load in 1..=hash::QUEUES as u16 {
        assert_eq!(hash::quantum_div(load), 65535 / u32::from(load), "load {load}");
    }
}

/// `rotate_old` (the old list walked, rotated once) leaves the tin as
/// `cake_dequeue`'s loop does, moving one flow at a time from the head to
/// the tail: the same top-ups in the same order (the same random dither
/// drawn), the same flows' sets and hosts' loads, the same order. Flows of
/// three hosts, some sparse with packets (they turn bulk and change their
/// host's load on the way), quanta of a few bytes (many laps of the list).
#[test]
fn rotating_the_old_list_at_once_matches_moving_one_flow_at_a_time() {
    let mode = FlowMode::TripleIsolate;
    for seed in 0..40u64 {
        let tin = |draw: &mut SimRng| {
            let mut t = Tin::new(1_250_000, 1514, ms(5), ms(100), MtuScaling::default(), false);
            for h in 0..3 {
                t.hosts[h].src_bulk = 1 + (draw.next_u32() % 40) as u16;
                t.hosts[h].dst_bulk = 1 + (draw.next_u32() % 40) as u16;
            }
            let n = 1 + draw.next_u32() as usize % 12;
            for k in 0..n {
                let idx = 10 + 7 * k;
                let f = &mut t.flows[idx];
                f.srchost = (draw.next_u32() % 3) as u16;
                f.dsthost = (draw.next_u32() % 3) as u16;
                f.deficit = -((draw.next_u32() % 3000) as i32);
                f.set = [FlowSet::Bulk, FlowSet::Sparse, FlowSet::SparseWait][draw.next_u32() as usize % 3];
                if f.set == FlowSet::Sparse {
                    t.sparse_flow_count += 1;
                    if draw.next_u32() % 2 == 0 {
                        f.q.push_back(Packet::default());
                    }
                }
                t.move_tail(idx, List::Old);
            }
            t
        };
        let mut walked = tin(&mut SimRng::for_component(seed, "tin"));
        let mut moved = tin(&mut SimRng::for_component(seed, "tin"));
        let (mut r1, mut r2) = (SimRng::for_component(seed, "dither"), SimRng::for_component(seed, "dither"));
        walked.rotate_old(mode, &mut r1);
        let mut moves = 0;
        loop {
            let idx = usize::from(moved.old_flows[0]);
            if moved.flows[idx].deficit > 0 {
                break;
            }
            moved.top_up(idx, mode, &mut r2);
            moved.move_tail(idx, List::Old);
            moves += 1;
        }
        assert!(moves > 0);
        assert_eq!(walked.old_flows, moved.old_flows, "seed {seed}: order");
        let state = |t: &Tin| -> Vec<(i32, FlowSet, List)> { t.flows.iter().map(|f| (f.deficit, f.set, f.list)).collect() };
        assert!(state(&walked) == state(&moved), "seed {seed}: flows");
        assert_eq!(walked.hosts[..3], moved.hosts[..3], "seed {seed}: hosts' loads");
        assert_eq!((walked.sparse_flow_count, walked.bulk_flow_count), (moved.sparse_flow_count, moved.bulk_flow_count));
        assert_eq!(r1.next_u64(), r2.next_u64(), "seed {seed}: as many draws");
    }
}
