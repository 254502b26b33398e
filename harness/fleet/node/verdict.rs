//! What a node check found, as numbers and codes: each problem with the numbers its words
//! need, what could not be judged, and the verdict with the exit status health checkers read.
//! `node::judge` makes it; `text` words it.

use serde::Serialize;

/// How every first line starts, so a drain or a node condition shmbench set is known for its
/// own (`drain` resumes only those).
pub(crate) const REASON_PREFIX: &str = "shmbench:";

/// A way the node's /dev/shm is unfit for its jobs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Problem {
    /// The path does not exist: shm_open fails.
    Missing,
    /// Not a tmpfs: shared memory lands on a disk's filesystem (or nowhere).
    NotTmpfs { filesystem: String },
    /// Smaller than the jobs need.
    TooSmall {
        size_bytes: u64,
        need_bytes: u64,
        need_from: String,
    },
    /// Fuller than the policy allows.
    TooFull {
        used_bytes: u64,
        size_bytes: u64,
        max_used_share: f64,
    },
    /// Dead leftovers past the policy's bytes.
    DeadLeftovers {
        bytes: u64,
        files: u64,
        oldest_s: f64,
    },
    /// vm.max_map_count below what one process of the jobs maps.
    FewMappings { max_map_count: u64, needed: u64 },
    /// No inode left: no segment can be created.
    NoInodes,
    /// Mounted read-only: no segment can be created.
    ReadOnly,
    /// Not a mount of its own: a directory of the filesystem mounted at `mount_point` (an
    /// unmounted /dev/shm is a directory of /dev's devtmpfs, sized by nothing of the jobs').
    NotOwnMount {
        filesystem: String,
        mount_point: String,
    },
    /// Jobs that are not root cannot create a segment in it (no write bit for others).
    NotWritable { mode: u32 },
}

impl Problem {
    /// The label a metric carries for it.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Problem::Missing => "missing",
            Problem::NotTmpfs { .. } => "not_tmpfs",
            Problem::TooSmall { .. } => "too_small",
            Problem::TooFull { .. } => "too_full",
            Problem::DeadLeftovers { .. } => "dead_leftovers",
            Problem::FewMappings { .. } => "few_mappings",
            Problem::NoInodes => "no_inodes",
            Problem::ReadOnly => "read_only",
            Problem::NotOwnMount { .. } => "not_own_mount",
            Problem::NotWritable { .. } => "not_writable",
        }
    }

    /// Every code, for metrics that list each kind (0 or 1).
    pub(crate) const CODES: [&'static str; 10] = [
        "missing",
        "not_tmpfs",
        "too_small",
        "too_full",
        "dead_leftovers",
        "few_mappings",
        "no_inodes",
        "read_only",
        "not_own_mount",
        "not_writable",
    ];
}

/// What could not be judged, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "unknown", rename_all = "snake_case")]
pub enum Unknown {
    /// Leftovers cannot be proven dead: not every process is visible.
    Leftovers { why: String },
    /// vm.max_map_count could not be read.
    MapCount,
}

/// The node's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Ok,
    Problem,
    Unknown,
}

impl NodeStatus {
    /// The exit status a health checker reads (Node Problem Detector's plugin protocol: 0 OK,
    /// 1 a problem, 2 unknown).
    pub fn exit_code(self) -> u8 {
        match self {
            NodeStatus::Ok => 0,
            NodeStatus::Problem => 1,
            NodeStatus::Unknown => 2,
        }
    }
}

/// The verdict with its reasons.
#[derive(Clone, Debug, Serialize)]
pub struct NodeVerdict {
    pub status: NodeStatus,
    pub(crate) problems: Vec<Problem>,
    pub(crate) unknowns: Vec<Unknown>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_has_its_code_in_the_list_the_metrics_are_made_from() {
        let every = [
            Problem::Missing,
            Problem::NotTmpfs {
                filesystem: String::new(),
            },
            Problem::TooSmall {
                size_bytes: 0,
                need_bytes: 0,
                need_from: String::new(),
            },
            Problem::TooFull {
                used_bytes: 0,
                size_bytes: 0,
                max_used_share: 0.0,
            },
            Problem::DeadLeftovers {
                bytes: 0,
                files: 0,
                oldest_s: 0.0,
            },
            Problem::FewMappings {
                max_map_count: 0,
                needed: 0,
            },
            Problem::NoInodes,
            Problem::ReadOnly,
            Problem::NotOwnMount {
                filesystem: String::new(),
                mount_point: String::new(),
            },
            Problem::NotWritable { mode: 0 },
        ];
        // A variant added to `Problem` must be added here (the match below has no wildcard).
        for p in &every {
            match p {
                Problem::Missing
                | Problem::NotTmpfs { .. }
                | Problem::TooSmall { .. }
                | Problem::TooFull { .. }
                | Problem::DeadLeftovers { .. }
                | Problem::FewMappings { .. }
                | Problem::NoInodes
                | Problem::ReadOnly
                | Problem::NotOwnMount { .. }
                | Problem::NotWritable { .. } => {}
            }
        }
        let codes: Vec<_> = every.iter().map(Problem::code).collect();
        assert_eq!(codes, Problem::CODES);
    }
}
