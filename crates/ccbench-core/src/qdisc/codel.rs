//! STUB: CoDel qdisc (behaves as a pfifo until implemented).
use serde::{Deserialize, Serialize};
use super::{Cx, Qdisc};
use crate::packet::Packet;
use crate::units::Dur;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelConfig {
    pub limit: u64,
    pub target: Dur,
    pub interval: Dur,
    pub ecn: bool,
    pub ce_threshold: Option<Dur>,
}
impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig { limit: 1000, target: Dur::from_millis(5), interval: Dur::from_millis(100), ecn: false, ce_threshold: None }
    }
}
impl CodelConfig {
    pub fn build(&self) -> Codel {
        Codel(super::fifo::PfifoConfig { limit: self.limit }.build())
    }
}
pub struct Codel(super::fifo::Fifo);
impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) { self.0.enqueue(pkt, cx) }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> { self.0.dequeue(cx) }
    fn len(&self) -> usize { self.0.len() }
    fn bytes(&self) -> u64 { self.0.bytes() }
}
