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

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::packet::{Packet, ETH_HDR, TCP_IP_HDR};
use crate::rng::SimRng;
use crate::units::{Bytes, Dur, SimTime};

/// Default host timing noise, measured through the kernel harness
/// (`ccbench emulate`, one CUBIC flow at 50 Mbit/s, 31 278 ACKs): a
/// sender's ACK-to-transmit time 4–16 µs (1st–99th percentile) and the
/// path's one-way delay 10 ms + 3–54 µs make `TX_JITTER`; 0.36 % of
/// packets were held more than 200 µs (mean 1.3 ms, at most 5.6 ms: the
/// hosts' scheduling stalls) make `TX_STALL_PROB` and `TX_STALL`.
pub const TX_JITTER: Dur = Dur::from_micros(50);
pub const TX_STALL_PROB: f64 = 0.0036;
pub const TX_STALL: Dur = Dur::from_micros(2500);

/// Default noise of the receiving host's ACKs, measured through the same
/// harness (one BBR flow at 50 Mbit/s, four 20 s runs on an idle host,
/// 164 670 ACKs): from a segment's arrival at the receiver to its ACK's
/// at the sender, 1st–99th percentile 47 µs apart (`ACK_JITTER`); 0.25 %
/// of ACKs more than 200 µs late, 0.55 ms on average (median 0.24 ms,
/// 90th percentile 1.3 ms), make `ACK_STALL_PROB` and `ACK_STALL`
/// (uniform 50 µs..1 ms: 0.53 ms on average).
pub const ACK_JITTER: Dur = Dur::from_micros(50);
pub const ACK_STALL_PROB: f64 = 0.0025;
pub const ACK_STALL: Dur = Dur::from_millis(1);

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
    /// The receiving host's noise on its ACKs: each leaves a uniform random
    /// 0..`ack_jitter` after it was made, a fraction `ack_stall_prob` of
    /// them `ack_jitter`..`ack_stall` after, in order (defaults
    /// [`ACK_JITTER`], [`ACK_STALL_PROB`], [`ACK_STALL`], as measured).
    pub ack_jitter: Dur,
    pub ack_stall_prob: f64,
    pub ack_stall: Dur,
    /// TSO/GSO as Linux with offloads on: new data leaves in GSO packets
    /// of about 1 ms at the pacing rate (`tcp_tso_autosize`, at least 2
    /// segments), back to back, and a packet smaller than that waits for
    /// the next ACK while one is due within min(1 ms, srtt/2)
    /// (`tcp_tso_should_defer`, Linux 6.18). `false` sends each segment
    /// as soon as cwnd allows (no offload; the segment-at-a-time sender
    /// of ns-3 and of ccbench before it had TSO).
    pub tso: bool,
    /// The receiver ACKs an in-order segment that carries PSH at once when
    /// nothing is held out of order (Linux `tcp_measure_rcv_mss` marks a
    /// full-sized PSH segment ICSK_ACK_PUSHED, and the application's read
    /// that empties the receive queue, `tcp_cleanup_rbuf`, sends the ACK;
    /// the full-sized case since "tcp: fix delayed ACKs for MSS boundary
    /// condition", October 2023). Linux senders put PSH on the last
    /// segment of every GSO packet (`__tcp_transmit_skb`), so a receiver
    /// ACKs the odd segment of a 3-segment GSO packet alone: measured on
    /// Linux 6.18 beside a 50 Mbit/s bottleneck, 40 % of the ACKs to BBR
    /// and 19-22 % of those to CUBIC cover one segment (the model: 40 % and
    /// 24 %). `false`: every second full segment, as kernels before that
    /// fix.
    pub ack_on_push: bool,
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
            ack_jitter: ACK_JITTER,
            ack_stall_prob: ACK_STALL_PROB,
            ack_stall: ACK_STALL,
            tso: true,
            ack_on_push: true,
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

/// The way out of a receiving host for the ACKs it makes: each leaves a
/// draw of the host's noise after it was made (the softirq, the device
/// queue and the NIC between `tcp_send_ack` and the wire), in order, so
/// the delays do not add up. ACKs that arrive irregularly are what make a
/// delivery-rate sample read above the link rate now and then (tcp_rate.c:
/// a late ACK stamps `delivered_mstamp` late for the packets it releases).
pub struct HostQueue {
    noise: HostNoise,
    rng: SimRng,
    held: VecDeque<(SimTime, Packet)>,
}

