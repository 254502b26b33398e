//! `shmbench doctor --verify`: the doctor's recommendation proved by running the loader in a
//! namespace cell under the recommended /dev/shm size, or, for a job of several ranks and
//! loaders, every one of them at once in one namespace cell of that size (a watched `shmbench
//! job`, so the /dev/shm they share is measured as a whole).

use anyhow::{anyhow, Result};

use model::config::CellConfig;
use model::job::LoaderSpec;
use model::knobs::RuntimeKind;
use model::record::CellRecord;
use model::size::ByteSize;
use plan::job::loader_config;
use plan::resolve::Platform;
use plan::watch;
use runtime::{self, CellMessage};

/// Steps a verification runs at most: enough to fill the prefetch window many times over.
const MAX_STEPS: u64 = 40;
/// The training step time used when the loader has none: a step slower than the loader, so
/// every outstanding batch waits in /dev/shm (the worst case the prediction covers).
const SLOW_STEP_MS: f64 = 50.0;

/// The cell a verification runs: `config` under `shm_bytes` of /dev/shm in a namespace.
pub fn cell(config: &CellConfig, shm_bytes: u64) -> CellConfig {
    let mut cell = config.clone();
    cell.knobs.runtime = RuntimeKind::Namespace;
    cell.knobs.shm_size = Some(ByteSize(shm_bytes));
    cell.knobs.steps = cell.knobs.steps.min(MAX_STEPS);
    if cell.knobs.compute_ms == 0.0 {
        cell.knobs.compute_ms = SLOW_STEP_MS;
    }
    cell
}

/// Runs the verification cell.
pub fn run(cell: &CellConfig) -> Result<CellRecord> {
    runtime::launch_one(cell, &mut |_| {})
}

/// The cells of a job: every loader of every rank, each run as is (in the /dev/shm the job's
/// cell gives them all).
pub fn job_cells(config: &CellConfig, ranks: u32, loaders: &[LoaderSpec]) -> Vec<CellConfig> {
    let mut cells = Vec::new();
    for rank in 0..ranks {
        for spec in loaders {
            let mut c = cell(&loader_config(config, spec), 0);
            c.knobs.runtime = RuntimeKind::Host;
            c.knobs.shm_size = None;
            c.cell = format!("rank{rank}-{}", spec.name);
            cells.push(c);
        }
    }
    cells
}

/// Runs `cells` at once in one namespace cell of `shm_bytes` (a watched `shmbench job`); its
/// record has the /dev/shm they used together and how the job ended.
pub fn run_job(cells: &[CellConfig], shm_bytes: u64, platform: &Platform) -> Result<CellRecord> {
    let json = serde_json::to_string(cells)?;
    let exe =
        std::env::current_exe().map_err(|e| anyhow!("cannot find shmbench's own binary: {e}"))?;
    let command = vec![exe.display().to_string(), "job".to_string(), json];
    let job = watch::private("doctor-verify", command, shm_bytes, platform)
        .map_err(|e| anyhow!("{e}"))?;
    // What `shmbench job` said of each cell, for a failure's message.
    let mut said = Vec::new();
    let mut record = runtime::launch_one(&job, &mut |report| {
        if let CellMessage::Output(output) = report {
            said.extend(output.bytes);
        }
    })?;
    let said = String::from_utf8_lossy(&said);
    let lines: Vec<&str> = said.lines().filter(|l| !l.is_empty()).collect();
    if !record.status.is_pass() && !lines.is_empty() {
        record.message = format!("{}: {}", record.message, lines.join("; "));
    }
    Ok(record)
}

/// Runs `cells` at the same time in this process's /dev/shm (what `shmbench job` does inside the
/// job's cell); their records, in order.
pub fn together(cells: &[CellConfig]) -> Vec<CellRecord> {
    std::thread::scope(|scope| {
        let running: Vec<_> = cells
            .iter()
            .map(|c| scope.spawn(move || runtime::launch_one(c, &mut |_| {})))
            .collect();
        running
            .into_iter()
            .zip(cells)
            .map(|(handle, c)| match handle.join() {
                Ok(Ok(record)) => record,
                Ok(Err(e)) => CellRecord::failed_to_run(
                    c.clone(),
                    model::record::Status::Error,
                    format!("{e:#}"),
                ),
                Err(_) => CellRecord::failed_to_run(
                    c.clone(),
                    model::record::Status::Error,
                    "the thread running it panicked".into(),
                ),
            })
            .collect()
    })
}
