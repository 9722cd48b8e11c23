//! Packets: small values moved from component to component, never shared.
//! Sizes are what a Linux qdisc sees (`qdisc_pkt_len`: IP length + 14 B
//! Ethernet header), so a 1500 B IP packet is 1514 B on every queue and link.

use crate::units::SimTime;

/// Index of a flow in the simulator's flow arena.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FlowId(pub u32);

/// Index of a link in the simulator's link arena.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LinkId(pub u32);

/// Ethernet header bytes counted by Linux qdiscs on top of the IP length.
pub const ETH_HDR: u32 = 14;
/// IPv4 (20) + TCP (20) + timestamp option (12) header bytes.
pub const TCP_IP_HDR: u32 = 52;

/// Bytes a queue sees for a TCP data segment carrying `len` payload bytes.
pub fn tcp_wire_size(len: u32) -> u32 {
    len + TCP_IP_HDR + ETH_HDR
}

/// The ECN field of the IP header (RFC 3168 §5), with its wire values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    #[inline]
    pub fn is_ect(self) -> bool {
        self != Ecn::NotEct
    }
    pub fn bits(self) -> u8 {
        self as u8
    }
}

/// Which way along its flow a packet travels: forward (sender to receiver,
/// on the flow's forward path) or reverse (ACKs, echo replies, feedback).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Dir {
    #[default]
    Fwd,
    Rev,
}

/// A SACK block of segment numbers, half-open: [start, end).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// A TCP data segment. Sequence space counts whole segments; `len` is the
/// payload carried (MSS except for a short last segment).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct TcpSeg {
    pub seq: u64,
    pub len: u32,
    /// TSval: the sender's clock when this copy was sent (RFC 7323).
    pub ts: SimTime,
    pub retrans: bool,
    /// CWR flag (RFC 3168 §6.1.2).
    pub cwr: bool,
    /// PSH flag: the last segment of a GSO packet of two or more, or of the
    /// application's data (tcp/sender.rs).
    pub psh: bool,
    /// TSecr: the TSval of the newest ACK the sender had received (RFC 7323;
    /// the receiver's RTT estimate, Linux `tcp_rcv_rtt_measure_ts`).
    pub tsecr: SimTime,
}

/// The SACK blocks of an ACK (at most three, RFC 2018 §3), held as 32-bit
/// offsets from its cumulative ACK: every block lies within a window of it
/// (a D-SACK block may lie below it), and the smaller ACK keeps a [`Packet`]
/// within 128 bytes, which the compiler copies inline instead of calling
/// `memcpy` (packets move by value from queue to queue). Read and written
/// through [`TcpAck`], which knows the ACK they are relative to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Sacks {
    off: [(i32, i32); 3],
    n: u8,
}

impl Sacks {
    pub fn len(&self) -> usize {
        usize::from(self.n)
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// A TCP acknowledgement with SACK blocks (RFC 2018) and ECN feedback.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct TcpAck {
    /// Next segment expected (cumulative ACK). Set it before adding SACK
    /// blocks (they are stored relative to it) and leave it afterwards.
    pub ack: u64,
    pub sack: Sacks,
    /// ECE flag (RFC 3168 §6.1.3).
    pub ece: bool,
    /// TSecr: echo of the TSval of the segment that triggered this ACK.
    pub tsecr: SimTime,
    /// Accurate ECN counters (RFC 9768): CE packets received (r.cep, full
    /// width; the wire carries it mod 8 in the ACE field) and CE payload bytes.
    pub cep: u32,
    pub ceb: u64,
    /// ESCE (SCE echo, the former NS bit; draft-grimes-tcpm-tcpsce): the
    /// data this ACK covers arrived SCE-marked (ECT(1)).
    pub esce: bool,
    /// Advertised receive window in bytes above `ack` (None: no limit). At
    /// most [`MAX_RWND`], as on the wire.
    pub rwnd: Option<u32>,
    /// TSval: the receiver's clock when it sent this ACK (RFC 7323).
    pub tsval: SimTime,
}

/// The largest window TCP can advertise: 65 535 with the largest window
/// scale, 14 (RFC 7323 §2.3).
pub const MAX_RWND: u32 = 65_535 << 14;

/// `TCP_ACCECN_CEP_ACE_MASK`: the ACE field is 3 bits.
pub const ACE_MASK: u32 = 0x7;
/// `TCP_ACCECN_CEP_INIT_OFFSET`: r.cep starts at 5 (RFC 9768 §3.2.1).
pub const CEP_INIT_OFFSET: u32 = 5;
/// The AccECN option's byte counters are 24 bits.
pub const BYTES_MASK: u32 = 0xFF_FFFF;

impl TcpAck {
    /// The ACE field on the wire: r.cep (which starts at 5) modulo 8.
    pub fn ace(&self) -> u8 {
        (self.cep.wrapping_add(CEP_INIT_OFFSET) & ACE_MASK) as u8
    }
    /// The AccECN option's CE byte field (r.ceb modulo 2^24).
    pub fn ceb_field(&self) -> u32 {
        (self.ceb & u64::from(BYTES_MASK)) as u32
    }
    /// SACK block `k`, or an empty block at 0 past the last one.
    pub fn sack_block(&self, k: usize) -> SackBlock {
        if k >= self.sack.len() {
            return SackBlock::default();
        }
        let (s, e) = self.sack.off[k];
        SackBlock { start: self.ack.wrapping_add_signed(i64::from(s)), end: self.ack.wrapping_add_signed(i64::from(e)) }
    }
    /// All three block slots, empty ones past the last block.
    pub fn sack_list(&self) -> [SackBlock; 3] {
        [self.sack_block(0), self.sack_block(1), self.sack_block(2)]
    }
    /// Add a block after the ones already there.
    ///
    /// Panics if there are three already, or if the block lies 2³¹ segments
    /// or more from `ack` (no window is that large).
    pub fn push_sack(&mut self, b: SackBlock) {
        let off = |x: u64| i32::try_from(x.wrapping_sub(self.ack) as i64).expect("SACK block too far from the cumulative ACK");
        let k = self.sack.len();
        assert!(k < 3, "at most three SACK blocks");
        self.sack.off[k] = (off(b.start), off(b.end));
        self.sack.n += 1;
    }
}

/// An echo probe (ICMP-like ping or UDP RTT probe).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Probe {
    pub seq: u32,
    /// When the request left its sender.
    pub t_req: SimTime,
    pub reply: bool,
}

