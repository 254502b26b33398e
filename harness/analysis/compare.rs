//! Two sets of results compared beyond noise, cell by cell.
//!
//! Cells match by scenario, name and configuration ([`CellKey`]), so results from
//! different machines or days match when they ran the same thing; `Match::Name` pairs them by
//! scenario and name alone when a knob was changed on purpose. Outcomes are compared first, as
//! distributions over the repeats (`outcomes`: the shares of pass and of each crash kind by
//! Fisher's exact test, the crash steps by a rank test); one run a side judges nothing, since
//! near a loader's peak the outcome is itself a race. Then, over passing runs, two
//! measures each with its own threshold: img/s, and CPU time per image (work, not wall time, so
//! far less noisy on a shared machine). A measure regressed or improved only when the 95%
//! bootstrap interval of the relative change of its medians lies wholly outside +-threshold
//! (criterion's rule).

use std::collections::HashMap;

use serde::Serialize;

use super::cell_key::{CellKey, Varying};
use super::outcomes::{self, Judgement};
use super::stats;
use super::summary::{knob_differences, summarize_by, CellSummary};
use results::Row;

/// A cell's verdict between two result sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The outcomes changed beyond chance and for the worse (fewer passing runs, or earlier
    /// crashes).
    OutcomeWorse,
    /// The outcomes changed beyond chance otherwise (more passing, later crashes, another
    /// crash kind).
    OutcomeChanged,
    Regressed,
    Improved,
    /// The sides differ, or may, and these repeats cannot say whether beyond chance (three runs
    /// a side cannot show even an always-pass to always-crash flip; one cannot give an interval
    /// of img/s): never `Unchanged`, and a CI gate fails on it unless told otherwise.
    Undecided,
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
            Verdict::Undecided => "undecided",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Missing => "missing",
        }
    }

    /// Whether this verdict fails a CI gate.
    pub fn is_regression(self) -> bool {
        matches!(self, Verdict::OutcomeWorse | Verdict::Regressed)
    }

    /// Whether the repeats could not judge this cell (`compare` fails on it unless
    /// `--allow-undecided`).
    pub fn is_undecided(self) -> bool {
        self == Verdict::Undecided
    }
}

/// One cell between the two sides: its verdict, why, and the numbers behind it.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub cell: String,
    /// The cells' key (its words, `present::cell_key`, are what JSON carries as `key`).
    #[serde(skip)]
    pub key: CellKey,
    pub verdict: Verdict,
    pub baseline: Option<CellSummary>,
    pub candidate: Option<CellSummary>,
    /// The two sides' outcomes over their repeats, judged (None: a cell only one side has).
    pub outcomes: Option<Judgement>,
    /// Relative change of the median img/s (candidate/baseline - 1), and its 95% interval.
    pub change: Option<f64>,
    pub change_ci: Option<(f64, f64)>,
    /// Relative change of the median CPU per image, and its 95% interval (up is worse).
    pub cpu_change: Option<f64>,
    pub cpu_change_ci: Option<(f64, f64)>,
    /// Relative change of the median instructions per image, and its 95% interval (up is worse).
    pub instructions_change: Option<f64>,
    pub instructions_change_ci: Option<(f64, f64)>,
    /// Why, in words (e.g. "one run per side: no interval, no change claimed").
    pub note: String,
}

/// How cells of the two sides are paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Match {
    /// Same scenario, name and configuration: the same thing run again.
    Config,
    /// Same scenario and name, whatever the knobs: a change made on purpose (the note says
    /// which knobs differ).
    Name,
}

impl Match {
    /// What makes two rows the same cell under this pairing (`varying`: a field a history lets
    /// change between runs).
    pub fn key(self, r: &Row, varying: Option<Varying>) -> CellKey {
        match self {
            Match::Config => CellKey::except(r, varying),
            Match::Name => CellKey::by_name(r),
        }
    }
}

/// The smallest relative change of each measure that counts.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// img/s, e.g. 0.05.
    pub rate: f64,
    /// CPU per image, e.g. 0.03.
    pub cpu: f64,
    /// Instructions per image, e.g. 0.02.
    pub instructions: f64,
}

