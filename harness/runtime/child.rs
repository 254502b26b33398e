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
use std::time::Duration;

use crate::config::CellConfig;
use crate::loader::segment;
use crate::process::{self, Exit};
use crate::record::{CellRecord, Status};

use super::output::{Monitor, Progress};

/// How a cell is isolated before exec.
pub enum Isolation {
    None,
    /// New mount namespace with a tmpfs of this many bytes on /dev/shm.
    SizedShm(u64),
}

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

/// Drops every capability (effective, permitted, inheritable, bounding and ambient) and sets
/// no_new_privs: a cell needs none once its /dev/shm is mounted. Raw syscalls only (runs after
/// fork).
fn drop_privileges() -> std::io::Result<()> {
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // SAFETY: raw syscalls on stack data.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            // EINVAL past the last capability this kernel knows: nothing to drop there.
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        let header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
            CapData {
                effective: 0,
                permitted: 0,
                inheritable: 0,
            },
        ];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
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

/// Runs this binary with `args` in a private mount namespace whose /dev/shm is a tmpfs of
/// `shm_bytes`, without capabilities, and returns its output (for helpers such as calibration
/// that must not touch the host's /dev/shm).
pub fn output_in_namespace(
    args: &[String],
    shm_bytes: u64,
) -> std::io::Result<std::process::Output> {
    let plan = NamespacePlan::new(shm_bytes);
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: the closure only makes raw syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            plan.enter()?;
            drop_privileges()
        });
    }
    cmd.output()
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
    // A memory limit outside Docker: a cgroup the child joins before exec.
    let cgroup = match config.memory {
        Some(limit) => {
            match super::memory_cgroup::MemoryCgroup::create(limit.bytes(), &config.cell) {
                Ok(group) => Some(group),
                Err(e) => return fail(Status::Error, format!("{e:#}")),
            }
        }
        None => None,
    };
    let cgroup_fd = cgroup.as_ref().map(|g| g.procs_fd());
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
            if let Some(fd) = cgroup_fd {
                super::memory_cgroup::join(fd)?;
            }
            if let Some(p) = &plan {
                p.enter()?;
            }
            drop_privileges()
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
    let swept = segment::sweep(Some(pid));
    drop(cgroup);
    let how = match exit {
        Exit::Signal(sig) => format!(
            "process was killed by signal: {}",
            crate::loader::signal_name(sig)
        ),
        Exit::Code(code) => format!("process exited with code {code}"),
    };
    let mut record = monitor.into_record(config, ended_by_harness, &how);
    if !swept.is_empty() {
        record.message = format!(
            "{} [harness removed {} leftover segment(s) from /dev/shm]",
            record.message,
            swept.len()
        );
    }
    record
}
