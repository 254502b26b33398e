//! A Slurm job as shmbench sees it: what an array task that ran a cell says about itself in
//! its record ([`SlurmTask`], from the variables slurmd sets), and how Slurm says a task ended
//! ([`TaskEnd`], from `sacct -P`, `scontrol -o show job` or the `jobcomp/filetxt` log).
//!
//! A task ended by the scheduler (OUT_OF_MEMORY, TIMEOUT, CANCELLED, ...) prints no record:
//! `cluster::slurm::collect` gives it a row, its status read from its end. All of it is untrusted text, parsed, never run.

use serde::{Deserialize, Serialize};

use super::config::CellConfig;
use super::fingerprint::Fingerprint;

/// The variables slurmd sets in a batch job's environment that a record keeps.
pub const JOB_ID_ENV: &str = "SLURM_JOB_ID";
pub const ARRAY_JOB_ID_ENV: &str = "SLURM_ARRAY_JOB_ID";
pub const ARRAY_TASK_ID_ENV: &str = "SLURM_ARRAY_TASK_ID";
pub const NODE_ENV: &str = "SLURMD_NODENAME";
pub const CLUSTER_ENV: &str = "SLURM_CLUSTER_NAME";
pub const PARTITION_ENV: &str = "SLURM_JOB_PARTITION";

/// What the array task that ran a cell says about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SlurmTask {
    /// The task's own job id (each array task has one).
    pub job_id: String,
    /// The array's job id and this task's index in it; None outside an array.
    pub array_job_id: Option<String>,
    pub array_task_id: Option<u64>,
    pub node: Option<String>,
    pub cluster: Option<String>,
    pub partition: Option<String>,
    /// `slurm 22.05.8`, as `scontrol --version` says it on the node.
    pub version: Option<String>,
    /// The node as the task sees it: kernel, CPU, memory, the job's memory cgroup limit.
    #[serde(default)]
    pub fingerprint: Fingerprint,
}

impl SlurmTask {
    /// The task these variables describe (`var` reads one); None outside a Slurm job.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<SlurmTask> {
        Some(SlurmTask {
            job_id: var(JOB_ID_ENV)?,
            array_job_id: var(ARRAY_JOB_ID_ENV),
            array_task_id: var(ARRAY_TASK_ID_ENV).and_then(|t| t.trim().parse().ok()),
            node: var(NODE_ENV),
            cluster: var(CLUSTER_ENV),
            partition: var(PARTITION_ENV),
            version: None,
            fingerprint: Fingerprint::default(),
        })
    }

    /// `ARRAY_TASK` (`12_3`), as Slurm names an array task, or the job id outside an array.
    pub fn name(&self) -> String {
        task_name(
            &self.job_id,
            self.array_job_id.as_deref(),
            self.array_task_id,
        )
    }
}

/// How Slurm names a task: `ARRAY_TASK` in an array, else the job id.
fn task_name(job_id: &str, array_job_id: Option<&str>, array_task_id: Option<u64>) -> String {
    match (array_job_id, array_task_id) {
        (Some(array), Some(task)) => format!("{array}_{task}"),
        _ => job_id.to_string(),
    }
}

/// The first word of the line a task prints before it runs its cell.
pub const START_MARK: &str = "shmbench-slurm-task";

/// What a task prints before its cell runs: its index, repeat and cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskStart {
    pub index: u64,
    /// 1-based run of the cell among its repeats.
    pub repeat: u32,
    pub slurm: Option<SlurmTask>,
    pub config: CellConfig,
}

