//! The main process's loop over its workers: torch's `_try_put_index` / `_process_data` /
//! `_next_data` in one struct. It primes and refills indices under the outstanding bound, delivers
//! batches in order through a reorder buffer, turns worker deaths and errors into torch's
//! messages, and records what each step saw.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::consumer::{self, Batch, PinnedPool};
use super::dataset;
use super::ending::{harness_stop, Stop, EMFILE_HINT, ENOMEM_HINT};
use super::inject;
pub(super) use super::loop_state::{Loop, Measured, Owned, Schedule};
use super::pool::{Event, Pool};
use super::segment;
use super::sharer::FetchError;
use super::shm_meter::ShmMeter;
use super::synth::spend_cpu;
use super::wire::FromWorker;
use crate::protocol::{Progress, PROGRESS_ENV};
use anyhow::Context;
use model::config::CellConfig;
use model::record::{Status, StepSample};
use sys::cgroup;
use sys::process;

/// How much later than a death a worker's exception reaches torch's main (see `obtain`).
const EXCEPTION_LATENCY: Duration = Duration::from_millis(10);

impl<'a> Loop<'a> {
    pub(super) fn new(config: &'a CellConfig, start: Instant) -> Loop<'a> {
        Loop {
            config,
            start,
            touch_threads: consumer::intra_op_threads(),
            progress: std::env::var_os(PROGRESS_ENV).is_some(),
            schedule: Schedule {
                reorder: BTreeMap::new(),
                held: None,
                retained: Vec::new(),
                outstanding: 0,
                queued: Vec::new(),
                next_idx: 0,
                epoch_end_idx: 0,
                steps_done: 0,
            },
            owned: Owned {
                pool: None,
                dataset: None,
                owner: None,
                pinned: if config.knobs.pin_memory {
                    PinnedPool::warmed(config.max_outstanding() + 1, config.batch_bytes())
                } else {
                    PinnedPool::default()
                },
                meter: ShmMeter::start(),
                inject: None,
            },
            measured: Measured {
                obtained_s: Vec::new(),
                compute_s: Vec::new(),
                series: Vec::new(),
                oom_kills_at_start: cgroup::oom_kills(),
                checksum: 0,
                main_private_rss: 0,
                worker_private_rss: 0,
                peak_fds: None,
            },
        }
    }

    /// Ends the run: workers first (their mappings go with them), then our batches, then any
    /// named segment a dead worker left (torch_shm_manager's sweep). Returns the /dev/shm use
    /// seen just before, for a failure's record.
    pub(super) fn tear_down(&mut self, completed: bool) -> u64 {
        let used_at_stop = self.owned.meter.used_now();
        match self.owned.pool.take() {
            Some(pool) if completed => pool.shutdown(Duration::from_secs(5)),
            Some(mut pool) => pool.kill_all(),
            None => {}
        }
        self.owned.dataset = None;
        self.schedule.reorder.clear();
        self.schedule.held = None;
        self.schedule.retained.clear();
        // The owner record goes with what it proves: its drop removes our unheld segments, and
        // the record itself once nothing of ours is left.
        drop(self.owned.owner.take());
        std::hint::black_box(self.measured.checksum);
        used_at_stop
    }
}

impl Loop<'_> {
    fn pool(&mut self) -> &mut Pool {
        self.owned
            .pool
            .as_mut()
            .expect("pool exists while an epoch runs")
    }

    /// Private memory of the main and its workers (sampled, not every step: it settles early).
    fn sample_rss(&mut self) {
        self.measured.main_private_rss = self
            .measured
            .main_private_rss
            .max(process::private_rss(std::process::id()));
        if let Some(pool) = &self.owned.pool {
            for pid in pool.live_pids() {
                self.measured.worker_private_rss = self
                    .measured
                    .worker_private_rss
                    .max(process::private_rss(pid));
            }
        }
    }

    /// torch's `_try_put_index`: one more task if under the outstanding bound. It counts as
    /// outstanding at once, and reaches its worker at `send_queued`.
    fn try_put_index(&mut self) {
        if self.schedule.outstanding >= self.config.max_outstanding()
            || self.schedule.next_idx >= self.schedule.epoch_end_idx
        {
            return;
        }
        let workers = self.config.knobs.workers as u64;
        let worker = (self.schedule.next_idx % workers) as u32;
        self.schedule.queued.push((worker, self.schedule.next_idx));
        self.schedule.next_idx += 1;
        self.schedule.outstanding += 1;
    }

    /// Hands the put indices to the feeder thread and sleeps until they are sent, as torch's
    /// main gives the GIL to its index queue's feeder thread (see [`super::feeder`]).
    fn send_queued(&mut self) {
        let tasks = std::mem::take(&mut self.schedule.queued);
        self.pool().send_tasks(tasks);
    }