impl HostQueue {
    /// A queue for a host with this noise; `None` when the host has none.
    pub fn new(noise: HostNoise, rng: SimRng) -> Option<Self> {
        noise.is_on().then(|| HostQueue { noise, rng, held: VecDeque::new() })
    }
    /// Hold a packet made now until its draw has passed (and every packet
    /// made before it has left).
    pub fn hold(&mut self, now: SimTime, p: Packet) {
        // Once the queue is empty every earlier packet has left by now.
        let after = self.held.back().map_or(now, |h| h.0);
        self.held.push_back(((now + self.noise.draw(&mut self.rng)).max(after), p));
    }
    /// When the next held packet leaves.
    pub fn next(&self) -> SimTime {
        self.held.front().map_or(SimTime::NEVER, |h| h.0)
    }
    /// Hand over the packets due by `now`, stamped as leaving now.
    pub fn release(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        while self.held.front().is_some_and(|h| h.0 <= now) {
            let (_, p) = self.held.pop_front().expect("checked");
            out.push(Packet { sent_at: now, ..p });
        }
    }
}

impl TcpConfig {
    /// The sending host's timing noise.
    pub fn host_noise(&self) -> HostNoise {
        HostNoise { jitter: self.tx_jitter, stall_prob: self.tx_stall_prob, stall: self.tx_stall }
    }
    /// The receiving host's timing noise on its ACKs.
    pub fn ack_noise(&self) -> HostNoise {
        HostNoise { jitter: self.ack_jitter, stall_prob: self.ack_stall_prob, stall: self.ack_stall }
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

    /// ACKs made every `gap` ns through a host queue, each checked to be
    /// stamped with the time it left: (the order they left in, each one's
    /// wait, ns).
    fn through_queue(noise: HostNoise, gap: u64, n: u64) -> (Vec<u32>, Vec<u64>) {
        let mut q = HostQueue::new(noise, SimRng::for_component(1, "q")).unwrap();
        let (mut out, mut order, mut waits) = (Vec::new(), Vec::new(), Vec::new());
        let mut k = 0;
        let mut now = SimTime::ZERO;
        while k < n || q.next() != SimTime::NEVER {
            let made = if k < n { SimTime(k * gap) } else { SimTime::NEVER };
            let t = made.min(q.next());
            assert!(t >= now, "time runs forward");
            now = t;
            q.release(now, &mut out);
            for p in out.drain(..) {
                let p: Packet = p;
                assert_eq!(p.sent_at, now, "stamped when it leaves");
                order.push(p.size);
                waits.push(now.0 - u64::from(p.size) * gap);
            }
            if made == now {
                q.hold(now, Packet { size: k as u32, sent_at: now, ..Default::default() });
                k += 1;
            }
        }
        (order, waits)
    }

    /// A pure ACK on the wire: Ethernet 14 + IPv4 20 + TCP 20 + timestamps
    /// (NOP, NOP, TS: 12) = 66 B; SACK adds NOP, NOP, kind, length and 8 B
    /// per block (RFC 2018 §3).
    #[test]
    fn ack_sizes_are_those_on_the_wire() {
        assert_eq!([0, 1, 2, 3].map(ack_wire_size), [66, 78, 86, 94]);
    }

    /// A host without noise has no queue. Held ACKs leave in the order
    /// they were made; apart, each waits its own draw (0..jitter, or a
    /// stall); close together, one stalled ACK holds the ones behind it.
    #[test]
    fn a_host_queue_releases_in_order_within_the_noise() {
        let quiet = HostNoise { jitter: Dur::ZERO, stall_prob: 0.0, stall: Dur::ZERO };
        assert!(HostQueue::new(quiet, SimRng::for_component(1, "q")).is_none());
        let noise = HostNoise { jitter: Dur::from_micros(50), stall_prob: 0.05, stall: Dur::from_micros(2500) };
        // 3 ms apart: longer than any stall, so nothing waits for another.
        let (order, waits) = through_queue(noise, 3_000_000, 4000);
        assert!(order.windows(2).all(|w| w[0] + 1 == w[1]), "in order");
        assert!(waits.iter().all(|&w| w <= 2_500_000));
        let stalled = waits.iter().filter(|&&w| w > 50_000).count();
        assert!((160..=240).contains(&stalled), "{stalled} of 4000 stalled at 5 %");
        // 20 µs apart: in order still, and a stall holds the ACKs behind it.
        let (order, waits) = through_queue(noise, 20_000, 4000);
        assert!(order.windows(2).all(|w| w[0] + 1 == w[1]), "in order");
        assert!(waits.iter().all(|&w| w <= 2_500_000));
        let held = waits.iter().filter(|&&w| w > 50_000).count();
        assert!(held > 10 * 200, "{held} ACKs waited past the jitter");
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
