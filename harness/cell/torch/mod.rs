//! The real-torch loader: the cell runs `program.py` (shipped inside the binary) with the cell's
//! Python, which builds a real `torch.utils.data.DataLoader` from the same knobs, and turns what
//! happened into the same record an emulated cell prints. The cell process meters /dev/shm around
//! it, relays its steps as progress and classifies how it ended (see [`classify`]).
//!
//! Timing against the emulation, measured on the development machine (2 cores, torch 2.9.1 and
//! 2.15), which is what decides crash steps at intermediate sizes:
//! - **When a refill reaches its worker.** torch's `_try_put_index` only appends to the worker's
//!   `multiprocessing.Queue`; its feeder thread sends the index once it holds the GIL, which the
//!   main gives up before its loop rebinds the batch variable. If the main is woken late, the
//!   refilled worker allocates before the previous batch is freed and the peak is `workers x
//!   prefetch + 2` batches: in every w4-b32 and w2-b16 run of 2.15 on Linux 6.18 (10.0 and 6.0
//!   batches; 18.0 seed batches in most), never in an earlier session's 1400m runs on another
//!   kernel (17.0). So the emulation makes the same handoff (`loader::feeder`) rather than fix
//!   an order, and here it peaks where torch does.
//! - **How a batch's fd reaches the main.** `rebuild_storage_fd` fetches it from the worker's
//!   resource-sharer thread in four waits: 0.35-0.40 ms of the main's CPU, but 0.8-2.9 ms median
//!   and 9-27 ms at the 90th percentile of wall time with every worker busy. Sending the fd with
//!   the message made the emulation's small-batch crashes 1-2 steps late (4 workers of batch 32
//!   in 96m: steps 3-4 against torch's 1-2; a 5 ms receive delay alone moved them to 2). The
//!   emulation now makes the same round trips to a thread in each worker (`loader::sharer`).
//! - **The Dataset.** The torch program's samples are fresh tensors whose pages fault in again
//!   for most batches (5.7k of 18.8k pages per seed batch with 2.9.1, 11.3k with 2.15), so its
//!   workers spend 22.6 and 29.0 ms of CPU per seed batch before collating, against 14.2 ms for
//!   the emulation's warm buffer; collating into shared memory costs the same (55-58 against
//!   55 ms). Modelling that as CPU per sample made things worse, not better (60 or 100 us per
//!   sample: 18 of 27 crash-step cells in range against 22 of 29 without), because the small
//!   loaders then crash later than torch while only the seed loader moves toward it; a fresh
//!   allocation per sample faulted every page (42.7 ms) and overshot. So the emulation keeps
//!   its warm buffer.
//! - **The main loop's CPU**: 31-35 ms per seed step for torch against 23-27 ms emulated; what
//!   decides the race is its share: torch's main sums the batch on one intra-op thread per core
//!   while each worker has one, so with 8 workers on 2 cores it gets two of ten runnable
//!   threads' share. The emulated main reads on as many (`loader::consumer::touch`): the seed
//!   loader's modern crash in 1200m moved from steps 17-20 to 19-23 (torch's six: 17-23), legacy
//!   seed-fs-1200m passed in 2 of 3 runs, not 1 (torch: 6 of 6). Added CPU (`--main-us`) moved
//!   crashes earlier instead, so it is not a default.
//! - **Start-up**: torch's workers receive their first index 64-90 ms after `iter()` starts (it
//!   forks each in about 9 ms), one queue after another about 3.5 ms apart, as the emulation's
//!   feeder sends them; the first seed batch arrives after 0.48-0.80 s, against 0.39-0.45 s.
//!
//! What remains is a race whose range torch itself spreads widely from run to run (the seed
//! loader in 1200m, modern, file_system: steps 18 to 27 over eight runs; 4 workers of batch 32
//! in 160m, legacy: 8 to 23 and two passes in five).

pub mod classify;
pub mod dataset;
mod python;

pub use python::{locate, probe, profile_of, Found, PythonError};

use std::io::{BufRead, BufReader};
use std::process::Command;
use std::time::Instant;

use serde::Deserialize;

use super::loader::shm_meter::ShmMeter;
use super::metrics::{self, Steps};
use super::protocol::{Progress, PROGRESS_ENV, SCRATCH_ENV};
use model::config::CellConfig;
use model::record::{CellRecord, Failure, Metrics, Status, StepSample};
use sys::{cgroup, process};

/// The program a torch cell runs, passed in the environment so `ps` shows a short command.
pub const PROGRAM: &str = include_str!("program.py");

/// The variable that carries [`PROGRAM`], and the bootstrap that runs it as `__main__`.
const PROGRAM_ENV: &str = "SHMBENCH_TORCH_PROGRAM";
const BOOTSTRAP: &str =
    "import os; exec(compile(os.environ['SHMBENCH_TORCH_PROGRAM'], 'shmbench-torch-cell', 'exec'))";

