//! What tune chooses among: a loader's DataLoader settings ([`Setting`]), the grid of them it
//! searches ([`Space`]), and what the model says each needs of /dev/shm when training stalls.

use serde::Serialize;

use model::config::CellConfig;
use model::knobs::StartMethod;
use plan::predict;

/// The DataLoader arguments tune picks; everything else about the loader is the user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub workers: u32,
    pub prefetch: u32,
    pub pin_memory: bool,
    pub start_method: StartMethod,
}

impl Setting {
    /// The loader `base` with this setting.
    pub fn apply(&self, base: &CellConfig) -> CellConfig {
        let mut config = base.clone();
        config.knobs.workers = self.workers;
        config.knobs.prefetch = self.prefetch;
        config.knobs.pin_memory = self.pin_memory;
        config.knobs.start_method = self.start_method;
        config.cell = self.name();
        config
    }

    /// A short name, for a trial's cell and the words: `w4-p2-pin-forkserver`.
    pub fn name(&self) -> String {
        format!(
            "w{}-p{}{}-{}",
            self.workers,
            self.prefetch,
            if self.pin_memory { "-pin" } else { "" },
            self.start_method
        )
    }

    /// /dev/shm the loader needs with this setting when training stalls (a checkpoint, an
    /// evaluation), as the doctor's model says: every worker's prefetch full, and the
    /// Dataset's tensors where the start method pickles them; however short the trials are.
    pub fn needs(&self, base: &CellConfig) -> u64 {
        predict::stalled_bytes(&self.apply(base))
    }
}

/// The grid searched: every combination of these values.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Space {
    pub workers: Vec<u32>,
    pub prefetch: Vec<u32>,
    pub pin_memory: Vec<bool>,
    pub start_methods: Vec<StartMethod>,
}

impl Space {
    /// The usual grid for `cpus` cores: workers 1, 2, 4, ... up to twice the cores (at most
    /// 32: past it the workers only wait), prefetch 1, 2, 4, pin_memory off and on, fork and
    /// forkserver (Python 3.14's default).
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
        }
    }

    /// Every setting of the grid once (a value given twice is one), workers slowest-varying.
    pub fn settings(&self) -> Vec<Setting> {
        let mut all: Vec<Setting> = Vec::new();
        for &workers in &self.workers {
            for &prefetch in &self.prefetch {
                for &pin_memory in &self.pin_memory {
                    for &start_method in &self.start_methods {
                        let setting = Setting {
                            workers,
                            prefetch,
                            pin_memory,
                            start_method,
                        };
                        if !all.contains(&setting) {
                            all.push(setting);
                        }
                    }
                }
            }
        }
        all
    }
}

/// The usual guess users make (`num_workers` = the cores, the default prefetch, no pinning,
/// the start method given), against which a pick is measured.
pub fn usual_guess(cpus: u32, start_method: StartMethod) -> Setting {
    Setting {
        workers: cpus.max(1),
        prefetch: 2,
        pin_memory: false,
        start_method,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_doubles_workers_up_to_twice_the_cores() {
        let space = Space::for_cpus(2);
        assert_eq!(space.workers, [1, 2, 4]);
        assert_eq!(space.settings().len(), 3 * 3 * 2 * 2);
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
    }
}
