//! Criterion benches of reading results files, the time of `compare`, `history`, `export` and
//! `report` on a fleet's year of rows: 20,000 rows of the committed example (30 cells over many
//! runs) read and summarised per cell, on every core ([`stream::each_prepared`]) and, for the
//! ratio, on one thread (the records parsed where they are read). Their ratio is what the
//! workers buy on this machine; rows per second times a million is the fleet's year. `merge`
//! is `shmbench merge` of the file with itself.

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use shmbench::analysis::cell_key::CellKey;
use shmbench::analysis::summary::Summaries;
use shmbench::results::columns::Columns;
use shmbench::results::{merge, record, stream};

const ROWS: usize = 20_000;

/// The example's rows as 30 cells over many runs.
fn fleet(dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example-seed-matrix.csv");
    let mut reader = csv::Reader::from_path(&example).unwrap();
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (run, cell) = (column("run_id"), column("cell"));
    let path = dir.join("fleet.csv");
    let mut writer = csv::Writer::from_path(&path).unwrap();
    writer.write_record(&headers).unwrap();
    for i in 0..ROWS {
        let mut row: Vec<String> = rows[i % rows.len()].iter().map(String::from).collect();
        row[run] = format!("run-{}", i / 30);
        row[cell] = format!("cell-{}", i % 30);
        writer.write_record(&row).unwrap();
    }
    writer.flush().unwrap();
    path
}

fn read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = fleet(dir.path());
    let mut group = c.benchmark_group("results_read");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(10);
    group.bench_function("every_core", |b| {
        b.iter(|| {
            let mut cells = Summaries::new();
            stream::each_prepared(std::slice::from_ref(&path), CellKey::of, |key, row| {
                cells.add(key, row);
                Ok(())
            })
            .unwrap();
            assert_eq!(cells.finish().len(), 30);
        })
    });
    group.bench_function("one_thread", |b| {
        b.iter(|| {
            let mut cells = Summaries::new();
            let mut reader = record::open(&path).unwrap();
            let columns = Columns::new(&record::headers(&mut reader, &path).unwrap());
            let (mut line, mut row) = (csv::ByteRecord::new(), Default::default());
            while reader.read_byte_record(&mut line).unwrap() {
                record::fill(&line, &columns, &path, &mut row).unwrap();
                cells.add(&CellKey::of(&row), &row);
            }
            assert_eq!(cells.finish().len(), 30);
        })
    });
    // The file merged with itself: every row read twice, written once (the second copy dropped
    // as a duplicate); streamed, so memory stays a few batches whatever the rows (500k rows:
    // 42 s and 2.0 GB when the rows were held, 5.7 s and 58 MB streamed).
    group.bench_function("merge", |b| {
        let out = dir.path().join("merged.csv");
        b.iter(|| {
            let twice = [path.clone(), path.clone()];
            let merged = merge::merge(&twice, &out).unwrap();
            assert_eq!((merged.rows, merged.duplicates_dropped), (ROWS, ROWS));
        })
    });
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
