//! DualPI2 against RFC 9332 and Linux sch_dualpi2 behaviour.
use proptest::prelude::*;

use super::*;
use crate::qdisc::testing::{pkt, Harness};
use crate::qdisc::QdiscConfig;

fn ms(x: u64) -> SimTime {
    SimTime(x * 1_000_000)
}

/// Enqueue `n` full-size packets with codepoint `ecn` at `t`.
fn fill(h: &mut Harness, q: &mut DualPi2, t: SimTime, ecn: Ecn, n: usize) {
    for _ in 0..n {
        h.enq(q, t, pkt(1, ecn));
    }
}
/// Dequeue everything at `t`.
fn drain(h: &mut Harness, q: &mut DualPi2, t: SimTime) -> Vec<Packet> {
    std::iter::from_fn(|| h.deq(q, t)).collect()
}
fn ce(v: &[Packet]) -> usize {
    v.iter().filter(|p| p.ecn == Ecn::Ce).count()
}

#[test]
fn defaults_match_linux() {
    let c = DualPi2Config::default();
    assert_eq!((c.limit, c.target, c.tupdate), (10000, Dur::from_millis(15), Dur::from_millis(16)));
    assert!((c.alpha - 0.16).abs() < 1e-3 && (c.beta - 3.2).abs() < 1e-3);
    assert_eq!((c.alpha * 256.0, c.beta * 256.0), (41.0, 819.0));
    assert_eq!(c.step_thresh, StepThresh::Time(Dur::from_millis(1)));
    assert_eq!((c.min_qlen_step, c.coupling_factor, c.classic_protection), (0, 2.0, 10));
    assert_eq!((c.ecn_mask, c.overload, c.drop), (EcnMask::L4sEct, Overload::DropOnOverload, DropAt::DropDequeue));
    assert_eq!(toml::from_str::<DualPi2Config>("").unwrap(), c);
    let q = c.build();
    assert_eq!((q.memlimit, q.wc, q.wl, q.credit), (30_280_000, 10, 90, -80 * 1514));
    assert_eq!(q.next_update, ms(16));
    assert!(c.validate().is_ok());
}

