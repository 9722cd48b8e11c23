//! Reno / NewReno congestion avoidance (RFC 5681 §3.1; Linux
//! net/ipv4/tcp_cong.c `tcp_reno_*`): slow start to ssthresh, then +1
//! segment per window of ACKed segments; ssthresh = max(cwnd/2, 2) on loss
//! or ECN-Echo. Loss recovery itself (SACK, PRR) is the TCP layer's.

use serde::{Deserialize, Serialize};

use super::{CongestionControl, TcpCcState};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenoConfig {}

impl RenoConfig {
    pub fn build(&self) -> Reno {
        Reno
    }
}

pub struct Reno;

impl CongestionControl for Reno {
    //= RFC 5681 §3.1 eq. (4): ssthresh = max (FlightSize / 2, 2*SMSS)
    // (Linux uses cwnd rather than FlightSize.)
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        (tcp.cwnd / 2).max(2)
    }
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        let acked = tcp.ca_acked(acked);
        if acked == 0 {
            return;
        }
        let w = tcp.cwnd;
        tcp.cong_avoid_ai(w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::SimTime;

    #[test]
    fn halves_on_loss_with_floor_two() {
        let mut r = Reno;
        let mut t = TcpCcState::new(SimTime(0), 1448, 40);
        assert_eq!(r.ssthresh(&t), 20);
        t.cwnd = 3;
        assert_eq!(r.ssthresh(&t), 2);
    }

    #[test]
    fn one_segment_per_rtt_in_congestion_avoidance() {
        let mut r = Reno;
        let mut t = TcpCcState::new(SimTime(0), 1448, 20);
        t.ssthresh = 20;
        // One window's worth of ACKs (20 segments) adds exactly one segment.
        for _ in 0..20 {
            r.cong_avoid(&mut t, 1);
        }
        assert_eq!(t.cwnd, 21);
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut r = Reno;
        let mut t = TcpCcState::new(SimTime(0), 1448, 10);
        for _ in 0..10 {
            r.cong_avoid(&mut t, 1);
        }
        assert_eq!(t.cwnd, 20);
    }
}
