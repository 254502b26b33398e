//! The search: settings the model says cannot fit are pruned, the rest raced by successive
//! halving over runs (every one runs once, the faster half twice as often, and so on, a setting
//! surely slower than the leader by the median's interval dropped at once), and the leaders
//! checked at a smaller /dev/shm ([`Bounds::margin`]) in order until one passes there: the pick,
//! and the next, the runner-up. A setting counts only if every run of it passed.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use analysis::stats;
use model::config::CellConfig;
use model::estimate::median;
use model::record::Status;

use super::setting::Setting;

/// The budget and how hard to look.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The /dev/shm the loader will have.
    pub shm_bytes: u64,
    /// The share of it the pick must also pass in (0.85: a neighbour's segment or a slower
    /// step may take the rest).
    pub margin: f64,
    /// The most runs one setting gets while racing.
    pub most_runs: u32,
    /// Runs of each leader at the margin.
    pub margin_runs: u32,
    /// Stop racing after this long (the margin checks still run: a pick is never unchecked).
    pub max_time: Option<Duration>,
}

impl Bounds {
    /// The smaller /dev/shm the pick must also pass in, in whole pages.
    pub fn margin_bytes(&self) -> u64 {
        ((self.shm_bytes as f64 * self.margin) as u64) / 4096 * 4096
    }
}

/// How one run ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    pub shm_bytes: u64,
    pub status: Status,
    pub crash_step: Option<u64>,
    pub img_per_s: Option<f64>,
    /// How long the trial took, start-up and teardown included (what a search spends).
    pub seconds: f64,
    /// Why it ended so (`explain`'s cause), where it failed and the tracer named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// Why a setting was not picked.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// The model says it needs more than the margin leaves when training stalls (every
    /// worker's prefetch full).
    WontFit { needs_bytes: u64, room_bytes: u64 },
    /// A run ended without passing, at the budget or at the margin.
    Failed {
        status: Status,
        crash_step: Option<u64>,
        shm_bytes: u64,
        cause: Option<String>,
    },
    /// Raced and lost: slower than the leader, surely (the interval of the change of medians
    /// is below 0) or among the slower half when the runs were halved.
    Slower {
        img_per_s: f64,
        leader_img_per_s: f64,
        surely: bool,
    },
    /// Raced, not checked at the margin: the pick and the runner-up passed there first.
    NotChecked,
    /// Not run: the time ran out first.
    NotReached,
    /// The usual guess, outside the grid asked for: run once to be compared with, never picked.
    OutsideGrid,
}

/// A setting and what the search learnt of it.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    pub setting: Setting,
    /// Its short name (`w4-p2-pin-forkserver`).
    pub name: String,
    /// /dev/shm it needs at its peak, as the model says.
    pub needs_bytes: u64,
    /// Its runs at the budget, then at the margin.
    pub runs: Vec<Run>,
    /// Why it was not picked (None: the pick, the runner-up, or passed at the margin).
    pub rejection: Option<Rejection>,
    /// Whether it passed every run at the margin (None: not tried there).
    pub margin_passed: Option<bool>,
}

impl Candidate {
    /// A setting not yet run; `rejection` set where the model leaves it out.
    pub(crate) fn new(setting: Setting, needs_bytes: u64, rejection: Option<Rejection>) -> Self {
        Candidate {
            setting,
            name: setting.name(),
            needs_bytes,
            runs: Vec::new(),
            rejection,
            margin_passed: None,
        }
    }

    /// Whether every run it had passed (and it had one).
    pub fn passed_every_run(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(|r| r.status.is_pass())
    }

    /// img/s of its passing runs at the budget.
    pub fn rates(&self, shm_bytes: u64) -> Vec<f64> {
        (self.runs.iter())
            .filter(|r| r.shm_bytes == shm_bytes && r.status.is_pass())
            .filter_map(|r| r.img_per_s)
            .collect()
    }

    pub fn median(&self, shm_bytes: u64) -> Option<f64> {
        median(&self.rates(shm_bytes))
    }
}

/// What the search found.
#[derive(Clone, Debug, Serialize)]
pub struct Tuned {
    pub shm_bytes: u64,
    pub margin_bytes: u64,
    /// Every setting of the grid, in the grid's order.
    pub candidates: Vec<Candidate>,
    /// Indices into `candidates`.
    pub pick: Option<usize>,
    pub runner_up: Option<usize>,
    /// The usual guess's, when one was given.
    pub usual: Option<usize>,
    pub trials: usize,
    /// The time ran out while racing.
    pub spent: bool,
}

