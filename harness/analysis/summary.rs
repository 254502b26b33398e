//! Repeated runs of one cell, summarised: what identifies a cell across result files (its
//! scenario, name and configuration), the outcome it had most often, and the statistics of its
//! passing runs: img/s and CPU per image, each a median with a 95% bootstrap interval.

use std::collections::BTreeMap;

use serde::Serialize;

use super::stats;
use crate::model::estimate::median;
use crate::model::record::Status;
use crate::model::vm::Accel;
use crate::results::Row;

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

/// The knobs that make a cell what it is, by their flag names, as a row records them.
pub fn knobs(r: &Row) -> Vec<(&'static str, String)> {
    let text = |v: Option<u64>| v.map(|b| b.to_string()).unwrap_or_else(|| "default".into());
    vec![
        ("loader", r.loader.to_string()),
        ("runtime", r.runtime.to_string()),
        ("strategy", r.strategy.to_string()),
        ("torch", r.torch.to_string()),
        ("workers", r.workers.to_string()),
        ("prefetch", r.prefetch.to_string()),
        ("batch", r.batch.to_string()),
        ("shape", r.shape.to_string()),
        ("dtype", r.dtype.to_string()),
        ("shm-size", text(r.shm_bytes)),
        ("ipc", r.ipc.to_string()),
        ("memory", text(r.memory_bytes)),
        ("shm-tmpfs", r.shm_tmpfs.to_string()),
        ("pin-memory", r.pin_memory.to_string()),
        ("touch", r.touch.to_string()),
        ("compute-ms", r.compute_ms.to_string()),
        ("decode-us", r.decode_us.to_string()),
        ("main-us", r.main_us.to_string()),
        ("retain-every", r.retain_every.to_string()),
        ("steps", r.steps.to_string()),
        ("epochs", r.epochs.to_string()),
        ("cpus", r.cpus.clone().unwrap_or_else(|| "any".into())),
        ("nofile", text(r.nofile)),
        (
            "kernel",
            r.vm_kernel.clone().unwrap_or_else(|| "host".into()),
        ),
        ("shm-remount", text(r.shm_remount_bytes)),
        // A watched job is its command (and the image it ran in).
        ("command", r.watched_command.clone().unwrap_or_default()),
        ("image", r.image.clone().unwrap_or_default()),
    ]
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
    let shown: Vec<String> = knobs(r)
        .into_iter()
        .filter(|(name, _)| !hidden.contains(name))
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    format!("{}/{} [{}]", r.scenario, r.cell, shown.join(" "))
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

/// An outcome: `pass`, or a crash kind at a step.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Outcome {
    pub status: Status,
    pub crash_step: Option<u64>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.crash_step {
            Some(step) if !self.status.is_pass() => write!(f, "{} at step {step}", self.status),
            _ => write!(f, "{}", self.status),
        }
    }
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

/// Summarises rows per cell (order of first appearance).
pub fn summarize(rows: &[Row]) -> Vec<CellSummary> {
    summarize_by(rows, cell_key)
}

/// Summarises rows grouped by `key` (order of first appearance).
pub fn summarize_by(rows: &[Row], key: impl Fn(&Row) -> String) -> Vec<CellSummary> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = key(r);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let mut runs = groups.remove(&key).unwrap_or_default();
            runs.sort_by_key(|r| r.repeat);
            let outcomes: Vec<Outcome> = runs
                .iter()
                .map(|r| Outcome {
                    status: r.status,
                    crash_step: r.crash_step,
                })
                .collect();
            let mut counts: BTreeMap<&Outcome, usize> = BTreeMap::new();
            for o in &outcomes {
                *counts.entry(o).or_default() += 1;
            }
            let most = counts.values().copied().max().unwrap_or(0);
            let outcome = counts
                .iter()
                .filter(|(_, n)| **n == most)
                .map(|(o, _)| (*o).clone())
                .min_by_key(|o| (o.status.is_pass(), o.crash_step))
                .unwrap_or(Outcome {
                    status: Status::Error,
                    crash_step: None,
                });
            let passing: Vec<(&Row, f64)> = runs
                .iter()
                .filter(|r| r.status.is_pass())
                .filter_map(|r| r.img_per_s.map(|x| (*r, x)))
                .collect();
            let rates: Vec<f64> = passing.iter().map(|(_, x)| *x).collect();
            let z = stats::modified_z(&rates);
            let outliers = passing
                .iter()
                .zip(&z)
                .filter(|(_, z)| z.abs() > stats::OUTLIER_Z)
                .map(|((r, _), _)| r.repeat)
                .collect();
            let crashed: Vec<u64> = runs.iter().filter_map(|r| r.crash_step).collect();
            let passing = || runs.iter().filter(|r| r.status.is_pass());
            let cpu: Vec<f64> = passing().filter_map(|r| r.cpu_ms_per_img).collect();
            let instructions: Vec<f64> = passing().filter_map(|r| r.instructions_per_img).collect();
            CellSummary {
                cell: runs[0].cell.clone(),
                environment: runs[0].environment.clone(),
                knobs: knobs(runs[0]),
                emulated: runs.iter().any(|r| r.vm_accel == Some(Accel::Tcg)),
                key,
                runs: runs.len(),
                outcome,
                outcomes,
                median: median(&rates),
                ci: stats::median_ci(&rates),
                min: rates.iter().copied().reduce(f64::min),
                max: rates.iter().copied().reduce(f64::max),
                outliers,
                crash_steps: crashed
                    .iter()
                    .min()
                    .zip(crashed.iter().max())
                    .map(|(a, b)| (*a, *b)),
                rates,
                cpu_median: median(&cpu),
                cpu_ci: stats::median_ci(&cpu),
                cpu,
                instructions_median: median(&instructions),
                instructions,
            }
        })
        .collect()
}
