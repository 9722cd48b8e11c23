//! The data sender's reading of Accurate ECN feedback (RFC 9768 §3.2.2.5
//! and Appendix A.2, as Linux 6.18 `__tcp_accecn_process` and
//! `tcp_accecn_process_option` in net/ipv4/tcp_input.c).
//!
//! The receiver's CE packet counter reaches the sender only modulo 8, in
//! the 3-bit ACE field (offset by 5, `TCP_ACCECN_CEP_INIT_OFFSET`), and its
//! CE byte counter modulo 2^24 in the AccECN option. So the sender takes
//! an ACK's CE count as the ACE field's change since the count it holds,
//! modulo 8:
//!
//! - an ACK that makes no forward progress (nothing newly ACKed or SACKed)
//!   and carries no newer timestamp is not read at all: it may be a
//!   reordered older ACK, whose ACE field would otherwise count as up to 7
//!   marks (Linux "Reordered ACK or uncertain due to lack of data");
//! - with at most 7 packets newly delivered the change modulo 8 is exact;
//! - beyond that the field may have wrapped: the largest count consistent
//!   with the field (`safe_delta`) unless the option's CE bytes say fewer
//!   (Appendix A.2.2's safety factor of 2, and from 16 packets an estimate
//!   of the wraps from the CE bytes per delivered byte).
//!
//! The option is modelled on every ACK (`tcp_ecn_option` = 2, its default)
//! with its CE byte field only: the other two byte fields (ECT(0), ECT(1))
//! serve Linux only to decide which field grew, and a rule of those does
//! not change the CE count here. The ACK's header always takes the slow
//! path (Linux's fast path skips the ACE field when it cannot have
//! changed, which gives the same count).

use crate::packet::{TcpAck, ACE_MASK, BYTES_MASK, CEP_INIT_OFFSET};

/// `TCP_ACCECN_SAFETY_SHIFT`: Appendix A.2.2's SAFETY_FACTOR of 2.
const SAFETY_SHIFT: u32 = 1;

/// What the sender holds of the receiver's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcnFeedback {
    /// `tp->delivered_ce`: CE marks counted so far (wrapping, as Linux's u32).
    pub delivered_ce: u32,
    /// `tp->delivered_ecn_bytes[CE]`: the option's CE byte count as last
    /// read (24-bit arithmetic, sign-extended deltas).
    pub ce_bytes: u32,
}

impl AccEcnFeedback {
    /// The CE marks this ACK reports. `delivered` / `delivered_bytes`: the
    /// packets and payload bytes it newly ACKed or SACKed; `ts_progress`:
    /// its TSval is newer than any before (`FLAG_TS_PROGRESS`).
    pub fn process(&mut self, ack: &TcpAck, delivered: u32, delivered_bytes: u64, ts_progress: bool, mss: u32) -> u32 {
        if delivered == 0 && !ts_progress {
            return 0;
        }
        let old_ceb = self.ce_bytes;
        let opt_valid = self.read_option(ack.ceb_field());
        let corrected_ace = u32::from(ack.ace()).wrapping_sub(CEP_INIT_OFFSET);
        let delta = corrected_ace.wrapping_sub(self.delivered_ce) & ACE_MASK;
        let d = self.count(delta, delivered, delivered_bytes, opt_valid, self.ce_bytes.wrapping_sub(old_ceb), mss);
        self.delivered_ce = self.delivered_ce.wrapping_add(d);
        d
    }

    /// `__tcp_accecn_process` after the ACE delta is known.
    fn count(&self, delta: u32, pkts: u32, bytes: u64, opt_valid: bool, d_ceb: u32, mss: u32) -> u32 {
        if pkts <= ACE_MASK {
            return delta;
        }
        let safe_delta = pkts - ((pkts - delta) & ACE_MASK);
        if opt_valid {
            if d_ceb == 0 {
                return delta;
            }
            // Every flow here uses SACK, so the estimate always applies.
            if pkts >= (ACE_MASK + 1) * 2 {
                if bytes <= u64::from(d_ceb) {
                    return safe_delta;
                }
                let est_d_cep = (u64::from(d_ceb) * u64::from(pkts)).div_ceil(bytes) as u32;
                return safe_delta.min(delta + (est_d_cep & !ACE_MASK));
            }
            let mss = u64::from(mss);
            if u64::from(d_ceb) > u64::from(delta) * mss {
                return safe_delta;
            }
            if u64::from(d_ceb) < (u64::from(safe_delta) * mss) >> SAFETY_SHIFT {
                return delta;
            }
        }
        safe_delta
    }

