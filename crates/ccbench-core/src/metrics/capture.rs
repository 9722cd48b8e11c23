//! Packet capture: the headers of every packet that starts transmission on
//! a captured link, as columns. The Python side turns them into a standard
//! pcap (synthetic but valid IPv4 + TCP/UDP headers).

use crate::metrics::{Column, Table};
use crate::packet::{Dir, Header, Packet};
use crate::units::SimTime;

/// `kind` values.
pub const KIND_DATA: u32 = 0;
pub const KIND_ACK: u32 = 1;
pub const KIND_PROBE: u32 = 2;
pub const KIND_REPLY: u32 = 3;
pub const KIND_OTHER: u32 = 4;
/// RTP media (seq = RTP sequence number, len = RTP bytes) and RFC 8888
/// feedback (seq = report id).
pub const KIND_RTP: u32 = 5;
pub const KIND_FEEDBACK: u32 = 6;
/// `flags` bits.
pub const FLAG_ECE: u32 = 1;
pub const FLAG_CWR: u32 = 2;
pub const FLAG_RETRANS: u32 = 4;
pub const FLAG_PSH: u32 = 8;

#[derive(Default, Clone, Debug, PartialEq)]
pub struct Capture {
    pub time_ns: Vec<u64>,
    pub link: Vec<u32>,
    /// The flow arena index (stable per scenario) and direction: the
    /// stand-in for the 5-tuple.
    pub endpoint: Vec<u32>,
    pub dir: Vec<u32>,
    pub size: Vec<u32>,
    pub ecn: Vec<u32>,
    pub dscp: Vec<u32>,
    pub kind: Vec<u32>,
    /// Data: segment number and payload; ACK: cumulative ACK (next segment).
    pub seq: Vec<u64>,
    pub len: Vec<u32>,
    pub ack: Vec<u64>,
    pub flags: Vec<u32>,
    pub nsack: Vec<u32>,
    /// Up to three SACK blocks (start, end) in segments; unused are 0.
    pub sack: [Vec<u64>; 6],
    /// AccECN CE packet counter (r.cep) on ACKs.
    pub cep: Vec<u32>,
}

impl Capture {
    pub fn push(&mut self, now: SimTime, link: u32, p: &Packet) {
        self.time_ns.push(now.0);
        self.link.push(link);
        self.endpoint.push(p.flow.0);
        self.dir.push(u32::from(p.dir == Dir::Rev));
        self.size.push(p.size);
        self.ecn.push(u32::from(p.ecn.bits()));
        self.dscp.push(u32::from(p.dscp));
        let (kind, seq, len, ack, flags, cep) = match &p.hdr {
            Header::TcpData(s) => {
                let flags = (u32::from(s.cwr) * FLAG_CWR) | (u32::from(s.retrans) * FLAG_RETRANS) | (u32::from(s.psh) * FLAG_PSH);
                (KIND_DATA, s.seq, s.len, 0, flags, 0)
            }
            Header::TcpAck(a) => (KIND_ACK, 0, 0, a.ack, u32::from(a.ece) * FLAG_ECE, a.cep),
            Header::Probe(pr) => (if pr.reply { KIND_REPLY } else { KIND_PROBE }, u64::from(pr.seq), 0, 0, 0, 0),
            Header::Rtp(r) => (KIND_RTP, u64::from(r.seq), r.rtp_bytes, 0, u32::from(r.marker), 0),
            Header::Feedback(f) => (KIND_FEEDBACK, u64::from(f.report_id), 0, 0, 0, 0),
            Header::None => (KIND_OTHER, 0, 0, 0, 0, 0),
        };
        self.kind.push(kind);
        self.seq.push(seq);
        self.len.push(len);
        self.ack.push(ack);
        self.flags.push(flags);
        self.cep.push(cep);
        let (n, blocks) = match &p.hdr {
            Header::TcpAck(a) => (a.sack.len() as u8, a.sack_list()),
            _ => (0, Default::default()),
        };
        self.nsack.push(u32::from(n));
        for (k, b) in blocks.iter().enumerate() {
            self.sack[2 * k].push(b.start);
            self.sack[2 * k + 1].push(b.end);
        }
    }

    pub fn table(&self) -> Table {
        const SACK: [&str; 6] = ["sack0_start", "sack0_end", "sack1_start", "sack1_end", "sack2_start", "sack2_end"];
        let mut t: Table = vec![
            ("time_s", Column::F64(self.time_ns.iter().map(|&x| x as f64 / 1e9).collect())),
            ("time_ns", Column::U64(self.time_ns.clone())),
            ("link", Column::U32(self.link.clone())),
            ("endpoint", Column::U32(self.endpoint.clone())),
            ("dir", Column::U32(self.dir.clone())),
            ("size", Column::U32(self.size.clone())),
            ("ecn", Column::U32(self.ecn.clone())),
            ("dscp", Column::U32(self.dscp.clone())),
            ("kind", Column::U32(self.kind.clone())),
            ("seq", Column::U64(self.seq.clone())),
            ("len", Column::U32(self.len.clone())),
            ("ack", Column::U64(self.ack.clone())),
            ("flags", Column::U32(self.flags.clone())),
            ("cep", Column::U32(self.cep.clone())),
            ("nsack", Column::U32(self.nsack.clone())),
        ];
        for (k, name) in SACK.iter().enumerate() {
            t.push((name, Column::U64(self.sack[k].clone())));
        }
        t
    }
}
