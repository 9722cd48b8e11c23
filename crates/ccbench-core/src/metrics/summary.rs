//! The run summary (`summary.json`). Field names are an interface,
//! documented in the README; add fields, never rename them.
//! Percentiles interpolate linearly between order statistics (numpy's
//! default), over samples taken after the warm-up; RTT, sojourn and probe
//! percentiles come from streaming histograms, within 0.1 % of the exact
//! value (see [`super::hist`]); their means, minima and maxima are exact.

use serde::Serialize;

use super::hist::LogHist;

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    pub probes: Vec<ProbeSummary>,
    /// Jain's fairness index over the TCP flows' goodputs; null with fewer
    /// than two TCP flows with a goodput. Media flows are not included.
    pub jain: Option<f64>,
    pub engine: EngineSummary,
    /// Distributions after the warm-up at [`QUANTILES`] evenly spaced
    /// probabilities (0, 0.1 %, …, 100 %), for CDFs without the samples.
    pub quantiles: Quantiles,
}

/// Probabilities in [`Quantiles`]: 0 to 1 in steps of 0.001.
pub const QUANTILES: usize = 1001;

/// Quantiles from the streaming histograms (within 0.1 % of the exact
/// ones), ms to 4 significant figures; empty where there are no samples.
/// Each list is written on one line, so a pretty-printed summary stays
/// readable.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct Quantiles {
    /// Every TCP flow's RTT samples together.
    #[serde(serialize_with = "one_line")]
    pub tcp_rtt_ms: Vec<f64>,
    /// Every probe's RTT samples together.
    #[serde(serialize_with = "one_line")]
    pub probe_rtt_ms: Vec<f64>,
    /// Each link's queue sojourn (all classes), in the order of `links`.
    #[serde(serialize_with = "one_line_each")]
    pub sojourn_ms: Vec<Vec<f64>>,
}

/// `v` as compact JSON, to be written verbatim inside a pretty-printed document.
fn compact<S: serde::Serializer>(v: &[f64]) -> Result<Box<serde_json::value::RawValue>, S::Error> {
    let text = serde_json::to_string(v).map_err(serde::ser::Error::custom)?;
    serde_json::value::RawValue::from_string(text).map_err(serde::ser::Error::custom)
}

fn one_line<S: serde::Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    compact::<S>(v)?.serialize(s)
}

fn one_line_each<S: serde::Serializer>(v: &[Vec<f64>], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for q in v {
        seq.serialize_element(&compact::<S>(q)?)?;
    }
    seq.end()
}

impl Quantiles {
    /// `h`'s quantiles at [`QUANTILES`] probabilities, ms.
    pub fn grid(h: &LogHist) -> Vec<f64> {
        let qs: Vec<f64> = (0..QUANTILES).map(|k| k as f64 * 100.0 / (QUANTILES - 1) as f64).collect();
        h.percentile_list(&qs).into_iter().map(|ns| sig_figs(ns * 1e-6, 4)).collect()
    }
}

/// `x` rounded to `digits` significant figures (printed in JSON as that decimal).
pub fn sig_figs(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = x.abs().log10().floor() as i32 - (digits - 1);
    if e >= 0 {
        let d = 10f64.powi(e);
        (x / d).round() * d
    } else {
        let m = 10f64.powi(-e);
        (x * m).round() / m
    }
}

