//! RED, Random Early Detection (Floyd & Jacobson 1993; Linux
//! net/sched/sch_red.c and include/net/red.h; tc's parameter derivation
//! from iproute2 tc/q_red.c `red_parse_opt` and tc/tc_red.c).
//!
//! Enqueue (`red_enqueue`): the average queue `qavg` (bytes, fixed point
//! scaled by 2^Wlog) is updated from the byte backlog with W = 2^−Wlog
//! (`red_calc_qavg_no_idle_time`), or, after an idle period, decayed by
//! the idle-damping table tc computed from `bandwidth`
//! (`red_calc_qavg_from_idle_time`). Below `min` nothing happens; at or
//! above `max` every packet is "hard marked"; in between Floyd's count
//! method (`red_action`, `red_mark_probability`) marks when
//! (qavg − min)·count ≥ qR, qR drawn uniformly in [0, (max − min)/max_p)
//! after each mark, so the gap between marks is uniform in [1, 1/p_b] with
//! p_b = max_p·(qavg − min)/(max − min). A mark is a CE mark with `ecn`
//! (Not-ECT dropped unless `nodrop`), a drop otherwise; hard marks drop
//! with `harddrop` or without `ecn`. Survivors enter a bfifo of `limit`
//! bytes. `adaptive` (`red_adaptative_algo`) moves max_p every 500 ms
//! toward the band [min + 0.4·Δ, min + 0.6·Δ]: +min(1 %, max_p/4) above it
//! while max_p ≤ 50 %, ×0.9 below it while max_p ≥ 1 %.
//!
//! Parameters as tc derives them: `max` = 3·min if only min is given, else
//! limit/4; `min` = max/3; `burst` = (2·min + max)/(3·avpkt); probability
//! 0.02; bandwidth 10 Mbit; Wlog by `tc_red_eval_ewma`, Plog by
//! `tc_red_eval_P`, Scell_log and the 256-entry table by
//! `tc_red_eval_idle_damping`. [`RedConfig::resolve`] writes them into the
//! resolved scenario (`ewma_log`, `plog`, `scell_log`); given explicitly,
//! they override the derivation as a raw netlink request would.
//!
//! Units: sizes in bytes; qavg and thresholds in Linux's fixed point; max_p
//! as Linux's u32 with 2^32 ≙ 1; idle time in µs as the kernel measures it.
//!
//! Faithful oddity: tc builds the idle table in psched ticks of 64 ns
//! (`tc_calc_xmittime` with /proc/net/psched's 15.625 ticks/µs), while the
//! kernel indexes it with idle time in µs since its move to ktime. So the
//! average decays 15.6× slower over an idle period than Floyd & Jacobson's
//! m = idle/xmit_time intends; this model does what Linux does.
//!
//! Deviations: the idle period starts when a dequeue finds the queue empty
//! (Linux's `red_dequeue` returning NULL), which in this simulator is the
//! end of the last transmission; the adaptive timer is ideal (every 500 ms
//! from creation); no qevents, offload or child other than the bfifo.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Cx, DropReason, Qdisc, QdiscProbe};
use crate::packet::Packet;
use crate::units::{Bytes, Dur, Rate, SimTime};

const RED_STAB_SIZE: usize = 256;
/// `RED_ONE_PERCENT`: DIV_ROUND_CLOSEST(2^32, 100).
const RED_ONE_PERCENT: u32 = 42_949_673;
const MAX_P_MIN: u32 = RED_ONE_PERCENT;
const MAX_P_MAX: u32 = 50 * RED_ONE_PERCENT;
/// The adaptive timer's period (`HZ/2` jiffies).
const ADAPT_PERIOD: Dur = Dur::from_millis(500);
/// tc's `bandwidth` when none is given.
const DEFAULT_BANDWIDTH: Rate = Rate(10_000_000);
/// psched ticks per µs as /proc/net/psched reports it (1000 ns/µs over
/// 64 ns/tick): tc's `tick_in_usec`.
const TICK_IN_USEC: f64 = 1000.0 / 64.0;

fn default_probability() -> f64 {
    0.02
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Hard limit of the bfifo in bytes (tc `limit`, required).
    pub limit: Bytes,
    /// Average queue below which nothing is marked (tc `min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Bytes>,
    /// Average queue from which every packet is marked (tc `max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Bytes>,
    /// Average packet size in bytes (tc `avpkt`, required).
    pub avpkt: Bytes,
    /// Packets the average may absorb in a burst (tc `burst`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// max_p, the marking probability at `max` (tc `probability`).
    #[serde(default = "default_probability")]
    pub probability: f64,
    /// Link rate for the idle-decay table (tc `bandwidth`, default 10Mbit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Rate>,
    #[serde(default)]
    pub ecn: bool,
    /// Drop, never mark, when the average is above `max`.
    #[serde(default)]
    pub harddrop: bool,
    /// With `ecn`, queue Not-ECT packets instead of dropping them.
    #[serde(default)]
    pub nodrop: bool,
    /// Adaptive RED: adjust max_p every 500 ms (tc `adaptive`).
    #[serde(default)]
    pub adaptive: bool,
    /// log2(1/W) of the average (derived by tc from burst; Linux `Wlog`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ewma_log: Option<u8>,
    /// Linux `Plog` (derived; only used if probability were 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plog: Option<u8>,
    /// Cell size log of the idle-decay table (derived from bandwidth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scell_log: Option<u8>,
}

