//! Validation of a resolved cell: every value in range and every combination of runtime and
//! isolation knobs meaningful, the first problem named by its key.

use super::config::CellConfig;
use super::dataset_ref;
use super::knobs::{EngineKind, Inject, IpcMode, Loader, RuntimeKind, Strategy};
use super::size::ByteSize;

/// Largest worker count accepted: beyond it a loader is a typo, not a configuration.
pub const MAX_WORKERS: u32 = 512;

/// A knob that failed validation; the scenario layer adds the file and cell.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{key}: {problem}")]
pub struct KnobError {
    pub key: &'static str,
    pub problem: String,
}

fn bad(key: &'static str, problem: impl Into<String>) -> KnobError {
    KnobError {
        key,
        problem: problem.into(),
    }
}

impl CellConfig {
    /// Checks every value; the first problem found is returned, naming its key.
    pub fn validate(&self, mem_total: u64) -> Result<(), KnobError> {
        self.validate_loader(mem_total)?;
        self.validate_timing()?;
        self.validate_limits()?;
        self.validate_torch()?;
        self.validate_watch()?;
        self.validate_runtime()?;
        self.validate_vm()?;
        self.validate_inject()?;
        if let Some(n) = self.knobs.nofile.filter(|n| *n < MIN_NOFILE) {
            return Err(bad(
                "nofile",
                format!("{n} leaves no room for the cell's own files and pipes: use at least {MIN_NOFILE}"),
            ));
        }
        if self.knobs.shm_remount.is_some_and(|s| s.bytes() == 0) {
            return Err(bad(
                "shm-remount",
                "a tmpfs of 0 bytes holds nothing: give a size, e.g. 2g",
            ));
        }
        Ok(())
    }

    /// The loader's own sizes: workers, prefetch, batch and shape (a batch this machine could hold), steps.
    fn validate_loader(&self, mem_total: u64) -> Result<(), KnobError> {
        if self.knobs.workers == 0 {
            return Err(bad("workers", "must be at least 1: with num_workers=0 torch loads in the main process and never uses /dev/shm, so there is nothing to measure"));
        }
        if self.knobs.workers > MAX_WORKERS {
            return Err(bad(
                "workers",
                format!(
                    "{} is absurd: at most {MAX_WORKERS} worker processes",
                    self.knobs.workers
                ),
            ));
        }
        if self.knobs.prefetch == 0 || self.knobs.prefetch > 64 {
            return Err(bad("prefetch", format!("{} is out of range: torch needs prefetch_factor >= 1 with workers; at most 64 here", self.knobs.prefetch)));
        }
        if self.knobs.batch == 0 {
            return Err(bad("batch", "must be at least 1 image"));
        }
        if self.knobs.shape.elements().is_none() || self.batch_bytes() == u64::MAX {
            return Err(bad(
                "shape",
                format!(
                    "{} x {} images overflows 64 bits",
                    self.knobs.batch, self.knobs.shape
                ),
            ));
        }
        if mem_total > 0 && self.batch_bytes() > mem_total {
            return Err(bad("batch", format!(
                "one batch is {} but this machine has {} of memory: no batch of that size can exist here; lower batch or shape",
                ByteSize(self.batch_bytes()), ByteSize(mem_total)
            )));
        }
        if self.knobs.steps == 0 {
            return Err(bad("steps", "must be at least 1"));
        }
        if self.knobs.epochs == 0 {
            return Err(bad("epochs", "must be at least 1"));
        }
        if self.total_steps() > 100_000_000 {
            return Err(bad("steps", "steps x epochs is absurd (over 100 million)"));
        }
        Ok(())
    }

