//! A Slurm array task's output file, read as untrusted text: the line naming the cell the task
//! said it would run (`model::slurm::TaskStart`), the record it printed, and the lines that
//! looked like either and were not. The cell's relayed stderr may be in it too; it is read a
//! line at a time, each line bounded (`logged::MAX_LINE`), since the file is whatever the task
//! printed.

use std::path::Path;

use anyhow::{Context, Result};

use super::logged::{each_line, looks_like_record, read_line, too_long, Line};
use model::record::CellRecord;
use model::slurm::{TaskStart, START_MARK};
use model::slurm_output::is_number;

/// What one task's output file holds: the cell it said it would run, the record it printed,
/// and the lines that looked like either and were not.
#[derive(Default)]
pub struct TaskOutput {
    pub start: Option<TaskStart>,
    pub record: Option<CellRecord>,
    pub bad: Vec<String>,
}

impl TaskOutput {
    /// Reads a task's output file (the cell's relayed stderr may be in it too), a line at a
    /// time and each up to `logged::MAX_LINE`.
    pub fn read_from(reader: impl std::io::BufRead) -> std::io::Result<TaskOutput> {
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
    pub fn read(text: &str) -> TaskOutput {
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
    pub file: String,
    pub output: TaskOutput,
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
    fn an_output_file_names_its_cell_before_its_record() {
        let text = "shmbench-slurm-task {\"index\": 1}\n{\"config\": 2}\nprogress\n";
        let out = TaskOutput::read(text);
        assert!(out.start.is_none() && out.record.is_none());
        assert_eq!(out.bad.len(), 2, "both lines named: {:?}", out.bad);
    }
}
