//! Criterion benches of the results tools on a fleet's year of rows, at the sizes their targets
//! name (issue 60): one file of 1,000,000 rows (1,000 cells x 1,000 runs) for `merge`, `history`,
//! `report` and `export`'s reading, and two files of 500,000 rows (1,000 cells x 500 runs a
//! side) for `compare`. Rows are the committed example's, renamed into runs and cells. Each
//! bench does what its command does, from the files (the command line's own threads aside);
//! the target is under 10 s each on two quiet cores. `read/one_thread` reads the year with the
//! records parsed where they are read: its ratio to `read/every_core` is what the reading
//! threads buy on this machine.
//!
//! Memory is the commands' own, measured beside: `SHMBENCH_BENCH_KEEP=DIR cargo bench --bench
//! results_read -- --list` writes the files into DIR and keeps them, then e.g.
//! `/usr/bin/time -v target/release/shmbench merge DIR/year.csv --out DIR/merged.csv`
//! (docs/SAFETY.md has the numbers).

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use shmbench::analysis::cell_key::CellKey;
use shmbench::analysis::compare::{self, Match, Thresholds};
use shmbench::analysis::history::{self, By, Metric};
use shmbench::analysis::summary::{CellSummary, Summaries};
use shmbench::present::compare_tables;
use shmbench::present::report::{FormatName, ReportContent};
use shmbench::results::columns::Columns;
use shmbench::results::{merge, record, stream};

const CELLS: usize = 1_000;
const YEAR: usize = 1_000_000;
const SIDE: usize = 500_000;

/// `rows` rows of the example as `CELLS` cells over runs numbered from `first_run`.
fn write_rows(path: &Path, rows: usize, first_run: usize) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example-seed-matrix.csv");
    let mut reader = csv::Reader::from_path(&example).unwrap();
    let headers = reader.headers().unwrap().clone();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (run, cell) = (column("run_id"), column("cell"));
    let mut writer = csv::Writer::from_path(path).unwrap();
    writer.write_record(&headers).unwrap();
    for i in 0..rows {
        let mut row: Vec<String> = records[i % records.len()]
            .iter()
            .map(String::from)
            .collect();
        row[run] = format!("run-{}", first_run + i / CELLS);
        row[cell] = format!("cell-{}", i % CELLS);
        writer.write_record(&row).unwrap();
    }
    writer.flush().unwrap();
}

/// Where the files go: `SHMBENCH_BENCH_KEEP`'s folder (kept), else a temporary one.
fn files() -> (Option<tempfile::TempDir>, PathBuf) {
    match std::env::var_os("SHMBENCH_BENCH_KEEP") {
        Some(dir) => {
            std::fs::create_dir_all(&dir).unwrap();
            (None, PathBuf::from(dir))
        }
        None => {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().to_path_buf();
            (Some(tmp), dir)
        }
    }
}

/// Every cell of `path` summarised as it is read, on every core.
fn summarised(
    path: &Path,
    key: impl Fn(&shmbench::results::Row) -> CellKey + Sync,
) -> Vec<CellSummary> {
    let mut cells = Summaries::new();
    stream::each_prepared(
        std::slice::from_ref(&path.to_path_buf()),
        key,
        |key, row| {
            cells.add(key, row);
            Ok(())
        },
    )
    .unwrap();
    cells.finish()
}

fn read(c: &mut Criterion) {
    let (_tmp, dir) = files();
    let (year, base, cand) = (
        dir.join("year.csv"),
        dir.join("base.csv"),
        dir.join("cand.csv"),
    );
    write_rows(&year, YEAR, 0);
    write_rows(&base, SIDE, 0);
    write_rows(&cand, SIDE, SIDE / CELLS);
    let mut group = c.benchmark_group("results_read");
    group.sample_size(10);
    group.throughput(Throughput::Elements(YEAR as u64));
    group.bench_function("read/every_core", |b| {
        b.iter(|| assert_eq!(summarised(&year, CellKey::of).len(), CELLS))
    });
    group.bench_function("read/one_thread", |b| {
        b.iter(|| {
            let mut cells = Summaries::new();
            let mut reader = record::open(&year).unwrap();
            let columns = Columns::new(&record::headers(&mut reader, &year).unwrap());
            let (mut line, mut row) = (csv::ByteRecord::new(), Default::default());
            while reader.read_byte_record(&mut line).unwrap() {
                record::fill(&line, &columns, &year, &mut row).unwrap();
                cells.add(&CellKey::of(&row), &row);
            }
            assert_eq!(cells.finish().len(), CELLS);
        })
    });
    // `shmbench compare base.csv cand.csv`: both sides read at once, compared, the table made.
    group.throughput(Throughput::Elements(2 * SIDE as u64));
    group.bench_function("compare", |b| {
        b.iter(|| {
            let key = |r: &shmbench::results::Row| Match::Config.key(r, None);
            let (base, cand) = std::thread::scope(|scope| {
                let base = scope.spawn(|| summarised(&base, key));
                (base.join().unwrap(), summarised(&cand, key))
            });
            let comparisons = compare::compare_summaries(&base, &cand, Thresholds::default());
            assert_eq!(comparisons.len(), CELLS);
            compare_tables::render(&comparisons, Thresholds::default())
        })
    });
    group.throughput(Throughput::Elements(YEAR as u64));
    // `shmbench history year.csv` (by time, img/s).
    group.bench_function("history", |b| {
        b.iter(|| {
            let mut builder = history::Builder::new(By::Time, Metric::ImgPerS, Match::Config, 0.05);
            let keys = builder.keys();
            stream::each_prepared(std::slice::from_ref(&year), keys, |keys, row| {
                builder.add_keyed(keys, row);
                Ok(())
            })
            .unwrap();
            assert_eq!(builder.finish().unwrap().trends.len(), CELLS);
        })
    });
    // `shmbench report year.csv --format markdown,json`.
    group.bench_function("report", |b| {
        let out = dir.join("report");
        b.iter(|| {
            let content = ReportContent::load(std::slice::from_ref(&year)).unwrap();
            content
                .write(&out, &[FormatName::Markdown, FormatName::Json])
                .unwrap()
        })
    });
    // `shmbench merge year.csv`: every row read, made a line on the reading threads, written.
    group.bench_function("merge", |b| {
        let out = dir.join("merged.csv");
        b.iter(|| {
            let merged = merge::merge(std::slice::from_ref(&year), &out).unwrap();
            assert_eq!((merged.rows, merged.duplicates_dropped), (YEAR, 0));
        })
    });
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
