//! The screen: which settings are worth racing, found one knob at a time rather than by running
//! every setting. From the setting nearest the usual guess that fits, every setting one knob
//! away runs once (each other worker count, prefetch, pinning; the rest held); then the same from
//! the fastest setting so far, and from the second fastest, until the two fastest have had their
//! neighbours run. Knobs interact (pinning pays only where the workers keep batches waiting), so
//! the walk goes on from wherever the leaders are, not along each knob once. A setting's mode
//! (start method, sharing strategy, persistent workers) changes how a loader starts, what it
//! pickles and how a batch crosses, and mostly not how fast it goes (fork and forkserver twins
//! tie, and ties stall a walk), so the walk keeps the first setting's mode and the leaders'
//! twins, one part of the mode changed, are run after it; another mode is walked too only where
//! it fits settings the walked one cannot (a Dataset's tensors pickled into /dev/shm make
//! forkserver's settings bigger than fork's). A grid of W x P x 2 x 8 modes costs a few times
//! W + P runs instead of 16WP. The screened settings close to the best go on to the race
//! ([`field`]); the rest keep why they were left.

use std::cmp::Reverse;
use std::time::Instant;

use anyhow::Result;

use super::candidate::{Bounds, Candidate, Rejection, Run};
use super::setting::{Mode, Setting};
use super::trials::{Progress, Trials};
use model::config::CellConfig;

/// The walk expands the neighbours of the fastest this many settings (two, not one: a single
/// path stops where the best's neighbours cannot fit though a setting beside them could lead on).
pub const BEAM: usize = 2;
/// At most this many screened settings are raced.
pub const FIELD: usize = 4;
/// A screened setting is raced only if its one run is within this share of the best's.
pub const CLOSE: f64 = 0.10;

/// How many of the speed knobs (workers, prefetch, pinning) `a` and `b` differ in, or None if
/// their modes differ.
fn distance(a: &Setting, b: &Setting) -> Option<usize> {
    (a.mode() == b.mode()).then(|| knobs_apart(a, b))
}

/// How many of the speed knobs `a` and `b` differ in.
fn knobs_apart(a: &Setting, b: &Setting) -> usize {
    let differ = [
        a.workers != b.workers,
        a.prefetch != b.prefetch,
        a.pin_memory != b.pin_memory,
    ];
    differ.iter().filter(|d| **d).count()
}

/// How many parts of the mode (start method, strategy, persistent workers) `a` and `b` differ
/// in.
fn modes_apart(a: &Setting, b: &Setting) -> usize {
    let differ = [
        a.start_method != b.start_method,
        a.strategy != b.strategy,
        a.persistent_workers != b.persistent_workers,
    ];
    differ.iter().filter(|d| **d).count()
}

/// The settings still in (none failed, the model lets them fit) that have not run, one knob away
/// from `pivot` in its mode, workers first.
fn neighbours(candidates: &[Candidate], pivot: &Setting) -> Vec<usize> {
    let mut todo: Vec<usize> = (0..candidates.len())
        .filter(|i| {
            let c = &candidates[*i];
            c.rejection.is_none() && c.runs.is_empty() && distance(&c.setting, pivot) == Some(1)
        })
        .collect();
    let knob = |i: &usize| {
        let s = &candidates[*i].setting;
        (s.workers == pivot.workers, s.prefetch == pivot.prefetch)
    };
    todo.sort_by_key(knob);
    todo
}

/// The settings still in that have not run and differ from `pivot` in one part of the mode
/// only (the start method, the strategy or persistent workers).
fn twins(candidates: &[Candidate], pivot: &Setting) -> Vec<usize> {
    (0..candidates.len())
        .filter(|i| {
            let c = &candidates[*i];
            c.rejection.is_none()
                && c.runs.is_empty()
                && c.setting.twinned(pivot)
                && modes_apart(&c.setting, pivot) == 1
        })
        .collect()
}

/// Where the screen begins: the setting still in nearest the usual guess (the fewest parts of
/// its mode apart first, then the fewest knobs apart, then the most workers and prefetch:
/// nearest what the user would run). Without a usual guess, the one with the most workers.
fn start(candidates: &[Candidate], usual: Option<&Setting>) -> Option<usize> {
    (0..candidates.len())
        .filter(|i| candidates[*i].rejection.is_none())
        .min_by_key(|i| {
            let s = &candidates[*i].setting;
            (
                usual.map_or(0, |u| modes_apart(s, u)),
                usual.map_or(0, |u| knobs_apart(s, u)),
                Reverse(s.workers),
                Reverse(s.prefetch),
            )
        })
}

/// The [`BEAM`] settings still in with the fastest passing runs, fastest first; of one mode,
/// or of any.
fn leaders(candidates: &[Candidate], mode: Option<Mode>) -> Vec<usize> {
    let mut passed: Vec<(usize, f64)> = (0..candidates.len())
        .filter(|i| candidates[*i].rejection.is_none())
        .filter(|i| mode.is_none_or(|m| candidates[*i].setting.mode() == m))
        .filter_map(|i| Some((i, candidates[i].median()?)))
        .collect();
    passed.sort_by(|a, b| b.1.total_cmp(&a.1));
    passed.into_iter().take(BEAM).map(|(i, _)| i).collect()
}