/// Everything tc sends the kernel, derived from a [`RedConfig`].
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    pub limit: u32,
    pub qth_min: u32,
    pub qth_max: u32,
    pub burst: u32,
    pub wlog: u8,
    pub plog: u8,
    pub scell_log: u8,
    pub stab: [u8; RED_STAB_SIZE],
    /// max_p with 2^32 ≙ 1 (TCA_RED_MAX_P).
    pub max_p: u32,
}

/// `tc_red_eval_ewma`: the smallest Wlog ≥ 1 with
/// burst + 1 − min/avpkt ≤ (1 − (1 − W)^burst)/W.
pub fn tc_red_eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Result<u8, String> {
    let a = f64::from(burst) + 1.0 - f64::from(qmin) / f64::from(avpkt);
    if a < 1.0 {
        return Err(format!("burst {burst} is too small for min {qmin} and avpkt {avpkt} (tc suggests burst {})", 1 + qmin / avpkt));
    }
    let mut w = 0.5f64;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(format!("no EWMA constant fits burst {burst} (tc: failed to calculate EWMA constant)"))
}

/// `tc_red_eval_P`: Plog with max_p = (max − min)/2^Plog.
pub fn tc_red_eval_p(qmin: u32, qmax: u32, prob: f64) -> Result<u8, String> {
    let d = i64::from(qmax) - i64::from(qmin);
    if d <= 0 {
        return Err(format!("max ({qmax}) must be greater than min ({qmin})"));
    }
    let mut p = prob / d as f64;
    for i in 0..32u8 {
        if p > 1.0 {
            return Ok(i);
        }
        p *= 2.0;
    }
    Err(format!("probability {prob} is too small for max − min = {d} bytes"))
}

/// `tc_calc_xmittime(rate, size)` in psched ticks, truncating twice as tc
/// does (µs to `long`, then ticks to `long`). `rate_bytes` is bytes/s.
fn tc_calc_xmittime(rate_bytes: u32, size: u32) -> u32 {
    let us = (1e6 * (f64::from(size) / f64::from(rate_bytes))) as i64;
    (us as f64 * TICK_IN_USEC) as u32
}

/// `tc_red_eval_idle_damping`: Scell_log and the table
/// Stab[i] = min(31, (i << Scell_log)·(−ln(1 − W))/xmit_time).
pub fn tc_red_eval_idle_damping(wlog: u8, avpkt: u32, rate_bytes: u32) -> Result<(u8, [u8; RED_STAB_SIZE]), String> {
    let lw = idle_weight(wlog, avpkt, rate_bytes);
    let maxtime = 31.0 / lw;
    let clog = (0..32u8).find(|&c| maxtime / f64::from(1u32 << c) < 512.0).ok_or("failed to calculate the idle damping table")?;
    Ok((clog, damping_table(lw, clog)))
}

/// tc's −ln(1 − W) per tick of idle time: the log-decay of qavg while one
/// `avpkt` packet could have been sent.
fn idle_weight(wlog: u8, avpkt: u32, rate_bytes: u32) -> f64 {
    let xmit_time = f64::from(tc_calc_xmittime(rate_bytes, avpkt));
    -(1.0 - 1.0 / f64::from(1u32 << wlog)).ln() / xmit_time
}

/// The idle table for cells of 2^`cell_log` ticks: how many times to apply
/// the EWMA's shift (at most 31; the last entry 31).
fn damping_table(lw: f64, cell_log: u8) -> [u8; RED_STAB_SIZE] {
    let mut stab = [0u8; RED_STAB_SIZE];
    for (i, s) in stab.iter_mut().enumerate().take(255).skip(1) {
        // f64 → u8 saturates (tc's C conversion of a double > 255 is UB;
        // with tc's choice of clog the value stays < 32 anyway).
        *s = ((((i as u64) << cell_log) as f64 * lw).min(255.0) as u8).min(31);
    }
    stab[255] = 31;
    stab
}

