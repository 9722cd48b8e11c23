//! STUB: Dctcp (behaves as Reno until implemented).
use serde::{Deserialize, Serialize};

use super::{CongestionControl, TcpCcState};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {}
impl DctcpConfig {
    pub fn build(&self) -> Dctcp {
        Dctcp
    }
}
pub struct Dctcp;
impl CongestionControl for Dctcp {
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 {
        (tcp.cwnd / 2).max(2)
    }
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) {
        super::reno::Reno.cong_avoid(tcp, acked)
    }
}
