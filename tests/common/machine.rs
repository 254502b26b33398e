//! What the machine looks like to a test: the segments, mounts, processes and containers this
//! test binary started (or that a dead run left), snapshotted before a test and required
//! unchanged after it. Another user's shmbench run on the same machine is not the test's: its
//! processes, its live runs' segments and its containers are left out, so the suite passes
//! beside it.
//!
//! What is the test's is proven, not guessed from names: every process the test binary starts
//! inherits `SHMBENCH_TEST_OWNER=<mark>` (set once, see [`mark`]), and shmbench's processes keep
//! their environment, so a process is the test's when its environment carries the mark; a
//! segment or container is the test's when the owner record of its run token is held open by
//! such a process, and a dead run's when that record's lock is free (or gone).

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use super::*;

/// The environment variable that marks a test binary's processes.
pub const OWNER_VARIABLE: &str = "SHMBENCH_TEST_OWNER";

/// This test binary's mark, put in its environment on first use so that every process it
/// starts afterwards carries it (`serial`, `command` and `machine_state` all call this first).
pub fn mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let mark = format!("{}-{nanos}", std::process::id());
        // std's own environment lock orders this with every Command spawned meanwhile.
        std::env::set_var(OWNER_VARIABLE, &mark);
        mark
    })
}

/// The owner mark in process `pid`'s environment (None: it has none), or an error when its
/// environment cannot be read (gone, or not ours to read).
fn owner_mark(pid: u32) -> std::io::Result<Option<Vec<u8>>> {
    let env = std::fs::read(format!("/proc/{pid}/environ"))?;
    let key = format!("{OWNER_VARIABLE}=");
    Ok(env
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .map(<[u8]>::to_vec))
}

/// Whether process `pid`'s environment carries the mark of this test's lane (this test
/// binary's mark, or a lane's of its own: `lane_mark`).
pub fn carries_mark(pid: u32) -> bool {
    owner_mark(pid).is_ok_and(|owner| owner.as_deref() == Some(lane_mark().as_bytes()))
}

/// Whether process `pid` is this lane's to judge when it is found by what it runs rather than
/// by its mark: it carries this lane's mark, or no mark at all and this is the first lane. A
/// process in a container has the image's environment, not the test's, and only the first
/// lane runs containers; a process with another lane's mark is that lane's (the second lane's
/// real-torch `watch` once counted the first lane's watched job as its own leftover).
pub fn is_this_lanes(pid: u32) -> bool {
    match owner_mark(pid) {
        Ok(Some(owner)) => owner == lane_mark().as_bytes(),
        Ok(None) => lane_mark() == mark(),
        Err(_) => false,
    }
}

/// Every process's command line, by pid (its arguments, lossily).
fn command_lines() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        out.push((pid, args));
    }
    out
}

/// The pids of this test binary's processes whose arguments `matches` takes.
pub fn our_processes(matches: impl Fn(&[String]) -> bool) -> Vec<u32> {
    let me = std::process::id();
    command_lines()
        .into_iter()
        .filter(|(pid, args)| *pid != me && !args.is_empty() && matches(args))
        .filter(|(pid, _)| carries_mark(*pid))
        .map(|(pid, _)| pid)
        .collect()
}

/// A file's identity: its device and inode (an inode number alone repeats across filesystems,
/// such as the Slurm node's own tmpfs beside this machine's /dev/shm).
type FileId = (u64, u64);

fn file_id(meta: &std::fs::Metadata) -> FileId {
    (meta.dev(), meta.ino())
}

/// What holds each of `inodes` open: the pids, from every process's fds.
fn record_holders(inodes: &HashSet<FileId>) -> HashMap<FileId, Vec<u32>> {
    let mut out: HashMap<FileId, Vec<u32>> = HashMap::new();
    if inodes.is_empty() {
        return out;
    }
    for (pid, _) in command_lines() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(meta) = std::fs::metadata(fd.path()) {
                if inodes.contains(&file_id(&meta)) {
                    out.entry(file_id(&meta)).or_default().push(pid);
                }
            }
        }
    }
    out
}

/// Whether a process that is not this test binary's holds the file at `path` open (another
/// user's live run: the file is not this test's to judge).
pub fn held_by_another_run(path: &std::path::Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    record_holders(&HashSet::from([file_id(&meta)]))
        .get(&file_id(&meta))
        .is_some_and(|pids| pids.iter().any(|pid| !carries_mark(*pid)))
}

/// Whose an owner record is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Whose {
    /// Held by one of this test binary's processes.
    Ours,
    /// Locked by a live run that is not the test's.
    Foreign,
    /// Gone, or its lock is free: a dead run's.
    Dead,
}