impl Default for Thresholds {
    /// `compare`'s defaults: 5% for img/s, 3% for CPU per image (work, not wall time, is
    /// quieter on a shared machine), 2% for instructions per image (a count of work, quieter
    /// still).
    fn default() -> Thresholds {
        Thresholds {
            rate: 0.05,
            cpu: 0.03,
            instructions: 0.02,
        }
    }
}

/// Which way one measure moved, beyond its threshold: `Some(true)` better, `Some(false)` worse.
fn direction(ci: Option<(f64, f64)>, threshold: f64, higher_is_better: bool) -> Option<bool> {
    let (lo, hi) = ci?;
    let up = lo > threshold;
    let down = hi < -threshold;
    match (up, down) {
        (true, _) => Some(higher_is_better),
        (_, true) => Some(!higher_is_better),
        _ => None,
    }
}

/// The verdict of a passing cell from the intervals of both measures' relative changes: a
/// regression of either is one.
fn measured_verdict(
    rate_ci: Option<(f64, f64)>,
    cpu_ci: Option<(f64, f64)>,
    instructions_ci: Option<(f64, f64)>,
    t: Thresholds,
) -> (Verdict, String) {
    if rate_ci.is_none() && cpu_ci.is_none() && instructions_ci.is_none() {
        return (
            Verdict::Undecided,
            "fewer than two passing runs on a side: no interval, so a change of any size could not be told from noise (use --repeat)".into(),
        );
    }
    let rate = direction(rate_ci, t.rate, true);
    let cpu = direction(cpu_ci, t.cpu, false);
    let instructions = direction(instructions_ci, t.instructions, false);
    let mut said = Vec::new();
    if let Some(better) = rate {
        said.push(format!("img/s {}", if better { "up" } else { "down" }));
    }
    if let Some(better) = cpu {
        said.push(format!(
            "CPU per image {}",
            if better { "down" } else { "up" }
        ));
    }
    if let Some(better) = instructions {
        said.push(format!(
            "instructions per image {}",
            if better { "down" } else { "up" }
        ));
    }
    let moves = [rate, cpu, instructions];
    let verdict = if moves.contains(&Some(false)) {
        Verdict::Regressed
    } else if moves.contains(&Some(true)) {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    };
    let note = if said.is_empty() {
        format!(
            "intervals within or across +-{:.0}% (img/s) and +-{:.0}% (CPU per image)",
            t.rate * 100.0,
            t.cpu * 100.0
        )
    } else {
        said.join(", ")
    };
    (verdict, note)
}

/// Compares per cell, pairing cells as `matching` says.
pub fn compare(
    baseline: &[Row],
    candidate: &[Row],
    thresholds: Thresholds,
    matching: Match,
) -> Vec<Comparison> {
    let key = |r: &Row| matching.key(r, None);
    compare_summaries(
        &summarize_by(baseline, key),
        &summarize_by(candidate, key),
        thresholds,
    )
}

/// Compares two sides' cells, summarised with the same key (baseline order, then the new cells).
pub fn compare_summaries(
    base: &[CellSummary],
    cand: &[CellSummary],
    thresholds: Thresholds,
) -> Vec<Comparison> {
    let by_key = |side: &[CellSummary]| -> HashMap<CellKey, usize> {
        side.iter()
            .enumerate()
            .map(|(i, s)| (s.key.clone(), i))
            .collect()
    };
    let (base_keys, cand_keys) = (by_key(base), by_key(cand));
    let mut out = Vec::new();
    for b in base {
        let Some(c) = cand_keys.get(&b.key).map(|i| &cand[*i]) else {
            out.push(one_sided(b, Verdict::Missing, "not in the candidate"));
            continue;
        };
        out.push(paired(b, c, thresholds));
    }
    for c in cand.iter().filter(|c| !base_keys.contains_key(&c.key)) {
        out.push(one_sided(c, Verdict::New, "not in the baseline"));
    }
    out
}

