//! Metrics recorded while simulating, into columnar buffers (one `Vec` per
//! column), and the streaming statistics the run summary reads.
//! Per-event tables (RTT samples, sojourns, probes, captures) can be handed
//! out in chunks as the run goes ([`Metrics::take_chunks`]), so a long run
//! need not hold them.

pub mod capture;
pub mod chart;
pub mod extremes;
pub mod hist;
pub mod summary;

use serde::{Deserialize, Serialize};

use crate::units::Dur;

/// What to record, as written in a scenario's `[metrics]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Sampling interval of the per-flow and per-link series.
    pub interval: Dur,
    /// Record the sojourn of every Nth dequeued packet per link (1 = all).
    pub sojourn_every: u32,
    /// Record every RTT sample of TCP flows.
    pub rtt_samples: bool,
    /// Summaries (goodput, RTT, sojourn, utilization) ignore what happens
    /// before this time (series keep everything).
    pub warmup: Dur,
    /// Links whose packets are captured (headers of every packet as it
    /// starts transmission), for pcap export.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capture: Vec<String>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { interval: Dur::from_millis(100), sojourn_every: 1, rtt_samples: true, warmup: Dur::ZERO, capture: Vec::new() }
    }
}

/// A column of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    F64(Vec<f64>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Where the values are (which buffer holds them).
    pub fn as_ptr(&self) -> usize {
        match self {
            Column::F64(v) => v.as_ptr() as usize,
            Column::U32(v) => v.as_ptr() as usize,
            Column::U64(v) => v.as_ptr() as usize,
        }
    }
    /// Bytes the values take.
    pub fn bytes(&self) -> usize {
        match self {
            Column::F64(v) => v.len() * 8,
            Column::U32(v) => v.len() * 4,
            Column::U64(v) => v.len() * 8,
        }
    }
    pub fn dtype(&self) -> &'static str {
        match self {
            Column::F64(_) => "f64",
            Column::U32(_) => "u32",
            Column::U64(_) => "u64",
        }
    }
    /// Little-endian bytes, for the bindings.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// A named table of equal-length columns.
pub type Table = Vec<(&'static str, Column)>;

/// Per-flow series, one row per flow per sample interval.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct FlowSeries {
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub goodput_mbps: Vec<f64>,
    /// Payload that reached the receiver in the interval in any order
    /// (bounded by the path's capacity), Mbit/s; `goodput_mbps` is the
    /// in-order release, which jumps when a hole is filled after recovery.
    pub throughput_mbps: Vec<f64>,
    pub delivered_bytes: Vec<u64>,
    pub cwnd_pkts: Vec<f64>,
    pub srtt_ms: Vec<f64>,
    pub pacing_mbps: Vec<f64>,
    pub inflight_pkts: Vec<f64>,
    /// CE-marked share of the segments delivered in the interval (NaN if
    /// none were delivered).
    pub ce_fraction: Vec<f64>,
    /// The algorithm's α (DCTCP, Prague), NaN for others.
    pub alpha: Vec<f64>,
    /// Prague's classic-ECN detector (with `ecn_fallback`): 0 L4S mode, 1
    /// classic fallback; NaN for others.
    pub classic: Vec<f64>,
}

/// Per-media-flow series (SCReAM), one row per flow per sample interval.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct MediaSeries {
    pub time_s: Vec<f64>,
    pub flow: Vec<u32>,
    pub target_mbps: Vec<f64>,
    pub tx_mbps: Vec<f64>,
    pub rtp_queue_delay_ms: Vec<f64>,
    pub qdelay_ms: Vec<f64>,
    pub cwnd_bytes: Vec<u64>,
    pub bytes_in_flight: Vec<u64>,
    pub rtp_discards: Vec<u64>,
}

/// Per-link series, one row per link per sample interval.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct LinkSeries {
    pub time_s: Vec<f64>,
    pub link: Vec<u32>,
    pub backlog_pkts: Vec<u64>,
    pub backlog_bytes: Vec<u64>,
    pub tx_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    pub marks: Vec<u64>,
    pub rate_mbps: Vec<f64>,
    /// The qdisc's probabilities (see `QdiscProbe`), NaN where it has none.
    pub prob_base: Vec<f64>,
    pub prob_c: Vec<f64>,
    pub prob_l: Vec<f64>,
}