impl Tuned {
    /// The frontier, least need first: the grid's settings that fit and passed at the budget
    /// (not a failure, nor one the stall check left out, nor the usual guess from outside the
    /// grid) that no other beats on both img/s and /dev/shm needed.
    pub fn frontier(&self) -> Vec<usize> {
        let mut measured: Vec<(usize, f64)> = (0..self.candidates.len())
            .filter(|i| {
                !matches!(
                    self.candidates[*i].rejection,
                    Some(
                        Rejection::Failed { .. }
                            | Rejection::WontFit { .. }
                            | Rejection::OutsideGrid
                    )
                )
            })
            .filter_map(|i| Some((i, self.candidates[i].median(self.shm_bytes)?)))
            .collect();
        measured.sort_by(|a, b| {
            let need = |i: usize| self.candidates[i].needs_bytes;
            need(a.0).cmp(&need(b.0)).then(b.1.total_cmp(&a.1))
        });
        let mut best = f64::NEG_INFINITY;
        let mut frontier = Vec::new();
        for (i, rate) in measured {
            if rate > best {
                best = rate;
                frontier.push(i);
            }
        }
        frontier
    }

    /// The pick's median img/s and its 95% interval (None with one run).
    pub fn pick_rate(&self) -> Option<(f64, Option<(f64, f64)>)> {
        let c = &self.candidates[self.pick?];
        let rates = c.rates(self.shm_bytes);
        Some((median(&rates)?, stats::median_ci(&rates)))
    }
}

/// What the search reports as it goes: a run done, the runs done and about how many are left.
pub struct Progress<'a> {
    pub setting: &'a Setting,
    pub run: &'a Run,
    pub done: usize,
    pub left: usize,
}

/// Searches `settings` of the loader `base` by running `trial(config, shm_bytes)`. `usual`, the
/// setting users would guess, is run at the budget even where the model leaves it out, so that
/// what the pick is said against is measured.
pub fn search(
    base: &CellConfig,
    settings: &[Setting],
    usual: Option<Setting>,
    bounds: Bounds,
    trial: impl FnMut(&CellConfig, u64) -> Result<Run>,
    progress: impl FnMut(&Progress),
) -> Result<Tuned> {
    let margin_bytes = bounds.margin_bytes();
    let mut candidates: Vec<Candidate> = (settings.iter())
        .map(|setting| {
            let needs_bytes = setting.needs(base);
            let wont_fit = (needs_bytes > margin_bytes).then_some(Rejection::WontFit {
                needs_bytes,
                room_bytes: margin_bytes,
            });
            Candidate::new(*setting, needs_bytes, wont_fit)
        })
        .collect();
    let mut trials = Trials::new(base, trial, progress);
    // The usual guess: raced where the grid holds it, else run once beside it, never picked.
    let usual = match usual {
        Some(u) if !settings.contains(&u) => {
            candidates.push(Candidate::new(
                u,
                u.needs(base),
                Some(Rejection::OutsideGrid),
            ));
            Some(candidates.len() - 1)
        }
        Some(u) => candidates.iter().position(|c| c.setting == u),
        None => None,
    };
    // Where the model leaves it out or the grid lacks it, it still runs once at the budget.
    if let Some(u) = usual.filter(|u| candidates[*u].rejection.is_some()) {
        trials.run(&mut candidates[u], bounds.shm_bytes, 1)?;
    }
    let spent = race(&mut candidates, &mut trials, bounds)?;
    let passed = check_margins(&mut candidates, &mut trials, bounds)?;
    // Settings the time left unraced.
    for c in candidates.iter_mut() {
        if c.runs.is_empty() && c.rejection.is_none() {
            c.rejection = Some(Rejection::NotReached);
        }
    }
    Ok(Tuned {
        shm_bytes: bounds.shm_bytes,
        margin_bytes,
        candidates,
        pick: passed.first().copied(),
        runner_up: passed.get(1).copied(),
        usual,
        trials: trials.done,
        spent,
    })
}

/// The trial function, what is told of each run, and the runs so far.
pub(crate) struct Trials<'a, T, P> {
    base: &'a CellConfig,
    trial: T,
    progress: P,
    pub(crate) done: usize,
}