/// How to get an interpreter with torch, for messages.
pub const INSTALL_HINT: &str = "python3 -m venv V && V/bin/pip install torch, then pass --python V/bin/python (torch==2.9.* for the SIGBUS-era allocation)";

/// Lines kept from the program's stderr for messages.
const TAIL_LINES: usize = 12;

/// One line of the program's protocol.
#[derive(Debug, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    Start {
        torch: String,
        accelerator: bool,
        /// A user's Dataset's first sample (the knob `dataset`).
        #[serde(default)]
        sample: Option<dataset::Sample>,
    },
    Step {
        step: u64,
        t: f64,
        in_flight: u64,
    },
    End {
        #[serde(flatten)]
        cost: MainCost,
    },
    Error {
        #[serde(rename = "type")]
        kind: String,
        message: String,
        completed: u64,
        #[serde(default)]
        workers: Vec<classify::WorkerExit>,
        #[serde(flatten)]
        cost: MainCost,
    },
}

/// What the Python main spent, as the program reports it at its end (either end).
#[derive(Debug, Default, Deserialize)]
struct MainCost {
    /// CPU seconds in the loop, all its threads.
    #[serde(default)]
    cpu_s: Option<f64>,
    /// ... and before it (starting Python, importing torch), with its page faults.
    #[serde(default)]
    setup_cpu_s: Option<f64>,
    #[serde(default)]
    setup_faults: Option<u64>,
}

/// What to do about a missing torch when the cell runs in the user's own image (`--image`): the
/// host's venv advice does not apply there.
fn hint_for(config: &CellConfig, message: String) -> String {
    match &config.knobs.image {
        Some(image) => message.replace(
            INSTALL_HINT,
            &format!("the image '{image}' needs a Python with torch (pip install torch in it), or --python with the path of one inside the image"),
        ),
        None => message,
    }
}

/// What the program reported.
#[derive(Default)]
struct Reported {
    version: Option<String>,
    sample: Option<dataset::Sample>,
    accelerator: bool,
    ended: bool,
    error: Option<(String, String)>,
    /// How the workers that had ended at the failure ended.
    worker_exits: Vec<classify::WorkerExit>,
    /// Steps whose body finished, as the program counted them at a failure.
    completed: Option<u64>,
    /// What the Python main spent, as it reported at its end.
    cost: MainCost,
    steps: Steps,
}

/// What the program reported on stdout, line by line (its steps relayed as progress), and the
/// /dev/shm in use when it reported an error.
fn read_protocol(
    stdout: std::process::ChildStdout,
    config: &CellConfig,
    meter: &ShmMeter,
) -> (Reported, Option<u64>) {
    let progress = std::env::var_os(PROGRESS_ENV).is_some();
    let mut reported = Reported::default();
    let mut used_at_error = None;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Start {
                torch,
                accelerator,
                sample,
            }) => {
                reported.version = Some(torch);
                reported.sample = sample;
                reported.accelerator = accelerator;
            }
            Ok(Line::Step { step, t, in_flight }) => {
                let steps = &mut reported.steps;
                let prev = steps.obtained_s.last().copied().unwrap_or(0.0);
                steps.obtained_s.push(t);
                steps.compute_s.push(config.knobs.compute_ms / 1000.0);
                steps.series.push(StepSample {
                    step,
                    t_s: t,
                    latency_s: t - prev,
                    shm_used_bytes: meter.used_now(),
                    in_flight,
                });
                if progress {
                    let total = config.total_steps();
                    eprintln!("{}", Progress { step, total }.line());
                }
            }
            Ok(Line::End { cost }) => {
                reported.ended = true;
                reported.cost = cost;
            }
            Ok(Line::Error {
                kind,
                message,
                completed,
                workers,
                cost,
            }) => {
                reported.worker_exits = workers;
                reported.cost = cost;
                used_at_error = Some(meter.used_now());
                reported.error = Some((kind, message));
                reported.completed = Some(completed);
            }
            // Not the protocol (a library printing on stdout): keep going.
            Err(_) => {}
        }
    }
    (reported, used_at_error)
}

/// The interpreter's command: the program, its cell as JSON, and its environment.
/// multiprocessing's own directory (`pymp-*`, the forkserver's socket) goes in `scratch`, the
/// cell's, removed when the cell ends: a killed interpreter never runs the finalizer that
/// removes it. Without one (a read-only /tmp), Python's default stays.
fn interpreter(config: &CellConfig, json: String, scratch: Option<&std::path::Path>) -> Command {
    let mut cmd = Command::new(&config.knobs.python);
    cmd.arg("-c")
        .arg(BOOTSTRAP)
        .arg(json)
        .env(PROGRAM_ENV, PROGRAM)
        .env("PYTHONUNBUFFERED", "1")
        // A container's root is read-only: no bytecode caches.
        .env("PYTHONDONTWRITEBYTECODE", "1");
    if let Some(dir) = scratch {
        cmd.env("TMPDIR", dir);
    }
    cmd
}