impl TaskStart {
    /// The line a task output holds: the mark, then the start as JSON.
    pub fn line(&self) -> String {
        format!(
            "{START_MARK} {}",
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

/// The cell and repeat of task `index` among `cells` (task i runs cell i mod n: every cell's
/// first run comes before any cell's second, as `matrix` interleaves its repeats).
pub fn pick(cells: &[CellConfig], index: u64) -> Option<TaskStart> {
    if cells.is_empty() {
        return None;
    }
    let n = cells.len() as u64;
    Some(TaskStart {
        index,
        repeat: (index / n) as u32 + 1,
        slurm: None,
        config: cells[(index % n) as usize].clone(),
    })
}

/// How Slurm says a job or array task ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskEnd {
    pub job_id: String,
    pub array_job_id: Option<String>,
    pub array_task_id: Option<u64>,
    /// `COMPLETED`, `FAILED`, `OUT_OF_MEMORY`, `TIMEOUT`, `CANCELLED`, `NODE_FAIL`, ...
    /// (`CANCELLED by 0` as sacct writes it is cut to its first word).
    pub state: String,
    /// Slurm's reason or the state's extra words (`by 0`), where it gives them.
    pub reason: Option<String>,
    /// `exit:signal`, as Slurm writes it.
    pub exit_code: Option<String>,
    pub node: Option<String>,
}

impl TaskEnd {
    /// `ARRAY_TASK` or the job id, as [`SlurmTask::name`].
    pub fn name(&self) -> String {
        task_name(
            &self.job_id,
            self.array_job_id.as_deref(),
            self.array_task_id,
        )
    }

    /// One job of `scontrol -o show job` or one line of the `jobcomp/filetxt` log: `KEY=VALUE`
    /// words. None without a JobId or a JobState.
    pub fn from_key_values(line: &str) -> Option<TaskEnd> {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
                .filter(|v| !v.is_empty() && *v != "(null)" && *v != "None")
                .map(str::to_string)
        };
        let (state, extra) = split_state(&field("JobState")?);
        Some(TaskEnd {
            job_id: field("JobId")?,
            array_job_id: field("ArrayJobId"),
            array_task_id: field("ArrayTaskId").and_then(|t| t.parse().ok()),
            reason: field("Reason").or(extra),
            exit_code: field("ExitCode"),
            node: field("NodeList"),
            state,
        })
    }

    /// One line of `sacct -X -n -P --format=JobID,JobIDRaw,State,ExitCode,NodeList,Reason`
    /// (`12_3|14|OUT_OF_MEMORY|0:125|node1|None`). None for a line of another shape, and for
    /// an array's pending remainder (`12_[4-9]`), which has not run.
    pub fn from_sacct(line: &str) -> Option<TaskEnd> {
        let parts: Vec<&str> = line.trim().split('|').collect();
        let [id, raw, state, exit, nodes, reason] = parts[..] else {
            return None;
        };
        let (array_job_id, array_task_id) = match id.split_once('_') {
            Some((array, task)) => (Some(array.to_string()), Some(task.parse().ok()?)),
            None => (None, None),
        };
        let some = |v: &str| Some(v.to_string()).filter(|v| !v.is_empty() && v != "None");
        let (state, extra) = split_state(state);
        Some(TaskEnd {
            job_id: raw.to_string(),
            array_job_id,
            array_task_id,
            state,
            reason: some(reason).or(extra),
            exit_code: some(exit),
            node: some(nodes).filter(|n| n != "None assigned"),
        })
    }

    /// Whether Slurm is still ending the task: its run is over (its time limit reached, its
    /// script exited) and Slurm is killing what is left of it, running its epilog or staging
    /// out; its final state follows in moments, or in a minute on a busy node.
    pub fn ending(&self) -> bool {
        matches!(
            self.state.as_str(),
            "COMPLETING" | "STAGE_OUT" | "SIGNALING"
        )
    }

    /// Whether the task has ended (a pending or running one has not).
    pub fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "REQUEUED"
                | "RESIZING"
                | "SUSPENDED"
                | "CONFIGURING"
                | "COMPLETING"
                | "STAGE_OUT"
                | "SIGNALING"
        )
    }

    /// Whether the scheduler ended the task (out of memory, time, cancelled, preempted, a node
    /// lost), not the task's own exit.
    pub fn by_scheduler(&self) -> bool {
        self.ended() && !matches!(self.state.as_str(), "COMPLETED" | "FAILED")
    }

    /// `Slurm ended task 12_3 OUT_OF_MEMORY (exit 0:125)`.
    pub fn describe(&self) -> String {
        let mut out = format!("Slurm ended task {} {}", self.name(), self.state);
        if let Some(reason) = &self.reason {
            out.push_str(&format!(" ({reason})"));
        }
        if let Some(exit) = &self.exit_code {
            out.push_str(&format!(" with exit {exit}"));
        }
        out
    }
}

/// `CANCELLED by 0` -> (`CANCELLED`, `by 0`); `CANCELLED+` (sacct's truncation) -> `CANCELLED`.
fn split_state(state: &str) -> (String, Option<String>) {
    let state = state.trim();
    let (word, rest) = state.split_once(' ').unwrap_or((state, ""));
    let rest = rest.trim();
    (
        word.trim_end_matches('+').to_string(),
        Some(rest.to_string()).filter(|r| !r.is_empty()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobcomp_line_names_the_array_task_and_its_end() {
        let line = "JobId=14 UserId=root(0) GroupId=root(0) Name=shmbench JobState=OUT_OF_MEMORY Partition=debug TimeLimit=UNLIMITED NodeList=vm NodeCnt=1 ArrayJobId=12 ArrayTaskId=2 DerivedExitCode=0:0 ExitCode=0:125 ";
        let end = TaskEnd::from_key_values(line).unwrap();
        assert_eq!(end.name(), "12_2");
        assert_eq!(end.node.as_deref(), Some("vm"));
        assert!(end.by_scheduler());
        let words = end.describe();
        assert!(
            words.contains("12_2 OUT_OF_MEMORY with exit 0:125"),
            "{words}"
        );
    }

    #[test]
    fn sacct_lines_are_read_and_a_pending_remainder_is_not_a_task() {
        let end = TaskEnd::from_sacct("12_3|15|CANCELLED by 0|0:0|vm|None").unwrap();
        assert_eq!(
            (end.state.as_str(), end.reason.as_deref()),
            ("CANCELLED", Some("by 0"))
        );
        assert!(end.by_scheduler());
        assert!(TaskEnd::from_sacct("12_[4-9]|12|PENDING|0:0|None assigned|None").is_none());
        let completed = TaskEnd::from_sacct("20|20|COMPLETED|0:0|vm|None").unwrap();
        assert!(completed.ended() && !completed.by_scheduler());
        assert!(!TaskEnd::from_sacct("20|20|RUNNING|0:0|vm|None")
            .unwrap()
            .ended());
    }

    #[test]
    fn a_task_slurm_is_still_ending_has_not_ended() {
        let completing = TaskEnd::from_sacct("12_0|15|COMPLETING|0:0|vm|None").unwrap();
        assert!(completing.ending() && !completing.ended());
        let timeout = TaskEnd::from_sacct("12_0|15|TIMEOUT|0:0|vm|None").unwrap();
        assert!(!timeout.ending() && timeout.ended());
        let running = TaskEnd::from_sacct("12_0|15|RUNNING|0:0|vm|None").unwrap();
        assert!(!running.ending() && !running.ended());
    }

    #[test]
    fn a_task_says_its_array_name() {
        let vars = |k: &str| match k {
            JOB_ID_ENV => Some("15".to_string()),
            ARRAY_JOB_ID_ENV => Some("12".to_string()),
            ARRAY_TASK_ID_ENV => Some("3".to_string()),
            _ => None,
        };
        assert_eq!(SlurmTask::from_vars(vars).unwrap().name(), "12_3");
        assert!(SlurmTask::from_vars(|_| None).is_none());
    }
}
