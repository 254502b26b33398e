//! The exhaustive grid, what a search is checked against (`tune --validate`): every setting run
//! at the budget the same number of times (a failed run ends its runs: it can never be the
//! best), with no model and no race; its best is the fastest median of the settings that passed
//! every run. A search's pick is then judged by the grid's own runs of it: within a share of
//! the best's img/s, never a setting that failed a run of the grid, and at what share of the
//! grid's trial time.

use anyhow::Result;
use serde::Serialize;

use model::config::CellConfig;

use super::search::{Bounds, Candidate, Progress, Run, Trials, Tuned};
use super::setting::Setting;

/// Every setting's runs at the budget.
#[derive(Clone, Debug, Serialize)]
pub struct Grid {
    pub shm_bytes: u64,
    pub candidates: Vec<Candidate>,
    /// Index of the fastest median among the settings that passed every run.
    pub best: Option<usize>,
    pub trials: usize,
    /// The trials' time, start-up and teardown included.
    pub seconds: f64,
    /// `--max-time` ran out before every setting had its runs.
    pub spent: bool,
}

/// Runs each of `settings` `bounds.most_runs` times at `bounds.shm_bytes`, stopping a setting at
/// its first failed run; `bounds.max_time` stops the whole grid.
pub fn grid(
    base: &CellConfig,
    settings: &[Setting],
    bounds: Bounds,
    trial: impl FnMut(&CellConfig, u64) -> Result<Run>,
    progress: impl FnMut(&Progress),
) -> Result<Grid> {
    let began = std::time::Instant::now();
    let mut candidates: Vec<Candidate> = (settings.iter())
        .map(|s| Candidate::new(*s, s.needs(base), None))
        .collect();
    let mut trials = Trials::new(base, trial, progress);
    let runs = bounds.most_runs.max(1) as usize;
    let mut spent = false;
    'grid: for i in 0..candidates.len() {
        for _ in 0..runs {
            if bounds.max_time.is_some_and(|t| began.elapsed() >= t) {
                spent = true;
                break 'grid;
            }
            // After this run: this setting's others and every later setting's.
            let left = (candidates.len() - i) * runs - candidates[i].runs.len() - 1;
            if !trials.run(&mut candidates[i], bounds.shm_bytes, left)? {
                break;
            }
        }
    }
    let best = (0..candidates.len())
        .filter(|i| candidates[*i].passed_every_run() && candidates[*i].runs.len() == runs)
        .max_by(|a, b| {
            let rate = |i: &usize| candidates[*i].median(bounds.shm_bytes).unwrap_or(0.0);
            rate(a).total_cmp(&rate(b))
        });
    Ok(Grid {
        shm_bytes: bounds.shm_bytes,
        seconds: seconds(&candidates),
        candidates,
        best,
        trials: trials.done,
        spent,
    })
}

/// The trials' time of these settings' runs.
pub fn seconds(candidates: &[Candidate]) -> f64 {
    (candidates.iter())
        .flat_map(|c| &c.runs)
        .map(|r| r.seconds)
        .sum()
}

/// A search's pick judged by the grid's runs of it.
#[derive(Clone, Debug, Serialize)]
pub struct Validation {
    /// Index into the grid of the search's pick.
    pub pick: Option<usize>,
    /// The grid's median of the pick against the grid's best (1: the best itself).
    pub share_of_best: Option<f64>,
    /// The pick failed a run of the grid.
    pub pick_failed: bool,
    /// The search's trial time against the grid's.
    pub time_share: f64,
    /// The share of the best's img/s the pick must reach.
    pub within: f64,
    /// The pick reached it and passed every run of the grid; or neither found a setting.
    pub agrees: bool,
}

/// Judges `tuned`'s pick by `grid`'s runs of the same setting.
pub fn validate(grid: &Grid, tuned: &Tuned, within: f64) -> Validation {
    let setting = tuned.pick.map(|p| tuned.candidates[p].setting);
    let pick = setting.and_then(|s| grid.candidates.iter().position(|c| c.setting == s));
    let rate = |i: usize| grid.candidates[i].median(grid.shm_bytes);
    let share_of_best = match (pick, grid.best) {
        (Some(p), Some(b)) => rate(p).zip(rate(b)).map(|(p, b)| p / b),
        _ => None,
    };
    let pick_failed = pick.is_some_and(|p| !grid.candidates[p].passed_every_run());
    let agrees = match (pick, grid.best) {
        (None, None) => true,
        (Some(_), Some(_)) => !pick_failed && share_of_best.is_some_and(|s| s >= 1.0 - within),
        _ => false,
    };
    let searched = seconds(&tuned.candidates);
    Validation {
        pick,
        share_of_best,
        pick_failed,
        time_share: searched / grid.seconds.max(f64::MIN_POSITIVE),
        within,
        agrees,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::search;
    use crate::search::tests::{base, bounds, machine};
    use crate::setting::Space;

    #[test]
    fn the_search_agrees_with_the_grid_in_a_fraction_of_its_time() {
        let settings = Space::for_cpus(2).settings();
        for mib in [24, 64, 512] {
            let b = bounds(mib << 20);
            let grid = grid(&base(), &settings, b, machine(1.0, None), |_| {}).unwrap();
            assert_eq!(
                grid.trials,
                (grid.candidates.iter())
                    .map(|c| c.runs.len())
                    .sum::<usize>()
            );
            let best = &grid.candidates[grid.best.unwrap()];
            assert!(best.passed_every_run() && best.runs.len() == 4);
            let tuned = search(&base(), &settings, None, b, machine(1.0, None), |_| {}).unwrap();
            let v = validate(&grid, &tuned, 0.05);
            assert!(v.agrees, "{mib} MiB: {v:#?}");
            assert!(v.time_share < 0.5, "{mib} MiB: {v:#?}");
        }
    }
}
