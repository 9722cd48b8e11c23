//! Delivery-rate sampling, as Linux `net/ipv4/tcp_rate.c`
//! (draft-cheng-iccrg-delivery-rate-estimation).
//!
//! At each (re)transmission a segment records the connection's `delivered`
//! count, the time of the last delivery (`delivered_mstamp`), the send time
//! of the first segment of the current send phase (`first_tx_mstamp`) and
//! whether the sender was application-limited (`tcp_rate_skb_sent`). When an
//! ACK delivers segments, the most recently *sent* of them provides the
//! sample's starting point (`tcp_rate_skb_delivered`); the sample is then
//! delivered = tp.delivered − prior_delivered over
//! interval = max(send phase, ACK phase) (`tcp_rate_gen`), rejected when the
//! interval is shorter than min_rtt. `tcp_rate_check_app_limited` marks the
//! connection app-limited when it has nothing to send while cwnd allows,
//! until the bubble's data has been delivered.
//!
//! Units: segments, ns. The per-connection fields (`delivered_mstamp`,
//! `app_limited`, `lost`, the last sample) live in [`TcpCcState`] like
//! Linux's `tcp_sock`; the per-segment snapshot in the scoreboard's [`Seg`].
//!
//! Deviations: SACK reneging is not modelled (`is_sack_reneg`); the sample
//! has no `is_ack_delayed` (receivers here never delay an ACK that closes a
//! hole); app-limited detection runs when the sender finds nothing to send
//! (Linux: on each application write), with no socket-buffer or qdisc
//! occupancy test since the simulated stack has neither.

use super::scoreboard::{Seg, TxRate, EVER_RETRANS};
pub use crate::cc::RateSample;
use crate::cc::TcpCcState;
use crate::units::{Dur, SimTime};


/// The sender's rate-sampling state beyond what `TcpCcState` holds.
#[derive(Clone, Debug, Default)]
pub struct RateSampler {
    /// Send time of the most recently delivered segment, or of the first
    /// segment after an idle period (`tp.first_tx_mstamp`).
    first_tx_mstamp: SimTime,
    /// The latest non-app-limited (or highest app-limited) sample
    /// (`rate_delivered`, `rate_interval_us`, `rate_app_limited`), as
    /// `tcp_info.delivery_rate` reports it.
    pub rate_delivered: u64,
    pub rate_interval: Dur,
    pub rate_app_limited: bool,
    /// The sample being built for the current ACK.
    rs: RateSample,
}

impl RateSampler {
    /// `tcp_rate_skb_sent`: snapshot the connection into a segment being
    /// (re)transmitted. `packets_out` is counted before this transmission.
    pub fn on_sent(&mut self, t: &mut TcpCcState, seg: &mut Seg, packets_out: u32, now: SimTime) {
        if packets_out == 0 {
            // Start of a send phase: the interval clocks restart here.
            self.first_tx_mstamp = now;
            t.delivered_mstamp = now;
        }
        seg.tx = TxRate {
            delivered: t.delivered,
            delivered_mstamp: Some(t.delivered_mstamp),
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: t.app_limited != 0,
        };
    }

    /// The sample's `prior_delivered` so far on this ACK (None before any
    /// delivery), for RACK's `tcp_rack_update_reo_wnd`.
    pub fn prior_delivered(&self) -> Option<u64> {
        self.rs.prior_mstamp.map(|_| self.rs.prior_delivered)
    }

    /// Start a new ACK's sample.
    pub fn begin_ack(&mut self, prior_in_flight: u32) {
        self.rs = RateSample { prior_in_flight, ..RateSample::default() };
    }

    /// `tcp_rate_skb_delivered`: a segment was newly ACKed or SACKed. The
    /// most recently sent one on this ACK sets the sample's start. (Linux
    /// zeroes a SACKed segment's stamp so its cumulative ACK does not count
    /// it again; the scoreboard never reports a SACKed segment twice.)
    #[inline]
    pub fn on_delivered(&mut self, seq: u64, seg: &Seg) {
        let tx = seg.tx;
        let Some(mstamp) = tx.delivered_mstamp else {
            return;
        };
        let end_seq = seq + 1;
        let sent_after = seg.sent_at > self.first_tx_mstamp || (seg.sent_at == self.first_tx_mstamp && end_seq > self.rs.last_end_seq);
        if self.rs.prior_mstamp.is_none() || sent_after {
            self.rs.prior_delivered = tx.delivered;
            self.rs.prior_mstamp = Some(mstamp);
            self.rs.is_app_limited = tx.is_app_limited;
            self.rs.is_retrans = seg.flags & EVER_RETRANS != 0;
            self.rs.last_end_seq = end_seq;
            self.first_tx_mstamp = seg.sent_at;
            self.rs.snd_interval = seg.sent_at.since(tx.first_tx_mstamp);
        }
    }