impl RedConfig {
    /// tc's derivation (`red_parse_opt`); errors name the parameter.
    pub fn derive(&self) -> Result<RedParams, String> {
        let limit = u32::try_from(self.limit.0).map_err(|_| format!("limit must fit in u32 bytes, got {}", self.limit.0))?;
        if limit == 0 {
            return Err("limit (bytes) is required and must be > 0".into());
        }
        let avpkt = u32::try_from(self.avpkt.0).map_err(|_| "avpkt must fit in u32 bytes".to_string())?;
        if avpkt == 0 {
            return Err("avpkt (bytes) is required and must be > 0".into());
        }
        let fit = |b: Option<Bytes>, k: &str| -> Result<u32, String> {
            b.map_or(Ok(0), |b| u32::try_from(b.0).map_err(|_| format!("{k} must fit in u32 bytes")))
        };
        let (mut qmin, mut qmax) = (fit(self.min, "min")?, fit(self.max, "max")?);
        if qmax == 0 {
            qmax = if qmin != 0 { qmin.saturating_mul(3) } else { limit / 4 };
        }
        if qmin == 0 {
            qmin = qmax / 3;
        }
        let burst = match self.burst {
            Some(b) if b > 0 => b,
            _ => ((2 * u64::from(qmin) + u64::from(qmax)) / (3 * u64::from(avpkt))) as u32,
        };
        if !(self.probability > 0.0 && self.probability <= 1.0) {
            return Err(format!("probability must be in (0, 1], got {}", self.probability));
        }
        let rate = self.bandwidth.unwrap_or(DEFAULT_BANDWIDTH);
        let rate_bytes = u32::try_from(rate.bps() / 8).map_err(|_| format!("bandwidth {rate} is too large for tc (u32 bytes/s)"))?;
        if rate_bytes == 0 {
            return Err("bandwidth must be at least 8bit".into());
        }
        let wlog = match self.ewma_log {
            Some(w) => w,
            None => tc_red_eval_ewma(qmin, burst, avpkt)?,
        };
        let plog = match self.plog {
            Some(p) => p,
            None => tc_red_eval_p(qmin, qmax, self.probability)?,
        };
        let (clog, mut stab) = tc_red_eval_idle_damping(wlog.min(31), avpkt, rate_bytes)?;
        let scell_log = match self.scell_log {
            Some(s) if s != clog && s < 32 => {
                // An explicit cell size: rebuild the table for it.
                stab = damping_table(idle_weight(wlog.min(31), avpkt, rate_bytes), s);
                s
            }
            Some(s) => s,
            None => clog,
        };
        let max_p = if self.probability >= 1.0 { u32::MAX } else { (self.probability * 4_294_967_296.0) as u32 };
        // Linux `red_check_params`.
        let fls = |x: u32| 32 - x.leading_zeros();
        if wlog >= 32 || fls(qmin) + u32::from(wlog) >= 32 || fls(qmax) + u32::from(wlog) >= 32 {
            return Err(format!("min/max ({qmin}/{qmax} B) scaled by 2^ewma_log ({wlog}) must fit in 32 bits"));
        }
        if scell_log >= 32 {
            return Err(format!("scell_log must be < 32, got {scell_log}"));
        }
        if qmax < qmin {
            return Err(format!("max ({qmax}) must not be below min ({qmin})"));
        }
        Ok(RedParams { limit, qth_min: qmin, qth_max: qmax, burst, wlog, plog, scell_log, stab, max_p })
    }

    pub fn validate(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        if self.nodrop && !self.ecn {
            errs.push("nodrop is only meaningful with ecn (as Linux rejects it)".to_string());
        }
        if let Err(e) = self.derive() {
            errs.push(e);
        }
        super::problems(errs)
    }

    /// Fill in what tc derives, for the resolved scenario. Leaves the
    /// config unchanged if it does not derive (validate reports that).
    pub fn resolve(&mut self) {
        let Ok(p) = self.derive() else { return };
        self.min = Some(Bytes(u64::from(p.qth_min)));
        self.max = Some(Bytes(u64::from(p.qth_max)));
        self.burst = Some(p.burst);
        self.bandwidth.get_or_insert(DEFAULT_BANDWIDTH);
        self.ewma_log = Some(p.wlog);
        self.plog = Some(p.plog);
        self.scell_log = Some(p.scell_log);
    }

    /// # Panics
    /// If the configuration does not derive (validate it first).
    pub fn build(&self) -> Red {
        let p = self.derive().expect("validated RED configuration");
        Red::new(&p, self)
    }
}

/// What RED did (Linux `struct red_stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedCounts {
    pub prob_drop: u64,
    pub prob_mark: u64,
    pub forced_drop: u64,
    pub forced_mark: u64,
    /// Drops at the bfifo's byte limit.
    pub pdrop: u64,
    /// Adaptive steps taken (up and down).
    pub adapt_up: u64,
    pub adapt_down: u64,
}

/// `red_action`'s verdict.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    DontMark,
    ProbMark,
    HardMark,
}

pub struct Red {
    q: VecDeque<Packet>,
    bytes: u64,
    limit: u64,
    /// min and max scaled by 2^Wlog.
    qth_min: u64,
    qth_max: u64,
    wlog: u32,
    /// max − min in bytes (≥ 1).
    qth_delta: u32,
    max_p: u32,
    /// max_p / qth_delta: qR = rand32 / this (`max_P_reciprocal`).
    max_p_delta: u32,
    target_min: u32,
    target_max: u32,
    scell_log: u32,
    scell_max: u64,
    stab: [u8; RED_STAB_SIZE],
    ecn: bool,
    harddrop: bool,
    nodrop: bool,
    adaptive: bool,
    /// Average queue in bytes scaled by 2^Wlog.
    qavg: u64,
    /// Packets since the last mark (−1: reset).
    qcount: i64,
    q_r: u32,
    idle_start: Option<SimTime>,
    next_adapt: SimTime,
    counts: RedCounts,
}

impl Red {
    fn new(p: &RedParams, c: &RedConfig) -> Red {
        let delta = (i64::from(p.qth_max) - i64::from(p.qth_min)).max(1) as u32;
        let max_p = if p.max_p == 0 { (u32::MAX >> p.plog.min(31)).wrapping_mul(delta) } else { p.max_p };
        Red {
            q: VecDeque::with_capacity(256),
            bytes: 0,
            limit: u64::from(p.limit),
            qth_min: u64::from(p.qth_min) << p.wlog,
            qth_max: u64::from(p.qth_max) << p.wlog,
            wlog: u32::from(p.wlog),
            qth_delta: delta,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            target_min: p.qth_min + 2 * (delta / 5),
            target_max: p.qth_min + 3 * (delta / 5),
            scell_log: u32::from(p.scell_log),
            scell_max: 255u64 << p.scell_log,
            stab: p.stab,
            ecn: c.ecn,
            harddrop: c.harddrop,
            nodrop: c.nodrop,
            adaptive: c.adaptive,
            qavg: 0,
            qcount: -1,
            q_r: 0,
            // The child is empty at creation: an idle period starts.
            idle_start: Some(SimTime::ZERO),
            next_adapt: SimTime::ZERO + ADAPT_PERIOD,
            counts: RedCounts::default(),
        }
    }

