//! A validation in words: the grid's table (every setting, its runs, its median or how it
//! failed), then the search's pick judged by the grid's runs of it and the time each took.

use std::fmt::Write;

use model::size::ByteSize;

use super::candidate::{Candidate, Rejection};
use super::grid::{Grid, Validation};
use super::search::Tuned;

pub fn render(grid: &Grid, tuned: &Tuned, v: &Validation) -> String {
    let mut out = String::new();
    let runs = (grid.candidates.iter())
        .map(|c| c.runs.len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "validate: every setting of the grid, up to {runs} run(s) each in {} (a failed run ends a setting's): {} trial(s), {:.0} s{}",
        ByteSize(grid.shm_bytes),
        grid.trials,
        grid.seconds,
        if grid.spent { " (--max-time ran out: not every setting ran)" } else { "" }
    );
    table(&mut out, grid, v);
    let best = grid.best_fitting.map(|b| &grid.candidates[b]);
    match (v.pick.map(|p| &grid.candidates[p]), best) {
        (Some(pick), Some(best)) => {
            let _ = writeln!(
                out,
                "the search's pick {}: {} in the grid, {:.1}% of the best's that fits when training stalls ({}, {}){}",
                pick.name,
                outcome(pick),
                v.share_of_best.unwrap_or(0.0) * 100.0,
                best.name,
                outcome(best),
                if v.pick_failed {
                    "; it FAILED a run of the grid"
                } else {
                    ""
                }
            );
            overall(&mut out, grid, v);
        }
        (Some(pick), None) => {
            let _ = writeln!(
                out,
                "the search's pick {}: {} in the grid, where no setting passed every run",
                pick.name,
                outcome(pick)
            );
        }
        (None, Some(best)) => {
            let _ = writeln!(
                out,
                "the search picked none; the grid's best that fits when training stalls is {} ({})",
                best.name,
                outcome(best)
            );
        }
        (None, None) => {
            let _ = writeln!(
                out,
                "neither picked a setting: none passed every run of the grid"
            );
        }
    }
    let _ = writeln!(
        out,
        "the search: {} trial(s), {:.0} s, {:.2} of the grid's trial time",
        tuned.trials,
        super::grid::seconds(&tuned.candidates),
        v.time_share
    );
    let _ = write!(
        out,
        "agrees: {} (within {:.0}% of the grid's best that fits when training stalls, and never a setting that failed a run of it)",
        if v.agrees { "yes" } else { "NO" },
        v.within * 100.0
    );
    out
}

/// Every setting, those that passed every run first, fastest first; the bests and the pick
/// marked.
fn table(out: &mut String, grid: &Grid, v: &Validation) {
    let width = super::pick_text::name_width(&grid.candidates);
    let _ = writeln!(
        out,
        "  {:<width$} {:>12}  {:>5}  img/s (median of the runs at the budget)",
        "setting", "stalled need", "passed"
    );
    let mut order: Vec<usize> = (0..grid.candidates.len()).collect();
    let rate = |i: &usize| grid.candidates[*i].median().unwrap_or(0.0);
    order.sort_by(|a, b| {
        let failed = |i: &usize| !grid.candidates[*i].passed_every_run();
        (failed(a).cmp(&failed(b))).then(rate(b).total_cmp(&rate(a)))
    });
    for i in order {
        let c = &grid.candidates[i];
        let marks: Vec<&str> = [
            (grid.best, "best"),
            (grid.best_fitting, "best that fits when stalled"),
            (v.pick, "the search's pick"),
        ]
        .into_iter()
        .filter(|(at, _)| *at == Some(i))
        .map(|(_, what)| what)
        .collect();
        let mark = match marks.is_empty() {
            true => String::new(),
            false => format!("  <- {}", marks.join(", ")),
        };
        let _ = writeln!(
            out,
            "  {:<width$} {:>12}  {:>2}/{:<3}  {}{mark}",
            c.name,
            ByteSize(c.needs_bytes).to_string(),
            c.runs.iter().filter(|r| r.status.is_pass()).count(),
            c.runs.len(),
            outcome(c)
        );
    }
}

/// The grid's best overall, where it is not the best that fits: the pick against it, and what it
/// needs when training stalls against the margin (the cost of surviving a stall).
fn overall(out: &mut String, grid: &Grid, v: &Validation) {
    let Some(best) = grid.best.filter(|b| Some(*b) != grid.best_fitting) else {
        return;
    };
    let best = &grid.candidates[best];
    let _ = writeln!(
        out,
        "  and {:.1}% of the grid's best overall ({}, {}), which needs {} when training stalls: it passed the grid's runs, but a stall (a checkpoint, an evaluation) would not fit",
        v.share_of_best_overall.unwrap_or(0.0) * 100.0,
        best.name,
        outcome(best),
        ByteSize(best.needs_bytes)
    );
}

/// `1325 img/s` or `sigbus at step 2`.
fn outcome(c: &Candidate) -> String {
    if let Some(Rejection::Failed {
        status, crash_step, ..
    }) = &c.rejection
    {
        let step = crash_step.map(|s| format!(" at step {s}"));
        return format!("{status}{}", step.unwrap_or_default());
    }
    match c.median() {
        Some(rate) => format!("{rate:.0} img/s"),
        None => "not run".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{base, bounds, machine};
    use crate::grid;
    use crate::search::search;
    use crate::setting::Space;

    #[test]
    fn a_pick_that_failed_a_run_of_the_grid_or_falls_short_disagrees() {
        let settings = Space::for_cpus(2).settings();
        let b = bounds(512 << 20);
        let grid = grid::grid(&base(), &settings, b, machine(1.0, None), |_| {}).unwrap();
        let mut tuned = search(&base(), &settings, None, b, machine(1.0, None), |_| {}).unwrap();
        // The slowest setting picked: far below the best.
        let slowest = (0..grid.candidates.len())
            .min_by(|a, b| {
                let rate = |i: &usize| grid.candidates[*i].median().unwrap();
                rate(a).total_cmp(&rate(b))
            })
            .unwrap();
        let at = |tuned: &Tuned, s| tuned.candidates.iter().position(|c| c.setting == s);
        tuned.pick = at(&tuned, grid.candidates[slowest].setting);
        let v = grid::validate(&grid, &tuned, 0.05);
        assert!(!v.agrees && v.share_of_best.unwrap() < 0.95, "{v:#?}");
        // A pick the grid saw fail.
        let mut failed = grid.clone();
        let best = grid.best_fitting.unwrap();
        let p = at(&tuned, grid.candidates[best].setting).unwrap();
        tuned.pick = Some(p);
        let run = &mut failed.candidates[best].runs[0];
        run.status = model::record::Status::Sigbus;
        failed.candidates[best].rejection = Some(Rejection::Failed {
            status: run.status,
            crash_step: Some(2),
            shm_bytes: run.shm_bytes,
            cause: None,
            memory_bytes: None,
        });
        let v = grid::validate(&failed, &tuned, 0.05);
        assert!(v.pick_failed && !v.agrees, "{v:#?}");
        let text = render(&failed, &tuned, &v);
        assert!(text.contains("FAILED a run of the grid") && text.ends_with(
            "agrees: NO (within 5% of the grid's best that fits when training stalls, and never a setting that failed a run of it)"
        ), "{text}");
    }
}
