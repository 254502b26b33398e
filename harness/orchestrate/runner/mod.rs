//! Runs a list of resolved cells one after another (every cell `repeat` times, interleaved):
//! launches each through its runtime, turns each record into a results row and writes the CSV
//! after every cell, and stops cleanly on Ctrl-C. What happens is told to an observer as
//! [`Event`]s; the command line prints them.

use std::path::Path;
use std::time::Instant;

use anyhow::{anyhow, Result};

mod notes;
#[cfg(test)]
mod tests;

use super::calibrate;
use super::event::{Event, Place};
use super::launcher::Launcher;
use super::leftovers;
use cell::torch;
use model::calibration::Calibration;
use model::config::CellConfig;
use model::knobs::{EngineKind, IpcMode, Loader, RuntimeKind};
use model::record::CellRecord;
use model::repeat::Repeat;
use results::csv::ResultsFile;
use results::row_build::{command_line, RowContext};
use results::{steps, watch_file, Row};
use runtime::{CellMessage, Runtimes};
use sys::{clock, signals};

pub struct Outcome {
    /// Each finished cell's record (its row is in `results`).
    pub records: Vec<CellRecord>,
    pub results: ResultsFile,
    /// The signal that stopped the run early, if one did.
    pub interrupted: Option<i32>,
}

fn describe(config: &CellConfig) -> String {
    let shm = match (
        config.knobs.shm_size,
        config.knobs.runtime,
        config.knobs.ipc,
    ) {
        (Some(size), _, _) => size.to_string(),
        (None, RuntimeKind::Docker, IpcMode::Private | IpcMode::Shareable) => {
            "engine's default /dev/shm".into()
        }
        _ => "host /dev/shm".into(),
    };
    let mut runtime = config.knobs.runtime.to_string();
    if config.knobs.runtime == RuntimeKind::Docker
        && (config.knobs.engine != EngineKind::Docker || config.knobs.oci_runtime.named().is_some())
    {
        runtime = format!("{} {}", config.knobs.engine, config.knobs.oci_runtime);
    }
    if let Some(image) = &config.knobs.image {
        runtime = format!("{runtime} in {image}");
    }
    let what = match &config.watch {
        Some(w) => w.command.join(" ").chars().take(60).collect(),
        None => config.knobs.strategy.to_string(),
    };
    format!("{} ({runtime}, {shm}, {what})", config.cell)
}

/// Refuses up front, saying how to install torch, when a torch cell's Python cannot import it.
fn check_pythons(cells: &[CellConfig], observe: &mut dyn FnMut(Event)) -> Result<()> {
    let mut pythons: Vec<&str> = cells
        .iter()
        // A cell in a user's image runs the image's Python: the cell itself reports its torch.
        .filter(|c| c.knobs.loader == Loader::Torch && c.knobs.image.is_none())
        .map(|c| c.knobs.python.as_str())
        .collect();
    pythons.sort();
    pythons.dedup();
    for python in pythons {
        let found = torch::probe(python).map_err(|e| anyhow!("loader torch: {e}"))?;
        let accelerator = if found.accelerator {
            "with an accelerator"
        } else {
            "no accelerator: pin_memory is ignored"
        };
        observe(Event::Note(format!(
            "torch {} ({python}; {accelerator})",
            found.version
        )));
    }
    Ok(())
}

/// Which image a container engine runs, and whether this run built it.
fn image_note(docker: &runtime::docker::Docker) -> String {
    let under = format!(
        "{} {}",
        docker.engine().kind,
        docker.engine().info.oci_runtime
    );
    match docker.build_time {
        Some(took) => format!(
            "built image {} in {:.1} s ({under})",
            docker.image(),
            took.as_secs_f64()
        ),
        None => format!("using image {} ({under})", docker.image()),
    }
}

/// Removes what dead runs left (named segments, memory cgroups; containers when Docker is
/// used) and says so.
fn sweep_leftovers(runtimes: &Runtimes, observe: &mut dyn FnMut(Event)) {
    let engines: Vec<_> = runtimes.containers().iter().map(|d| d.engine()).collect();
    let swept = leftovers::sweep(&engines);
    if !swept.is_empty() {
        observe(Event::Swept(swept));
    }
}

