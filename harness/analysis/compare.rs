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
use super::summary::{knob_differences, summarize_by, CellSummary, KnobChange};
use super::verdict::{measured_verdict, note_code};
pub use super::verdict::{Direction, Note, Thresholds, Verdict};
use results::Row;

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
    /// Why (`present::compare_note` words it, e.g. "img/s down, CPU per image up").
    #[serde(rename = "note_code", serialize_with = "note_code")]
    pub note: Note,
    /// Whether the outcome judgement's note follows the note's own words: the outcomes are
    /// mixed on a side, or differ where the repeats cannot judge them.
    #[serde(skip)]
    pub with_outcomes: bool,
    /// The knobs on which the two sides differ (cells paired by name alone).
    #[serde(skip)]
    pub knob_changes: Vec<KnobChange>,
}

model::choice! {
    /// How cells of the two sides are paired.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Match {
        Config = "config": "Same scenario, name and configuration: the same thing run again.",
        Name = "name": "Same scenario and name, whatever the knobs: a change made on purpose (the note says which knobs differ).",
    }
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
            out.push(one_sided(b, Verdict::Missing, Note::NotInCandidate));
            continue;
        };
        out.push(paired(b, c, thresholds));
    }
    for c in cand.iter().filter(|c| !base_keys.contains_key(&c.key)) {
        out.push(one_sided(c, Verdict::New, Note::NotInBaseline));
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
    let mixed = judged.baseline.is_mixed() || judged.candidate.is_mixed();
    let (verdict, note, mut with_outcomes) = if judged.changed {
        let verdict = match judged.worse {
            true => Verdict::OutcomeWorse,
            false => Verdict::OutcomeChanged,
        };
        (verdict, Note::Outcomes, false)
    } else if !b.outcome.status.is_pass() || !c.outcome.status.is_pass() {
        // Mostly crashing on a side: no speeds to compare, only the outcomes.
        (Verdict::Unchanged, Note::Outcomes, false)
    } else if b.emulated || c.emulated {
        // Pass in both; speeds under TCG are the emulator's.
        (Verdict::Unchanged, Note::Emulated, false)
    } else {
        let (verdict, measured) = measured_verdict(rate_ci, cpu_ci, instructions_ci, thresholds);
        (verdict, measured, mixed)
    };
    let verdict = match (outcomes_undecided, verdict) {
        (true, Verdict::Regressed) | (false, _) => verdict,
        (true, _) => {
            // Said once: the outcomes' words follow unless the note is theirs or has them.
            with_outcomes |= note != Note::Outcomes;
            Verdict::Undecided
        }
    };
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
        with_outcomes,
        knob_changes: knob_differences(b, c),
    }
}

/// A cell that only one side has.
fn one_sided(summary: &CellSummary, verdict: Verdict, note: Note) -> Comparison {
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
        note,
        with_outcomes: false,
        knob_changes: Vec::new(),
    }
}

/// What a green result means here: the smallest relative change of a measure (either way) that
/// a comparison would flag with as many runs per side as `values` holds, from the spread its own
/// runs showed; None with fewer than two runs. Comparing the runs with themselves gives the
/// interval of the relative change that noise alone produces; a real change is flagged only
/// when its whole interval lies beyond the threshold, so it must exceed the threshold by that
/// interval's half-width. With the same number of runs on both sides, smaller changes pass
/// unseen.
pub fn detectable(values: &[f64], threshold: f64) -> Option<f64> {
    let (lo, hi) = stats::relative_change_ci(values, values)?;
    Some(threshold + (hi - lo) / 2.0)
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
        assert_eq!(same[0].verdict, Verdict::Unchanged, "{:?}", same[0].note);
        let more = runs(&[1100.0, 1102.0, 1098.0, 1101.0, 1099.0]);
        let c = &compare(&base, &more, t, Match::Config)[0];
        assert_eq!(c.verdict, Verdict::Regressed, "{:?}", c.note);
        assert!(
            matches!(
                c.note,
                Note::Moved {
                    instructions: Some(Direction::Worse),
                    ..
                }
            ),
            "{:?}",
            c.note
        );
        assert!((c.instructions_change.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn more_spread_hides_more() {
        let tight = [100.0, 100.5, 99.5, 100.2, 99.8];
        let loose = [100.0, 110.0, 90.0, 105.0, 95.0];
        let a = detectable(&tight, 0.03).unwrap();
        let b = detectable(&loose, 0.03).unwrap();
        assert!((0.03..0.04).contains(&a), "{a}");
        assert!(b > a + 0.03, "{b}");
        assert_eq!(detectable(&[100.0], 0.03), None);
    }
}
