//! The name of an array task's output file, `shmbench-JOB_TASK.out` (`shmbench-JOB.out` outside
//! an array), spelled here and nowhere else: the batch script hands sbatch its [`pattern`],
//! and `slurm collect` reads the task back from a file's name ([`task_of`]), since a record is
//! trusted only in its own task's file. One spelling keeps the two sides from drifting apart:
//! a file the script made that the collector would not read as its task's.
//!
//! Then the file itself, read as untrusted text ([`TaskOutput`]): the line naming the cell the
//! task said it would run (`model::slurm_task::TaskStart`), the record it printed, and the lines that
//! looked like either and were not. The cell's relayed stderr may be in it too; it is read a
//! line at a time, each line bounded (`log_lines::MAX_LINE`), since the file is whatever the task
//! printed.

use anyhow::{Context, Result};
use model::record::CellRecord;
use model::slurm_task::{TaskStart, START_MARK};
use results::log_lines::{each_line, looks_like_record, read_line, too_long, Line};
use std::path::Path;

/// What every task's output file name starts and ends with.
const PREFIX: &str = "shmbench-";
const SUFFIX: &str = ".out";

/// The output file name of the task Slurm calls `task` (`12_3`; `12` outside an array), or,
/// for `%A_%a`, the pattern itself: the one place the name is put together.
fn file_name(task: &str) -> String {
    format!("{PREFIX}{task}{SUFFIX}")
}

/// The tasks' output file name as sbatch's `--output` takes it: `%A` the array's job id, `%a`
/// the task's index (put after the output directory, whose own `%` are escaped).
pub(crate) fn pattern() -> String {
    file_name("%A_%a")
}

/// The name Slurm gives task `task` of array `job` from [`pattern`] (`shmbench-12_3.out`).
pub fn of_task(job: &str, task: u64) -> String {
    file_name(&format!("{job}_{task}"))
}

/// The task a file's name says it is the output of (`shmbench-12_3.out`: `12_3`;
/// `shmbench-77.out`: `77`), as `SlurmTask::name` names it; None for any other name.
pub(crate) fn task_of(file_name: &str) -> Option<String> {
    let id = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let ok = match id.split_once('_') {
        Some((job, task)) => is_number(job) && is_number(task),
        None => is_number(id),
    };
    ok.then(|| id.to_string())
}

/// Whether a file name claims to be an output file of job `job`'s tasks: named for the job, a
/// task's file or not (`shmbench-12_x.out` too), so that a misnamed one is read and named as
/// such, not passed over in silence.
pub fn claims_job(file_name: &str, job: &str) -> bool {
    let Some(id) = file_name
        .strip_prefix(PREFIX)
        .and_then(|n| n.strip_suffix(SUFFIX))
    else {
        return false;
    };
    id == job || id.strip_prefix(job).is_some_and(|t| t.starts_with('_'))
}

/// Whether a file name may be an output file at all (for a directory given whole).
pub fn may_be_output(file_name: &str) -> bool {
    file_name.ends_with(SUFFIX)
}

/// Whether `text` is a Slurm job id or task index: decimal digits.
pub fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// What one task's output file holds: the cell it said it would run, the record it printed,
/// and the lines that looked like either and were not.
#[derive(Default)]
pub struct TaskOutput {
    pub(crate) start: Option<TaskStart>,
    pub(crate) record: Option<CellRecord>,
    pub(crate) bad: Vec<String>,
}

impl TaskOutput {
    /// Reads a task's output file (the cell's relayed stderr may be in it too), a line at a
    /// time and each up to `log_lines::MAX_LINE`.
    pub(crate) fn read_from(reader: impl std::io::BufRead) -> std::io::Result<TaskOutput> {
        let mut out = TaskOutput::default();
        each_line(reader, |n, line| match line {
            Line::TooLong(length) => out.bad.push(too_long(n, length)),
            Line::Text(line) => out.take(n, line.trim()),
        })?;
        Ok(out)
    }

    /// Reads the task output file at `path`.
    pub fn read_path(path: &Path) -> std::io::Result<TaskOutput> {
        std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .and_then(TaskOutput::read_from)
    }

    /// Reads a task's output file held as text.
    #[cfg(test)]
    pub(crate) fn read(text: &str) -> TaskOutput {
        // Reading from memory cannot fail.
        Self::read_from(text.as_bytes()).unwrap_or_default()
    }

    /// Takes line `n`, if it is a start line or a record.
    fn take(&mut self, n: usize, line: &str) {
        if let Some(json) = line.strip_prefix(START_MARK) {
            match read_line::<TaskStart>(json.trim(), n, |s| &s.config) {
                Ok(start) => self.start = Some(start),
                Err(e) => self.bad.push(e.to_string()),
            }
        } else if looks_like_record(line) {
            match read_line::<CellRecord>(line, n, |r| &r.config) {
                Ok(record) => self.record = Some(record),
                Err(e) => self.bad.push(e.to_string()),
            }
        }
    }
}

/// One task's output file: its name (for notes) and what it holds.
pub struct TaskFile {
    pub(crate) file: String,
    pub(crate) output: TaskOutput,
}

impl TaskFile {
    /// Reads the task output file at `path`.
    pub fn read(path: &Path) -> Result<TaskFile> {
        let output = TaskOutput::read_path(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(TaskFile {
            file: path.display().to_string(),
            output,
        })
    }

    /// The job Slurm is to be asked about for this file's task: the array its start line says
    /// it belongs to (or its own job outside an array), where that is a job id.
    pub fn job(&self) -> Option<String> {
        let slurm = self.output.start.as_ref()?.slurm.as_ref()?;
        let job = slurm.array_job_id.as_ref().unwrap_or(&slurm.job_id);
        is_number(job).then(|| job.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_a_task_is_given_reads_back_as_that_task() {
        assert_eq!(pattern(), "shmbench-%A_%a.out");
        let name = of_task("500", 7);
        assert_eq!(name, "shmbench-500_7.out");
        assert_eq!(task_of(&name).as_deref(), Some("500_7"));
        assert_eq!(task_of("shmbench-77.out").as_deref(), Some("77"));
        for bad in [
            "shmbench-500_.out",
            "shmbench-500_0.out.bak",
            "x-500_0.out",
            "shmbench-_0.out",
            "shmbench-%A_%a.out",
        ] {
            assert_eq!(task_of(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_jobs_files_are_those_named_for_it_misnamed_ones_included() {
        for name in [
            "shmbench-500_0.out",
            "shmbench-500_.out",
            "shmbench-500.out",
        ] {
            assert!(claims_job(name, "500"), "{name}");
        }
        for name in [
            "shmbench-5000_0.out",
            "shmbench-50_0.out",
            "shmbench-500_0.log",
        ] {
            assert!(!claims_job(name, "500"), "{name}");
        }
    }

    // The file read back.

    #[test]
    fn an_output_file_names_its_cell_before_its_record() {
        let text = "shmbench-slurm-task {\"index\": 1}\n{\"config\": 2}\nprogress\n";
        let out = TaskOutput::read(text);
        assert!(out.start.is_none() && out.record.is_none());
        assert_eq!(out.bad.len(), 2, "both lines named: {:?}", out.bad);
    }
}
