//! Media sender: the SCReAM BW test tool's sender loop (scream:
//! code/scream_sender.cpp → `scream_bw_test_tx`, at c8f84c3), sans-IO. A frame timer drives the encoder model
//! ([`Encoder`]); frames are packetized into an RTP queue (RFC 3550: one
//! sequence number per packet, 90 kHz timestamp of the frame time, marker
//! on a frame's last packet); packets leave through SCReAM's send gate and
//! a pacer; RFC 8888 reports go to the controller.
//!
//! Per frame tick (every 1/fps while active): target =
//! `target_bitrate(now)` (`None` = SCReAM's −1 refresh → an empty frame,
//! nothing sent, `on_new_frame` not called, as the tool calls
//! `newMediaFrame` once per queued packet); otherwise the frame's packets
//! are queued and `on_new_frame(now, frame RTP bytes, queue RTP bytes,
//! queue delay)` is called once.
//!
//! RTP queue (§5, code/RtpQueue.cpp, `isOkToTransmit`): a FIFO. When its
//! oldest packet is `max_rtp_queue_delay` old the whole queue is flushed —
//! at most once per 0.25 s — and `on_rtp_queue_discard` is called. The
//! check runs at every event and on its own deadline timer, like the
//! tool's transmit thread which polls the gate continuously.
//!
//! Transmission: while the queue is non-empty, the pacer allows it and
//! `ok_to_transmit(size)` is true, the head packet is sent (`on_transmit`
//! with size = RTP header + payload; the wire packet is payload +
//! [`RTP_OVERHEAD`]). A pace interval is 8·rtp_bytes/pacing_rate, read
//! after `on_transmit` (the tool uses `addTransmitted`'s return value).
//! - `PacingMode::Microburst` (the tool): packets go back-to-back while the
//!   sum of their pace intervals stays within `microburst_interval`; the
//!   packet that takes the sum past it is still sent, then the sender
//!   sleeps and resets the sum: for the summed paced time if it exceeds
//!   1.1 × the interval (one packet at a low rate), else for the interval.
//!   The tool asks `usleep` for that time less 100 µs (at least 10 µs)
//!   and runs again `wakeup` later than asked (Linux's timer slack, the
//!   wake-up and its loop: 68 µs under `ccbench emulate`, where `usleep`
//!   overshoots by 65.7 µs), so the gap between bursts is 28 µs shorter
//!   than the sleep, as measured; a burst's packets leave `send_gap` apart
//!   (one `sendto` each, 3.7 µs measured).
//!   The sum is not reset when the queue runs empty (as in the tool), so a
//!   frame's first burst may be shorter.
//! - `PacingMode::Library`: each packet waits until the previous one's send
//!   time + its pace interval (`isOkToTransmit`'s positive wait honoured).
//! - `pacing = false` (`-nopace`): only the gate.
//!
//! If the gate says no, the sender waits for feedback (no timer); it also
//! retries at every frame tick. Known issue #13: without RTCP feedback
//! nothing is sent and self-clocking stalls. What breaks the stall is
//! ScreamTx's 0.5 s deadlock guard (bytes in flight reset when nothing was
//! sent for 0.5 s), which ScreamTx evaluates on the calls the sender makes
//! every frame (`target_bitrate`, `on_new_frame`); meanwhile the RTP queue
//! is bounded in time by the discard rule, so it never grows without bound.
//!
//! Units: time in ns ([`SimTime`]/[`Dur`]), rates in bit/s (f64 only at the
//! controller boundary, converted in [`pace_interval`]), sizes in bytes.
//! Deviations: the queue is unbounded in packets (the C++ ring holds 1024,
//! drop-tail); it starts with room for 1024, so steady state does not
//! allocate. After `stop()` no more frames are made but queued packets
//! still drain.
//!
//! Stats: `tx_rate_bps` is RTP bytes (header + payload, comparable with
//! `target_bps`) sent over the last completed window of ≥ 100 ms (windows
//! close lazily at events; SCReAM's rate estimators use 100 ms too);
//! `rtp_queue_delay` is the oldest queued packet's age as of the last event
//! (what SCReAM is told at each frame); `rtp_wait_total` sums, over the
//! packets sent, how long each waited in the queue. A packet leaves with
//! `enq_at` = when it was queued, so the simulator can record every
//! packet's wait: sampling the oldest age instead reads 0 whenever the
//! samples fall on frame ticks after the previous frame drained (every
//! 100 ms sample at 50 fps).

