//! A comparison's verdict and its note in words: why the cell has its verdict, from the reason
//! and numbers `analysis::compare` found, the outcomes' judgement where it is part of why, and
//! the knobs on which two cells paired by name differ.

use super::outcomes;
use analysis::compare::{Comparison, Direction, Note, Verdict};

/// A verdict as every output writes it.
pub fn verdict_label(verdict: Verdict) -> &'static str {
    match verdict {
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

/// One measure's move: `img/s up`, `CPU per image down` (`better_when_up`: which way is better).
fn moved(measure: &str, direction: Option<Direction>, better_when_up: bool) -> Option<String> {
    let up = (direction? == Direction::Better) == better_when_up;
    Some(format!("{measure} {}", if up { "up" } else { "down" }))
}

/// The note's own words.
fn reason(note: &Note, outcomes: &str) -> String {
    match note {
        Note::Outcomes => outcomes.to_string(),
        Note::Emulated => {
            "pass in both; speeds under TCG (software emulation) are not compared".into()
        }
        Note::NoInterval => "fewer than two passing runs on a side: no interval, so a change of any size could not be told from noise (use --repeat)".into(),
        Note::Moved {
            rate,
            cpu,
            instructions,
        } => [
            moved("img/s", *rate, true),
            moved("CPU per image", *cpu, false),
            moved("instructions per image", *instructions, false),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", "),
        Note::WithinThresholds { rate, cpu } => format!(
            "intervals within or across +-{:.0}% (img/s) and +-{:.0}% (CPU per image)",
            rate * 100.0,
            cpu * 100.0
        ),
        Note::NotInCandidate => "not in the candidate".into(),
        Note::NotInBaseline => "not in the baseline".into(),
    }
}

/// Why the cell has its verdict, e.g. "img/s down; passes 2 of 3 -> ... [workers: 8 -> 4]".
pub fn note(c: &Comparison) -> String {
    let outcomes = c.outcomes.as_ref().map(outcomes::note).unwrap_or_default();
    let mut note = reason(&c.note, &outcomes);
    if c.with_outcomes {
        note = format!("{note}; {outcomes}");
    }
    if !c.knob_changes.is_empty() {
        let changes: Vec<String> = c
            .knob_changes
            .iter()
            .map(|k| format!("{}: {} -> {}", k.knob, k.baseline, k.candidate))
            .collect();
        note = format!("{note} [{}]", changes.join(", "));
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::compare::{compare, Match, Thresholds};
    use results::Row;

    /// The seed fixture's first passing row, run `n` times at these img/s and CPU per image.
    fn runs(rates: &[f64], cpu: f64, workers: u32) -> Vec<Row> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let rows = results::csv::read(std::path::Path::new(path)).unwrap();
        let pass = rows.iter().find(|r| r.status.is_pass()).unwrap().clone();
        rates
            .iter()
            .enumerate()
            .map(|(i, rate)| Row {
                repeat: i as u32 + 1,
                img_per_s: Some(*rate),
                cpu_ms_per_img: Some(cpu + i as f64 * 0.001),
                instructions_per_img: None,
                workers,
                ..pass.clone()
            })
            .collect()
    }

    #[test]
    fn a_note_says_what_moved_and_which_knobs_differ() {
        let t = Thresholds::default();
        let base = runs(&[1000.0, 1001.0, 999.0, 1002.0, 998.0], 2.0, 8);
        let slower = runs(&[800.0, 801.0, 799.0, 802.0, 798.0], 2.5, 4);
        let c = &compare(&base, &slower, t, Match::Name)[0];
        assert_eq!(verdict_label(c.verdict), "regressed");
        assert_eq!(note(c), "img/s down, CPU per image up [workers: 8 -> 4]");
        let same = &compare(&base, &base, t, Match::Config)[0];
        assert_eq!(
            note(same),
            "intervals within or across +-5% (img/s) and +-3% (CPU per image)"
        );
        let only = &compare(&base, &[], t, Match::Config)[0];
        assert_eq!(note(only), "not in the candidate");
    }
}