/// One sample: its time, value, flow, and id with the queue class in the
/// id's top byte.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub time_ns: u64,
    pub value_ns: u64,
    /// Sojourn tables also name the packet's flow.
    pub flow: u32,
    id_class: u32,
}

impl Sample {
    /// The flow, link or probe id.
    pub fn id(&self) -> u32 {
        self.id_class & ID_MASK
    }
    /// Queue class (sojourn samples of multi-queue qdiscs; 0 otherwise).
    pub fn class(&self) -> u8 {
        (self.id_class >> 24) as u8
    }
}

/// Ids fit in 24 bits: a scenario has at most 10 000 flows in all
/// (`scenario::limits::MAX_COUNT`), and its links and probes are of that order.
const ID_MASK: u32 = (1 << 24) - 1;

/// A sample as stored, in 16 bytes: nanoseconds since the table's previous
/// sample and the value in nanoseconds, each in 32 bits, or [`WIDE`] for a
/// sample whose gap or value needs more (its time and value are then in
/// [`Samples::wide`]). Samples are recorded as the simulated clock reaches
/// them, so the gaps are short: a 24-byte row with both in 64 bits wrote
/// half as many bytes again, to pages that a run keeping its samples
/// faults in one by one (B1's physics: 36 MB, 9 100 faults, a sixth of the
/// engine's wall time in a VM).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Row {
    gap: u32,
    value: u32,
    flow: u32,
    id_class: u32,
}

/// [`Row::gap`] of a sample kept whole in [`Samples::wide`].
const WIDE: u32 = u32::MAX;

/// (time, id, value) samples: RTTs per flow, sojourns per link, probe RTTs.
/// A row per sample rather than a vector per column: a sample is recorded
/// on every packet, and one push (one capacity check, one write stream)
/// costs less than five; the columns are made when a chunk is handed out.
#[derive(Default, Clone, Debug, PartialEq)]
pub struct Samples {
    rows: Vec<Row>,
    /// Time and value of each row marked [`WIDE`], in row order.
    wide: Vec<(u64, u64)>,
    /// Time the first row's gap counts from: that of the last sample
    /// handed out before it (0 at the start).
    base: u64,
    /// Time of the last sample recorded.
    last: u64,
}