    /// Reacts to one event; `Err` ends the cell.
    fn handle(&mut self, event: Event) -> Result<bool, Stop> {
        match event {
            Event::Timeout => Ok(false),
            Event::Message { worker, msg } => match msg {
                FromWorker::Batch { idx, bytes, name } => {
                    self.schedule.outstanding = self.schedule.outstanding.saturating_sub(1);
                    // Unpickling a file_descriptor batch fetches its fd from the worker.
                    let fd = match name {
                        None => Some(self.fetch_fd(worker, idx)?),
                        Some(_) => None,
                    };
                    let label = name.clone().unwrap_or_else(|| "fd from the worker".into());
                    if let (Some(name), Some(inject)) = (&name, self.owned.inject.as_mut()) {
                        inject.before_open(name, idx);
                    }
                    let shared = consumer::map_received(fd, name, bytes).map_err(|e| {
                        let status = match e.raw_os_error() {
                            // torch's words (MapAllocator), then why.
                            Some(libc::ENOMEM) => return Stop::new(
                                Status::Enomem,
                                format!("unable to mmap {bytes} bytes from file <{label}>: Cannot allocate memory (12) (batch {idx}): {ENOMEM_HINT}"),
                            ),
                            Some(libc::EMFILE) => Status::Emfile,
                            // torch's words (THManagedMapAllocator opening a file_system name).
                            Some(libc::ENOENT) => return Stop::new(
                                Status::Enoent,
                                format!("unable to open shared memory object <{label}> in read-write mode: No such file or directory (2) (batch {idx})"),
                            ),
                            _ => Status::Error,
                        };
                        Stop::new(
                            status,
                            format!("mapping batch {idx} from worker {worker}: {e}"),
                        )
                    })?;
                    let batch = if self.config.knobs.pin_memory {
                        self.owned.pinned.pin(shared)
                    } else {
                        Batch::Shared(shared)
                    };
                    self.schedule.reorder.insert(idx, Ok(batch));
                    Ok(true)
                }
                FromWorker::Failed { idx, kind, message } => {
                    self.schedule.outstanding = self.schedule.outstanding.saturating_sub(1);
                    let pid = self.pool().pid(worker);
                    let status = kind.status();
                    let mut text = format!(
                        "Caught RuntimeError in DataLoader worker process {worker}. RuntimeError: {message}"
                    );
                    if status == Status::Emfile {
                        text = format!("{text}. {EMFILE_HINT}");
                    }
                    // Raised when this index's turn comes, as torch re-raises an ExceptionWrapper
                    // in order; a worker death meanwhile is raised at once instead.
                    let stop = Stop::by_worker(status, text, pid, None);
                    self.schedule.reorder.insert(idx, Err(stop));
                    Ok(true)
                }
            },
            Event::Died { pid, exit, .. } => {
                Err(Stop::death(pid, exit, self.measured.oom_kills_at_start))
            }
        }
    }

    /// A batch's fd from its worker's sharer; a failure is the cell's end, as torch raises it.
    fn fetch_fd(&mut self, worker: u32, idx: u64) -> Result<OwnedFd, Stop> {
        let timeout_s = self.config.knobs.timeout_s;
        let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
        let error = match self.pool().fetch_fd(worker, idx, deadline) {
            Ok(fd) => return Ok(fd),
            Err(e) => e,
        };
        let death = match error {
            FetchError::WorkerGone => self
                .pool()
                // Its death follows its closed socket at once, but a traced worker's status
                // only once its tracer has let it go: seconds on a busy machine.
                .death_of(worker, Duration::from_secs(10))
                .map(|(pid, exit)| Stop::death(pid, exit, self.measured.oom_kills_at_start)),
            _ => None,
        };
        Err(Stop::fetch_failed(error, worker, idx, timeout_s, death))
    }

    /// Handles every event already pending, without blocking.
    fn drain(&mut self) -> Result<(), Stop> {
        loop {
            let event = self
                .pool()
                .next_event(Instant::now())
                .map_err(harness_stop)?;
            if !self.handle(event)? {
                return Ok(());
            }
        }
    }

    /// Processes events until `until` (used for the accelerator's compute time).
    fn wait_until(&mut self, until: Instant) -> Result<(), Stop> {
        while Instant::now() < until {
            let event = self.pool().next_event(until).map_err(harness_stop)?;
            self.handle(event)?;
        }
        Ok(())
    }

    /// Blocks until batch `idx` is available in order, or the watchdog fires.
    fn obtain(&mut self, idx: u64, deadline: Instant) -> Result<Batch, Stop> {
        loop {
            if let Some(result) = self.schedule.reorder.remove(&idx) {
                if result.is_err() {
                    // torch's worker exception reaches the main through the result queue's
                    // pickling feeder thread (milliseconds); SIGCHLD is immediate. A worker death
                    // within that window (a SIGBUS that filled the tmpfs before this ENOSPC) is
                    // what torch raises.
                    // Drain first: on a loaded machine the window may pass before we next run.
                    self.drain()?;
                    self.wait_until(Instant::now() + EXCEPTION_LATENCY)?;
                }
                return result;
            }
            let event = self.pool().next_event(deadline).map_err(harness_stop)?;
            if matches!(event, Event::Timeout) && Instant::now() >= deadline {
                return Err(Stop::timed_out(self.config.knobs.timeout_s));
            }
            self.handle(event)?;
        }
    }