    /// `tcp_update_ecn_bytes` on the CE field: the counter follows the
    /// field by its sign-extended 24-bit change; a decrease (an older
    /// option) makes this ACK's byte deltas unusable.
    fn read_option(&mut self, field: u32) -> bool {
        let raw = field.wrapping_sub(self.ce_bytes) & BYTES_MASK;
        // sign_extend32(raw, 23)
        let delta = ((raw << 8) as i32) >> 8;
        self.ce_bytes = self.ce_bytes.wrapping_add(delta as u32);
        delta >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(cep: u32, ceb: u64) -> TcpAck {
        TcpAck { cep, ceb, ..Default::default() }
    }

    #[test]
    fn wire_fields_are_the_counters_modulo_their_width() {
        //= RFC 9768 §3.2.1: r.cep starts at 5; the ACE field is its 3 LSBs.
        assert_eq!(ack(0, 0).ace(), 5);
        assert_eq!(ack(3, 0).ace(), 0);
        assert_eq!(ack(10, 0).ace(), 7);
        assert_eq!(ack(0, (1 << 24) + 77).ceb_field(), 77);
    }

    #[test]
    fn small_deliveries_count_the_ace_change_exactly() {
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(0, 0), 2, 2896, false, 1448), 0);
        assert_eq!(f.process(&ack(2, 2896), 2, 2896, false, 1448), 2);
        // Seven marks on seven packets: the field went round once less one.
        assert_eq!(f.process(&ack(9, 2896 * 4 + 1448 * 3), 7, 7 * 1448, false, 1448), 7);
        assert_eq!(f.delivered_ce, 9);
        // Across the wrap of the 3-bit field.
        assert_eq!(f.process(&ack(11, 2896 * 5 + 1448 * 3), 2, 2896, false, 1448), 2);
        assert_eq!(f.delivered_ce, 11);
    }

    #[test]
    fn an_ack_without_progress_is_not_read() {
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(3, 4344), 3, 4344, false, 1448), 3);
        // An older ACK (cep 1) arriving late: no delivery, no newer TSval.
        assert_eq!(f.process(&ack(1, 1448), 0, 0, false, 1448), 0);
        assert_eq!(f, AccEcnFeedback { delivered_ce: 3, ce_bytes: 4344 });
        // Read, it would have counted (1 − 3) mod 8 = 6 phantom marks.
        let mut g = f;
        assert_eq!(g.process(&ack(1, 1448), 1, 1448, false, 1448), 6);
        // A newer timestamp alone is progress (FLAG_TS_PROGRESS).
        assert_eq!(f.process(&ack(4, 5792), 0, 0, true, 1448), 1);
    }

    #[test]
    fn large_deliveries_take_the_safe_count_unless_the_bytes_say_less() {
        let mss = 1448;
        // 10 packets delivered, 2 CE marks: the field moved by 2; 2 or 10
        // marks fit it. The option's 2 × 1448 CE bytes are below
        // safe_delta·mss/2 = 7240: the plain delta.
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(2, 2 * 1448), 10, 10 * 1448, false, mss), 2);
        // Ten marks in ten packets: the field moved by 2 as well, but the
        // bytes exceed delta·mss: safe_delta = 10.
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(10, 10 * 1448), 10, 10 * 1448, false, mss), 10);
        // No CE bytes at all: the ACE change stands.
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(0, 0), 10, 10 * 1448, false, mss), 0);
        // Without a usable option (its counter went back): safe_delta.
        let mut f = AccEcnFeedback { delivered_ce: 0, ce_bytes: 5000 };
        assert_eq!(f.process(&ack(2, 1000), 10, 10 * 1448, false, mss), 10);
    }

    #[test]
    fn from_sixteen_packets_the_bytes_estimate_the_wraps() {
        let mss = 1448;
        // 40 packets, 19 marked: the field moved by 3; safe_delta = 35.
        // CE bytes 19/40 of the delivered bytes: estimate 19 → 3 + 16 = 19.
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(19, 19 * 1448), 40, 40 * 1448, false, mss), 19);
        // CE bytes as large as the delivered bytes: safe_delta.
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(19, 40 * 1448), 40, 40 * 1448, false, mss), 35);
    }

    #[test]
    fn below_sixteen_packets_the_bytes_only_choose_delta_or_safe_delta() {
        let mss = 1448;
        // 15 packets, the field moved by 3, CE bytes of 6 segments: no
        // estimate below 2·8 packets; the bytes exceed delta·mss, so
        // safe_delta = 15 − (12 & 7) = 11 (an estimate would give 3).
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(3, 6 * 1448), 15, 15 * 1448, false, mss), 11);
        // CE bytes of one segment: within delta·mss and below half of
        // safe_delta·mss, so the field's delta stands (3). (Below 16
        // packets safe_delta is delta or delta + 8, so the second test
        // decides only when the first did not: delta < 8 always.)
        let mut f = AccEcnFeedback::default();
        assert_eq!(f.process(&ack(3, 1448), 15, 15 * 1448, false, mss), 3);
    }

    #[test]
    fn the_byte_counter_follows_its_24_bit_field() {
        let mut f = AccEcnFeedback { delivered_ce: 0, ce_bytes: BYTES_MASK - 100 };
        assert!(f.read_option(50));
        assert_eq!(f.ce_bytes, BYTES_MASK + 51);
        assert!(!f.read_option(40), "an older field is a decrease");
        assert_eq!(f.ce_bytes & BYTES_MASK, 40);
    }
}
