//! The arrays of a run page's figures (`ccbench.simulate.page`): each
//! figure's series on one time column, the samples as they are when the
//! figure has few of them, else each series' minimum and maximum per time
//! bucket. Done here rather than in Python so that writing a page needs no
//! array library (NumPy's import alone took longer than a short run).
//!
//! A figure with few points draws them raw: times to the microsecond, the
//! union of its series' times as the column, each series the mean of its
//! samples at a time (NaN where it has none). Otherwise every series is cut
//! into the same buckets over the run, a divisor of the [`FINE`] ones the
//! core keeps while it writes the per-packet tables ([`super::extremes`]):
//! each bucket's minimum at its start and maximum at its middle, so the
//! series share fixed times; a time no series has a value at is left out.
//! Values are rounded to four significant figures (the page's precision).

use std::collections::BTreeMap;

pub use super::extremes::{bucket_of, FINE};

/// Per key, the minimum and maximum in each of the `FINE + 1` buckets (the
/// last for a sample at the run's very end); +inf/−inf where one is empty.
pub type Fine = BTreeMap<i64, (Vec<f64>, Vec<f64>)>;

/// A table's samples: time (s), key (flow, link, queue) and value; rows
/// whose value is not finite are not kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    pub t: Vec<f64>,
    pub k: Vec<i64>,
    pub v: Vec<f64>,
}

impl Rows {
    /// The rows of `t`, `k`, `v` (equal lengths) up to each key's `until`
    /// (a key past its end: all of them), non-finite values left out.
    pub fn new(t: &[f64], k: &[i64], v: &[f64], until: Option<&[f64]>) -> Rows {
        let mut r = Rows::default();
        for ((&t, &k), &v) in t.iter().zip(k).zip(v) {
            let stop = until.and_then(|u| usize::try_from(k).ok().and_then(|i| u.get(i))).copied().unwrap_or(f64::INFINITY);
            if v.is_finite() && t <= stop {
                r.t.push(t);
                r.k.push(k);
                r.v.push(v);
            }
        }
        r
    }
}

/// [`Fine`] buckets of `keys` (sorted) over a run of `span` s, from rows
/// added a batch at a time (a table too large to hold whole).
pub struct FineAcc {
    keys: Vec<i64>,
    width: f64,
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl FineAcc {
    pub fn new(keys: &[i64], span: f64) -> FineAcc {
        let n = keys.len() * (FINE + 1);
        FineAcc { keys: keys.to_vec(), width: span / FINE as f64, lo: vec![f64::INFINITY; n], hi: vec![f64::NEG_INFINITY; n] }
    }

    /// Count `rows`; a key not asked for is ignored.
    pub fn add(&mut self, rows: &Rows) {
        for ((&t, &k), &v) in rows.t.iter().zip(&rows.k).zip(&rows.v) {
            let Ok(row) = self.keys.binary_search(&k) else { continue };
            let at = row * (FINE + 1) + bucket_of(t, self.width);
            self.lo[at] = nan_min(self.lo[at], v);
            self.hi[at] = nan_max(self.hi[at], v);
        }
    }

    /// Every key asked for, with or without samples.
    pub fn finish(self) -> Fine {
        let slots = FINE + 1;
        self.keys.iter().enumerate().map(|(n, &k)| (k, (self.lo[n * slots..(n + 1) * slots].to_vec(), self.hi[n * slots..(n + 1) * slots].to_vec()))).collect()
    }
}

/// Where a figure's series come from: rows, or their fine buckets.
pub enum Source {
    Rows(Rows),
    Fine(Fine),
}

/// One series: its values on the figure's time column (NaN where it has
/// none) and the largest finite one.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub y: Vec<f64>,
    pub max: Option<f64>,
}

/// A figure: its time column and, for each part asked for, the series
/// (None: the part has nothing to draw).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chart {
    pub x: Vec<f64>,
    pub series: Vec<Option<Series>>,
}

/// The figure of `parts` (source index, key): raw, or decimated into
/// `buckets` (a divisor of [`FINE`]) over `span` s.
pub fn chart(parts: &[(usize, i64)], sources: &[Source], raw: bool, buckets: usize, span: f64) -> Chart {
    if raw {
        raw_chart(parts, sources)
    } else {
        decimated_chart(parts, sources, buckets, span)
    }
}

