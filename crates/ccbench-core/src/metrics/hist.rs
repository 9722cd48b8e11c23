//! Streaming statistics of time samples (RTT, queue sojourn) per id: exact
//! count, sum, minimum and maximum, and a log-linear histogram for the
//! percentiles, so the summary needs no stored samples and memory stays
//! flat in run length.
//!
//! Buckets hold one nanosecond below 1024 ns and 1/512 of their octave
//! above (HdrHistogram's layout with 9 sub-bucket bits). A bucket's
//! midpoint is within 2^-10 (0.098 %) of any value in it, so an order
//! statistic, and a percentile interpolated between two of them, is within
//! 0.098 % of the exact one; the smallest and largest sample are exact.
//! Indexing is integer arithmetic (no floating-point logarithm), so results
//! are bit-identical on every platform. Memory: 8 bytes per bucket between
//! the smallest and largest value seen, about 4 KiB per octave spanned.

use std::borrow::Cow;

/// Sub-bucket bits: 2^9 buckets per octave.
const SUB_BITS: u32 = 9;
/// Values below this have a bucket each.
const EXACT: u64 = 1 << (SUB_BITS + 1);
/// Relative error bound of a percentile read from the histogram.
pub const REL_ERROR: f64 = 1.0 / (1u64 << (SUB_BITS + 1)) as f64;

/// The bucket of value `v`: contiguous and monotone in `v`.
#[inline]
fn index(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (v >> shift) as usize
}

/// The smallest and largest value of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    if (i as u64) < EXACT {
        return (i as u64, i as u64);
    }
    let shift = (i >> SUB_BITS) - 1;
    let low = ((i - (shift << SUB_BITS)) as u64) << shift;
    (low, low + ((1u64 << shift) - 1))
}

/// Samples of one id (and class), in nanoseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogHist {
    counts: Vec<u64>,
    /// Bucket index of `counts[0]`.
    base: usize,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl LogHist {
    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        // Wraps below `base`, so one bounds check covers both edges.
        match self.counts.get_mut(i.wrapping_sub(self.base)) {
            Some(c) => *c += 1,
            None => self.grow_to(i, v),
        }
        self.n += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Widen the buckets to reach bucket `i` and count `v` there (rare: the
    /// range settles within a run's first samples).
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, i: usize, v: u64) {
        if self.counts.is_empty() {
            self.base = i;
            self.counts.push(0);
            self.min = v;
            self.max = v;
        } else if i < self.base {
            // Grow downwards at least doubling (a run's first samples are often its
            // largest), into a new vector: `splice` moved the counts one by one.
            let add = (self.base - i).max(self.counts.len()).min(self.base);
            let mut counts = Vec::with_capacity(add + self.counts.len());
            counts.resize(add, 0);
            counts.extend_from_slice(&self.counts);
            self.counts = counts;
            self.base -= add;
        } else {
            self.counts.resize(i - self.base + 1, 0);
        }
        self.counts[i - self.base] += 1;
    }

    pub fn merge(&mut self, o: &LogHist) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = o.clone();
            return;
        }
        let base = self.base.min(o.base);
        let end = (self.base + self.counts.len()).max(o.base + o.counts.len());
        let mut counts = vec![0; end - base];
        for h in [&*self, o] {
            for (k, c) in h.counts.iter().enumerate() {
                counts[h.base - base + k] += c;
            }
        }
        *self = LogHist { counts, base, n: self.n + o.n, sum: self.sum + o.sum, min: self.min.min(o.min), max: self.max.max(o.max) };
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean, ns.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }

    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    /// The order statistics of 0-based `ranks` (ascending), ns, in one pass
    /// over the buckets: exact at the ends, else the rank's bucket's
    /// midpoint, kept within [min, max].
    fn at_ranks(&self, ranks: &[u64]) -> Vec<f64> {
        let (mut k, mut seen) = (0, 0); // seen: the samples in buckets before k
        ranks
            .iter()
            .map(|&rank| {
                if rank == 0 {
                    return self.min as f64;
                }
                if rank + 1 >= self.n {
                    return self.max as f64;
                }
                while seen <= rank {
                    let Some(&c) = self.counts.get(k) else { return self.max as f64 };
                    seen += c;
                    k += 1;
                }
                let (lo, hi) = bounds(self.base + k - 1);
                ((lo as f64 + hi as f64) / 2.0).clamp(self.min as f64, self.max as f64)
            })
            .collect()
    }

    /// Percentiles `qs` (each in [0, 100]), ns, interpolating linearly
    /// between order statistics as numpy's default does (within
    /// [`REL_ERROR`] of it); one pass over the buckets for all of them.
    pub fn percentiles<const K: usize>(&self, qs: [f64; K]) -> [Option<f64>; K] {
        if self.n == 0 {
            return [None; K];
        }
        let v = self.percentile_list(&qs);
        std::array::from_fn(|j| Some(v[j]))
    }

    /// [`Self::percentiles`] of any number of `qs`; empty without samples.
    pub fn percentile_list(&self, qs: &[f64]) -> Vec<f64> {
        if self.n == 0 {
            return Vec::new();
        }
        let pos: Vec<f64> = qs.iter().map(|q| q / 100.0 * (self.n - 1) as f64).collect();
        // The pass needs the ranks ascending; neighbouring percentiles can share
        // ranks (positions 4.2 and 4.7 both need 4 and 5): each distinct one once.
        let mut ranks: Vec<u64> = pos.iter().flat_map(|p| [p.floor() as u64, p.ceil() as u64]).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let at = self.at_ranks(&ranks);
        let value = |rank: u64| at[ranks.partition_point(|&r| r < rank)];
        pos.iter()
            .map(|&p| {
                let (lo, hi) = (p.floor() as u64, p.ceil() as u64);
                let a = value(lo);
                if hi == lo {
                    a
                } else {
                    a + (value(hi) - a) * (p - lo as f64)
                }
            })
            .collect()
    }

    /// Percentile `q` in [0, 100], ns (see [`Self::percentiles`]).
    pub fn percentile(&self, q: f64) -> Option<f64> {
        self.percentiles([q])[0]
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        self.counts.capacity() as u64 * 8
    }
}

