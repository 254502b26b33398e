//! The emulation against real torch, cell by cell, from the rows of a fidelity run: the outcome
//! each loader had most often, their crash-step ranges, and the ratios of peak /dev/shm and img/s
//! (torch / emulated, medians of the passing runs). A cell agrees when the outcomes are the same
//! (pass, or the same crash kind) and, for crashes, every emulated crash step lies within real
//! torch's observed range, give or take one step. Real torch's own runs are held to the same
//! test (its later runs against its earlier ones), which says how often the race alone makes
//! a cell differ. The medians of the crash steps are the steadier measure of a race torch
//! spreads widely: their distance is reported beside the verdicts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::{summarize, CellSummary};
use model::estimate::median;
use model::knobs::{Loader, TorchProfile};
use model::record::Status;
use results::Row;

/// What one cell's pair says of the emulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Agrees,
    Differs,
    /// A loader ended outside the loader's story most often (`error`: a crash of the cell's
    /// Python or of torch itself, a failed start): nothing is said of the emulation.
    Inconclusive,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Differs => "differs",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// The verdict of a pair: inconclusive when either loader mostly ended in an error outside the
/// loader (real torch segfaulting says nothing of the emulation), else by [`agree`].
fn judge(emulated: &CellSummary, torch: &CellSummary) -> Verdict {
    if [emulated, torch]
        .iter()
        .any(|s| s.outcome.status == Status::Error)
    {
        Verdict::Inconclusive
    } else if agree(emulated, torch) {
        Verdict::Agrees
    } else {
        Verdict::Differs
    }
}

/// One cell against one torch.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub cell: String,
    pub environment: String,
    pub torch_version: String,
    pub profile: TorchProfile,
    pub emulated: CellSummary,
    pub torch: CellSummary,
    /// Median peak /dev/shm of torch's passing runs over the emulation's.
    pub peak_ratio: Option<f64>,
    /// Median img/s of torch's passing runs over the emulation's.
    pub rate_ratio: Option<f64>,
    /// Median CPU per image (main and workers) of torch's passing runs over the emulation's.
    pub cpu_ratio: Option<f64>,
    /// Median CPU of the main process per step, torch's passing runs over the emulation's.
    pub main_cpu_ratio: Option<f64>,
    pub verdict: Verdict,
    /// Median crash step of the emulation's crashed runs and of torch's, when both loaders
    /// crashed the same way most often (the cells whose crash steps `agrees` compares).
    pub crash_step_medians: Option<(f64, f64)>,
    /// Whether real torch's later runs agree with its earlier ones (the first half, rounded up)
    /// by the same test; None with fewer than two runs.
    pub torch_self_agrees: Option<bool>,
}

/// The median of one measure over the passing runs that have it.
fn median_passing(rows: &[&Row], measure: impl Fn(&Row) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| r.status.is_pass())
        .filter_map(|r| measure(r))
        .collect();
    median(&values)
}

/// The ratio torch / emulated of one measure's medians over passing runs.
fn passing_ratio(
    torch: &[&Row],
    emulated: &[&Row],
    measure: impl Fn(&Row) -> Option<f64> + Copy,
) -> Option<f64> {
    ratio(
        median_passing(torch, measure),
        median_passing(emulated, measure),
    )
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b)
}

/// Whether both loaders crashed the same way most often.
fn same_crash(emulated: &CellSummary, torch: &CellSummary) -> bool {
    emulated.outcome.status == torch.outcome.status && !emulated.outcome.status.is_pass()
}

/// Whether two summaries tell the same story.
fn agree(emulated: &CellSummary, torch: &CellSummary) -> bool {
    if emulated.outcome.status != torch.outcome.status {
        return false;
    }
    match (emulated.crash_steps, torch.crash_steps) {
        (Some((a, b)), Some((c, d))) if same_crash(emulated, torch) => a + 1 >= c && b <= d + 1,
        _ => true,
    }
}

/// The median crash step of the runs that crashed.
fn median_crash_step(rows: &[&Row]) -> Option<f64> {
    let steps: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.crash_step)
        .map(|s| s as f64)
        .collect();
    median(&steps)
}

/// Real torch's later runs against its earlier ones, by [`agree`].
fn self_agreement(real: &[&Row], summary: impl Fn(&[&Row]) -> CellSummary) -> Option<bool> {
    if real.len() < 2 {
        return None;
    }
    let (earlier, later) = real.split_at(real.len().div_ceil(2));
    Some(agree(&summary(later), &summary(earlier)))
}

/// Pairs every torch cell with its emulated twin (same scenario, cell and profile).
pub fn pairs(rows: &[Row]) -> Vec<Pair> {
    let mut torch: BTreeMap<(String, String, String), Vec<&Row>> = BTreeMap::new();
    let mut order: Vec<(String, String, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.loader == Loader::Torch) {
        let key = (
            r.scenario.clone(),
            r.cell.clone(),
            r.torch_version.clone().unwrap_or_default(),
        );
        if !torch.contains_key(&key) {
            order.push(key.clone());
        }
        torch.entry(key).or_default().push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let real = &torch[&key];
        let profile = real[0].torch;
        let twins: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.loader == Loader::Emulated
                    && r.scenario == key.0
                    && r.cell == key.1
                    && r.torch == profile
            })
            .collect();
        if twins.is_empty() {
            continue;
        }
        let summary = |rows: &[&Row]| {
            let owned: Vec<Row> = rows.iter().map(|r| (*r).clone()).collect();
            summarize(&owned).remove(0)
        };
        let (emulated, torch_summary) = (summary(&twins), summary(real));
        let torch_self_agrees = self_agreement(real, summary);
        out.push(Pair {
            cell: key.1.clone(),
            environment: real[0].environment.clone(),
            torch_version: key.2.clone(),
            profile,
            peak_ratio: passing_ratio(real, &twins, |r| Some(r.peak_shm_bytes as f64)),
            cpu_ratio: ratio(torch_summary.cpu_median, emulated.cpu_median),
            main_cpu_ratio: passing_ratio(real, &twins, |r| r.main_cpu_ms_per_step),
            rate_ratio: ratio(torch_summary.median, emulated.median),
            verdict: judge(&emulated, &torch_summary),
            crash_step_medians: same_crash(&emulated, &torch_summary)
                .then(|| median_crash_step(&twins).zip(median_crash_step(real)))
                .flatten(),
            torch_self_agrees,
            emulated,
            torch: torch_summary,
        });
    }
    out
}