#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct RttStats {
    pub mean: Option<f64>,
    pub p5: Option<f64>,
    pub p25: Option<f64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct SojournStats {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct FlowSummary {
    pub id: String,
    pub kind: &'static str,
    pub cc: &'static str,
    /// In-order payload delivered to the receiver per second of the flow's
    /// active time after warm-up, Mbit/s. NaN (null in JSON) when the flow
    /// has no active time after the warm-up.
    pub goodput_mbps: f64,
    pub rtt_ms: RttStats,
    /// Retransmits, RTOs and CE marks count only after the warm-up.
    pub retransmits: u64,
    pub rto_count: u64,
    /// CE-marked data packets that reached the receiver.
    pub ce_marks: u64,
    /// CE-marked share of the segments the sender saw delivered (from the
    /// feedback it got: exact with Accurate ECN, per ECE ACK with classic).
    pub ce_fraction: Option<f64>,
    pub delivered_bytes: u64,
    /// Payload delivered from the warm-up's end (or the flow's start, if
    /// later) to the run's end: the numerator of `goodput_mbps`, and what a
    /// report adds over flows for their goodput over one window.
    pub delivered_after_warmup_bytes: u64,
    /// The spread of the goodput the flow series samples each interval
    /// after the warm-up (Mbit/s; the samples at or after its end): what a
    /// report's goodput box shows without reading the series back.
    pub interval_goodput_mbps: RttStats,
    pub ecn: &'static str,
    pub start_s: f64,
    pub stop_s: f64,
    /// Goodput over the flow's named intervals.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalSummary>,
    /// SCReAM specifics (media flows only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSummary>,
    /// Where HyStart ended slow start (CUBIC); absent if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart: Option<HystartSummary>,
}

/// HyStart's end of slow start, as Linux's TCPHystart* counters give it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct HystartSummary {
    /// `"ack-train"` or `"delay"`.
    pub by: &'static str,
    /// cwnd (segments) when the detector fired; slow start's ssthresh.
    pub cwnd: u32,
    pub time_s: f64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct IntervalSummary {
    pub name: String,
    pub from_s: f64,
    pub to_s: f64,
    pub goodput_mbps: Option<f64>,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct MediaSummary {
    /// Mean encoder target bitrate, Mbit/s.
    pub target_mbps: Option<f64>,
    /// Mean transmitted RTP rate, Mbit/s.
    pub tx_mbps: Option<f64>,
    /// How long the RTP packets sent after the warm-up waited in the
    /// sender's RTP queue, each packet one sample (packets the queue
    /// flushed are counted in `rtp_discards` instead).
    pub rtp_queue_delay_ms: SojournStats,
    /// SCReAM's own network queue-delay estimate.
    pub qdelay_ms: SojournStats,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub rtp_discards: u64,
    pub frames: u64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct LinkSummary {
    pub id: String,
    pub qdisc: &'static str,
    /// The link's line rate at the start, Mbit/s (null if unlimited).
    pub rate_mbps: Option<f64>,
    /// The link's capacity at the start, Mbit/s: the rate that limits it,
    /// the slower of its line rate and its qdisc's shaper (Cake's
    /// `bandwidth`, an HTB ceil, a TBF or netem `rate`); null if neither
    /// limits it.
    pub capacity_mbps: Option<f64>,
    /// Mean capacity over the measured window (after warm-up), Mbit/s:
    /// differs from `capacity_mbps` when a `schedule` changes the rate or
    /// the shaper. Null if unlimited at any point or the window is empty.
    pub rate_mean_mbps: Option<f64>,
    /// Bits on the wire / capacity over the measured window (a packet being
    /// serialized at either edge counts pro rata), so a link behind its
    /// own shaper is measured against the shaper's rate, not the wire's
    /// (a shaper that adds per-packet overhead, Cake's `overhead`, tops out
    /// below 1); null if unlimited or the window is empty.
    pub utilization: Option<f64>,
    /// Nothing limits the link's rate at any time (no line rate, shaper or
    /// grant gate): it only delays (netem `delay`) or drops what passes,
    /// so its sojourn is that delay, not a queue's.
    pub pure_delay: bool,
    pub sojourn_ms: SojournStats,
    /// Sojourn per queue of a two-queue qdisc (DualPI2: C classic, L L4S);
    /// absent for single-queue qdiscs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sojourn_c_ms: Option<SojournStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sojourn_l_ms: Option<SojournStats>,
    /// Counters from here on count only after the warm-up.
    pub drops: u64,
    pub marks: u64,
    /// Packets lost to the link's random loss.
    pub lost: u64,
    pub arrivals: u64,
    pub tx_packets: u64,
}

#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct ProbeSummary {
    pub id: String,
    pub rtt_ms: RttStats,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub sent: u64,
    pub received: u64,
}

#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct EngineSummary {
    pub events: u64,
    pub packets: u64,
    /// Wall-clock seconds; filled in by the caller (the core has no clock).
    pub wall_s: f64,
}

/// Linear-interpolation percentile of sorted data, q in [0, 100].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

pub fn mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 * 1e-6
}

fn ms(ns: Option<f64>) -> Option<f64> {
    ns.map(|v| v * 1e-6)
}

