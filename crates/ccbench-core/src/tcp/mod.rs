//! A TCP sender and receiver with Linux-like behaviour, in segment units.
//!
//! Read first: RFC 5681 (congestion control), RFC 6675 (SACK loss
//! recovery), RFC 6937 (PRR), RFC 6298 (RTO), RFC 3168 (ECN), RFC 8985
//! (RACK, for lost retransmissions), Linux net/ipv4/tcp_input.c and
//! tcp_output.c. Sequence numbers count whole segments; every segment but a
//! bulk transfer's last carries one MSS. Deviations from Linux are listed in
//! each file's header.

pub mod accecn;
pub mod rack;
pub mod rate;
pub mod receiver;
pub mod scoreboard;
pub mod sender;

use serde::{Deserialize, Serialize};

use crate::packet::{ETH_HDR, TCP_IP_HDR};
use crate::units::{Bytes, Dur};

/// Default host timing noise, measured through the kernel harness
/// (`ccbench emulate`, one CUBIC flow at 50 Mbit/s, 31 278 ACKs): a
/// sender's ACK-to-transmit time 4–16 µs (1st–99th percentile) and the
/// path's one-way delay 10 ms + 3–54 µs make `TX_JITTER`; 0.36 % of
/// packets were held more than 200 µs (mean 1.3 ms, at most 5.6 ms: the
/// hosts' scheduling stalls) make `TX_STALL_PROB` and `TX_STALL`.
pub const TX_JITTER: Dur = Dur::from_micros(50);
pub const TX_STALL_PROB: f64 = 0.0036;
pub const TX_STALL: Dur = Dur::from_micros(2500);

/// Per-flow TCP knobs, with Linux defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// IP MTU in bytes; MSS = MTU - 52 (IPv4 + TCP + timestamps).
    pub mtu: u32,
    /// Initial window in segments (TCP_INIT_CWND).
    pub init_cwnd: u32,
    /// Minimum RTO (TCP_RTO_MIN).
    pub min_rto: Dur,
    /// Initial RTO before the first RTT sample (TCP_TIMEOUT_INIT).
    pub init_rto: Dur,
    /// Delayed-ACK timeout (TCP_ATO_MIN).
    pub delack: Dur,
    /// Internal pacing (Linux EDT pacing). Linux paces Reno/CUBIC only when
    /// the sender's qdisc is `fq`, so the default is off (ACK-clocked, as
    /// over fq_codel or pfifo_fast); `true` emulates fq on the sender.
    pub pacing: bool,
    /// `tcp_pacing_ss_ratio` and `tcp_pacing_ca_ratio`, percent.
    pub pacing_ss_ratio: u32,
    pub pacing_ca_ratio: u32,
    /// SACK blocks the receiver may report (3 fit beside timestamps).
    pub sack_blocks: u8,
    /// Immediate ACKs at connection start (Linux quick-ACK mode).
    pub quickacks: u32,
    /// Send buffer, bytes: `net.ipv4.tcp_wmem` default and max (Linux
    /// 16384 and 4194304). The buffer starts at the default and grows with
    /// cwnd (`tcp_sndbuf_expand`) up to the max; unacknowledged data may not
    /// exceed it.
    pub wmem_default: Bytes,
    pub wmem_max: Bytes,
    /// Receive buffer, bytes: `net.ipv4.tcp_rmem` default and max (Linux
    /// 131072 and 6291456), autotuned per RTT (`tcp_rcv_space_adjust`); the
    /// advertised window is half of it.
    pub rmem_default: Bytes,
    pub rmem_max: Bytes,
    /// Host processing jitter: each packet an ACK releases leaves a uniform
    /// random 0..`tx_jitter` after that ACK (in the spirit of ns-2's TCP
    /// `overhead_`; Floyd & Jacobson 1992, "On traffic phase effects"), in
    /// order and without limiting the rate. Default [`TX_JITTER`], as
    /// measured on Linux hosts; 0 makes the sender exactly periodic, and a
    /// deterministic simulator can then phase-lock ACK-clocked flows of
    /// equal RTT to a drop schedule.
    pub tx_jitter: Dur,
    /// Host stalls: this fraction of packets leaves a uniform random
    /// `tx_jitter`..`tx_stall` (at least `tx_jitter`) after its ACK
    /// instead (default [`TX_STALL_PROB`], [`TX_STALL`]).
    pub tx_stall_prob: f64,
    pub tx_stall: Dur,
    /// TSO/GSO as Linux with offloads on: new data leaves in GSO packets
    /// of about 1 ms at the pacing rate (`tcp_tso_autosize`, at least 2
    /// segments), back to back, and a packet smaller than that waits for
    /// the next ACK while one is due within min(1 ms, srtt/2)
    /// (`tcp_tso_should_defer`, Linux 6.18). `false` sends each segment
    /// as soon as cwnd allows (no offload; the segment-at-a-time sender
    /// of ns-3 and of ccbench before it had TSO).
    pub tso: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mtu: 1500,
            init_cwnd: 10,
            min_rto: Dur::from_millis(200),
            init_rto: Dur::from_secs(1),
            delack: Dur::from_millis(40),
            pacing: false,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            sack_blocks: 3,
            quickacks: 16,
            wmem_default: Bytes(16_384),
            wmem_max: Bytes(4_194_304),
            rmem_default: Bytes(131_072),
            rmem_max: Bytes(6_291_456),
            tx_jitter: TX_JITTER,
            tx_stall_prob: TX_STALL_PROB,
            tx_stall: TX_STALL,
            tso: true,
        }
    }
}

