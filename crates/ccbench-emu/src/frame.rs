//! Real Ethernet frames <-> the core's [`Packet`]: read ECN, DSCP and the
//! 5-tuple from an IPv4 header, and write ECN/DSCP back with the header
//! checksum fixed incrementally (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
//!
//! Sizes follow the core (`qdisc_pkt_len`): the frame length as read from
//! AF_PACKET, i.e. IP length + 14 B Ethernet header, no FCS.
//! Non-IPv4 frames (ARP, ...) are carried as Not-ECT with a tuple from the
//! EtherType; IPv6 is disabled in the emulator's namespaces.

use ccbench_core::packet::{Ecn, Packet};

const ETH_HDR: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;

/// What the forwarder learns from a frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    pub ipv4: bool,
    pub ecn: Ecn,
    pub dscp: u8,
    /// FNV-1a over protocol, addresses and (unfragmented TCP/UDP) ports.
    pub tuple: u32,
}

fn ecn_of(bits: u8) -> Ecn {
    match bits & 3 {
        0 => Ecn::NotEct,
        1 => Ecn::Ect1,
        2 => Ecn::Ect0,
        _ => Ecn::Ce,
    }
}

fn fnv1a(h: u32, bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193))
}

/// Parse a frame. Never fails: anything not a well-formed IPv4 header is
/// carried opaquely.
pub fn inspect(fr: &[u8]) -> FrameInfo {
    const FNV0: u32 = 0x811c_9dc5;
    if fr.len() < ETH_HDR {
        return FrameInfo {
            ipv4: false,
            ecn: Ecn::NotEct,
            dscp: 0,
            tuple: FNV0,
        };
    }
    let et = u16::from_be_bytes([fr[12], fr[13]]);
    let ip = &fr[ETH_HDR..];
    let ihl = ip.first().map_or(0, |b| usize::from(b & 0x0f) * 4);
    if et != ETHERTYPE_IPV4 || ip.len() < 20 || ip[0] >> 4 != 4 || ihl < 20 || ip.len() < ihl {
        return FrameInfo {
            ipv4: false,
            ecn: Ecn::NotEct,
            dscp: 0,
            tuple: fnv1a(FNV0, &fr[12..14]),
        };
    }
    let tos = ip[1];
    let proto = ip[9];
    let mut h = fnv1a(FNV0, &[proto]);
    h = fnv1a(h, &ip[12..20]);
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0;
    if (proto == 6 || proto == 17) && !frag && ip.len() >= ihl + 4 {
        h = fnv1a(h, &ip[ihl..ihl + 4]);
    }
    FrameInfo {
        ipv4: true,
        ecn: ecn_of(tos),
        dscp: tos >> 2,
        tuple: h,
    }
}