    /// `tcp_rate_gen`: finish the sample once the ACK's deliveries and
    /// losses are counted (`t.delivered` already includes them), store it
    /// in `t.rs`.
    pub fn generate(&mut self, t: &mut TcpCcState, delivered: u32, lost: u32, rtt: Option<Dur>, now: SimTime) {
        // The app-limited bubble is over once its data has been delivered.
        // (u64::MAX is Linux's initial ~0U, which `after()` treats as passed.)
        if t.app_limited != 0 && (t.app_limited == u64::MAX || t.delivered > t.app_limited) {
            t.app_limited = 0;
        }
        if delivered > 0 {
            t.delivered_mstamp = now;
        }
        // Built where the CC reads it, not copied there at the end.
        t.rs = self.rs;
        let rs = &mut t.rs;
        rs.acked_sacked = delivered;
        rs.losses = lost;
        rs.rtt = rtt;
        rs.delivered = None;
        rs.interval = None;
        if let Some(prior_mstamp) = rs.prior_mstamp {
            let d = t.delivered - rs.prior_delivered;
            rs.delivered = Some(d);
            rs.rcv_interval = now.since(prior_mstamp);
            let interval = rs.snd_interval.max(rs.rcv_interval);
            // Shorter than min_rtt: ACK compression or a retransmission
            // ambiguity; Linux discards the interval.
            if t.min_rtt == Dur::MAX || interval >= t.min_rtt {
                rs.interval = Some(interval);
                let better = u128::from(d) * u128::from(self.rate_interval.nanos())
                    >= u128::from(self.rate_delivered) * u128::from(interval.nanos());
                if !rs.is_app_limited || better {
                    self.rate_delivered = d;
                    self.rate_interval = interval;
                    self.rate_app_limited = rs.is_app_limited;
                }
            }
        }
    }

    /// `tcp_rate_check_app_limited`, called when the sender has no new data
    /// to send: if cwnd is not the limit and no lost segment awaits
    /// retransmission, mark the connection app-limited until everything now
    /// in flight has been delivered.
    pub fn check_app_limited(t: &mut TcpCcState, in_flight: u32, lost_out: u32, retrans_out: u32) {
        if in_flight < t.cwnd && lost_out <= retrans_out {
            t.app_limited = (t.delivered + u64::from(in_flight)).max(1);
        }
    }

