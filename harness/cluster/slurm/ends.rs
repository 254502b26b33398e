//! How Slurm says a job's tasks ended ([`TaskEnd`]), asked where it may be known: `sacct`
//! where the cluster keeps accounting, else the controller's memory of the jobs (`scontrol -o
//! show job`), else the `jobcomp/filetxt` log (the one given, or the one the cluster's
//! configuration names). `commands` runs the commands; `model::slurm_task` reads their lines.

use std::path::{Path, PathBuf};

use crate::slurm::commands;
use model::slurm_task::TaskEnd;

/// How Slurm says the tasks of `jobs` ended: sacct's word where there is accounting, else the
/// controller's, with the jobcomp log's (`jobcomp`, else the cluster's own) for the tasks the
/// controller no longer holds. Empty where Slurm says nothing (or no job is asked).
pub(crate) fn task_ends(jobs: &[String], jobcomp: Option<&Path>) -> Vec<TaskEnd> {
    if jobs.is_empty() {
        return Vec::new();
    }
    if let Some(text) = commands::sacct(jobs) {
        return text.lines().filter_map(TaskEnd::from_sacct).collect();
    }
    let mut ends: Vec<TaskEnd> = jobs
        .iter()
        .filter_map(|j| commands::show_job(j))
        .flat_map(|text| {
            text.lines()
                .filter_map(TaskEnd::from_key_values)
                .collect::<Vec<_>>()
        })
        .collect();
    let log = jobcomp.map(Path::to_path_buf).or_else(cluster_jobcomp_log);
    if let Some(text) = log.and_then(|p| std::fs::read_to_string(p).ok()) {
        add_logged(&mut ends, &text, jobs);
    }
    ends
}

/// How long [`settled_task_ends`] waits for a task Slurm is still ending: its final state follows
/// in moments, or in a minute on a busy node.
pub(crate) const ENDING_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// As [`task_ends`], asked again while a task is still ending (COMPLETING, SIGNALING,
/// STAGE_OUT), for up to [`ENDING_PATIENCE`]: `sbatch --wait` returns as a job ends, and on a
/// busy node a task killed at its time limit was still COMPLETING when `collect` asked, which
/// then had nothing to say of it but "no result yet".
pub fn settled_task_ends(jobs: &[String], jobcomp: Option<&Path>) -> Vec<TaskEnd> {
    let deadline = std::time::Instant::now() + ENDING_PATIENCE;
    loop {
        let ends = task_ends(jobs, jobcomp);
        if !ends.iter().any(TaskEnd::ending) || std::time::Instant::now() >= deadline {
            return ends;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// The jobcomp/filetxt log the cluster's configuration names, if it keeps one.
fn cluster_jobcomp_log() -> Option<PathBuf> {
    (commands::config_value("JobCompType").as_deref() == Some("jobcomp/filetxt"))
        .then(|| commands::config_value("JobCompLoc").map(PathBuf::from))
        .flatten()
}

/// Adds the ends the jobcomp log `text` holds of the tasks of `jobs` that `ends` lacks.
fn add_logged(ends: &mut Vec<TaskEnd>, text: &str, jobs: &[String]) {
    let mine = |e: &TaskEnd| {
        let array = e.array_job_id.as_ref().unwrap_or(&e.job_id);
        jobs.contains(array)
    };
    for end in text.lines().filter_map(TaskEnd::from_key_values) {
        // The controller's word first: the log has the same task once it has ended.
        if mine(&end) && !ends.iter().any(|e| e.name() == end.name()) {
            ends.push(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_adds_only_the_jobs_tasks_the_controller_no_longer_holds() {
        let held = "JobId=14 JobState=RUNNING ArrayJobId=12 ArrayTaskId=2";
        let mut ends: Vec<TaskEnd> = TaskEnd::from_key_values(held).into_iter().collect();
        let log = "JobId=14 JobState=OUT_OF_MEMORY ArrayJobId=12 ArrayTaskId=2\n\
                   JobId=15 JobState=TIMEOUT ArrayJobId=12 ArrayTaskId=3\n\
                   JobId=30 JobState=COMPLETED\n";
        add_logged(&mut ends, log, &["12".to_string()]);
        let said: Vec<(String, &str)> = ends.iter().map(|e| (e.name(), e.state.as_str())).collect();
        assert_eq!(
            said,
            [("12_2".into(), "RUNNING"), ("12_3".into(), "TIMEOUT")]
        );
    }
}