/// Each part's samples, times to the microsecond, on the union of their times.
fn raw_chart(parts: &[(usize, i64)], sources: &[Source]) -> Chart {
    let mut points: BTreeMap<(usize, i64), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for &(s, k) in parts {
        if points.contains_key(&(s, k)) {
            continue;
        }
        let Some(Source::Rows(r)) = sources.get(s) else { continue };
        let (mut t, mut v) = (Vec::new(), Vec::new());
        for i in 0..r.k.len() {
            if r.k[i] == k {
                t.push(round_to(r.t[i], 1e6));
                v.push(r.v[i]);
            }
        }
        if !t.is_empty() {
            points.insert((s, k), (t, v));
        }
    }
    if points.is_empty() {
        return Chart { x: Vec::new(), series: vec![None; parts.len()] };
    }
    let mut x: Vec<f64> = points.values().flat_map(|(t, _)| t.iter().copied()).collect();
    x.sort_by(f64::total_cmp);
    x.dedup_by(|a, b| a == b);
    let series = parts
        .iter()
        .map(|p| {
            let (t, v) = points.get(p)?;
            let (mut sum, mut n) = (vec![0.0; x.len()], vec![0u64; x.len()]);
            for (&t, &v) in t.iter().zip(v) {
                let at = x.partition_point(|&a| a < t);
                sum[at] += v;
                n[at] += 1;
            }
            // A time with several samples draws their mean; 0 / 0 is NaN where there are none.
            let y: Vec<f64> = sum.iter().zip(&n).map(|(&s, &n)| sig_figs(s / n as f64, 4)).collect();
            Some(Series { max: finite_max(&y), y })
        })
        .collect();
    Chart { x, series }
}

/// Each part's minimum (at a bucket's start) and maximum (at its middle) per bucket.
fn decimated_chart(parts: &[(usize, i64)], sources: &[Source], buckets: usize, span: f64) -> Chart {
    let width = span / buckets as f64;
    let mut rows: BTreeMap<(usize, i64), Vec<f64>> = BTreeMap::new();
    let mut from_rows: BTreeMap<usize, Fine> = BTreeMap::new();
    for &(s, k) in parts {
        if rows.contains_key(&(s, k)) {
            continue;
        }
        let fine = match sources.get(s) {
            Some(Source::Fine(f)) => f,
            Some(Source::Rows(r)) => from_rows.entry(s).or_insert_with(|| {
                let mut keys: Vec<i64> = parts.iter().filter(|p| p.0 == s).map(|p| p.1).collect();
                keys.sort_unstable();
                keys.dedup();
                let mut acc = FineAcc::new(&keys, span);
                acc.add(r);
                acc.finish()
            }),
            None => continue,
        };
        if let Some((lo, hi)) = fine.get(&k) {
            if let Some(row) = min_max_row(lo, hi, buckets) {
                rows.insert((s, k), row);
            }
        }
    }
    if rows.is_empty() {
        return Chart { x: Vec::new(), series: vec![None; parts.len()] };
    }
    let slots = 2 * (buckets + 1);
    let mut present = vec![false; slots];
    for r in rows.values() {
        for (p, v) in present.iter_mut().zip(r) {
            *p |= v.is_finite();
        }
    }
    let x = (0..slots)
        .filter(|&i| present[i])
        .map(|i| {
            let start = (i / 2) as f64 * width;
            round_to(if i % 2 == 0 { start } else { start + width / 2.0 }, 1e6)
        })
        .collect();
    let series = parts
        .iter()
        .map(|p| {
            let row = rows.get(p)?;
            // + 0.0: a −0.0 reads as 0.0, as a sum of one sample does in a raw figure
            let y: Vec<f64> = row.iter().zip(&present).filter(|(_, &keep)| keep).map(|(&v, _)| sig_figs(v + 0.0, 4)).collect();
            Some(Series { max: finite_max(&y), y })
        })
        .collect();
    Chart { x, series }
}

/// One key's fine buckets merged `FINE / buckets` at a time (the last, the
/// run's end, kept alone), minimum and maximum interleaved; NaN where a
/// bucket is empty; None if every bucket is.
fn min_max_row(lo: &[f64], hi: &[f64], buckets: usize) -> Option<Vec<f64>> {
    let m = FINE / buckets;
    let mut row = Vec::with_capacity(2 * (buckets + 1));
    let mut any = false;
    for b in 0..=buckets {
        let span = if b < buckets { b * m..(b + 1) * m } else { FINE..FINE + 1 };
        let (l, h) = (lo[span.clone()].iter().copied().reduce(nan_min)?, hi[span].iter().copied().reduce(nan_max)?);
        if l.is_finite() {
            any = true;
            row.extend([l, h]);
        } else {
            row.extend([f64::NAN, f64::NAN]);
        }
    }
    any.then_some(row)
}

/// The minimum, NaN if either is (as NumPy's `minimum`).
fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn finite_max(y: &[f64]) -> Option<f64> {
    y.iter().copied().filter(|v| v.is_finite()).reduce(f64::max)
}

/// `x` rounded to a multiple of `1 / scale` (`scale` a power of ten), half to even.
fn round_to(x: f64, scale: f64) -> f64 {
    round_even(x * scale) / scale
}