/// Whose each owner record at `paths` is (a record's lock is held while its run lives).
fn whose_records(paths: &[std::path::PathBuf]) -> Vec<Whose> {
    let metas: Vec<Option<std::fs::Metadata>> =
        paths.iter().map(|p| std::fs::metadata(p).ok()).collect();
    let inodes: HashSet<FileId> = metas.iter().flatten().map(file_id).collect();
    let holders = record_holders(&inodes);
    paths
        .iter()
        .zip(&metas)
        .map(|(path, meta)| {
            let Some(meta) = meta else { return Whose::Dead };
            let held_by = holders.get(&file_id(meta)).cloned().unwrap_or_default();
            if held_by.iter().any(|pid| carries_mark(*pid)) {
                return Whose::Ours;
            }
            let Ok(file) = std::fs::File::open(path) else {
                return Whose::Dead;
            };
            // SAFETY: flock on an fd we own; the lock goes with the file.
            let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
            if free {
                Whose::Dead
            } else {
                Whose::Foreign
            }
        })
        .collect()
}

/// The owner record of a `/dev/shm` entry's run: `shmbench_<token>` for `shmbench_<token>_...`.
fn segment_record(name: &str) -> Option<std::path::PathBuf> {
    let token = name.strip_prefix("shmbench_")?.get(..16)?;
    token
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| std::path::PathBuf::from(format!("/dev/shm/shmbench_{token}")))
}

/// What the machine looked like to this test binary: the /dev/shm entries, processes and
/// containers that are its own or a dead run's (another live run's are left out), and the
/// mounts of its mount namespace (the engine's own container mounts left out).
#[derive(Debug, PartialEq)]
pub struct MachineState {
    pub shm_entries: Vec<String>,
    pub mounts: String,
    pub processes: Vec<String>,
    /// Container ids.
    pub containers: Vec<String>,
}