/// Runs one cell, relaying its steps and output to `observe` under `label`.
fn launch_observed(
    launcher: &dyn Launcher,
    config: &CellConfig,
    label: &str,
    observe: &mut dyn FnMut(Event),
) -> CellRecord {
    let began = Instant::now();
    launcher.launch(config, &mut |message| match message {
        CellMessage::Progress(progress) => observe(Event::Step {
            label,
            progress,
            elapsed: began.elapsed(),
        }),
        CellMessage::Output(output) => observe(Event::Output(output)),
    })
}

/// This machine's data-path limits for the cells' strategies and profiles, measured first
/// unless the run skips it; none for a watched command, which has no data path of shmbench's.
fn calibration(
    cells: &[CellConfig],
    out: &Path,
    calibrate: Calibrate,
    observe: &mut dyn FnMut(Event),
) -> Option<Calibration> {
    match calibrate {
        Calibrate::First => {
            let loaders: Vec<CellConfig> = cells
                .iter()
                .filter(|c| c.knobs.loader != Loader::Command)
                .cloned()
                .collect();
            calibrate::for_cells(&loaders, out, observe)
        }
        Calibrate::Skip => {
            observe(Event::Note(
                "calibration skipped (--no-calibrate): the efficiency columns stay empty".into(),
            ));
            None
        }
    }
}

/// Whether a run first measures this machine's data path (memset, memcpy and fresh segments per
/// strategy: about a second with every core busy) for its rows' efficiency columns (img/s
/// against this machine's limit). `Skip` leaves those columns empty: for a check repeated on
/// every node every few minutes, where img/s against the other nodes is the measure and a
/// second of all cores each time is load on what it watches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Calibrate {
    First,
    Skip,
}

/// Runs every cell `repeat` times, interleaved (all cells, then all cells again) so a slow
/// spell of the machine spreads over cells instead of landing on one; writes `out` after each.
/// With `Repeat::Auto` a round runs only the cells that have not converged yet.
/// Runs added to a cell past its repeats while a judge wants them (`matrix --baseline
/// --max-repeat`: Chromium Pinpoint's way with an undecided comparison, more runs until it is
/// decided), up to a cap.
pub struct MoreRuns<'a> {
    /// The most runs any cell gets, its repeats included.
    pub up_to: u32,
    /// Whether a cell, with the rows it has so far, needs another run.
    pub wanted: &'a dyn Fn(&[Row]) -> bool,
}

/// Runs `cells`, each `repeat` times, in interleaved rounds.
pub fn run(
    cells: &[CellConfig],
    out: &Path,
    repeat: Repeat,
    calibrate: Calibrate,
    observe: &mut dyn FnMut(Event),
) -> Result<Outcome> {
    run_until(cells, out, repeat, None, calibrate, observe)
}

/// As [`run`], then more rounds for the cells `more` wants, up to its cap.
pub fn run_until(
    cells: &[CellConfig],
    out: &Path,
    repeat: Repeat,
    more: Option<&MoreRuns>,
    calibrate: Calibrate,
    observe: &mut dyn FnMut(Event),
) -> Result<Outcome> {
    // Before the runtimes are prepared: a Ctrl-C while an engine starts (a Podman service)
    // stops the run before its first cell.
    signals::install();
    let runtimes = Runtimes::for_cells(cells)?;
    check_pythons(cells, observe)?;
    sweep_leftovers(&runtimes, observe);
    for docker in runtimes.containers() {
        observe(Event::Note(image_note(docker)));
    }
    let plan = Plan {
        cells,
        repeat,
        more,
    };
    let results = ResultsFile::create(out)?;
    let calibration = calibration(cells, out, calibrate, observe);
    rounds(&runtimes, &plan, results, calibration.as_ref(), observe)
}