/// About how many runs a search takes, before anything is known: a first expansion, the race
/// and the margin checks (for the progress's estimate).
pub(crate) fn rough_runs(bounds: Bounds) -> usize {
    6 + after(bounds)
}

/// What the race and the margin checks take after the screen, about.
fn after(bounds: Bounds) -> usize {
    2 * FIELD + 2 * bounds.margin_runs as usize
}

/// Screens the candidates still in at the budget; whether the time ran out. Each runs at most
/// once; a run that fails rejects its setting, as in the race.
pub(crate) fn screen<T, P>(
    candidates: &mut [Candidate],
    usual: Option<&Setting>,
    trials: &mut Trials<T, P>,
    bounds: Bounds,
    began: Instant,
) -> Result<bool>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    let Some(mut from) = start(candidates, usual) else {
        return Ok(false);
    };
    let mut screen = Screen {
        trials,
        bounds,
        began,
    };
    let mut walked = Vec::new();
    loop {
        walked.push(candidates[from].setting.mode());
        if screen.walk(candidates, from)? {
            return Ok(true);
        }
        // The leaders' twins; while none passed, the smallest setting that ran stands for them.
        let mut pivots = leaders(candidates, None);
        if pivots.is_empty() {
            pivots.extend(smallest_run(candidates, |_| true));
        }
        for pivot in pivots {
            let todo = twins(candidates, &candidates[pivot].setting);
            if screen.run_all(candidates, &todo)? {
                return Ok(true);
            }
        }
        match roomier(candidates, &walked) {
            Some(next) => from = next,
            None => return Ok(false),
        }
    }
}

/// Where to walk next: a mode not yet walked that fits a setting whose twins in every walked
/// mode do not fit (forkserver and spawn move the Dataset's tensors into /dev/shm, so fork may
/// fit more workers), from its fastest setting that passed, else from its setting with the
/// most workers and prefetch. None: every mode's room was walked, or the twins of the walked
/// leaders cover it.
fn roomier(candidates: &[Candidate], walked: &[Mode]) -> Option<usize> {
    let fits = |c: &Candidate| {
        !matches!(
            c.rejection,
            Some(Rejection::WontFit { .. } | Rejection::WontFitMemory { .. })
        )
    };
    let twin_fits = |c: &Candidate, mode: Mode| {
        candidates
            .iter()
            .any(|t| t.setting.mode() == mode && t.setting.twinned(&c.setting) && fits(t))
    };
    let mode = (candidates.iter())
        .filter(|c| !walked.contains(&c.setting.mode()) && fits(c))
        .find(|c| !walked.iter().any(|m| twin_fits(c, *m)))?
        .setting
        .mode();
    let in_mode = |i: &usize| candidates[*i].setting.mode() == mode;
    let best = leaders(candidates, Some(mode)).first().copied();
    best.or_else(|| {
        (0..candidates.len())
            .filter(|i| in_mode(i) && candidates[*i].rejection.is_none())
            .max_by_key(|i| {
                (
                    candidates[*i].setting.workers,
                    candidates[*i].setting.prefetch,
                )
            })
    })
}

/// The setting that ran (and satisfies `keep`) with the least need.
fn smallest_run(candidates: &[Candidate], keep: impl Fn(&usize) -> bool) -> Option<usize> {
    (0..candidates.len())
        .filter(|i| !candidates[*i].runs.is_empty() && keep(i))
        .min_by_key(|i| candidates[*i].needs_bytes)
}

/// The trials and when the time runs out.
struct Screen<'t, 'b, T, P> {
    trials: &'t mut Trials<'b, T, P>,
    bounds: Bounds,
    began: Instant,
}

impl<T, P> Screen<'_, '_, T, P>
where
    T: FnMut(&CellConfig, u64) -> Result<Run>,
    P: FnMut(&Progress),
{
    /// Runs each of `todo` once at the budget; whether the time ran out first.
    fn run_all(&mut self, candidates: &mut [Candidate], todo: &[usize]) -> Result<bool> {
        let after = after(self.bounds);
        for (n, &i) in todo.iter().enumerate() {
            if self.bounds.out_of_time(self.began) {
                return Ok(true);
            }
            let left = todo.len() - n + after;
            self.trials
                .run(&mut candidates[i], self.bounds.shm_bytes, left)?;
        }
        Ok(false)
    }

    /// The walk in `from`'s mode: `from` run, then the fastest setting not yet expanded
    /// among the [`BEAM`] fastest has its neighbours run, until the beam's are all expanded;
    /// while none has passed, the smallest setting that ran is expanded instead (a failure says
    /// to look smaller). Whether the time ran out.
    fn walk(&mut self, candidates: &mut [Candidate], from: usize) -> Result<bool> {
        let mode = candidates[from].setting.mode();
        if candidates[from].runs.is_empty() && self.run_all(candidates, &[from])? {
            return Ok(true);
        }
        let mut expanded: Vec<usize> = Vec::new();
        loop {
            let unexpanded = |i: &usize| !expanded.contains(i);
            let leaders = leaders(candidates, Some(mode));
            let next = match leaders.is_empty() {
                false => leaders.into_iter().find(unexpanded),
                true => smallest_run(candidates, |i| {
                    unexpanded(i) && candidates[*i].setting.mode() == mode
                }),
            };
            let Some(pivot) = next else {
                return Ok(false);
            };
            expanded.push(pivot);
            let todo = neighbours(candidates, &candidates[pivot].setting);
            if self.run_all(candidates, &todo)? {
                return Ok(true);
            }
        }
    }
}