impl Samples {
    #[inline]
    pub fn push(&mut self, t: u64, id: u32, flow: u32, v: u64) {
        self.push_class(t, id, flow, v, 0);
    }
    #[inline]
    pub fn push_class(&mut self, t: u64, id: u32, flow: u32, v: u64, class: u8) {
        debug_assert!(id <= ID_MASK, "id {id} needs more than 24 bits");
        let id_class = id | u32::from(class) << 24;
        // A time before the last one wraps around to a gap above any WIDE.
        let gap = t.wrapping_sub(self.last);
        if gap < u64::from(WIDE) && v < u64::from(WIDE) {
            self.rows.push(Row { gap: gap as u32, value: v as u32, flow, id_class });
        } else {
            self.push_wide(t, v, flow, id_class);
        }
        self.last = t;
    }
    #[cold]
    #[inline(never)]
    fn push_wide(&mut self, t: u64, v: u64, flow: u32, id_class: u32) {
        self.rows.push(Row { gap: WIDE, value: 0, flow, id_class });
        self.wide.push((t, v));
    }
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// The samples, in the order they were recorded.
    pub fn iter(&self) -> impl Iterator<Item = Sample> + '_ {
        let (mut t, mut wide) = (self.base, self.wide.iter());
        self.rows.iter().map(move |r| {
            let value_ns = if r.gap == WIDE {
                let &(time, value) = wide.next().expect("a wide row's time and value");
                t = time;
                value
            } else {
                t += u64::from(r.gap);
                u64::from(r.value)
            };
            Sample { time_ns: t, value_ns, flow: r.flow, id_class: r.id_class }
        })
    }
    /// The rows as a table, taken out: `keep`, the buffer stays for the
    /// next rows, emptied. A run handing out chunks then writes its samples
    /// into the pages it wrote before instead of faulting in fresh ones for
    /// each chunk (a fault costs more than the samples on a page).
    fn take_table(&mut self, keep: bool, spare: &mut Spare, id_name: &'static str, value_name: &'static str, with_flow: bool) -> Table {
        let t = self.table(spare, id_name, value_name, with_flow);
        if keep {
            self.rows.clear();
            self.wide.clear();
        } else {
            self.rows = Vec::new();
            self.wide = Vec::new();
        }
        self.base = self.last;
        t
    }
    /// The columns, in buffers from `spare` where it has them. Filled a
    /// block of rows at a time, column after column: the block is read from
    /// the nearest cache for every column but the first, where a pass per
    /// column over a whole chunk (a megabyte) read it from memory each time.
    fn table(&self, spare: &mut Spare, id_name: &'static str, value_name: &'static str, with_flow: bool) -> Table {
        let n = self.rows.len();
        let (mut time, mut id) = (spare.f64(n), spare.u32(n));
        let (mut flow, mut class) = if with_flow { (spare.u32(n), spare.u32(n)) } else { (Vec::new(), Vec::new()) };
        let mut value = spare.f64(n);
        let (mut samples, mut block) = (self.iter(), Vec::with_capacity(TRANSPOSE_ROWS.min(n)));
        loop {
            block.clear();
            block.extend(samples.by_ref().take(TRANSPOSE_ROWS));
            if block.is_empty() {
                break;
            }
            let b = &block;
            time.extend(b.iter().map(|x| x.time_ns as f64 * 1e-9));
            id.extend(b.iter().map(Sample::id));
            if with_flow {
                flow.extend(b.iter().map(|x| x.flow));
                class.extend(b.iter().map(|x| u32::from(x.class())));
            }
            value.extend(b.iter().map(|x| x.value_ns as f64 * 1e-6));
        }
        let mut t = vec![("time_s", Column::F64(time)), (id_name, Column::U32(id))];
        if with_flow {
            t.push(("flow", Column::U32(flow)));
            t.push(("class", Column::U32(class)));
        }
        t.push((value_name, Column::F64(value)));
        t
    }
}

/// Rows turned into columns at a time: 24 KiB of samples, within any
/// level-1 data cache.
const TRANSPOSE_ROWS: usize = 1024;

/// Column buffers handed back by whoever wrote a chunk out
/// ([`Metrics::recycle`]), for the next chunks' sample columns. A run that
/// writes its tables as it goes then fills the same memory again, instead
/// of faulting in fresh pages for every chunk (more costly than filling
/// them) while the allocator returns the written ones to the system.
#[derive(Default, Clone, Debug)]
pub struct Spare {
    f64: Vec<Vec<f64>>,
    u32: Vec<Vec<u32>>,
}

/// Buffers kept of each type: one round of chunks of the per-sample tables
/// (`rtt`, `sojourn`, `probes`: six `f64` and five `u32` columns) fills
/// them; the rounds on their way to disk come back as these are taken.
const SPARE_MAX: usize = 6;
/// Buffers of fewer rows are not kept: a series' chunk (a row per flow or
/// link per interval) would only be outgrown by the next sample chunk.
const SPARE_MIN_ROWS: usize = 4096;

impl Spare {
    /// An empty buffer with room for `n` values.
    fn f64(&mut self, n: usize) -> Vec<f64> {
        room(largest(&mut self.f64), n)
    }
    fn u32(&mut self, n: usize) -> Vec<u32> {
        room(largest(&mut self.u32), n)
    }
    /// Keep `table`'s column buffers (emptied) for reuse.
    fn put(&mut self, table: Table) {
        for (_, c) in table {
            match c {
                Column::F64(mut v) if self.f64.len() < SPARE_MAX && v.capacity() >= SPARE_MIN_ROWS => {
                    v.clear();
                    self.f64.push(v);
                }
                Column::U32(mut v) if self.u32.len() < SPARE_MAX && v.capacity() >= SPARE_MIN_ROWS => {
                    v.clear();
                    self.u32.push(v);
                }
                _ => {}
            }
        }
    }
}

