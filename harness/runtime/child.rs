//! Launching `shmbench cell <json>` as a child process tree and reading its record back (the
//! `host` and `namespace` runtimes).
//!
//! The cell leads its own process group (its workers join it) and dies with the harness
//! (PR_SET_PDEATHSIG). The harness watches it through a pidfd, relays its progress lines, enforces
//! a hard deadline above the cell's own watchdog, and on any ending SIGKILLs the whole group and
//! sweeps named segments the tree may have left in this machine's /dev/shm.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::launch::CellMessage;
use super::output::Monitor;
use super::pid_namespace;
use super::privileges::drop_privileges;
use cell::loader::segment;
use cell::protocol::{PROGRESS_ENV, SCRATCH_ENV};
use model::config::CellConfig;
use model::knobs::Loader;
use model::record::{CellRecord, Status};
use sys::memory_cgroup::{self, MemoryCgroup};
use sys::process::{self, Exit};
use sys::signals;

/// Isolation a runtime sets up in the forked child before it execs the cell.
pub trait PreExec: Send + Sync + 'static {
    /// Runs in the forked child: only async-signal-safe calls, on data prepared before fork.
    fn enter(&self) -> std::io::Result<()>;
    /// What the user should do when a child could not be started with this isolation.
    fn hint(&self) -> &'static str;
    /// Whether `enter` made a mount namespace of the child's own, with private mounts.
    fn makes_mount_namespace(&self) -> bool {
        false
    }
}

/// The command of a cell process: this binary's `cell` on `json`, in its own process group,
/// dying with the harness, in its memory cgroup and isolation, without privileges (unless a
/// watched job keeps them).
fn cell_command(
    config: &CellConfig,
    json: &str,
    isolation: Option<Box<dyn PreExec>>,
    cgroup_fd: Option<std::os::fd::RawFd>,
) -> Command {
    let harness_pid = std::process::id() as libc::pid_t;
    let mounts_made = isolation
        .as_ref()
        .is_some_and(|i| i.makes_mount_namespace());
    // A watched job may daemonize out of reach of PDEATHSIG, and a torch loader's forkserver
    // (and its DataLoader workers) has no death signal of its own: their cell is a pid
    // namespace's init. Not a torch cell on this machine's /dev/shm: its segments are named by
    // their maker's pid (`torch_<pid>_...`), which must be one this machine can prove dead, and
    // torch_shm_manager must outlive the cell to unlink them (a pid namespace's end kills it
    // with the rest: a SIGINTed host cell left five batches in the host's /dev/shm).
    let torch_in_own_tmpfs = config.knobs.loader == Loader::Torch && mounts_made;
    let own_pid_namespace =
        (config.watch.is_some() || torch_in_own_tmpfs) && pid_namespace::available();
    // A watched job may ask to keep the harness's capabilities; every other cell runs with none.
    let keep_privileges = config.watch.as_ref().is_some_and(|w| w.keep_privileges);
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("cell")
        .arg(json)
        .env(PROGRESS_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the closure only makes raw syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != harness_pid {
                libc::_exit(1); // the harness died before the death signal was armed
            }
            if let Some(fd) = cgroup_fd {
                memory_cgroup::join(fd)?;
            }
            if let Some(isolation) = &isolation {
                isolation.enter()?;
            }
            if own_pid_namespace {
                pid_namespace::enter(mounts_made)?;
            }
            match keep_privileges {
                true => Ok(()),
                false => drop_privileges(),
            }
        });
    }
    cmd
}

/// Runs one cell to completion, isolated by `isolation` (None: as is).
pub fn run(
    config: &CellConfig,
    isolation: Option<Box<dyn PreExec>>,
    progress: &mut dyn FnMut(CellMessage),
) -> CellRecord {
    let fail = |status: Status, message: String| {
        CellRecord::failed_to_run(config.clone(), status, message)
    };
    let json = match serde_json::to_string(config) {
        Ok(j) => j,
        Err(e) => return fail(Status::Error, format!("cannot encode the cell config: {e}")),
    };
    let hint = isolation.as_ref().map(|i| i.hint());
    // A memory limit outside Docker: a cgroup the child joins before exec.
    let cgroup = match config.knobs.memory {
        Some(limit) => match MemoryCgroup::create(limit.bytes(), &config.cell) {
            Ok(group) => Some(group),
            Err(e) => return fail(Status::Error, format!("{e:#}")),
        },
        None => None,
    };
    let cgroup_fd = cgroup.as_ref().map(|g| g.procs_fd());
    let mut cmd = cell_command(config, &json, isolation, cgroup_fd);
    // The cell's folder on disk, removed (on drop) once its processes are all gone: a torch
    // cell's (multiprocessing keeps its sockets there); an emulated cell keeps nothing on disk.
    let scratch = (config.knobs.loader == Loader::Torch)
        .then(super::scratch::make)
        .flatten();
    if let Some(dir) = &scratch {
        cmd.env(SCRATCH_ENV, dir.path());
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let text = match hint {
                Some(hint) => format!("{hint} (the kernel said: {e})"),
                None => format!("cannot start the cell process: {e}"),
            };
            return fail(Status::Error, text);
        }
    };
    let pid = child.id();
    let pidfd = match process::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return fail(
                Status::Error,
                format!("pidfd_open on the cell failed (Linux >= 5.3 needed): {e}"),
            );
        }
    };
    let mut stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let stdout_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    let stderr_reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    let mut monitor = Monitor::new(config, progress);
    let mut ended_by_harness = None;
    loop {
        let exited = process::wait_exit(&pidfd, Duration::from_millis(50));
        for line in lines_rx.try_iter() {
            monitor.stderr_line(&line);
        }
        if exited {
            break;
        }
        ended_by_harness = monitor.must_end();
        if ended_by_harness.is_some() {
            break;
        }
    }
    // The whole group goes, whatever happened: workers must never outlive their cell. The cell
    // is not reaped yet, so its pid (the group id) cannot have been reused.
    // SAFETY: plain syscall.
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
    let exit = process::kill_and_reap(&pidfd);
    let _ = child.try_wait(); // std's bookkeeping; the child is already reaped
    monitor.stdout(&stdout_reader.join().unwrap_or_default());
    let _ = stderr_reader.join();
    for line in lines_rx.try_iter() {
        monitor.stderr_line(&line);
    }
    let how = match exit {
        Exit::Signal(sig) => format!("process was killed by signal: {}", signals::name(sig)),
        Exit::Code(code) => format!("process exited with code {code}"),
    };
    let mut record = monitor.into_record(config, ended_by_harness, &how);
    record.main_killed_by_oom(
        cgroup.is_some_and(|g| g.oom_killed()),
        &format!("the cell's main was OOM-killed ({how})"),
    );
    // A host cell shares this machine's /dev/shm: what its dead tree left, no one holds.
    sweep_left_segments(&mut record);
    drop(scratch);
    record
}

/// For a cell on this machine's /dev/shm whose processes are all gone: removes the segments it
/// left (its owner is dead, nothing holds them) and says in the record how many (none: nothing
/// said).
pub fn sweep_left_segments(record: &mut CellRecord) {
    let swept = segment::sweep_abandoned().removed.len();
    if swept > 0 {
        record.message = format!(
            "{} [harness removed {swept} leftover segment(s) from /dev/shm]",
            record.message
        );
    }
}