#[test]
fn parses_from_a_scenario_table_and_rejects_unknown_keys() {
    #[derive(Debug, Deserialize)]
    struct Link {
        qdisc: QdiscConfig,
    }
    let l: Link = toml::from_str(r#"qdisc = { kind = "dualpi2", step_thresh = "10p", overload = "overflow" }"#).unwrap();
    let QdiscConfig::Dualpi2(c) = l.qdisc else { panic!("not dualpi2") };
    assert_eq!(c, DualPi2Config { step_thresh: StepThresh::Packets(10), overload: Overload::Overflow, ..Default::default() });
    let bad = toml::from_str::<Link>(r#"qdisc = { kind = "dualpi2", step_treshold = "1ms" }"#);
    assert!(bad.unwrap_err().to_string().contains("unknown field"));
    assert!(toml::from_str::<Link>(r#"qdisc = { kind = "dualpi2", step_thresh = "10x" }"#).is_err());
    let c: DualPi2Config = toml::from_str("ecn_mask = \"any_ect\"\ndrop = \"drop_enqueue\"\nmemlimit = \"1mb\"").unwrap();
    assert_eq!((c.ecn_mask, c.drop, c.memlimit), (EcnMask::AnyEct, DropAt::DropEnqueue, Some(Bytes(1 << 20))));
    // Round trip through the tc-style strings.
    let c = DualPi2Config { step_thresh: StepThresh::Packets(7), max_rtt: Some(Dur::from_millis(50)), ..c };
    assert_eq!(toml::from_str::<DualPi2Config>(&toml::to_string(&c).unwrap()).unwrap(), c);
}

#[test]
fn max_rtt_derives_target_tupdate_and_gains_like_tc() {
    let d = Dur::from_millis;
    // typical = 10 ms = target = tupdate (< 60/3); alpha = 0.1·0.01/0.06²; beta = 0.3/0.06.
    let s = DualPi2Config { max_rtt: Some(d(60)), target: d(1), ..Default::default() }.pi_settings();
    assert_eq!((s.target, s.tupdate), (d(10), d(10)));
    assert!((s.alpha - 0.1 * 0.01 / 0.0036).abs() < 1e-12 && (s.beta - 5.0).abs() < 1e-12);
    // Only typical = 30 ms: max = 180 ms; tupdate = min(30, 60) ms.
    let c = DualPi2Config { typical_rtt: Some(d(30)), ..Default::default() };
    let s = c.pi_settings();
    assert_eq!((s.target, s.tupdate), (d(30), d(30)));
    assert!((s.beta - 0.3 / 0.18).abs() < 1e-12);
    let bad = DualPi2Config { max_rtt: Some(d(10)), typical_rtt: Some(d(20)), ..c };
    assert!(bad.validate().unwrap_err().contains("typical_rtt"));
}

#[test]
fn coupling_factor_outside_1_to_255_is_an_error_at_either_end() {
    for (k, ok) in [(0.5, false), (1.0, true), (255.0, true), (300.0, false), (f64::NAN, false)] {
        let r = DualPi2Config { coupling_factor: k, ..Default::default() }.validate();
        assert_eq!(r.is_ok(), ok, "{k}: {r:?}");
        if !ok {
            assert!(r.unwrap_err().contains("coupling_factor"));
        }
    }
}

#[test]
fn change_to_a_lower_limit_drops_from_the_heads_classic_first() {
    // (L packets, classic packets, new limit) -> (L, classic) kept.
    for (l, c, limit, kept) in [(1u32, 3u32, 2u64, (1usize, 1usize)), (3, 0, 1, (1, 0)), (2, 2, 4, (2, 2))] {
        let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
        for i in 0..l {
            h.enq(&mut q, SimTime::ZERO, pkt(10 + i, Ecn::Ect1));
        }
        for i in 0..c {
            h.enq(&mut q, SimTime::ZERO, pkt(20 + i, Ecn::NotEct));
        }
        let mut cx = Cx { now: SimTime::ZERO, rng: &mut h.rng, stats: &mut h.stats };
        q.change(&QdiscConfig::Dualpi2(DualPi2Config { limit, ..Default::default() }), &mut cx).unwrap();
        assert_eq!((q.l.len(), q.c.len()), kept, "{l} L + {c} C to limit {limit}");
        let dropped = u64::from(l + c) - limit.min(u64::from(l + c));
        assert_eq!(h.stats.drops_overlimit, dropped);
        // The heads went: what is left is the newest of each queue.
                let (kl, kc) = (kept.0 as u32, kept.1 as u32);
        let mut want: Vec<u32> = (10 + l - kl..10 + l).chain(20 + c - kc..20 + c).collect();
        want.sort_unstable();
        let mut got: Vec<u32> = drain(&mut h, &mut q, SimTime::ZERO).iter().map(|p| p.flow.0).collect();
        got.sort_unstable();
        assert_eq!(got, want);
    }
}

#[test]
fn classifies_ect1_and_ce_into_l_and_the_rest_into_c() {
    for (mask, want) in [(EcnMask::L4sEct, [0, 1, 0, 1]), (EcnMask::AnyEct, [0, 1, 1, 1])] {
        let mut h = Harness::new();
        let mut q = DualPi2Config { ecn_mask: mask, ..Default::default() }.build();
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            h.enq(&mut q, SimTime::ZERO, pkt(1, e));
        }
        let n_l = want.iter().sum::<u8>() as usize;
        assert_eq!((q.l_len(), q.c_len()), (n_l, 4 - n_l));
        assert_eq!((q.counts().packets_in_l, q.counts().packets_in_c), (n_l as u64, 4 - n_l as u64));
        for p in drain(&mut h, &mut q, SimTime::ZERO) {
            assert_eq!(p.class, want[p.ecn.bits() as usize], "{mask:?} {:?}", p.ecn);
        }
    }
}

#[test]
fn classic_not_ect_is_dropped_and_ect0_is_marked_with_p_squared() {
    for ecn in [Ecn::NotEct, Ecn::Ect0] {
        let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
        q.set_prob(0.5); // k·p′ = 1: not yet overload
        let mut out = Vec::new();
        for _ in 0..4 {
            fill(&mut h, &mut q, SimTime::ZERO, ecn, 2000);
            out.extend(drain(&mut h, &mut q, SimTime::ZERO));
        }
        let hits = if ecn == Ecn::NotEct { h.stats.drops_aqm } else { ce(&out) as u64 };
        let rate = hits as f64 / 8000.0;
        assert!((rate - 0.25).abs() < 0.02, "{ecn:?}: {rate}");
        if ecn == Ecn::NotEct {
            assert_eq!((h.stats.marks, q.counts().c_drops, out.len() as u64), (0, hits, 8000 - hits));
        } else {
            assert_eq!((h.stats.drops(), q.counts().c_marks, out.len()), (0, hits, 8000));
        }
    }
}

#[test]
fn coupling_gives_classic_the_square_of_l_over_k() {
    let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
    q.set_prob(0.2);
    let (mut l, mut c) = (Vec::new(), Vec::new());
    // Time stays 0 (< tupdate, no step): p′ is held fixed.
    for _ in 0..20 {
        fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 1000);
        fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect0, 1000);
        for p in drain(&mut h, &mut q, SimTime::ZERO) {
            if p.class == 1 { l.push(p) } else { c.push(p) }
        }
    }
    let p_l = ce(&l) as f64 / l.len() as f64;
    let p_c = ce(&c) as f64 / c.len() as f64;
    assert!((p_l - 0.4).abs() < 0.015, "p_L {p_l}");
    assert!((p_c - 0.04).abs() < 0.005, "p_C {p_c}");
    assert!((p_c - (p_l / 2.0).powi(2)).abs() < 0.006, "p_C {p_c} vs (p_L/k)² {}", (p_l / 2.0).powi(2));
    assert_eq!(h.stats.drops(), 0);
    assert_eq!(q.counts().l_marks + q.counts().c_marks, (ce(&l) + ce(&c)) as u64);
    let pr = q.probe(SimTime::ZERO);
    assert_eq!((pr.base, pr.p_c, pr.p_l), (0.2, 0.2 * 0.2, 0.4));
}

/// A C queue of ECT(0) packets, one in and one out per ms, whose head is
/// `sojourn` ms old at every dequeue; returns (ms, p′) after each call.
fn standing_queue(h: &mut Harness, q: &mut DualPi2, from: u64, to: u64, sojourn: u64) -> Vec<(u64, f64)> {
    (from..to)
        .map(|t| {
            if t >= sojourn {
                let p = h.deq(q, ms(t)).unwrap();
                assert_eq!(p.enq_at, ms(t - sojourn));
            }
            h.enq(q, ms(t), pkt(1, Ecn::Ect0));
            (t, q.prob())
        })
        .collect()
}

#[test]
fn pi_raises_p_by_the_law_each_tupdate_above_target_and_lowers_it_to_zero_below() {
    let cfg = DualPi2Config::default();
    let (a, b) = (cfg.alpha, cfg.beta);
    let (mut h, mut q) = (Harness::new(), cfg.build());
    let up = standing_queue(&mut h, &mut q, 0, 2000, 20);
    let at = |t: u64| up[t as usize].1;
    assert_eq!(at(15), 0.0, "no update before the first tupdate");
    // Update 1 at 16 ms sees the head 16 ms old (no dequeue yet); from
    // update 2 on, 20 ms: p′ += alpha·5 ms (+ beta·4 ms once).
    let p1 = a * (0.016 - 0.015) + b * 0.016;
    let p2 = p1 + a * 0.005 + b * 0.004;
    assert!((at(16) - p1).abs() < 1e-12 && (at(31) - p1).abs() < 1e-12, "{} vs {p1}", at(16));
    assert!((at(32) - p2).abs() < 1e-12);
    for n in 3..10 {
        let want = p2 + (n - 2) as f64 * a * 0.005;
        assert!((at(16 * n) - want).abs() < 1e-12, "update {n}: {} vs {want}", at(16 * n));
    }
    // Drop the standing delay to 5 ms: p′ falls by alpha·10 ms per
    // update (after the one-off proportional kick) down to 0 and stays.
    for _ in 0..15 {
        h.deq(&mut q, ms(1999)).unwrap();
    }
    let down = standing_queue(&mut h, &mut q, 2000, 4000, 5);
    assert!(down.windows(2).all(|w| w[1].1 <= w[0].1), "p′ never rises below target");
    let (p_a, p_b) = (down[16 * 10].1, down[16 * 11].1);
    assert!(p_b > 0.0 && ((p_a - p_b) - a * 0.010).abs() < 1e-12, "{p_a} → {p_b}");
    assert_eq!(down.last().unwrap().1, 0.0);
    assert_eq!(q.counts().pi_updates, 3999 / 16, "one per tupdate up to 3999 ms");
}

#[test]
fn lazy_updates_equal_an_update_at_every_tick() {
    let mut qs = [DualPi2Config::default().build(), DualPi2Config::default().build()];
    let mut h = Harness::new();
    for q in qs.iter_mut() {
        fill(&mut h, q, ms(3), Ecn::Ect0, 30);
    }
    for t in (3..=1000).step_by(16) {
        qs[0].catch_up(ms(t));
    }
    qs[1].catch_up(ms(1000)); // one call performs all 62 updates
    assert_eq!(qs[0].prob(), qs[1].prob());
    assert_eq!(qs[0].counts().pi_updates, 62);
    assert_eq!(qs[1].counts().pi_updates, 62);
    assert!(qs[1].prob() > 0.5);
    // Idle and settled: a long gap is skipped but counted.
    let mut q = DualPi2Config::default().build();
    q.catch_up(SimTime(3_600_000_000_000));
    assert_eq!((q.prob(), q.counts().pi_updates, q.next_update), (0.0, 225_000, ms(3_600_016)));
}

#[test]
fn step_marks_l_above_one_ms_sojourn_even_with_zero_p() {
    let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
    for (enq, deq, want) in [(0, 1200, Ecn::Ce), (2000, 2800, Ecn::Ect1), (3000, 4000, Ecn::Ect1)] {
        h.enq(&mut q, SimTime(enq * 1000), pkt(1, Ecn::Ect1));
        assert_eq!(h.deq(&mut q, SimTime(deq * 1000)).unwrap().ecn, want, "sojourn {} us", deq - enq);
    }
    assert_eq!((q.prob(), q.counts().step_marks, h.stats.marks), (0.0, 1, 1));
}

#[test]
fn step_in_packets_marks_while_more_than_thresh_remain_in_l() {
    let mut q = DualPi2Config { step_thresh: StepThresh::Packets(10), ..Default::default() }.build();
    let mut h = Harness::new();
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 13);
    // Dequeues leave 12, 11, 10, ... behind: only the first two exceed 10.
    let out = drain(&mut h, &mut q, ms(5));
    let marked: Vec<bool> = out.iter().map(|p| p.ecn == Ecn::Ce).collect();
    assert_eq!(marked, [vec![true; 2], vec![false; 11]].concat());
}

