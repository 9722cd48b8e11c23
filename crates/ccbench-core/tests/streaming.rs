//! Memory flat in run length: tables handed out in chunks during the run
//! add up to the tables of a run that keeps them, and the summary's
//! streaming statistics agree with the exact ones computed from every
//! recorded sample (`metrics/hist.rs`'s stated bound).

mod common;
use ccbench_core::metrics::hist::REL_ERROR;
use ccbench_core::metrics::summary::{percentile, QUANTILES};
use ccbench_core::metrics::{Column, Table, ROW_BYTES, TABLES};
use common::*;

fn scenario(qdisc: &str) -> String {
    let flows = tcp("a", "cubic", "") + &tcp("b", "reno", "start = \"1s\"") + PING;
    dumbbell("100Mbit", 30.0, qdisc, "8s", &flows)
}

fn run_spilled(text: &str, overrides: &[&str], bytes: u64) -> (ccbench_core::RunOutput, Vec<(&'static str, Table)>) {
    let (out, chunks, _) = run_spilled_back(text, overrides, bytes, false);
    (out, chunks)
}

/// As [`run_spilled`]; with `give_back` the sink hands each chunk back
/// once it has a copy (as `ccbench run`'s writer does once it has written
/// one), and the count of sample columns that came in a buffer handed back
/// before is returned too.
fn run_spilled_back(text: &str, overrides: &[&str], bytes: u64, give_back: bool) -> (ccbench_core::RunOutput, Vec<(&'static str, Table)>, usize) {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let mut chunks = Vec::new();
    let (mut handed, mut reused) = (std::collections::HashSet::new(), 0);
    let mut sink = |name: &'static str, t: Table, done: &mut Vec<Table>| {
        if !give_back {
            chunks.push((name, t));
            return true;
        }
        let buffers: Vec<usize> = t.iter().map(|(_, c)| c.as_ptr()).collect();
        if matches!(name, "rtt" | "sojourn" | "probes") {
            reused += buffers.iter().filter(|b| handed.contains(*b)).count();
        }
        handed.extend(buffers);
        chunks.push((name, t.clone()));
        done.push(t);
        true
    };
    let out = ccbench_core::run_with_spill(text, "t.toml", &o, &mut |_, _| false, Some((bytes, &mut sink))).unwrap().unwrap();
    (out, chunks, reused)
}

fn append(into: &mut Table, t: Table) {
    for ((n1, a), (n2, b)) in into.iter_mut().zip(t) {
        assert_eq!(*n1, n2);
        match (a, b) {
            (Column::F64(a), Column::F64(b)) => a.extend(b),
            (Column::U32(a), Column::U32(b)) => a.extend(b),
            (Column::U64(a), Column::U64(b)) => a.extend(b),
            _ => panic!("column {n1} changed type"),
        }
    }
}

#[test]
fn chunks_and_the_rest_are_the_whole_tables() {
    let ov = ["links.bottleneck.loss=0.001", "metrics.capture=[\"bottleneck\"]"];
    let whole = run(&scenario("{ kind = \"fq_codel\" }"), &ov);
    let (spilled, chunks) = run_spilled(&scenario("{ kind = \"fq_codel\" }"), &ov, 50_000);
    assert_eq!(spilled.summary, whole.summary);
    let names: std::collections::BTreeSet<_> = chunks.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["capture", "flow_series", "link_series", "rtt", "sojourn"], "probes stay below 50 kB");
    for (name, t) in &chunks {
        // Handed out at the first check (every 65536 events) after 50 kB
        // (series: 50 kB / 16) of rows as `ROW_BYTES` counts them: 2000
        // sample rows, 391 capture rows, 34 series rows.
        let rows = t[0].1.len();
        let k = TABLES.iter().position(|n| n == name).unwrap();
        let chunk: u64 = if name.ends_with("_series") { 50_000 / 16 } else { 50_000 };
        let min = chunk.div_ceil(ROW_BYTES[k]) as usize;
        assert!((min..min + 65536).contains(&rows), "{name}: chunk of {rows} rows");
    }
    assert_whole(spilled, chunks, whole);
}