    pub fn counts(&self) -> &RedCounts {
        &self.counts
    }
    /// The average queue in bytes (qavg / 2^Wlog, fractional).
    pub fn avg_bytes(&self) -> f64 {
        self.qavg as f64 / (1u64 << self.wlog) as f64
    }
    /// The raw fixed-point average.
    pub fn qavg_raw(&self) -> u64 {
        self.qavg
    }
    /// max_p as a fraction.
    pub fn max_p(&self) -> f64 {
        f64::from(self.max_p) / 4_294_967_296.0
    }
    /// max_p in Linux's u32 (2^32 ≙ 1).
    pub fn max_p_raw(&self) -> u32 {
        self.max_p
    }

    /// `red_calc_qavg_from_idle_time` at `now`.
    fn qavg_from_idle(&self, start: SimTime, now: SimTime) -> u64 {
        let us_idle = (now.since(start).nanos() / 1000).min(self.scell_max);
        let shift = self.stab[((us_idle >> self.scell_log) as usize) & (RED_STAB_SIZE - 1)];
        if shift != 0 {
            self.qavg >> shift
        } else {
            // (1 − W)^m ≈ 1 − mW for the first cells of the table.
            let d = self.qavg.wrapping_mul(us_idle) >> self.scell_log;
            if d < self.qavg >> 1 {
                self.qavg - d
            } else {
                self.qavg >> 1
            }
        }
    }

    /// `red_calc_qavg` with the current byte backlog.
    fn calc_qavg(&self, now: SimTime) -> u64 {
        match self.idle_start {
            Some(start) => self.qavg_from_idle(start, now),
            // qavg·(1 − W) + backlog·W in fixed point.
            None => self.qavg.wrapping_add(self.bytes).wrapping_sub(self.qavg >> self.wlog),
        }
    }

    /// `red_action` for average `qavg` (fixed point).
    pub fn action(&mut self, qavg: u64, rng: &mut crate::rng::SimRng) -> Action {
        if qavg < self.qth_min {
            self.qcount = -1;
            Action::DontMark
        } else if qavg >= self.qth_max {
            self.qcount = -1;
            Action::HardMark
        } else {
            self.qcount += 1;
            if self.qcount != 0 {
                // red_mark_probability: mark iff (qavg − min)·count ≥ qR.
                let lhs = ((qavg - self.qth_min) >> self.wlog).wrapping_mul(self.qcount as u64);
                if lhs >= u64::from(self.q_r) {
                    self.qcount = 0;
                    self.q_r = rng.next_u32() / self.max_p_delta;
                    return Action::ProbMark;
                }
            } else {
                self.q_r = rng.next_u32() / self.max_p_delta;
            }
            Action::DontMark
        }
    }

    /// `red_adaptative_algo` at time `t`.
    fn adapt(&mut self, t: SimTime) {
        let qavg = match self.idle_start {
            Some(s) => self.qavg_from_idle(s, t),
            None => self.qavg,
        } >> self.wlog;
        if qavg > u64::from(self.target_max) && self.max_p <= MAX_P_MAX {
            self.max_p += MAX_P_MIN.min(self.max_p / 4);
            self.counts.adapt_up += 1;
        } else if qavg < u64::from(self.target_min) && self.max_p >= MAX_P_MIN {
            self.max_p = (self.max_p / 10) * 9;
            self.counts.adapt_down += 1;
        }
        let d = self.qth_delta;
        self.max_p_delta = ((self.max_p + d / 2) / d).max(1);
    }

    /// Run the adaptive timer up to `now`.
    pub fn catch_up(&mut self, now: SimTime) {
        if !self.adaptive {
            return;
        }
        while self.next_adapt <= now {
            let t = self.next_adapt;
            self.adapt(t);
            self.next_adapt += ADAPT_PERIOD;
        }
    }
}

