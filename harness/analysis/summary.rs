//! Repeated runs of one cell, summarised: rows grouped by their [`CellKey`] (its scenario, name
//! and configuration), the outcome the cell had most often, and the statistics of its passing
//! runs: img/s and CPU per image, each a median with a 95% bootstrap interval.

use std::collections::HashMap;

use serde::Serialize;

use super::cell_key::{knobs, CellKey};
pub use super::runs::Outcome;
use super::runs::Runs;
use super::stats;
use model::estimate::median;
use results::Row;

/// A knob on which two cells differ, and its value in each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobChange {
    pub knob: &'static str,
    pub baseline: String,
    pub candidate: String,
}

/// The knobs on which two cells differ.
pub fn knob_differences(a: &CellSummary, b: &CellSummary) -> Vec<KnobChange> {
    a.knobs
        .iter()
        .zip(&b.knobs)
        .filter(|((_, x), (_, y))| x != y)
        .map(|((knob, x), (_, y))| KnobChange {
            knob,
            baseline: x.clone(),
            candidate: y.clone(),
        })
        .collect()
}

/// One cell over its repeated runs.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    /// What makes it this cell (its words, `present::cell_key`, are what JSON carries as `key`).
    #[serde(skip)]
    pub key: CellKey,
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
    index: HashMap<CellKey, usize>,
    cells: Vec<(CellKey, Row, Runs)>,
}

impl Summaries {
    pub fn new() -> Summaries {
        Summaries::default()
    }

    /// Adds a row of the cell `key` names (rows are the same cell when their keys are equal);
    /// returns the cell's index in order of first appearance.
    pub fn add(&mut self, key: &CellKey, r: &Row) -> usize {
        let i = match self.index.get(key) {
            Some(i) => *i,
            None => {
                self.index.insert(key.clone(), self.cells.len());
                self.cells.push((key.clone(), r.clone(), Runs::default()));
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
    summarize_by(rows, CellKey::of)
}

/// Summarises rows grouped by `key` (order of first appearance).
pub fn summarize_by(rows: &[Row], key: impl Fn(&Row) -> CellKey) -> Vec<CellSummary> {
    let mut summaries = Summaries::new();
    for r in rows {
        summaries.add(&key(r), r);
    }
    summaries.finish()
}

/// One cell's summary from its first row and its runs.
pub(crate) fn summarize_runs(key: CellKey, first: &Row, runs: Runs) -> CellSummary {
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