use std::collections::VecDeque;

use super::encoder::Encoder;
use super::rfc8888::Report;
use super::scream::{ScreamState, ScreamTx};
use super::{MediaConfig, PacingMode, RTP_OVERHEAD};
use crate::packet::{Ecn, Header, Packet, Rtp};
use crate::rng::SimRng;
use crate::units::{Dur, SimTime};

/// RTP fixed header bytes (RFC 3550 §5.1).
const RTP_HDR: u32 = 12;
/// Minimum time between two RTP-queue flushes (ScreamV2TxStream: 0.25 s).
const DISCARD_HOLDOFF: Dur = Dur::from_millis(250);
/// The tool asks `usleep` for a burst's sleep less this (scream_sender.cpp
/// `transmitRtpThread`: `diff = 100`), and for at least MIN_SLEEP.
const SLEEP_COMPENSATION: Dur = Dur::from_micros(100);
const MIN_SLEEP: Dur = Dur::from_micros(10);
/// Transmit-rate measurement window.
const RATE_WINDOW: Dur = Dur::from_millis(100);
/// Initial RTP queue capacity, packets (the C++ ring size).
const QUEUE_CAPACITY: usize = 1024;
/// RTP media clock (90 kHz for video, RFC 3551 §5 / RFC 6184).
const RTP_CLOCK_HZ: u128 = 90_000;

/// What the metrics record about a media sender (units in the names).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct MediaStats {
    pub target_bps: f64,
    pub tx_rate_bps: f64,
    pub rtp_queue_delay: Dur,
    /// Sum over the packets sent of the time each waited in the RTP queue
    /// (from its frame's tick to its transmission); with `packets_sent`,
    /// the mean wait over any span.
    pub rtp_wait_total: Dur,
    pub qdelay: Dur,
    pub srtt: Dur,
    pub cwnd_bytes: u64,
    pub bytes_in_flight: u64,
    /// CE-marked share of the packets newly acknowledged (last update).
    pub ce_fraction: f64,
    pub alpha: f64,
    pub packets_sent: u64,
    pub rtp_bytes_sent: u64,
    pub packets_lost: u64,
    pub frames: u64,
    pub rtp_discards: u64,
}

/// The congestion controller as the sender uses it: exactly [`ScreamTx`]'s
/// public API, so tests can substitute a scripted controller.
pub trait MediaCc {
    fn on_transmit(&mut self, now: SimTime, seq: u32, size: u32, rtp_ts: u32, marker: bool);
    fn on_feedback(&mut self, now: SimTime, report: &Report);
    fn ok_to_transmit(&self, size: u32) -> bool;
    fn pacing_rate_bps(&self) -> f64;
    fn on_new_frame(&mut self, now: SimTime, frame_bytes: u32, rtp_queue_bytes: u64, rtp_queue_delay: Dur);
    fn on_rtp_queue_discard(&mut self, now: SimTime);
    fn target_bitrate(&mut self, now: SimTime) -> Option<f64>;
    fn state(&self) -> ScreamState;
    /// Heap the controller's per-packet records hold (the memory guard
    /// counts them).
    fn held_bytes(&self) -> u64 {
        0
    }
}

impl MediaCc for ScreamTx {
    fn on_transmit(&mut self, now: SimTime, seq: u32, size: u32, rtp_ts: u32, marker: bool) {
        ScreamTx::on_transmit(self, now, seq, size, rtp_ts, marker)
    }
    fn on_feedback(&mut self, now: SimTime, report: &Report) {
        ScreamTx::on_feedback(self, now, report)
    }
    fn ok_to_transmit(&self, size: u32) -> bool {
        ScreamTx::ok_to_transmit(self, size)
    }
    fn pacing_rate_bps(&self) -> f64 {
        ScreamTx::pacing_rate_bps(self)
    }
    fn on_new_frame(&mut self, now: SimTime, frame_bytes: u32, rtp_queue_bytes: u64, rtp_queue_delay: Dur) {
        ScreamTx::on_new_frame(self, now, frame_bytes, rtp_queue_bytes, rtp_queue_delay)
    }
    fn on_rtp_queue_discard(&mut self, now: SimTime) {
        ScreamTx::on_rtp_queue_discard(self, now)
    }
    fn target_bitrate(&mut self, now: SimTime) -> Option<f64> {
        ScreamTx::target_bitrate(self, now)
    }
    fn state(&self) -> ScreamState {
        ScreamTx::state(self)
    }
    fn held_bytes(&self) -> u64 {
        ScreamTx::held_bytes(self)
    }
}