/// `x` rounded to an integer, half to even (`rint`), without a call into libm:
/// adding and taking away 2^52 leaves the integer part under the default
/// rounding mode; a double of 2^52 or more is an integer already.
#[inline]
fn round_even(x: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let a = x.abs();
    if a < TWO_52 {
        ((a + TWO_52) - TWO_52).copysign(x)
    } else {
        x
    }
}

/// `y` rounded to `digits` significant figures; zero, NaN and ±inf as they are.
pub fn sig_figs(y: f64, digits: i32) -> f64 {
    if !y.is_finite() || y == 0.0 {
        return y;
    }
    let a = y.abs();
    // The decimal exponent, 10^e ≤ |y| < 10^(e+1), from the binary one (a logarithm per value took
    // most of a page): e2·log10(2) floored is e or one below it. (A subnormal's scale overflows
    // whatever its exponent: it rounds to NaN, as it did with NumPy.)
    let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let g = f64::from(e2) * std::f64::consts::LOG10_2;
    let mut e = g as i32 - i32::from(g < 0.0 && f64::from(g as i32) != g); // floor, without libm
    if a >= pow10(e + 1) {
        e += 1;
    }
    let scale = pow10(digits - 1 - e);
    round_even(y * scale) / scale
}

/// 10^k correctly rounded (inf past the largest double, 0 below the smallest).
fn pow10(k: i32) -> f64 {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| (-POW10_ZERO..=POW10_ZERO).map(|k| format!("1e{k}").parse().expect("a power of ten")).collect());
    let i = (k + POW10_ZERO).clamp(0, 2 * POW10_ZERO);
    t[i as usize]
}

