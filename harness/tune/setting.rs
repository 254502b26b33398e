//! What tune chooses among: a loader's DataLoader settings ([`Setting`]), the grid of them it
//! searches ([`Space`]), and what the model says each needs of /dev/shm when training stalls.
//! A setting's knobs are of two kinds: how many batches are in flight and where they wait
//! (workers, prefetch, pinning: what the screen walks one at a time), and its [`Mode`], how the
//! workers start and share (start method, sharing strategy, persistent workers: what changes
//! what is pickled, how a batch crosses, and what an epoch's end costs).

use serde::Serialize;

use model::config::CellConfig;
use model::knobs::{StartMethod, Strategy};
use plan::predict;

/// The DataLoader arguments tune picks (and the process's sharing strategy); everything else
/// about the loader is the user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub workers: u32,
    pub prefetch: u32,
    pub pin_memory: bool,
    pub start_method: StartMethod,
    /// `torch.multiprocessing.set_sharing_strategy`: torch's two put batches in /dev/shm alike.
    pub strategy: Strategy,
    pub persistent_workers: bool,
}

/// How a setting's workers start and share: the knobs that are not walked one at a time.
pub type Mode = (StartMethod, Strategy, bool);

impl Setting {
    /// The loader `base` with this setting.
    pub fn apply(&self, base: &CellConfig) -> CellConfig {
        let mut config = base.clone();
        config.knobs.workers = self.workers;
        config.knobs.prefetch = self.prefetch;
        config.knobs.pin_memory = self.pin_memory;
        config.knobs.start_method = self.start_method;
        config.knobs.strategy = self.strategy;
        config.knobs.persistent_workers = self.persistent_workers;
        config.cell = self.name();
        config
    }

    /// A short name, for a trial's cell and the words: `w4-p2-pin-forkserver`, with
    /// `-file_system` or `-respawn` (persistent_workers off) where they are not torch's usual.
    pub fn name(&self) -> String {
        format!(
            "w{}-p{}{}-{}{}{}",
            self.workers,
            self.prefetch,
            if self.pin_memory { "-pin" } else { "" },
            self.start_method,
            match self.strategy {
                Strategy::FileDescriptor => String::new(),
                other => format!("-{other}"),
            },
            if self.persistent_workers {
                ""
            } else {
                "-respawn"
            }
        )
    }

    /// How its workers start and share.
    pub fn mode(&self) -> Mode {
        (self.start_method, self.strategy, self.persistent_workers)
    }

    /// Whether this is `other` under file_system, `other` being the same under
    /// file_descriptor (the twins the tie rule orders).
    pub fn named_twin_of(&self, other: &Setting) -> bool {
        self.strategy == Strategy::FileSystem
            && *other
                == Setting {
                    strategy: Strategy::FileDescriptor,
                    ..*self
                }
    }

    /// Whether `other` is the same but for its mode (or the same setting).
    pub fn twinned(&self, other: &Setting) -> bool {
        (self.workers, self.prefetch, self.pin_memory)
            == (other.workers, other.prefetch, other.pin_memory)
    }

    /// /dev/shm the loader needs with this setting when training stalls (a checkpoint, an
    /// evaluation), as the doctor's model says: every worker's prefetch full, and the
    /// Dataset's tensors where the start method pickles them; however short the trials are.
    pub fn needs(&self, base: &CellConfig) -> u64 {
        predict::stalled_bytes(&self.apply(base))
    }

    /// Memory the loader needs at least with this setting when training stalls: its /dev/shm
    /// (charged to the memory cgroup) and the batches it pins; the processes' own come on top.
    pub fn needs_memory(&self, base: &CellConfig) -> u64 {
        predict::stalled_memory_bytes(&self.apply(base))
    }
}

/// The grid searched: every combination of these values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Space {
    pub workers: Vec<u32>,
    pub prefetch: Vec<u32>,
    pub pin_memory: Vec<bool>,
    pub start_methods: Vec<StartMethod>,
    pub strategies: Vec<Strategy>,
    pub persistent_workers: Vec<bool>,
}

