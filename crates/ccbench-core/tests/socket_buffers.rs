//! Socket-buffer limits against Linux defaults: `tcp_wmem` = 4096 16384
//! 4194304 and `tcp_rmem` = 4096 131072 6291456 (Documentation/networking/
//! ip-sysctl.rst) bound a bulk flow's data in flight, so a huge FIFO fills
//! only up to what the buffers hold instead of growing cwnd without bound.

mod common;
use common::*;

/// Slow start without HyStart runs straight into whatever limits the flight.
const NO_HYSTART: &str = "cc_params = { hystart = false }";
/// One BDP at 50 Mbit/s × 20 ms, in 1514 B frames.
const BDP: f64 = 82.6;

/// Largest queue (s) a CUBIC flow builds in a 100000-packet FIFO at
/// 50 Mbit/s, 20 ms, with the given `tcp = {...}` settings.
fn max_queue_s(tcp_cfg: &str) -> f64 {
    let extra = format!("{NO_HYSTART}\ntcp = {{ {tcp_cfg} }}");
    let text = dumbbell(
        "50Mbit",
        20.0,
        r#"{ kind = "pfifo", limit = 100000 }"#,
        "30s",
        &tcp("cubic", "cubic", &extra),
    );
    let out = run(&text, &[]);
    let l = link(&out.summary, "bottleneck");
    assert_eq!(l.drops, 0);
    l.sojourn_ms.max.unwrap() / 1e3
}

/// Segments in flight that make a queue of `s` seconds.
fn flight(s: f64) -> f64 {
    s * 50e6 / (1514.0 * 8.0) + BDP
}

#[test]
fn default_receive_window_caps_flight_in_a_huge_fifo() {
    // 6 MiB of receive buffer, half of it advertised: 3 MiB = 2172 segments.
    let f = flight(max_queue_s(""));
    assert!((2150.0..=2175.0).contains(&f), "flight {f}");
}

#[test]
fn send_buffer_caps_flight_when_the_receiver_allows_more() {
    // 4 MiB of send buffer / (1448 B + 20 B of skb overhead) = 2857 segments.
    let f = flight(max_queue_s(r#"rmem_max = "32mb""#));
    assert!((2830.0..=2860.0).contains(&f), "flight {f}");
    // A smaller send buffer binds at its own size: 1 MiB / 1468 B = 714.
    let f = flight(max_queue_s(r#"wmem_max = "1mb""#));
    assert!((700.0..=716.0).contains(&f), "flight {f}");
}

#[test]
fn buffer_maxima_are_settable_per_flow() {
    // A 1 MiB receive buffer advertises 512 KiB = 362 segments.
    let f = flight(max_queue_s(r#"rmem_max = "1mb""#));
    assert!((345.0..=363.0).contains(&f), "flight {f}");
    // The kernel anchor's 32 MB buffers let the queue grow much further
    // (slow start is stopped by the 30 s run, not by a buffer).
    let f = flight(max_queue_s(r#"wmem_max = "32mb", rmem_max = "32mb""#));
    assert!(f > 10_000.0, "flight {f}");
}
