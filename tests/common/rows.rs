//! Results rows built from the seed fixture (a cell's runs with chosen img/s, CPU per image or
//! crashes), written as results files, and `compare` run on two of them.

use std::path::{Path, PathBuf};

use shmbench::model::record::Status;
use shmbench::results::csv::{self, ResultsFile};
use shmbench::results::Row;

use super::shmbench;

/// Five runs' img/s of a steady cell: about 3000, within 0.5%.
pub const BASE: [f64; 5] = [3000.0, 3010.0, 2990.0, 3005.0, 2995.0];

pub fn fixture_rows() -> Vec<Row> {
    csv::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed.csv")).unwrap()
}

/// The docker-tuned cell, `rates.len()` runs with these img/s (a rate of 0 makes a crash).
pub fn runs(rates: &[f64], run_id: &str, kernel: &str) -> Vec<Row> {
    let template = fixture_rows()
        .into_iter()
        .find(|r| r.cell == "docker-tuned")
        .unwrap();
    rates
        .iter()
        .enumerate()
        .map(|(i, &rate)| {
            let mut r = template.clone();
            r.repeat = i as u32 + 1;
            r.run_id = run_id.to_string();
            r.kernel = kernel.to_string();
            r.steps_file = None;
            if rate > 0.0 {
                r.img_per_s = Some(rate);
            } else {
                // 0: a SIGBUS at step 12; -N: at step N.
                r.status = Status::Sigbus;
                r.crash_step = Some(if rate < 0.0 { -rate as u64 } else { 12 });
                r.img_per_s = None;
            }
            r
        })
        .collect()
}

pub fn write(dir: &Path, name: &str, rows: Vec<Row>) -> PathBuf {
    let path = dir.join(name);
    ResultsFile::create(&path).unwrap().replace(rows).unwrap();
    path
}

pub fn compare(base: &Path, cand: &Path) -> (Option<i32>, String) {
    let o = shmbench(&["compare", base.to_str().unwrap(), cand.to_str().unwrap()]);
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// `runs` with CPU per image set per run (img/s all the same).
pub fn runs_with_cpu(cpu: &[f64], run_id: &str) -> Vec<Row> {
    let rates = vec![3000.0; cpu.len()];
    runs(&rates, run_id, "6.1")
        .into_iter()
        .zip(cpu)
        .map(|(mut r, &c)| {
            r.cpu_ms_per_img = Some(c);
            r
        })
        .collect()
}
