//! Results files read on every core, rows handed over in file order. A fleet's year of results
//! is a million rows (hundreds of MB of CSV) and what reads them keeps only what it needs of each
//! row, so the time is the parsing: a thread splits the files into batches of records, workers
//! turn batches into rows, and the caller's thread is handed them in order, by reference.
//!
//! Memory goes back where it came from: batches of records return to the splitter to be
//! refilled, and batches of rows to the worker that made them, to be freed there (memory freed
//! on another thread than the one that allocated it costs glibc's allocator more than the
//! parsing). The channels are bounded, so a few batches are in flight whatever the files' size.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::columns::Columns;
use super::record::{bad_line, fill, headers, open};
use super::Row;

/// Records per batch: large enough that channel traffic is noise, small enough that the
/// batches in flight are a few MB.
const BATCH: usize = 512;

/// Record batches in flight per worker: one being parsed, one waiting.
const PER_WORKER: usize = 2;

/// Records of one file, in order, and what stopped the reading after them, if anything.
struct Batch {
    seq: u64,
    path: usize,
    columns: Arc<Columns>,
    records: Vec<csv::ByteRecord>,
    /// How many of `records` were filled (the rest are buffers kept for the next fill).
    filled: usize,
    error: Option<anyhow::Error>,
}

/// A worker's rows of one batch (each with what `prepare` made of it), and the error after
/// them, if any.
struct Parsed<T> {
    seq: u64,
    worker: usize,
    rows: Vec<(T, Row)>,
    error: Option<anyhow::Error>,
}

/// Hands every row of `paths` to `f` in file order, with what `prepare` made of it on a worker.
/// Stops at the first bad line (naming it) or the first error of `f`, after handing over every
/// row before it.
pub fn each_prepared<T: Send>(
    paths: &[PathBuf],
    prepare: impl Fn(&Row) -> T + Sync,
    mut f: impl FnMut(&T, &Row) -> Result<()>,
) -> Result<()> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let in_flight = workers * PER_WORKER;
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = sync_channel::<Batch>(in_flight);
        let (empty_tx, empty_rx) = sync_channel::<Vec<csv::ByteRecord>>(in_flight);
        let (done_tx, done_rx) = sync_channel::<Parsed<T>>(in_flight);
        // A batch is split only with a permit, given back when the caller has had its rows:
        // the batches read ahead of the caller stay `in_flight`, even while the worker with
        // the next one in order is stalled and the others run on (their batches would wait,
        // unbounded, to be handed over in order: 600 MB on a busy machine).
        let (permit_tx, permit_rx) = sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            let _ = permit_tx.send(());
        }
        scope.spawn(move || split(paths, in_flight, &full_tx, &empty_rx, &permit_rx));
        // The workers own the queue's receiver: when the caller stops early they all end, the
        // receiver goes, and the splitter's next send fails, ending it too.
        let full_rx = Arc::new(Mutex::new(full_rx));
        let mut give_back = Vec::new();
        for worker in 0..workers {
            let (back_tx, back_rx) = channel::<Vec<(T, Row)>>();
            give_back.push(back_tx);
            let (full_rx, empty_tx, done_tx) =
                (Arc::clone(&full_rx), empty_tx.clone(), done_tx.clone());
            let prepare = &prepare;
            scope.spawn(move || {
                let ends = Ends {
                    full: &full_rx,
                    empty: &empty_tx,
                    done: &done_tx,
                    given_back: &back_rx,
                };
                turn(paths, worker, ends, prepare)
            });
        }
        drop((empty_tx, done_tx));
        in_order(done_rx, permit_tx, &give_back, &mut f)
    })
}

/// Splits the files into batches of records, in order, refilling the batches given back; an
/// unreadable file or a line that is not CSV ends the batches with its error.
fn split(
    paths: &[PathBuf],
    in_flight: usize,
    full: &SyncSender<Batch>,
    empty: &Receiver<Vec<csv::ByteRecord>>,
    permits: &Receiver<()>,
) {
    // Fresh buffers until the first ones come back.
    let mut fresh = in_flight;
    let mut buffers = || match fresh {
        0 => empty.recv().ok(),
        _ => {
            fresh -= 1;
            Some(vec![csv::ByteRecord::new(); BATCH])
        }
    };
    let mut seq = 0;
    for (i, path) in paths.iter().enumerate() {
        let opened = open(path).and_then(|mut r| Ok((headers(&mut r, path)?, r)));
        let (columns, mut reader) = match opened {
            Ok((names, reader)) => (Arc::new(Columns::new(&names)), reader),
            Err(e) => {
                let _ = full.send(Batch {
                    seq,
                    path: i,
                    columns: Arc::new(Columns::new(&csv::ByteRecord::new())),
                    records: Vec::new(),
                    filled: 0,
                    error: Some(e),
                });
                return;
            }
        };
        loop {
            // No permit: the caller stopped (its end of the permits is gone).
            if permits.recv().is_err() {
                return;
            }
            let Some(mut records) = buffers() else { return };
            let mut filled = 0;
            let mut error = None;
            while filled < BATCH {
                match reader.read_byte_record(&mut records[filled]) {
                    Ok(true) => filled += 1,
                    Ok(false) => break,
                    Err(e) => {
                        let line = e.position().map_or(0, |p| p.line());
                        error = Some(bad_line(path, line, &e));
                        break;
                    }
                }
            }
            let last = filled < BATCH;
            let stop = error.is_some();
            let batch = Batch {
                seq,
                path: i,
                columns: Arc::clone(&columns),
                records,
                filled,
                error,
            };
            seq += 1;
            if full.send(batch).is_err() || stop {
                return;
            }
            if last {
                break;
            }
        }
    }
}