    /// Linux `tcp_info.delivery_rate`, segments per second.
    pub fn delivery_rate_pps(&self) -> Option<f64> {
        (self.rate_interval > Dur::ZERO).then(|| self.rate_delivered as f64 / self.rate_interval.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::scoreboard::Scoreboard;

    const MS: u64 = 1_000_000;

    fn state() -> TcpCcState {
        let mut t = TcpCcState::new(SimTime(0), 1448, 10);
        t.min_rtt = Dur::from_millis(10);
        t
    }

    /// A sender that sends one segment per `gap` and a path that ACKs each
    /// `rtt` later gives samples of exactly 1/gap once the pipe is full.
    #[test]
    fn samples_equal_the_sending_rate_on_a_paced_path() {
        let mut t = state();
        let mut r = RateSampler::default();
        let mut sb = Scoreboard::default();
        let gap = MS; // 1000 segments/s
        let rtt = 10 * MS;
        let mut samples = Vec::new();
        for i in 0..200u64 {
            let now = SimTime(i * gap);
            // ACK for the segment sent one RTT ago.
            if now.0 >= rtt {
                let seq = (now.0 - rtt) / gap;
                r.begin_ack(sb.in_flight());
                let mut n = 0;
                sb.advance(seq + 1, |s, seg| {
                    n += 1;
                    r.on_delivered(s, seg);
                });
                t.delivered += n;
                r.generate(&mut t, n as u32, 0, Some(Dur(rtt)), now);
                if let Some(p) = t.rs.rate_pps() {
                    samples.push((p, t.rs.is_app_limited));
                }
            }
            let out = sb.packets_out();
            sb.push(now, 1448);
            let seq = sb.nxt() - 1;
            let mut seg = *sb.get(seq);
            r.on_sent(&mut t, &mut seg, out, now);
            *sb.get_mut(seq) = seg;
        }
        // The first window was sent app-limited (Linux starts with
        // app_limited set); later samples are 1000 pkt/s.
        let steady: Vec<_> = samples.iter().filter(|s| !s.1).collect();
        assert!(steady.len() > 150, "{}", steady.len());
        for (p, _) in steady {
            assert!((p - 1000.0).abs() < 1e-6, "{p}");
        }
    }

    /// An ACK-clocked window larger than the BDP through a 1000 pkt/s
    /// bottleneck (a standing queue): the samples are the bottleneck rate.
    #[test]
    fn samples_equal_the_bottleneck_rate_when_saturated() {
        let mut t = state();
        let mut r = RateSampler::default();
        let mut sb = Scoreboard::default();
        let (serve, half_rtt) = (MS, 5 * MS);
        let mut last_dep = 0u64;
        // ACK arrival times, in sequence order (FIFO keeps order).
        let mut acks = std::collections::VecDeque::new();
        let send = |sb: &mut Scoreboard, t: &mut TcpCcState, r: &mut RateSampler, now: u64, last_dep: &mut u64| {
            let out = sb.packets_out();
            sb.push(SimTime(now), 1448);
            let seq = sb.nxt() - 1;
            let mut seg = *sb.get(seq);
            r.on_sent(t, &mut seg, out, SimTime(now));
            *sb.get_mut(seq) = seg;
            *last_dep = (*last_dep).max(now + half_rtt) + serve;
            *last_dep + half_rtt
        };
        for _ in 0..20 {
            acks.push_back(send(&mut sb, &mut t, &mut r, 0, &mut last_dep));
        }
        let mut samples = Vec::new();
        while sb.una < 400 {
            let now = acks.pop_front().unwrap();
            r.begin_ack(sb.in_flight());
            let mut n = 0;
            let seq = sb.una;
            sb.advance(seq + 1, |s, seg| {
                n += 1;
                r.on_delivered(s, seg)
            });
            t.delivered += n;
            r.generate(&mut t, n as u32, 0, None, SimTime(now));
            if !t.rs.is_app_limited {
                samples.push((seq, t.rs.rate_pps().unwrap()));
            }
            acks.push_back(send(&mut sb, &mut t, &mut r, now, &mut last_dep));
        }
        assert!(samples.len() >= 370, "{}", samples.len());
        // Never above the bottleneck rate (max of the send and ACK phases);
        // exact once the initial burst is two windows back (the segments
        // sent against the burst have a longer send phase: a lower bound).
        for (seq, p) in samples {
            assert!(p <= 1000.0 + 1e-6, "{seq}: {p}");
            if seq >= 40 {
                assert!((p - 1000.0).abs() < 1e-6, "{seq}: {p}");
            }
        }
        assert!((r.delivery_rate_pps().unwrap() - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn app_limited_lasts_until_the_bubble_is_delivered() {
        let mut t = state();
        t.delivered = 100;
        RateSampler::check_app_limited(&mut t, 5, 0, 0);
        assert_eq!(t.app_limited, 105);
        // cwnd-limited: no marking.
        let mut u = state();
        u.app_limited = 0;
        RateSampler::check_app_limited(&mut u, 10, 0, 0);
        assert_eq!(u.app_limited, 0);
        // Lost segments waiting: not app-limited either.
        RateSampler::check_app_limited(&mut u, 5, 2, 1);
        assert_eq!(u.app_limited, 0);
        let mut r = RateSampler::default();
        r.begin_ack(5);
        t.delivered = 105;
        r.generate(&mut t, 5, 0, None, SimTime(MS));
        assert_eq!(t.app_limited, 105, "cleared only once delivered passes the mark");
        t.delivered = 106;
        r.generate(&mut t, 1, 0, None, SimTime(2 * MS));
        assert_eq!(t.app_limited, 0);
    }

    /// tcp_rate_gen: interval = max(send phase, ACK phase); a sample
    /// shorter than min_rtt is discarded.
    #[test]
    fn interval_is_the_longer_phase_and_min_rtt_guards() {
        let mut t = state();
        let mut r = RateSampler::default();
        let mut seg = Seg { sent_at: SimTime(0), len: 1448, flags: 0, tx: TxRate::default() };
        r.on_sent(&mut t, &mut seg, 0, SimTime(0));
        // Sent at 0 in a phase that began at 0; ACKed at 4 ms: ACK phase
        // 4 ms < min_rtt 10 ms, so no interval.
        r.begin_ack(1);
        r.on_delivered(0, &seg);
        t.delivered = 1;
        r.generate(&mut t, 1, 0, None, SimTime(4 * MS));
        assert_eq!(t.rs.delivered, Some(1));
        assert_eq!(t.rs.interval, None);
        // ACK phase 12 ms: valid.
        let mut seg2 = Seg { sent_at: SimTime(5 * MS), len: 1448, flags: 0, tx: TxRate::default() };
        r.on_sent(&mut t, &mut seg2, 0, SimTime(5 * MS));
        r.begin_ack(1);
        r.on_delivered(1, &seg2);
        t.delivered = 2;
        r.generate(&mut t, 1, 0, None, SimTime(17 * MS));
        assert_eq!(t.rs.rcv_interval, Dur(12 * MS));
        assert_eq!(t.rs.interval, Some(Dur(12 * MS)));
    }

    /// A SACKed segment gives its sample once; its later cumulative ACK
    /// does not report it again.
    #[test]
    fn sacked_segment_is_not_sampled_twice() {
        let mut t = state();
        let mut r = RateSampler::default();
        let mut sb = Scoreboard::default();
        for i in 0..3u64 {
            let out = sb.packets_out();
            sb.push(SimTime(i * MS), 1448);
            let mut seg = *sb.get(i);
            r.on_sent(&mut t, &mut seg, out, SimTime(i * MS));
            *sb.get_mut(i) = seg;
        }
        r.begin_ack(3);
        let mut n = 0;
        sb.sack(2, 3, |s, seg| {
            n += 1;
            r.on_delivered(s, seg)
        });
        t.delivered += n;
        r.generate(&mut t, n as u32, 0, None, SimTime(15 * MS));
        assert_eq!(t.rs.delivered, Some(1));
        r.begin_ack(2);
        let mut m = 0;
        sb.advance(3, |s, seg| {
            m += 1;
            r.on_delivered(s, seg)
        });
        assert_eq!(m, 2, "only the two un-SACKed segments are newly delivered");
    }

    /// A zero-length interval gives no rate (the sample would be infinite).
    #[test]
    fn rate_needs_a_positive_interval() {
        let rs = RateSample { delivered: Some(5), interval: Some(Dur(2 * MS)), ..Default::default() };
        assert_eq!(rs.rate_pps(), Some(2500.0));
        assert_eq!(RateSample { interval: Some(Dur::ZERO), ..rs }.rate_pps(), None);
        assert_eq!(RateSample { delivered: None, ..rs }.rate_pps(), None);
    }

    fn sent(delivered: u64, at: u64, flags: u8) -> Seg {
        let tx = TxRate { delivered, delivered_mstamp: Some(SimTime(0)), first_tx_mstamp: SimTime(0), is_app_limited: false };
        Seg { sent_at: SimTime(at), len: 1448, flags, tx }
    }

    /// tcp_rate_skb_delivered: of the segments one ACK delivers, the one
    /// sent last sets the sample (by send time; among segments sent at the
    /// same time, the highest sequence), whatever order they are reported in.
    #[test]
    fn the_most_recently_sent_segment_sets_the_sample() {
        let mut r = RateSampler::default();
        r.begin_ack(3);
        assert_eq!(r.prior_delivered(), None, "nothing delivered yet");
        r.on_delivered(0, &sent(100, 10, 0));
        assert_eq!(r.prior_delivered(), Some(100));
        r.on_delivered(1, &sent(101, 30, EVER_RETRANS));
        r.on_delivered(2, &sent(102, 20, 0)); // sent earlier than seq 1
        assert_eq!(r.prior_delivered(), Some(101));
        let mut t = state();
        t.delivered = 110;
        r.generate(&mut t, 3, 0, None, SimTime(50 * MS));
        assert_eq!((t.rs.delivered, t.rs.is_retrans, t.rs.last_end_seq, t.rs.prior_in_flight), (Some(9), true, 2, 3));

        // One burst (same send time), reported out of order: the highest sequence wins.
        let mut r = RateSampler::default();
        r.begin_ack(3);
        r.on_delivered(3, &sent(200, 40, 0));
        r.on_delivered(4, &sent(201, 40, 0));
        r.on_delivered(2, &sent(199, 40, 0));
        assert_eq!(r.prior_delivered(), Some(201));
        t.delivered = 210;
        r.generate(&mut t, 3, 0, None, SimTime(60 * MS));
        assert!(!t.rs.is_retrans, "never retransmitted");
        assert_eq!((t.rs.delivered, t.rs.last_end_seq), (Some(9), 5));
    }

    /// tcp_rate_gen: an app-limited sample replaces the recorded delivery
    /// rate only when it is at least as high; a non-app-limited one always.
    #[test]
    fn an_app_limited_sample_replaces_the_rate_only_when_higher() {
        let mut t = state();
        let mut r = RateSampler { rate_delivered: 10, rate_interval: Dur(100 * MS), ..Default::default() };
        let sample = |r: &mut RateSampler, t: &mut TcpCcState, d: u64, app_limited: bool| {
            let tx = TxRate { delivered: t.delivered, delivered_mstamp: Some(SimTime(0)), first_tx_mstamp: SimTime(0), is_app_limited: app_limited };
            r.begin_ack(1);
            r.on_delivered(0, &Seg { sent_at: SimTime(0), len: 1448, flags: 0, tx });
            t.delivered += d;
            r.generate(t, 1, 0, None, SimTime(100 * MS));
            (r.rate_delivered, r.rate_app_limited)
        };
        assert_eq!(sample(&mut r, &mut t, 5, true), (10, false), "lower: kept");
        assert_eq!(sample(&mut r, &mut t, 20, true), (20, true), "higher: taken");
        assert_eq!(sample(&mut r, &mut t, 3, false), (3, false), "not app-limited: always taken");
        assert_eq!(r.delivery_rate_pps(), Some(30.0));
    }
}

/// The sampler inside the real sender: samples from a cwnd-limited bulk
/// phase are not app-limited; after the application pauses with cwnd room
/// to spare, the samples of the data sent on resuming are app-limited until
/// that bubble has been delivered (tcp_rate_check_app_limited).
#[cfg(test)]
mod sender_tests {
    use crate::cc::{CcConfig, CcKind, EcnMode};
    use crate::packet::{Header, Packet, TcpAck};
    use crate::tcp::sender::TcpSender;
    use crate::tcp::TcpConfig;
    use crate::units::{Dur, SimTime};

    const MS: u64 = 1_000_000;

    /// ACK every outstanding segment one by one, 0.1 ms apart, 10 ms after
    /// `t`; returns (app-limited flag, rate) of each valid sample.
    fn ack_all(tx: &mut TcpSender, t: &mut u64, sent: &mut Vec<u64>) -> Vec<(bool, f64)> {
        let mut out = Vec::new();
        let mut pending: Vec<u64> = std::mem::take(sent);
        *t += 10 * MS;
        while let Some(seq) = pending.first().copied() {
            pending.remove(0);
            *t += MS / 10;
            let mut new = Vec::new();
            tx.on_ack(&TcpAck { ack: seq + 1, ..Default::default() }, SimTime(*t), &mut |p: Packet| {
                if let Header::TcpData(s) = p.hdr {
                    new.push(s.seq)
                }
            });
            sent.extend(new);
            if let Some(r) = tx.t.rs.rate_pps() {
                out.push((tx.t.rs.is_app_limited, r));
            }
        }
        out
    }

    #[test]
    fn bulk_samples_are_not_app_limited_and_resumed_ones_are() {
        let cc = CcConfig::default_for(CcKind::Reno).build();
        let mut tx =
            TcpSender::new(TcpConfig::default(), cc, EcnMode::Off, Packet::default(), None, SimTime(0), Some(Dur::from_millis(10)));
        let mut sent = Vec::new();
        tx.start(SimTime(0), &mut |p: Packet| {
            if let Header::TcpData(s) = p.hdr {
                sent.push(s.seq)
            }
        });
        let mut t = 0;
        // The initial window is app-limited (Linux starts so); the
        // ACK-clocked windows after it are cwnd-limited.
        let first = ack_all(&mut tx, &mut t, &mut sent);
        assert!(first.iter().all(|s| s.0), "{first:?}");
        let bulk = ack_all(&mut tx, &mut t, &mut sent);
        assert!(!bulk.is_empty() && bulk.iter().all(|s| !s.0), "{bulk:?}");
        // The application pauses: the next ACKs find nothing to send with
        // cwnd room, which marks the connection app-limited.
        tx.stop();
        let drained = ack_all(&mut tx, &mut t, &mut sent);
        assert!(drained.iter().all(|s| !s.0), "data sent before the pause is not app-limited");
        assert!(tx.t.app_limited > 0);
        t += 100 * MS;
        tx.start(SimTime(t), &mut |p: Packet| {
            if let Header::TcpData(s) = p.hdr {
                sent.push(s.seq)
            }
        });
        let resumed = ack_all(&mut tx, &mut t, &mut sent);
        assert!(!resumed.is_empty() && resumed.iter().all(|s| s.0), "{resumed:?}");
        let after = ack_all(&mut tx, &mut t, &mut sent);
        assert!(after.iter().all(|s| !s.0), "bubble delivered: {after:?}");
    }
}
