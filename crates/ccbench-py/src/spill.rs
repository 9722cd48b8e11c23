//! A run's tables written to Parquet by the binding itself: per-event
//! tables (RTT samples, sojourns, probes, captures) a row group at a time
//! while the run goes, as the core hands out chunks, so a long run's memory
//! stays flat; the rest at the end. Python then never holds or re-encodes
//! the tables of a run written to disk. A thread of its own encodes and
//! writes while the simulation goes on (one chunk queued at most, so memory
//! stays bounded). Column types are those the Python side documents: f64 as
//! DOUBLE, u32/u64 as INT32/INT64 annotated unsigned.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use ccbench_core::metrics::extremes::PageBuckets;
use ccbench_core::metrics::{Column, Table};
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// Hand the memory freed by written chunks back to the system. glibc keeps
/// freed heap memory for reuse, and the chunks' differently sized buffers
/// fragment it, so without this a long run's RSS crept up by a few MB per
/// ten minutes simulated although it held no more data. Done after every
/// [`TRIM_EVERY`]th chunk, not each: the encoder's buffers for the next
/// chunk would otherwise fault in fresh pages every time (a third of the
/// page faults of `ccbench run`, each dearer than the bytes it maps).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Chunks written between two [`release_freed`] (a chunk is about 1 MiB).
const TRIM_EVERY: u64 = 8;

/// The files being written, each table's in `<dir>/<table>.parquet`.
struct Writers {
    dir: PathBuf,
    writers: HashMap<&'static str, (PathBuf, SerializedFileWriter<File>)>,
}

