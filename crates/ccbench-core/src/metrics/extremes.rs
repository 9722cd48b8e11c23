//! Minimum and maximum per time bucket of the two per-packet tables a run's
//! page draws (RTT samples per flow, sojourns per queue), taken from the
//! tables' chunks as they are written (the Python binding does it on the
//! Parquet writer's thread), so the page does not read those tables back.
//! [`super::chart`] merges these fine buckets into each figure's (a divisor
//! of [`FINE`]) and computes the same from the rows of a result loaded from
//! disk; both bin a sample at `floor(time_s / (duration / FINE))`, clamped
//! to `0..=FINE` ([`bucket_of`]).

use std::collections::HashMap;

use super::{Column, Table};

/// Buckets over the run: the page's `BUCKETS`.
pub const FINE: usize = 2000;

/// The fine bucket of a sample at `t` s, buckets `width` s wide:
/// `floor(t / width)` clamped to `0..=FINE`, which truncation gives too
/// (they differ only below 0), without a call into libm.
#[inline]
pub fn bucket_of(t: f64, width: f64) -> usize {
    ((t / width) as i64).clamp(0, FINE as i64) as usize
}

/// One table's rows and, per key, the minimum and maximum in each of the
/// `FINE + 1` buckets (the last for a sample at the run's very end);
/// +inf/−inf where a bucket is empty.
#[derive(Default)]
pub struct MinMax {
    pub rows: u64,
    pub keys: Vec<(Vec<f64>, Vec<f64>)>,
}

/// The buckets of `rtt` (key: flow) and `sojourn` (key: link · 2 + class).
pub struct PageBuckets {
    width: f64,
    pub tables: HashMap<&'static str, MinMax>,
}

fn f64s<'a>(t: &'a Table, name: &str) -> Option<&'a [f64]> {
    t.iter().find(|(n, _)| *n == name).and_then(|(_, c)| if let Column::F64(v) = c { Some(v.as_slice()) } else { None })
}

fn u32s<'a>(t: &'a Table, name: &str) -> Option<&'a [u32]> {
    t.iter().find(|(n, _)| *n == name).and_then(|(_, c)| if let Column::U32(v) = c { Some(v.as_slice()) } else { None })
}

impl PageBuckets {
    pub fn new(duration_s: f64) -> PageBuckets {
        let d = if duration_s > 0.0 { duration_s } else { 1.0 };
        PageBuckets { width: d / FINE as f64, tables: HashMap::new() }
    }

    /// Count a chunk of table `name` (other tables are ignored).
    pub fn add(&mut self, name: &'static str, table: &Table) {
        let (Some(time), value) = (f64s(table, "time_s"), match name {
            "rtt" => f64s(table, "rtt_ms"),
            "sojourn" => f64s(table, "sojourn_ms"),
            _ => return,
        }) else {
            return;
        };
        let Some(value) = value else { return };
        let first = u32s(table, if name == "rtt" { "flow" } else { "link" }).unwrap_or(&[]);
        let class = if name == "sojourn" { u32s(table, "class") } else { None };
        let acc = self.tables.entry(name).or_default();
        acc.rows += time.len() as u64;
        for (i, (&t, &v)) in time.iter().zip(value).enumerate() {
            if !v.is_finite() {
                continue;
            }
            let id = u64::from(first.get(i).copied().unwrap_or(0));
            let key = if name == "sojourn" { id * 2 + u64::from(class.and_then(|c| c.get(i).copied()).unwrap_or(0)) } else { id } as usize;
            if key >= acc.keys.len() {
                acc.keys.resize_with(key + 1, || (vec![f64::INFINITY; FINE + 1], vec![f64::NEG_INFINITY; FINE + 1]));
            }
            let b = bucket_of(t, self.width);
            let (lo, hi) = &mut acc.keys[key];
            lo[b] = lo[b].min(v);
            hi[b] = hi[b].max(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_in_their_bucket_with_the_extremes_kept() {
        let mut p = PageBuckets::new(2.0); // 1 ms buckets
        let t: Table = vec![
            ("time_s", Column::F64(vec![0.0, 0.0005, 0.0015, 2.0, 1.0])),
            ("link", Column::U32(vec![0, 0, 0, 1, 0])),
            ("flow", Column::U32(vec![7, 7, 7, 7, 7])),
            ("class", Column::U32(vec![0, 0, 1, 0, 0])),
            ("sojourn_ms", Column::F64(vec![3.0, 1.0, 5.0, 9.0, f64::NAN])),
        ];
        p.add("sojourn", &t);
        p.add("flow_series", &t);
        let m = &p.tables["sojourn"];
        assert_eq!((m.rows, m.keys.len()), (5, 3));
        assert_eq!((m.keys[0].0[0], m.keys[0].1[0]), (1.0, 3.0));
        assert_eq!((m.keys[1].0[1], m.keys[1].1[1]), (5.0, 5.0), "link 0 class 1 is key 1");
        assert_eq!(m.keys[2].1[FINE], 9.0, "the run's last instant has its own bucket");
        assert_eq!(m.keys[0].0[1000], f64::INFINITY, "NaN is not counted");
        assert!(!p.tables.contains_key("flow_series"));
    }
}
