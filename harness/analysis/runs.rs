//! A cell's runs as the analysis keeps them: a few numbers per run, never the row, so that a
//! fleet's year of results (a million rows) is summarised in memory that grows with its cells.
//! The rule for a cell's outcome over its runs lives here, once.

use std::collections::BTreeMap;

use serde::Serialize;

use model::estimate::median;
use model::record::Status;
use model::vm::Accel;
use results::Row;

/// An outcome: `pass`, or a crash kind at a step.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Outcome {
    pub status: Status,
    pub crash_step: Option<u64>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.crash_step {
            Some(step) if !self.status.is_pass() => write!(f, "{} at step {step}", self.status),
            _ => write!(f, "{}", self.status),
        }
    }
}

/// What a summary needs of one run, packed in 64 bytes (a fleet's year is a million runs held
/// at once, where `Option`s took 112): an absent measure is NaN (a row's measures never are:
/// the reader refuses one); whether there is a crash step is a flag of its own (every u64 is
/// a step a row may say: a sentinel let a hostile file hide its crashes).
#[derive(Clone, Debug)]
struct RunFacts {
    repeat: u32,
    status: Status,
    /// Under software emulation (a TCG VM): its speed is the emulator's.
    emulated: bool,
    has_crash_step: bool,
    crash_step: u64,
    img_per_s: f64,
    cpu_ms_per_img: f64,
    instructions_per_img: f64,
    peak_shm_bytes: u64,
    /// Why it ended as it did (`explain`'s cause), when the row says.
    cause: Option<Box<str>>,
}

impl RunFacts {
    fn of(r: &Row) -> RunFacts {
        RunFacts {
            repeat: r.repeat,
            status: r.status,
            emulated: r.vm_accel == Some(Accel::Tcg),
            has_crash_step: r.crash_step.is_some(),
            crash_step: r.crash_step.unwrap_or(0),
            img_per_s: r.img_per_s.unwrap_or(f64::NAN),
            cpu_ms_per_img: r.cpu_ms_per_img.unwrap_or(f64::NAN),
            instructions_per_img: r.instructions_per_img.unwrap_or(f64::NAN),
            peak_shm_bytes: r.peak_shm_bytes,
            cause: r.cause.as_deref().map(Box::from),
        }
    }

    fn outcome(&self) -> Outcome {
        Outcome {
            status: self.status,
            crash_step: self.has_crash_step.then_some(self.crash_step),
        }
    }
}

/// A packed measure as an option.
fn measured(x: f64) -> Option<f64> {
    (!x.is_nan()).then_some(x)
}

/// The runs of one cell, in the order they were added until [`Runs::sorted`].
#[derive(Clone, Debug, Default)]
pub struct Runs {
    facts: Vec<RunFacts>,
}

impl Runs {
    pub fn add(&mut self, r: &Row) {
        self.facts.push(RunFacts::of(r));
    }

    /// In repeat order (stable: runs of several files keep their file order within a repeat).
    pub fn sorted(mut self) -> Runs {
        self.facts.sort_by_key(|f| f.repeat);
        self
    }