#[test]
fn min_qlen_step_exempts_packets_arriving_to_a_short_l_queue() {
    let mut q = DualPi2Config { min_qlen_step: 5, ..Default::default() }.build();
    let mut h = Harness::new();
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 8);
    let marked: Vec<bool> = drain(&mut h, &mut q, ms(5)).iter().map(|p| p.ecn == Ecn::Ce).collect();
    assert_eq!(marked, [vec![false; 5], vec![true; 3]].concat());
}

#[test]
fn min_qlen_step_2_is_the_l4steam_2024_rule_of_more_than_one_packet_queued() {
    // L4STeam sch_dualpi2 (5.15 tree, 2024) at enqueue: apply_step =
    // qdisc_qlen(l_queue) > 1, the arriving packet not counted; mainline
    // (iproute2 since 2025-03): qdisc_qlen(l_queue) >= min_qlen_step. So the
    // 2024 rule is min_qlen_step = 2: the first two packets of a burst into
    // an empty L queue are never step-marked, however long they wait.
    for (min_qlen, exempt) in [(0u32, 0usize), (1, 1), (2, 2)] {
        let mut q = DualPi2Config { min_qlen_step: min_qlen, ..Default::default() }.build();
        let mut h = Harness::new();
        fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 6);
        let marked: Vec<bool> = drain(&mut h, &mut q, ms(5)).iter().map(|p| p.ecn == Ecn::Ce).collect();
        assert_eq!(marked, [vec![false; exempt], vec![true; 6 - exempt]].concat(), "min_qlen_step {min_qlen}");
    }
}

