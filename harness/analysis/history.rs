//! `shmbench history`: the same cells across many runs (kernels, drivers, engines, torch
//! profiles, hosts), ordered by an environment field, one trend per cell, and the first
//! environment where a cell stepped.
//!
//! Change points: binary segmentation of each cell's run medians into piecewise-constant
//! segments (as asv does for benchmark histories). A split is kept when it lowers the squared
//! error by more than a BIC-style penalty, 2 s^2 ln(n) (s^2: the pooled variance of the repeats
//! within runs, or the residual variance when runs were not repeated), and the step between the
//! segment means is at least the threshold. An outcome step is simply the first run whose most
//! common outcome differs from the run before.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{bail, Result};
use serde::Serialize;

use super::compare::Match;
use super::summary::{self, Outcome, Varying};
use crate::results::Row;

/// The environment field runs are ordered by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum By {
    Kernel,
    /// The GPU driver.
    Driver,
    /// The Docker engine.
    Engine,
    /// The torch allocation profile.
    Torch,
    /// The torch version of torch cells (`emulated` for the emulation).
    TorchVersion,
    Host,
    /// The Kubernetes node (`k8s collect` rows; the host elsewhere).
    Node,
    /// The container runtime: a node's (`containerd://1.7.13`), or the Docker engine's.
    Runtime,
    /// The /dev/shm size.
    Shm,
    /// When the run started.
    Time,
}

impl By {
    /// The value of this field in a row.
    pub fn of(self, r: &Row) -> String {
        match self {
            By::Kernel => r.kernel.clone(),
            By::Driver => r.gpu_driver.clone().unwrap_or_else(|| "none".into()),
            By::Engine => r.docker_version.clone().unwrap_or_else(|| "none".into()),
            By::Torch => r.torch.to_string(),
            By::TorchVersion => r.torch_version.clone().unwrap_or_else(|| "emulated".into()),
            By::Host => r.host.clone(),
            By::Node => r.node.clone().unwrap_or_else(|| r.host.clone()),
            By::Runtime => r
                .container_runtime
                .clone()
                .or_else(|| r.docker_version.as_ref().map(|v| format!("docker://{v}")))
                .unwrap_or_else(|| "none".into()),
            By::Shm => r.shm_bytes.unwrap_or(r.shm_seen_bytes).to_string(),
            By::Time => r.started_at.clone(),
        }
    }

    /// The cell-key field that varies along this one, if any.
    fn varying(self) -> Option<Varying> {
        match self {
            By::Shm => Some(Varying::Shm),
            By::Torch | By::TorchVersion => Some(Varying::Torch),
            By::Kernel => Some(Varying::Kernel),
            _ => None,
        }
    }
}

/// Orders version-like strings by their numeric parts ("6.9" < "6.18").
fn natural_key(s: &str) -> Vec<(u64, String)> {
    let mut key = Vec::new();
    let mut digits = String::new();
    let mut text = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !text.is_empty() {
                key.push((0, std::mem::take(&mut text)));
            }
            digits.push(ch);
        } else {
            if !digits.is_empty() {
                key.push((digits.parse().unwrap_or(u64::MAX), String::new()));
                digits.clear();
            }
            text.push(ch);
        }
    }
    if !digits.is_empty() {
        key.push((digits.parse().unwrap_or(u64::MAX), String::new()));
    }
    if !text.is_empty() {
        key.push((0, text));
    }
    key
}

/// The measure a history follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// Images per second of the passing runs.
    ImgPerS,
    /// CPU milliseconds per image of the passing runs (work, not wall time).
    CpuPerImage,
    /// Instructions per image of the passing runs (hardware counters, where they exist).
    InstructionsPerImage,
}

impl Metric {
    /// The unit as tables and plots write it.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::ImgPerS => "img/s",
            Metric::CpuPerImage => "CPU ms/img",
            Metric::InstructionsPerImage => "instructions/img",
        }
    }

    /// The passing runs' values and their median, from a cell's summary.
    fn of(self, s: &summary::CellSummary) -> (&[f64], Option<f64>) {
        match self {
            Metric::ImgPerS => (&s.rates, s.median),
            Metric::CpuPerImage => (&s.cpu, s.cpu_median),
            Metric::InstructionsPerImage => (&s.instructions, s.instructions_median),
        }
    }
}

/// One run of the history.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub label: String,
    pub run_id: String,
    pub host: String,
    pub started_at: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub median: Option<f64>,
    pub outcome: Outcome,
    /// Variance of the passing repeats (for the penalty).
    pub variance: Option<f64>,
    pub runs: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    pub cell: String,
    pub key: String,
    /// One per run of the history (None: the cell was not in that run).
    pub points: Vec<Option<Point>>,
    /// Runs (indices) where the metric stepped, with the relative step.
    pub rate_steps: Vec<(usize, f64)>,
    /// Runs where the outcome changed, with before and after.
    pub outcome_steps: Vec<(usize, Outcome, Outcome)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub by: By,
    pub metric: Metric,
    pub runs: Vec<Run>,
    pub trends: Vec<Trend>,
}