/// Spare buffers hold no data: metrics compare by their tables alone.
impl PartialEq for Spare {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The spare buffer of most room: chunks differ in rows (a chunk is cut
/// at the first check after it reached its size), and one that outgrows
/// its buffer moves it to fresh pages.
fn largest<T>(spare: &mut Vec<Vec<T>>) -> Option<Vec<T>> {
    let i = (0..spare.len()).max_by_key(|&i| spare[i].capacity())?;
    Some(spare.swap_remove(i))
}

/// `buf` when it has room for `n` values, else a new buffer with room for
/// half again as many (for the larger chunks to come).
fn room<T>(buf: Option<Vec<T>>, n: usize) -> Vec<T> {
    match buf {
        Some(v) if v.capacity() >= n => v,
        _ => Vec::with_capacity(n + n / 2),
    }
}

/// `empty_like`: a value whose named `Vec` fields (and arrays of them) are
/// empty with the capacity of this one's, to fill while this one is handed
/// out. Every field must be named (the struct literal checks it).
macro_rules! empty_like {
    ($t:ty: $($f:ident),* $(; $($a:ident),*)?) => {
        impl $t {
            pub fn empty_like(&self) -> Self {
                Self {
                    $($f: Vec::with_capacity(self.$f.capacity()),)*
                    $($($a: self.$a.each_ref().map(|v| Vec::with_capacity(v.capacity())),)*)?
                }
            }
        }
    };
}
empty_like!(FlowSeries: time_s, flow, goodput_mbps, throughput_mbps, delivered_bytes, cwnd_pkts, srtt_ms, pacing_mbps, inflight_pkts, ce_fraction, alpha, classic);
empty_like!(MediaSeries: time_s, flow, target_mbps, tx_mbps, rtp_queue_delay_ms, qdelay_ms, cwnd_bytes, bytes_in_flight, rtp_discards);
empty_like!(LinkSeries: time_s, link, backlog_pkts, backlog_bytes, tx_bytes, drops, marks, rate_mbps, prob_base, prob_c, prob_l);
empty_like!(capture::Capture: time_ns, link, endpoint, dir, size, ecn, dscp, kind, seq, len, ack, flags, nsack, cep; sack);

impl FlowSeries {
    fn into_table(self) -> Table {
        let f = self;
        vec![
            ("time_s", Column::F64(f.time_s)),
            ("flow", Column::U32(f.flow)),
            ("goodput_mbps", Column::F64(f.goodput_mbps)),
            ("throughput_mbps", Column::F64(f.throughput_mbps)),
            ("delivered_bytes", Column::U64(f.delivered_bytes)),
            ("cwnd_pkts", Column::F64(f.cwnd_pkts)),
            ("srtt_ms", Column::F64(f.srtt_ms)),
            ("pacing_mbps", Column::F64(f.pacing_mbps)),
            ("inflight_pkts", Column::F64(f.inflight_pkts)),
            ("ce_fraction", Column::F64(f.ce_fraction)),
            ("alpha", Column::F64(f.alpha)),
            ("classic", Column::F64(f.classic)),
        ]
    }
}

impl MediaSeries {
    fn into_table(self) -> Table {
        let m = self;
        vec![
            ("time_s", Column::F64(m.time_s)),
            ("flow", Column::U32(m.flow)),
            ("target_mbps", Column::F64(m.target_mbps)),
            ("tx_mbps", Column::F64(m.tx_mbps)),
            ("rtp_queue_delay_ms", Column::F64(m.rtp_queue_delay_ms)),
            ("qdelay_ms", Column::F64(m.qdelay_ms)),
            ("cwnd_bytes", Column::U64(m.cwnd_bytes)),
            ("bytes_in_flight", Column::U64(m.bytes_in_flight)),
            ("rtp_discards", Column::U64(m.rtp_discards)),
        ]
    }
}

impl LinkSeries {
    fn into_table(self) -> Table {
        let l = self;
        vec![
            ("time_s", Column::F64(l.time_s)),
            ("link", Column::U32(l.link)),
            ("backlog_pkts", Column::U64(l.backlog_pkts)),
            ("backlog_bytes", Column::U64(l.backlog_bytes)),
            ("tx_bytes", Column::U64(l.tx_bytes)),
            ("drops", Column::U64(l.drops)),
            ("marks", Column::U64(l.marks)),
            ("rate_mbps", Column::F64(l.rate_mbps)),
            ("prob_base", Column::F64(l.prob_base)),
            ("prob_c", Column::F64(l.prob_c)),
            ("prob_l", Column::F64(l.prob_l)),
        ]
    }
}

/// The tables in export order. Every one but `media_series` (whose values
/// the media summaries read at the end; a row per media flow per interval)
/// can be handed out in chunks during a run.
pub const TABLES: [&str; 7] = ["flow_series", "media_series", "rtt", "link_series", "sojourn", "probes", "capture"];

/// Bytes a buffered row of each table (in [`TABLES`] order) is counted as,
/// by the memory guard ([`crate::sim::Sim::memory_bytes`]), the cost
/// estimate ([`crate::scenario::limits::estimate`]) and the chunk sizes.
pub const ROW_BYTES: [u64; 7] = [92, 64, 25, 92, 25, 25, 128];

#[derive(Default, Clone, Debug, PartialEq)]
pub struct Metrics {
    pub flow_series: FlowSeries,
    pub media_series: MediaSeries,
    pub link_series: LinkSeries,
    pub rtt: Samples,
    pub sojourn: Samples,
    pub probes: Samples,
    pub capture: capture::Capture,
    /// Every RTT sample, dequeue sojourn and probe RTT after the warm-up,
    /// whatever the tables record (`rtt_samples`, `sojourn_every`).
    pub rtt_stats: hist::IdStats,
    pub sojourn_stats: hist::IdStats,
    pub probe_stats: hist::IdStats,
    /// Per media flow: how long each RTP packet sent after the warm-up
    /// waited in its sender's RTP queue.
    pub rtp_wait_stats: hist::IdStats,
    /// Bytes of each table (in [`TABLES`] order) handed out so far.
    spilled: [u64; TABLES.len()],
    spare: Spare,
}

impl Metrics {
    /// Empty buffers whose statistics leave out samples before `warmup`.
    pub fn with_warmup(warmup: Dur) -> Metrics {
        let mut m = Metrics::default();
        for s in [&mut m.rtt_stats, &mut m.sojourn_stats, &mut m.probe_stats, &mut m.rtp_wait_stats] {
            s.from_ns = warmup.0;
        }
        m
    }

    /// Rows buffered in table `k` of [`TABLES`].
    fn rows(&self, k: usize) -> usize {
        match TABLES[k] {
            "flow_series" => self.flow_series.time_s.len(),
            "media_series" => self.media_series.time_s.len(),
            "rtt" => self.rtt.len(),
            "link_series" => self.link_series.time_s.len(),
            "sojourn" => self.sojourn.len(),
            "probes" => self.probes.len(),
            _ => self.capture.time_ns.len(),
        }
    }

    /// Bytes of table rows handed out so far (as [`ROW_BYTES`] counts
    /// them): what a run has written to disk, before compression.
    pub fn spilled_bytes(&self) -> u64 {
        self.spilled.iter().sum()
    }

    /// Heap held: buffered rows (as [`ROW_BYTES`] counts them) and the
    /// statistics' histograms. Not the spare column buffers ([`Spare`]):
    /// like the chunks on their way to disk, which they were, they hold at
    /// most one round of chunks, whatever the run's length.
    pub fn heap_bytes(&self) -> u64 {
        let rows: u64 = (0..TABLES.len()).map(|k| self.rows(k) as u64 * ROW_BYTES[k]).sum();
        rows + self.rtt_stats.heap_bytes() + self.sojourn_stats.heap_bytes() + self.probe_stats.heap_bytes() + self.rtp_wait_stats.heap_bytes()
    }

    /// Table `k` of [`TABLES`], taken out of its buffers. `keep`: a
    /// series' or the capture's buffers are moved out without a copy and
    /// replaced by ones of the same capacity, so every chunk is allocated
    /// at one size and the allocator hands the next chunk the memory the
    /// last written one freed (allocating by growth each time fragmented
    /// the heap, and a long run's RSS crept up); a per-sample table's rows
    /// are copied into columns (from [`Spare`]) and its buffer is kept.
    fn take(&mut self, k: usize, keep: bool) -> Table {
        fn out<T: Default>(x: &mut T, keep: bool, empty_like: fn(&T) -> T) -> T {
            let fresh = if keep { empty_like(x) } else { T::default() };
            std::mem::replace(x, fresh)
        }
        match TABLES[k] {
            "flow_series" => out(&mut self.flow_series, keep, FlowSeries::empty_like).into_table(),
            "media_series" => out(&mut self.media_series, keep, MediaSeries::empty_like).into_table(),
            "rtt" => self.rtt.take_table(keep, &mut self.spare, "flow", "rtt_ms", false),
            "link_series" => out(&mut self.link_series, keep, LinkSeries::empty_like).into_table(),
            "sojourn" => self.sojourn.take_table(keep, &mut self.spare, "link", "sojourn_ms", true),
            "probes" => self.probes.take_table(keep, &mut self.spare, "probe", "rtt_ms", false),
            _ => out(&mut self.capture, keep, capture::Capture::empty_like).table(),
        }
    }

    /// The tables buffering at least `bytes` (series: `bytes / 16`; and at
    /// least 1/1024 of what they handed out before, so a file never needs
    /// more than a few thousand row groups), taken out of the buffers: a
    /// long run hands them out as it goes instead of holding them.
    /// `media_series` stays.
    pub fn take_chunks(&mut self, bytes: u64) -> Vec<(&'static str, Table)> {
        let mut out = Vec::new();
        for k in 0..TABLES.len() {
            let rows = self.rows(k);
            let size = rows as u64 * ROW_BYTES[k];
            // A series gains a row per flow or link per interval: at full
            // chunk size it would sit in memory for minutes.
            let chunk = if TABLES[k].ends_with("_series") { bytes / 16 } else { bytes };
            if TABLES[k] != "media_series" && rows > 0 && size >= chunk.max(self.spilled[k] / 1024) {
                self.spilled[k] += size;
                out.push((TABLES[k], self.take(k, true)));
            }
        }
        out
    }

    /// A chunk from [`take_chunks`](Self::take_chunks) that has been
    /// written out: its buffers serve the next chunks.
    pub fn recycle(&mut self, table: Table) {
        self.spare.put(table);
    }

    /// All tables with their column names (what is left of them after
    /// [`take_chunks`](Self::take_chunks)), as the bindings export them.
    pub fn into_tables(mut self) -> Vec<(&'static str, Table)> {
        (0..TABLES.len()).map(|k| (TABLES[k], self.take(k, false))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_columns_bytes_are_its_values_at_their_width() {
        assert_eq!(Column::F64(vec![1.0; 3]).bytes(), 24);
        assert_eq!(Column::U32(vec![1; 3]).bytes(), 12);
        assert_eq!(Column::U64(vec![1; 5]).bytes(), 40);
    }

    #[test]
    fn spare_buffers_serve_the_largest_first_and_keep_only_sample_sized_ones() {
        let mut spare = Spare::default();
        let (a, b) = (Vec::<f64>::with_capacity(5000), Vec::<f64>::with_capacity(9000));
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let series = vec![("s", Column::F64(vec![0.0; 10])), ("u", Column::U32(vec![1; 10]))];
        spare.put(series);
        spare.put(vec![("a", Column::F64(a)), ("b", Column::F64(b)), ("c", Column::U32(vec![7; SPARE_MIN_ROWS]))]);
        assert_eq!((spare.f64.len(), spare.u32.len()), (2, 1), "a series' small buffers are not kept");
        let got = spare.f64(2);
        assert_eq!((got.as_ptr(), got.len()), (pb, 0), "the largest, emptied");
        assert!(spare.u32(1).is_empty(), "emptied");
        // 6000 values do not fit the 5000 left: a new buffer, with room for half again as many.
        let big = spare.f64(6000);
        assert!(big.as_ptr() != pa && big.capacity() >= 9000);
        assert!(spare.f64.is_empty(), "the buffer too small was let go");
        for _ in 0..SPARE_MAX + 3 {
            spare.put(vec![("a", Column::F64(Vec::with_capacity(SPARE_MIN_ROWS)))]);
        }
        assert_eq!(spare.f64.len(), SPARE_MAX);
    }

    #[test]
    fn a_row_is_16_bytes_and_keeps_its_id_and_class_apart() {
        assert_eq!(std::mem::size_of::<Row>(), 16);
        let mut s = Samples::default();
        s.push_class(5, ID_MASK, 7, 9, 255);
        s.push(6, 3, u32::MAX, 10);
        let r: Vec<Sample> = s.iter().collect();
        assert_eq!((r[0].id(), r[0].class(), r[0].flow, r[0].time_ns, r[0].value_ns), (ID_MASK, 255, 7, 5, 9));
        assert_eq!((r[1].id(), r[1].class(), r[1].flow, r[1].time_ns, r[1].value_ns), (3, 0, u32::MAX, 6, 10));
        assert!(s.wide.is_empty(), "short gaps and values fit in 32 bits");
        let t = s.take_table(true, &mut Spare::default(), "link", "sojourn_ms", true);
        assert!(s.rows.is_empty() && s.rows.capacity() >= 2, "kept: emptied, its buffer kept");
        let names: Vec<&str> = t.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["time_s", "link", "flow", "class", "sojourn_ms"]);
        assert_eq!(t[0].1, Column::F64(vec![5.0 * 1e-9, 6.0 * 1e-9]));
        assert_eq!(t[1].1, Column::U32(vec![ID_MASK, 3]));
        assert_eq!(t[3].1, Column::U32(vec![255, 0]));
        assert_eq!(t[4].1, Column::F64(vec![9.0 * 1e-6, 10.0 * 1e-6]), "ns to ms");
    }

    /// Gaps and values at and around 32 bits, a time before the last one,
    /// chunks taken out between: every sample comes back exactly, and the
    /// tables hold what 64-bit rows made of them.
    #[test]
    fn samples_come_back_exactly_whatever_their_gaps_and_values() {
        let edge = u64::from(WIDE);
        for seed in 1..=8u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut rnd = |n: u64| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % n
            };
            let (mut s, mut spare) = (Samples::default(), Spare::default());
            let (mut now, mut kept, mut taken) = (0u64, Vec::new(), Vec::<Sample>::new());
            let mut wide = 0;
            for _ in 0..3000 {
                now = match rnd(12) {
                    0 => now + edge - 1 + rnd(3), // a gap just below, at or above 32 bits
                    1 => now.saturating_sub(rnd(1000)), // earlier than the last
                    2 => now + (rnd(4) << 40),
                    _ => now + rnd(3),
                };
                let v = match rnd(10) {
                    0 => edge - 1 + rnd(3),
                    1 => rnd(u64::MAX),
                    _ => rnd(1 << 30),
                };
                let (id, flow, class) = (rnd(u64::from(ID_MASK) + 1) as u32, rnd(1 << 32) as u32, rnd(256) as u8);
                let before = s.wide.len();
                s.push_class(now, id, flow, v, class);
                let gap = now.wrapping_sub(kept.last().or(taken.last()).map_or(0, |l: &Sample| l.time_ns));
                assert_eq!(s.wide.len() - before, usize::from(gap >= edge || v >= edge), "wide only when needed");
                wide += s.wide.len() - before;
                kept.push(Sample { time_ns: now, value_ns: v, flow, id_class: id | u32::from(class) << 24 });
                if rnd(500) == 0 {
                    let table = s.take_table(rnd(2) == 0, &mut spare, "link", "sojourn_ms", true);
                    let cols: Vec<&Column> = table.iter().map(|(_, c)| c).collect();
                    assert_eq!(*cols[0], Column::F64(kept.iter().map(|r| r.time_ns as f64 * 1e-9).collect()));
                    assert_eq!(*cols[1], Column::U32(kept.iter().map(Sample::id).collect()));
                    assert_eq!(*cols[2], Column::U32(kept.iter().map(|r| r.flow).collect()));
                    assert_eq!(*cols[3], Column::U32(kept.iter().map(|r| u32::from(r.class())).collect()));
                    assert_eq!(*cols[4], Column::F64(kept.iter().map(|r| r.value_ns as f64 * 1e-6).collect()));
                    assert!(s.is_empty() && s.wide.is_empty());
                    taken.append(&mut kept);
                }
                assert_eq!(s.len(), kept.len());
            }
            assert!(s.iter().eq(kept.iter().copied()), "seed {seed}");
            assert!(wide > 100 && wide < 2000, "seed {seed}: {wide} wide rows");
        }
    }
}

