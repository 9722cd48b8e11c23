//! Per-packet overhead compensation: the length a shaper charges for a
//! packet, as Linux computes it for `tc ... stab overhead N mpu M linklayer
//! atm` (`net/sched/sch_api.c` `__qdisc_calculate_pkt_len`, with the size
//! table iproute2 builds in `tc/tc_core.c` `tc_adjust_size` /
//! `tc_align_to_atm`) and for Cake's `overhead`/`mpu`/`atm`/`ptm` keywords
//! (`net/sched/sch_cake.c` `cake_calc_overhead`).
//!
//! Units: bytes. Input is the qdisc length of the packet (IP length + 14 B
//! Ethernet header, see [`crate::packet`]).
//! Deviations: the stab size table's cell granularity (`cell_log`) is not
//! modelled; lengths are exact, as with a table of cell size 1.

use serde::{Deserialize, Serialize};

use crate::packet::ETH_HDR;

/// How the bytes on the physical medium are framed.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkLayer {
    /// Bytes go on the wire as they are (tc `linklayer ethernet`, Cake `noatm`).
    #[default]
    Ethernet,
    /// ATM AAL5: 48 B of payload per 53 B cell, the last cell padded.
    Atm,
    /// PTM (VDSL2, 64/65 B encoding): one byte per started 64 B.
    Ptm,
}

/// Which length the overhead is added to.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum LenBase {
    /// The qdisc length, Ethernet header included (tc `stab`; Cake `raw`).
    #[default]
    Frame,
    /// The network-layer length: Cake strips the MAC header before adding
    /// its overhead once any overhead keyword is given.
    Network,
}

/// A packet-length adjustment. The default charges the qdisc length as is.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Overhead {
    pub base: LenBase,
    /// Bytes added per packet (may be negative, e.g. `overhead -14`).
    pub overhead: i32,
    /// Minimum charged length before link-layer framing.
    pub mpu: u32,
    pub link_layer: LinkLayer,
}

impl Overhead {
    /// Bytes charged for a packet of qdisc length `len`.
    #[inline]
    pub fn charge(&self, len: u32) -> u32 {
        let base = match self.base {
            LenBase::Frame => len,
            LenBase::Network => len.saturating_sub(ETH_HDR),
        };
        let mut l = (i64::from(base) + i64::from(self.overhead)).max(1) as u32;
        l = l.max(self.mpu);
        match self.link_layer {
            LinkLayer::Ethernet => l,
            LinkLayer::Atm => l.div_ceil(48) * 53,
            LinkLayer::Ptm => l + l.div_ceil(64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_charges_the_qdisc_length() {
        assert_eq!(Overhead::default().charge(1514), 1514);
        assert_eq!(Overhead::default().charge(66), 66);
    }

    #[test]
    fn stab_overhead_is_added_to_the_frame_and_may_be_negative() {
        let o = Overhead { overhead: -14, ..Default::default() };
        assert_eq!(o.charge(1514), 1500);
        let o = Overhead { overhead: 24, ..Default::default() };
        assert_eq!(o.charge(1514), 1538);
        // never below one byte
        let o = Overhead { overhead: -2000, ..Default::default() };
        assert_eq!(o.charge(100), 1);
    }

    #[test]
    fn cake_ethernet_keyword_strips_the_mac_header_then_adds_38_with_mpu_84() {
        // sch_cake `ethernet`: overhead 38, mpu 84, on the network length.
        let o = Overhead { base: LenBase::Network, overhead: 38, mpu: 84, link_layer: LinkLayer::Ethernet };
        assert_eq!(o.charge(1514), 1500 + 38);
        // a 40 B pure ACK (54 B frame): 40 + 38 = 78 < mpu 84
        assert_eq!(o.charge(54), 84);
    }

    #[test]
    fn atm_pads_to_whole_53_byte_cells_of_48_payload_bytes() {
        let o = Overhead { link_layer: LinkLayer::Atm, ..Default::default() };
        assert_eq!(o.charge(48), 53);
        assert_eq!(o.charge(49), 106);
        assert_eq!(o.charge(96), 106);
        // 1500 B IP + 14 B header = 1514 B -> 32 cells (1536 B payload) = 1696 B
        assert_eq!(o.charge(1514), 32 * 53);
        // mpu applies before the cell alignment (tc_adjust_size)
        let o = Overhead { link_layer: LinkLayer::Atm, mpu: 100, ..Default::default() };
        assert_eq!(o.charge(40), 3 * 53);
    }

    #[test]
    fn ptm_adds_one_byte_per_started_64() {
        let o = Overhead { link_layer: LinkLayer::Ptm, ..Default::default() };
        assert_eq!(o.charge(64), 65);
        assert_eq!(o.charge(65), 67);
        assert_eq!(o.charge(1514), 1514 + 24);
    }
}
