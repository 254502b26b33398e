//! A watched command's cell, or a real torch loader's, as the init of a pid namespace of its
//! own, so nothing of the job outlives it however the harness dies.
//!
//! `PR_SET_PDEATHSIG` reaches only direct children: a job that double-forks with `setsid`
//! leaves a daemon that survives the harness (and keeps a namespace cell's private tmpfs alive),
//! and so did Python's forkserver, a grandchild of a torch cell, with its DataLoader workers.
//! The kernel ends every process of a pid namespace when its init dies, so the cell is made that
//! init: in the forked child, `unshare(CLONE_NEWPID)` and a second fork put the grandchild at
//! pid 1 of the new namespace; the child stays outside as a waiter that mirrors the cell's end
//! (its exit code, or the signal that killed it) for the harness. Both die with their parent
//! (PDEATHSIG), so the chain harness -> waiter -> cell -> job is cut at any link.
//!
//! The cell gets a /proc of its namespace (it reads its own tree there), in a mount namespace of
//! its own whose mounts are private. Needs root: without it the cell stays in the harness's pid
//! namespace, the job's subreaper as before.

use super::privileges::check;

/// Whether [`enter`] can be used by this process (root: it may unshare and mount /proc).
pub fn available() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Runs in the forked child, after the cell's own isolation: only raw syscalls. Returns in the
/// grandchild (pid 1 of the new namespace), which goes on to exec the cell; the child never
/// returns (it waits for the grandchild and ends as it ended).
pub fn enter(mount_namespace_made: bool) -> std::io::Result<()> {
    // SAFETY: raw syscalls on static strings; after fork only _exit, waitpid, kill and mounts.
    unsafe {
        if !mount_namespace_made {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
        }
        check(libc::unshare(libc::CLONE_NEWPID))?;
        let pid = libc::fork();
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid > 0 {
            wait_and_mirror(pid);
        }
        // The cell, pid 1 of its namespace: it dies with the waiter.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        check(libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ))?;
    }
    Ok(())
}

/// The waiter: lets go of every fd but the standard ones (std's exec-error pipe among them, so
/// the harness's spawn returns once the cell has exec'd), waits for the cell and ends as it did.
unsafe fn wait_and_mirror(cell: libc::pid_t) -> ! {
    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    let mut status = 0;
    loop {
        let rc = libc::waitpid(cell, &mut status, 0);
        if rc == cell {
            break;
        }
        if rc < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(1);
        }
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        libc::kill(libc::getpid(), sig);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}