    /// Per-step costs and the watchdog: a step whose own work outlasts timeout-s could never finish.
    fn validate_timing(&self) -> Result<(), KnobError> {
        if !(self.knobs.compute_ms.is_finite()
            && self.knobs.compute_ms >= 0.0
            && self.knobs.compute_ms <= 3_600_000.0)
        {
            return Err(bad(
                "compute-ms",
                format!("{} must be between 0 and 3600000", self.knobs.compute_ms),
            ));
        }
        if self.knobs.decode_us > 60_000_000 {
            return Err(bad("decode-us", "at most 60 s per image"));
        }
        if !(self.knobs.timeout_s.is_finite()
            && self.knobs.timeout_s > 0.0
            && self.knobs.timeout_s <= 86_400.0)
        {
            return Err(bad(
                "timeout-s",
                format!(
                    "{} must be between 0 and 86400 seconds",
                    self.knobs.timeout_s
                ),
            ));
        }
        if self.knobs.main_us > 60_000_000 {
            return Err(bad("main-us", "at most 60 s of main-loop CPU per step"));
        }
        // A cell says it made progress once per step, and the harness ends one that says nothing
        // for longer than its timeout (plus slack): a step whose own work is longer could never
        // finish, and would end minutes later as "no progress" instead of failing here.
        let step_s = self.knobs.compute_ms / 1000.0 + self.knobs.main_us as f64 / 1e6;
        if step_s >= self.knobs.timeout_s {
            let key = match self.knobs.main_us > 0 {
                true => "main-us",
                false => "compute-ms",
            };
            return Err(bad(
                key,
                format!(
                    "each step's own work (compute-ms {} + main-us {}) is {step_s:.1} s, not below timeout-s {}: a step could never finish before the cell is ended for making no progress; raise timeout-s or lower them",
                    self.knobs.compute_ms, self.knobs.main_us, self.knobs.timeout_s
                ),
            ));
        }
        Ok(())
    }

    /// The sizes of /dev/shm and of a memory limit.
    fn validate_limits(&self) -> Result<(), KnobError> {
        if let Some(size) = self.knobs.shm_size {
            if size.bytes() < 4096 {
                return Err(bad(
                    "shm-size",
                    format!("{size} is smaller than one page (4 KiB)"),
                ));
            }
        }
        if let Some(limit) = self.knobs.memory {
            if limit.bytes() < 6 << 20 {
                return Err(bad(
                    "memory",
                    format!("{limit} is below Docker's minimum of 6 MiB"),
                ));
            }
        }
        Ok(())
    }

    /// What a real-torch cell allows.
    fn validate_torch(&self) -> Result<(), KnobError> {
        if self.knobs.loader == Loader::Torch {
            if matches!(self.knobs.strategy, Strategy::Memfd | Strategy::Disk) {
                return Err(bad(
                    "strategy",
                    format!("{} is not a torch sharing strategy: torch cells use file_descriptor or file_system", self.knobs.strategy),
                ));
            }
            if self.knobs.main_us > 0 {
                return Err(bad(
                    "main-us",
                    "models real torch's main-loop cost in the emulated loader; a torch cell has the real one: leave it 0",
                ));
            }
            if self.knobs.python.trim().is_empty() {
                return Err(bad(
                    "python",
                    "name a Python interpreter with torch installed",
                ));
            }
        }
        if let Some(dataset) = &self.knobs.dataset {
            if self.knobs.loader != Loader::Torch {
                return Err(bad(
                    "dataset",
                    "is a real torch Dataset: give --loader torch (and --python with torch) too",
                ));
            }
            let elsewhere = matches!(self.knobs.runtime, RuntimeKind::Docker | RuntimeKind::Vm)
                || self.knobs.image.is_some();
            if elsewhere {
                return Err(bad(
                    "dataset",
                    "is a file of this machine, which a container's or a VM's cell does not see: run it with --runtime namespace (or host)",
                ));
            }
            if let Err(problem) = dataset_ref::check(dataset) {
                return Err(bad("dataset", problem));
            }
        }
        Ok(())
    }

