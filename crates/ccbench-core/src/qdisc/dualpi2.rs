//! STUB: DualPI2 (behaves as a pfifo until implemented).
use serde::{Deserialize, Serialize};

use super::{Cx, Qdisc};
use crate::packet::Packet;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualPi2Config {
    pub limit: u64,
}
impl Default for DualPi2Config {
    fn default() -> Self {
        DualPi2Config { limit: 10000 }
    }
}
impl DualPi2Config {
    pub fn build(&self) -> DualPi2 {
        DualPi2(super::fifo::PfifoConfig { limit: self.limit }.build())
    }
}
pub struct DualPi2(super::fifo::Fifo);
impl Qdisc for DualPi2 {
    fn enqueue(&mut self, pkt: Packet, cx: &mut Cx) {
        self.0.enqueue(pkt, cx)
    }
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.0.dequeue(cx)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self) -> u64 {
        self.0.bytes()
    }
}
