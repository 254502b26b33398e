//! `shmbench doctor --verify`: the doctor's recommendation proved by running the loader in a
//! namespace cell under the recommended /dev/shm size, or, for a job of several ranks and
//! loaders, every one of them at once in one namespace cell of that size (a watched `shmbench
//! job`, so the /dev/shm they share is measured as a whole).

use anyhow::{anyhow, Result};

use super::launcher::Launcher;
use model::config::CellConfig;
use model::job::LoaderSpec;
use model::knobs::RuntimeKind;
use model::record::CellRecord;
use model::size::ByteSize;
use plan::command_cell;
use plan::job::loader_config;
use plan::resolve::Platform;
use runtime::{CellMessage, Runtimes};

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
    Ok(Runtimes::for_cells(std::slice::from_ref(cell))?.launch(cell, &mut |_| {}))
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
    let job = job_cell(cells, shm_bytes, platform)?;
    let runtimes = Runtimes::for_cells(std::slice::from_ref(&job))?;
    Ok(launch_job(&runtimes, &job))
}

/// The watched cell that runs `cells` at once (`shmbench job`) in `shm_bytes` of /dev/shm.
fn job_cell(cells: &[CellConfig], shm_bytes: u64, platform: &Platform) -> Result<CellConfig> {
    let json = serde_json::to_string(cells)?;
    let exe =
        std::env::current_exe().map_err(|e| anyhow!("cannot find shmbench's own binary: {e}"))?;
    let command = vec![exe.display().to_string(), "job".to_string(), json];
    command_cell::private("doctor-verify", command, shm_bytes, platform).map_err(|e| anyhow!("{e}"))
}

/// Launches the job's cell; a failed job's record says what `shmbench job` said of each cell.
fn launch_job(launcher: &dyn Launcher, job: &CellConfig) -> CellRecord {
    let mut said = Vec::new();
    let mut record = launcher.launch(job, &mut |report| {
        if let CellMessage::Output(output) = report {
            said.extend(output.bytes);
        }
    });
    let said = String::from_utf8_lossy(&said);
    let lines: Vec<&str> = said.lines().filter(|l| !l.is_empty()).collect();
    if !record.status.is_pass() && !lines.is_empty() {
        record.message = format!("{}: {}", record.message, lines.join("; "));
    }
    record
}

/// Runs `cells` at the same time in this process's /dev/shm (what `shmbench job` does inside the
/// job's cell); their records, in order.
pub fn together(cells: &[CellConfig]) -> Vec<CellRecord> {
    together_with(&|c: &CellConfig| runtime::launch_one(c, &mut |_| {}), cells)
}

/// As [`together`], each cell launched by `launch` on a thread of its own: every record comes
/// back in order, a launch that failed or panicked as an error record.
fn together_with(
    launch: &(dyn Fn(&CellConfig) -> Result<CellRecord> + Sync),
    cells: &[CellConfig],
) -> Vec<CellRecord> {
    std::thread::scope(|scope| {
        let running: Vec<_> = cells
            .iter()
            .map(|c| scope.spawn(move || launch(c)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::fake::{cell, crash, pass, Script};
    use model::record::Status;

    #[test]
    fn a_verification_cell_is_a_namespace_of_the_size_with_a_slow_step_and_few_steps() {
        let mut loader = cell("seed");
        loader.knobs.steps = 500;
        let v = super::cell(&loader, 96 << 20);
        assert_eq!(v.knobs.runtime, RuntimeKind::Namespace);
        assert_eq!(v.knobs.shm_size, Some(ByteSize(96 << 20)));
        assert_eq!(v.knobs.steps, MAX_STEPS);
        assert_eq!(v.knobs.compute_ms, SLOW_STEP_MS);
        let mut timed = cell("timed");
        timed.knobs.compute_ms = 5.0;
        assert_eq!(
            super::cell(&timed, 1).knobs.compute_ms,
            5.0,
            "a step time given is kept"
        );
    }

    #[test]
    fn a_job_runs_every_loader_of_every_rank_in_the_jobs_own_dev_shm() {
        let specs: Vec<LoaderSpec> = ["train:8x2x128", "val:2x2x64"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let cells = job_cells(&cell("job"), 2, &specs);
        let names: Vec<_> = cells.iter().map(|c| c.cell.as_str()).collect();
        assert_eq!(
            names,
            ["rank0-train", "rank0-val", "rank1-train", "rank1-val"]
        );
        assert!(cells
            .iter()
            .all(|c| c.knobs.runtime == RuntimeKind::Host && c.knobs.shm_size.is_none()));
        assert_eq!((cells[0].knobs.workers, cells[1].knobs.batch), (8, 64));
    }

    /// A fake job whose cell relays what `shmbench job` printed.
    fn job_saying(status: Status, said: &'static str) -> Script {
        Script::new(move |config, _| {
            if status.is_pass() {
                pass(config, 1.0)
            } else {
                crash(config, status, 3)
            }
        })
        .relaying(said)
    }

    #[test]
    fn a_failed_job_says_what_each_of_its_cells_said_and_a_passing_one_stays_quiet() {
        let said = "rank0-train: sigbus after 3 steps\nrank1-train: pass after 40 steps\n";
        let failed = launch_job(&job_saying(Status::Sigbus, said), &cell("job"));
        assert!(
            failed
                .message
                .ends_with(": rank0-train: sigbus after 3 steps; rank1-train: pass after 40 steps"),
            "{}",
            failed.message
        );
        let passed = launch_job(&job_saying(Status::Pass, said), &cell("job"));
        assert!(!passed.message.contains("rank0"), "{}", passed.message);
    }

    #[test]
    fn cells_run_together_come_back_in_order_and_a_launch_that_failed_or_panicked_is_an_error() {
        let cells: Vec<_> = ["a", "b", "c"].iter().map(|n| cell(n)).collect();
        let records = together_with(
            &|c: &CellConfig| match c.cell.as_str() {
                "a" => Ok(pass(c, 1.0)),
                "b" => Err(anyhow!("no namespace here")),
                _ => panic!("the launch panicked"),
            },
            &cells,
        );
        let seen: Vec<_> = records
            .iter()
            .map(|r| (r.config.cell.as_str(), r.status))
            .collect();
        assert_eq!(
            seen,
            [
                ("a", Status::Pass),
                ("b", Status::Error),
                ("c", Status::Error)
            ]
        );
        assert!(records[1].message.contains("no namespace here"));
        assert!(records[2].message.contains("panicked"));
    }
}
