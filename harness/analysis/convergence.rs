//! When `--repeat auto` may stop running a cell: its outcome is a crash (more runs measure no
//! throughput), or the 95% interval of its CPU per image (img/s where CPU was not measured) is
//! narrower than the target, relative to the median.

use super::summary::CellSummary;

/// The interval's width over its median, of the measure `auto` watches.
pub(crate) fn relative_width(summary: &CellSummary) -> Option<f64> {
    let (ci, median) = match (summary.cpu_ci, summary.cpu_median) {
        (Some(ci), Some(m)) => (ci, m),
        _ => (summary.ci?, summary.median?),
    };
    (median > 0.0).then(|| (ci.1 - ci.0) / median)
}

/// Whether the cell needs no more runs.
pub(crate) fn converged(summary: &CellSummary, target: f64) -> bool {
    !summary.outcome.status.is_pass() || relative_width(summary).is_some_and(|w| w <= target)
}
