//! A history's columns as people read them: a run's value of the field (sizes in units), and
//! the column's name, told apart by its run where two runs share a value on one host.

use analysis::history::{By, History, Run};
use model::size::ByteSize;

/// A run's value of the field, as people read it (sizes in units).
pub fn run_label(h: &History, r: &Run) -> String {
    match (h.by, r.label.parse::<u64>()) {
        (By::Shm, Ok(bytes)) => ByteSize(bytes).to_string(),
        _ => r.label.clone(),
    }
}

/// A run's column as the table heads it: its value and host, and its run where another run has
/// the same value on the same host (two matrices under runc).
pub fn column_name(h: &History, i: usize) -> String {
    let r = &h.runs[i];
    let twin =
        (h.runs.iter()).any(|o| o.label == r.label && o.host == r.host && o.run_id != r.run_id);
    match twin {
        true => format!("{} ({}, run {})", run_label(h, r), r.host, r.run_id),
        false => format!("{} ({})", run_label(h, r), r.host),
    }
}