impl Space {
    /// The usual grid for `cpus` cores: workers 1, 2, 4, ... up to twice the cores (at most
    /// 32: past it the workers only wait), prefetch 1, 2, 4, pin_memory off and on, fork and
    /// forkserver (Python 3.14's default), torch's two sharing strategies, persistent workers.
    pub fn for_cpus(cpus: u32) -> Space {
        let most = (2 * cpus.max(1)).min(32);
        let workers = std::iter::successors(Some(1u32), |w| Some(w * 2))
            .take_while(|w| *w <= most)
            .collect();
        Space {
            workers,
            prefetch: vec![1, 2, 4],
            pin_memory: vec![false, true],
            start_methods: vec![StartMethod::Fork, StartMethod::Forkserver],
            strategies: vec![Strategy::FileDescriptor, Strategy::FileSystem],
            persistent_workers: vec![true],
        }
    }

    /// Every setting of the grid once (a value given twice is one), workers slowest-varying.
    pub fn settings(&self) -> Vec<Setting> {
        let mut all: Vec<Setting> = Vec::new();
        for &workers in &self.workers {
            for &prefetch in &self.prefetch {
                for &pin_memory in &self.pin_memory {
                    for &start_method in &self.start_methods {
                        for &strategy in &self.strategies {
                            for &persistent_workers in &self.persistent_workers {
                                let setting = Setting {
                                    workers,
                                    prefetch,
                                    pin_memory,
                                    start_method,
                                    strategy,
                                    persistent_workers,
                                };
                                if !all.contains(&setting) {
                                    all.push(setting);
                                }
                            }
                        }
                    }
                }
            }
        }
        all
    }
}

/// The usual guess users make (`num_workers` = the cores, the default prefetch, no pinning,
/// the loader's start method, strategy and persistent workers), against which a pick is
/// measured.
pub fn usual_guess(cpus: u32, loader: &CellConfig) -> Setting {
    Setting {
        workers: cpus.max(1),
        prefetch: 2,
        pin_memory: false,
        start_method: loader.knobs.start_method,
        strategy: loader.knobs.strategy,
        persistent_workers: loader.knobs.persistent_workers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_doubles_workers_up_to_twice_the_cores() {
        let space = Space::for_cpus(2);
        assert_eq!(space.workers, [1, 2, 4]);
        assert_eq!(space.settings().len(), 3 * 3 * 2 * 2 * 2);
        assert_eq!(Space::for_cpus(64).workers.last(), Some(&32));
    }

    #[test]
    fn a_short_trial_does_not_shrink_what_a_stall_needs() {
        let mut base = CellConfig::with_defaults("tune");
        base.knobs.batch = 8;
        let setting = Setting {
            workers: 4,
            prefetch: 4,
            pin_memory: false,
            start_method: StartMethod::Fork,
            strategy: Strategy::FileDescriptor,
            persistent_workers: true,
        };
        base.knobs.steps = 6;
        let short = setting.needs(&base);
        base.knobs.steps = 600;
        assert_eq!(short, setting.needs(&base));
        // 16 outstanding, the one the loop holds and the next one returned.
        assert_eq!(short, 18 * predict::batches_bytes(&setting.apply(&base), 1));
    }

    #[test]
    fn more_prefetch_or_a_pickled_dataset_needs_more() {
        let mut base = CellConfig::with_defaults("tune");
        base.knobs.batch = 8;
        base.knobs.dataset_bytes = 64 << 20;
        let setting = Setting {
            workers: 2,
            prefetch: 1,
            pin_memory: false,
            start_method: StartMethod::Fork,
            strategy: Strategy::FileDescriptor,
            persistent_workers: true,
        };
        let deeper = Setting {
            prefetch: 4,
            ..setting
        };
        let pickled = Setting {
            start_method: StartMethod::Forkserver,
            ..setting
        };
        assert!(deeper.needs(&base) > setting.needs(&base));
        assert_eq!(pickled.needs(&base), setting.needs(&base) + (64 << 20));
        assert_eq!(setting.apply(&base).cell, "w2-p1-fork");
        let shared = Setting {
            strategy: Strategy::FileSystem,
            persistent_workers: false,
            ..setting
        };
        // torch's two strategies hold batches in /dev/shm alike.
        assert_eq!(shared.needs(&base), setting.needs(&base));
        assert_eq!(shared.name(), "w2-p1-fork-file_system-respawn");
        assert!(shared.twinned(&setting) && shared.mode() != setting.mode());
    }
}
