//! A fidelity pair's verdict: the emulation's outcomes judged against torch's by the exact tests
//! (`outcomes::judge`), then the passing peak against the fidelity goal. It differs when a test
//! is below p = 0.05, or when both loaders pass and the emulated passing peak lies outside 10% of
//! torch's ([`PEAK_TOLERANCE`]) with its whole interval, over at least four passing runs a side;
//! it is not judged when the runs cannot tell (fewer than four a side for a flip; a peak outside
//! the band with too few runs to say it is not chance); else it agrees.

use serde::Serialize;

use analysis::outcomes::{Judgement, RUNS_FOR_A_FLIP};
use analysis::stats::relative_change_ci;
use analysis::summary::CellSummary;
use model::estimate::median;
use model::record::Status;

/// How far the emulated passing peak /dev/shm may lie from torch's: the fidelity goal.
pub(crate) const PEAK_TOLERANCE: f64 = 0.10;

/// What one cell's pair says of the emulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Agrees,
    Differs,
    /// The runs cannot tell a difference from chance (see [`Pair::why`]).
    NotJudged,
    /// A loader ended outside the loader's story most often (`error`: a crash of the cell's
    /// Python or of torch itself, a failed start): nothing is said of the emulation.
    Inconclusive,
}

/// Which measure decided a verdict other than `agrees`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Why {
    /// The outcomes (shares or crash steps): the judgement says which and how.
    Outcomes,
    /// Only the crash steps: every run of both loaders crashed the same way (too few runs to
    /// say whether the steps differ beyond chance).
    CrashSteps,
    /// The passing peak /dev/shm against [`PEAK_TOLERANCE`].
    PassingPeak,
    /// A loader's error.
    Error,
}

impl Verdict {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Differs => "differs",
            Verdict::NotJudged => "not judged",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// A ratio of two medians, torch's over the emulation's, with its 95% bootstrap interval (None
/// with fewer than two values a side).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Ratio {
    pub(crate) value: f64,
    pub(crate) interval: Option<(f64, f64)>,
}

impl Ratio {
    /// `torch`'s median over `emulated`'s.
    pub(crate) fn of(torch: &[f64], emulated: &[f64]) -> Option<Ratio> {
        let value = ratio(median(torch), median(emulated))?;
        let interval = relative_change_ci(emulated, torch).map(|(lo, hi)| (1.0 + lo, 1.0 + hi));
        Some(Ratio { value, interval })
    }

    /// The same ratio the other way up (the emulation's over torch's), its interval with it.
    pub(crate) fn inverted(self) -> Ratio {
        Ratio {
            value: 1.0 / self.value,
            interval: self.interval.map(|(lo, hi)| (1.0 / hi, 1.0 / lo)),
        }
    }
}

/// The verdict of the emulated runs against torch's: inconclusive when either loader mostly
/// ended in an error outside the loader (real torch segfaulting says nothing of the
/// emulation); else the outcomes' judgement, then the passing peak.
pub(super) fn judge(
    emulated: &CellSummary,
    torch: &CellSummary,
    outcomes: &Judgement,
    peak: Option<Ratio>,
    passing_runs: usize,
) -> (Verdict, Option<Why>) {
    if [emulated, torch]
        .iter()
        .any(|s| s.outcome.status == Status::Error)
    {
        return (Verdict::Inconclusive, Some(Why::Error));
    }
    if outcomes.changed {
        return (Verdict::Differs, Some(Why::Outcomes));
    }
    // Too few runs to test, but every run of both loaders ended the same way (passed, or
    // crashed the same way at the same step): nothing to tell apart.
    let runs = || emulated.outcomes.iter().chain(&torch.outcomes);
    let unanimous = runs().all(|o| *o == emulated.outcome);
    // The goal is the emulation's peak within 10% of torch's: emulated / torch, the inverse of
    // the ratio shown (torch / emulated, as every ratio of the table).
    let band = (1.0 - PEAK_TOLERANCE)..=(1.0 + PEAK_TOLERANCE);
    if let Some(share) = peak
        .map(Ratio::inverted)
        .filter(|s| !band.contains(&s.value))
    {
        // Beyond chance: enough passing runs, and the whole interval on one side of the band.
        let beyond_chance = passing_runs >= RUNS_FOR_A_FLIP
            && share
                .interval
                .is_some_and(|(lo, hi)| hi < *band.start() || lo > *band.end());
        let verdict = if beyond_chance {
            Verdict::Differs
        } else {
            Verdict::NotJudged
        };
        return (verdict, Some(Why::PassingPeak));
    }
    if outcomes.judged || unanimous {
        return (Verdict::Agrees, None);
    }
    let status = emulated.outcome.status;
    let crashed_alike = !status.is_pass() && runs().all(|o| o.status == status);
    let why = if crashed_alike {
        Why::CrashSteps
    } else {
        Why::Outcomes
    };
    (Verdict::NotJudged, Some(why))
}

pub(super) fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b)
}