    /// A watched command, and only a watched command, carries a command.
    fn validate_watch(&self) -> Result<(), KnobError> {
        match (&self.watch, self.knobs.loader) {
            (Some(watch), Loader::Command) => {
                if watch.command.first().is_none_or(|c| c.is_empty()) {
                    return Err(bad("command", "name the command to watch after --, e.g. shmbench watch -- python train.py"));
                }
                if watch.interval_ms == 0 || watch.interval_ms > 60_000 {
                    return Err(bad(
                        "interval-ms",
                        format!(
                            "{} is out of range: sample between every 1 ms and every 60000 ms",
                            watch.interval_ms
                        ),
                    ));
                }
                if let Some(Err(e)) = watch.step_regex.as_deref().map(regex::Regex::new) {
                    return Err(bad("step-regex", e.to_string()));
                }
                if self.knobs.runtime == RuntimeKind::Docker && self.knobs.image.is_none() {
                    return Err(bad("image", "a watched command runs in Docker inside your own image, which has it: name it with --image"));
                }
            }
            (None, Loader::Command) => {
                return Err(bad("loader", "command is what `shmbench watch -- CMD` runs; it cannot be set in a scenario or by --loader"));
            }
            (Some(_), _) => {
                return Err(bad(
                    "loader",
                    "only a watched command (loader command) carries a command",
                ));
            }
            (None, _) => {}
        }
        Ok(())
    }