/// Chunks handed back lend their buffers to the chunks after them, which
/// then fill the same memory; the tables are the same.
#[test]
fn chunks_handed_back_lend_their_buffers_to_the_next() {
    let ov = ["links.bottleneck.loss=0.001"];
    let whole = run(&scenario("{ kind = \"fq_codel\" }"), &ov);
    // 150 kB chunks: 6000 sample rows or more, enough for their buffers to be kept.
    let (spilled, chunks, reused) = run_spilled_back(&scenario("{ kind = \"fq_codel\" }"), &ov, 150_000, true);
    let samples = chunks.iter().filter(|(n, _)| matches!(*n, "rtt" | "sojourn")).count();
    assert!(samples >= 4, "{samples} sample chunks");
    // The first chunks find no buffer handed back; after them, most columns do.
    assert!(reused >= samples, "{reused} of the sample columns reused a buffer");
    assert_eq!(spilled.summary, whole.summary);
    assert_whole(spilled, chunks, whole);
}

/// `chunks` (in run order) and what the spilled run kept are the whole run's tables, bit for bit.
#[track_caller]
fn assert_whole(spilled: ccbench_core::RunOutput, chunks: Vec<(&'static str, Table)>, whole: ccbench_core::RunOutput) {
    // The chunks come in run order, a table's perhaps several; the rest
    // follows them.
    let mut joined: Vec<(&str, Table)> = Vec::new();
    for (name, t) in chunks {
        match joined.iter_mut().find(|(n, _)| *n == name) {
            Some((_, acc)) => append(acc, t),
            None => joined.push((name, t)),
        }
    }
    let mut rest = spilled.metrics.into_tables();
    for (name, mut acc) in joined {
        let at = rest.iter().position(|(n, _)| *n == name).unwrap();
        append(&mut acc, std::mem::take(&mut rest[at].1));
        rest[at].1 = acc;
    }
    let want = whole.metrics.into_tables();
    assert_eq!(rest.len(), want.len());
    for ((n1, a), (n2, b)) in rest.iter().zip(&want) {
        assert_eq!(n1, n2);
        for ((c1, x), (_, y)) in a.iter().zip(b) {
            assert!(x.to_le_bytes() == y.to_le_bytes(), "{n1}.{c1} differs");
        }
    }
}

/// Exact percentiles from the recorded samples of one id after the warm-up.
fn exact(t: &Table, id_col: &str, id: u32, value_col: &str, warm_s: f64) -> Vec<f64> {
    let col = |name: &str| &t.iter().find(|(n, _)| *n == name).unwrap().1;
    let (Column::F64(time), Column::U32(ids), Column::F64(v)) = (col("time_s"), col(id_col), col(value_col)) else { panic!("types") };
    let mut out: Vec<f64> = (0..v.len()).filter(|&k| ids[k] == id && time[k] >= warm_s).map(|k| v[k]).collect();
    out.sort_by(f64::total_cmp);
    out
}

#[track_caller]
fn close(got: Option<f64>, want: Option<f64>, bound: f64, what: &str) {
    let (g, w) = (got.unwrap(), want.unwrap());
    assert!((g - w).abs() <= w.abs() * bound + 1e-12, "{what}: {g} vs exact {w}");
}

/// Summary statistics against the exact ones from every sample, for a
/// lossy FQ-CoDel run and a DualPI2 run (two queues), seeds 1-5.
#[test]
fn summary_statistics_are_within_the_bound_of_the_exact_ones() {
    for qdisc in ["{ kind = \"fq_codel\" }", "{ kind = \"dualpi2\" }"] {
        for seed in 1..=5 {
            let s = format!("seed={seed}");
            let out = run(&scenario(qdisc), &["links.bottleneck.loss=0.002", "metrics.warmup=\"2s\"", &s]);
            let tables = out.metrics.into_tables();
            let table = |name: &str| &tables.iter().find(|(n, _)| *n == name).unwrap().1;
            for (k, id) in ["a", "b"].iter().enumerate() {
                let v = exact(table("rtt"), "flow", k as u32, "rtt_ms", 2.0);
                let f = flow(&out.summary, id);
                assert!(v.len() > 500);
                close(f.rtt_ms.mean, Some(v.iter().sum::<f64>() / v.len() as f64), 1e-9, "rtt mean");
                let r = &f.rtt_ms;
                for (q, got) in [(5.0, r.p5), (25.0, r.p25), (50.0, r.p50), (75.0, r.p75), (95.0, r.p95), (99.0, r.p99)] {
                    close(got, percentile(&v, q), REL_ERROR, &format!("{qdisc} seed {seed} flow {id} rtt p{q}"));
                }
            }
            // The 1001-point grids: every TCP flow's RTT together, the probes', each link's sojourn.
            let q = &out.summary.quantiles;
            let mut both = [exact(table("rtt"), "flow", 0, "rtt_ms", 2.0), exact(table("rtt"), "flow", 1, "rtt_ms", 2.0)].concat();
            both.sort_by(f64::total_cmp);
            let grids = [(&q.tcp_rtt_ms, both, "tcp rtt"), (&q.probe_rtt_ms, exact(table("probes"), "probe", 0, "rtt_ms", 2.0), "ping"),
                         (&q.sojourn_ms[0], exact(table("sojourn"), "link", 0, "sojourn_ms", 2.0), "sojourn")];
            for (grid, v, what) in grids {
                assert_eq!(grid.len(), QUANTILES, "{what}");
                for (k, &got) in grid.iter().enumerate() {
                    // within the histogram's bound and the rounding to four figures
                    close(Some(got), percentile(&v, k as f64 / 10.0), REL_ERROR + 5e-4, &format!("{qdisc} seed {seed} {what} q{k}"));
                }
            }
            assert_eq!(q.sojourn_ms.len(), out.summary.links.len());
            let v = exact(table("sojourn"), "link", 0, "sojourn_ms", 2.0);
            let l = link(&out.summary, "bottleneck");
            close(l.sojourn_ms.mean, Some(v.iter().sum::<f64>() / v.len() as f64), 1e-9, "sojourn mean");
            close(l.sojourn_ms.p50, percentile(&v, 50.0), REL_ERROR, "sojourn p50");
            close(l.sojourn_ms.p99, percentile(&v, 99.0), REL_ERROR, "sojourn p99");
            assert_eq!(l.sojourn_ms.max, v.last().copied());
            let v = exact(table("probes"), "probe", 0, "rtt_ms", 2.0);
            let p = probe(&out.summary, "ping");
            close(p.rtt_ms.p99, percentile(&v, 99.0), REL_ERROR, "ping p99");
            assert_eq!((p.min_ms, p.max_ms), (v.first().copied(), v.last().copied()));
        }
    }
}

/// The summary counts every sample whatever the tables record.
#[test]
fn recording_options_do_not_change_the_summary() {
    let all = run(&scenario("{ kind = \"fq_codel\" }"), &[]);
    let few = run(&scenario("{ kind = \"fq_codel\" }"), &["metrics.sojourn_every=10", "metrics.rtt_samples=false"]);
    assert_eq!(all.summary, few.summary);
    assert!(few.metrics.rtt.is_empty());
    assert!(few.metrics.sojourn.len() * 9 < all.metrics.sojourn.len());
}

/// Series are handed out too, and the summary's named-interval goodputs
/// and media sRTT (read from the series before) do not change.
#[test]
fn series_chunks_leave_the_summary_as_it_was() {
    let media = "[[flows]]\nid = \"m\"\nkind = \"media\"\necn = \"ect1\"\npath = [\"bottleneck\"]\nreverse = [\"return\"]\n";
    let flows = tcp("a", "cubic", "intervals = [{ name = \"mid\", from = \"2s\", to = \"6s\" }]") + &tcp("b", "reno", "start = \"1s\"") + PING + media;
    let text = dumbbell("100Mbit", 30.0, "{ kind = \"dualpi2\" }", "8s", &flows);
    let ov = ["metrics.interval=\"1ms\"", "metrics.warmup=\"1s\""];
    let whole = run(&text, &ov);
    let (spilled, chunks) = run_spilled(&text, &ov, 20_000);
    assert!(chunks.iter().any(|(n, _)| *n == "flow_series") && chunks.iter().any(|(n, _)| *n == "link_series"));
    assert_eq!(spilled.summary, whole.summary);
    assert!(flow(&whole.summary, "a").intervals[0].goodput_mbps.unwrap() > 10.0);
    assert!(flow(&whole.summary, "m").rtt_ms.p50.unwrap() > 30.0);
}
