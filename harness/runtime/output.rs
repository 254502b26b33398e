//! What every runtime does with a running cell's output: relay its progress lines, keep the tail
//! of anything else it printed, decide when the harness must end it (Ctrl-C, no progress), and
//! turn what it printed into its record.

use std::time::{Duration, Instant};

use super::launch::CellMessage;
use model::config::CellConfig;
use model::record::{CellRecord, Status};
use sys::signals;

/// Extra time the harness allows beyond the cell's own no-progress watchdog before it ends the
/// cell from outside (start-up, teardown, an image build is not counted).
const HARD_DEADLINE_SLACK: Duration = Duration::from_secs(20);

/// Lines kept from a cell's stderr for error messages.
const TAIL_LINES: usize = 20;

/// Why the harness ended a cell from outside.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HarnessEnd {
    /// The harness got this signal (Ctrl-C, TERM): the cell is not a measurement.
    Interrupted(i32),
    /// The cell made no progress for this long: a timeout outcome.
    NoProgress(Duration),
}

impl HarnessEnd {
    /// The status of a cell the harness ended this way.
    pub fn status(self) -> Status {
        match self {
            HarnessEnd::Interrupted(_) => Status::Error,
            HarnessEnd::NoProgress(_) => Status::Timeout,
        }
    }
}

impl std::fmt::Display for HarnessEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HarnessEnd::Interrupted(sig) => write!(f, "interrupted by {}", signals::name(*sig)),
            HarnessEnd::NoProgress(limit) => write!(
                f,
                "the cell made no progress for {:.0} s and was ended by the harness",
                limit.as_secs_f64()
            ),
        }
    }
}

/// Watches one running cell's stderr lines and the clock.
pub struct Monitor<'a> {
    progress: &'a mut dyn FnMut(CellMessage),
    last_progress: Instant,
    no_progress_limit: Duration,
    stderr_tail: Vec<String>,
    stdout: String,
}

impl<'a> Monitor<'a> {
    pub fn new(config: &CellConfig, progress: &'a mut dyn FnMut(CellMessage)) -> Monitor<'a> {
        Monitor {
            progress,
            last_progress: Instant::now(),
            no_progress_limit: Duration::from_secs_f64(config.knobs.timeout_s)
                + HARD_DEADLINE_SLACK,
            stderr_tail: Vec::new(),
            stdout: String::new(),
        }
    }

    /// One line the cell wrote on stderr.
    pub fn stderr_line(&mut self, line: &str) {
        match CellMessage::parse(line) {
            Some(report) => {
                if matches!(report, CellMessage::Progress(_)) {
                    self.last_progress = Instant::now();
                }
                (self.progress)(report);
            }
            None => {
                self.stderr_tail.push(line.to_string());
                if self.stderr_tail.len() > TAIL_LINES {
                    self.stderr_tail.remove(0);
                }
            }
        }
    }

    /// Text the cell wrote on stdout (its record).
    pub fn stdout(&mut self, text: &str) {
        self.stdout.push_str(text);
    }

    /// Why the harness must end the cell now, if it must.
    pub fn must_end(&self) -> Option<HarnessEnd> {
        if let Some(sig) = signals::received() {
            return Some(HarnessEnd::Interrupted(sig));
        }
        (self.last_progress.elapsed() > self.no_progress_limit)
            .then_some(HarnessEnd::NoProgress(self.no_progress_limit))
    }

    /// The cell's record: the one it printed, or one that says why there is none.
    /// `ended_by_harness` is what `must_end` returned; `how` says how the cell process ended.
    pub fn into_record(
        self,
        config: &CellConfig,
        ended_by_harness: Option<HarnessEnd>,
        how: &str,
    ) -> CellRecord {
        let fail = |status, message| CellRecord::failed_to_run(config.clone(), status, message);
        if let Some(end) = ended_by_harness {
            return fail(end.status(), end.to_string());
        }
        let record_line = self.stdout.lines().rev().find(|l| !l.trim().is_empty());
        match record_line.map(serde_json::from_str::<CellRecord>) {
            Some(Ok(record)) => record,
            Some(Err(e)) => fail(
                Status::Error,
                format!("the cell printed a record this harness cannot read: {e}"),
            ),
            None => fail(
                Status::Error,
                format!(
                    "the cell {how} without printing a record. stderr: {}",
                    self.stderr_tail.join(" | ")
                ),
            ),
        }
    }
}
