//! When `--repeat auto` may stop running a cell: it crashes in every run (more runs measure no
//! throughput), or the 95% interval of its CPU per image (img/s where CPU was not measured) is
//! narrower than the target, relative to the median. A cell whose runs disagree (some pass, some
//! crash: the size is marginal) never converges: it runs to the maximum, so that its outcomes
//! can be judged against another run's.

use super::outcomes::Shares;
use super::summary::CellSummary;

/// The interval's width over its median, of the measure `auto` watches.
pub fn relative_width(summary: &CellSummary) -> Option<f64> {
    let (ci, median) = match (summary.cpu_ci, summary.cpu_median) {
        (Some(ci), Some(m)) => (ci, m),
        _ => (summary.ci?, summary.median?),
    };
    (median > 0.0).then(|| (ci.1 - ci.0) / median)
}

/// Whether the cell's runs disagree about passing: some pass, some crash. Runs that all
/// crash, of one kind or several, have decided.
pub fn undecided(summary: &CellSummary) -> Option<Shares> {
    let shares = Shares::of(&summary.outcomes);
    shares.passes_and_crashes().then_some(shares)
}

/// Whether the cell needs no more runs.
pub fn converged(summary: &CellSummary, target: f64) -> bool {
    if undecided(summary).is_some() {
        return false;
    }
    !summary.outcome.status.is_pass() || relative_width(summary).is_some_and(|w| w <= target)
}