impl<'a, T, P> Trials<'a, T, P>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    pub(crate) fn new(base: &'a CellConfig, trial: T, progress: P) -> Trials<'a, T, P> {
        Trials {
            base,
            trial,
            progress,
            done: 0,
        }
    }

    /// Runs `c` once in `shm_bytes`; whether it passed (a failure rejects it).
    pub(crate) fn run(&mut self, c: &mut Candidate, shm_bytes: u64, left: usize) -> Result<bool> {
        let one = (self.trial)(&c.setting.apply(self.base), shm_bytes)?;
        self.done += 1;
        (self.progress)(&Progress {
            setting: &c.setting,
            run: &one,
            done: self.done,
            left,
        });
        let passed = one.status.is_pass();
        if !passed {
            c.rejection = Some(Rejection::Failed {
                status: one.status,
                crash_step: one.crash_step,
                shm_bytes,
                cause: one.cause.clone(),
            });
        }
        c.runs.push(one);
        Ok(passed)
    }
}

/// Races the settings still in at the budget: round k brings each to 2^k runs, then halves
/// them. Whether the time ran out.
fn race<T, P>(
    candidates: &mut [Candidate],
    trials: &mut Trials<T, P>,
    bounds: Bounds,
) -> Result<bool>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    let began = Instant::now();
    let mut target = 1;
    loop {
        let alive: Vec<usize> = alive(candidates);
        for (n, &i) in alive.iter().enumerate() {
            while candidates[i].runs.len() < target as usize && candidates[i].rejection.is_none() {
                if bounds.max_time.is_some_and(|t| began.elapsed() >= t) {
                    return Ok(true);
                }
                // About: this round's runs left, the next round's (half the settings, as many
                // runs again each) and the margin's.
                let next = match target < bounds.most_runs {
                    true => alive.len() / 2 * target as usize,
                    false => 0,
                };
                let left =
                    (alive.len() - n) * target as usize + next + 2 * bounds.margin_runs as usize;
                trials.run(&mut candidates[i], bounds.shm_bytes, left)?;
            }
        }
        // A sole survivor has had this round's runs too: a winner is never one lucky run.
        if target >= bounds.most_runs || alive.len() <= 1 {
            return Ok(false);
        }
        halve(candidates, bounds.shm_bytes);
        target = (target * 2).min(bounds.most_runs);
    }
}

/// The raced settings that passed every run, fastest first (those that lost the race too: the
/// winners may fail below the budget), each checked at the margin until two pass there; those
/// two.
fn check_margins<T, P>(
    candidates: &mut [Candidate],
    trials: &mut Trials<T, P>,
    bounds: Bounds,
) -> Result<Vec<usize>>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    let mut order: Vec<usize> = (0..candidates.len())
        .filter(|i| {
            let c = &candidates[*i];
            !c.runs.is_empty() && matches!(c.rejection, None | Some(Rejection::Slower { .. }))
        })
        .collect();
    // The race's survivors first, then those it dropped, which got fewer runs (a lucky first
    // run does not outrank a winner's median), each fastest first.
    order.sort_by(|a, b| {
        let dropped = |i: &usize| candidates[*i].rejection.is_some();
        let rate = |i: &usize| candidates[*i].median(bounds.shm_bytes).unwrap_or(0.0);
        (dropped(a).cmp(&dropped(b))).then(rate(b).total_cmp(&rate(a)))
    });
    let mut passed = Vec::new();
    for i in order {
        if passed.len() == 2 {
            // Raced, not needed at the margin: it keeps why it lost.
            candidates[i].rejection.get_or_insert(Rejection::NotChecked);
            continue;
        }
        let mut ok = true;
        for _ in 0..bounds.margin_runs.max(1) {
            let left = (2 - passed.len()) * bounds.margin_runs as usize;
            if !trials.run(&mut candidates[i], bounds.margin_bytes(), left)? {
                ok = false;
                break;
            }
        }
        candidates[i].margin_passed = Some(ok);
        if ok {
            candidates[i].rejection = None;
            passed.push(i);
        }
    }
    Ok(passed)
}

/// The settings still racing.
fn alive(candidates: &[Candidate]) -> Vec<usize> {
    (0..candidates.len())
        .filter(|i| candidates[*i].rejection.is_none())
        .collect()
}