    /// Which isolation knobs each runtime can give.
    fn validate_runtime(&self) -> Result<(), KnobError> {
        let docker_only = |key: &'static str, what: &str| {
            bad(key, format!("{what} is a Docker setting: use runtime docker (or auto with container docker)"))
        };
        if let Some(image) = &self.knobs.image {
            if image.trim().is_empty() || image.chars().any(char::is_whitespace) {
                return Err(bad(
                    "image",
                    format!("'{image}' is not an image reference: write a name like my-train:latest or an image id"),
                ));
            }
            if matches!(
                self.knobs.runtime,
                RuntimeKind::Host | RuntimeKind::Namespace
            ) {
                return Err(docker_only("image", "an image"));
            }
        }
        // An engine and its OCI runtime are what a container runs under: no other runtime has them.
        if self.knobs.runtime != RuntimeKind::Docker {
            if self.knobs.engine != EngineKind::Docker {
                return Err(docker_only("engine", "a container engine"));
            }
            if let Some(name) = self.knobs.oci_runtime.named() {
                return Err(docker_only(
                    "oci-runtime",
                    &format!("an OCI runtime ({name})"),
                ));
            }
        }
        match self.knobs.runtime {
            RuntimeKind::Host if self.knobs.memory.is_some() => {
                return Err(bad(
                    "memory",
                    "a memory limit needs runtime namespace (a cgroup around the cell) or docker",
                ));
            }
            RuntimeKind::Host | RuntimeKind::Namespace if self.knobs.shm_tmpfs => {
                return Err(docker_only("shm-tmpfs", "a tmpfs mount on /dev/shm"));
            }
            RuntimeKind::Host if self.knobs.shm_size.is_some() => {
                return Err(bad("shm-size", format!(
                    "runtime host uses this machine's own /dev/shm and cannot size it (asked for {}); drop shm-size, or use runtime namespace",
                    self.knobs.shm_size.unwrap_or(ByteSize(0))
                )));
            }
            RuntimeKind::Namespace if self.knobs.shm_size.is_none() => {
                return Err(bad("shm-size", "runtime namespace mounts a tmpfs of shm-size on /dev/shm: set shm-size, e.g. 64m"));
            }
            RuntimeKind::Namespace if self.knobs.ipc == IpcMode::Host => {
                return Err(bad(
                    "ipc",
                    "ipc host means this machine's /dev/shm: use runtime host",
                ));
            }
            RuntimeKind::Docker
                if self.knobs.ipc == IpcMode::Host && self.knobs.shm_size.is_some() =>
            {
                return Err(bad(
                    "shm-size",
                    "with ipc host the container uses the host's /dev/shm: shm-size does not apply",
                ));
            }
            RuntimeKind::Host | RuntimeKind::Docker if self.knobs.shm_remount.is_some() => {
                return Err(bad(
                    "shm-remount",
                    "only a namespace cell remounts its own tmpfs: use runtime namespace with shm-size (remounting this machine's /dev/shm is `sudo mount -o remount,size=SIZE /dev/shm`, which shmbench never does for you)",
                ));
            }
            RuntimeKind::Docker if self.knobs.shm_tmpfs && self.knobs.shm_size.is_none() => {
                return Err(bad(
                    "shm-tmpfs",
                    "a tmpfs on /dev/shm needs its size: set shm-size",
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

impl CellConfig {
    /// What runtime vm allows: a kernel, the emulated loader alone in its guest, a VM size.
    fn validate_vm(&self) -> Result<(), KnobError> {
        if self.knobs.runtime != RuntimeKind::Vm {
            return match self.knobs.kernel {
                Some(_) => Err(bad(
                    "kernel",
                    "a kernel is booted by runtime vm: add --runtime vm",
                )),
                None => Ok(()),
            };
        }
        if self.knobs.kernel.as_deref().is_none_or(str::is_empty) {
            return Err(bad("kernel", "runtime vm boots a kernel: name one with --kernel PATH or --kernel debian:VERSION (e.g. debian:6.1.0-57-cloud-amd64)"));
        }
        let refused = [
            ("image", self.knobs.image.is_some(), "an image is Docker's: the VM boots shmbench's own initramfs"),
            ("loader", self.knobs.loader != Loader::Emulated, "the guest holds only shmbench: torch cells and watched commands run on the host, in a namespace or in Docker"),
            ("shm-tmpfs", self.knobs.shm_tmpfs, "the guest's /dev/shm is always a tmpfs of shm-size"),
            ("shm-remount", self.knobs.shm_remount.is_some(), "only a namespace cell remounts its tmpfs"),
            ("vm-cpus", self.knobs.vm_cpus == 0, "a VM needs at least one CPU"),
            ("vm-boot-s", self.knobs.vm_boot_s.is_nan() || self.knobs.vm_boot_s <= 0.0, "give the guest some seconds to boot, e.g. 90"),
            ("vm-memory", self.knobs.vm_memory.bytes() < 256 << 20, "a VM needs at least 256m to boot and run a cell"),
        ];
        match refused.iter().find(|(_, wrong, _)| *wrong) {
            Some((key, _, why)) => Err(bad(key, *why)),
            None => Ok(()),
        }
    }

    /// An injected cause must be able to happen: in the emulated loader's processes, under a
    /// strategy that has what it removes, and with tasks still to read after its step. (A
    /// memory error's refusal outside a VM guest is the cell's own: only the guest knows.)
    fn validate_inject(&self) -> Result<(), KnobError> {
        let inject = self.knobs.inject;
        if inject == Inject::None {
            return Ok(());
        }
        if self.knobs.loader != Loader::Emulated {
            return Err(bad("inject", format!(
                "{inject} is made by the emulated loader's processes; loader {} runs other code, so nothing would be injected: use loader emulated, or inject none",
                self.knobs.loader
            )));
        }
        if inject == Inject::SegmentRemoved && self.knobs.strategy != Strategy::FileSystem {
            return Err(bad("inject", "segment-removed needs strategy file_system: only its segments are opened by name, so only they can be removed before they are opened"));
        }
        // Acted on at the injection step; the workers must still read a task sent after it,
        // beyond the workers x prefetch already in flight.
        let in_flight = self.knobs.workers as u64 * self.knobs.prefetch as u64;
        let least = Inject::step(self.knobs.steps) + in_flight + 1;
        if matches!(inject, Inject::TruncatedFile | Inject::KillBus) && self.knobs.steps < least {
            return Err(bad("steps", format!(
                "inject {inject} acts after step {} and needs a task read after it, beyond the {} in flight (workers x prefetch): at least {least} steps",
                Inject::step(self.knobs.steps),
                in_flight
            )));
        }
        Ok(())
    }
}

/// The fewest open files a cell runs with: its stdio, a pipe per worker, the meter's handles.
const MIN_NOFILE: u64 = 32;