/// A host's timing noise (`tx_jitter`, `tx_stall_prob`, `tx_stall`): the
/// delay before each packet it sends leaves, drawn from its own stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostNoise {
    pub jitter: Dur,
    pub stall_prob: f64,
    pub stall: Dur,
}

impl HostNoise {
    pub fn is_on(&self) -> bool {
        self.jitter > Dur::ZERO || self.stall_prob > 0.0
    }
    /// Uniform 0..`jitter`, or with probability `stall_prob` a stall of
    /// `jitter`..`stall`.
    pub fn draw(&self, rng: &mut crate::rng::SimRng) -> Dur {
        let (lo, hi) = if rng.uniform() < self.stall_prob {
            (self.jitter, self.stall.max(self.jitter))
        } else {
            (Dur::ZERO, self.jitter)
        };
        Dur(lo.nanos() + ((hi - lo).nanos() as f64 * rng.uniform()) as u64)
    }
}

impl TcpConfig {
    /// The sending host's timing noise.
    pub fn host_noise(&self) -> HostNoise {
        HostNoise { jitter: self.tx_jitter, stall_prob: self.tx_stall_prob, stall: self.tx_stall }
    }
    /// Payload bytes per full segment.
    pub fn mss(&self) -> u32 {
        self.mtu - TCP_IP_HDR
    }
}

/// Bytes a queue sees for a pure ACK with `nsack` SACK blocks: Ethernet +
/// IPv4 + TCP + timestamps (66 B), plus 2 B SACK option header and 8 B per
/// block, padded to 4.
pub fn ack_wire_size(nsack: u8) -> u32 {
    let base = ETH_HDR + TCP_IP_HDR;
    if nsack == 0 {
        base
    } else {
        base + 4 + 8 * u32::from(nsack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

    /// Noise is on when either part is: jitter alone, or stalls alone.
    #[test]
    fn host_noise_is_on_when_either_part_is() {
        let n = |jitter: u64, stall_prob: f64| HostNoise { jitter: Dur::from_micros(jitter), stall_prob, stall: Dur::from_micros(2500) };
        assert!(!n(0, 0.0).is_on());
        assert!(n(1, 0.0).is_on());
        assert!(n(0, 0.001).is_on());
        assert!(TcpConfig::default().host_noise().is_on());
    }

    /// Draws lie in 0..jitter, stalls in jitter..stall, at the stated rate.
    #[test]
    fn host_noise_draws_jitter_and_stalls_in_their_ranges() {
        let noise = HostNoise { jitter: Dur::from_micros(50), stall_prob: 0.1, stall: Dur::from_micros(2500) };
        let mut rng = SimRng::for_component(7, "noise");
        let draws: Vec<Dur> = (0..20_000).map(|_| noise.draw(&mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= noise.stall));
        let stalls = draws.iter().filter(|d| **d > noise.jitter).count() as f64 / draws.len() as f64;
        assert!((stalls - 0.1).abs() < 0.01, "stall fraction {stalls}");
        let long = draws.iter().filter(|d| **d > Dur::from_micros(1300)).count() as f64 / draws.len() as f64;
        assert!((long - 0.05).abs() < 0.01, "stalls are uniform over jitter..stall: {long}");
    }
}