/// After a screen: the screened settings still in within [`CLOSE`] of the best, at most
/// [`FIELD`] of them and at least two (one lucky run must not leave a race of one), stay in
/// for the race; the other screened ones are rejected as such, and the
/// settings the screen never ran as unexplored.
pub(crate) fn field(candidates: &mut [Candidate]) {
    let mut screened: Vec<(usize, f64)> = (0..candidates.len())
        .filter(|i| candidates[*i].rejection.is_none())
        .filter_map(|i| Some((i, candidates[i].median()?)))
        .collect();
    screened.sort_by(|a, b| b.1.total_cmp(&a.1));
    let best_img_per_s = screened.first().map_or(0.0, |s| s.1);
    for (rank, &(i, img_per_s)) in screened.iter().enumerate() {
        if rank >= FIELD || (rank >= 2 && img_per_s < best_img_per_s * (1.0 - CLOSE)) {
            candidates[i].rejection = Some(Rejection::Screened {
                img_per_s,
                best_img_per_s,
            });
        }
    }
    for c in candidates.iter_mut() {
        if c.rejection.is_none() && c.runs.is_empty() {
            c.rejection = Some(Rejection::Unexplored);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{base, bounds, machine};
    use crate::setting::{usual_guess, Space};

    fn candidates(settings: &[Setting]) -> Vec<Candidate> {
        (settings.iter())
            .map(|s| Candidate::new(*s, s.needs(&base()), None))
            .collect()
    }

    #[test]
    fn the_screen_runs_a_few_settings_and_finds_the_best_of_the_grid() {
        // workers 1, 2, 4, 8 x prefetch 1, 2, 4 x pin x fork and forkserver x torch's two
        // strategies: 96 settings.
        let space = Space {
            workers: vec![1, 2, 4, 8],
            ..Space::for_cpus(2)
        };
        let settings = space.settings();
        let mut all = candidates(&settings);
        let usual = usual_guess(2, &base());
        let b = bounds(1 << 30);
        let loader = base();
        let mut trials = Trials::new(&loader, machine(1.0, None), |_: &Progress| {});
        let spent = screen(&mut all, Some(&usual), &mut trials, b, Instant::now()).unwrap();
        assert!(!spent);
        let ran = all.iter().filter(|c| !c.runs.is_empty()).count();
        // Each expansion: 3 other worker counts, 2 prefetches, pin, less what ran; then the two
        // leaders' twins in the other start method and the other strategy.
        assert!(ran <= 18, "{ran} of {} ran", settings.len());
        // The fake's best: 2+ workers, prefetch 4, no pinning.
        let top = &all[leaders(&all, None)[0]].setting;
        assert!(
            top.workers >= 2 && top.prefetch == 4 && !top.pin_memory,
            "{top:?}"
        );
        assert_eq!(all[start(&all, Some(&usual)).unwrap()].setting, usual);
        field(&mut all);
        let raced = all.iter().filter(|c| c.rejection.is_none()).count();
        assert!((1..=FIELD).contains(&raced), "{raced}");
        assert!(all.iter().all(|c| c.rejection.is_none()
            || matches!(
                c.rejection,
                Some(Rejection::Screened { .. } | Rejection::Unexplored)
            )));
        assert!((all.iter()).any(|c| c.rejection == Some(Rejection::Unexplored)));
    }

    #[test]
    fn a_usual_guess_that_cannot_fit_starts_the_screen_at_its_nearest_that_can() {
        let settings = Space::for_cpus(2).settings();
        let mut all = candidates(&settings);
        // Only one worker fits.
        for c in all.iter_mut().filter(|c| c.setting.workers > 1) {
            c.rejection = Some(Rejection::WontFit {
                needs_bytes: 1,
                room_bytes: 0,
            });
        }
        let usual = usual_guess(2, &base());
        let s = all[start(&all, Some(&usual)).unwrap()].setting;
        assert_eq!((s.workers, s.prefetch, s.pin_memory), (1, 2, false));
        // A setting that fails in the screen is rejected, never a pivot.
        let loader = base();
        let mut trials = Trials::new(&loader, machine(1.0, None), |_: &Progress| {});
        screen(
            &mut all,
            Some(&usual),
            &mut trials,
            bounds(1),
            Instant::now(),
        )
        .unwrap();
        assert!(all.iter().all(|c| c.runs.len() <= 1));
        assert!((all.iter())
            .filter(|c| !c.runs.is_empty())
            .all(|c| matches!(c.rejection, Some(Rejection::Failed { .. }))));
        assert!(leaders(&all, None).is_empty());
    }
}
