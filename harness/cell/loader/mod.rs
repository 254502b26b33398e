//! The emulated DataLoader: the main's loop over its workers, in this process.
//!
//! Faithful to `torch/utils/data/dataloader.py`: at most `workers * prefetch` batches are
//! outstanding, primed round-robin over the workers' index queues and refilled one per batch the
//! loop yields (`_try_put_index` inside `_process_data`, before the consumer drops its previous
//! batch); batches are yielded in order and an early one waits in a reorder buffer, still in
//! shared memory. Any worker death ends the cell at once, as torch's SIGCHLD handler does. The
//! loop itself is in [`main_loop`]; this file runs it over the epochs and makes the record.

pub mod consumer;
mod dataset;
mod ending;
mod feeder;
mod inject;
mod loop_state;
mod main_loop;
pub mod pool;
pub mod segment;
mod sharer;
pub mod shm_meter;
pub mod synth;
pub mod wire;
pub mod worker;

use std::time::Instant;

use super::metrics::{self, Steps};
use main_loop::Loop;
use model::config::CellConfig;
use model::record::{CellRecord, Failure, Metrics, Status};
use sys::perf;

/// Runs one cell's loader in this process and returns its record. Never leaves a worker, a
/// mapping or a named segment of its own behind.
pub fn run_cell(config: &CellConfig) -> CellRecord {
    // Opened before any worker starts, so every worker's instructions are counted too.
    let instructions = perf::Counter::open(perf::Event::Instructions).ok();
    let start = Instant::now();
    let mut lp = Loop::new(config, start);
    let shm_seen = lp.owned.meter.capacity;
    let mut outcome = Ok(());
    for epoch in 0..config.knobs.epochs as u64 {
        outcome = lp.run_epoch(epoch);
        if outcome.is_err() {
            break;
        }
    }
    let used_at_stop = lp.tear_down(outcome.is_ok());

    let steps = Steps {
        obtained_s: std::mem::take(&mut lp.measured.obtained_s),
        compute_s: std::mem::take(&mut lp.measured.compute_s),
        series: std::mem::take(&mut lp.measured.series),
    };
    // Every worker has been reaped by tear_down, so their CPU is counted as our children's.
    let usage = metrics::Usage::now();
    let metrics = Metrics {
        cpu_s: Some(usage.cpu_s()),
        main_cpu_s: Some(usage.own_s),
        page_faults: Some(usage.faults),
        peak_shm_bytes: lp.owned.meter.peak(),
        peak_rss_bytes: usage.peak_rss_bytes,
        main_private_rss_bytes: lp.measured.main_private_rss,
        worker_private_rss_bytes: lp.measured.worker_private_rss,
        peak_fds: lp.measured.peak_fds,
        instructions: instructions.as_ref().and_then(|c| c.read()),
        instructions_user_only: instructions.is_some_and(|c| c.scope == perf::Scope::User),
        wall_s: start.elapsed().as_secs_f64(),
        ..metrics::from_steps(config, &steps, lp.schedule.steps_done)
    };
    let (status, message, failure) = match outcome {
        Ok(()) => (Status::Pass, String::new(), None),
        Err(stop) => (
            stop.status,
            stop.message,
            Some(Failure {
                crash_step: lp.schedule.steps_done + 1,
                signal: stop.signal,
                pid: stop.pid,
                shm_used_bytes: used_at_stop,
            }),
        ),
    };
    CellRecord {
        config: config.clone(),
        status,
        message,
        failure,
        metrics,
        shm_seen_bytes: shm_seen,
        series: steps.series,
        torch_version: None,
        exit_code: None,
        watch: None,
        explanation: None,
        pod: None,
        vm: None,
        slurm: None,
    }
}
