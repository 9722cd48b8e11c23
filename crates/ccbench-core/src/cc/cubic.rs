//! STUB: CUBIC (behaves as Reno until implemented).
use serde::{Deserialize, Serialize};
use super::{CongestionControl, TcpCcState};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig { pub hystart: bool }
impl Default for CubicConfig { fn default() -> Self { CubicConfig { hystart: true } } }
impl CubicConfig { pub fn build(&self) -> Cubic { Cubic } }
pub struct Cubic;
impl CongestionControl for Cubic {
    fn ssthresh(&mut self, tcp: &TcpCcState) -> u32 { (tcp.cwnd * 717 / 1024).max(2) }
    fn cong_avoid(&mut self, tcp: &mut TcpCcState, acked: u32) { super::reno::Reno.cong_avoid(tcp, acked) }
}
