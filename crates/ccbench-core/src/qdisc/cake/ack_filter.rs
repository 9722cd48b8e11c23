//! Cake's ACK filter (Linux net/sched/sch_cake.c `cake_ack_filter`,
//! `cake_tcph_sack_compare`, `cake_tcph_may_drop`) on our TCP ACK header.
//!
//! When a pure ACK joins a flow queue, an older pure ACK of the same tuple
//! queued ahead of it is redundant if its cumulative ACK is not beyond the
//! new one's, its TSecr is not newer, its SACK blocks are all covered by the
//! new ACK's (and it carries no D-SACK), and the new one acknowledges more
//! (a higher cumulative ACK, or more SACKed data). Default mode drops the
//! oldest redundant ACK only once two exist; `aggressive` also drops a
//! single one directly ahead of the new ACK if their ECE flags match. An
//! ACK whose ECE differs from the first eligible one voids that candidate
//! (ECN information would be lost).
//!
//! Our ACKs carry no TSval, no other options and no CWR (a data-only flag
//! here); sequence numbers count segments, and comparisons do not wrap.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::packet::{Header, Packet, TcpAck};

/// tc `no-ack-filter` (default), `ack-filter`, `ack-filter-aggressive`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AckFilter {
    #[default]
    Off,
    On,
    Aggressive,
}

/// `cake_tcph_sack_compare(a, b)`: −1 if `a` SACKs something `b` does not
/// (or has a D-SACK), 1 if `b` SACKs strictly more bytes, else 0.
fn sack_compare(a: &TcpAck, b: &TcpAck) -> i32 {
    let (la, lb) = (a.sack_list(), b.sack_list());
    let sa = &la[..a.sack.len()];
    let sb = &lb[..b.sack.len()];
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        _ => {}
    }
    let bytes_b: u64 = sb.iter().map(|s| s.end.saturating_sub(s.start)).sum();
    let mut bytes_a = 0;
    for blk in sa {
        if blk.start < a.ack {
            return -1; // D-SACK: never drop
        }
        bytes_a += blk.end.saturating_sub(blk.start);
        if !sb.iter().any(|x| x.start <= blk.start && x.end >= blk.end) {
            return -1;
        }
    }
    i32::from(bytes_b > bytes_a)
}

fn pure_ack(p: &Packet) -> Option<&TcpAck> {
    match &p.hdr {
        Header::TcpAck(a) => Some(a),
        _ => None,
    }
}

/// Run the filter after `q`'s tail packet was enqueued; returns the index
/// of the redundant ACK to drop, if any.
pub fn find_redundant(q: &VecDeque<Packet>, mode: AckFilter) -> Option<usize> {
    if mode == AckFilter::Off || q.len() < 2 {
        return None;
    }
    let tail = q.back()?;
    let new = pure_ack(tail)?;
    let mut elig: Option<(usize, bool)> = None;
    let mut found = 0;
    for (i, p) in q.iter().enumerate().take(q.len() - 1) {
        if p.tuple != tail.tuple {
            continue;
        }
        let Some(old) = pure_ack(p) else { continue };
        if let Some((_, ece)) = elig {
            if old.ece != ece {
                elig = None;
                found -= 1;
            }
        }
        if old.tsecr > new.tsecr || old.ack > new.ack {
            continue;
        }
        let cmp = sack_compare(old, new);
        if cmp < 0 || (old.ack == new.ack && cmp == 0) {
            continue;
        }
        if elig.is_none() {
            elig = Some((i, old.ece));
        }
        found += 1;
        if found > 1 {
            return elig.map(|e| e.0);
        }
    }
    match elig {
        Some((i, ece)) if mode == AckFilter::Aggressive && i + 2 == q.len() && ece == new.ece => {
            Some(i)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::SackBlock;

    fn ack(n: u64) -> Packet {
        Packet {
            tuple: 3,
            size: 66,
            hdr: Header::TcpAck(TcpAck {
                ack: n,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn with_sack(mut p: Packet, blocks: &[(u64, u64)]) -> Packet {
        if let Header::TcpAck(a) = &mut p.hdr {
            for &(s, e) in blocks {
                a.push_sack(SackBlock { start: s, end: e });
            }
        }
        p
    }

    #[test]
    fn default_mode_needs_two_redundant_acks_and_drops_the_oldest() {
        let q: VecDeque<Packet> = [ack(1), ack(2)].into();
        assert_eq!(find_redundant(&q, AckFilter::On), None);
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), Some(0));
        let q: VecDeque<Packet> = [ack(1), ack(2), ack(3)].into();
        assert_eq!(find_redundant(&q, AckFilter::On), Some(0));
        assert_eq!(find_redundant(&q, AckFilter::Off), None);
    }

    #[test]
    fn newer_information_is_never_dropped() {
        // A duplicate ACK (same cumulative ACK, no new SACK) is not redundant
        // to its predecessor: it signals loss.
        let q: VecDeque<Packet> = [ack(5), ack(5), ack(5)].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), None);
        // Same ACK but the new one SACKs more: the old one may go.
        let q: VecDeque<Packet> =
            [with_sack(ack(5), &[(7, 8)]), with_sack(ack(5), &[(7, 9)])].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), Some(0));
        // The old one SACKs a block the new one does not cover: keep it.
        let q: VecDeque<Packet> =
            [with_sack(ack(5), &[(12, 13)]), with_sack(ack(6), &[(7, 9)])].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), None);
        // D-SACK (block below the cumulative ACK): keep it.
        let q: VecDeque<Packet> =
            [with_sack(ack(5), &[(2, 3)]), with_sack(ack(6), &[(2, 3)])].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), None);
        // A data packet ahead, or another tuple, is never a candidate.
        let mut other = ack(1);
        other.tuple = 9;
        let q: VecDeque<Packet> = [other, ack(2)].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), None);
    }

    #[test]
    fn ece_changes_protect_the_ecn_signal() {
        let mut e = ack(2);
        if let Header::TcpAck(a) = &mut e.hdr {
            a.ece = true;
        }
        // ECE differs from the new ACK: aggressive mode keeps the single one.
        let q: VecDeque<Packet> = [e, ack(3)].into();
        assert_eq!(find_redundant(&q, AckFilter::Aggressive), None);
        // An ECE flip between candidates voids the first.
        let q: VecDeque<Packet> = [ack(1), e, ack(3)].into();
        assert_eq!(find_redundant(&q, AckFilter::On), None);
    }
}
