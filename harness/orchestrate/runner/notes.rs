//! What a run says at its end: the runs `--repeat auto` and `--max-repeat` added, and the cells
//! they could not settle.

use analysis::convergence;
use analysis::summary::summarize;
use model::config::CellConfig;
use results::Row;

use super::MoreRuns;

/// What the added runs did: how many, to which cells, and which are still wanted at the cap.
pub(super) fn more_runs_note(
    cells: &[CellConfig],
    rows_of: &[Vec<Row>],
    added: &[u32],
    more: &MoreRuns,
) -> String {
    let total: u32 = added.iter().sum();
    let to = added.iter().filter(|n| **n > 0).count();
    let open: Vec<&str> = cells
        .iter()
        .zip(rows_of)
        .filter(|(_, rows)| (more.wanted)(rows))
        .map(|(cell, _)| cell.cell.as_str())
        .collect();
    let left = match open.is_empty() {
        true => "no cell is left that more runs can decide".to_string(),
        false => format!(
            "still undecided at {} runs: {}",
            more.up_to,
            open.join(", ")
        ),
    };
    format!(
        "added {total} run(s) to {to} undecided cell(s) (up to {} runs each): {left}",
        more.up_to
    )
}

/// Whether one cell's runs so far meet `--repeat auto`'s target.
pub(super) fn stable(rows: &[Row], target: f64) -> bool {
    summarize(rows)
        .first()
        .is_some_and(|s| convergence::converged(s, target))
}

/// What `--repeat auto` reached: how many runs, and the cells whose interval stayed wider than
/// the target.
pub(super) fn convergence_note(cells: &[CellConfig], rows_of: &[Vec<Row>], target: f64) -> String {
    let open: Vec<String> = cells
        .iter()
        .zip(rows_of)
        .filter_map(|(cell, rows)| {
            let summary = summarize(rows).into_iter().next();
            if summary
                .as_ref()
                .is_some_and(|s| convergence::converged(s, target))
            {
                return None;
            }
            if let Some(shares) = summary.as_ref().and_then(convergence::undecided) {
                return Some(format!(
                    "{} (undecided after {} runs: {shares})",
                    cell.cell,
                    rows.len()
                ));
            }
            let width = summary
                .as_ref()
                .and_then(convergence::relative_width)
                .map(|w| format!("{:.1}%", w * 100.0))
                .unwrap_or_else(|| "no interval".into());
            Some(format!("{} ({} runs, {width})", cell.cell, rows.len()))
        })
        .collect();
    let runs: usize = rows_of.iter().map(Vec::len).sum();
    if open.is_empty() {
        format!(
            "--repeat auto: every cell's 95% interval narrower than {:.0}% of its median after {runs} runs in all",
            target * 100.0
        )
    } else {
        format!(
            "--repeat auto: {} cell(s) did not converge to a 95% interval within {:.0}% of the median or stayed undecided (some runs pass, some crash: a marginal size, run to the maximum): {}",
            open.len(),
            target * 100.0,
            open.join(", ")
        )
    }
}
