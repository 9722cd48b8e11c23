//! Cake's flow classification (Linux net/sched/sch_cake.c `cake_hash`,
//! `cake_get_flow_quantum`, `cake_{inc,dec}_{src,dst}host_bulk_flow_count`):
//! 1024 queues per tin, 8-way set-associative, and per-host bulk-flow
//! counts for the dual/triple isolation modes.
//!
//! Hashes: the flow hash mixes the packet's `tuple` (our 5-tuple stand-in,
//! one per flow and direction) with the qdisc's perturbation; the host
//! hashes mix the `src_host`/`dst_host` ids (tagged so a source and a
//! destination never share a hash). As in Linux, the queue index is the
//! hash modulo 1024 and the host tables are set-associative too.
//! Deviation: `nat` (conntrack pre-NAT addresses) has no meaning without
//! NAT in the simulator and is accepted as a no-op.

use serde::{Deserialize, Serialize};

use super::{FlowSet, Tin};
use crate::packet::Packet;
use crate::qdisc::blocks::flow_hash::jhash_1word;
use crate::rng::SimRng;

pub const QUEUES: usize = 1024;
pub const WAYS: usize = 8;

const SRC_IP: u8 = 1;
const DST_IP: u8 = 2;
const FLOWS: u8 = 4;
const DUAL_SRC: u8 = 5;
const DUAL_DST: u8 = 6;

/// tc's flow-isolation keywords (`-` written `_`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    Flowblind,
    Srchost,
    Dsthost,
    Hosts,
    Flows,
    DualSrchost,
    DualDsthost,
    #[default]
    TripleIsolate,
}

impl FlowMode {
    /// `CAKE_FLOW_*` bits.
    pub fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => SRC_IP,
            FlowMode::Dsthost => DST_IP,
            FlowMode::Hosts => SRC_IP | DST_IP,
            FlowMode::Flows => FLOWS,
            FlowMode::DualSrchost => DUAL_SRC,
            FlowMode::DualDsthost => DUAL_DST,
            FlowMode::TripleIsolate => 7,
        }
    }
    /// `cake_dsrc`: per-source-host fairness.
    pub fn dsrc(self) -> bool {
        self.bits() & DUAL_SRC == DUAL_SRC
    }
    /// `cake_ddst`: per-destination-host fairness.
    pub fn ddst(self) -> bool {
        self.bits() & DUAL_DST == DUAL_DST
    }
}

/// Per-host slot of a tin (`struct cake_host`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Host {
    pub src_tag: u32,
    pub dst_tag: u32,
    pub src_bulk: u16,
    pub dst_bulk: u16,
}

/// `quantum_div[i] = 65535 / i` (index 0: 65535), a table as in Linux: a
/// flow's quantum is taken at every top-up, hundreds of times a packet with
/// many flows per host, and a division there costs more than the rest.
static QUANTUM_DIV: [u16; QUEUES + 1] = {
    let mut t = [0u16; QUEUES + 1];
    let mut i = 0;
    while i <= QUEUES {
        t[i] = (65535 / if i == 0 { 1 } else { i }) as u16;
        i += 1;
    }
    t
};

/// `quantum_div[load]`; a host's bulk-flow count never exceeds the queues.
pub fn quantum_div(load: u16) -> u32 {
    u32::from(QUANTUM_DIV[usize::from(load)])
}

/// A quantum from [`Tin::flow_quantum_scaled`] in bytes, with Linux's
/// random dither (`prandom_u32() >> 16`).
pub(super) fn dithered(scaled: u32, rng: &mut SimRng) -> i32 {
    ((scaled + (rng.next_u32() & 0xffff)) >> 16) as i32
}

impl Tin {
    pub(super) fn inc_src_bulk(&mut self, idx: usize, mode: FlowMode) {
        let h = &mut self.hosts[usize::from(self.flows[idx].srchost)];
        if mode.dsrc() && usize::from(h.src_bulk) < QUEUES {
            h.src_bulk += 1;
        }
    }
    pub(super) fn dec_src_bulk(&mut self, idx: usize, mode: FlowMode) {
        let h = &mut self.hosts[usize::from(self.flows[idx].srchost)];
        if mode.dsrc() && h.src_bulk > 0 {
            h.src_bulk -= 1;
        }
    }
    pub(super) fn inc_dst_bulk(&mut self, idx: usize, mode: FlowMode) {
        let h = &mut self.hosts[usize::from(self.flows[idx].dsthost)];
        if mode.ddst() && usize::from(h.dst_bulk) < QUEUES {
            h.dst_bulk += 1;
        }
    }
    pub(super) fn dec_dst_bulk(&mut self, idx: usize, mode: FlowMode) {
        let h = &mut self.hosts[usize::from(self.flows[idx].dsthost)];
        if mode.ddst() && h.dst_bulk > 0 {
            h.dst_bulk -= 1;
        }
    }

