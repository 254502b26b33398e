//! The exhaustive grid, what a search is checked against (`tune --validate`): every setting run
//! at the budget the same number of times (a failed run ends its runs: it can never be the
//! best), with no model and no race; its best is the fastest median of the settings that passed
//! every run, and its best that fits is the fastest of those the model lets fit in the margin
//! when training stalls, the settings the search may pick. A search's pick is then judged by the
//! grid's own runs of it: within a share of the best that fits, never a setting that failed a
//! run of the grid, and at what share of the grid's trial time; its share of the grid's best
//! overall is said beside, the cost of surviving a stall.

use anyhow::Result;
use serde::Serialize;

use model::config::CellConfig;

use super::candidate::{Bounds, Candidate, Run};
use super::search::Tuned;
use super::setting::Setting;
use super::trials::{Progress, Trials};

/// Every setting's runs at the budget.
#[derive(Clone, Debug, Serialize)]
pub struct Grid {
    pub shm_bytes: u64,
    pub candidates: Vec<Candidate>,
    /// Index of the fastest median among the settings that passed every run.
    pub best: Option<usize>,
    /// The same among those that fit in the margin when training stalls (the model's rule, as
    /// the search applies it).
    pub best_fitting: Option<usize>,
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
        .map(|s| Candidate {
            rejection: None,
            ..Candidate::modelled(*s, base, &bounds)
        })
        .collect();
    let mut trials = Trials::new(base, trial, progress);
    let runs = bounds.most_runs.max(1) as usize;
    let mut spent = false;
    'grid: for i in 0..candidates.len() {
        for _ in 0..runs {
            if bounds.out_of_time(began) {
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
    let best = |fits: &dyn Fn(&Candidate) -> bool| {
        (0..candidates.len())
            .filter(|i| {
                let c = &candidates[*i];
                c.passed_every_run() && c.runs.len() == runs && fits(c)
            })
            .max_by(|a, b| {
                let rate = |i: &usize| candidates[*i].median().unwrap_or(0.0);
                rate(a).total_cmp(&rate(b))
            })
    };
    let fits = |c: &Candidate| {
        bounds
            .wont_fit(c.needs_bytes, c.needs_memory_bytes)
            .is_none()
    };
    let (best, best_fitting) = (best(&|_| true), best(&fits));
    Ok(Grid {
        shm_bytes: bounds.shm_bytes,
        seconds: seconds(&candidates),
        candidates,
        best,
        best_fitting,
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
    /// The grid's median of the pick against the grid's best that fits when training stalls
    /// (1: that best itself).
    pub share_of_best: Option<f64>,
    /// The same against the grid's best overall, which may need more than the margin when
    /// training stalls.
    pub share_of_best_overall: Option<f64>,
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
    let rate = |i: usize| grid.candidates[i].median();
    let share = |best: Option<usize>| match (pick, best) {
        (Some(p), Some(b)) => rate(p).zip(rate(b)).map(|(p, b)| p / b),
        _ => None,
    };
    let share_of_best = share(grid.best_fitting);
    let pick_failed = pick.is_some_and(|p| !grid.candidates[p].passed_every_run());
    let agrees = match (pick, grid.best_fitting) {
        (None, None) => true,
        (Some(_), Some(_)) => !pick_failed && share_of_best.is_some_and(|s| s >= 1.0 - within),
        _ => false,
    };
    let searched = seconds(&tuned.candidates);
    Validation {
        pick,
        share_of_best,
        share_of_best_overall: share(grid.best),
        pick_failed,
        time_share: searched / grid.seconds.max(f64::MIN_POSITIVE),
        within,
        agrees,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{base, bounds, machine};
    use crate::search::search;
    use crate::setting::Space;

    #[test]
    fn the_search_agrees_with_the_grid_in_a_quarter_of_its_time() {
        // The grid: workers 1, 2, 4, 8 x prefetch 1, 2, 4 x pin x fork and forkserver,
        // run three times over (--validate's default), the usual guess given as the CLI gives it.
        let space = Space {
            workers: vec![1, 2, 4, 8],
            ..Space::for_cpus(2)
        };
        let settings = space.settings();
        let usual = crate::setting::usual_guess(2, &base());
        for mib in [24, 64, 128, 512] {
            let b = bounds(mib << 20);
            let grid = grid(&base(), &settings, b, machine(1.0, None), |_| {}).unwrap();
            assert_eq!(
                grid.trials,
                (grid.candidates.iter())
                    .map(|c| c.runs.len())
                    .sum::<usize>()
            );
            let best = &grid.candidates[grid.best.unwrap()];
            assert!(best.passed_every_run() && best.runs.len() == 3);
            // In 24 MiB the fastest that passed (two workers, prefetch 2) has no room for a
            // stall: the search is judged by the best that has.
            let fitting = &grid.candidates[grid.best_fitting.unwrap()];
            assert!(fitting.needs_bytes <= b.margin_bytes());
            assert!(mib != 24 || best.needs_bytes > b.margin_bytes());
            let tuned = search(
                &base(),
                &settings,
                Some(usual),
                b,
                machine(1.0, None),
                |_| {},
            );
            let v = validate(&grid, &tuned.unwrap(), 0.05);
            assert!(v.agrees, "{mib} MiB: {v:#?}");
            assert!(v.time_share <= 0.25, "{mib} MiB: {v:#?}");
        }
    }
}