#[test]
fn wrr_gives_classic_its_protection_share_and_l_goes_first() {
    let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::NotEct, 1000); // C arrives first
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 1000);
    let classes: Vec<u8> = (0..500).map(|_| h.deq(&mut q, SimTime::ZERO).unwrap().class).collect();
    // Credit −80·MTU, +10·MTU per L, −90·MTU per C: nine L then one C.
    let want: Vec<u8> = (0..500).map(|i| u8::from(i % 10 != 9)).collect();
    assert_eq!(classes, want);
    // Both empty resets the credit: L goes first again.
    drain(&mut h, &mut q, SimTime::ZERO);
    assert_eq!(q.credit(), -80 * 1514);
    fill(&mut h, &mut q, ms(1), Ecn::NotEct, 3);
    fill(&mut h, &mut q, ms(1), Ecn::Ect1, 3);
    assert_eq!(h.deq(&mut q, ms(1)).unwrap().class, 1);
}

#[test]
fn overload_drops_l_with_p_squared_and_marks_the_rest() {
    let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
    q.set_prob(0.8); // k·p′ = 1.6 > 1
    let mut out = Vec::new();
    for _ in 0..5 {
        fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 1000);
        out.extend(drain(&mut h, &mut q, SimTime::ZERO));
    }
    let rate = q.counts().l_drops as f64 / 5000.0;
    assert!((rate - 0.64).abs() < 0.03, "{rate}");
    // Every survivor is marked except the last two of each batch (< 2 MTU left).
    assert_eq!(out.len() - ce(&out), 10);
    assert_eq!(q.counts().l_marks as usize, ce(&out));
    // Classic ECT(0) under overload: dropped with p′², never marked.
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect0, 2000);
    let out = drain(&mut h, &mut q, SimTime::ZERO);
    assert!((q.counts().c_drops as f64 / 2000.0 - 0.64).abs() < 0.04);
    assert_eq!((ce(&out), q.counts().c_marks), (0, 0));
}

