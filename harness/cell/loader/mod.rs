//! The emulated DataLoader: the main's loop over its workers, in this process.
//!
//! Faithful to `torch/utils/data/dataloader.py`: at most `workers * prefetch` batches are
//! outstanding, primed round-robin over the workers' index queues and refilled one per batch the
//! loop yields (`_try_put_index` inside `_process_data`, before the consumer drops its previous
//! batch); batches are yielded in order and an early one waits in a reorder buffer, still in
//! shared memory. Any worker death ends the cell at once, as torch's SIGCHLD handler does. The
//! loop itself is in [`main_loop`]; this file runs it over the epochs and makes the record.

pub mod consumer;
mod main_loop;
pub mod pool;
pub mod segment;
pub mod shm_meter;
pub mod synth;
pub mod wire;
pub mod worker;

use std::time::Instant;

use crate::model::config::CellConfig;
use crate::model::estimate;
use crate::model::record::{CellRecord, Failure, Metrics, Status};
use main_loop::Loop;

/// Runs one cell's loader in this process and returns its record. Never leaves a worker, a
/// mapping or a named segment of its own behind.
pub fn run_cell(config: &CellConfig) -> CellRecord {
    let start = Instant::now();
    let mut lp = Loop::new(config, start);
    let shm_seen = lp.meter.capacity;
    let mut outcome = Ok(());
    for epoch in 0..config.epochs as u64 {
        outcome = lp.run_epoch(epoch);
        if outcome.is_err() {
            break;
        }
    }
    let used_at_stop = lp.tear_down(outcome.is_ok());

    let warmup = estimate::warmup_used(config.warmup_steps, lp.steps_done);
    let steady_latencies_ms: Vec<f64> = lp
        .series
        .iter()
        .skip(warmup as usize)
        .map(|s| s.latency_s * 1000.0)
        .collect();
    let steady_span = match (warmup as usize, lp.obtained_s.last()) {
        (_, None) => 0.0,
        (0, Some(last)) => *last,
        (w, Some(last)) => last - lp.obtained_s[w - 1],
    };
    let accel_util = (config.compute_ms > 0.0 && steady_span > 0.0).then(|| {
        let busy: f64 = lp.compute_s.iter().skip(warmup as usize).sum();
        (busy / steady_span).min(1.0)
    });
    let metrics = Metrics {
        steps_done: lp.steps_done,
        img_per_s: estimate::steady_rate(&lp.obtained_s, warmup, config.batch as u64),
        warmup_steps_used: warmup,
        step_p50_ms: estimate::quantile(&steady_latencies_ms, 0.5),
        step_p99_ms: estimate::quantile(&steady_latencies_ms, 0.99),
        first_batch_ms: lp.obtained_s.first().map(|t| t * 1000.0),
        peak_shm_bytes: lp.meter.peak(),
        peak_rss_bytes: peak_rss_bytes(),
        main_private_rss_bytes: lp.main_private_rss,
        worker_private_rss_bytes: lp.worker_private_rss,
        accel_util,
        wall_s: start.elapsed().as_secs_f64(),
    };
    let (status, message, failure) = match outcome {
        Ok(()) => (Status::Pass, String::new(), None),
        Err(stop) => (
            stop.status,
            stop.message,
            Some(Failure {
                crash_step: lp.steps_done + 1,
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
        series: lp.series,
    }
}

fn peak_rss_bytes() -> u64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss() as u64 * 1024)
        .unwrap_or(0)
}