impl RttStats {
    pub fn from_sorted(v: &[f64]) -> RttStats {
        let p = |q| percentile(v, q);
        RttStats { mean: mean(v), p5: p(5.0), p25: p(25.0), p50: p(50.0), p75: p(75.0), p95: p(95.0), p99: p(99.0) }
    }
    /// Of samples in any order (sorted in a copy).
    pub fn from_samples(v: &[f64]) -> RttStats {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        RttStats::from_sorted(&v)
    }
    pub fn from_hist(h: &LogHist) -> RttStats {
        let [p5, p25, p50, p75, p95, p99] = h.percentiles([5.0, 25.0, 50.0, 75.0, 95.0, 99.0]).map(ms);
        RttStats { mean: ms(h.mean()), p5, p25, p50, p75, p95, p99 }
    }
}

impl SojournStats {
    pub fn from_sorted(v: &[f64]) -> SojournStats {
        SojournStats { mean: mean(v), p50: percentile(v, 50.0), p99: percentile(v, 99.0), max: v.last().copied() }
    }
    pub fn from_hist(h: &LogHist) -> SojournStats {
        let [p50, p99] = h.percentiles([50.0, 99.0]);
        SojournStats { mean: ms(h.mean()), p50: ms(p50), p99: ms(p99), max: h.max().map(ns_to_ms) }
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²); 1 means equal shares.
pub fn jain(x: &[f64]) -> Option<f64> {
    if x.is_empty() {
        return None;
    }
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if s2 == 0.0 {
        return Some(1.0);
    }
    Some(s * s / (x.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert!((percentile(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
    }

    /// The grid is 1001 percentiles 0, 0.1, …, 100 of the histogram, in ms to four significant
    /// figures, within 0.1 % (plus the rounding) of numpy's on the samples.
    #[test]
    fn quantile_grid_reads_the_histogram_at_every_tenth_of_a_percent() {
        let mut rng = crate::rng::SimRng::for_component(3, "grid");
        let mut h = LogHist::default();
        let mut v: Vec<f64> = Vec::new();
        for _ in 0..20_000 {
            let ns = 20_000_000 + (rng.uniform() * rng.uniform() * 3e7) as u64;
            h.record(ns);
            v.push(ns as f64 * 1e-6);
        }
        v.sort_by(f64::total_cmp);
        let g = Quantiles::grid(&h);
        assert_eq!(g.len(), QUANTILES);
        assert_eq!((g[0], g[1000]), (sig_figs(v[0], 4), sig_figs(v[v.len() - 1], 4)));
        for (k, &got) in g.iter().enumerate() {
            let want = percentile(&v, k as f64 / 10.0).unwrap();
            assert!((got - want).abs() <= want * (super::super::hist::REL_ERROR + 5e-4), "{k}: {got} vs {want}");
            assert_eq!(got, sig_figs(got, 4), "{k}: {got} has more than four figures");
        }
        assert!(g.windows(2).all(|w| w[0] <= w[1]), "quantiles ascend");
        assert!(Quantiles::grid(&LogHist::default()).is_empty());
    }

    /// Pretty-printed, each list of quantiles takes one line.
    #[test]
    fn quantile_lists_are_written_on_one_line() {
        let q = Quantiles { tcp_rtt_ms: vec![1.5, 2.25], probe_rtt_ms: vec![], sojourn_ms: vec![vec![0.0, 3.0], vec![]] };
        let text = serde_json::to_string_pretty(&q).unwrap();
        assert_eq!(text, "{\n  \"tcp_rtt_ms\": [1.5,2.25],\n  \"probe_rtt_ms\": [],\n  \"sojourn_ms\": [\n    [0.0,3.0],\n    []\n  ]\n}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["sojourn_ms"][0][1], 3.0);
    }

    #[test]
    fn significant_figures_round_half_away_and_keep_zero() {
        assert_eq!(sig_figs(14.355913, 4), 14.36);
        assert_eq!(sig_figs(0.000123456, 4), 0.0001235);
        assert_eq!(sig_figs(123_456.0, 4), 123_500.0);
        assert_eq!(sig_figs(-2.71828, 3), -2.72);
        assert_eq!(sig_figs(0.0, 4), 0.0);
        assert!(sig_figs(f64::NAN, 4).is_nan());
        assert_eq!(serde_json::to_string(&sig_figs(20.123456, 4)).unwrap(), "20.12");
    }

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain(&[5.0, 5.0, 5.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0]).unwrap() - 0.5).abs() < 1e-12);
    }
}