/// Pace interval of an RTP packet: 8·rtp_bytes / rate, rounded to the
/// nearest ns; zero when the rate is not positive (no pacing).
pub fn pace_interval(rtp_bytes: u32, rate_bps: f64) -> Dur {
    if rate_bps > 0.0 && rate_bps.is_finite() {
        Dur::from_secs_f64(8.0 * f64::from(rtp_bytes) / rate_bps)
    } else {
        Dur::ZERO
    }
}

/// RTP timestamp (90 kHz, wrapping) of simulated time `t`.
pub fn rtp_ts(t: SimTime) -> u32 {
    (u128::from(t.0) * RTP_CLOCK_HZ / 1_000_000_000) as u32
}

/// A packet waiting in the RTP queue.
#[derive(Copy, Clone, Debug)]
struct Queued {
    seq: u32,
    ts: u32,
    marker: bool,
    /// RTP header + payload.
    rtp_bytes: u32,
    enq_at: SimTime,
}

pub struct MediaSender<C: MediaCc = ScreamTx> {
    cc: C,
    enc: Encoder,
    ect: Ecn,
    /// Template for outgoing packets (flow, tuple, DSCP, direction).
    tmpl: Packet,
    /// `None` = `-nopace`.
    pacing: Option<PacingMode>,
    microburst_interval: Dur,
    wakeup: Dur,
    send_gap: Dur,
    max_rtp_queue_delay: Dur,
    frame_period: Dur,
    active: bool,
    /// Frame k is due at `frame_base + k·frame_period` (no drift).
    frame_base: SimTime,
    frame_k: u64,
    next_frame: SimTime,
    /// Next RTP sequence number (extended).
    seq: u32,
    queue: VecDeque<Queued>,
    /// RTP bytes queued.
    queue_bytes: u64,
    /// Earliest time the pacer releases the next packet.
    next_send: SimTime,
    /// The last send attempt stopped only because of the pacer.
    pace_blocked: bool,
    /// Microburst: summed pace intervals of the current burst.
    burst_sum: Dur,
    last_discard: Option<SimTime>,
    discarded_packets: u64,
    rate_start: SimTime,
    rate_bytes: u64,
    stats: MediaStats,
}

impl MediaSender<ScreamTx> {
    /// A sender with SCReAM; `ect` = ECT(1) selects L4S mode (the tool's
    /// `-ect 1`).
    pub fn new(cfg: &MediaConfig, ect: Ecn, tmpl: Packet, rng: SimRng, now: SimTime) -> Self {
        let cc = ScreamTx::new(cfg, ect == Ecn::Ect1, now);
        MediaSender::with_controller(cfg, cc, ect, tmpl, rng, now)
    }
}

impl<C: MediaCc> MediaSender<C> {
    /// A sender around any controller with SCReAM's API.
    pub fn with_controller(cfg: &MediaConfig, cc: C, ect: Ecn, tmpl: Packet, rng: SimRng, now: SimTime) -> Self {
        MediaSender {
            cc,
            enc: Encoder::new(cfg.fps, cfg.rand, cfg.mtu, rng),
            ect,
            tmpl,
            pacing: cfg.pacing.then_some(cfg.pacing_mode),
            microburst_interval: cfg.microburst_interval,
            wakeup: cfg.wakeup,
            send_gap: cfg.send_gap,
            max_rtp_queue_delay: cfg.max_rtp_queue_delay,
            frame_period: Dur::from_secs_f64(1.0 / cfg.fps),
            active: false,
            frame_base: now,
            frame_k: 0,
            next_frame: SimTime::NEVER,
            seq: 0,
            queue: VecDeque::with_capacity(QUEUE_CAPACITY),
            queue_bytes: 0,
            next_send: SimTime::ZERO,
            pace_blocked: false,
            burst_sum: Dur::ZERO,
            last_discard: None,
            discarded_packets: 0,
            rate_start: now,
            rate_bytes: 0,
            stats: MediaStats::default(),
        }
    }