/// The files written by table name, and the page's buckets of them.
type Written = Result<(Vec<(&'static str, PathBuf)>, PageBuckets), String>;

/// [`Writers`] on a thread of their own, fed through a channel.
pub struct SpillFiles {
    tx: Option<SyncSender<(&'static str, Table)>>,
    /// Chunks written out, back for their buffers to be reused.
    back: Receiver<Table>,
    /// Tables handed out in chunks while the run went.
    spilled: HashSet<&'static str>,
    /// Tables also kept whole in memory as they are written (for the
    /// run's page), while they take at most `keep_bytes`; `None` once one
    /// outgrew it.
    kept: HashMap<&'static str, Option<Table>>,
    keep_bytes: usize,
    worker: Option<JoinHandle<Written>>,
}

fn table_bytes(t: &Table) -> usize {
    t.iter().map(|(_, c)| c.bytes()).sum()
}

/// `from`'s rows after `into`'s (the same columns, as every chunk of a table has).
fn append(into: &mut Table, from: &Table) {
    if into.is_empty() {
        into.clone_from(from);
        return;
    }
    for ((_, a), (_, b)) in into.iter_mut().zip(from) {
        match (a, b) {
            (Column::F64(a), Column::F64(b)) => a.extend_from_slice(b),
            (Column::U32(a), Column::U32(b)) => a.extend_from_slice(b),
            (Column::U64(a), Column::U64(b)) => a.extend_from_slice(b),
            _ => unreachable!("a table's chunks have the same columns"),
        }
    }
}

impl SpillFiles {
    /// `duration_s`: the run's, for the page's time buckets; `keep`: the
    /// tables to keep whole in memory too, each while it takes at most
    /// `keep_bytes` ([`SpillFiles::whole`]).
    pub fn new(dir: &Path, duration_s: f64, keep: &[&'static str], keep_bytes: usize) -> SpillFiles {
        let (tx, rx) = sync_channel::<(&'static str, Table)>(1);
        let (give_back, back) = channel::<Table>();
        let mut w = Writers { dir: dir.to_path_buf(), writers: HashMap::new() };
        let worker = std::thread::spawn(move || {
            let mut page = PageBuckets::new(duration_s);
            let mut written = 0u64;
            for (name, table) in rx {
                w.write(name, &table)?;
                page.add(name, &table);
                // Its buffers go back to the engine for the next chunks (the
                // engine may have finished: then they are freed here).
                let _ = give_back.send(table);
                written += 1;
                if written % TRIM_EVERY == 0 {
                    release_freed();
                }
            }
            let files = w.close();
            release_freed();
            Ok((files?, page))
        });
        let kept = keep.iter().map(|&name| (name, Some(Table::new()))).collect();
        SpillFiles { tx: Some(tx), back, spilled: HashSet::new(), kept, keep_bytes, worker: Some(worker) }
    }

    /// Queue `table` to be appended to its file as one row group (waits
    /// while the previous chunk is still queued), and put the chunks
    /// written since into `done`. An error is the writer's.
    pub fn write(&mut self, name: &'static str, table: Table, done: &mut Vec<Table>) -> Result<(), String> {
        done.extend(self.back.try_iter());
        self.spilled.insert(name);
        if let Some(slot) = self.kept.get_mut(name) {
            match slot {
                Some(kept) if table_bytes(kept) + table_bytes(&table) <= self.keep_bytes => append(kept, &table),
                _ => *slot = None,
            }
        }
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send((name, table)).is_ok());
        if sent {
            Ok(())
        } else {
            Err(self.join().err().unwrap_or_else(|| "the Parquet writer stopped".into()))
        }
    }

    /// Whether part of `name` was written while the run went (so what is
    /// left of it at the end is not the whole table).
    pub fn spilled(&self, name: &str) -> bool {
        self.spilled.contains(name)
    }

    /// A kept table whole, with `rest` (what the run still holds of it) after
    /// the chunks written so far; `None` if it is not kept or outgrew the limit.
    pub fn whole(&self, name: &str, rest: &Table) -> Option<Table> {
        let kept = self.kept.get(name)?.as_ref()?;
        if table_bytes(kept) + table_bytes(rest) > self.keep_bytes {
            return None;
        }
        let mut t = kept.clone();
        append(&mut t, rest);
        Some(t)
    }

    fn join(&mut self) -> Written {
        self.tx = None; // ends the writer's loop
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the Parquet writer panicked".into()),
            None => Err("the Parquet writer already stopped".into()),
        }
    }

    /// Write the rest of every table (all of a table never spilled; an empty
    /// one as a file with its schema and no rows), close the files and
    /// return their paths by table name.
    pub fn finish(mut self, tables: Vec<(&'static str, Table)>) -> Written {
        self.kept.clear(); // what was kept has been asked for ([`SpillFiles::whole`]) by now
        let mut done = Vec::new(); // nothing more to fill: written chunks are freed
        for (name, table) in tables {
            self.write(name, table, &mut done)?;
            done.clear();
        }
        self.join()
    }
}

impl Drop for SpillFiles {
    /// An interrupted run still closes its files before Python removes them.
    fn drop(&mut self) {
        if self.worker.is_some() {
            let _ = self.join();
        }
    }
}

fn schema(table: &Table) -> Result<Type, ParquetError> {
    let fields = table
        .iter()
        .map(|(name, col)| {
            let (physical, logical) = match col {
                Column::F64(_) => (Physical::DOUBLE, None),
                Column::U32(_) => (Physical::INT32, Some(LogicalType::Integer { bit_width: 32, is_signed: false })),
                Column::U64(_) => (Physical::INT64, Some(LogicalType::Integer { bit_width: 64, is_signed: false })),
            };
            Type::primitive_type_builder(name, physical).with_repetition(Repetition::REQUIRED).with_logical_type(logical).build().map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Type::group_type_builder("schema").with_fields(fields).build()
}

impl Writers {
    /// Append `table` to `<dir>/<name>.parquet` as one row group (a table
    /// with no rows: the file with its schema, nothing appended).
    fn write(&mut self, name: &'static str, table: &Table) -> Result<(), String> {
        let (path, w) = match self.writers.entry(name) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let path = self.dir.join(format!("{name}.parquet"));
                let props = Arc::new(
                    WriterProperties::builder()
                        .set_compression(Compression::LZ4_RAW)
                        .set_dictionary_enabled(false)
                        .set_statistics_enabled(EnabledStatistics::Chunk)
                        .build(),
                );
                let file = File::create(&path).map_err(|err| format!("{}: {err}", path.display()))?;
                let w = schema(table).and_then(|s| SerializedFileWriter::new(file, Arc::new(s), props)).map_err(|err| format!("{}: {err}", path.display()))?;
                e.insert((path, w))
            }
        };
        write_row_group(w, table).map_err(|err| format!("{}: {err}", path.display()))
    }

    fn close(self) -> Result<Vec<(&'static str, PathBuf)>, String> {
        let mut out = Vec::new();
        for (name, (path, w)) in self.writers {
            w.close().map_err(|err| format!("{}: {err}", path.display()))?;
            out.push((name, path));
        }
        out.sort();
        Ok(out)
    }
}

fn write_row_group(w: &mut SerializedFileWriter<File>, table: &Table) -> Result<(), ParquetError> {
    if table.first().is_some_and(|(_, c)| c.is_empty()) {
        return Ok(()); // the schema alone
    }
    let mut rg = w.next_row_group()?;
    let mut cols = table.iter();
    while let Some(mut cw) = rg.next_column()? {
        let Some((_, col)) = cols.next() else { return Err(ParquetError::General("more schema columns than table columns".into())) };
        match (cw.untyped(), col) {
            (ColumnWriter::DoubleColumnWriter(t), Column::F64(v)) => t.write_batch(v, None, None)?,
            // Unsigned values are stored in the signed physical types, bit for bit.
            (ColumnWriter::Int32ColumnWriter(t), Column::U32(v)) => t.write_batch(&v.iter().map(|&x| x as i32).collect::<Vec<_>>(), None, None)?,
            (ColumnWriter::Int64ColumnWriter(t), Column::U64(v)) => t.write_batch(&v.iter().map(|&x| x as i64).collect::<Vec<_>>(), None, None)?,
            _ => return Err(ParquetError::General("column type differs from the file's schema".into())),
        };
        cw.close()?;
    }
    rg.close()?;
    Ok(())
}