/// A worker's ends of the channels.
struct Ends<'a, T> {
    /// Batches of records to parse.
    full: &'a Mutex<Receiver<Batch>>,
    /// Where parsed batches' record buffers go back to be refilled.
    empty: &'a SyncSender<Vec<csv::ByteRecord>>,
    /// Where the rows go.
    done: &'a SyncSender<Parsed<T>>,
    /// This worker's rows, back from the caller to be filled again.
    given_back: &'a Receiver<Vec<(T, Row)>>,
}

/// Turns batches of records into rows until the queue ends or the caller stops listening.
fn turn<T>(paths: &[PathBuf], worker: usize, ends: Ends<'_, T>, prepare: &impl Fn(&Row) -> T) {
    let Ends {
        full,
        empty,
        done,
        given_back,
    } = ends;
    // Rows this worker made and the caller is done with, filled again in place: their strings
    // keep their capacity, so a warm worker allocates nothing per row.
    let mut spare: Vec<Row> = Vec::new();
    loop {
        while let Ok(rows) = given_back.try_recv() {
            spare.extend(rows.into_iter().map(|(_, row)| row));
        }
        // The lock is held only to take a batch, never while parsing it.
        let next = full.lock().map(|queue| queue.recv());
        let Ok(Ok(batch)) = next else { return };
        let mut rows = Vec::with_capacity(batch.filled);
        let mut error = None;
        for record in &batch.records[..batch.filled] {
            let mut row = spare.pop().unwrap_or_default();
            match fill(record, &batch.columns, &paths[batch.path], &mut row) {
                Ok(()) => rows.push((prepare(&row), row)),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        // The splitter may have ended (the last file read): then the buffers simply go.
        let _ = empty.try_send(batch.records);
        let parsed = Parsed {
            seq: batch.seq,
            worker,
            rows,
            error: error.or(batch.error),
        };
        if done.send(parsed).is_err() {
            return;
        }
    }
}

/// Hands the workers' rows to `f` in batch order, giving each batch back to its worker and a
/// permit to split another back to the splitter.
fn in_order<T>(
    done: Receiver<Parsed<T>>,
    permits: SyncSender<()>,
    give_back: &[Sender<Vec<(T, Row)>>],
    f: &mut impl FnMut(&T, &Row) -> Result<()>,
) -> Result<()> {
    let mut waiting: BTreeMap<u64, Parsed<T>> = BTreeMap::new();
    let mut next = 0;
    for parsed in done {
        waiting.insert(parsed.seq, parsed);
        while let Some(parsed) = waiting.remove(&next) {
            next += 1;
            for (prepared, row) in &parsed.rows {
                f(prepared, row)?;
            }
            if let Some(e) = parsed.error {
                return Err(e);
            }
            let _ = give_back[parsed.worker].send(parsed.rows);
            let _ = permits.send(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{atomic, record};

    /// `n` rows of the seed fixture, numbered by `repeat`, written to a new file.
    fn numbered(n: u32) -> (tempfile::TempDir, PathBuf) {
        let seed = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/seed.csv"
        ));
        let mut reader = record::open(seed).unwrap();
        let headers = record::headers(&mut reader, seed).unwrap();
        let first = reader.byte_records().next().unwrap().unwrap();
        let first = record::parse(&first, &Columns::new(&headers), seed).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        let rows: Vec<Row> = (1..=n)
            .map(|repeat| Row {
                repeat,
                ..first.clone()
            })
            .collect();
        atomic::write_csv(&path, &rows, None).unwrap();
        (dir, path)
    }

    #[test]
    fn rows_arrive_in_file_order_across_batches_and_files() {
        let (_dir, path) = numbered(BATCH as u32 * 5 + 7);
        let mut seen = Vec::new();
        let twice = [path.clone(), path];
        each_prepared(
            &twice,
            |r| r.repeat * 2,
            |doubled, row| {
                assert_eq!(*doubled, row.repeat * 2);
                seen.push(row.repeat);
                Ok(())
            },
        )
        .unwrap();
        let once: Vec<u32> = (1..=BATCH as u32 * 5 + 7).collect();
        assert_eq!(seen, [once.clone(), once].concat());
    }

    #[test]
    fn a_bad_line_is_named_after_every_row_before_it() {
        let (_dir, path) = numbered(BATCH as u32 * 3);
        // Row 1500 (line 1501, after the header) loses its columns.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[1500] = "5,torn";
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let mut seen = 0;
        let e = each_prepared(
            &[path],
            |_| (),
            |(), _| {
                seen += 1;
                Ok(())
            },
        )
        .unwrap_err();
        assert_eq!(seen, 1499);
        assert!(format!("{e:#}").contains("line 1501"), "{e:#}");
    }

    #[test]
    fn the_caller_stopping_ends_the_reading() {
        let (_dir, path) = numbered(BATCH as u32 * 8);
        let mut seen = 0;
        let e = each_prepared(
            &[path],
            |_| (),
            |(), _| {
                seen += 1;
                match seen {
                    700 => Err(anyhow::anyhow!("enough")),
                    _ => Ok(()),
                }
            },
        )
        .unwrap_err();
        assert_eq!((seen, e.to_string()), (700, "enough".to_string()));
    }
}