    pub fn len(&self) -> usize {
        self.facts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    pub fn outcomes(&self) -> Vec<Outcome> {
        self.facts.iter().map(RunFacts::outcome).collect()
    }

    /// The most common outcome (ties: the worst, so a flaky crash is never hidden).
    pub fn outcome(&self) -> Outcome {
        let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
        for f in &self.facts {
            *counts.entry(f.outcome()).or_default() += 1;
        }
        let most = counts.values().copied().max().unwrap_or(0);
        counts
            .into_iter()
            .filter(|(_, n)| *n == most)
            .map(|(o, _)| o)
            .min_by_key(|o| (o.status.is_pass(), o.crash_step))
            .unwrap_or(Outcome {
                status: Status::Error,
                crash_step: None,
            })
    }

    /// The most common cause among the runs of the most common outcome (ties: the first in
    /// name order); None when none of them says.
    pub fn cause(&self) -> Option<String> {
        let outcome = self.outcome();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for f in self.facts.iter().filter(|f| f.outcome() == outcome) {
            if let Some(c) = &f.cause {
                *counts.entry(c).or_default() += 1;
            }
        }
        let most = counts.values().copied().max()?;
        counts
            .into_iter()
            .find(|(_, n)| *n == most)
            .map(|(c, _)| c.to_string())
    }

    fn passing(&self) -> impl Iterator<Item = &RunFacts> {
        self.facts.iter().filter(|f| f.status.is_pass())
    }

    /// img/s of the passing runs with their repeat numbers (crashed runs never enter throughput
    /// statistics).
    pub fn rates(&self) -> Vec<(u32, f64)> {
        self.passing()
            .filter_map(|f| measured(f.img_per_s).map(|x| (f.repeat, x)))
            .collect()
    }

    /// CPU milliseconds per image of the passing runs that measured it.
    pub fn cpu(&self) -> Vec<f64> {
        self.passing()
            .filter_map(|f| measured(f.cpu_ms_per_img))
            .collect()
    }

    /// Instructions per image of the passing runs that counted them.
    pub fn instructions(&self) -> Vec<f64> {
        self.passing()
            .filter_map(|f| measured(f.instructions_per_img))
            .collect()
    }

    /// Peak /dev/shm use of the passing runs (a crashed run's peak is cut short by its crash).
    pub fn passing_peaks(&self) -> Vec<f64> {
        self.passing().map(|f| f.peak_shm_bytes as f64).collect()
    }

    /// The median peak /dev/shm use over every run, crashed ones included.
    pub fn peak_shm_median(&self) -> Option<f64> {
        let peaks: Vec<f64> = self.facts.iter().map(|f| f.peak_shm_bytes as f64).collect();
        median(&peaks)
    }

    /// Earliest and latest crash step over the crashed runs.
    pub fn crash_steps(&self) -> Option<(u64, u64)> {
        let steps = self.facts.iter().filter_map(|f| f.outcome().crash_step);
        steps.clone().min().zip(steps.max())
    }

    pub fn emulated(&self) -> bool {
        self.facts.iter().any(|f| f.emulated)
    }
}

/// The runs of many groups (a history's points: one cell in one run each) kept together, each
/// run with its group: a map entry and an allocation per point were most of a fleet's year's
/// memory (600 MB for a million points).
#[derive(Clone, Debug, Default)]
pub struct GroupedRuns {
    facts: Vec<(u32, RunFacts)>,
}

impl GroupedRuns {
    pub fn add(&mut self, group: u32, r: &Row) {
        self.facts.push((group, RunFacts::of(r)));
    }

    /// Each group with its runs (in the order they were added), in group order.
    pub fn into_groups(mut self) -> impl Iterator<Item = (u32, Runs)> {
        self.facts.sort_by_key(|(group, _)| *group);
        let mut facts = self.facts.into_iter().peekable();
        std::iter::from_fn(move || {
            let (group, first) = facts.next()?;
            let mut runs = Runs { facts: vec![first] };
            while let Some((_, f)) = facts.next_if(|(g, _)| *g == group) {
                runs.facts.push(f);
            }
            Some((group, runs))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(repeat: u32, status: Status, crash_step: Option<u64>, img_per_s: Option<f64>) -> Row {
        Row {
            repeat,
            status,
            crash_step,
            img_per_s,
            ..Row::default()
        }
    }

    #[test]
    fn a_run_s_facts_are_packed_in_64_bytes_and_keep_every_crash_step() {
        assert_eq!(std::mem::size_of::<RunFacts>(), 64);
        // The largest step a row can say is a step, not "none" (a hostile file hid crashes so).
        let mut runs = Runs::default();
        runs.add(&run(1, Status::Sigbus, Some(u64::MAX), None));
        runs.add(&run(2, Status::Sigbus, Some(0), None));
        assert_eq!(runs.crash_steps(), Some((0, u64::MAX)));
    }

    #[test]
    fn the_outcome_is_the_most_common_and_a_tie_is_the_worst() {
        let mut runs = Runs::default();
        runs.add(&run(1, Status::Pass, None, Some(100.0)));
        runs.add(&run(2, Status::Sigbus, Some(7), None));
        // One pass, one crash: the crash, so a flaky crash is never hidden.
        assert_eq!(runs.outcome().status, Status::Sigbus);
        runs.add(&run(3, Status::Pass, None, Some(110.0)));
        assert_eq!(runs.outcome().status, Status::Pass);
        assert_eq!(Runs::default().outcome().status, Status::Error);
    }

    #[test]
    fn only_passing_runs_have_rates_in_repeat_order() {
        let mut runs = Runs::default();
        runs.add(&run(3, Status::Pass, None, Some(90.0)));
        runs.add(&run(1, Status::Pass, None, Some(100.0)));
        runs.add(&run(2, Status::Enospc, Some(4), Some(5.0)));
        let runs = runs.sorted();
        assert_eq!(runs.rates(), vec![(1, 100.0), (3, 90.0)]);
        assert_eq!(runs.crash_steps(), Some((4, 4)));
        assert_eq!(runs.len(), 3);
    }
}
