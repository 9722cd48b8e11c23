//! STUB: CoDel qdisc (behaves as a pfifo until implemented).
use serde::{Deserialize, Serialize};
use super::{Cx, Qdisc};
use crate::packet::Packet;
use crate::units::Dur;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FqCodelConfig {
    pub limit: u64,
    pub target: Dur,
    pub interval: Dur,
    pub ecn: bool,
    pub ce_threshold: Option<Dur>,
}
impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig { limit: 10240, target: Dur::from_millis(5), interval: Dur::from_millis(100), ecn: true, ce_threshold: None }
    }
}
impl FqCodelConfig {
    pub fn build(&self) -> FqCodel {
        FqCodel(super::fifo::PfifoConfig { limit: self.limit }.build())
    }
}
pub struct FqCodel(super::fifo::Fifo);
impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) { self.0.enqueue(pkt, cx) }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> { self.0.dequeue(cx) }
    fn len(&self) -> usize { self.0.len() }
    fn bytes(&self) -> u64 { self.0.bytes() }
}