/// The interpreter's folder: the harness's for the cell, which it removes even when this
/// process is killed; else one of this process's own (held by the second), removed when the
/// cell ends (see `interpreter`).
fn scratch() -> (Option<std::path::PathBuf>, Option<tempfile::TempDir>) {
    if let Some(given) = std::env::var_os(SCRATCH_ENV) {
        return (Some(given.into()), None);
    }
    let own = tempfile::Builder::new()
        .prefix("shmbench-torch-")
        .tempdir()
        .ok();
    (own.as_ref().map(|d| d.path().to_path_buf()), own)
}

/// Runs one torch cell and returns its record. The interpreter dies with the cell
/// (PR_SET_PDEATHSIG) and its DataLoader workers with the cell's process group.
pub fn run_cell(config: &CellConfig) -> CellRecord {
    let start = Instant::now();
    let meter = ShmMeter::start();
    let oom_kills_at_start = cgroup::oom_kills();
    let fail = |message: String| {
        CellRecord::failed_to_run(config.clone(), Status::Error, hint_for(config, message))
    };
    let json = match serde_json::to_string(config) {
        Ok(j) => j,
        Err(e) => return fail(format!("cannot encode the cell config: {e}")),
    };
    let (scratch, _own) = scratch();
    let mut cmd = interpreter(config, json, scratch.as_deref());
    process::piped_and_tied(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(python::cannot_run(&config.knobs.python, e).to_string()),
    };
    let stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let stderr_tail = std::thread::spawn(move || {
        let mut tail: Vec<String> = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            tail.push(line);
            if tail.len() > TAIL_LINES {
                tail.remove(0);
            }
        }
        tail
    });
    let (reported, used_at_error) = read_protocol(stdout, config, &meter);
    let used_at_stop = used_at_error.unwrap_or_else(|| meter.used_now());
    let exit = child.wait();
    let tail = stderr_tail.join().unwrap_or_default();
    let ending = classify::Ending {
        ended: reported.ended,
        error: reported.error.as_ref(),
        worker_exits: &reported.worker_exits,
        exit: exit.ok(),
        stderr_tail: &tail,
        oom_kills: (oom_kills_at_start, cgroup::oom_kills()),
    };
    let verdict = classify::classify(&ending);
    let mut ran = config.clone();
    if let Some(version) = &reported.version {
        // The profile of the torch that ran, whatever the knob said.
        ran.knobs.torch = profile_of(version);
    }
    if let Some(sample) = &reported.sample {
        // A user's Dataset: the row says what went through /dev/shm, not the synthetic knobs.
        sample.describe(&mut ran.knobs);
    }
    // A step whose batch arrived but whose body did not finish (a worker died during the
    // training step) is the failed one, as in emulated cells.
    let obtained = reported.steps.obtained_s.len() as u64;
    let steps_done = reported.completed.unwrap_or(obtained).min(obtained);
    let mut message = hint_for(config, verdict.message);
    if config.knobs.pin_memory && !reported.accelerator && reported.version.is_some() {
        let note = "pin_memory was ignored: torch found no accelerator, so batches stayed in shared memory until dropped";
        message = if message.is_empty() {
            note.to_string()
        } else {
            format!("{message} [{note}]")
        };
    }
    // The interpreter has been waited for, and it reaped its workers: their CPU is ours now,
    // less what starting Python and importing torch cost before the loop.
    let usage = metrics::Usage::now();
    let cpu_s = (usage.cpu_s() - reported.cost.setup_cpu_s.unwrap_or(0.0)).max(0.0);
    let page_faults = usage
        .faults
        .saturating_sub(reported.cost.setup_faults.unwrap_or(0));
    let metrics = Metrics {
        peak_shm_bytes: meter.peak(),
        peak_rss_bytes: usage.peak_rss_bytes,
        cpu_s: Some(cpu_s),
        main_cpu_s: reported.cost.cpu_s,
        page_faults: Some(page_faults),
        wall_s: start.elapsed().as_secs_f64(),
        ..metrics::from_steps(config, &reported.steps, steps_done)
    };
    let failure = (!verdict.status.is_pass()).then(|| Failure {
        crash_step: steps_done + 1,
        signal: verdict.signal,
        pid: verdict.pid,
        shm_used_bytes: used_at_stop,
    });
    CellRecord {
        config: ran,
        status: verdict.status,
        message,
        failure,
        metrics,
        shm_seen_bytes: meter.capacity,
        series: reported.steps.series,
        torch_version: reported.version,
        exit_code: None,
        watch: None,
        explanation: None,
        pod: None,
        vm: None,
        slurm: None,
    }
}
