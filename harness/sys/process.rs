//! Child processes through pidfds: no pid-reuse races, and a death is a readable fd that `poll`
//! can wait on together with sockets and timers.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Signal(i32),
    Code(i32),
}

/// A pidfd for our child `pid` (Linux >= 5.3).
pub fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall; returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Reaps the child behind `pidfd` if it has exited.
pub fn try_reap(pidfd: &OwnedFd) -> Option<Exit> {
    reap(
        libc::P_PIDFD,
        pidfd.as_raw_fd() as libc::id_t,
        libc::WNOHANG,
    )
}

/// waitid(2) on our child named by (`idtype`, `id`), with `flags` besides WEXITED: how it ended,
/// None while it runs (with WNOHANG) or when it is not ours to reap.
pub(crate) fn reap(idtype: libc::idtype_t, id: libc::id_t, flags: libc::c_int) -> Option<Exit> {
    // SAFETY: siginfo is plain data filled by the kernel; waitid on our own child.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(idtype, id, &mut info, libc::WEXITED | flags);
        if rc != 0 || info.si_pid() == 0 {
            return None;
        }
        let status = info.si_status();
        Some(match info.si_code {
            libc::CLD_KILLED | libc::CLD_DUMPED => Exit::Signal(status),
            _ => Exit::Code(status),
        })
    }
}

/// `timeout` as poll(2)'s, in whole milliseconds rounded up (a wait for a deadline must not
/// end before it), at most poll's longest.
pub fn poll_timeout(timeout: Duration) -> PollTimeout {
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}

/// Waits up to `timeout` for the pidfd to become readable (the child exited).
pub fn wait_exit(pidfd: &OwnedFd, timeout: Duration) -> bool {
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, poll_timeout(timeout)), Ok(n) if n > 0)
}

/// Sends `sig` through the pidfd (cannot hit a recycled pid).
pub fn signal(pidfd: &OwnedFd, sig: i32) {
    // SAFETY: plain syscall on our pidfd.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}

/// SIGKILLs and reaps the child; returns how it ended.
pub fn kill_and_reap(pidfd: &OwnedFd) -> Exit {
    if let Some(exit) = try_reap(pidfd) {
        return exit;
    }
    signal(pidfd, libc::SIGKILL);
    reap_within(pidfd, Duration::from_secs(10)).unwrap_or(Exit::Signal(libc::SIGKILL))
}

/// Waits up to `timeout` for the child to exit and reaps it; None when it has not been reaped
/// by then.
pub fn reap_within(pidfd: &OwnedFd, timeout: Duration) -> Option<Exit> {
    until_reaped(timeout, |left| wait_exit(pidfd, left), || try_reap(pidfd))
}

/// Reaps a child within `timeout`: `wait` for its exit (up to the time left), then `reap` it,
/// again until reaped. Its exit and its status are two moments: a traced child's status comes
/// once its tracer has reaped it (`explain`), after its pidfd says it exited; a death pipe hangs
/// up as its files close, a moment before it can be reaped.
pub(crate) fn until_reaped(
    timeout: Duration,
    wait: impl Fn(Duration) -> bool,
    reap: impl Fn() -> Option<Exit>,
) -> Option<Exit> {
    let until = std::time::Instant::now() + timeout;
    loop {
        wait(until.saturating_duration_since(std::time::Instant::now()));
        if let Some(exit) = reap() {
            return Some(exit);
        }
        if std::time::Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Resident memory of `pid` that is not shared memory: RssAnon + RssFile from
/// /proc/<pid>/status, in bytes (0 if unreadable). Shared-memory pages it maps are RssShmem and
/// are left out, so this is what the process costs beyond the batches it touches.
pub fn private_rss(pid: u32) -> u64 {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return 0;
    };
    status
        .lines()
        .filter(|l| l.starts_with("RssAnon:") || l.starts_with("RssFile:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum::<u64>()
        * 1024
}

/// The file descriptors this process has open (entries of /proc/self/fd, less the one reading
/// it); None if it cannot be read.
pub fn open_fds() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    Some((entries.count() as u64).saturating_sub(1))
}

/// Lowers this process's RLIMIT_NOFILE soft limit to `n` (children inherit it); the hard limit
/// stays. Fails when `n` is above the hard limit.
pub fn limit_fds(n: u64) -> Result<(), LimitError> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if n > hard {
        return Err(LimitError::AboveHard { hard });
    }
    Ok(setrlimit(Resource::RLIMIT_NOFILE, n, hard)?)
}

/// Why RLIMIT_NOFILE could not be lowered.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error("above the hard limit {hard}")]
    AboveHard { hard: u64 },
    #[error("{0}")]
    Refused(#[from] nix::Error),
}

/// Why this process could not be pinned to CPUs.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("CPU {0} is beyond what an affinity mask can name")]
    BeyondMask(usize),
    #[error("cannot run on those CPUs ({why}); this machine has {online} CPU(s) online, numbered from 0")]
    Refused { why: nix::Error, online: usize },
}

/// Sets `cmd` up as a child whose output the caller reads (stdin from /dev/null, stdout and
/// stderr piped) and that dies with the calling thread's process (PR_SET_PDEATHSIG).
pub fn piped_and_tied(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Restricts this process (and what it starts later) to `cpus`.
pub fn pin_to(cpus: &[usize]) -> Result<(), PinError> {
    let mut set = nix::sched::CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).map_err(|_| PinError::BeyondMask(cpu))?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|why| {
        let online = std::thread::available_parallelism().map_or(0, |n| n.get());
        PinError::Refused { why, online }
    })
}

/// Writes `byte` over all of `memory` in a forked child and returns how the child ended: a
/// write that meets a full tmpfs is a SIGBUS, which kills the child, not this process. `memory`
/// must be a shared mapping, so the pages the child writes are this process's too.
pub fn fill_in_child(memory: &mut [u8], byte: u8) -> std::io::Result<Exit> {
    let (ptr, len) = (memory.as_mut_ptr(), memory.len());
    // SAFETY: between fork and _exit the child only makes syscalls and writes to memory mapped
    // before the fork: it allocates nothing and takes no lock another thread may have held.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: as above; the child dies with us, and a SIGBUS kills it (default action).
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
            std::ptr::write_bytes(ptr, byte, len);
            libc::_exit(0);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    Ok(if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    })
}
