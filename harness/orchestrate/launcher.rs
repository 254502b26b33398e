//! The seam between the orchestration's logic (repeat, interleave, stop early, bisect, a row
//! written after every cell) and the machine, youki's `Syscall` idea: a [`Launcher`] runs one cell
//! to its record and says whether the user stopped the run. The real one is the runtimes with the
//! process's signals; tests pass a scripted fake (`fake::Script`), so that logic is tested in
//! `cargo xtask fast` without root, an engine or a VM.

use model::config::CellConfig;
use model::fingerprint::EngineInfo;
use model::record::CellRecord;
use runtime::{CellMessage, Runtimes};

/// Runs cells: the runtimes, or a fake.
pub trait Launcher {
    /// Runs one cell to its record, relaying its progress and output.
    fn launch(&self, config: &CellConfig, relay: &mut dyn FnMut(CellMessage)) -> CellRecord;
    /// The container engine and OCI runtime a cell runs under, for its row (None: no container).
    fn engine(&self, config: &CellConfig) -> Option<EngineInfo>;
    /// The signal that asked the run to stop (Ctrl-C, SIGTERM), if one came.
    fn interrupted(&self) -> Option<i32>;
}

impl Launcher for Runtimes {
    fn launch(&self, config: &CellConfig, relay: &mut dyn FnMut(CellMessage)) -> CellRecord {
        Runtimes::launch(self, config, relay)
    }

    fn engine(&self, config: &CellConfig) -> Option<EngineInfo> {
        self.container_for(config).map(|d| d.engine().info.clone())
    }

    fn interrupted(&self) -> Option<i32> {
        sys::signals::received()
    }
}

/// A scripted launcher for the orchestration's tests: each cell's record comes from a closure of
/// the config and the launch's index; every launch is noted; an interrupt can be scripted.
#[cfg(test)]
pub mod fake {
    use std::cell::{Cell, RefCell};
    use std::path::PathBuf;

    use model::config::CellConfig;
    use model::fingerprint::EngineInfo;
    use model::record::{CellRecord, Failure, Metrics, Status};
    use runtime::{CellMessage, Output, Progress, Stream};

    type Outcome = dyn Fn(&CellConfig, usize) -> CellRecord;

    pub struct Script {
        outcome: Box<Outcome>,
        /// Each launch: the cell's name and its shm-size.
        pub launched: RefCell<Vec<(String, Option<u64>)>>,
        /// Rows the results file held at each launch (when `watching` names it).
        pub rows_seen: RefCell<Vec<usize>>,
        pub watching: Option<PathBuf>,
        /// The run is interrupted once this many cells were launched.
        pub interrupt_after: Option<usize>,
        interrupted: Cell<bool>,
        /// What every cell prints, relayed as a watched command's output.
        said: Option<&'static str>,
    }

    impl Script {
        pub fn new(outcome: impl Fn(&CellConfig, usize) -> CellRecord + 'static) -> Script {
            Script {
                outcome: Box::new(outcome),
                launched: RefCell::new(Vec::new()),
                rows_seen: RefCell::new(Vec::new()),
                watching: None,
                interrupt_after: None,
                interrupted: Cell::new(false),
                said: None,
            }
        }

        /// The same, each cell relaying `said` as its command's output.
        pub fn relaying(self, said: &'static str) -> Script {
            Script {
                said: Some(said),
                ..self
            }
        }

        /// The cells launched, by name, in order.
        pub fn names(&self) -> Vec<String> {
            self.launched
                .borrow()
                .iter()
                .map(|(n, _)| n.clone())
                .collect()
        }
    }

    impl super::Launcher for Script {
        fn launch(&self, config: &CellConfig, relay: &mut dyn FnMut(CellMessage)) -> CellRecord {
            if let Some(path) = &self.watching {
                let rows = std::fs::read_to_string(path)
                    .map(|t| t.lines().count().saturating_sub(1))
                    .unwrap_or(0);
                self.rows_seen.borrow_mut().push(rows);
            }
            let n = self.launched.borrow().len();
            let shm = config.knobs.shm_size.map(|s| s.bytes());
            self.launched.borrow_mut().push((config.cell.clone(), shm));
            relay(CellMessage::Progress(Progress {
                step: 1,
                total: config.knobs.steps,
            }));
            if let Some(said) = self.said {
                relay(CellMessage::Output(Output {
                    stream: Stream::Stdout,
                    bytes: said.as_bytes().to_vec(),
                }));
            }
            if self.interrupt_after == Some(n + 1) {
                self.interrupted.set(true);
            }
            (self.outcome)(config, n)
        }

        fn engine(&self, _: &CellConfig) -> Option<EngineInfo> {
            None
        }

        fn interrupted(&self) -> Option<i32> {
            self.interrupted.get().then_some(libc::SIGINT)
        }
    }

    /// A cell of the default knobs named `name`.
    pub fn cell(name: &str) -> CellConfig {
        CellConfig::with_defaults(name)
    }

    /// A passing record of `config` at `img_per_s`.
    pub fn pass(config: &CellConfig, img_per_s: f64) -> CellRecord {
        let mut record = CellRecord::failed_to_run(config.clone(), Status::Pass, String::new());
        record.metrics = Metrics {
            steps_done: config.knobs.steps,
            img_per_s: Some(img_per_s),
            ..Metrics::default()
        };
        record
    }

    /// A record of `config` that crashed with `status` at `step`.
    pub fn crash(config: &CellConfig, status: Status, step: u64) -> CellRecord {
        let mut record = CellRecord::failed_to_run(config.clone(), status, "crashed".into());
        record.failure = Some(Failure {
            crash_step: step,
            ..Failure::default()
        });
        record
    }
}