    /// Heap what grows with the traffic holds: the RTP queue (frames that
    /// come faster than the window lets them out) and the controller's
    /// records of packets in flight. Counted by the memory guard, rings by
    /// capacity: a ring buffer in steady use touches all of it.
    pub fn held_bytes(&self) -> u64 {
        (self.queue.capacity() * std::mem::size_of::<Queued>()) as u64 + self.cc.held_bytes()
    }

    /// The controller (for metrics and tests).
    pub fn cc(&self) -> &C {
        &self.cc
    }

    /// The application starts: the first frame is made now.
    pub fn start(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.active = true;
        self.frame_base = now;
        self.frame_k = 0;
        self.next_frame = now;
        self.on_timer(now, out);
    }

    /// The application stops making frames (queued packets still go).
    pub fn stop(&mut self) {
        self.active = false;
        self.next_frame = SimTime::NEVER;
    }

    /// A timer fired: frame tick, pacer release or queue-discard deadline.
    pub fn on_timer(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        while self.active && self.next_frame <= now {
            let frame_time = self.next_frame;
            self.on_frame(now, frame_time);
            self.frame_k += 1;
            self.next_frame = self.frame_base + self.frame_period * self.frame_k;
        }
        self.try_send(now, out);
        self.refresh_stats(now);
    }

    /// An RFC 8888 report arrived.
    pub fn on_feedback(&mut self, report: &Report, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.cc.on_feedback(now, report);
        self.try_send(now, out);
        self.refresh_stats(now);
    }

    /// Earliest time this sender needs waking: the next frame, the pacer's
    /// release (only if it is what holds a packet back) and the RTP-queue
    /// discard deadline (while packets are queued).
    pub fn next_timer(&self) -> SimTime {
        let mut t = self.next_frame;
        if let Some(head) = self.queue.front() {
            if self.pace_blocked {
                t = t.min(self.next_send);
            }
            t = t.min(self.discard_deadline(head));
        }
        t
    }

    pub fn stats(&self) -> MediaStats {
        let s = self.cc.state();
        MediaStats {
            qdelay: s.qdelay,
            srtt: s.srtt,
            cwnd_bytes: s.cwnd,
            bytes_in_flight: s.bytes_in_flight,
            ce_fraction: s.ce_fraction,
            alpha: s.alpha,
            packets_lost: s.packets_lost,
            ..self.stats
        }
    }

    /// RTP bytes (header + payload) of a full-size packet: the unit for
    /// expressing SCReAM's byte window in packets.
    pub fn packet_bytes(&self) -> u32 {
        self.enc.mtu() + RTP_HDR
    }

    /// The rate the pacer uses, bit/s (0 with `-nopace`).
    pub fn pacing_rate_bps(&self) -> f64 {
        if self.pacing.is_some() {
            self.cc.pacing_rate_bps()
        } else {
            0.0
        }
    }

    /// Packets thrown away by RTP-queue flushes.
    pub fn discarded_packets(&self) -> u64 {
        self.discarded_packets
    }

    /// Packets and RTP bytes waiting in the RTP queue.
    pub fn rtp_queue_len(&self) -> (usize, u64) {
        (self.queue.len(), self.queue_bytes)
    }

    /// One frame tick (scheduled at `frame_time`, handled at `now`).
    fn on_frame(&mut self, now: SimTime, frame_time: SimTime) {
        self.check_discard(now);
        let target = self.cc.target_bitrate(now);
        if let Some(t) = target {
            self.stats.target_bps = t;
        }
        let bytes = self.enc.frame(target);
        self.stats.frames += 1;
        if bytes == 0 {
            return; // refresh or zero target: nothing to send this tick
        }
        let ts = rtp_ts(frame_time);
        let mut frame_rtp_bytes = 0u32;
        for (payload, marker) in self.enc.packetize(bytes) {
            let rtp_bytes = payload + RTP_HDR;
            self.queue.push_back(Queued { seq: self.seq, ts, marker, rtp_bytes, enq_at: now });
            self.seq = self.seq.wrapping_add(1);
            self.queue_bytes += u64::from(rtp_bytes);
            frame_rtp_bytes = frame_rtp_bytes.saturating_add(rtp_bytes);
        }
        let delay = self.queue_delay(now);
        self.cc.on_new_frame(now, frame_rtp_bytes, self.queue_bytes, delay);
    }

