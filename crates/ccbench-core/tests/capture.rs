//! Packet capture records every packet a captured link transmits, with the
//! header fields the pcap export needs.

mod common;
use ccbench_core::metrics::capture::{KIND_ACK, KIND_DATA};
use common::*;

#[test]
fn capture_records_every_transmitted_packet_with_ecn_bits() {
    let flows = tcp("ecn", "cubic", "ecn = true") + &tcp("plain", "reno", "");
    let text = dumbbell("10Mbit", 20.0, r#"{ kind = "codel", ecn = true, limit = 60 }"#, "8s", &flows);
    let out = run(&text, &["metrics.capture=[\"bottleneck\", \"return\"]"]);
    let c = &out.metrics.capture;
    let sent: u64 = out.summary.links.iter().map(|l| l.tx_packets).sum();
    // Captured at the start of transmission: a packet still on the wire at
    // the end is captured but not yet counted as sent.
    let n = c.time_ns.len() as u64;
    assert!((sent..=sent + 2).contains(&n), "captured {n}, sent {sent}");
    let data_ecn: Vec<u32> = (0..c.kind.len()).filter(|&i| c.kind[i] == KIND_DATA && c.endpoint[i] == 0).map(|i| c.ecn[i]).collect();
    // ECN flow: ECT(0) data, and CE once CoDel marks (on the bottleneck).
    assert!(data_ecn.contains(&0b10) && data_ecn.contains(&0b11), "ecn values {:?}", &data_ecn[..10]);
    // Not-ECT flow never carries ECN bits; pure ACKs are Not-ECT (RFC 3168).
    assert!((0..c.kind.len()).filter(|&i| c.endpoint[i] == 1 || c.kind[i] == KIND_ACK).all(|i| c.ecn[i] == 0));
    // Drops at the 60-packet limit make the Reno receiver send SACK blocks.
    assert!((0..c.kind.len()).any(|i| c.kind[i] == KIND_ACK && c.nsack[i] > 0 && c.sack[1][i] > c.sack[0][i]));
    assert!(c.time_ns.windows(2).all(|w| w[0] <= w[1]));
}
