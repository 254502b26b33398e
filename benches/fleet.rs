//! Criterion benches of `shmbench fleet` at a fleet's scale, rows made in memory from the
//! committed seed fixture (img/s and CPU per image jittered per node and run; one node slow, one
//! crashing): 100 nodes x the seed matrix (its 5 cells) x 5 repeats (2,500 rows), and 10,000
//! nodes x 3 cells x 3 repeats (90,000 rows, which took 53 s when every node's tests pooled the
//! others' runs anew; 0.36 s since the pools are made once per cell). `judge` is the analysis and
//! the table from rows in memory; `command` is what the command does, from a results file: read
//! on every core, judged, rendered. The target is under 2 s for the command at both sizes, and
//! the time per row about the same at both (the judgement is O(n log n) in the nodes).

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use shmbench::fleet::judge::judge;
use shmbench::fleet::judge::rows::{Builder, NodeName};
use shmbench::fleet::judge::text::render_text;
use shmbench::fleet::judge::verdict::Thresholds;
use shmbench::model::record::Status;
use shmbench::results::csv::{self, ResultsFile};
use shmbench::results::{stream, Row};

/// The fleets benched: (nodes, seed cells, repeats).
const SIZES: [(usize, usize, usize); 2] = [(100, 5, 5), (10_000, 3, 3)];

/// A value in [-1, 1] fixed by its inputs (splitmix64).
fn wobble(a: usize, b: usize) -> f64 {
    let mut h = (a as u64) << 32 | b as u64;
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
    ((h ^ (h >> 31)) % 2001) as f64 / 1000.0 - 1.0
}

/// The fleet's rows: the first `cells` seed cells on each of `nodes` nodes, `repeats` times.
fn fleet_rows(nodes: usize, cells: usize, repeats: usize) -> Vec<Row> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed.csv");
    let mut cells_read = csv::read(&path).unwrap();
    cells_read.truncate(cells);
    let cells = cells_read;
    let mut rows = Vec::with_capacity(nodes * cells.len() * repeats);
    for node in 0..nodes {
        for repeat in 0..repeats {
            for (c, template) in cells.iter().enumerate() {
                let mut r = template.clone();
                (r.host, r.repeat, r.steps_file) = (format!("gpu-{node}"), repeat as u32 + 1, None);
                let scale = match node {
                    17 => 0.6,
                    _ => 1.0 + 0.05 * wobble(node, repeat * 8 + c),
                };
                r.img_per_s = r.img_per_s.map(|x| x * scale);
                r.cpu_ms_per_img = Some(2.0 * (1.0 + 0.03 * wobble(node + 1000, repeat * 8 + c)));
                if node == 42 {
                    (r.status, r.crash_step, r.img_per_s) = (Status::Sigbus, Some(3), None);
                }
                rows.push(r);
            }
        }
    }
    rows
}

fn fleet(c: &mut Criterion) {
    for (nodes, cells, repeats) in SIZES {
        fleet_of(c, nodes, cells, repeats);
    }
}

fn fleet_of(c: &mut Criterion, nodes: usize, cells: usize, repeats: usize) {
    let rows = fleet_rows(nodes, cells, repeats);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fleet.csv");
    ResultsFile::create(&path)
        .unwrap()
        .replace(rows.clone())
        .unwrap();
    let mut group = c.benchmark_group(format!("fleet/{nodes} nodes"));
    group.throughput(Throughput::Elements(rows.len() as u64));
    group.sample_size(10);
    group.bench_function("judge", |b| {
        b.iter(|| {
            let mut builder = Builder::new();
            rows.iter().for_each(|r| builder.add(r));
            let verdict = judge(&builder.finish().unwrap(), None, Thresholds::default());
            assert!(verdict.flagged());
            render_text(&verdict)
        })
    });
    group.bench_function("command", |b| {
        b.iter(|| {
            let mut builder = Builder::new();
            stream::each_prepared(
                std::slice::from_ref(&path),
                Builder::keys(NodeName::Node),
                |k, r| {
                    builder.add_keyed(k, r);
                    Ok(())
                },
            )
            .unwrap();
            let verdict = judge(&builder.finish().unwrap(), None, Thresholds::default());
            let flagged: Vec<&str> = (verdict.nodes.iter())
                .filter(|n| !n.findings.is_empty())
                .map(|n| n.node.as_str())
                .collect();
            assert_eq!(flagged, ["gpu-17", "gpu-42"]);
            render_text(&verdict)
        })
    });
    group.finish();
}

criterion_group!(benches, fleet);
criterion_main!(benches);
