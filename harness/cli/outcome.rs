//! How `matrix` and `run` end: the repeated-run summary, the matrix table and its notes, where the
//! results are, and the exit status of a run stopped by a signal (128 + its number).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::analysis::summary::summarize;
use crate::model::record::{CellRecord, Status};
use crate::orchestrate::runner::Outcome;
use crate::plan::scenario::default_results_path;
use crate::present::report::{self, FormatName, ReportContent};
use crate::present::{compare_tables, matrix};
use crate::results::csv::{ClaimedName, ResultsFile};
use crate::results::steps;
use crate::results::Row;
use crate::sys::signals;

/// Where a run's rows go: `out` as the user named it, else `results/<name>-<UTC time>.csv`
/// claimed for this run alone (`-2`, `-3`, ... when another run took it in the same second).
/// Hold the claim until the run has ended: dropped with no row written, it removes the file.
pub(crate) fn results_out(
    out: Option<PathBuf>,
    name: &str,
) -> anyhow::Result<(PathBuf, Option<ClaimedName>)> {
    use anyhow::Context;
    match out {
        Some(path) => Ok((path, None)),
        None => {
            let preferred = default_results_path(name);
            let claim = ClaimedName::claim(&preferred).with_context(|| {
                format!("cannot create the results file {}", preferred.display())
            })?;
            Ok((claim.path().to_path_buf(), Some(claim)))
        }
    }
}

pub(crate) fn print(outcome: &Outcome) {
    // Stopped before any cell finished: `stopped` says so, and there is no table or file.
    if outcome.results.rows().is_empty() && outcome.interrupted.is_some() {
        return;
    }
    print_rows(outcome.results.rows(), outcome.results.path());
}

/// The summary, the first runs' matrix and its notes, and where the rows are.
pub(crate) fn print_rows(rows: &[Row], path: &Path) {
    if rows.iter().any(|r| r.repeat > 1) {
        // Repeated: one line per cell with its statistics, then the first run's matrix.
        println!("{}\n", compare_tables::render_summary(&summarize(rows)));
        println!("The first run of each cell (the medians are above):\n");
    }
    let first: Vec<_> = rows.iter().filter(|r| r.repeat == 1).cloned().collect();
    println!("{}", matrix::matrix(&first));
    let notes = matrix::notes(&first);
    if !notes.is_empty() {
        println!();
        for n in notes {
            println!("- {n}");
        }
    }
    println!();
    println!("results: {} ({} rows)", path.display(), rows.len());
}

/// Writes a fleet's collected rows (each with the record its steps file comes from, where it
/// printed one) to `out`, else `results/<scenario>-<fleet>-<time>.csv`; prints them and writes
/// the report beside (`k8s collect`, `slurm collect`).
pub(crate) fn write_collected(
    rows: Vec<(Row, Option<CellRecord>)>,
    out: Option<PathBuf>,
    fleet: &str,
) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let scenario = rows
        .first()
        .map(|(r, _)| r.scenario.clone())
        .unwrap_or_default();
    let (out, _claim) = results_out(out, &format!("{scenario}-{fleet}"))?;
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut results = ResultsFile::create(&out)?;
    for (mut row, record) in rows {
        if let Some(record) = &record {
            row.steps_file = Some(steps::write(results.path(), record, row.repeat)?);
        }
        results.push(row)?;
    }
    print_rows(results.rows(), results.path());
    write_report(&out);
    Ok(ExitCode::SUCCESS)
}

/// Writes the report of results file `out` (Markdown, HTML, JSON) into its default directory and
/// prints where; returns that directory, or None (said on stderr) when it could not be written.
/// A run's results stand without their report, so this never fails the run.
pub(crate) fn write_report(out: &Path) -> Option<PathBuf> {
    let dir = report::default_dir(out);
    match ReportContent::load(&[out.to_path_buf()]).and_then(|r| r.write(&dir, &FormatName::ALL)) {
        Ok(files) => {
            println!("report: {}", files[0].display());
            Some(dir)
        }
        Err(e) => {
            eprintln!("shmbench: the report could not be written: {e:#}");
            None
        }
    }
}

/// What besides a cell that could not run makes `run` and `matrix` exit non-zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FailOn {
    /// A cell that crashed (SIGBUS, ENOSPC, the OOM killer, ...): exit 1. For burn-in and
    /// prolog jobs, where a crash is the answer that matters.
    Crash,
}

/// `run`'s and `matrix`'s exit status when a cell crashed and `--fail-on crash` was given.
pub(crate) const EXIT_CRASHED: u8 = 1;
/// `run`'s and `matrix`'s exit status when a cell ended in `error`, not in a crash it measured
/// (its runtime refused it, a worker died of another signal, the harness failed).
pub(crate) const EXIT_CELL_ERROR: u8 = 4;

/// How a run that was not stopped ended: 4 when a cell ended in `error`, else 1 when `fail_on`
/// asks it of a crash and a cell crashed, else 0 (a crash is a measurement, not a failure).
pub(crate) fn exit_code(outcome: &Outcome, fail_on: Option<FailOn>) -> ExitCode {
    if outcome.interrupted.is_some() {
        return stopped(outcome);
    }
    let errors: Vec<&CellRecord> = outcome
        .records
        .iter()
        .filter(|r| r.status == Status::Error)
        .collect();
    if let Some(first) = errors.first() {
        eprintln!(
            "{} cell(s) ended in error, not in a measured crash (exit {EXIT_CELL_ERROR}); the first, {}: {}",
            errors.len(),
            first.config.cell,
            crate::present::terminal::shown(&first.message)
        );
        return ExitCode::from(EXIT_CELL_ERROR);
    }
    let crashed = outcome
        .records
        .iter()
        .filter(|r| !r.status.is_pass())
        .count();
    if fail_on == Some(FailOn::Crash) && crashed > 0 {
        eprintln!("{crashed} cell(s) crashed (--fail-on crash: exit {EXIT_CRASHED})");
        return ExitCode::from(EXIT_CRASHED);
    }
    ExitCode::SUCCESS
}

/// The exit status of a run stopped by a signal (128 + its number), saying what was kept.
pub(crate) fn stopped(outcome: &Outcome) -> ExitCode {
    match outcome.interrupted {
        Some(sig) => {
            let (finished, path) = (outcome.records.len(), outcome.results.path().display());
            let kept = match finished {
                // Nothing was written: an earlier file at that path is as it was, or none is.
                0 => format!("no cell finished; {path} was not written"),
                n => format!("{n} cell(s) finished and are in {path}"),
            };
            eprintln!("stopped by {}: {kept}", signals::name(sig));
            ExitCode::from(128 + sig as u8)
        }
        None => ExitCode::SUCCESS,
    }
}
