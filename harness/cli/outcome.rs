//! How `matrix` and `run` end: the repeated-run summary, the matrix table and its notes, where the
//! results are, and the exit status of a run stopped by a signal (128 + its number).

use std::process::ExitCode;

use crate::analysis::compare::summarize;
use crate::orchestrate::runner::Outcome;
use crate::present::{compare, matrix};
use crate::sys::signals;

pub fn print(outcome: &Outcome) {
    let rows = outcome.results.rows();
    if rows.iter().any(|r| r.repeat > 1) {
        // Repeated: one line per cell with its statistics, then the first run's matrix.
        println!("{}\n", compare::render_summary(&summarize(rows)));
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
    println!(
        "results: {} ({} rows)",
        outcome.results.path().display(),
        rows.len()
    );
}

pub fn exit_code(outcome: &Outcome) -> ExitCode {
    match outcome.interrupted {
        Some(sig) => {
            eprintln!(
                "stopped by {}: {} cell(s) finished and are in {}",
                signals::name(sig),
                outcome.records.len(),
                outcome.results.path().display()
            );
            ExitCode::from(128 + sig as u8)
        }
        None => ExitCode::SUCCESS,
    }
}
