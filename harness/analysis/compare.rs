//! Repeated runs, summarised per cell, and two sets of results compared beyond noise.
//!
//! A cell is identified by its scenario, name and configuration, so results from different
//! machines or days match when they ran the same thing. Outcomes are compared first (pass vs
//! crash, crash kind and step): a change there is never noise. Throughput is compared only over
//! passing runs, by the 95% bootstrap interval of the relative change of the medians: regressed
//! or improved only when the whole interval lies outside +-threshold (criterion's rule).

use std::collections::BTreeMap;

use serde::Serialize;

use super::stats;
use crate::model::estimate::median;
use crate::model::record::Status;
use crate::results::Row;

/// A cell-key field that a history may let vary between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Varying {
    /// The /dev/shm size (and so the runtime that provides it).
    Shm,
    /// The torch allocation profile.
    Torch,
}

/// What must be equal for two rows to be the same cell.
pub fn cell_key(r: &Row) -> String {
    cell_key_except(r, None)
}

/// The cell key without one varying field, for histories along that field.
pub fn cell_key_except(r: &Row, varying: Option<Varying>) -> String {
    let shown = |hidden: bool, value: String| if hidden { String::new() } else { value };
    let shm_varies = varying == Some(Varying::Shm);
    let shm = match r.shm_bytes {
        _ if shm_varies => "default".to_string(),
        Some(b) => b.to_string(),
        None => "default".into(),
    };
    format!(
        "{}/{} [{} {} {} {} w{} p{} b{} {} {} shm={} ipc={} mem={} tmpfs={} pin={} touch={} c{} d{} m{} r{} s{}x{}]",
        r.scenario,
        r.cell,
        r.loader,
        shown(shm_varies, r.runtime.to_string()),
        r.strategy,
        shown(varying == Some(Varying::Torch), r.torch.to_string()),
        r.workers,
        r.prefetch,
        r.batch,
        r.shape,
        r.dtype,
        shm,
        r.ipc,
        r.memory_bytes.map(|b| b.to_string()).unwrap_or_default(),
        r.shm_tmpfs,
        r.pin_memory,
        r.touch,
        r.compute_ms,
        r.decode_us,
        r.main_us,
        r.retain_every,
        r.steps,
        r.epochs
    )
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
}

/// Summarises rows per cell (order of first appearance).
pub fn summarize(rows: &[Row]) -> Vec<CellSummary> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = cell_key(r);
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
            CellSummary {
                cell: runs[0].cell.clone(),
                environment: runs[0].environment.clone(),
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
            }
        })
        .collect()
}

/// A cell's verdict between two result sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The outcome changed and got worse (pass -> crash, or an earlier crash).
    OutcomeWorse,
    /// The outcome changed otherwise (crash -> pass, a later crash, another crash kind).
    OutcomeChanged,
    Regressed,
    Improved,
    Unchanged,
    /// Only in the candidate.
    New,
    /// Only in the baseline.
    Missing,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::OutcomeWorse => "outcome-changed (worse)",
            Verdict::OutcomeChanged => "outcome-changed",
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Missing => "missing",
        }
    }

    /// Whether this verdict fails a CI gate.
    pub fn is_regression(self) -> bool {
        matches!(self, Verdict::OutcomeWorse | Verdict::Regressed)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub cell: String,
    pub key: String,
    pub verdict: Verdict,
    pub baseline: Option<CellSummary>,
    pub candidate: Option<CellSummary>,
    /// Relative change of the median img/s (candidate/baseline - 1).
    pub change: Option<f64>,
    pub change_ci: Option<(f64, f64)>,
    /// Why, in words (e.g. "one run per side: no interval, no change claimed").
    pub note: String,
}

fn outcome_verdict(base: &Outcome, cand: &Outcome) -> Option<Verdict> {
    if base == cand {
        return None;
    }
    let worse = match (base.status.is_pass(), cand.status.is_pass()) {
        (true, false) => true,
        (false, true) => false,
        _ => cand.crash_step.unwrap_or(0) < base.crash_step.unwrap_or(0),
    };
    Some(if worse {
        Verdict::OutcomeWorse
    } else {
        Verdict::OutcomeChanged
    })
}

/// Compares per cell; `threshold` is a fraction (0.05 for 5%).
pub fn compare(baseline: &[Row], candidate: &[Row], threshold: f64) -> Vec<Comparison> {
    let base = summarize(baseline);
    let cand = summarize(candidate);
    let mut out = Vec::new();
    for b in &base {
        let Some(c) = cand.iter().find(|c| c.key == b.key) else {
            out.push(Comparison {
                cell: b.cell.clone(),
                key: b.key.clone(),
                verdict: Verdict::Missing,
                baseline: Some(b.clone()),
                candidate: None,
                change: None,
                change_ci: None,
                note: "not in the candidate".into(),
            });
            continue;
        };
        let change = b.median.zip(c.median).map(|(x, y)| y / x - 1.0);
        let change_ci = stats::relative_change_ci(&b.rates, &c.rates);
        let (verdict, note) = if let Some(v) = outcome_verdict(&b.outcome, &c.outcome) {
            (v, format!("{} -> {}", b.outcome, c.outcome))
        } else if !b.outcome.status.is_pass() {
            (Verdict::Unchanged, format!("{} in both", b.outcome))
        } else {
            match change_ci {
                Some((lo, _)) if lo > threshold => (Verdict::Improved, String::new()),
                Some((_, hi)) if hi < -threshold => (Verdict::Regressed, String::new()),
                Some(_) => (Verdict::Unchanged, format!("interval within or across +-{:.0}%", threshold * 100.0)),
                None => (
                    Verdict::Unchanged,
                    "fewer than two passing runs on a side: no interval, so no change is claimed (use --repeat)".into(),
                ),
            }
        };
        out.push(Comparison {
            cell: b.cell.clone(),
            key: b.key.clone(),
            verdict,
            baseline: Some(b.clone()),
            candidate: Some(c.clone()),
            change,
            change_ci,
            note,
        });
    }
    for c in cand.iter().filter(|c| !base.iter().any(|b| b.key == c.key)) {
        out.push(Comparison {
            cell: c.cell.clone(),
            key: c.key.clone(),
            verdict: Verdict::New,
            baseline: None,
            candidate: Some(c.clone()),
            change: None,
            change_ci: None,
            note: "not in the baseline".into(),
        });
    }
    out
}