#[test]
fn overflow_mode_caps_p_at_one_over_k_and_never_drops_l() {
    for (overload, cap) in [(Overload::Overflow, 0.5), (Overload::DropOnOverload, 1.0)] {
        let (mut h, mut q) = (Harness::new(), DualPi2Config { overload, ..Default::default() }.build());
        fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect0, 100);
        let mut max = 0.0f64;
        for t in 0..300 {
            q.catch_up(ms(16 * t));
            max = max.max(q.prob());
        }
        assert_eq!((max, q.prob()), (cap, cap), "{overload:?}");
        fill(&mut h, &mut q, ms(4800), Ecn::Ect1, 500);
        let l: Vec<Packet> = drain(&mut h, &mut q, ms(4800)).into_iter().filter(|p| p.class == 1).collect();
        if overload == Overload::Overflow {
            // k·p′ = 1: every L packet is marked, none dropped.
            assert_eq!((q.counts().l_drops, l.len(), ce(&l)), (0, 500, 500));
        } else {
            assert!(q.counts().l_drops > 400, "{}", q.counts().l_drops);
        }
    }
}

#[test]
fn no_aqm_action_below_two_mtu_of_backlog() {
    let (mut h, mut q) = (Harness::new(), DualPi2Config::default().build());
    q.set_prob(1.0);
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::NotEct, 2);
    assert_eq!(drain(&mut h, &mut q, SimTime::ZERO).len(), 2);
    for _ in 0..4 {
        let mut p = pkt(1, Ecn::NotEct);
        p.size = 700; // 2800 B < 2·1514
        h.enq(&mut q, SimTime::ZERO, p);
    }
    assert_eq!(drain(&mut h, &mut q, SimTime::ZERO).len(), 4);
    assert_eq!(h.stats.drops(), 0);
    // One more full packet: the first dequeue leaves exactly 2 MTU and drops.
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::NotEct, 3);
    assert_eq!(drain(&mut h, &mut q, SimTime::ZERO).len(), 2);
    assert_eq!(h.stats.drops_aqm, 1);
}