/// Histograms per id and queue class of the samples taken at or after
/// `from_ns` (the warm-up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IdStats {
    pub from_ns: u64,
    by_id: Vec<Vec<LogHist>>,
}

impl IdStats {
    #[inline(always)]
    pub fn record(&mut self, t_ns: u64, id: u32, class: u8, v: u64) {
        if t_ns < self.from_ns {
            return;
        }
        let (id, class) = (id as usize, class as usize);
        if id >= self.by_id.len() {
            self.by_id.resize_with(id + 1, Vec::new);
        }
        let classes = &mut self.by_id[id];
        if class >= classes.len() {
            classes.resize_with(class + 1, LogHist::default);
        }
        classes[class].record(v);
    }

    /// The samples of `id`, of one class or of all (merged only when there
    /// are several: a summary of 1000 flows would otherwise copy 1000 histograms).
    pub fn get(&self, id: u32, class: Option<u8>) -> Cow<'_, LogHist> {
        let classes = self.by_id.get(id as usize).map_or(&[][..], Vec::as_slice);
        match (class, classes) {
            (Some(c), _) => classes.get(c as usize).map_or_else(|| Cow::Owned(LogHist::default()), Cow::Borrowed),
            (None, [one]) => Cow::Borrowed(one),
            (None, _) => Cow::Owned(classes.iter().fold(LogHist::default(), |mut acc, h| {
                acc.merge(h);
                acc
            })),
        }
    }

    pub fn heap_bytes(&self) -> u64 {
        self.by_id.iter().flatten().map(LogHist::heap_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::summary::percentile;
    use crate::rng::SimRng;

    #[test]
    fn buckets_tile_the_values_in_order() {
        // Every bucket's bounds map back to it, the next bucket starts one
        // above, and its width is at most 1/512 of its lower bound.
        let mut next = 0u64;
        for i in 0..index(u64::MAX) + 1 {
            let (lo, hi) = bounds(i);
            assert_eq!(lo, next, "bucket {i}");
            assert_eq!(index(lo), i);
            assert_eq!(index(hi), i);
            assert!(hi >= lo);
            if lo >= EXACT {
                assert!((hi - lo + 1) * 512 <= lo, "bucket {i}: {lo}..{hi}");
            }
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
        assert_eq!(bounds(1024), (1024, 1025));
        assert_eq!(index(2047), 1535);
        assert_eq!(index(2048), 1536);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = LogHist::default();
        for v in [3u64, 1, 4, 1, 5, 9, 2, 6] {
            h.record(v);
        }
        let mut sorted = vec![1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0];
        sorted.sort_by(f64::total_cmp);
        for q in [0.0, 10.0, 50.0, 95.0, 99.0, 100.0] {
            assert_eq!(h.percentile(q), percentile(&sorted, q), "q = {q}");
        }
        assert_eq!(h.mean(), Some(31.0 / 8.0));
        assert_eq!((h.min(), h.max(), h.count()), (Some(1), Some(9), 8));
        assert_eq!(LogHist::default().percentile(50.0), None);
        assert_eq!(LogHist::default().mean(), None);
    }

    /// Percentiles against the exact numpy-style ones on several shapes of
    /// data (RTT-like, heavy tail, many equal values), seeds 1-5.
    #[test]
    fn percentiles_are_within_the_bound_of_the_exact_ones() {
        for seed in 1..=5 {
            let mut rng = SimRng::for_component(seed, "hist");
            let shapes: [&dyn Fn(&mut SimRng) -> u64; 4] = [
                &|r| 20_000_000 + (r.uniform() * 5e6) as u64,
                &|r| (1e3 / (1.0 - r.uniform()).powf(0.7)) as u64 * 1000,
                &|r| {
                    if r.uniform() < 0.6 {
                        0
                    } else {
                        (r.uniform() * 3e7) as u64
                    }
                },
                &|r| (r.uniform() * 2000.0) as u64,
            ];
            for (s, draw) in shapes.iter().enumerate() {
                let mut h = LogHist::default();
                let mut v: Vec<u64> = (0..5000 + 997 * s).map(|_| draw(&mut rng)).collect();
                for &x in &v {
                    h.record(x);
                }
                v.sort_unstable();
                let exact: Vec<f64> = v.iter().map(|&x| x as f64).collect();
                for q in [0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
                    let (got, want) = (h.percentile(q).unwrap(), percentile(&exact, q).unwrap());
                    assert!((got - want).abs() <= want * REL_ERROR, "seed {seed} shape {s} q {q}: {got} vs {want}");
                }
                let mean = exact.iter().sum::<f64>() / exact.len() as f64;
                assert!((h.mean().unwrap() - mean).abs() <= mean * 1e-12);
                assert_eq!((h.min(), h.max()), (v.first().copied(), v.last().copied()));
            }
        }
    }

    /// The order statistic of `rank` by a scan from the first bucket, as
    /// the one-pass [`LogHist::percentiles`] must find it.
    fn at_rank_by_scan(h: &LogHist, rank: u64) -> f64 {
        if rank == 0 {
            return h.min as f64;
        }
        if rank + 1 >= h.n {
            return h.max as f64;
        }
        let mut seen = 0;
        for (k, &c) in h.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                let (lo, hi) = bounds(h.base + k);
                return ((lo as f64 + hi as f64) / 2.0).clamp(h.min as f64, h.max as f64);
            }
        }
        unreachable!("rank {rank} beyond {} samples", h.n)
    }

    #[test]
    fn one_pass_percentiles_equal_a_scan_per_rank() {
        for seed in 1..=5 {
            let mut rng = SimRng::for_component(seed, "hist-ranks");
            for n in [1usize, 2, 3, 10, 257, 4000] {
                let mut h = LogHist::default();
                for _ in 0..n {
                    // Clusters far apart, so ranks fall in the same, in adjacent and in distant buckets.
                    let base = [0.0, 2e4, 3e7, 9e8][(rng.uniform() * 4.0) as usize];
                    h.record((base + rng.uniform() * 1e3) as u64);
                }
                let qs = [50.0, 0.0, 99.9, 0.1, 1.0, 25.0, 50.0, 90.0, 99.0, 95.0, 100.0, 49.0];
                let got = h.percentiles(qs);
                for (q, got) in qs.iter().zip(got) {
                    let pos = q / 100.0 * (n - 1) as f64;
                    let (lo, hi) = (pos.floor() as u64, pos.ceil() as u64);
                    let a = at_rank_by_scan(&h, lo);
                    let want = if hi == lo { a } else { a + (at_rank_by_scan(&h, hi) - a) * (pos - lo as f64) };
                    assert_eq!(got, Some(want), "seed {seed} n {n} q {q}");
                    assert_eq!(h.percentile(*q), Some(want));
                }
            }
        }
        assert_eq!(LogHist::default().percentiles([50.0, 99.0]), [None, None]);
    }

    #[test]
    fn buckets_end_at_the_largest_samples_bucket() {
        // Growing upwards adds buckets up to the new maximum's and no further;
        // growing downwards reaches at least the new minimum's.
        let mut h = LogHist::default();
        for v in [5_000u64, 40_000, 3_000_000, 2_000, 7, 9_000_000_000, 1] {
            h.record(v);
            assert_eq!(h.base + h.counts.len() - 1, index(h.max));
            assert!(h.base <= index(h.min));
            assert_ne!(h.counts[index(h.min) - h.base], 0);
            assert_ne!(*h.counts.last().unwrap(), 0);
        }
    }

    #[test]
    fn growing_downwards_and_merging_keep_every_count() {
        let (mut a, mut b, mut all) = (LogHist::default(), LogHist::default(), LogHist::default());
        let vals: Vec<u64> = (0..400).map(|k| (k * 7919 % 400) * 1_000_003 + 1).collect();
        for (k, &v) in vals.iter().rev().enumerate() {
            if k % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        let mut m = a.clone();
        m.merge(&b);
        assert_eq!(m.count(), 400);
        for q in [0.0, 33.0, 50.0, 77.0, 100.0] {
            assert_eq!(m.percentile(q), all.percentile(q));
        }
        assert_eq!((m.mean(), m.min(), m.max()), (all.mean(), all.min(), all.max()));
        let mut e = LogHist::default();
        e.merge(&a);
        assert_eq!(e, a);
        e.merge(&LogHist::default());
        assert_eq!(e, a);
    }

    #[test]
    fn id_stats_skip_the_warmup_and_split_classes() {
        let mut s = IdStats { from_ns: 100, ..Default::default() };
        s.record(99, 2, 0, 5);
        s.record(100, 2, 0, 7);
        s.record(150, 2, 1, 9);
        s.record(150, 0, 0, 1);
        assert_eq!(s.get(2, None).count(), 2);
        assert_eq!(s.get(2, Some(1)).percentile(50.0), Some(9.0));
        assert_eq!(s.get(2, Some(0)).min(), Some(7));
        assert_eq!(s.get(1, None).count(), 0);
        assert_eq!(s.get(7, Some(3)).count(), 0);
        assert!(s.heap_bytes() > 0);
    }
}