    /// `cake_get_flow_quantum`: the tin's flow quantum divided by the
    /// busier host's bulk-flow count, with Linux's random dither.
    pub(super) fn flow_quantum_for(&self, idx: usize, mode: FlowMode, rng: &mut SimRng) -> i32 {
        dithered(self.flow_quantum_scaled(idx, mode), rng)
    }

    /// The flow's quantum before the dither, in 1/65536 bytes: it changes
    /// only when a host's bulk-flow count does.
    pub(super) fn flow_quantum_scaled(&self, idx: usize, mode: FlowMode) -> u32 {
        let f = &self.flows[idx];
        let mut load = 1u16;
        if mode.dsrc() {
            load = load.max(self.hosts[usize::from(f.srchost)].src_bulk);
        }
        if mode.ddst() {
            load = load.max(self.hosts[usize::from(f.dsthost)].dst_bulk);
        }
        u32::from(self.flow_quantum) * quantum_div(load)
    }

    /// `cake_hash`: the queue index of a packet in this tin, claiming a
    /// way of its set and host slots as Linux does.
    pub(super) fn hash(&mut self, pkt: &Packet, mode: FlowMode, perturbation: u32) -> usize {
        let bits = mode.bits();
        if bits == 0 {
            return 0;
        }
        let src_hash = jhash_1word(u32::from(pkt.src_host) | 0x1_0000, perturbation);
        let dst_hash = jhash_1word(u32::from(pkt.dst_host) | 0x2_0000, perturbation);
        let mut flow_hash = 0u32;
        if bits & FLOWS != 0 {
            flow_hash = jhash_1word(pkt.tuple, perturbation);
        } else {
            if bits & SRC_IP != 0 {
                flow_hash ^= src_hash;
            }
            if bits & DST_IP != 0 {
                flow_hash ^= dst_hash;
            }
        }
        let mut reduced = flow_hash as usize % QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != FlowSet::None {
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let mut k = inner;
        let mut found = None;
        // A queue of the set already tagged with this flow (even idle)...
        for _ in 0..WAYS {
            if self.tags[outer + k] == flow_hash {
                let idle = self.flows[outer + k].set == FlowSet::None;
                found = Some(idle);
                break;
            }
            k = (k + 1) % WAYS;
        }
        let allocate = match found {
            Some(idle) => idle,
            None => {
                // ...else the first empty queue of the set...
                let mut empty = false;
                for _ in 0..WAYS {
                    if self.flows[outer + k].set == FlowSet::None {
                        empty = true;
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                if !empty {
                    // ...else collide into the queue the search ended on.
                    self.way_collisions += 1;
                    if self.flows[outer + k].set == FlowSet::Bulk {
                        self.dec_src_bulk(outer + k, mode);
                        self.dec_dst_bulk(outer + k, mode);
                    }
                }
                true
            }
        };
        reduced = outer + k;
        self.tags[reduced] = flow_hash;
        if allocate && mode.dsrc() {
            let slot = host_slot(&self.hosts, src_hash, |h| h.src_tag, |h| h.src_bulk);
            self.hosts[slot].src_tag = src_hash;
            self.flows[reduced].srchost = slot as u16;
            if self.flows[reduced].set == FlowSet::Bulk {
                self.inc_src_bulk(reduced, mode);
            }
        }
        if allocate && mode.ddst() {
            let slot = host_slot(&self.hosts, dst_hash, |h| h.dst_tag, |h| h.dst_bulk);
            self.hosts[slot].dst_tag = dst_hash;
            self.flows[reduced].dsthost = slot as u16;
            if self.flows[reduced].set == FlowSet::Bulk {
                self.inc_dst_bulk(reduced, mode);
            }
        }
        reduced
    }
}

/// The host slot for `hash`: the set's slot tagged with it, else the first
/// with no bulk flows, else (all busy) the slot the search ended on.
fn host_slot(
    hosts: &[Host],
    hash: u32,
    tag: impl Fn(&Host) -> u32,
    bulk: impl Fn(&Host) -> u16,
) -> usize {
    let idx = hash as usize % QUEUES;
    let inner = idx % WAYS;
    let outer = idx - inner;
    let mut k = inner;
    for _ in 0..WAYS {
        if tag(&hosts[outer + k]) == hash {
            return outer + k;
        }
        k = (k + 1) % WAYS;
    }
    for _ in 0..WAYS {
        if bulk(&hosts[outer + k]) == 0 {
            break;
        }
        k = (k + 1) % WAYS;
    }
    outer + k
}
