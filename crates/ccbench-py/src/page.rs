//! The run page's figure arrays ([`ccbench_core::metrics::chart`]) for
//! `ccbench.simulate.page`: columns come in as the core hands them out
//! (dtype code, little-endian bytes), a figure's time column and series go
//! back as bytes, so the page needs no array library.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use ccbench_core::metrics::chart::{self, Fine, FineAcc, Rows, Source};

use crate::le;

/// A column: dtype code ("f64", "u32", "u64", "i64") and its little-endian bytes.
type Col<'py> = (String, Bound<'py, PyBytes>);

fn values<T>(b: &[u8], n: usize, f: impl Fn(&[u8]) -> T) -> Vec<T> {
    b.chunks_exact(n).map(f).collect()
}

fn floats(c: &Col<'_>) -> PyResult<Vec<f64>> {
    let b = c.1.as_bytes();
    Ok(match c.0.as_str() {
        "f64" => values(b, 8, |x| f64::from_le_bytes(x.try_into().expect("8 bytes"))),
        "u32" => values(b, 4, |x| f64::from(u32::from_le_bytes(x.try_into().expect("4 bytes")))),
        "u64" => values(b, 8, |x| u64::from_le_bytes(x.try_into().expect("8 bytes")) as f64),
        "i64" => values(b, 8, |x| i64::from_le_bytes(x.try_into().expect("8 bytes")) as f64),
        d => return Err(PyValueError::new_err(format!("unknown column type {d:?}"))),
    })
}

fn ints(c: &Col<'_>) -> PyResult<Vec<i64>> {
    let b = c.1.as_bytes();
    Ok(match c.0.as_str() {
        "u32" => values(b, 4, |x| i64::from(u32::from_le_bytes(x.try_into().expect("4 bytes")))),
        "u64" => values(b, 8, |x| u64::from_le_bytes(x.try_into().expect("8 bytes")) as i64),
        "i64" => values(b, 8, |x| i64::from_le_bytes(x.try_into().expect("8 bytes"))),
        d => return Err(PyValueError::new_err(format!("not an integer column type: {d:?}"))),
    })
}

fn f64_bytes<'py>(py: Python<'py>, v: &[f64]) -> PyResult<Bound<'py, PyBytes>> {
    le(py, v, f64::to_le_bytes)
}

/// Rows from (time, key, value, class, until): the key is `key · 2 + class`
/// when a class column is given (a queue of a link); `until`, each key's
/// last time.
fn rows(t: &Col<'_>, k: &Col<'_>, v: &Col<'_>, class: Option<&Col<'_>>, until: Option<Vec<f64>>) -> PyResult<Rows> {
    let (t, mut k, v) = (floats(t)?, ints(k)?, floats(v)?);
    let class = class.map(ints).transpose()?;
    if t.len() != k.len() || t.len() != v.len() || class.as_ref().is_some_and(|c| c.len() != t.len()) {
        return Err(PyValueError::new_err("columns of different lengths"));
    }
    if let Some(c) = class {
        for (k, c) in k.iter_mut().zip(c) {
            *k = *k * 2 + c;
        }
    }
    Ok(Rows::new(&t, &k, &v, until.as_deref()))
}

fn fine(d: &Bound<'_, PyDict>) -> PyResult<Fine> {
    let mut f = Fine::new();
    for (k, lohi) in d.iter() {
        let (lo, hi): (Bound<'_, PyBytes>, Bound<'_, PyBytes>) = lohi.extract()?;
        let (lo, hi) = (floats(&("f64".into(), lo))?, floats(&("f64".into(), hi))?);
        if lo.len() != chart::FINE + 1 || hi.len() != chart::FINE + 1 {
            return Err(PyValueError::new_err("fine buckets of the wrong length"));
        }
        f.insert(k.extract()?, (lo, hi));
    }
    Ok(f)
}

type Drawn<'py> = Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Option<f64>)>;

/// One figure: `parts` (source index, key) from `sources`, each
/// `("rows", time, key, value, class | None, until | None)` or
/// `("fine", {key: (lo, hi)})`; raw, or decimated into `buckets` over
/// `span` s. Returns the time column (float64 bytes) and per part None or
/// (values as float64 bytes, as float32 bytes, largest finite value | None).
#[pyfunction]
pub fn page_chart<'py>(
    py: Python<'py>,
    parts: Vec<(usize, i64)>,
    sources: Vec<Bound<'py, PyTuple>>,
    raw: bool,
    buckets: usize,
    span: f64,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Drawn<'py>>)> {
    if buckets == 0 || chart::FINE % buckets != 0 {
        return Err(PyValueError::new_err(format!("buckets must divide {}", chart::FINE)));
    }
    let mut srcs = Vec::with_capacity(sources.len());
    for s in &sources {
        let kind: String = s.get_item(0)?.extract()?;
        srcs.push(match kind.as_str() {
            "rows" => {
                let class: Option<Col<'_>> = s.get_item(4)?.extract()?;
                Source::Rows(rows(&s.get_item(1)?.extract()?, &s.get_item(2)?.extract()?, &s.get_item(3)?.extract()?, class.as_ref(), s.get_item(5)?.extract()?)?)
            }
            "fine" => Source::Fine(fine(s.get_item(1)?.cast()?)?),
            k => return Err(PyValueError::new_err(format!("unknown source kind {k:?}"))),
        });
    }
    let c = py.detach(|| chart::chart(&parts, &srcs, raw, buckets, span));
    let mut series = Vec::with_capacity(c.series.len());
    for s in &c.series {
        series.push(match s {
            Some(s) => Some((f64_bytes(py, &s.y)?, le(py, &s.y, |v| (v as f32).to_le_bytes())?, s.max)),
            None => None,
        });
    }
    Ok((f64_bytes(py, &c.x)?, series))
}

/// Fine buckets of a table read in batches (a result loaded from disk):
/// `PageFine(keys, span)`, `.add(time, key, value, class=None, until=None)`
/// per batch, `.finish()` → `{key: (lo, hi)}` as `page_chart` takes them.
#[pyclass]
pub struct PageFine(Option<FineAcc>);

#[pymethods]
impl PageFine {
    #[new]
    fn new(mut keys: Vec<i64>, span: f64) -> PageFine {
        keys.sort_unstable();
        keys.dedup();
        PageFine(Some(FineAcc::new(&keys, span)))
    }

    #[pyo3(signature = (t, k, v, class=None, until=None))]
    fn add(&mut self, t: Col<'_>, k: Col<'_>, v: Col<'_>, class: Option<Col<'_>>, until: Option<Vec<f64>>) -> PyResult<()> {
        let r = rows(&t, &k, &v, class.as_ref(), until)?;
        self.0.as_mut().ok_or_else(|| PyValueError::new_err("finished"))?.add(&r);
        Ok(())
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let acc = self.0.take().ok_or_else(|| PyValueError::new_err("finished"))?;
        let d = PyDict::new(py);
        for (k, (lo, hi)) in acc.finish() {
            d.set_item(k, (f64_bytes(py, &lo)?, f64_bytes(py, &hi)?))?;
        }
        Ok(d)
    }
}