/// A cell both sides have.
fn paired(b: &CellSummary, c: &CellSummary, thresholds: Thresholds) -> Comparison {
    let rate_ci = stats::relative_change_ci(&b.rates, &c.rates);
    let cpu_ci = stats::relative_change_ci(&b.cpu, &c.cpu);
    let instructions_ci = stats::relative_change_ci(&b.instructions, &c.instructions);
    let judged = outcomes::judge(&b.outcomes, &c.outcomes);
    // Outcomes that differ where the repeats cannot judge them: whatever the speeds say short
    // of a regression, the cell is undecided (3 passes against 3 crashes is not "unchanged").
    let outcomes_undecided = !judged.judged && judged.baseline != judged.candidate;
    let (verdict, note) = if judged.changed {
        let verdict = match judged.worse {
            true => Verdict::OutcomeWorse,
            false => Verdict::OutcomeChanged,
        };
        (verdict, judged.note.clone())
    } else if !b.outcome.status.is_pass() || !c.outcome.status.is_pass() {
        // Mostly crashing on a side: no speeds to compare, only the outcomes.
        (Verdict::Unchanged, judged.note.clone())
    } else if b.emulated || c.emulated {
        let note = "pass in both; speeds under TCG (software emulation) are not compared";
        (Verdict::Unchanged, note.to_string())
    } else {
        let (verdict, measured) = measured_verdict(rate_ci, cpu_ci, instructions_ci, thresholds);
        match judged.baseline.is_mixed() || judged.candidate.is_mixed() {
            true => (verdict, format!("{measured}; {}", judged.note)),
            false => (verdict, measured),
        }
    };
    let (verdict, mut note) = match (outcomes_undecided, verdict) {
        (true, Verdict::Regressed) => (verdict, note),
        (true, _) if note.contains(&judged.note) => (Verdict::Undecided, note),
        (true, _) => (Verdict::Undecided, format!("{note}; {}", judged.note)),
        (false, _) => (verdict, note),
    };
    let differences = knob_differences(b, c);
    if !differences.is_empty() {
        note = format!("{note} [{}]", differences.join(", "));
    }
    let relative = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| y / x - 1.0);
    Comparison {
        cell: b.cell.clone(),
        key: b.key.clone(),
        verdict,
        change: relative(b.median, c.median),
        change_ci: rate_ci,
        cpu_change: relative(b.cpu_median, c.cpu_median),
        cpu_change_ci: cpu_ci,
        instructions_change: relative(b.instructions_median, c.instructions_median),
        instructions_change_ci: instructions_ci,
        baseline: Some(b.clone()),
        candidate: Some(c.clone()),
        outcomes: Some(judged),
        note,
    }
}

/// A cell that only one side has.
fn one_sided(summary: &CellSummary, verdict: Verdict, note: &str) -> Comparison {
    let (baseline, candidate) = match verdict {
        Verdict::Missing => (Some(summary.clone()), None),
        _ => (None, Some(summary.clone())),
    };
    Comparison {
        cell: summary.cell.clone(),
        key: summary.key.clone(),
        verdict,
        baseline,
        candidate,
        outcomes: None,
        change: None,
        change_ci: None,
        cpu_change: None,
        cpu_change_ci: None,
        instructions_change: None,
        instructions_change_ci: None,
        note: note.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of one passing seed-fixture cell, each with these instructions per image.
    fn runs(instructions: &[f64]) -> Vec<Row> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let rows = results::csv::read(std::path::Path::new(path)).unwrap();
        let pass = rows.iter().find(|r| r.status.is_pass()).unwrap().clone();
        instructions
            .iter()
            .enumerate()
            .map(|(i, n)| Row {
                repeat: i as u32 + 1,
                instructions_per_img: Some(*n),
                cpu_ms_per_img: None,
                ..pass.clone()
            })
            .collect()
    }

    #[test]
    fn more_instructions_per_image_beyond_the_threshold_is_a_regression() {
        let base = runs(&[1000.0, 1002.0, 998.0, 1001.0, 999.0]);
        let t = Thresholds::default();
        let same = compare(
            &base,
            &runs(&[1001.0, 999.0, 1000.0, 1002.0, 998.0]),
            t,
            Match::Config,
        );
        assert_eq!(same[0].verdict, Verdict::Unchanged, "{}", same[0].note);
        let more = runs(&[1100.0, 1102.0, 1098.0, 1101.0, 1099.0]);
        let c = &compare(&base, &more, t, Match::Config)[0];
        assert_eq!(c.verdict, Verdict::Regressed, "{}", c.note);
        assert!(c.note.contains("instructions per image up"), "{}", c.note);
        assert!((c.instructions_change.unwrap() - 0.1).abs() < 1e-9);
    }
}
