//! Flows: a pair of endpoints and the paths between them. The forward path
//! carries data (or probe requests) from the sender to the receiver, the
//! reverse path ACKs (or replies); both are ordered lists of links, so a
//! dumbbell, a chain of bottlenecks or an asymmetric up/down path are the
//! same mechanism.

use crate::media::rfc8888::MediaReceiver;
use crate::media::sender::MediaSender;
use crate::packet::{LinkId, Packet};
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::units::{Dur, SimTime};

/// An echo prober: an ICMP-like ping (or UDP RTT probe) sending one request
/// every `interval`; the far end replies at once on the reverse path.
pub struct Ping {
    pub interval: Dur,
    pub size: u32,
    pub seq: u32,
    pub next_at: SimTime,
    pub active: bool,
    pub sent: u64,
    pub received: u64,
    /// Codepoint of requests and replies (pings marked ECT(1) land in an
    /// L4S queue).
    pub ecn: crate::packet::Ecn,
}

pub enum Endpoints {
    Tcp { tx: Box<TcpSender>, rx: TcpReceiver },
    Ping(Ping),
    /// RTP media under SCReAM with RFC 8888 feedback.
    Media { tx: Box<MediaSender>, rx: Box<MediaReceiver> },
}

pub struct Flow {
    pub name: String,
    pub cc_name: &'static str,
    pub ecn_name: &'static str,
    pub fwd: Vec<LinkId>,
    pub rev: Vec<LinkId>,
    pub ep: Endpoints,
    pub start: SimTime,
    pub stop: SimTime,
    /// Template for packets on the reverse path (ACKs, replies).
    pub rev_tmpl: Packet,
    /// Template for packets on the forward path (probe requests).
    pub fwd_tmpl: Packet,
    /// The receiving host's way out for its ACKs (TCP with host noise).
    pub rx_host: Option<Box<crate::tcp::HostQueue>>,
    /// Pending timer event per endpoint (sender, receiver).
    pub timer_at: [SimTime; 2],
    /// Receiver's delivered bytes at the last sample and at the warm-up.
    pub last_delivered: u64,
    /// Receiver's payload bytes arrived (any order) at the last sample.
    pub last_received: u64,
    /// Sender's (delivered, CE-delivered) segments at the last sample.
    pub last_acked: (u64, u64),
    pub delivered_at_warmup: u64,
    /// When the application's last byte was delivered (finite transfers).
    pub finished_at: Option<SimTime>,
    /// Named time intervals the summary reports the flow's goodput over.
    pub intervals: Vec<(String, SimTime, SimTime)>,
}

impl Flow {
    pub fn delivered_bytes(&self) -> u64 {
        match &self.ep {
            Endpoints::Tcp { rx, .. } => rx.delivered_bytes,
            Endpoints::Media { rx, .. } => rx.bytes,
            Endpoints::Ping(_) => 0,
        }
    }
    /// A flow of the summary's `flows` (TCP or media), not a prober.
    pub fn is_flow(&self) -> bool {
        !matches!(self.ep, Endpoints::Ping(_))
    }
}
