//! SCReAM v2 end to end (scream.md; the BW test tool's defaults): L4S mode
//! over DualPI2, a capacity drop, and classic mode over CoDel and a FIFO.

mod common;
use common::*;

fn media_rows<'a>(out: &'a ccbench_core::RunOutput, from: f64, to: f64) -> impl Iterator<Item = usize> + 'a {
    let ms = &out.metrics.media_series;
    (0..ms.time_s.len()).filter(move |&k| ms.time_s[k] >= from && ms.time_s[k] <= to)
}

/// Alone on an L4S link SCReAM settles below capacity — it paces at 1.5×
/// its target, so its bursts reach the link's rate near capacity/1.5 — and
/// keeps the L queue at DualPI2's 1 ms step.
#[test]
fn scream_alone_settles_below_capacity_at_the_step() {
    let text = dumbbell("100Mbit", 25.0, r#"{ kind = "dualpi2" }"#, "20s", &media("scream", "ect1", ""));
    let out = run(&text, &["metrics.warmup=\"8s\""]);
    let f = flow(&out.summary, "scream");
    let g = f.goodput_mbps;
    assert!((40.0..=100.0 / 1.5 + 5.0).contains(&g), "goodput {g} Mbit/s");
    // Steady: the 8..20 s bitrate varies little.
    let fs = &out.metrics.flow_series;
    let v: Vec<f64> = (0..fs.time_s.len()).filter(|&k| fs.time_s[k] >= 8.0).map(|k| fs.goodput_mbps[k]).collect();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    assert!(sd / mean < 0.15, "bitrate not steady: mean {mean} sd {sd}");
    let l = link(&out.summary, "bottleneck");
    let p99 = l.sojourn_l_ms.as_ref().unwrap().p99.unwrap();
    assert!((0.5..=2.0).contains(&p99), "L sojourn p99 {p99} ms vs 1 ms step");
    assert_eq!(f.media.as_ref().unwrap().rtp_discards, 0);
}

/// After a capacity drop (50 → 10 Mbit/s) the queue SCReAM built drains:
/// within a bounded time the L-queue delay is back near the step and the
/// bitrate below the new capacity.
#[test]
fn scream_recovers_from_a_capacity_drop() {
    let text = dumbbell("50Mbit", 25.0, r#"{ kind = "dualpi2" }"#, "30s", &media("scream", "ect1", ""))
        .replace("rate = \"50Mbit\"\n", "rate = \"50Mbit\"\nschedule = [{ at = \"15s\", rate = \"10Mbit\" }]\n");
    let out = run(&text, &[]);
    let so = &out.metrics.sojourn;
    let delay_after = |from: f64, to: f64| -> f64 {
        let v: Vec<f64> = so
            .iter()
            .filter(|r| r.id() == 0 && (from..to).contains(&(r.time_ns as f64 / 1e9)))
            .map(|r| r.value_ns as f64 / 1e6)
            .collect();
        v.iter().cloned().fold(0.0, f64::max)
    };
    // 2 s after the drop (80 RTTs) the queue is back near the step.
    let late = delay_after(17.0, 30.0);
    assert!(late < 5.0, "max L delay 2..15 s after the drop {late} ms");
    let ms = &out.metrics.media_series;
    let rate: Vec<f64> = media_rows(&out, 20.0, 30.0).map(|k| ms.tx_mbps[k]).collect();
    let mean = rate.iter().sum::<f64>() / rate.len() as f64;
    assert!(mean < 10.0 && mean > 4.0, "tx rate after the drop {mean} Mbit/s");
}

/// Classic ECN mode (ECT(0)) through a CoDel queue: CE marks make SCReAM
/// back off (×0.7), so it does not fill the queue; over a FIFO without ECN
/// it reacts to delay (virtual CE above half its 60 ms target) and to loss.
#[test]
fn scream_classic_mode_reacts_to_marks_delay_and_loss() {
    let codel = dumbbell("20Mbit", 20.0, r#"{ kind = "codel", ecn = true }"#, "20s", &media("scream", "ect0", ""));
    let out = run(&codel, &["metrics.warmup=\"5s\""]);
    let f = flow(&out.summary, "scream");
    assert!(f.ce_marks > 0, "CoDel marked ECT(0) media");
    assert!(f.goodput_mbps > 5.0 && f.goodput_mbps < 20.0, "goodput {}", f.goodput_mbps);
    let l = link(&out.summary, "bottleneck");
    assert!(l.sojourn_ms.p50.unwrap() < 20.0, "CoDel queue {:?}", l.sojourn_ms);

    let fifo = dumbbell("20Mbit", 20.0, r#"{ kind = "pfifo", limit = 1000 }"#, "30s", &media("scream", "off", ""));
    let out = run(&fifo, &["metrics.warmup=\"10s\""]);
    let q = &link(&out.summary, "bottleneck").sojourn_ms;
    // A 1000-packet FIFO at 20 Mbit/s could hold 560 ms; SCReAM's delay
    // reaction keeps it well below, around its 60 ms target.
    assert!(q.p50.unwrap() < 60.0 && q.max.unwrap() < 200.0, "FIFO delay {q:?}");

    let lossy = dumbbell("20Mbit", 20.0, r#"{ kind = "pfifo", limit = 8 }"#, "20s", &media("scream", "off", ""));
    let out = run(&lossy, &["metrics.warmup=\"5s\""]);
    let f = flow(&out.summary, "scream");
    let m = f.media.as_ref().unwrap();
    assert!(m.packets_lost > 0, "the 8-packet FIFO dropped media");
    assert!(link(&out.summary, "bottleneck").drops < m.packets_sent / 20, "loss reaction keeps drops rare");
}

/// A request-grant upstream (`links[].grant`, DOCSIS-like): a 50 Mbit/s
/// channel granted 10 Mbit/s in 2 ms MAPs with a 4 ms request-grant delay.
/// A queue-filling CUBIC flow gets the granted rate, not the channel's; an
/// L4S flow's packets wait in the modem's DualPI2 for their grant, so the L
/// sojourn grows by about the request-grant loop (4–6 ms) over a plain
/// 10 Mbit/s link.
#[test]
fn request_grant_upstream_caps_at_the_granted_rate_and_adds_the_grant_wait() {
    let q = r#"{ kind = "dualpi2", min_qlen_step = 2 }"#;
    let with_grant = |text: String| {
        text.replace("rate = \"10Mbit\"", "rate = \"50Mbit\"").replace(
            "qdisc = { kind = \"dualpi2\", min_qlen_step = 2 }",
            "qdisc = { kind = \"dualpi2\", min_qlen_step = 2 }\ngrant = { interval = \"2ms\", request_delay = \"4ms\", rate = \"10Mbit\" }",
        )
    };
    let cubic = dumbbell("10Mbit", 20.0, q, "20s", &tcp("c", "cubic", ""));
    let g = flow(&run(&with_grant(cubic), &["metrics.warmup=\"5s\""]).summary, "c").goodput_mbps;
    assert!((8.0..=10.0).contains(&g), "granted {g}: the grant rate, not the 50 Mbit/s channel");
    let prague = dumbbell("10Mbit", 20.0, q, "20s", &tcp("p", "prague", "ecn = true\n"));
    let p50 = |o: &ccbench_core::RunOutput| link(&o.summary, "bottleneck").sojourn_l_ms.as_ref().unwrap().p50.unwrap();
    let plain = p50(&run(&prague, &["metrics.warmup=\"5s\""]));
    let granted = p50(&run(&with_grant(prague), &["metrics.warmup=\"5s\""]));
    // On the plain link Prague keeps about one packet queued (1.2 ms at 10 Mbit/s).
    assert!(plain < 1.5 && (3.5..=6.0).contains(&(granted - plain)), "L sojourn p50 {granted} ms vs {plain} ms on a plain link");
}

/// At 50 fps the 100 ms samples fall on frame ticks: the RTP-queue delay
/// counts each packet's wait in the sender's queue, so it is not 0 there;
/// the series' mean per interval agrees with the summary's mean per packet.
#[test]
fn rtp_queue_delay_counts_every_packets_wait_at_50_fps() {
    let text = dumbbell("20Mbit", 25.0, r#"{ kind = "dualpi2" }"#, "10s", &media("scream", "ect1", ", fps = 50"));
    let out = run(&text, &["metrics.warmup=\"2s\""]);
    let d = &flow(&out.summary, "scream").media.as_ref().unwrap().rtp_queue_delay_ms;
    let (mean, p99) = (d.mean.unwrap(), d.p99.unwrap());
    assert!(mean > 0.1 && p99 >= mean && d.max.unwrap() >= p99, "{d:?}");
    let ms = &out.metrics.media_series;
    let v: Vec<f64> = media_rows(&out, 2.05, 10.0).map(|k| ms.rtp_queue_delay_ms[k]).collect();
    assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0), "{v:?}");
    let series_mean = v.iter().sum::<f64>() / v.len() as f64;
    assert!((series_mean / mean - 1.0).abs() < 0.25, "series {series_mean} ms vs summary {mean} ms");
}
