//! Rows from a Slurm job array (`shmbench slurm collect`): each task's output file holds the
//! line naming the cell it ran and then the cell's record; Slurm's word on how the task ended
//! (`model::slurm_task::TaskEnd`) gives the row of a task the scheduler ended before its record
//! (OUT_OF_MEMORY, TIMEOUT, CANCELLED, ...), its status and Slurm's reason, as `k8s collect`
//! does for pods. Output files are untrusted text: a record whose names cannot be file names is
//! named and skipped, and a task's record is taken only from that task's own output file (its
//! name, `shmbench-JOB_TASK.out`, must name the task the record names), so that a file whose
//! name sorts first cannot speak for another task.

use std::collections::BTreeMap;

use super::output::{TaskFile, TaskOutput};
use crate::k8s::collect::Collected;
use crate::slurm::output;
use model::record::{CellRecord, Status};
use model::slurm_task::TaskEnd;
use results::row::Row;
use results::row_build::{command_line, Placement, RowContext};

/// The rows of the tasks' files and ends; `run_id` and `started_at` as a run's.
pub fn collect(
    files: Vec<TaskFile>,
    ends: &[TaskEnd],
    run_id: &str,
    started_at: &str,
) -> Collected {
    let mut notes = Vec::new();
    let ended: BTreeMap<String, &TaskEnd> = ends.iter().map(|e| (e.name(), e)).collect();
    let mut entries = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for TaskFile { file, output } in files {
        let Some((name, record)) = task_record(&file, output, &ended, &mut notes) else {
            continue;
        };
        if let Some(first) = seen.get(&name) {
            notes.push(format!(
                "task {name}: a second output file of it ({file}) beside {first}: the first is kept, check which is the task's"
            ));
            continue;
        }
        seen.insert(name.clone(), file);
        entries.push((order(&name), name, record));
    }
    for (name, end) in &ended {
        if !seen.contains_key(name) && end.ended() {
            notes.push(format!(
                "task {name}: {} and no output file of it was given (it never started, or its file is elsewhere): no row",
                end.state
            ));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut runs: BTreeMap<(String, String), u32> = BTreeMap::new();
    let rows = entries
        .into_iter()
        .map(|(_, name, record)| {
            let c = &record.config;
            let n = runs
                .entry((c.scenario.clone(), c.cell.clone()))
                .or_default();
            *n += 1;
            let end = ended.get(&name);
            let slurm = record.slurm.as_ref();
            let mut fp = slurm.map(|s| s.fingerprint.clone()).unwrap_or_default();
            let node = slurm
                .and_then(|s| s.node.clone())
                .or_else(|| end.and_then(|e| e.node.clone()));
            if let Some(node) = &node {
                fp.host = node.clone();
            }
            let placement = Placement {
                node,
                shm_bytes: c.knobs.shm_size.map(|s| s.bytes()),
                slurm_state: end.map(|e| e.state.clone()),
                ..Placement::default()
            };
            let context = RowContext {
                run_id,
                started_at,
                repeat: *n,
                command: command_line(),
                placement: Some(placement),
                ..RowContext::default()
            };
            let row = Row::new(&record, &fp, context);
            let series = (!record.series.is_empty()).then_some(record);
            (row, series)
        })
        .collect();
    Collected { rows, notes }
}

/// The record of one task (its own, or one made from Slurm's word on its end: `doctor
/// --verify --platform slurm`), and what was noticed on the way.
pub fn task_result(
    file: &str,
    output: TaskOutput,
    ends: &[TaskEnd],
) -> (Option<CellRecord>, Vec<String>) {
    let ended: BTreeMap<String, &TaskEnd> = ends.iter().map(|e| (e.name(), e)).collect();
    let mut notes = Vec::new();
    let record = task_record(file, output, &ended, &mut notes).map(|(_, r)| r);
    (record, notes)
}

/// The record of one task's file (its own, or one made from Slurm's word on its end), with
/// the task's name; None (and a note) for a file that gives no row.
fn task_record(
    file: &str,
    output: TaskOutput,
    ended: &BTreeMap<String, &TaskEnd>,
    notes: &mut Vec<String>,
) -> Option<(String, CellRecord)> {
    for problem in &output.bad {
        notes.push(format!(
            "{file}, {problem}: not a record of this shmbench; skipped"
        ));
    }
    let name = own_task(file, &output, notes)?;
    let slurm = output
        .record
        .as_ref()
        .and_then(|r| r.slurm.clone())
        .or_else(|| output.start.as_ref().and_then(|s| s.slurm.clone()));
    let end = ended.get(&name);
    if let Some(mut record) = output.record {
        // A cell that could not finish (stopped by the scheduler's SIGTERM) says error; Slurm
        // says why.
        let by_scheduler = end.filter(|e| e.by_scheduler());
        if let Some((status, words)) = by_scheduler.and_then(|e| ending(e)) {
            if record.status == Status::Error {
                record.status = status;
                record.message = format!("{words}; the cell said: {}", record.message);
            }
        }
        return Some((name, record));
    }
    let Some(start) = output.start else {
        notes.push(format!(
            "{file}: no task of `shmbench slurm task` wrote it; skipped"
        ));
        return None;
    };
    let (status, message) = match end {
        Some(end) if !end.ended() => {
            notes.push(format!("task {name}: {}, no result yet", end.state));
            return None;
        }
        Some(end) => ending(end)
            .map(|(status, how)| (status, format!("{how}; the task left no record")))
            .unwrap_or_else(|| {
            (
                Status::Error,
                format!("{}, yet its output holds no record (cut short?)", end.describe()),
            )
        }),
        None => (
            Status::Error,
            "the task left no record, and Slurm could not say how it ended (no accounting, and the controller no longer holds the job): pass --jobcomp FILE".into(),
        ),
    };
    notes.push(format!(
        "task {name}: {status} from Slurm's word ({message})"
    ));
    let mut record = CellRecord::failed_to_run(start.config, status, message);
    record.slurm = slurm;
    Some((name, record))
}

/// The task a file's name says it is the output of (`shmbench-12_3.out`: `12_3`), read by the
/// rule that names them (`crate::slurm::output`).
fn task_of_file(file: &str) -> Option<String> {
    output::task_of(std::path::Path::new(file).file_name()?.to_str()?)
}

/// The task whose record `output` may give: the one its file is named for, when every line of
/// it that names a task names that one; None (and a note naming the file) otherwise.
fn own_task(file: &str, output: &TaskOutput, notes: &mut Vec<String>) -> Option<String> {
    let Some(own) = task_of_file(file) else {
        if output.record.is_some() || output.start.is_some() {
            notes.push(format!(
                "{file}: not named as a task's output file (shmbench-JOB_TASK.out), so the task its lines name cannot be trusted to be its own; skipped"
            ));
        }
        return None;
    };
    let claimed = [
        output.start.as_ref().and_then(|s| s.slurm.as_ref()),
        output.record.as_ref().and_then(|r| r.slurm.as_ref()),
    ];
    for task in claimed.into_iter().flatten() {
        let name = task.name();
        if name != own {
            notes.push(format!(
                "{file}: holds a record of task {} though it is task {own}'s file: forged or misplaced, skipped",
                results::log_lines::excerpt(&name)
            ));
            return None;
        }
    }
    Some(own)
}

/// What this end means for a cell that printed no record: its status and the words for it;
/// None for a task that completed (its record is what tells) or has not ended.
fn ending(end: &TaskEnd) -> Option<(Status, String)> {
    let how = end.describe();
    let status = match end.state.as_str() {
        "COMPLETED" => return None,
        _ if !end.ended() => return None,
        "OUT_OF_MEMORY" => {
            return Some((
                Status::Oom,
                format!("{how}: the job's memory (--mem), which its /dev/shm pages count against with ConstrainRAMSpace"),
            ))
        }
        "TIMEOUT" | "DEADLINE" => Status::Timeout,
        "PREEMPTED" => Status::Evicted,
        _ => Status::Error,
    };
    Some((status, how))
}

/// Tasks in array order: the array's job id as a number, then the task.
fn order(name: &str) -> (u64, u64, String) {
    let (job, task) = name.split_once('_').unwrap_or((name, ""));
    (
        job.parse().unwrap_or(u64::MAX),
        task.parse().unwrap_or(0),
        name.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_the_scheduler_ended_has_the_status_its_state_names() {
        let read = |line: &str| ending(&TaskEnd::from_sacct(line).unwrap()).map(|e| e.0);
        assert_eq!(
            read("12_2|14|OUT_OF_MEMORY|0:125|vm|None"),
            Some(Status::Oom)
        );
        assert_eq!(read("20|20|TIMEOUT|0:0|vm|None"), Some(Status::Timeout));
        assert_eq!(read("20|20|PREEMPTED|0:0|vm|None"), Some(Status::Evicted));
        assert_eq!(
            read("12_3|15|CANCELLED by 0|0:0|vm|None"),
            Some(Status::Error)
        );
        assert_eq!(read("20|20|COMPLETED|0:0|vm|None"), None);
        assert_eq!(read("20|20|RUNNING|0:0|vm|None"), None);
        let (_, words) =
            ending(&TaskEnd::from_sacct("12_2|14|OUT_OF_MEMORY|0:125|vm|None").unwrap()).unwrap();
        assert!(
            words.contains("12_2 OUT_OF_MEMORY with exit 0:125"),
            "{words}"
        );
    }

    #[test]
    fn only_a_tasks_own_file_names_it() {
        assert_eq!(
            task_of_file("/d/shmbench-500_0.out").as_deref(),
            Some("500_0")
        );
        assert_eq!(task_of_file("shmbench-77.out").as_deref(), Some("77"));
        for bad in [
            "/d/shmbench-500_.out",
            "shmbench-500_0.out.bak",
            "x-500_0.out",
            "shmbench-_0.out",
        ] {
            assert_eq!(task_of_file(bad), None, "{bad}");
        }
    }
}