/// Drops the settings surely slower than the leader, then the slower half of the rest.
fn halve(candidates: &mut [Candidate], shm_bytes: u64) {
    let mut alive = alive(candidates);
    alive.sort_by(|a, b| {
        let rate = |i: &usize| candidates[*i].median(shm_bytes).unwrap_or(0.0);
        rate(b).total_cmp(&rate(a))
    });
    let Some(&leader) = alive.first() else {
        return;
    };
    let leader_rates = candidates[leader].rates(shm_bytes);
    let leader_img_per_s = median(&leader_rates).unwrap_or(0.0);
    let keep = alive.len().div_ceil(2);
    for (rank, &i) in alive.iter().enumerate().skip(1) {
        let rates = candidates[i].rates(shm_bytes);
        // The interval only for those the halving would keep (10,000 resamples each).
        let surely = rank < keep
            && stats::relative_change_ci(&leader_rates, &rates).is_some_and(|(_, hi)| hi < 0.0);
        if surely || rank >= keep {
            candidates[i].rejection = Some(Rejection::Slower {
                img_per_s: median(&rates).unwrap_or(0.0),
                leader_img_per_s,
                surely,
            });
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::setting::Space;
    use model::knobs::StartMethod;

    /// A machine where img/s grows with workers up to 2, prefetch helps a little, pinning costs
    /// 10%, and a run crashes when its setting uses more than the /dev/shm it has (its use the
    /// model's need times `under`: a model that under-predicts), and `flaky`'s one run in three.
    pub(crate) fn machine(
        under: f64,
        flaky: Option<Setting>,
    ) -> impl FnMut(&CellConfig, u64) -> Result<Run> {
        let mut calls = 0u64;
        move |config, shm_bytes| {
            calls += 1;
            let k = &config.knobs;
            let setting = Setting {
                workers: k.workers,
                prefetch: k.prefetch,
                pin_memory: k.pin_memory,
                start_method: k.start_method,
            };
            let uses = plan::predict::peak_bytes(config) as f64 * under;
            let jitter = 1.0 + 0.01 * ((calls * 7919) % 5) as f64 / 5.0;
            let rate = 100.0 * f64::from(k.workers.min(2)) * (1.0 + 0.05 * f64::from(k.prefetch))
                / if k.pin_memory { 1.1 } else { 1.0 }
                * jitter;
            let crash =
                uses > shm_bytes as f64 || (Some(setting) == flaky && calls.is_multiple_of(3));
            Ok(Run {
                shm_bytes,
                status: if crash { Status::Sigbus } else { Status::Pass },
                crash_step: crash.then_some(3),
                img_per_s: (!crash).then_some(rate),
                seconds: if crash { 0.5 } else { 2.0 },
                cause: None,
            })
        }
    }

    pub(crate) fn base() -> CellConfig {
        let mut base = CellConfig::with_defaults("tune");
        base.knobs.batch = 8;
        base.knobs.steps = 20;
        base
    }

    pub(crate) fn bounds(shm_bytes: u64) -> Bounds {
        Bounds {
            shm_bytes,
            margin: 0.85,
            most_runs: 4,
            margin_runs: 2,
            max_time: None,
        }
    }

    #[test]
    fn the_pick_is_the_fastest_that_fits_with_margin_in_fewer_runs_than_the_grid() {
        let space = Space::for_cpus(2);
        let settings = space.settings();
        let budget = 64 << 20;
        // The usual guess (2 workers, prefetch 2) is in the grid: it races as any other.
        let usual = crate::setting::usual_guess(2, StartMethod::Fork);
        let tuned = search(
            &base(),
            &settings,
            Some(usual),
            bounds(budget),
            machine(1.0, None),
            |_| {},
        )
        .unwrap();
        let pick = &tuned.candidates[tuned.pick.unwrap()];
        // The fastest rate is at 2+ workers, prefetch 4, no pinning; its need must fit.
        assert!(
            !pick.setting.pin_memory && pick.setting.workers >= 2,
            "{pick:#?}"
        );
        assert!(pick.needs_bytes <= tuned.margin_bytes);
        let best_fitting = (tuned.candidates.iter())
            .filter(|c| c.needs_bytes <= tuned.margin_bytes)
            .map(|c| {
                let s = c.setting;
                f64::from(s.workers.min(2)) * (1.0 + 0.05 * f64::from(s.prefetch))
                    / if s.pin_memory { 1.1 } else { 1.0 }
            })
            .fold(0.0, f64::max);
        let picked = f64::from(pick.setting.workers.min(2))
            * (1.0 + 0.05 * f64::from(pick.setting.prefetch));
        assert!(
            picked >= best_fitting * 0.95,
            "{picked} against {best_fitting}"
        );
        // The race's winner, not a setting it dropped after fewer runs.
        let most = (tuned.candidates.iter())
            .map(|c| c.rates(budget).len())
            .max();
        assert_eq!(Some(pick.rates(budget).len()), most, "{pick:#?}");
        // Fewer runs than the grid run 4 times over.
        assert!(tuned.trials < settings.len() * 4, "{} trials", tuned.trials);
        assert!(tuned.runner_up.is_some());
        // What could not fit is said, with its need.
        assert!(tuned
            .candidates
            .iter()
            .any(|c| matches!(c.rejection, Some(Rejection::WontFit { .. }))));
    }

    #[test]
    fn a_setting_that_crashes_once_is_never_picked_and_the_margin_decides() {
        let settings = Space::for_cpus(2).settings();
        // The fastest setting crashes one run in three.
        let fastest = Setting {
            workers: 4,
            prefetch: 4,
            pin_memory: false,
            start_method: StartMethod::Fork,
        };
        let tuned = search(
            &base(),
            &settings,
            None,
            bounds(512 << 20),
            machine(1.0, Some(fastest)),
            |_| {},
        )
        .unwrap();
        let pick = &tuned.candidates[tuned.pick.unwrap()];
        assert_ne!(pick.setting, fastest);
        assert!(pick.runs.iter().all(|r| r.status.is_pass()), "{pick:#?}");
        // A model 20% short: settings that pass at the budget and not at the margin are found
        // out there, at some budget, and never picked at any.
        let mut found_at_margin = 0;
        // Budgets around the small loaders' needs, and roomy ones.
        for mib in [16, 32, 56, 128, 256] {
            let b = bounds(mib << 20);
            let tuned = search(&base(), &settings, None, b, machine(1.2, None), |_| {}).unwrap();
            found_at_margin += (tuned.candidates.iter())
                .filter(|c| c.margin_passed == Some(false))
                .count();
            if let Some(pick) = tuned.pick {
                let pick = &tuned.candidates[pick];
                assert!(pick.runs.iter().all(|r| r.status.is_pass()), "{pick:#?}");
                assert!(pick.needs_bytes as f64 * 1.2 <= b.margin_bytes() as f64);
            }
        }
        assert!(found_at_margin > 0);
    }

    #[test]
    fn the_usual_guess_runs_once_even_where_the_model_leaves_it_out() {
        let settings = Space::for_cpus(2).settings();
        let usual = crate::setting::usual_guess(2, StartMethod::Fork);
        // 24 MiB: the usual guess needs 5 batches of 4.6 MiB when training stalls.
        let tuned = search(
            &base(),
            &settings,
            Some(usual),
            bounds(24 << 20),
            machine(0.5, None),
            |_| {},
        )
        .unwrap();
        let c = tuned
            .candidates
            .iter()
            .find(|c| c.setting == usual)
            .unwrap();
        assert!(
            matches!(c.rejection, Some(Rejection::WontFit { .. })),
            "{c:#?}"
        );
        assert_eq!(c.runs.len(), 1);
        assert_ne!(tuned.pick.map(|p| tuned.candidates[p].setting), Some(usual));
    }

    #[test]
    fn a_usual_guess_outside_the_grid_is_run_once_and_never_picked() {
        // Only one worker in the grid: the usual guess (2 workers, faster here) is outside it.
        let space = Space {
            workers: vec![1, 1],
            ..Space::for_cpus(2)
        };
        let settings = space.settings();
        assert_eq!(settings.len(), 3 * 2 * 2, "a value given twice is one");
        let usual = crate::setting::usual_guess(2, StartMethod::Fork);
        let tuned = search(
            &base(),
            &settings,
            Some(usual),
            bounds(512 << 20),
            machine(1.0, None),
            |_| {},
        )
        .unwrap();
        let u = &tuned.candidates[tuned.usual.unwrap()];
        assert_eq!((u.setting, u.runs.len()), (usual, 1));
        assert_eq!(u.rejection, Some(Rejection::OutsideGrid));
        let pick = &tuned.candidates[tuned.pick.unwrap()];
        let runner = &tuned.candidates[tuned.runner_up.unwrap()];
        assert!(pick.setting.workers == 1 && runner.setting.workers == 1);
    }

    #[test]
    fn the_time_budget_stops_the_race_and_the_pick_is_still_checked() {
        let settings = Space::for_cpus(2).settings();
        let stop = Bounds {
            max_time: Some(Duration::ZERO),
            ..bounds(64 << 20)
        };
        let tuned = search(&base(), &settings, None, stop, machine(1.0, None), |_| {}).unwrap();
        assert!(tuned.spent);
        // No setting raced: nothing to pick, and every fitting one is said not reached.
        assert_eq!(tuned.pick, None);
        assert!(tuned.candidates.iter().all(|c| c.rejection.is_some()));
    }
}