    fn release(&mut self, step: u64, batch: Batch) {
        let retain = self.config.knobs.retain_every;
        if retain > 0 && step.is_multiple_of(retain) {
            self.schedule.retained.push(batch);
        } else {
            self.owned.pinned.release(batch);
        }
    }

    pub(super) fn run_epoch(&mut self, epoch: u64) -> Result<(), Stop> {
        let cfg = self.config;
        if self.owned.pool.is_none() {
            if self.owned.owner.is_none() {
                let owner = segment::new_owner()
                    .context("creating the owner record of this loader's segments in /dev/shm")
                    .map_err(harness_stop)?;
                self.owned.owner = Some(owner);
            }
            let token = self.owned.owner.as_ref().map(|o| o.token().clone());
            let token = token.expect("the owner record was just made");
            // Starting the first worker pickles the Dataset (forkserver, spawn).
            if self.owned.dataset.is_none() {
                self.owned.dataset = dataset::share(cfg, &token)?;
            }
            if self.owned.inject.is_none() {
                let inject = inject::Main::prepare(cfg, &token)
                    .context("making the injected cause ready")
                    .map_err(harness_stop)?;
                self.owned.inject = Some(inject);
            }
            let env = self.owned.inject.as_ref().map(inject::Main::worker_env);
            let pool = Pool::spawn(cfg, &token, env.as_deref().unwrap_or_default());
            self.owned.pool = Some(pool.map_err(harness_stop)?);
        }
        let base = epoch * cfg.knobs.steps;
        self.schedule.next_idx = base;
        self.schedule.epoch_end_idx = base + cfg.knobs.steps;
        self.schedule.outstanding = 0;
        while self.schedule.outstanding < cfg.max_outstanding()
            && self.schedule.next_idx < self.schedule.epoch_end_idx
        {
            self.try_put_index();
        }
        self.send_queued();
        let timeout = Duration::from_secs_f64(cfg.knobs.timeout_s);
        let compute = Duration::from_secs_f64(cfg.knobs.compute_ms / 1000.0);
        for idx in base..base + cfg.knobs.steps {
            let step = idx + 1;
            // Notice a death at once even when the next batch is already here (SIGCHLD).
            self.drain()?;
            let batch = self.obtain(idx, Instant::now() + timeout)?;
            let worker0 = self.pool().pid(0);
            if let Some(inject) = &mut self.owned.inject {
                inject.at_step(step, worker0);
            }
            // Real torch's main spends CPU on each batch beyond the data path (unpickling and
            // rebuilding the storage in Python, its intra-op threads; the fd's round trips to
            // the worker's sharer are already made): `main_us`, as the user sets it (the fidelity
            // table shows torch's main CPU per step beside the emulation's), before it refills.
            if cfg.knobs.main_us > 0 {
                spend_cpu(Duration::from_micros(cfg.knobs.main_us));
            }
            let t = self.start.elapsed().as_secs_f64();
            // _process_data puts the refill, its feeder sends it while the main waits for the
            // GIL, and only then does the loop body let go of the previous batch.
            self.try_put_index();
            self.send_queued();
            if let Some((prev_step, prev)) = self.schedule.held.take() {
                self.release(prev_step, prev);
            }
            let prev_t = self.measured.obtained_s.last().copied().unwrap_or(0.0);
            self.measured.obtained_s.push(t);
            self.measured.series.push(StepSample {
                step,
                t_s: t,
                latency_s: t - prev_t,
                shm_used_bytes: self.owned.meter.used_now(),
                in_flight: self.schedule.outstanding + self.schedule.reorder.len() as u64,
            });
            self.measured.checksum = self.measured.checksum.wrapping_add(consumer::touch(
                &batch,
                cfg.knobs.touch,
                self.touch_threads,
            ));
            self.schedule.held = Some((step, batch));
            // Every batch alive is in hand now: the received, the held and the retained.
            self.measured.peak_fds = self.measured.peak_fds.max(process::open_fds());
            if !compute.is_zero() {
                let began = Instant::now();
                self.wait_until(began + compute)?;
                self.measured.compute_s.push(began.elapsed().as_secs_f64());
            }
            self.schedule.steps_done = step;
            if step.is_power_of_two() || step.is_multiple_of(10) {
                self.sample_rss();
            }
            if self.progress {
                let progress = Progress {
                    step,
                    total: cfg.total_steps(),
                };
                eprintln!("{}", progress.line());
            }
        }
        if let Some((prev_step, prev)) = self.schedule.held.take() {
            self.release(prev_step, prev);
        }
        if !cfg.knobs.persistent_workers {
            if let Some(pool) = self.owned.pool.take() {
                pool.shutdown(Duration::from_secs(5));
            }
        }
        Ok(())
    }
}
