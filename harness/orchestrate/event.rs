//! What orchestration tells whoever watches it: notes and per-cell progress. The command line
//! prints them; nothing below the command line prints to the terminal.

use std::time::Duration;

use super::leftovers::Swept;
use results::Row;
use runtime::{Output, Progress};

/// A cell's place in its run: this is the `done`th to start, of at most `most` (fewer when
/// `--repeat auto` stops cells early).
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub done: usize,
    pub most: usize,
}

/// What a run tells whoever watches it.
pub enum Event<'a> {
    /// Something done around the cells (a sweep of leftovers, the image, the calibration).
    Note(String),
    /// What dead runs left, removed at the start of a run.
    Swept(Swept),
    /// A cell is starting; `label` names it and its place in the run (`[2/5] docker-tuned (...)`),
    /// `place` counts it.
    Started { label: &'a str, place: Place },
    /// The running cell reported a step.
    Step {
        label: &'a str,
        progress: Progress,
        elapsed: Duration,
    },
    /// A line a watched command printed (`shmbench watch`), for its own stream.
    Output(Output),
    /// The cell ended and its row is in the results file.
    Finished {
        label: &'a str,
        row: &'a Row,
        elapsed: Duration,
    },
    /// Ctrl-C or SIGTERM ended the cell; it is not recorded.
    Interrupted { label: &'a str },
}
