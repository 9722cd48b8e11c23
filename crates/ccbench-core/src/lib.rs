//! ccbench-core: a deterministic packet-level simulator for congestion
//! control and AQM experiments. No Python, no global state, no wall clock.

pub mod cc;
pub mod event;
pub mod packet;
pub mod qdisc;
pub mod rng;
pub mod units;