    /// §5: flush the whole queue when its oldest packet is too old, at most
    /// once per 0.25 s.
    fn check_discard(&mut self, now: SimTime) {
        let Some(head) = self.queue.front() else { return };
        if now < self.discard_deadline(head) {
            return;
        }
        self.discarded_packets += self.queue.len() as u64;
        self.queue.clear();
        self.queue_bytes = 0;
        self.stats.rtp_discards += 1;
        self.last_discard = Some(now);
        self.pace_blocked = false;
        self.cc.on_rtp_queue_discard(now);
    }

    fn discard_deadline(&self, head: &Queued) -> SimTime {
        let age_limit = head.enq_at + self.max_rtp_queue_delay;
        match self.last_discard {
            Some(t) => age_limit.max(t + DISCARD_HOLDOFF),
            None => age_limit,
        }
    }

    fn queue_delay(&self, now: SimTime) -> Dur {
        self.queue.front().map_or(Dur::ZERO, |h| now.since(h.enq_at.min(now)))
    }

    /// Send while the pacer and SCReAM's gate allow.
    fn try_send(&mut self, now: SimTime, out: &mut impl FnMut(Packet)) {
        self.check_discard(now);
        self.pace_blocked = false;
        while let Some(&head) = self.queue.front() {
            if self.pacing.is_some() && now < self.next_send {
                self.pace_blocked = true;
                break;
            }
            if !self.cc.ok_to_transmit(head.rtp_bytes) {
                break; // wait for feedback (or the next frame tick)
            }
            self.queue.pop_front();
            self.queue_bytes -= u64::from(head.rtp_bytes);
            self.cc.on_transmit(now, head.seq, head.rtp_bytes, head.ts, head.marker);
            let rtp = Rtp { seq: head.seq, ts: head.ts, marker: head.marker, rtp_bytes: head.rtp_bytes };
            out(Packet {
                size: head.rtp_bytes - RTP_HDR + RTP_OVERHEAD,
                ecn: self.ect,
                sent_at: now,
                // The RTP queue is the packet's first queue: its wait there
                // is `sent_at - enq_at` (the first link restamps it).
                enq_at: head.enq_at,
                hdr: Header::Rtp(rtp),
                ..self.tmpl
            });
            self.stats.packets_sent += 1;
            self.stats.rtp_wait_total += now.since(head.enq_at);
            self.stats.rtp_bytes_sent += u64::from(head.rtp_bytes);
            self.rate_bytes += u64::from(head.rtp_bytes);
            match self.pacing {
                None => {}
                Some(PacingMode::Library) => {
                    self.next_send = now + pace_interval(head.rtp_bytes, self.cc.pacing_rate_bps());
                }
                Some(PacingMode::Microburst) => {
                    self.burst_sum += pace_interval(head.rtp_bytes, self.cc.pacing_rate_bps());
                    if self.burst_sum > self.microburst_interval {
                        // scream_sender.cpp transmitRtpThread: a burst whose
                        // paced time exceeds 1.1 × the interval sleeps for
                        // that paced time, otherwise for the interval, so at
                        // low rates (one packet > the interval) every packet
                        // is paced individually.
                        let sleep = if self.burst_sum.0 * 10 > self.microburst_interval.0 * 11 { self.burst_sum } else { self.microburst_interval };
                        self.burst_sum = Dur::ZERO;
                        // usleep(max(10 µs, sleep − 100 µs)), woken `wakeup` late.
                        let asked = sleep.saturating_sub(SLEEP_COMPENSATION).max(MIN_SLEEP);
                        self.next_send = now + self.send_gap + asked + self.wakeup;
                    } else {
                        self.next_send = now + self.send_gap;
                    }
                }
            }
        }
    }

    fn refresh_stats(&mut self, now: SimTime) {
        self.stats.rtp_queue_delay = self.queue_delay(now);
        let elapsed = now.since(self.rate_start.min(now));
        if elapsed >= RATE_WINDOW {
            self.stats.tx_rate_bps = self.rate_bytes as f64 * 8.0 / elapsed.as_secs_f64();
            self.rate_bytes = 0;
            self.rate_start = now;
        }
    }
}


#[cfg(test)]
mod tests;