/// What a run is asked to do: its cells, their repeats, and the runs a judge may add.
pub struct Plan<'a> {
    pub cells: &'a [CellConfig],
    pub repeat: Repeat,
    pub more: Option<&'a MoreRuns<'a>>,
}

/// The run's rounds through `launcher`: each due cell launched, its row written into `results`
/// before the next starts, until the rounds end or the launcher says the user stopped it.
pub fn rounds(
    launcher: &dyn Launcher,
    plan: &Plan,
    mut results: ResultsFile,
    calibration: Option<&Calibration>,
    observe: &mut dyn FnMut(Event),
) -> Result<Outcome> {
    let Plan {
        cells,
        repeat,
        more,
    } = *plan;
    let mut fingerprint = sys::fingerprint::collect();
    let started_at = clock::rfc3339_now();
    let run_id = format!("{}-{}", clock::compact_now(), std::process::id());
    // What every row of this run shares.
    let run_context = RowContext {
        run_id: &run_id,
        started_at: &started_at,
        command: command_line(),
        calibration,
        ..RowContext::default()
    };
    let mut records = Vec::new();
    let repeats = repeat.max_rounds();
    let rounds = more.map_or(repeats, |m| m.up_to.max(repeats));
    let mut added = vec![0u32; cells.len()];
    let mut interrupted = None;
    // Each cell's rows, by index, to judge convergence.
    let mut rows_of: Vec<Vec<Row>> = vec![Vec::new(); cells.len()];
    let mut done = 0usize;
    let most = cells.len() * rounds as usize;
    let of = match (repeat, more) {
        (Repeat::Fixed(_), None) => most.to_string(),
        _ => format!("up to {most}"),
    };
    'rounds: for rep in 1..=rounds {
        let due: Vec<usize> = (0..cells.len())
            .filter(|&i| match (repeat, more) {
                (_, Some(more)) if rep > repeats => (more.wanted)(&rows_of[i]),
                (Repeat::Fixed(_), _) => true,
                (Repeat::Auto(rule), _) => {
                    rep <= rule.min || !notes::stable(&rows_of[i], rule.target)
                }
            })
            .collect();
        if due.is_empty() {
            break;
        }
        for i in due {
            if let Some(sig) = launcher.interrupted() {
                interrupted = Some(sig);
                break 'rounds;
            }
            let config = &cells[i];
            done += 1;
            if rep > repeats {
                added[i] += 1;
            }
            let label = match (repeat, rounds) {
                (Repeat::Fixed(_), 1) => format!("[{done}/{of}] {}", describe(config)),
                _ => format!("[{done}/{of}] {} run {rep}/{rounds}", describe(config)),
            };
            observe(Event::Started {
                label: &label,
                place: Place { done, most },
            });
            let began = Instant::now();
            let record = launch_observed(launcher, config, &label, observe);
            if let Some(sig) = launcher.interrupted() {
                observe(Event::Interrupted { label: &label });
                interrupted = Some(sig);
                break 'rounds;
            }
            let context = RowContext {
                repeat: rep,
                steps_file: Some(steps::write(results.path(), &record, rep)?),
                watch_file: watch_file::write(results.path(), &record, rep)?,
                ..run_context.clone()
            };
            // A container cell's engine and OCI runtime are the cell's own part of it.
            fingerprint.docker = launcher.engine(config);
            results.push(Row::new(&record, &fingerprint, context))?;
            let row = results.rows().last().expect("just pushed");
            rows_of[i].push(row.clone());
            observe(Event::Finished {
                label: &label,
                row,
                elapsed: began.elapsed(),
            });
            records.push(record);
        }
    }
    if let (Repeat::Auto(rule), None) = (repeat, interrupted) {
        observe(Event::Note(notes::convergence_note(
            cells,
            &rows_of,
            rule.target,
        )));
    }
    if let (Some(more), None) = (more, interrupted) {
        observe(Event::Note(notes::more_runs_note(
            cells, &rows_of, &added, more,
        )));
    }
    Ok(Outcome {
        records,
        results,
        interrupted,
    })
}
