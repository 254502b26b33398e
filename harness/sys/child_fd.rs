//! A child's death as an fd `poll` can wait on beside sockets: its pidfd where the kernel has
//! them, else the read end of a pipe whose write end only the child holds, which hangs up when
//! the child dies. gVisor (runsc 20221219, Debian 12's) answers `pidfd_open` with ENOSYS, and
//! a loader must still run there: what the runtime does with /dev/shm is what is measured.
//! Signals go through the pidfd, else to the pid: a child not yet reaped keeps its pid, so
//! neither can reach another process.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use super::process::{self, Exit};

/// The pipe made before a child starts: it inherits the write end (`child_end`, kept across
/// exec by `keep_across_exec` in `pre_exec`), this process keeps the read end.
pub struct DeathPipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl DeathPipe {
    pub fn new() -> io::Result<DeathPipe> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        Ok(DeathPipe { read, write })
    }

    /// The write end's number, for the child's `pre_exec`.
    pub fn child_end(&self) -> RawFd {
        self.write.as_raw_fd()
    }
}

/// In a child between fork and exec: keeps `fd` open across exec. Async-signal-safe.
pub fn keep_across_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on an fd this process holds; async-signal-safe.
    match unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// A started child, watched through its pidfd or its death pipe.
pub struct ChildFd {
    pid: u32,
    fd: OwnedFd,
    /// `fd` is a pidfd (else the pipe's read end).
    pidfd: bool,
}

impl ChildFd {
    /// Watches the child `pid` that inherited `pipe`'s write end: through a pidfd where the
    /// kernel has them (the pipe is dropped), else through the pipe.
    pub fn open(pid: u32, pipe: DeathPipe) -> io::Result<ChildFd> {
        match process::pidfd_open(pid) {
            Ok(fd) => Ok(ChildFd {
                pid,
                fd,
                pidfd: true,
            }),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Ok(ChildFd {
                pid,
                fd: pipe.read,
                pidfd: false,
            }),
            Err(e) => Err(e),
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Reaps the child if it has exited.
    pub fn try_reap(&self) -> Option<Exit> {
        match self.pidfd {
            true => process::try_reap(&self.fd),
            false => reap_pid(self.pid, libc::WNOHANG),
        }
    }

    /// Waits up to `timeout` for the child to exit (its fd becomes readable).
    pub fn wait_exit(&self, timeout: Duration) -> bool {
        process::wait_exit(&self.fd, timeout)
    }

    /// Waits up to `timeout` for the child to exit and reaps it; None when it has not been
    /// reaped by then (`process::until_reaped`).
    pub fn reap_within(&self, timeout: Duration) -> Option<Exit> {
        process::until_reaped(timeout, |left| self.wait_exit(left), || self.try_reap())
    }

    pub fn signal(&self, sig: i32) {
        match self.pidfd {
            true => process::signal(&self.fd, sig),
            // SAFETY: plain syscall to our own unreaped child.
            false => unsafe {
                libc::kill(self.pid as libc::pid_t, sig);
            },
        }
    }

    /// SIGKILLs and reaps the child; how it ended.
    pub fn kill_and_reap(&self) -> Exit {
        if self.pidfd {
            return process::kill_and_reap(&self.fd);
        }
        if let Some(exit) = self.try_reap() {
            return exit;
        }
        self.signal(libc::SIGKILL);
        // The pipe hangs up as the child's files close, a moment before it can be reaped: after
        // SIGKILL and the hang-up, a blocking wait is that moment.
        self.wait_exit(Duration::from_secs(10));
        reap_pid(self.pid, 0).unwrap_or(Exit::Signal(libc::SIGKILL))
    }
}

impl AsFd for ChildFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// waitid on our child `pid` with `flags` besides WEXITED.
fn reap_pid(pid: u32, flags: libc::c_int) -> Option<Exit> {
    process::reap(libc::P_PID, pid as libc::id_t, flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// The pipe's way, as gVisor takes it: a child's death hangs it up and is reaped.
    #[test]
    fn a_death_pipe_hangs_up_when_the_child_dies() {
        let pipe = DeathPipe::new().unwrap();
        let end = pipe.child_end();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        // SAFETY: keep_across_exec is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || keep_across_exec(end));
        }
        // Reaped below through the ChildFd, not the Child.
        let pid = cmd.spawn().unwrap().id();
        let watched = ChildFd {
            pid,
            fd: pipe.read,
            pidfd: false,
        };
        drop(pipe.write);
        assert!(!watched.wait_exit(Duration::from_millis(100)));
        assert_eq!(watched.try_reap(), None);
        assert_eq!(watched.kill_and_reap(), Exit::Signal(libc::SIGKILL));
    }
}
