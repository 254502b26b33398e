//! A cell's verdict between two result sets and the reason for it, a [`Note`] with the
//! numbers its words need; for a cell that passes on both sides, both found from the intervals
//! of its measures' relative changes against their thresholds.

use serde::Serialize;

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

/// Which way a measure moved beyond its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Better,
    Worse,
}

/// Why a cell has its verdict, with the numbers its words need (`present::compare_note` words
/// it; JSON carries [`Note::code`] as `note_code` beside those words as `note`).
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// The outcomes decide (changed beyond chance, or crashing on a side): the outcome
    /// judgement's note.
    Outcomes,
    /// Both pass under software emulation (TCG): speeds are not compared.
    Emulated,
    /// Fewer than two passing runs on a side: no interval.
    NoInterval,
    /// A measure moved beyond its threshold (each measure: which way, None where it did not).
    Moved {
        rate: Option<Direction>,
        cpu: Option<Direction>,
        instructions: Option<Direction>,
    },
    /// No measure moved: every interval within or across its threshold.
    WithinThresholds { rate: f64, cpu: f64 },
    /// Only in the baseline.
    NotInCandidate,
    /// Only in the candidate.
    NotInBaseline,
}

impl Note {
    /// The note's code: its variant's name in snake_case.
    pub fn code(&self) -> &'static str {
        match self {
            Note::Outcomes => "outcomes",
            Note::Emulated => "emulated",
            Note::NoInterval => "no_interval",
            Note::Moved { .. } => "moved",
            Note::WithinThresholds { .. } => "within_thresholds",
            Note::NotInCandidate => "not_in_candidate",
            Note::NotInBaseline => "not_in_baseline",
        }
    }
}

/// Serialises a note as its code.
pub(crate) fn note_code<S: serde::Serializer>(note: &Note, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(note.code())
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

/// Which way one measure moved, beyond its threshold (None: it did not).
fn direction(ci: Option<(f64, f64)>, threshold: f64, higher_is_better: bool) -> Option<Direction> {
    let (lo, hi) = ci?;
    let up = lo > threshold;
    let down = hi < -threshold;
    let better = match (up, down) {
        (true, _) => higher_is_better,
        (_, true) => !higher_is_better,
        _ => return None,
    };
    Some(if better {
        Direction::Better
    } else {
        Direction::Worse
    })
}

/// The verdict of a passing cell from the intervals of both measures' relative changes: a
/// regression of either is one.
pub(crate) fn measured_verdict(
    rate_ci: Option<(f64, f64)>,
    cpu_ci: Option<(f64, f64)>,
    instructions_ci: Option<(f64, f64)>,
    t: Thresholds,
) -> (Verdict, Note) {
    if rate_ci.is_none() && cpu_ci.is_none() && instructions_ci.is_none() {
        return (Verdict::Undecided, Note::NoInterval);
    }
    let rate = direction(rate_ci, t.rate, true);
    let cpu = direction(cpu_ci, t.cpu, false);
    let instructions = direction(instructions_ci, t.instructions, false);
    let moves = [rate, cpu, instructions];
    let verdict = if moves.contains(&Some(Direction::Worse)) {
        Verdict::Regressed
    } else if moves.contains(&Some(Direction::Better)) {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    };
    let note = match moves.iter().any(Option::is_some) {
        true => Note::Moved {
            rate,
            cpu,
            instructions,
        },
        false => Note::WithinThresholds {
            rate: t.rate,
            cpu: t.cpu,
        },
    };
    (verdict, note)
}