fn sse(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Binary segmentation of `values` (indices into the run list in `at`); pushes accepted splits.
fn segment(values: &[f64], at: &[usize], s2: f64, threshold: f64, out: &mut Vec<(usize, f64)>) {
    let n = values.len();
    if n < 2 {
        return;
    }
    let whole = sse(values);
    let best = (1..n)
        .map(|k| (k, sse(&values[..k]) + sse(&values[k..])))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let Some((k, split)) = best else { return };
    let penalty = 2.0 * s2 * (n as f64).ln();
    let (left, right) = (mean(&values[..k]), mean(&values[k..]));
    let step = right / left - 1.0;
    if whole - split > penalty && step.abs() >= threshold {
        out.push((at[k], step));
        segment(&values[..k], &at[..k], s2, threshold, out);
        segment(&values[k..], &at[k..], s2, threshold, out);
    }
}

/// Builds the history of `metric` in `rows` ordered by `by`, a cell being what `matching`
/// pairs (`Match::Name` follows a cell through knob changes made on purpose).
pub fn build(
    rows: &[Row],
    by: By,
    metric: Metric,
    matching: Match,
    threshold: f64,
) -> Result<History> {
    let key_of = |r: &Row| matching.key(r, by.varying());
    // Runs, keyed by host, run id and the field's value (one run may span several: a fleet's
    // collected rows, one per node).
    let mut runs: BTreeMap<(String, String, String), Run> = BTreeMap::new();
    for r in rows {
        runs.entry((r.host.clone(), r.run_id.clone(), by.of(r)))
            .or_insert_with(|| Run {
                label: by.of(r),
                run_id: r.run_id.clone(),
                host: r.host.clone(),
                started_at: r.started_at.clone(),
            });
    }
    let mut runs: Vec<Run> = runs.into_values().collect();
    runs.sort_by(|a, b| {
        natural_key(&a.label)
            .cmp(&natural_key(&b.label))
            .then(a.started_at.cmp(&b.started_at))
    });
    if runs.len() < 2 {
        bail!(
            "a history needs at least two runs; these files hold {}",
            runs.len()
        );
    }
    // Every row into its (cell, run) group, in one pass: a fleet's year is a million rows.
    let run_index: HashMap<(&str, &str, String), usize> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            (
                (run.host.as_str(), run.run_id.as_str(), run.label.clone()),
                i,
            )
        })
        .collect();
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    let mut groups: HashMap<(String, usize), Vec<Row>> = HashMap::new();
    for r in rows {
        let key = key_of(r);
        if known.insert(key.clone()) {
            keys.push((key.clone(), r.cell.clone()));
        }
        let run = run_index[&(r.host.as_str(), r.run_id.as_str(), by.of(r))];
        groups.entry((key, run)).or_default().push(r.clone());
    }
    let mut trends = Vec::new();
    for (key, cell) in keys {
        let points: Vec<Option<Point>> = (0..runs.len())
            .map(|run| {
                let mine = groups.remove(&(key.clone(), run)).unwrap_or_default();
                let summary = summary::summarize_by(&mine, key_of).into_iter().next()?;
                // A TCG guest's speed is the emulator's: its outcome counts, its rate does not.
                let (values, median) = match summary.emulated {
                    true => (&[][..], None),
                    false => metric.of(&summary),
                };
                let variance = (values.len() > 1).then(|| sse(values) / (values.len() - 1) as f64);
                Some(Point {
                    median,
                    outcome: summary.outcome,
                    variance,
                    runs: summary.runs,
                })
            })
            .collect();
        let present: Vec<(usize, &Point)> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
            .collect();
        let mut outcome_steps = Vec::new();
        for pair in present.windows(2) {
            if pair[0].1.outcome != pair[1].1.outcome {
                outcome_steps.push((
                    pair[1].0,
                    pair[0].1.outcome.clone(),
                    pair[1].1.outcome.clone(),
                ));
            }
        }
        let rated: Vec<(usize, f64, Option<f64>)> = present
            .iter()
            .filter_map(|(i, p)| p.median.map(|m| (*i, m, p.variance)))
            .collect();
        let values: Vec<f64> = rated.iter().map(|(_, m, _)| *m).collect();
        let at: Vec<usize> = rated.iter().map(|(i, _, _)| *i).collect();
        let variances: Vec<f64> = rated.iter().filter_map(|(_, _, v)| *v).collect();
        let s2 = if variances.is_empty() {
            // No repeats: the residual variance of the best single split stands in.
            let n = values.len();
            (1..n)
                .map(|k| sse(&values[..k]) + sse(&values[k..]))
                .fold(f64::INFINITY, f64::min)
                / (n.saturating_sub(2).max(1)) as f64
        } else {
            mean(&variances)
        };
        let mut rate_steps = Vec::new();
        segment(&values, &at, s2, threshold, &mut rate_steps);
        rate_steps.sort_by_key(|(i, _)| *i);
        trends.push(Trend {
            cell,
            key,
            points,
            rate_steps,
            outcome_steps,
        });
    }
    Ok(History {
        by,
        metric,
        runs,
        trends,
    })
}
