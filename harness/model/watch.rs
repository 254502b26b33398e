//! A watched command (`shmbench watch -- CMD`): how it is watched, and what the watching saw:
//! /dev/shm over time, who held it at the peak, what was left behind. Plain data; the sampling is
//! in `cell::command`, the trend and the advice in `analysis` and `plan`.

use serde::{Deserialize, Serialize};

/// How a command cell is watched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchSettings {
    /// The command and its arguments, run as is (no shell).
    pub command: Vec<String>,
    /// Milliseconds between two samples of /dev/shm.
    pub interval_ms: u64,
    /// A regular expression on the command's output lines; each match is one step (its first
    /// capture group, when it is a number, is the step's number).
    #[serde(default)]
    pub step_regex: Option<String>,
    /// Remove the segments the command left in /dev/shm when it ended.
    #[serde(default)]
    pub sweep: bool,
    /// Let the command keep the harness's capabilities (by default it runs, like every cell,
    /// with none and with no_new_privs).
    #[serde(default)]
    pub keep_privileges: bool,
}

/// The default sampling interval: fine enough to see a batch come and go.
pub const DEFAULT_INTERVAL_MS: u64 = 10;

impl WatchSettings {
    /// `command` watched at the default interval, without steps or a sweep.
    pub fn plain(command: Vec<String>) -> WatchSettings {
        WatchSettings {
            command,
            interval_ms: DEFAULT_INTERVAL_MS,
            step_regex: None,
            sweep: false,
            keep_privileges: false,
        }
    }
}

/// One sample of the watched job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShmSample {
    /// Seconds since the command started.
    pub t_s: f64,
    /// /dev/shm bytes in use above the level when the command started.
    pub shm_used_bytes: u64,
    /// The memory cgroup's use (includes the tmpfs pages charged to it), when there is one.
    #[serde(default)]
    pub cgroup_bytes: Option<u64>,
    /// Steps seen so far (lines matching the step regex).
    #[serde(default)]
    pub step: u64,
}

/// How a process holds a shared segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hold {
    /// An open file descriptor (torch's file_descriptor strategy keeps unlinked segments so).
    Fd,
    /// A mapping of the file.
    Map,
}

/// One shared segment (a /dev/shm file or a memfd) a process holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// Its name: the /dev/shm path or `memfd:NAME`.
    pub name: String,
    /// Bytes of memory it holds (allocated blocks, not its apparent size).
    pub bytes: u64,
    /// Unlinked: alive only through this process's fd or mapping.
    pub deleted: bool,
    pub hold: Hold,
}

/// One process of the job's tree at the moment of the peak.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// Its command line, shortened.
    pub command: String,
    /// Open file descriptors, and its RLIMIT_NOFILE soft limit.
    pub fds: u64,
    pub fd_limit: Option<u64>,
    pub segments: Vec<Segment>,
}

impl Holder {
    /// Bytes of the segments this process holds (a segment two processes hold counts for both).
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.bytes).sum()
    }
}

/// A file the job left in /dev/shm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Leftover {
    pub name: String,
    pub bytes: u64,
    /// A process of the job was seen holding it (on a shared /dev/shm, a new file nobody of the
    /// job was seen holding may be another program's).
    #[serde(default)]
    pub seen_held: bool,
    /// `--sweep` removed it.
    #[serde(default)]
    pub removed: bool,
}

/// Everything the watching saw, beside the cell's record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchFindings {
    /// The command's own pid (the others of the tree descend from it, or were orphaned by it).
    #[serde(default)]
    pub command_pid: u32,
    pub samples: Vec<ShmSample>,
    /// When the peak was seen, seconds since the start.
    pub peak_t_s: f64,
    /// The job's processes and what they held at the highest /dev/shm use they were walked at
    /// (each time the peak rose by more than 256 KiB), and when that was.
    pub holders_at_peak: Vec<Holder>,
    pub holders_t_s: f64,
    /// /dev/shm in use then (above the base): what the holders do not account for is held by
    /// no process (files kept, or leaked).
    #[serde(default)]
    pub holders_shm_bytes: u64,
    /// How long that walk of the job's processes took: a long one (many processes, a slow
    /// /proc as gVisor's) sees a job that goes on making and dropping segments meanwhile.
    #[serde(default)]
    pub holders_walk_s: f64,
    /// The shared memory (tmpfs pages) charged to the job's memory cgroup then, when it had a
    /// limit (memory.stat's `shmem`).
    #[serde(default)]
    pub cgroup_shmem_bytes: Option<u64>,
    /// Most processes seen at once in the job's tree, and most fds one of them held.
    pub max_processes: u32,
    pub max_fds: u64,
    /// The memory cgroup's limit, when there is one.
    pub cgroup_limit: Option<u64>,
    /// Files in /dev/shm when the job ended that were not there when it started.
    pub leftovers: Vec<Leftover>,
    /// Whether the /dev/shm was the job's own (a private tmpfs or a container's): everything
    /// new in it is the job's, and goes with it.
    #[serde(default)]
    pub private_shm: bool,
    /// /dev/shm bytes in use when the command started (samples are above it).
    pub base_bytes: u64,
    /// The faults caught at their delivery, or why the job was not traced.
    #[serde(default)]
    pub traced: explain::Traced,
    /// CPU seconds the sampler itself spent, and the number of samples it took.
    pub sampler_cpu_s: f64,
    pub sample_count: u64,
}

impl WatchFindings {
    /// The processes at the peak, the one holding most first.
    pub fn holders_by_bytes(&self) -> Vec<&Holder> {
        let mut holders: Vec<&Holder> = self.holders_at_peak.iter().collect();
        holders.sort_by_key(|h| std::cmp::Reverse(h.bytes()));
        holders
    }

    /// Bytes of the files left in /dev/shm, and how many of them were removed.
    pub fn left_bytes(&self) -> u64 {
        self.leftovers.iter().map(|l| l.bytes).sum()
    }

    pub fn removed(&self) -> usize {
        self.leftovers.iter().filter(|l| l.removed).count()
    }
}