/// An RTP media packet (RFC 3550): 12 B RTP header + payload inside UDP.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Rtp {
    /// Extended sequence number (the wire carries the low 16 bits).
    pub seq: u32,
    /// RTP timestamp, 90 kHz clock.
    pub ts: u32,
    /// Last packet of a video frame.
    pub marker: bool,
    /// RTP header + payload bytes (what SCReAM counts).
    pub rtp_bytes: u32,
}

/// An RFC 8888 congestion-control feedback packet. The per-packet reports
/// are kept by the receiver (see `media::rfc8888::ReportRing`); the packet
/// names the snapshot by id, so the value stays small.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Feedback {
    pub report_id: u32,
}

/// Per-protocol header.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Header {
    #[default]
    None,
    TcpData(TcpSeg),
    TcpAck(TcpAck),
    Probe(Probe),
    Rtp(Rtp),
    Feedback(Feedback),
}

#[derive(Copy, Clone, Debug, Default)]
pub struct Packet {
    pub flow: FlowId,
    /// Bytes as a qdisc counts them (L2 frame without FCS).
    pub size: u32,
    pub ecn: Ecn,
    /// DSCP (6 bits).
    pub dscp: u8,
    pub dir: Dir,
    /// Index of the link on its path the packet is at (or heading to).
    pub hop: u8,
    /// A stand-in for the 5-tuple: unique per flow and direction. FQ
    /// schedulers hash it with their own perturbation.
    pub tuple: u32,
    /// Source and destination host ids (the scenario's `src`/`dst` host
    /// names, numbered at build time), for host-fair qdiscs (Cake).
    pub src_host: u16,
    pub dst_host: u16,
    /// When the packet left its endpoint.
    pub sent_at: SimTime,
    /// When the packet entered its current qdisc (for sojourn time).
    pub enq_at: SimTime,
    /// Which queue of a multi-queue qdisc holds it (DualPI2: 0 = C, 1 = L),
    /// set by the qdisc at enqueue, read at dequeue for per-queue metrics.
    pub class: u8,
    pub hdr: Header,
    /// Live emulation (`ccbench-emu`) only: the arrival number of the real
    /// frame this packet stands for, so the forwarder finds its bytes after
    /// the qdisc. The simulator leaves it 0.
    pub frame: u32,
}

impl Packet {
    /// The TOS byte: DSCP << 2 | ECN.
    pub fn tos(&self) -> u8 {
        (self.dscp << 2) | self.ecn.bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_segment_is_a_1514_byte_frame() {
        // 1448 B of payload (MTU 1500 less IPv4, TCP and timestamps) in an
        // Ethernet frame without FCS, as tc counts it.
        assert_eq!(tcp_wire_size(1448), 1514);
        assert_eq!(tcp_wire_size(0), 66);
    }

    #[test]
    fn a_packet_fits_in_128_bytes() {
        assert!(std::mem::size_of::<Packet>() <= 128, "{} bytes", std::mem::size_of::<Packet>());
    }

    #[test]
    fn sack_blocks_read_back_as_written_on_both_sides_of_the_ack() {
        let mut a = TcpAck { ack: 5_000_000_000, ..Default::default() };
        let blocks = [SackBlock { start: 4_999_999_990, end: 4_999_999_991 }, SackBlock { start: 5_000_000_007, end: 5_000_100_000 },
                      SackBlock { start: 5_000_000_001, end: 5_000_000_003 }];
        assert!(a.sack.is_empty());
        for (k, b) in blocks.iter().enumerate() {
            assert_eq!(a.sack.len(), k);
            a.push_sack(*b);
            assert!(!a.sack.is_empty());
        }
        assert_eq!(a.sack_list(), blocks);
        let one = TcpAck { ack: 9, ..Default::default() };
        assert_eq!(one.sack_list(), [SackBlock::default(); 3]);
    }

    #[test]
    #[should_panic(expected = "too far")]
    fn a_block_beyond_any_window_is_refused() {
        let mut a = TcpAck { ack: 1, ..Default::default() };
        a.push_sack(SackBlock { start: 1 << 32, end: (1 << 32) + 1 });
    }
}
