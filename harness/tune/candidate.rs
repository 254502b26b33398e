//! What a search knows of one setting, shared by the search, its screen and the grid: the budget
//! searched under ([`Bounds`]), each run ([`Run`]), why a setting was not picked
//! ([`Rejection`]), and the setting with its runs ([`Candidate`]).

use std::time::Duration;

use serde::Serialize;

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
    /// The memory the loader will have (its tmpfs pages count against it), where known: the
    /// model leaves out what cannot fit in the margin of it either.
    pub memory_bytes: Option<u64>,
}

impl Bounds {
    /// The smaller /dev/shm the pick must also pass in, in whole pages.
    pub fn margin_bytes(&self) -> u64 {
        self.margin_of(self.shm_bytes)
    }

    /// The smaller memory the pick must also fit in.
    pub fn margin_memory_bytes(&self) -> Option<u64> {
        self.memory_bytes.map(|m| self.margin_of(m))
    }

    /// The margin's share of `bytes`, in whole pages.
    fn margin_of(&self, bytes: u64) -> u64 {
        ((bytes as f64 * self.margin) as u64) / 4096 * 4096
    }

    /// Why the model leaves out a setting that needs `needs_bytes` of /dev/shm and at least
    /// `needs_memory_bytes` of memory when training stalls; None where both fit in the margin.
    pub fn wont_fit(&self, needs_bytes: u64, needs_memory_bytes: u64) -> Option<Rejection> {
        let room_bytes = self.margin_bytes();
        if needs_bytes > room_bytes {
            return Some(Rejection::WontFit {
                needs_bytes,
                room_bytes,
            });
        }
        let room_bytes = self.margin_memory_bytes()?;
        (needs_memory_bytes > room_bytes).then_some(Rejection::WontFitMemory {
            needs_bytes: needs_memory_bytes,
            room_bytes,
        })
    }

    /// Whether `max_time` has passed since `began`.
    pub fn out_of_time(&self, began: std::time::Instant) -> bool {
        self.max_time.is_some_and(|t| began.elapsed() >= t)
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
    /// Its memory limit (`--memory`, or its margin), where it had one of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

/// Why a setting was not picked.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// The model says it needs more than the margin leaves when training stalls (every
    /// worker's prefetch full).
    WontFit { needs_bytes: u64, room_bytes: u64 },
    /// The model says it needs more memory than the margin of the memory budget leaves when
    /// training stalls: its /dev/shm (tmpfs pages are charged to the memory cgroup of the
    /// process that wrote them) and the batches it pins in private memory, before any
    /// process's own.
    WontFitMemory { needs_bytes: u64, room_bytes: u64 },
    /// A run ended without passing, at the budget or at the margin.
    Failed {
        status: Status,
        crash_step: Option<u64>,
        shm_bytes: u64,
        cause: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        memory_bytes: Option<u64>,
    },
    /// Raced and lost: slower than the leader, surely (the interval of the change of medians
    /// is below 0) or among the slower half when the runs were halved.
    Slower {
        img_per_s: f64,
        leader_img_per_s: f64,
        surely: bool,
    },
    /// Run once by the screen and not raced: slower than the best by more than
    /// [`crate::screen::CLOSE`], or behind [`crate::screen::FIELD`] closer ones.
    Screened { img_per_s: f64, best_img_per_s: f64 },
    /// Not run: the screen, one knob at a time from the best so far, never led to it.
    Unexplored,
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
    /// /dev/shm it needs when training stalls, as the model says.
    pub needs_bytes: u64,
    /// Memory it needs at least when training stalls, as the model says (its /dev/shm and its
    /// pinned batches; the processes' own memory comes on top).
    pub needs_memory_bytes: u64,
    /// Its runs: the screen's at the budget, then the race's and the margin checks' at the
    /// margin.
    pub runs: Vec<Run>,
    /// The median img/s of its passing runs (None: none passed).
    pub img_per_s: Option<f64>,
    /// Why it was not picked (None: the pick, the runner-up, or passed at the margin).
    pub rejection: Option<Rejection>,
    /// Whether it passed every run at the margin (None: not tried there).
    pub margin_passed: Option<bool>,
}

impl Candidate {
    /// A setting of the loader `base` not yet run, with what the model says it needs; rejected
    /// where that does not fit in `bounds`' margin.
    pub(crate) fn modelled(setting: Setting, base: &CellConfig, bounds: &Bounds) -> Self {
        let (needs_bytes, needs_memory_bytes) = (setting.needs(base), setting.needs_memory(base));
        Candidate {
            needs_memory_bytes,
            ..Candidate::new(
                setting,
                needs_bytes,
                bounds.wont_fit(needs_bytes, needs_memory_bytes),
            )
        }
    }

    /// A setting not yet run; `rejection` set where the model leaves it out.
    pub(crate) fn new(setting: Setting, needs_bytes: u64, rejection: Option<Rejection>) -> Self {
        Candidate {
            setting,
            name: setting.name(),
            needs_bytes,
            needs_memory_bytes: 0,
            runs: Vec::new(),
            img_per_s: None,
            rejection,
            margin_passed: None,
        }
    }

    /// Whether every run it had passed (and it had one).
    pub fn passed_every_run(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(|r| r.status.is_pass())
    }

    /// img/s of its passing runs, at the budget and at the margin alike: how fast a run goes
    /// does not depend on the room it did not use.
    pub fn rates(&self) -> Vec<f64> {
        (self.runs.iter())
            .filter(|r| r.status.is_pass())
            .filter_map(|r| r.img_per_s)
            .collect()
    }

    pub fn median(&self) -> Option<f64> {
        self.img_per_s
    }

    /// Its runs in `shm_bytes`.
    pub fn runs_in(&self, shm_bytes: u64) -> usize {
        self.runs
            .iter()
            .filter(|r| r.shm_bytes == shm_bytes)
            .count()
    }

    /// Adds a run, its median kept.
    pub(crate) fn push(&mut self, run: Run) {
        self.runs.push(run);
        self.img_per_s = median(&self.rates());
    }
}
