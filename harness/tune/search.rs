//! The search: settings the model says cannot fit are pruned, the rest screened one knob at a
//! time at the budget ([`crate::screen`]), the few close to the best raced by successive halving
//! over runs in a smaller /dev/shm ([`Bounds::margin`]; each to two runs, the faster half to
//! `most_runs`, a setting surely slower than the leader by the median's interval dropped at
//! once), and the leaders run there in order until one has passed its margin runs: the pick, and
//! the next, the runner-up. A setting counts only if every run of it passed.

use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use analysis::stats;
use model::config::CellConfig;

use super::candidate::{Bounds, Candidate, Rejection, Run};
use super::screen;
use super::setting::Setting;
use super::trials::{Progress, Trials};

/// What the search found.
#[derive(Clone, Debug, Serialize)]
pub struct Tuned {
    pub shm_bytes: u64,
    pub margin_bytes: u64,
    /// The memory budget and its margin, where known.
    pub memory_bytes: Option<u64>,
    pub margin_memory_bytes: Option<u64>,
    /// Every setting of the grid, in the grid's order.
    pub candidates: Vec<Candidate>,
    /// Indices into `candidates`.
    pub pick: Option<usize>,
    pub runner_up: Option<usize>,
    /// The usual guess's, when one was given.
    pub usual: Option<usize>,
    /// The usual guess is not a setting of the grid (run to compare, never picked).
    pub usual_outside_grid: bool,
    pub trials: usize,
    /// The time ran out while screening or racing.
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
                            | Rejection::WontFitMemory { .. }
                            | Rejection::OutsideGrid
                    )
                )
            })
            .filter_map(|i| Some((i, self.candidates[i].median()?)))
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
        Some((c.median()?, stats::median_ci(&c.rates())))
    }
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
        .map(|setting| Candidate::modelled(*setting, base, &bounds))
        .collect();
    let mut trials = Trials::new(base, trial, progress);
    let usual_setting = usual;
    let usual_outside_grid = usual.is_some_and(|u| !settings.contains(&u));
    // The usual guess: raced where the grid holds it, else run once beside it, never picked.
    let usual = match usual {
        Some(u) if usual_outside_grid => {
            let outside = Candidate {
                rejection: Some(Rejection::OutsideGrid),
                ..Candidate::modelled(u, base, &bounds)
            };
            candidates.push(outside);
            Some(candidates.len() - 1)
        }
        Some(u) => candidates.iter().position(|c| c.setting == u),
        None => None,
    };
    // Where the model leaves it out or the grid lacks it, it still runs once at the budget.
    if let Some(u) = usual.filter(|u| candidates[*u].rejection.is_some()) {
        trials.run(
            &mut candidates[u],
            bounds.shm_bytes,
            screen::rough_runs(bounds),
        )?;
    }
    let began = Instant::now();
    let mut spent = screen::screen(
        &mut candidates,
        usual_setting.as_ref(),
        &mut trials,
        bounds,
        began,
    )?;
    if !spent {
        screen::field(&mut candidates);
        spent = race(&mut candidates, &mut trials, bounds, began)?;
    }
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
        memory_bytes: bounds.memory_bytes,
        margin_memory_bytes: bounds.margin_memory_bytes(),
        candidates,
        pick: passed.first().copied(),
        runner_up: passed.get(1).copied(),
        usual,
        usual_outside_grid,
        trials: trials.done,
        spent,
    })
}
/// Races the settings still in, each screened once at the budget: round k brings each to 2^k
/// runs, then halves them. The race runs in the margin's smaller /dev/shm, so that each of its
/// runs both times a setting and checks that it passes with room to spare (a failure there ends
/// it as any failure does). Whether the time ran out.
fn race<T, P>(
    candidates: &mut [Candidate],
    trials: &mut Trials<T, P>,
    bounds: Bounds,
    began: Instant,
) -> Result<bool>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    let mut target = 2.min(bounds.most_runs);
    loop {
        let alive: Vec<usize> = alive(candidates);
        for (n, &i) in alive.iter().enumerate() {
            while candidates[i].runs.len() < target as usize && candidates[i].rejection.is_none() {
                if bounds.out_of_time(began) {
                    return Ok(true);
                }
                // About: this round's runs left, the next round's (half the settings, as many
                // runs again each) and the margin's.
                let next = match target < bounds.most_runs {
                    true => alive.len() / 2 * target as usize,
                    false => 0,
                };
                let left = (alive.len() - n) * target as usize + next;
                if !trials.run(&mut candidates[i], bounds.margin_bytes(), left)? {
                    candidates[i].margin_passed = Some(false);
                }
            }
        }
        // A sole survivor has had this round's runs too: a winner is never one lucky run.
        if target >= bounds.most_runs || alive.len() <= 1 {
            return Ok(false);
        }
        halve(candidates);
        target = (target * 2).min(bounds.most_runs);
    }
}