impl Qdisc for Red {
    /// Linux `red_enqueue`.
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut Cx) {
        self.catch_up(cx.now);
        self.qavg = self.calc_qavg(cx.now);
        self.idle_start = None;
        let drop = match self.action(self.qavg, cx.rng) {
            Action::DontMark => false,
            Action::ProbMark => {
                if !self.ecn {
                    true
                } else if cx.mark(&mut pkt) {
                    self.counts.prob_mark += 1;
                    false
                } else {
                    !self.nodrop
                }
            }
            Action::HardMark => {
                if self.harddrop || !self.ecn {
                    self.counts.forced_drop += 1;
                    cx.drop(pkt, DropReason::Aqm);
                    return;
                } else if cx.mark(&mut pkt) {
                    self.counts.forced_mark += 1;
                    false
                } else if !self.nodrop {
                    self.counts.forced_drop += 1;
                    cx.drop(pkt, DropReason::Aqm);
                    return;
                } else {
                    false
                }
            }
        };
        if drop {
            self.counts.prob_drop += 1;
            cx.drop(pkt, DropReason::Aqm);
            return;
        }
        // The bfifo child.
        let len = u64::from(pkt.size);
        if self.bytes + len <= self.limit {
            self.bytes += len;
            self.q.push_back(pkt);
        } else {
            self.counts.pdrop += 1;
            cx.drop(pkt, DropReason::Overlimit);
        }
    }

    /// Linux `red_dequeue`: an empty child starts an idle period.
    fn dequeue(&mut self, cx: &mut Cx) -> Option<Packet> {
        self.catch_up(cx.now);
        match self.q.pop_front() {
            Some(p) => {
                self.bytes -= u64::from(p.size);
                Some(p)
            }
            None => {
                self.idle_start.get_or_insert(cx.now);
                None
            }
        }
    }

    fn len(&self) -> usize {
        self.q.len()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    /// `base`: p_b = max_p·(qavg − min)/(max − min) for the last computed
    /// average (0 below min, 1 at or above max, where every packet is
    /// marked).
    fn probe(&mut self, now: SimTime) -> QdiscProbe {
        self.catch_up(now);
        let base = if self.qavg < self.qth_min {
            0.0
        } else if self.qavg >= self.qth_max {
            1.0
        } else {
            self.max_p() * (self.qavg - self.qth_min) as f64 / (self.qth_max - self.qth_min) as f64
        };
        QdiscProbe { base, ..QdiscProbe::NONE }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;
    use crate::qdisc::testing::{pkt, Harness};
    use crate::rng::SimRng;

    fn cfg(text: &str) -> RedConfig {
        toml::from_str(text).unwrap()
    }

    fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    /// The reports' `red limit 400000 avpkt 1000 adaptive bandwidth 50Mbit
    /// ecn` and `red limit 150000 …`, derived as tc does.
    #[test]
    fn tc_derivation_of_the_reports_configurations() {
        let c = cfg("limit = 400000\navpkt = 1000\nadaptive = true\nbandwidth = \"50Mbit\"\necn = true");
        let p = c.derive().unwrap();
        assert_eq!((p.qth_min, p.qth_max, p.burst, p.wlog), (33333, 100000, 55, 5));
        assert_eq!(p.max_p, 85_899_345, "0.02 · 2^32");
        assert_eq!(p.plog, 22);
        // 1000 B at 50 Mbit/s = 160 µs = 2500 ticks; lW = −ln(31/32)/2500;
        // 31/lW ≈ 2.44e6 ⇒ cell log 13.
        assert_eq!(p.scell_log, 13);
        assert_eq!(&p.stab[..4], &[0, 0, 0, 0]);
        assert_eq!((p.stab[10], p.stab[12], p.stab[20], p.stab[255]), (1, 1, 2, 31));
        let q = c.build();
        assert!((q.max_p() - 0.02).abs() < 1e-9);

        let c = cfg("limit = 150000\navpkt = 1000\nadaptive = true\nbandwidth = \"50Mbit\"\necn = true");
        let p = c.derive().unwrap();
        assert_eq!((p.qth_min, p.qth_max, p.burst, p.wlog, p.max_p), (12500, 37500, 20, 4, 85_899_345));

        // min alone ⇒ max = 3·min; max alone ⇒ min = max/3; default 10Mbit.
        let p = cfg("limit = 400000\navpkt = 1000\nmin = 20000").derive().unwrap();
        assert_eq!((p.qth_min, p.qth_max), (20000, 60000));
        let p = cfg("limit = 400000\navpkt = 1000\nmax = 90000").derive().unwrap();
        assert_eq!((p.qth_min, p.qth_max), (30000, 90000));
        let mut r = cfg("limit = 400000\navpkt = 1000");
        r.resolve();
        assert_eq!(r.bandwidth, Some(Rate(10_000_000)));
        assert_eq!((r.min, r.max, r.burst, r.ewma_log), (Some(Bytes(33333)), Some(Bytes(100000)), Some(55), Some(5)));
        // 800 µs = 12500 ticks at 10 Mbit/s ⇒ a cell log 5·log2 larger.
        assert_eq!(r.scell_log, Some(15));
        // The resolved form derives to the same parameters.
        assert_eq!(r.derive().unwrap(), cfg("limit = 400000\navpkt = 1000").derive().unwrap());
    }

    /// include/net/red.h's "Upper bound on W" table for th_min/S = 32: the
    /// longest burst L each Wlog admits. Rows −4…−7 are exact for
    /// `tc_red_eval_ewma` (the table's other rows are rounded in the header).
    #[test]
    fn ewma_log_admits_the_bursts_of_red_h_table() {
        for (wlog, l) in [(4u8, 46u32), (5, 57), (6, 75), (7, 101)] {
            assert_eq!(tc_red_eval_ewma(32_000, l, 1000).unwrap(), wlog, "L = {l}");
            assert_eq!(tc_red_eval_ewma(32_000, l + 1, 1000).unwrap(), wlog + 1, "L = {}", l + 1);
        }
        // tc's xmit time is in 64-ns ticks: 160 µs → 2500, 800 µs → 12500.
        assert_eq!(tc_calc_xmittime(50_000_000 / 8, 1000), 2500);
        assert_eq!(tc_calc_xmittime(10_000_000 / 8, 1000), 12500);
    }

    #[test]
    fn bad_values_are_reported() {
        assert!(toml::from_str::<RedConfig>("avpkt = 1000").unwrap_err().to_string().contains("limit"));
        assert!(toml::from_str::<RedConfig>("limit = 1000\navpkt = 1000\nwlog = 3").is_err(), "unknown key");
        let e = cfg("limit = 400000\navpkt = 1000\nmin = 50000\nmax = 40000\nburst = 100").validate().unwrap_err();
        assert!(e.contains("max"), "{e}");
        let e = cfg("limit = 400000\navpkt = 1000\nnodrop = true\nprobability = 1.5").validate().unwrap_err();
        assert!(e.contains("nodrop") && e.contains("probability"), "{e}");
        let e = cfg("limit = 400000\navpkt = 1000\nburst = 1").validate().unwrap_err();
        assert!(e.contains("burst"), "{e}");
    }

    /// qavg ← qavg + backlog − qavg/2^Wlog on each arrival, in Linux's
    /// fixed point; ≈ B·(1 − (1 − W)^n) after n arrivals at backlog B.
    #[test]
    fn average_queue_is_linux_fixed_point_ewma() {
        let mut h = Harness::new();
        let mut q = cfg("limit = 4000000\navpkt = 1000\nmin = 1000000\nmax = 3000000\newma_log = 9").build();
        let w = q.wlog;
        assert_eq!(w, 9);
        let mut want: u64 = 0;
        for n in 0..600u64 {
            let backlog = q.bytes();
            h.enq(&mut q, ms(1), pkt(1, Ecn::NotEct));
            // The first arrival ends the initial idle period (qavg stays 0).
            want = if n == 0 { 0 } else { want + backlog - (want >> w) };
            assert_eq!(q.qavg_raw(), want, "arrival {n}");
        }
        // Backlog grew linearly, 1514 B per arrival: compare with the
        // floating-point EWMA of the same input.
        let wf = 1.0 / f64::from(1u32 << w);
        let mut avg = 0.0;
        for n in 1..600u64 {
            avg = avg * (1.0 - wf) + (n * 1514) as f64 * wf;
        }
        assert!((q.avg_bytes() - avg).abs() / avg < 1e-3, "{} vs {avg}", q.avg_bytes());
        assert_eq!(h.stats.drops(), 0, "average still below min");
    }

    /// Floyd's count method: at a fixed average between min and max the
    /// gap between marks is uniform on [1, 1/p_b] (p_a = p_b/(1 − count·p_b)),
    /// so the mean gap is ≈ (1/p_b + 1)/2 and no gap exceeds 1/p_b + 1; p_b
    /// ramps linearly from 0 at min to max_p at max.
    #[test]
    fn mark_spacing_follows_the_count_method_and_p_ramps_linearly() {
        for seed in 1..=5u64 {
            let mut rng = SimRng::for_component(seed, "red");
            let mut q = cfg("limit = 400000\navpkt = 1000\nbandwidth = \"50Mbit\"").build();
            let (min, max) = (33333u64, 100000u64);
            for frac in [0.25, 0.5, 0.75] {
                let avg = min + ((max - min) as f64 * frac) as u64;
                let pb = 0.02 * (avg - min) as f64 / (max - min) as f64;
                let qavg = avg << q.wlog;
                let (mut gaps, mut last) = (Vec::new(), 0u64);
                q.qcount = -1;
                for i in 1..=300_000u64 {
                    if q.action(qavg, &mut rng) == Action::ProbMark {
                        gaps.push(i - last);
                        last = i;
                    }
                }
                let gaps = &gaps[1..]; // the first gap starts mid-count
                let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
                let want = (1.0 / pb + 1.0) / 2.0;
                assert!((mean - want).abs() / want < 0.03, "seed {seed} frac {frac}: mean gap {mean}, want {want}");
                let longest = *gaps.iter().max().unwrap() as f64;
                assert!(longest <= 1.0 / pb + 1.0, "seed {seed}: gap {longest} > 1/p_b");
                // Uniform, not geometric: about half the gaps are below the middle.
                let below = gaps.iter().filter(|&&g| (g as f64) < want).count() as f64 / gaps.len() as f64;
                assert!((below - 0.5).abs() < 0.05, "seed {seed}: {below}");
            }
            // Below min: never; at max and above: always (hard).
            assert_eq!(q.action((min - 1) << q.wlog, &mut rng), Action::DontMark);
            assert_eq!(q.action(max << q.wlog, &mut rng), Action::HardMark);
        }
    }

    #[test]
    fn ecn_harddrop_and_nodrop_decide_mark_or_drop() {
        // Force the average above max with a standing backlog, then check
        // the hard-mark action on ECT and Not-ECT arrivals.
        let run = |extra: &str| {
            let mut h = Harness::new();
            let mut q = cfg(&format!("limit = 1000000\navpkt = 1000\nmin = 3000\nmax = 9000\nburst = 4\n{extra}")).build();
            for _ in 0..40 {
                h.enq(&mut q, ms(0), pkt(1, Ecn::Ect0));
            }
            let (d0, m0) = (h.stats.drops(), h.stats.marks);
            h.enq(&mut q, ms(0), pkt(1, Ecn::Ect0));
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
            (h.stats.drops() - d0, h.stats.marks - m0, q.counts().clone())
        };
        let (d, m, _) = run("");
        assert_eq!((d, m), (2, 0), "without ecn both are dropped");
        let (d, m, c) = run("ecn = true");
        assert_eq!((d, m), (1, 1), "ECT marked, Not-ECT dropped");
        assert!(c.forced_mark > 0);
        let (d, m, _) = run("ecn = true\nharddrop = true");
        assert_eq!((d, m), (2, 0), "harddrop drops above max");
        let (d, m, _) = run("ecn = true\nnodrop = true");
        assert_eq!((d, m), (0, 1), "nodrop queues Not-ECT");
    }

    #[test]
    fn idle_period_decays_the_average_by_the_table() {
        let c = cfg("limit = 400000\navpkt = 1000\nbandwidth = \"50Mbit\"");
        let p = c.derive().unwrap();
        let mut h = Harness::new();
        let mut q = c.build();
        for _ in 0..60 {
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        }
        while h.deq(&mut q, ms(1)).is_some() {}
        assert!(h.deq(&mut q, ms(1)).is_none(), "idle from 1 ms");
        let before = q.qavg_raw();
        // Idle 1 ms = 1000 µs: cell 1000 >> 13 = 0, Stab[0] = 0 ⇒ the linear
        // branch qavg − (qavg·1000 >> 13).
        let mut q1 = c.build();
        q1.qavg = before;
        q1.idle_start = Some(ms(1));
        h.enq(&mut q1, ms(2), pkt(1, Ecn::NotEct));
        assert_eq!(q1.qavg_raw(), before - ((before * 1000) >> 13));
        // Idle 100 ms: cell 12, Stab[12] = 1 ⇒ halved.
        assert_eq!(p.stab[100_000 >> 13], 1);
        h.enq(&mut q, ms(101), pkt(1, Ecn::NotEct));
        assert_eq!(q.qavg_raw(), before >> 1);
        // Idle 1 s (capped at 255 cells): Stab[122] = 12 ⇒ qavg >> 12.
        let mut q2 = c.build();
        q2.qavg = before;
        q2.idle_start = Some(ms(0));
        h.enq(&mut q2, ms(1000), pkt(1, Ecn::NotEct));
        assert_eq!(q2.qavg_raw(), before >> p.stab[1_000_000 >> 13]);
        assert_eq!(p.stab[1_000_000 >> 13], 12);
    }

    /// `red_adaptative_algo` every 500 ms: above the band max_p grows by
    /// min(1 %, max_p/4) while ≤ 50 %; below it shrinks ×0.9 while ≥ 1 %.
    #[test]
    fn adaptive_max_p_steps_every_500ms_toward_the_band() {
        let mut q = cfg("limit = 400000\navpkt = 1000\nadaptive = true\nbandwidth = \"50Mbit\"\necn = true").build();
        // Band: [33333 + 2·13333, 33333 + 3·13333] = [59999, 73332].
        assert_eq!((q.target_min, q.target_max), (59999, 73332));
        q.idle_start = None;
        q.qavg = 90_000 << q.wlog;
        let mut want = q.max_p_raw();
        let mut ups = 0;
        for k in 1..=60u64 {
            q.catch_up(SimTime(ms(500 * k).0 - 1));
            assert_eq!(q.max_p_raw(), want, "no step before {} ms", 500 * k);
            q.catch_up(ms(500 * k));
            if want <= MAX_P_MAX {
                want += MAX_P_MIN.min(want / 4);
                ups += 1;
            }
            assert_eq!(q.max_p_raw(), want, "step {k}");
        }
        // 0.02 → 0.025 → 0.03125 → 0.0390625 → 0.048828… then +1 % a step,
        // stopping once above 50 %.
        assert!(q.max_p() > 0.5 && q.max_p() < 0.52, "{}", q.max_p());
        assert_eq!(q.counts().adapt_up, ups);
        // Below the band: ×0.9 (integer (max_p/10)·9) down to < 1 %.
        q.qavg = 40_000 << q.wlog;
        let mut t = 60 * 500;
        let mut steps = 0;
        loop {
            let before = q.max_p_raw();
            t += 500;
            q.catch_up(ms(t));
            if before < MAX_P_MIN {
                assert_eq!(q.max_p_raw(), before, "stops below 1 %");
                break;
            }
            assert_eq!(q.max_p_raw(), (before / 10) * 9);
            steps += 1;
        }
        assert!(steps > 30, "{steps}");
        // Inside the band: unchanged.
        q.qavg = 65_000 << q.wlog;
        let before = q.max_p_raw();
        q.catch_up(ms(t + 5000));
        assert_eq!(q.max_p_raw(), before);
        // qR follows the new max_p: rand / round(max_p / Δ).
        assert_eq!(q.max_p_delta, ((before + 66667 / 2) / 66667).max(1));
    }

    #[test]
    fn burst_zero_is_derived_and_an_explicit_cell_log_rebuilds_the_table() {
        let base = "limit = 400000\navpkt = 1000\nbandwidth = \"50Mbit\"";
        let d = cfg(base).derive().unwrap();
        assert_eq!(cfg(&format!("{base}\nburst = 0")).derive().unwrap(), d, "tc's `burst 0`: derived");
        assert_eq!(cfg(&format!("{base}\nscell_log = {}", d.scell_log)).derive().unwrap(), d);
        // One above tc's cell log: cells twice as long, so entry i is tc's entry 2i.
        let p = cfg(&format!("{base}\nscell_log = {}", d.scell_log + 1)).derive().unwrap();
        assert_eq!(p.scell_log, d.scell_log + 1);
        assert_ne!(p.stab, d.stab);
        for i in 1..128 {
            assert_eq!(p.stab[i], d.stab[2 * i], "entry {i}");
        }
    }

    #[test]
    fn thresholds_are_checked_as_red_check_params() {
        let fixed = "limit = 4000000000\navpkt = 1000\nburst = 100\newma_log = 2\nplog = 20";
        let e = cfg(&format!("{fixed}\nmin = 50000\nmax = 40000")).derive().unwrap_err();
        assert!(e.contains("must not be below min"), "{e}");
        // min alone too large for the shift (max fits, though below it): the shift check speaks first.
        let e = cfg(&format!("{fixed}\nmin = 1073741824\nmax = 1000")).derive().unwrap_err();
        assert!(e.contains("must fit in 32 bits"), "{e}");
    }

    /// 2000 arrivals of `ecn` packets over a standing backlog of 4–5 packets
    /// (one leaves per arrival kept), which holds the average inside min 3000 / max 9000 B.
    fn hold_in_band(h: &mut Harness, q: &mut Red, ecn: Ecn) {
        for _ in 0..2000 {
            h.enq(q, ms(0), pkt(1, ecn));
            if q.len() > 4 {
                h.deq(q, ms(0));
            }
        }
        assert!(q.qavg > q.qth_min && q.qavg < q.qth_max);
    }

    #[test]
    fn without_ecn_probabilistic_marks_are_drops_even_for_ect() {
        let mut h = Harness::new();
        let mut q = cfg("limit = 1000000\navpkt = 1000\nmin = 3000\nmax = 9000\nburst = 4\nprobability = 0.5").build();
        hold_in_band(&mut h, &mut q, Ecn::Ect0);
        assert!(q.counts().prob_drop > 100, "{:?}", q.counts());
        assert_eq!((h.stats.marks, q.counts().prob_mark), (0, 0));
        // Bytes follow the packets out.
        let n = q.len() as u64;
        assert_eq!(q.bytes(), n * 1514);
        h.deq(&mut q, ms(0));
        assert_eq!(q.bytes(), (n - 1) * 1514);
    }

    #[test]
    fn with_ecn_a_not_ect_packet_is_dropped_unless_nodrop() {
        for (nodrop, dropped) in [(false, true), (true, false)] {
            let mut h = Harness::new();
            let text = format!("limit = 1000000\navpkt = 1000\nmin = 3000\nmax = 9000\nburst = 4\nprobability = 0.5\necn = true\nnodrop = {nodrop}");
            let mut q = cfg(&text).build();
            hold_in_band(&mut h, &mut q, Ecn::NotEct);
            assert_eq!(h.stats.drops() > 100, dropped, "nodrop {nodrop}: {}", h.stats.drops());
        }
    }

    #[test]
    fn probe_reports_the_linear_probability_inside_the_band() {
        let mut q = cfg("limit = 400000\navpkt = 1000").build();
        q.idle_start = None;
        for frac in [0.0, 0.25, 0.5, 0.75] {
            q.qavg = q.qth_min + ((q.qth_max - q.qth_min) as f64 * frac) as u64;
            let got = q.probe(ms(0)).base;
            assert!((got - q.max_p() * frac).abs() < 1e-9, "{frac}: {got}");
        }
        q.qavg = q.qth_min - 1;
        assert_eq!(q.probe(ms(0)).base, 0.0);
        q.qavg = q.qth_max;
        assert_eq!(q.probe(ms(0)).base, 1.0);
    }

    #[test]
    fn leaving_the_band_restarts_the_count() {
        let mut q = cfg("limit = 400000\navpkt = 1000").build();
        let mut rng = SimRng::for_component(1, "red");
        let mid = q.qth_min + (q.qth_max - q.qth_min) / 2;
        for outside in [0, q.qth_max] {
            q.action(mid, &mut rng);
            q.action(outside, &mut rng);
            assert_eq!(q.qcount, -1);
            q.action(mid, &mut rng);
            assert_eq!(q.qcount, 0, "the first packet back in the band draws a new qR");
        }
    }

    #[test]
    fn adaptation_leaves_max_p_alone_at_the_bands_edges() {
        let mut q = cfg("limit = 400000\navpkt = 1000\nadaptive = true\nbandwidth = \"50Mbit\"\necn = true").build();
        q.idle_start = None;
        let before = q.max_p_raw();
        for (k, edge) in [(1, q.target_min), (2, q.target_max)] {
            q.qavg = u64::from(edge) << q.wlog;
            q.catch_up(ms(500 * k));
            assert_eq!(q.max_p_raw(), before, "qavg at {edge}");
        }
        assert_eq!((q.counts().adapt_up, q.counts().adapt_down), (0, 0));
        // Just inside either edge: the step is taken (so the clock above did run).
        for (k, qavg) in [(3, q.target_min - 1), (4, q.target_max + 1)] {
            q.qavg = u64::from(qavg) << q.wlog;
            q.catch_up(ms(500 * k));
        }
        assert_eq!((q.counts().adapt_up, q.counts().adapt_down), (1, 1));
    }

    #[test]
    fn byte_limit_tail_drops_and_conserves() {
        let mut h = Harness::new();
        let mut q = cfg("limit = 5000\navpkt = 1000\nmin = 100000\nmax = 300000").build();
        for _ in 0..5 {
            h.enq(&mut q, ms(0), pkt(1, Ecn::NotEct));
        }
        assert_eq!((q.len(), h.stats.drops_overlimit, q.counts().pdrop), (3, 2, 2));
        let mut n = 0;
        while h.deq(&mut q, ms(1)).is_some() {
            n += 1;
        }
        assert_eq!((n, q.bytes()), (3, 0));
    }
}