#[test]
fn drop_enqueue_mode_decides_on_arrival() {
    let mut q = DualPi2Config { drop: DropAt::DropEnqueue, ..Default::default() }.build();
    let mut h = Harness::new();
    q.set_prob(0.5);
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::NotEct, 2000);
    let dropped = h.stats.drops_aqm;
    assert!((dropped as f64 / 2000.0 - 0.25).abs() < 0.03, "{dropped}");
    assert_eq!(q.len() as u64, 2000 - dropped);
    drain(&mut h, &mut q, SimTime::ZERO);
    assert_eq!(h.stats.drops_aqm, dropped, "nothing more at dequeue");
}

#[test]
fn limit_and_memlimit_tail_drop() {
    let mut q = DualPi2Config { limit: 3, ..Default::default() }.build();
    let mut h = Harness::new();
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 2);
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::NotEct, 2);
    assert_eq!((q.len(), h.stats.drops_overlimit, q.counts().overlimit_drops), (3, 1, 1));
    let mut q = DualPi2Config { memlimit: Some(Bytes(3000)), ..Default::default() }.build();
    fill(&mut h, &mut q, SimTime::ZERO, Ecn::Ect1, 2);
    assert_eq!((q.len(), q.bytes(), h.stats.drops_overlimit), (1, 1514, 2));
}

#[derive(Clone, Debug)]
enum Op {
    Enq(u8, u32),
    Deq,
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4, 40u32..=1514).prop_map(|(e, s)| Op::Enq(e, s)),
        3 => Just(Op::Deq),
        1 => (0u64..20_000).prop_map(Op::Advance),
    ]
}

proptest! {
    #[test]
    fn conserves_packets_and_backlog(ops in prop::collection::vec(op(), 1..400), variant in 0u8..32, limit in 1u64..60) {
        let cfg = DualPi2Config {
            limit,
            memlimit: (variant & 16 != 0).then_some(Bytes(20 * 1514)),
            target: Dur::from_millis(1),
            tupdate: Dur::from_millis(2),
            step_thresh: if variant & 1 != 0 { StepThresh::Packets(3) } else { StepThresh::Time(Dur::from_millis(1)) },
            overload: if variant & 2 != 0 { Overload::Overflow } else { Overload::DropOnOverload },
            drop: if variant & 4 != 0 { DropAt::DropEnqueue } else { DropAt::DropDequeue },
            ecn_mask: if variant & 8 != 0 { EcnMask::AnyEct } else { EcnMask::L4sEct },
            ..Default::default()
        };
        let max_p = if variant & 2 != 0 { 0.5 } else { 1.0 };
        let (mut h, mut q) = (Harness::new(), cfg.build());
        let (mut now, mut arrived, mut departed) = (SimTime::ZERO, 0u64, 0u64);
        for op in ops {
            match op {
                Op::Enq(e, size) => {
                    let ecn = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce][e as usize];
                    let mut p = pkt(1, ecn);
                    p.size = size;
                    h.enq(&mut q, now, p);
                    arrived += 1;
                }
                Op::Deq => {
                    if let Some(p) = h.deq(&mut q, now) {
                        departed += 1;
                        prop_assert!(p.ecn == Ecn::Ce || (p.ecn.bits() & cfg.ecn_mask.bits() != 0) == (p.class == 1));
                    }
                }
                Op::Advance(dt) => now += Dur::from_micros(dt),
            }
            prop_assert_eq!(arrived, departed + h.stats.drops() + q.len() as u64);
            let slots = q.l.q.iter().chain(q.c.q.iter());
            prop_assert_eq!(q.bytes(), slots.map(|s| u64::from(s.pkt.size)).sum::<u64>());
            prop_assert_eq!(q.len(), q.l.q.len() + q.c.q.len());
            prop_assert!(q.l.q.iter().all(|s| s.pkt.class == 1) && q.c.q.iter().all(|s| s.pkt.class == 0));
            let c = q.counts();
            prop_assert_eq!(c.l_drops + c.c_drops + c.step_drops, h.stats.drops_aqm);
            prop_assert_eq!(c.overlimit_drops, h.stats.drops_overlimit);
            prop_assert!(q.len() as u64 <= limit && q.prob() >= 0.0 && q.prob() <= max_p);
        }
    }
}