/// The raced settings that passed every run, fastest first (those that lost the race or the
/// screen too: the winners may fail below the budget), each run at the margin until it has
/// `margin_runs` there, until two pass; those two.
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
            !c.runs.is_empty()
                && matches!(
                    c.rejection,
                    None | Some(Rejection::Slower { .. } | Rejection::Screened { .. })
                )
        })
        .collect();
    // The race's survivors first, then those it dropped, which got fewer runs (a lucky first
    // run does not outrank a winner's median), each fastest first.
    order.sort_by(|a, b| {
        let dropped = |i: &usize| candidates[*i].rejection.is_some();
        let rate = |i: &usize| candidates[*i].median().unwrap_or(0.0);
        (dropped(a).cmp(&dropped(b))).then(rate(b).total_cmp(&rate(a)))
    });
    prefer_descriptor(candidates, &mut order);
    let mut passed: Vec<usize> = Vec::new();
    for i in order {
        if passed.len() == 2 {
            // Raced, not needed at the margin: it keeps why it lost.
            candidates[i].rejection.get_or_insert(Rejection::NotChecked);
            continue;
        }
        let mut ok = true;
        let margin = bounds.margin_bytes();
        while candidates[i].runs_in(margin) < bounds.margin_runs.max(1) as usize {
            let left = (2 - passed.len()) * bounds.margin_runs as usize;
            if !trials.run(&mut candidates[i], margin, left)? {
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
    // The race's order holds where it gave more runs; on as many runs (a setting the race
    // dropped, topped up at the margin), the faster median goes first.
    passed.sort_by(|a, b| {
        let (a, b) = (&candidates[*a], &candidates[*b]);
        let rate = |c: &Candidate| c.median().unwrap_or(0.0);
        (b.rates().len().cmp(&a.rates().len())).then(rate(b).total_cmp(&rate(a)))
    });
    prefer_descriptor(candidates, &mut passed);
    Ok(passed)
}

/// Moves a file_descriptor setting with two runs or more ahead of its file_system twin where
/// the latter is not surely faster (the 95% interval of the change of medians above 0): on a tie torch's default wins,
/// because file_system's segments are named in /dev/shm and outlive a job killed whole (its
/// torch_shm_manager with it), where file_descriptor's are unlinked as they are made.
fn prefer_descriptor(candidates: &[Candidate], order: &mut Vec<usize>) {
    let mut k = 0;
    while k < order.len() {
        let named = &candidates[order[k]];
        let twin = (k + 1..order.len())
            .find(|j| named.setting.named_twin_of(&candidates[order[*j]].setting));
        // A twin run once (screened and left) has no interval to tie with.
        let twin = twin.filter(|j| candidates[order[*j]].rates().len() >= 2);
        if let Some(j) = twin {
            let change = stats::relative_change_ci(&candidates[order[j]].rates(), &named.rates());
            if !change.is_some_and(|(lo, _)| lo > 0.0) {
                let moved = order.remove(j);
                order.insert(k, moved);
            }
        }
        k += 1;
    }
}

/// The settings still racing.
fn alive(candidates: &[Candidate]) -> Vec<usize> {
    (0..candidates.len())
        .filter(|i| candidates[*i].rejection.is_none())
        .collect()
}

/// Drops the settings surely slower than the leader, then the slower half of the rest.
fn halve(candidates: &mut [Candidate]) {
    let mut alive = alive(candidates);
    alive.sort_by(|a, b| {
        let rate = |i: &usize| candidates[*i].median().unwrap_or(0.0);
        rate(b).total_cmp(&rate(a))
    });
    let Some(&leader) = alive.first() else {
        return;
    };
    let leader_rates = candidates[leader].rates();
    let leader_img_per_s = candidates[leader].median().unwrap_or(0.0);
    let keep = alive.len().div_ceil(2);
    for (rank, &i) in alive.iter().enumerate().skip(1) {
        let rates = candidates[i].rates();
        // The interval only for those the halving would keep (10,000 resamples each).
        let surely = rank < keep
            && stats::relative_change_ci(&leader_rates, &rates).is_some_and(|(_, hi)| hi < 0.0);
        if surely || rank >= keep {
            candidates[i].rejection = Some(Rejection::Slower {
                img_per_s: candidates[i].median().unwrap_or(0.0),
                leader_img_per_s,
                surely,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{base, bounds, machine, passed};
    use crate::setting::Space;
    use model::knobs::StartMethod;
    use model::knobs::Strategy;
    use std::time::Duration;

    #[test]
    fn the_pick_is_the_fastest_that_fits_with_margin_in_fewer_runs_than_the_grid() {
        let space = Space::for_cpus(2);
        let settings = space.settings();
        let budget = 64 << 20;
        // The usual guess (2 workers, prefetch 2) is in the grid: it races as any other.
        let usual = crate::setting::usual_guess(2, &base());
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
        let most = (tuned.candidates.iter()).map(|c| c.rates().len()).max();
        assert_eq!(Some(pick.rates().len()), most, "{pick:#?}");
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
            strategy: model::knobs::Strategy::FileDescriptor,
            persistent_workers: true,
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
        let usual = crate::setting::usual_guess(2, &base());
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
        assert_eq!(settings.len(), 3 * 2 * 2 * 2, "a value given twice is one");
        let usual = crate::setting::usual_guess(2, &base());
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

    #[test]
    fn a_start_method_that_fits_more_is_walked_too() {
        // 32 MiB of the Dataset's tensors pickled into /dev/shm under forkserver: in 48 MiB
        // forkserver fits one pinned worker at prefetch 1, fork fits many more.
        let mut loader = base();
        loader.knobs.dataset_bytes = 32 << 20;
        let settings = Space::for_cpus(2).settings();
        loader.knobs.start_method = StartMethod::Forkserver;
        let usual = crate::setting::usual_guess(2, &loader);
        loader.knobs.start_method = StartMethod::Fork;
        let b = bounds(48 << 20);
        let run = search(
            &loader,
            &settings,
            Some(usual),
            b,
            machine(1.0, None),
            |_| {},
        );
        let tuned = run.unwrap();
        let pick = tuned.candidates[tuned.pick.unwrap()].setting;
        assert_eq!(pick.start_method, StartMethod::Fork, "{pick:?}");
        assert!(pick.workers >= 2, "{pick:?}");
    }

    #[test]
    fn respawned_workers_are_measured_where_a_trial_spans_epochs() {
        // The user's loader respawns its workers every epoch (20% slower on the fake machine
        // where a trial has two): the screen walks its mode and runs the leaders' twins.
        let mut loader = base();
        loader.knobs.epochs = 2;
        loader.knobs.persistent_workers = false;
        let space = Space {
            persistent_workers: vec![false, true],
            ..Space::for_cpus(2)
        };
        let usual = crate::setting::usual_guess(2, &loader);
        let b = bounds(512 << 20);
        let run = search(
            &loader,
            &space.settings(),
            Some(usual),
            b,
            machine(1.0, None),
            |_| {},
        );
        let tuned = run.unwrap();
        let pick = tuned.candidates[tuned.pick.unwrap()].setting;
        assert!(pick.persistent_workers, "{pick:?}");
        let ran = |f: &dyn Fn(&Setting) -> bool| {
            (tuned.candidates.iter()).any(|c| f(&c.setting) && !c.runs.is_empty())
        };
        assert!(ran(&|s| s.strategy == model::knobs::Strategy::FileSystem));
        assert!(ran(&|s| s.start_method == StartMethod::Forkserver));
    }

    #[test]
    fn a_memory_budget_leaves_out_what_its_shm_and_pinned_batches_cannot_fit() {
        // Room in /dev/shm, 40 MiB of memory (34 MiB at the margin): batch 8 is 4.6 MiB.
        let b = Bounds {
            memory_bytes: Some(40 << 20),
            ..bounds(512 << 20)
        };
        let settings = Space::for_cpus(2).settings();
        let tuned = search(&base(), &settings, None, b, machine(1.0, None), |_| {}).unwrap();
        let room = b.margin_memory_bytes().unwrap();
        let pick = &tuned.candidates[tuned.pick.unwrap()];
        assert!(pick.needs_memory_bytes <= room, "{pick:#?}");
        let left_out: Vec<&Candidate> = (tuned.candidates.iter())
            .filter(|c| matches!(c.rejection, Some(Rejection::WontFitMemory { .. })))
            .collect();
        assert!(!left_out.is_empty());
        assert!(left_out
            .iter()
            .all(|c| c.runs.is_empty() && c.needs_bytes <= b.margin_bytes()));
        // A pinned setting's batches are in private memory as well as in /dev/shm.
        let (plain, pinned) = (
            settings[0],
            Setting {
                pin_memory: true,
                ..settings[0]
            },
        );
        assert!(pinned.needs_memory(&base()) > plain.needs_memory(&base()));
        assert_eq!(plain.needs_memory(&base()), plain.needs(&base()));
    }

    #[test]
    fn on_a_tie_torch_s_default_strategy_is_the_pick() {
        let b = bounds(64 << 20);
        let descriptor = Space::for_cpus(2).settings()[0];
        assert_eq!(descriptor.strategy, Strategy::FileDescriptor);
        let named = Setting {
            strategy: Strategy::FileSystem,
            ..descriptor
        };
        let run = |rate| passed(b.margin_bytes(), rate);
        let raced = |setting, rates: [f64; 3]| {
            let mut c = Candidate::new(setting, 1, None);
            rates.into_iter().for_each(|r| c.push(run(r)));
            c
        };
        let loader = base();
        let pick = |named_rates| {
            let mut candidates = vec![
                raced(named, named_rates),
                raced(descriptor, [700.0, 705.0, 710.0]),
            ];
            let mut trials =
                Trials::new(&loader, |_: &CellConfig, _| Ok(run(0.0)), |_: &Progress| {});
            check_margins(&mut candidates, &mut trials, b).unwrap()[0]
        };
        // 1% faster by the medians, within the noise: file_descriptor.
        assert_eq!(pick([708.0, 712.0, 715.0]), 1);
        // Surely faster: file_system.
        assert_eq!(pick([800.0, 805.0, 810.0]), 0);
    }

    #[test]
    fn on_as_many_runs_the_faster_median_is_the_pick() {
        // One lucky screen run left a race of one (4048 img/s, then 688 and 637 at the
        // margin); a setting the screen dropped, topped up at the margin, is faster on as many
        // runs.
        let b = bounds(64 << 20);
        let settings = Space::for_cpus(2).settings();
        let run = passed;
        let mut lucky = Candidate::new(settings[0], 1, None);
        for (bytes, rate) in [(b.shm_bytes, 4048.0), (b.margin_bytes(), 688.0)] {
            lucky.push(run(bytes, rate));
        }
        lucky.push(run(b.margin_bytes(), 637.0));
        let dropped = Rejection::Screened {
            img_per_s: 1571.0,
            best_img_per_s: 4048.0,
        };
        let mut steady = Candidate::new(settings[2], 1, Some(dropped));
        steady.push(run(b.shm_bytes, 1571.0));
        let mut candidates = vec![lucky, steady];
        let loader = base();
        let mut trials = Trials::new(
            &loader,
            |_: &CellConfig, bytes| Ok(run(bytes, 1500.0)),
            |_: &Progress| {},
        );
        let passed = check_margins(&mut candidates, &mut trials, b).unwrap();
        assert_eq!(passed, [1, 0], "{candidates:#?}");
        assert_eq!(candidates[1].rates().len(), 3);
    }
}
