//! Launching `shmbench cell <json>` as a child process tree and reading its record back.
//!
//! The cell leads its own process group (its workers join it) and dies with the harness
//! (PR_SET_PDEATHSIG). The harness watches it through a pidfd, relays its progress lines, enforces
//! a hard deadline above the cell's own watchdog, and on any ending SIGKILLs the whole group and
//! sweeps named segments the tree may have left in this machine's /dev/shm.

use std::ffi::CString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::CellConfig;
use crate::interrupt;
use crate::loader::segment;
use crate::process::{self, Exit};
use crate::record::{CellRecord, Status};

/// How a cell is isolated before exec.
pub enum Isolation {
    None,
    /// New mount namespace with a tmpfs of this many bytes on /dev/shm.
    SizedShm(u64),
}

/// Progress of the running cell, relayed from its stderr.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub step: u64,
    pub total: u64,
}

/// Extra time the harness allows beyond the cell's own no-progress watchdog before it kills the
/// cell from outside (start-up, teardown).
const HARD_DEADLINE_SLACK: Duration = Duration::from_secs(20);

/// Everything the namespace set-up needs, prepared before fork: after fork only raw syscalls run.
struct NamespacePlan {
    root: CString,
    target: CString,
    fstype: CString,
    options: CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    rootless: bool,
}

impl NamespacePlan {
    fn new(bytes: u64) -> NamespacePlan {
        let uid = nix::unistd::geteuid().as_raw();
        let gid = nix::unistd::getegid().as_raw();
        NamespacePlan {
            root: CString::new("/").expect("no NUL"),
            target: CString::new(segment::SHM_DIR).expect("no NUL"),
            fstype: CString::new("tmpfs").expect("no NUL"),
            options: CString::new(format!("size={bytes},mode=1777")).expect("no NUL"),
            uid_map: format!("0 {uid} 1\n").into_bytes(),
            gid_map: format!("0 {gid} 1\n").into_bytes(),
            rootless: uid != 0,
        }
    }

    /// Runs in the forked child. Only async-signal-safe calls.
    fn enter(&self) -> std::io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        // SAFETY: raw syscalls on buffers prepared before fork.
        unsafe {
            if self.rootless {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", &self.uid_map)?;
                write_file(c"/proc/self/gid_map", &self.gid_map)?;
            } else {
                check(libc::unshare(libc::CLONE_NEWNS))?;
            }
            check(libc::mount(
                std::ptr::null(),
                self.root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                self.fstype.as_ptr(),
                self.target.as_ptr(),
                self.fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                self.options.as_ptr() as *const libc::c_void,
            ))?;
        }
        Ok(())
    }
}

/// open + write + close with raw syscalls (async-signal-safe).
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = libc::write(fd, data.as_ptr() as *const libc::c_void, data.len());
    let err = std::io::Error::last_os_error();
    libc::close(fd);
    if n != data.len() as isize {
        return Err(err);
    }
    Ok(())
}

/// Checks that this process may make the namespace a sized cell needs, by doing it once for a
/// child that only prints its version (a 4 KiB tmpfs, gone when it exits).
pub fn probe_namespace() -> std::io::Result<()> {
    let plan = NamespacePlan::new(4096);
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure only makes raw syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            plan.enter()
        });
    }
    let status = cmd.status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the probe child ended with {status}"
        )))
    }
}

/// Runs one cell to completion under `isolation`.
pub fn run(
    config: &CellConfig,
    isolation: Isolation,
    progress: &mut dyn FnMut(Progress),
) -> CellRecord {
    let fail = |status: Status, message: String| {
        CellRecord::failed_to_run(config.clone(), status, message)
    };
    let json = match serde_json::to_string(config) {
        Ok(j) => j,
        Err(e) => return fail(Status::Error, format!("cannot encode the cell config: {e}")),
    };
    let plan = match isolation {
        Isolation::None => None,
        Isolation::SizedShm(bytes) => Some(NamespacePlan::new(bytes)),
    };
    let harness_pid = std::process::id() as libc::pid_t;
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("cell")
        .arg(&json)
        .env("SHMBENCH_PROGRESS", "1")
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
            match &plan {
                Some(p) => p.enter(),
                None => Ok(()),
            }
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let text = match isolation {
                Isolation::SizedShm(_) => format!(
                    "{} (the kernel said: {e})",
                    super::namespace::PERMISSION_HINT
                ),
                Isolation::None => format!("cannot start the cell process: {e}"),
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

    let no_progress_limit = Duration::from_secs_f64(config.timeout_s) + HARD_DEADLINE_SLACK;
    let mut last_progress = Instant::now();
    let mut stderr_tail: Vec<String> = Vec::new();
    let mut killed_because: Option<String> = None;
    loop {
        let exited = process::wait_exit(&pidfd, Duration::from_millis(50));
        for line in lines_rx.try_iter() {
            match parse_progress(&line) {
                Some(p) => {
                    last_progress = Instant::now();
                    progress(p);
                }
                None => {
                    stderr_tail.push(line);
                    if stderr_tail.len() > 20 {
                        stderr_tail.remove(0);
                    }
                }
            }
        }
        if exited {
            break;
        }
        if let Some(sig) = interrupt::received() {
            killed_because = Some(format!(
                "interrupted by {}",
                crate::loader::signal_name(sig)
            ));
        } else if last_progress.elapsed() > no_progress_limit {
            killed_because = Some(format!(
                "the cell made no progress for {:.0} s and was killed by the harness",
                no_progress_limit.as_secs_f64()
            ));
        }
        if killed_because.is_some() {
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
    let stdout_text = stdout_reader.join().unwrap_or_default();
    let _ = stderr_reader.join();
    stderr_tail.extend(lines_rx.try_iter().filter(|l| parse_progress(l).is_none()));
    let swept = segment::sweep(Some(pid));

    if let Some(reason) = killed_because {
        let status = if reason.starts_with("interrupted") {
            Status::Error
        } else {
            Status::Timeout
        };
        return fail(status, reason);
    }
    let record_line = stdout_text.lines().rev().find(|l| !l.trim().is_empty());
    match record_line.map(serde_json::from_str::<CellRecord>) {
        Some(Ok(mut record)) => {
            if !swept.is_empty() {
                record.message = format!(
                    "{} [harness removed {} leftover segment(s) from /dev/shm]",
                    record.message,
                    swept.len()
                );
            }
            record
        }
        Some(Err(e)) => fail(
            Status::Error,
            format!("the cell printed a record this harness cannot read: {e}"),
        ),
        None => {
            let how = match exit {
                Exit::Signal(sig) => {
                    format!("was killed by signal: {}", crate::loader::signal_name(sig))
                }
                Exit::Code(code) => format!("exited with code {code}"),
            };
            let tail = stderr_tail.join(" | ");
            fail(
                Status::Error,
                format!("the cell process {how} without printing a record. stderr: {tail}"),
            )
        }
    }
}

fn parse_progress(line: &str) -> Option<Progress> {
    let mut parts = line.strip_prefix("progress ")?.split(' ');
    let step = parts.next()?.parse().ok()?;
    let total = parts.next()?.parse().ok()?;
    Some(Progress { step, total })
}