/// A flow's name from its first frame: "tcp 10.0.0.1:5000 > 10.0.0.2:80",
/// "icmp 10.0.0.1 > 10.0.0.2", or "ethertype 0x0806".
pub fn describe(fr: &[u8]) -> String {
    if !inspect(fr).ipv4 {
        let et = if fr.len() >= ETH_HDR {
            u16::from_be_bytes([fr[12], fr[13]])
        } else {
            0
        };
        return format!("ethertype {et:#06x}");
    }
    let ip = &fr[ETH_HDR..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let addr = |o: usize| format!("{}.{}.{}.{}", ip[o], ip[o + 1], ip[o + 2], ip[o + 3]);
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0;
    let (name, ports) = match ip[9] {
        6 => ("tcp", true),
        17 => ("udp", true),
        1 => ("icmp", false),
        n => return format!("ip proto {n} {} > {}", addr(12), addr(16)),
    };
    if ports && !frag && ip.len() >= ihl + 4 {
        let port = |o: usize| u16::from_be_bytes([ip[ihl + o], ip[ihl + o + 1]]);
        format!("{name} {}:{} > {}:{}", addr(12), port(0), addr(16), port(2))
    } else {
        format!("{name} {} > {}", addr(12), addr(16))
    }
}

/// An IPv4 frame's destination address.
pub fn ipv4_dst(fr: &[u8]) -> Option<[u8; 4]> {
    inspect(fr).ipv4.then(|| fr[ETH_HDR + 16..ETH_HDR + 20].try_into().expect("4 bytes"))
}

/// Fill the fields of a core packet from a frame.
pub fn to_packet(fr: &[u8], frame: u32) -> Packet {
    let fi = inspect(fr);
    Packet {
        size: fr.len() as u32,
        ecn: fi.ecn,
        dscp: fi.dscp,
        tuple: fi.tuple,
        frame,
        ..Default::default()
    }
}

/// Write `tos` into an IPv4 frame's header, updating the checksum
/// incrementally. Returns whether the byte changed.
pub fn set_tos(fr: &mut [u8], tos: u8) -> bool {
    if !inspect(fr).ipv4 {
        return false;
    }
    let ip = &mut fr[ETH_HDR..];
    let old = ip[1];
    if old == tos {
        return false;
    }
    // The checksummed 16-bit word holding TOS is (version/IHL << 8 | TOS).
    let m = u16::from_be_bytes([ip[0], old]);
    let m2 = u16::from_be_bytes([ip[0], tos]);
    let hc = u16::from_be_bytes([ip[10], ip[11]]);
    let mut sum = u32::from(!hc) + u32::from(!m) + u32::from(m2);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    let hc2 = !(sum as u16);
    ip[1] = tos;
    ip[10..12].copy_from_slice(&hc2.to_be_bytes());
    true
}

/// The full IPv4 header checksum (for tests and checks).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum = 0u32;
    for (i, w) in hdr.chunks(2).enumerate() {
        if i == 5 {
            continue; // the checksum field itself
        }
        sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tos: u8, proto: u8, sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12] = 0x08;
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = proto;
        ip[12..16].copy_from_slice(&[10, 201, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 201, 0, 2]);
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&5201u16.to_be_bytes());
        let c = ipv4_checksum(&ip[..20]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f
    }

    #[test]
    fn destination_of_ipv4_frames_only() {
        let mut f = frame(0, 17, 4000);
        assert_eq!(ipv4_dst(&f), Some([10, 201, 0, 2]));
        f[13] = 0x06; // ARP's EtherType 0x0806
        assert_eq!(ipv4_dst(&f), None);
        assert_eq!(ipv4_dst(&f[..20]), None);
    }

    #[test]
    fn reads_ecn_dscp_and_size() {
        let f = frame((46 << 2) | 1, 17, 4000);
        let p = to_packet(&f, 7);
        assert_eq!(p.ecn, Ecn::Ect1);
        assert_eq!(p.dscp, 46);
        assert_eq!(p.size, 42);
        assert_eq!(p.frame, 7);
        assert_eq!(p.tos(), (46 << 2) | 1);
    }

    /// RFC 1624: the incremental update equals a full recomputation, for
    /// every old/new TOS pair (including the 0x0000/0xffff edge cases).
    #[test]
    fn incremental_checksum_matches_full_recompute() {
        for old in 0..=255u8 {
            for new in [0u8, 1, 2, 3, 0xb8, 0xbb, 0xff, old ^ 3] {
                let mut f = frame(old, 6, 1234);
                set_tos(&mut f, new);
                assert_eq!(f[15], new);
                let c = u16::from_be_bytes([f[24], f[25]]);
                assert_eq!(c, ipv4_checksum(&f[14..34]), "tos {old:#x} -> {new:#x}");
            }
        }
    }

    #[test]
    fn tuple_separates_flows_and_directions_of_ports() {
        let a = inspect(&frame(0, 6, 1000)).tuple;
        let b = inspect(&frame(0, 6, 1001)).tuple;
        let c = inspect(&frame(0, 17, 1000)).tuple;
        assert!(a != b && a != c && b != c);
        assert_eq!(
            a,
            inspect(&frame(2, 6, 1000)).tuple,
            "ECN bits are not part of the tuple"
        );
    }

    #[test]
    fn flows_are_named_by_protocol_addresses_and_ports() {
        assert_eq!(
            describe(&frame(0, 6, 40000)),
            "tcp 10.201.0.1:40000 > 10.201.0.2:5201"
        );
        assert_eq!(
            describe(&frame(0, 17, 7)),
            "udp 10.201.0.1:7 > 10.201.0.2:5201"
        );
        assert_eq!(describe(&frame(0, 1, 0)), "icmp 10.201.0.1 > 10.201.0.2");
        assert_eq!(
            describe(&frame(0, 47, 0)),
            "ip proto 47 10.201.0.1 > 10.201.0.2"
        );
        let mut arp = frame(0, 6, 1);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(describe(&arp), "ethertype 0x0806");
    }

    #[test]
    fn non_ip_frames_are_opaque() {
        let mut f = frame(3, 6, 1);
        f[12] = 0x08;
        f[13] = 0x06; // ARP
        let fi = inspect(&f);
        assert!(!fi.ipv4);
        assert_eq!(fi.ecn, Ecn::NotEct);
        assert!(!set_tos(&mut f, 0));
        assert_eq!(f[15], 3);
    }
}