/// Exponents from −340 to 340: finite non-zero doubles lie between 10^−324 and 10^308.
const POW10_ZERO: i32 = 340;

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(t: &[f64], k: &[i64], v: &[f64]) -> Rows {
        Rows::new(t, k, v, None)
    }

    #[test]
    fn four_significant_figures_half_to_even() {
        let got: Vec<f64> = [1234.5678, 0.000123456, -98765.4, 9.99951, 42.0, 1000.0, 999.95, 0.5, 12345.0, 12355.0].iter().map(|&v| sig_figs(v, 4)).collect();
        assert_eq!(got, [1235.0, 0.0001235, -98770.0, 10.0, 42.0, 1000.0, 1000.0, 0.5, 12340.0, 12360.0]);
        for v in [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(sig_figs(v, 4).to_bits(), v.to_bits());
        }
        assert!(sig_figs(f64::NAN, 4).is_nan());
        assert!(sig_figs(1e-310, 4).is_nan(), "a subnormal's scale overflows, as with NumPy");
        assert_eq!(sig_figs(f64::MAX, 4), f64::INFINITY, "rounded up past the largest double, as NumPy does");
    }

    #[test]
    fn powers_of_ten_are_the_nearest_doubles() {
        assert_eq!(pow10(0), 1.0);
        assert_eq!(pow10(22), 1e22);
        assert_eq!(pow10(-5), 0.00001);
        assert_eq!(pow10(309), f64::INFINITY);
        assert_eq!(pow10(-330), 0.0);
    }

    #[test]
    fn raw_figure_is_the_union_of_times_with_means_where_samples_share_one() {
        let src = [Source::Rows(rows(&[0.1, 0.2, 0.2, 0.3, 0.1], &[0, 0, 0, 1, 1], &[1.0, 2.0, 4.0, 5.0, f64::NAN]))];
        let c = chart(&[(0, 0), (0, 1), (0, 7)], &src, true, 200, 1.0);
        assert_eq!(c.x, [0.1, 0.2, 0.3]);
        let s0 = c.series[0].as_ref().unwrap();
        assert_eq!(s0.y[..2], [1.0, 3.0]);
        assert!(s0.y[2].is_nan());
        assert_eq!(s0.max, Some(3.0));
        let s1 = c.series[1].as_ref().unwrap();
        assert!(s1.y[0].is_nan() && s1.y[1].is_nan() && s1.y[2] == 5.0, "its NaN sample at 0.1 is not drawn");
        assert_eq!(c.series[2], None, "a key without samples draws nothing");
    }

    #[test]
    fn raw_times_are_rounded_to_the_microsecond() {
        let src = [Source::Rows(rows(&[0.100_000_4, 0.100_000_6], &[3, 3], &[1.0, 3.0]))];
        let c = chart(&[(0, 3)], &src, true, 200, 1.0);
        assert_eq!(c.x, [0.1, 0.100_001]);
    }

    #[test]
    fn rows_stop_at_their_keys_end() {
        let r = Rows::new(&[1.0, 2.0, 3.0, 3.0], &[0, 0, 0, 5], &[1.0, 2.0, 3.0, 4.0], Some(&[2.0]));
        assert_eq!(r, Rows { t: vec![1.0, 2.0, 3.0], k: vec![0, 0, 5], v: vec![1.0, 2.0, 4.0] });
    }

    #[test]
    fn decimated_figure_keeps_each_buckets_extremes_at_fixed_times() {
        // 1 s, 200 buckets of 5 ms: key 0 has two samples in bucket 0, key 1 one at the very end.
        let src = [Source::Rows(rows(&[0.001, 0.004, 1.0], &[0, 0, 1], &[7.0, -2.0, 4.0]))];
        let c = chart(&[(0, 0), (0, 1)], &src, false, 200, 1.0);
        assert_eq!(c.x, [0.0, 0.0025, 1.0, 1.0025]);
        let (a, b) = (c.series[0].as_ref().unwrap(), c.series[1].as_ref().unwrap());
        assert_eq!(a.y[..2], [-2.0, 7.0]);
        assert!(a.y[2].is_nan() && a.y[3].is_nan());
        assert!(b.y[0].is_nan());
        assert_eq!(b.y[2..], [4.0, 4.0]);
        assert_eq!((a.max, b.max), (Some(7.0), Some(4.0)));
    }

    #[test]
    fn fine_buckets_merge_into_the_figures() {
        let mut lo = vec![f64::INFINITY; FINE + 1];
        let mut hi = vec![f64::NEG_INFINITY; FINE + 1];
        (lo[0], hi[0], lo[9], hi[9], lo[10], hi[10]) = (3.0, 4.0, -0.0, 1.0, 8.0, 9.0);
        let fine: Fine = [(2, (lo, hi))].into_iter().collect();
        let c = chart(&[(0, 2), (0, 3)], &[Source::Fine(fine)], false, 200, 2.0);
        // buckets of 10 fine ones (10 ms): the first holds fine 0-9, the second fine 10
        assert_eq!(c.x, [0.0, 0.005, 0.01, 0.015]);
        let y = &c.series[0].as_ref().unwrap().y;
        assert_eq!(y, &[-0.0, 4.0, 8.0, 9.0]);
        assert!(y[0].is_sign_positive(), "−0.0 is drawn as 0.0");
        assert_eq!(c.series[1], None);
    }

    #[test]
    fn an_empty_key_draws_nothing_and_a_nan_bucket_spreads_as_numpy_minimum_does() {
        let empty = (vec![f64::INFINITY; FINE + 1], vec![f64::NEG_INFINITY; FINE + 1]);
        let mut nan = empty.clone();
        (nan.0[0], nan.1[0], nan.0[1], nan.1[1], nan.0[20], nan.1[20]) = (f64::NAN, 2.0, 1.0, 3.0, 5.0, 6.0);
        (nan.0[40], nan.1[40], nan.0[41], nan.1[41]) = (7.0, f64::NAN, 8.0, 9.0);
        let fine: Fine = [(0, empty), (1, nan)].into_iter().collect();
        let c = chart(&[(0, 0), (0, 1)], &[Source::Fine(fine)], false, 200, 2.0);
        assert_eq!(c.series[0], None);
        // Fine buckets 0-9 merged hold a NaN minimum: bucket 0 is NaN, so not drawn; fine 20 is bucket
        // 2; bucket 4 (fine 40-49) has its minimum but a NaN maximum, which is not drawn either.
        assert_eq!(c.x, [0.02, 0.025, 0.04]);
        assert_eq!(c.series[1].as_ref().unwrap().y, [5.0, 6.0, 7.0]);
    }

    #[test]
    fn fine_buckets_from_rows_bin_as_the_core_does() {
        let r = rows(&[0.0, 0.0005, 2.0, 1.0], &[4, 4, 4, 9], &[3.0, 1.0, 9.0, 2.0]);
        let mut acc = FineAcc::new(&[4, 6], 2.0);
        acc.add(&r);
        let f = acc.finish();
        assert_eq!(f.keys().copied().collect::<Vec<_>>(), [4, 6]);
        assert_eq!((f[&4].0[0], f[&4].1[0], f[&4].1[FINE]), (1.0, 3.0, 9.0));
        assert!(f[&6].0.iter().all(|v| v.is_infinite()));
    }

    #[test]
    fn nothing_to_draw_is_an_empty_figure() {
        let c = chart(&[(0, 1)], &[Source::Rows(Rows::default())], true, 200, 1.0);
        assert_eq!(c, Chart { x: vec![], series: vec![None] });
        let c = chart(&[(0, 1)], &[Source::Fine(Fine::new())], false, 200, 1.0);
        assert_eq!(c, Chart { x: vec![], series: vec![None] });
    }
}
