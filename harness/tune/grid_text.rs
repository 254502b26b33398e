//! A validation in words: the grid's table (every setting, its runs, its median or how it
//! failed), then the search's pick judged by the grid's runs of it and the time each took.

use std::fmt::Write;

use model::size::ByteSize;

use super::grid::{Grid, Validation};
use super::search::{Candidate, Rejection, Tuned};

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
    let _ = writeln!(
        out,
        "  {:<22} {:>12}  {:>5}  img/s (median of the runs at the budget)",
        "setting", "stalled need", "passed"
    );
    let mut order: Vec<usize> = (0..grid.candidates.len()).collect();
    let rate = |i: &usize| grid.candidates[*i].median(grid.shm_bytes).unwrap_or(0.0);
    order.sort_by(|a, b| {
        let failed = |i: &usize| !grid.candidates[*i].passed_every_run();
        (failed(a).cmp(&failed(b))).then(rate(b).total_cmp(&rate(a)))
    });
    for i in order {
        let c = &grid.candidates[i];
        let mark = match (Some(i) == grid.best, Some(i) == v.pick) {
            (true, true) => "  <- best, the search's pick",
            (true, false) => "  <- best",
            (false, true) => "  <- the search's pick",
            (false, false) => "",
        };
        let _ = writeln!(
            out,
            "  {:<22} {:>12}  {:>2}/{:<3}  {}{mark}",
            c.name,
            ByteSize(c.needs_bytes).to_string(),
            c.runs.iter().filter(|r| r.status.is_pass()).count(),
            c.runs.len(),
            outcome(c, grid.shm_bytes)
        );
    }
    let best = grid.best.map(|b| &grid.candidates[b]);
    match (v.pick.map(|p| &grid.candidates[p]), best) {
        (Some(pick), Some(best)) => {
            let _ = writeln!(
                out,
                "the search's pick {}: {} in the grid, {:.1}% of the best's ({}, {}){}",
                pick.name,
                outcome(pick, grid.shm_bytes),
                v.share_of_best.unwrap_or(0.0) * 100.0,
                best.name,
                outcome(best, grid.shm_bytes),
                if v.pick_failed {
                    "; it FAILED a run of the grid"
                } else {
                    ""
                }
            );
        }
        (Some(pick), None) => {
            let _ = writeln!(
                out,
                "the search's pick {}: {} in the grid, where no setting passed every run",
                pick.name,
                outcome(pick, grid.shm_bytes)
            );
        }
        (None, Some(best)) => {
            let _ = writeln!(
                out,
                "the search picked none; the grid's best is {} ({})",
                best.name,
                outcome(best, grid.shm_bytes)
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
        "agrees: {} (within {:.0}% of the grid's best, and never a setting that failed a run of it)",
        if v.agrees { "yes" } else { "NO" },
        v.within * 100.0
    );
    out
}

/// `1325 img/s` or `sigbus at step 2`.
fn outcome(c: &Candidate, shm_bytes: u64) -> String {
    if let Some(Rejection::Failed {
        status, crash_step, ..
    }) = &c.rejection
    {
        let step = crash_step.map(|s| format!(" at step {s}"));
        return format!("{status}{}", step.unwrap_or_default());
    }
    match c.median(shm_bytes) {
        Some(rate) => format!("{rate:.0} img/s"),
        None => "not run".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid;
    use crate::search::search;
    use crate::search::tests::{base, bounds, machine};
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
                let rate = |i: &usize| grid.candidates[*i].median(grid.shm_bytes).unwrap();
                rate(a).total_cmp(&rate(b))
            })
            .unwrap();
        let at = |tuned: &Tuned, s| tuned.candidates.iter().position(|c| c.setting == s);
        tuned.pick = at(&tuned, grid.candidates[slowest].setting);
        let v = grid::validate(&grid, &tuned, 0.05);
        assert!(!v.agrees && v.share_of_best.unwrap() < 0.95, "{v:#?}");
        // A pick the grid saw fail.
        let mut failed = grid.clone();
        let p = at(&tuned, grid.candidates[grid.best.unwrap()].setting).unwrap();
        tuned.pick = Some(p);
        let run = &mut failed.candidates[grid.best.unwrap()].runs[0];
        run.status = model::record::Status::Sigbus;
        failed.candidates[grid.best.unwrap()].rejection = Some(Rejection::Failed {
            status: run.status,
            crash_step: Some(2),
            shm_bytes: run.shm_bytes,
            cause: None,
        });
        let v = grid::validate(&failed, &tuned, 0.05);
        assert!(v.pick_failed && !v.agrees, "{v:#?}");
        let text = render(&failed, &tuned, &v);
        assert!(text.contains("FAILED a run of the grid") && text.ends_with(
            "agrees: NO (within 5% of the grid's best, and never a setting that failed a run of it)"
        ), "{text}");
    }
}
