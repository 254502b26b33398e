//! Repeated runs of one cell, summarised: what identifies a cell across result files (its
//! scenario, name and configuration), the outcome it had most often, and the statistics of its
//! passing runs: img/s and CPU per image, each a median with a 95% bootstrap interval.

use std::collections::HashMap;
use std::fmt::{Display, Write};

use serde::Serialize;

pub use super::runs::Outcome;
use super::runs::Runs;
use super::stats;
use model::estimate::median;
use results::Row;

/// A cell-key field that a history may let vary between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Varying {
    /// The /dev/shm size (and so the runtime that provides it).
    Shm,
    /// The torch allocation profile.
    Torch,
    /// The kernel (a VM's, or the host's).
    Kernel,
}

/// An optional knob as a row records it: its value, or the word for its absence.
struct Or<'a, T>(&'a Option<T>, &'static str);

impl<T: Display> Display for Or<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str(self.1),
        }
    }
}

/// Calls `f` with each knob that makes a cell what it is (those the knob declaration gives the
/// identity role), by its flag name, as a row records it (written by `Display`, so keying a
/// million rows allocates no text per knob). A test holds it to the declaration.
fn each_knob(r: &Row, f: &mut dyn FnMut(&'static str, &dyn Display)) {
    f("loader", &r.loader);
    f("runtime", &r.runtime);
    f("strategy", &r.strategy);
    f("torch", &r.torch);
    f("workers", &r.workers);
    f("prefetch", &r.prefetch);
    f("batch", &r.batch);
    f("shape", &r.shape);
    f("dtype", &r.dtype);
    f("shm-size", &Or(&r.shm_bytes, "default"));
    f("ipc", &r.ipc);
    f("memory", &Or(&r.memory_bytes, "default"));
    f("shm-tmpfs", &r.shm_tmpfs);
    f("pin-memory", &r.pin_memory);
    f("touch", &r.touch);
    f("compute-ms", &r.compute_ms);
    f("decode-us", &r.decode_us);
    f("main-us", &r.main_us);
    f("retain-every", &r.retain_every);
    f("steps", &r.steps);
    f("epochs", &r.epochs);
    f("cpus", &Or(&r.cpus, "any"));
    f("nofile", &Or(&r.nofile, "default"));
    f("kernel", &Or(&r.vm_kernel, "host"));
    f("shm-remount", &Or(&r.shm_remount_bytes, "default"));
    f("container", &r.container);
    f("persistent-workers", &r.persistent_workers);
    // A VM's size and how it ran (the accelerator a guest got, not `auto`); none elsewhere.
    f("vm-memory", &Or(&r.vm_memory_bytes, "none"));
    f("vm-cpus", &Or(&r.vm_cpus, "none"));
    f("accel", &Or(&r.vm_accel, "none"));
    // A watched job is its command (and the image it ran in).
    f("command", &Or(&r.watched_command, ""));
    f("image", &Or(&r.image, ""));
    // The knobs added after schema 5, each in its own column.
    r.added.each_identity(f);
}

/// The knobs that make a cell what it is, by their flag names, as a row records them.
pub fn knobs(r: &Row) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    each_knob(r, &mut |name, value| out.push((name, value.to_string())));
    out
}

/// What must be equal for two rows to be the same cell.
pub fn cell_key(r: &Row) -> String {
    cell_key_except(r, None)
}

/// The cell key without one varying field, for histories along that field.
pub fn cell_key_except(r: &Row, varying: Option<Varying>) -> String {
    let hidden: &[&str] = match varying {
        Some(Varying::Shm) => &["shm-size", "runtime"],
        Some(Varying::Torch) => &["torch"],
        Some(Varying::Kernel) => &["kernel", "runtime"],
        None => &[],
    };
    let mut key = String::with_capacity(320);
    let _ = write!(key, "{}/{} [", r.scenario, r.cell);
    let mut first = true;
    each_knob(r, &mut |name, value| {
        if !hidden.contains(&name) {
            let sep = if std::mem::take(&mut first) { "" } else { " " };
            let _ = write!(key, "{sep}{name}={value}");
        }
    });
    key.push(']');
    key
}

/// The knobs on which two cells differ: `name: a -> b`.
pub fn knob_differences(a: &CellSummary, b: &CellSummary) -> Vec<String> {
    a.knobs
        .iter()
        .zip(&b.knobs)
        .filter(|((_, x), (_, y))| x != y)
        .map(|((name, x), (_, y))| format!("{name}: {x} -> {y}"))
        .collect()
}