/// shmbench's containers by id, with their run token (empty without a docker CLI).
fn shmbench_containers() -> Vec<(String, String)> {
    Command::new("docker")
        .args([
            "ps",
            "-a",
            "--no-trunc",
            "--filter",
            "label=org.shmbench.run-token",
            "--format",
            "{{.ID}} {{.Label \"org.shmbench.run-token\"}}",
        ])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_once(' '))
                .map(|(id, token)| (id.to_string(), token.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The ids of the containers this test binary's runs made (or a dead run left): their run
/// token's record, `/run/shmbench/run-<token>`, is held by a marked process, or free.
pub fn our_containers() -> Vec<String> {
    let containers = shmbench_containers();
    let records: Vec<std::path::PathBuf> = containers
        .iter()
        .map(|(_, token)| std::path::PathBuf::from(format!("/run/shmbench/run-{token}")))
        .collect();
    containers
        .into_iter()
        .zip(whose_records(&records))
        .filter(|(_, whose)| *whose != Whose::Foreign)
        .map(|((id, _), _)| id)
        .collect()
}

/// This test binary's shmbench processes: cells and workers, a torch cell's Python and its
/// workers, and torch's segment manager.
fn shmbench_processes() -> Vec<String> {
    let mut found = Vec::new();
    for (pid, args) in command_lines() {
        if pid == std::process::id() || args.is_empty() || !carries_mark(pid) {
            continue;
        }
        let is_ours = args[0] == BIN || args[0] == "/proc/self/exe";
        if is_ours && args.get(1).is_some_and(|a| a == "cell" || a == "worker") {
            found.push(format!("{pid}: {}", args[..2].join(" ")));
        }
        // A torch cell's Python and its DataLoader workers (they share the cell's bootstrap),
        // the segment manager torch starts for file_system, and multiprocessing's helpers
        // (forkserver, its workers, the resource tracker: `python -c 'from multiprocessing...`).
        let helper =
            |a: &String| a.contains("shmbench-torch-cell") || a.contains("from multiprocessing");
        if args.iter().any(helper) || args[0] == "torch_shm_manager" {
            found.push(format!("{pid}: {}", args[0]));
        }
    }
    found
}

/// The pid in torch's `torch_<pid>_...` segment name.
fn torch_pid(name: &str) -> Option<u32> {
    name.strip_prefix("torch_")?.split('_').next()?.parse().ok()
}

/// Every name in this machine's /dev/shm.
fn shm_names() -> impl Iterator<Item = String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
}

/// The shmbench and torch entries in /dev/shm that are this test binary's or a dead run's.
fn shm_entries() -> Vec<String> {
    let names: Vec<String> = shm_names()
        .filter(|n| n.starts_with("shmbench_") || n.starts_with("torch_"))
        .collect();
    let records: Vec<std::path::PathBuf> = names
        .iter()
        .map(|n| segment_record(n).unwrap_or_default())
        .collect();
    let whose = whose_records(&records);
    let mut out: Vec<String> = names
        .into_iter()
        .zip(whose)
        .filter(|(name, whose)| match torch_pid(name) {
            // A live process that is not the test's made it; unless that pid is a kernel
            // thread's here, where the name's pid is one of another pid namespace (a torch cell
            // in its own), never another user's process.
            Some(pid) => {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"));
                cmdline.as_ref().map_or(true, |c| c.is_empty()) || carries_mark(pid)
            }
            None if segment_record(name).is_some() => *whose != Whose::Foreign,
            None => true,
        })
        .map(|(name, _)| name)
        .collect();
    out.sort();
    out
}

/// The run tokens whose owner records this lane's live processes hold now. A test that kills
/// its own run judges what is left by these, taken while the run lives: a dead run's entries
/// cannot say whose they were, and another lane's (or another user's) dead run may leave some
/// or sweep them meanwhile (a run's start sweeps every dead one).
pub fn lanes_live_tokens() -> Vec<String> {
    mark();
    let records: Vec<String> = shm_names()
        .filter(|n| n.len() == "shmbench_".len() + 16 && segment_record(n).is_some())
        .collect();
    let paths: Vec<std::path::PathBuf> = records
        .iter()
        .map(|n| std::path::Path::new("/dev/shm").join(n))
        .collect();
    records
        .iter()
        .zip(whose_records(&paths))
        .filter(|(_, whose)| *whose == Whose::Ours)
        .filter_map(|(n, _)| n.strip_prefix("shmbench_").map(str::to_string))
        .collect()
}

/// This machine's /dev/shm entries of the runs with these tokens (their records and segments).
pub fn entries_of(tokens: &[String]) -> Vec<String> {
    shm_entries()
        .into_iter()
        .filter(|n| {
            tokens.iter().any(|t| {
                n.strip_prefix("shmbench_")
                    .is_some_and(|r| r.starts_with(t.as_str()))
            })
        })
        .collect()
}

pub fn machine_state() -> MachineState {
    mark();
    MachineState {
        shm_entries: shm_entries(),
        mounts: super::mounts::mounts(),
        processes: shmbench_processes(),
        containers: our_containers(),
    }
}

/// Asserts the machine is as clean as `before`: no process, segment, mount or container of this
/// test's more. Teardown is asynchronous (exiting workers, the engine unmounting and removing a
/// container after its cell ended), so it waits for the state to settle, up to a bound that
/// covers a loaded 2-core machine, and returns as soon as it is clean.
pub fn assert_clean(before: &MachineState) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let new = |now: &[String], then: &[String]| -> Vec<String> {
        now.iter().filter(|n| !then.contains(n)).cloned().collect()
    };
    loop {
        let now = machine_state();
        let segments = new(&now.shm_entries, &before.shm_entries);
        let containers = new(&now.containers, &before.containers);
        let clean = now.processes.is_empty()
            && segments.is_empty()
            && now.mounts == before.mounts
            && containers.is_empty();
        if clean || Instant::now() > deadline {
            assert_eq!(
                now.processes,
                Vec::<String>::new(),
                "shmbench processes left behind"
            );
            assert_eq!(segments, Vec::<String>::new(), "segments left in /dev/shm");
            assert_eq!(now.mounts, before.mounts, "mounts changed");
            assert_eq!(containers, Vec::<String>::new(), "containers left behind");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The memory cgroups shmbench made, in v1's memory hierarchy or v2's root.
pub fn shmbench_cgroups() -> Vec<String> {
    ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench-"))
        .collect()
}

/// The processes under a process at one moment, each with its start time (which tells it from
/// a later process given the same pid), to be checked gone later.
pub struct Tree(Vec<(u32, u64)>);

impl Tree {
    /// Every descendant of `pid` now.
    pub fn under(pid: u32) -> Tree {
        Tree(
            (shmbench::sys::proc_tree::descendants(pid).into_iter())
                .filter_map(|p| Some((p, start_time(p)?)))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Those still running (the same process, not a later one of its pid).
    pub fn alive(&self) -> Vec<u32> {
        (self.0.iter())
            .filter(|(pid, started)| start_time(*pid) == Some(*started))
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// Those still running after waiting up to 30 s for them to go (a busy machine's scheduler
    /// and reaping, not a timing).
    pub fn left_after_waiting(&self) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.alive().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.alive()
    }
}

/// A process's start time (field 22 of /proc/PID/stat); None when it is gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19)?.parse().ok()
}
