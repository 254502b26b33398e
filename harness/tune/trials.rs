//! Running trials for a search or a grid: the trial function, what is told of each run
//! ([`Progress`]), and how many ran.

use anyhow::Result;

use model::config::CellConfig;

use super::candidate::{Candidate, Rejection, Run};
use super::setting::Setting;

/// What the search reports as it goes: a run done, the runs done and about how many are left.
pub struct Progress<'a> {
    pub setting: &'a Setting,
    pub run: &'a Run,
    pub done: usize,
    pub left: usize,
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
                memory_bytes: one.memory_bytes,
            });
        }
        c.push(one);
        Ok(passed)
    }
}