/// One cell over its repeated runs.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    pub key: String,
    pub cell: String,
    pub environment: String,
    pub runs: usize,
    /// The most common outcome (ties: the worst, so a flaky crash is never hidden).
    pub outcome: Outcome,
    /// Every run's outcome, in repeat order.
    pub outcomes: Vec<Outcome>,
    /// img/s of the passing runs (crashed runs never enter throughput statistics).
    pub rates: Vec<f64>,
    pub median: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Repeat numbers whose img/s is an outlier by modified z-score.
    pub outliers: Vec<u32>,
    /// Earliest and latest crash step over the crashed runs.
    pub crash_steps: Option<(u64, u64)>,
    /// The median peak /dev/shm use over every run, crashed ones included.
    pub peak_shm_median: Option<f64>,
    /// CPU milliseconds per image of the passing runs that measured it (schema 3 on).
    pub cpu: Vec<f64>,
    pub cpu_median: Option<f64>,
    pub cpu_ci: Option<(f64, f64)>,
    /// Instructions per image of the passing runs that counted them (hardware counters).
    pub instructions: Vec<f64>,
    pub instructions_median: Option<f64>,
    /// The cell's knobs (of its first run), to say how two cells paired by name differ.
    pub knobs: Vec<(&'static str, String)>,
    /// Whether its runs were under software emulation (a TCG VM): their speeds mean nothing for
    /// the data path, so only outcomes are compared.
    pub emulated: bool,
}

/// Rows summarised per cell as they stream by (order of first appearance): each cell keeps its
/// first row and a few numbers per run, so memory grows with the cells, not the rows.
#[derive(Default)]
pub struct Summaries {
    index: HashMap<String, usize>,
    cells: Vec<(String, Row, Runs)>,
}

impl Summaries {
    pub fn new() -> Summaries {
        Summaries::default()
    }

    /// Adds a row of the cell `key` names (rows are the same cell when their keys are equal);
    /// returns the cell's index in order of first appearance.
    pub fn add(&mut self, key: &str, r: &Row) -> usize {
        let i = match self.index.get(key) {
            Some(i) => *i,
            None => {
                self.index.insert(key.to_string(), self.cells.len());
                self.cells
                    .push((key.to_string(), r.clone(), Runs::default()));
                self.cells.len() - 1
            }
        };
        self.cells[i].2.add(r);
        i
    }

    /// Each cell's first row and its summary.
    pub fn finish_with_rows(self) -> Vec<(Row, CellSummary)> {
        self.cells
            .into_iter()
            .map(|(key, first, runs)| {
                let summary = summarize_runs(key, &first, runs);
                (first, summary)
            })
            .collect()
    }

    pub fn finish(self) -> Vec<CellSummary> {
        let rows = self.finish_with_rows();
        rows.into_iter().map(|(_, summary)| summary).collect()
    }
}

/// Summarises rows per cell (order of first appearance).
pub fn summarize(rows: &[Row]) -> Vec<CellSummary> {
    summarize_by(rows, cell_key)
}

/// Summarises rows grouped by `key` (order of first appearance).
pub fn summarize_by(rows: &[Row], key: impl Fn(&Row) -> String) -> Vec<CellSummary> {
    let mut summaries = Summaries::new();
    for r in rows {
        summaries.add(&key(r), r);
    }
    summaries.finish()
}

/// One cell's summary from its first row and its runs.
fn summarize_runs(key: String, first: &Row, runs: Runs) -> CellSummary {
    let runs = runs.sorted();
    let passing = runs.rates();
    let rates: Vec<f64> = passing.iter().map(|(_, x)| *x).collect();
    let z = stats::modified_z(&rates);
    let outliers = passing
        .iter()
        .zip(&z)
        .filter(|(_, z)| z.abs() > stats::OUTLIER_Z)
        .map(|((repeat, _), _)| *repeat)
        .collect();
    let cpu = runs.cpu();
    let instructions = runs.instructions();
    CellSummary {
        cell: first.cell.clone(),
        environment: first.environment.clone(),
        knobs: knobs(first),
        emulated: runs.emulated(),
        key,
        runs: runs.len(),
        outcome: runs.outcome(),
        outcomes: runs.outcomes(),
        median: median(&rates),
        ci: stats::median_ci(&rates),
        min: rates.iter().copied().reduce(f64::min),
        max: rates.iter().copied().reduce(f64::max),
        outliers,
        crash_steps: runs.crash_steps(),
        peak_shm_median: runs.peak_shm_median(),
        rates,
        cpu_median: median(&cpu),
        cpu_ci: stats::median_ci(&cpu),
        cpu,
        instructions_median: median(&instructions),
        instructions,
    }
}

#[cfg(test)]
mod drift {
    use super::*;
    use model::knobs::{Knobs, Role};

    /// What the cell key shows beside the knobs: a watched job's command.
    const NOT_KNOBS: &[&str] = &["command"];

    #[test]
    fn the_identity_is_every_knob_the_declaration_says_makes_a_cell() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let row = results::csv::read(std::path::Path::new(path)).unwrap()[0].clone();
        let keyed: Vec<String> = knobs(&row)
            .into_iter()
            .map(|(name, _)| name.to_string())
            .filter(|name| !NOT_KNOBS.contains(&name.as_str()))
            .collect();
        let declared: Vec<String> = Knobs::SPECS
            .iter()
            .filter(|spec| spec.role == Role::Identity)
            .map(|spec| Knobs::flag_name(spec.key).to_string())
            .collect();
        let missing: Vec<&String> = declared.iter().filter(|k| !keyed.contains(k)).collect();
        let extra: Vec<&String> = keyed.iter().filter(|k| !declared.contains(k)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "declared with the identity role but not in the cell key (each_knob): {missing:?}; \
             in the cell key but not declared so: {extra:?}"
        );
    }
}
