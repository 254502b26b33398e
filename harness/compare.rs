//! Repeated runs, summarised per cell, and two sets of results compared beyond noise.
//!
//! A cell is identified by its scenario, name and configuration, so results from different
//! machines or days match when they ran the same thing. Outcomes are compared first (pass vs
//! crash, crash kind and step): a change there is never noise. Throughput is compared only over
//! passing runs, by the 95% bootstrap interval of the relative change of the medians: regressed
//! or improved only when the whole interval lies outside +-threshold (criterion's rule).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::csv::Row;
use crate::stats;

/// What must be equal for two rows to be the same cell.
pub fn cell_key(r: &Row) -> String {
    cell_key_except(r, "")
}

/// The cell key without one varying field (`shm` or `torch`), for histories along that field.
pub fn cell_key_except(r: &Row, varying: &str) -> String {
    let mut r = r.clone();
    match varying {
        "shm" => {
            r.shm_bytes = None;
            r.runtime.clear();
        }
        "torch" => r.torch.clear(),
        _ => {}
    }
    format!(
        "{}/{} [{} {} {} w{} p{} b{} {} {} shm={} ipc={} mem={} tmpfs={} pin={} touch={} c{} d{} r{} s{}x{}]",
        r.scenario,
        r.cell,
        r.runtime,
        r.strategy,
        r.torch,
        r.workers,
        r.prefetch,
        r.batch,
        r.shape,
        r.dtype,
        r.shm_bytes.map(|b| b.to_string()).unwrap_or_else(|| "default".into()),
        r.ipc,
        r.memory_bytes.map(|b| b.to_string()).unwrap_or_default(),
        r.shm_tmpfs,
        r.pin_memory,
        r.touch,
        r.compute_ms,
        r.decode_us,
        r.retain_every,
        r.steps,
        r.epochs
    )
}

/// An outcome: `pass`, or a crash kind at a step.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Outcome {
    pub status: String,
    pub crash_step: Option<u64>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.crash_step {
            Some(step) if self.status != "pass" => write!(f, "{} at step {step}", self.status),
            _ => f.write_str(&self.status),
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
                    status: r.status.clone(),
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
                .min_by_key(|o| (o.status == "pass", o.crash_step))
                .unwrap_or(Outcome {
                    status: "error".into(),
                    crash_step: None,
                });
            let passing: Vec<(&Row, f64)> = runs
                .iter()
                .filter(|r| r.status == "pass")
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
                median: stats::median(&rates),
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
    let worse = match (base.status == "pass", cand.status == "pass") {
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
        } else if b.outcome.status != "pass" {
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

fn rate_text(s: &Option<CellSummary>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match (s.median, s.ci) {
            (Some(m), Some((lo, hi))) => format!("{m:.0} [{lo:.0}, {hi:.0}] n={}", s.rates.len()),
            (Some(m), None) => format!("{m:.0} n={}", s.rates.len()),
            _ => s.outcome.to_string(),
        },
    }
}

/// The comparison as a Markdown table, regressions and improvements first (rustc-perf style).
pub fn render(comparisons: &[Comparison], threshold: f64) -> String {
    let mut sorted: Vec<&Comparison> = comparisons.iter().collect();
    sorted.sort_by_key(|c| match c.verdict {
        Verdict::OutcomeWorse => 0,
        Verdict::Regressed => 1,
        Verdict::OutcomeChanged => 2,
        Verdict::Improved => 3,
        Verdict::New | Verdict::Missing => 4,
        Verdict::Unchanged => 5,
    });
    let headers = [
        "cell",
        "verdict",
        "baseline img/s (median [95% CI])",
        "candidate img/s",
        "change [95% CI]",
        "note",
    ];
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|c| {
            let change = match (c.change, c.change_ci) {
                (Some(x), Some((lo, hi))) => format!(
                    "{:+.1}% [{:+.1}%, {:+.1}%]",
                    x * 100.0,
                    lo * 100.0,
                    hi * 100.0
                ),
                (Some(x), None) => format!("{:+.1}%", x * 100.0),
                _ => "-".into(),
            };
            vec![
                c.cell.clone(),
                c.verdict.label().into(),
                rate_text(&c.baseline),
                rate_text(&c.candidate),
                change,
                c.note.clone(),
            ]
        })
        .collect();
    let regressions = comparisons
        .iter()
        .filter(|c| c.verdict.is_regression())
        .count();
    let improved = comparisons
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Improved | Verdict::OutcomeChanged))
        .count();
    format!(
        "{} regression(s), {} improvement(s) or other outcome change(s), threshold +-{:.0}%\n\n{}",
        regressions,
        improved,
        threshold * 100.0,
        crate::table::markdown(&headers, &rows)
    )
}

/// Per-cell summary of repeated runs as a Markdown table.
pub fn render_summary(summaries: &[CellSummary]) -> String {
    let (headers, rows) = summary_cells(summaries);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    crate::table::markdown(&headers, &rows)
}

/// The summary table's headers and cells, for any output format.
pub fn summary_cells(summaries: &[CellSummary]) -> (Vec<String>, Vec<Vec<String>>) {
    let headers = [
        "cell",
        "runs",
        "outcome",
        "outcomes",
        "median img/s [95% CI]",
        "min..max",
        "outliers",
        "crash steps",
    ];
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
            for o in &s.outcomes {
                *outcomes.entry(o.to_string()).or_default() += 1;
            }
            vec![
                s.environment.clone(),
                s.runs.to_string(),
                s.outcome.to_string(),
                outcomes
                    .iter()
                    .map(|(o, n)| format!("{n}x {o}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                match (s.median, s.ci) {
                    (Some(m), Some((lo, hi))) => format!("{m:.1} [{lo:.1}, {hi:.1}]"),
                    (Some(m), None) => format!("{m:.1} (one run: no interval)"),
                    _ => "-".into(),
                },
                match (s.min, s.max) {
                    (Some(a), Some(b)) => format!("{a:.0}..{b:.0}"),
                    _ => "-".into(),
                },
                if s.outliers.is_empty() {
                    "-".into()
                } else {
                    s.outliers
                        .iter()
                        .map(|r| format!("run {r}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                s.crash_steps
                    .map(|(a, b)| {
                        if a == b {
                            a.to_string()
                        } else {
                            format!("{a}..{b}")
                        }
                    })
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    (headers.map(String::from).to_vec(), rows)
}

/// Parses a threshold: `5%`, `5` (percent) or `0.05` (a fraction below 1).
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n, true),
        None => (t, false),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a threshold: write e.g. 5% or 0.05"))?;
    let fraction = if percent || value >= 1.0 {
        value / 100.0
    } else {
        value
    };
    if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) {
        return Err(format!(
            "'{text}' is out of range: a threshold lies between 0% and 100%"
        ));
    }
    Ok(fraction)
}
