//! `shmbench bench`: the harness measuring itself against this machine's limits, in one run:
//! the seed setup as a host cell (img/s, against the calibrated all-cores fresh-segment limit),
//! the private memory of its main and workers, the whole seed matrix's wall time and how fast its
//! crash cells end, and what `watch`'s sampler costs. Targets are checked here, by measurement, never by timed unit tests; the
//! table is `table`.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use crate::targets::Bench;
use model::knobs::{Knobs, RuntimeKind, Strategy, TorchProfile};
use model::repeat::Repeat;
use orchestrate::event::Event;
use orchestrate::{calibrate, runner};
use plan::command_cell;
use plan::resolve::Resolve;
use plan::resolve::{Identity, Platform};
use plan::scenario::{Scenario, SEED_MATRIX_PATH};
use results::csv::ClaimedName;
use sys::clock;

/// Runs the benchmark; `results_dir` receives the matrix's CSV.
pub fn run(
    platform: &Platform,
    results_dir: &Path,
    observe: &mut dyn FnMut(Event),
) -> Result<Bench> {
    let id = Identity {
        scenario: "bench".into(),
        cell: "host-seed".into(),
        environment: "host cell, seed setup".into(),
        claim: None,
    };
    let host = Knobs {
        runtime: Some(RuntimeKind::Host),
        ..Knobs::default()
    }
    .resolve(id, platform)
    .map_err(|e| anyhow!("{e}"))?;
    observe(Event::Note("calibrating...".into()));
    let calibration = calibrate::isolated(
        &host,
        &[(Strategy::FileDescriptor, TorchProfile::Legacy)],
        Duration::from_secs(1),
    )?;
    let limit = calibration
        .limit_bytes_per_s(Strategy::FileDescriptor, TorchProfile::Legacy)
        .unwrap_or(0.0)
        / host.image_bytes() as f64;
    observe(Event::Note("host cell with the seed setup...".into()));
    let record = runtime::launch_one(&host, &mut |_| {})?;
    let rate = record.metrics.img_per_s.unwrap_or(0.0);

    observe(Event::Note("seed matrix...".into()));
    let scenario = Scenario::load(Path::new(SEED_MATRIX_PATH))?;
    let plan = scenario.plan(&Knobs::default(), None, platform)?;
    // Claimed for this run alone: another bench started in the same second gets `-2`.
    let claim = ClaimedName::claim(
        &results_dir.join(format!("bench-matrix-{}.csv", clock::compact_now())),
    )?;
    let out = claim.path().to_path_buf();
    let began = Instant::now();
    let outcome = runner::run(
        &plan,
        &out,
        Repeat::Fixed(1),
        runner::Calibrate::First,
        observe,
    )?;
    let matrix_s = began.elapsed().as_secs_f64();
    let slowest_crash_s = outcome
        .records
        .iter()
        .filter(|r| !r.status.is_pass())
        .map(|r| r.metrics.wall_s)
        .fold(0.0f64, f64::max);
    observe(Event::Note("watch's sampler on a 9-process job...".into()));
    let (sampler_share, sampler_samples) = sampler_cost(platform)?;
    Ok(Bench {
        calibration,
        limit_img_per_s: limit,
        host_img_per_s: rate,
        efficiency: rate / limit.max(1.0),
        matrix_s,
        slowest_crash_s,
        main_private_rss: record.metrics.main_private_rss_bytes,
        worker_private_rss: record.metrics.worker_private_rss_bytes,
        batch_bytes: host.batch_bytes(),
        matrix_results: outcome.results.path().to_path_buf(),
        sampler_share,
        sampler_samples,
    })
}

/// Watches a job of 9 processes (a shell and 8 sleepers, like a main and its workers) for 3 s at
/// the default interval, in a private /dev/shm: the sampler's CPU share of one core.
fn sampler_cost(platform: &Platform) -> Result<(f64, u64)> {
    let job = "for i in 1 2 3 4 5 6 7 8; do sleep 3 & done; wait";
    let command = ["sh", "-c", job].map(String::from).to_vec();
    let config = command_cell::private("bench-sampler", command, 64 << 20, platform)
        .map_err(|e| anyhow!("{e}"))?;
    let record = runtime::launch_one(&config, &mut |_| {})?;
    let report = record
        .watch
        .ok_or_else(|| anyhow!("the watched job did not run: {}", record.message))?;
    let share = report.sampler_cpu_s / record.metrics.wall_s.max(1e-9);
    Ok((share, report.sample_count))
}
