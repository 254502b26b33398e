//! Follows every process of a job with ptrace and catches each SIGBUS and SIGSEGV at its
//! delivery: the process is stopped there, so its siginfo, the mapping behind the address and
//! the file system's free space are read as they were at the fault ([`crate::evidence`]); then
//! the signal is delivered unchanged, so the job ends as it would have untraced.
//!
//! The command is seized before it runs a line of its own: its child side, just before exec,
//! writes its pid down a pipe and waits for a byte back; the tracer seizes it (PTRACE_SEIZE with
//! fork, vfork, clone and exec followed) and sends the byte. A forked child ([`fork`]) waits the
//! same way for its parent. Tracing is one thread's business (ptrace binds a tracee to the thread that
//! seized it), so [`Tracer::follow`] is also the job's reaper: it waits for every child and
//! tracee until none is left, and reports each process's end, a grandchild's included (the
//! tracer hears of a tracee's death before its parent does).
//!
//! When the seize is refused (another tracer, no ptrace in the sandbox, a process of another
//! user), the job runs untraced and [`Traced::untraced`] says why.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::ptrace;
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::evidence;
use crate::exit::Exit;
use crate::fault::Fault;

/// Faults kept per job and signal: a program that handles its own SIGSEGVs (a JIT, a garbage
/// collector) may take millions.
const MAX_FAULTS: usize = 16;

/// What following the job saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Traced {
    /// Why the job was not traced (None: it was, every process of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced: Option<String>,
    /// The fault signals caught at delivery, in order (at most [`MAX_FAULTS`] of each signal).
    pub faults: Vec<Fault>,
    /// Faults beyond those kept.
    #[serde(default)]
    pub faults_dropped: u64,
}

impl Traced {
    /// Whether a SIGBUS was caught (a job that passed though a process of it got one is
    /// explained too).
    pub fn caught_bus(&self) -> bool {
        self.faults.iter().any(|f| f.signal == libc::SIGBUS)
    }
}

/// The tracer's side of the handshake with the command it is to follow.
pub struct Tracer {
    /// Where the child's pid comes from: its own word down a pipe (a spawned command), or
    /// known (a fork).
    pid: ChildPid,
    /// The child's wait for the seize; none for a process [`attach`]ed.
    go_to_child: Option<OwnedFd>,
    /// Told of each fault as it is caught (a live report), beside the list kept.
    on_fault: Option<OnFault>,
    /// Told once the process is seized, or why it could not be.
    on_seized: Option<OnSeized>,
    /// Reaping waits for this (the spawner's word that `spawn` returned): a command whose exec
    /// failed is reaped by `spawn` itself, which panics when another wait took it first.
    reap_after: Option<std::sync::mpsc::Receiver<()>>,
}

/// What is told once the process is seized: None, or why it was not.
pub type OnSeized = Box<dyn FnOnce(Option<&str>) + Send>;

/// What is told of each fault as it is caught.
pub type OnFault = Box<dyn FnMut(&Fault) + Send>;

enum ChildPid {
    FromPipe(OwnedFd),
    Known(u32),
}

/// Which side of [`fork`] this is.
pub enum Forked {
    /// The child, seized by its parent (or let go untraced) before this returns.
    Child,
    /// The parent: its tracer, to follow the child with.
    Parent(Tracer),
}

/// Forks this process; the child waits until the parent's [`Tracer::follow`] has seized it. The
/// process must be single-threaded (a fork copies only the calling thread): the child goes on
/// as this program, where an exec of /proc/self/exe would run the ELF interpreter a container
/// started the binary with, not the binary.
pub fn fork() -> std::io::Result<Forked> {
    let (go_from_tracer, go_to_child) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // SAFETY: the caller is single-threaded, so the child holds no other thread's lock.
    match unsafe { nix::unistd::fork() }? {
        nix::unistd::ForkResult::Child => {
            drop(go_to_child);
            let mut go = [0u8; 1];
            // EOF (the tracer gone) or the byte: either way, go on.
            while let Err(nix::errno::Errno::EINTR) = nix::unistd::read(&go_from_tracer, &mut go) {}
            Ok(Forked::Child)
        }
        nix::unistd::ForkResult::Parent { child } => Ok(Forked::Parent(Tracer {
            pid: ChildPid::Known(child.as_raw() as u32),
            go_to_child: Some(go_to_child),
            on_fault: None,
            on_seized: None,
            reap_after: None,
        })),
    }
}

/// The command's side of the handshake: the parent's copies close once the command has been
/// spawned (or failed to), so a tracer waiting for a pid that never comes sees the pipe end.
pub struct ChildEnds {
    _pid_to_tracer: OwnedFd,
    _go_from_tracer: OwnedFd,
}

/// Makes `cmd` wait, just before exec, for the tracer to seize it. Its pre_exec runs after any
/// set before, so the command is seized as it will run (capabilities dropped, limits set).
pub fn prepare(cmd: &mut Command) -> std::io::Result<(Tracer, ChildEnds)> {
    let (pid_from_child, pid_to_tracer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (go_from_tracer, go_to_child) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (write_fd, read_fd) = (pid_to_tracer.as_raw_fd(), go_from_tracer.as_raw_fd());
    // SAFETY: between fork and exec the child only calls getpid, write and read
    // (async-signal-safe) on fds it inherited.
    unsafe {
        cmd.pre_exec(move || {
            let pid = libc::getpid().to_ne_bytes();
            while libc::write(write_fd, pid.as_ptr().cast(), pid.len()) < 0 {
                if *libc::__errno_location() != libc::EINTR {
                    return Ok(()); // no tracer to wait for: run untraced
                }
            }
            let mut go = 0u8;
            while libc::read(read_fd, (&mut go as *mut u8).cast(), 1) < 0 {
                if *libc::__errno_location() != libc::EINTR {
                    break;
                }
            }
            Ok(())
        });
    }
    Ok((
        Tracer {
            pid: ChildPid::FromPipe(pid_from_child),
            go_to_child: Some(go_to_child),
            on_fault: None,
            on_seized: None,
            reap_after: None,
        },
        ChildEnds {
            _pid_to_tracer: pid_to_tracer,
            _go_from_tracer: go_from_tracer,
        },
    ))
}

/// The ptrace options: every new process and thread followed, exec seen. Not EXITKILL: a tracer
/// that dies lets its tracees go, to end as they would untraced (by their own PDEATHSIG, with
/// their own cleanup: Python's resource tracker unlinks what the job left), rather than all at
/// once by SIGKILL.
fn options() -> ptrace::Options {
    ptrace::Options::PTRACE_O_TRACEFORK
        | ptrace::Options::PTRACE_O_TRACEVFORK
        | ptrace::Options::PTRACE_O_TRACECLONE
        | ptrace::Options::PTRACE_O_TRACEEXEC
}

/// A tracer for a running process this one did not start (`shmbench explain --pid`): every
/// thread of it is seized, and every process it starts from then on followed. Its end is
/// reported as the command's.
pub fn attach(pid: u32) -> Tracer {
    Tracer {
        pid: ChildPid::Known(pid),
        go_to_child: None,
        on_fault: None,
        on_seized: None,
        reap_after: None,
    }
}

impl Tracer {
    /// Tells `on_fault` of each fault as it is caught.
    pub fn on_fault(mut self, on_fault: OnFault) -> Tracer {
        self.on_fault = Some(on_fault);
        self
    }

    /// Reaps nothing until `spawned` says (or drops its sender): the spawn has returned.
    pub fn reap_after(mut self, spawned: std::sync::mpsc::Receiver<()>) -> Tracer {
        self.reap_after = Some(spawned);
        self
    }

    /// Tells `on_seized` once the process is seized, or why it could not be.
    pub fn on_seized(mut self, on_seized: OnSeized) -> Tracer {
        self.on_seized = Some(on_seized);
        self
    }

    /// Seizes the command (or, with `trace` false or the seize refused, lets it run untraced),
    /// then reaps every child and tracee of this thread until none is left, calling `ended`
    /// with each process's end and whether it is the command's (threads' ends are not
    /// reported).
    pub fn follow(mut self, trace: bool, mut ended: impl FnMut(u32, Exit, bool)) -> Traced {
        let mut traced = Traced::default();
        let Some(pid) = self.command_pid() else {
            traced.untraced = Some("the command did not start".into());
            return traced;
        };
        let mut threads = BTreeSet::new();
        traced.untraced = if !trace {
            Some("tracing was turned off (--no-trace)".into())
        } else {
            seize(pid, self.go_to_child.is_none(), &mut threads)
                .err()
                .map(|refused| refused.to_string())
        };
        if let Some(go) = &self.go_to_child {
            // SAFETY: one byte to our own pipe.
            unsafe { libc::write(go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        }
        if let Some(tell) = self.on_seized.take() {
            tell(traced.untraced.as_deref());
        }
        if let Some(spawned) = self.reap_after.take() {
            let _ = spawned.recv();
        }
        let mut on_fault = self.on_fault.take();
        drop(self);
        loop {
            let mut status = 0;
            // SAFETY: plain syscall on a local.
            let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
            if tid < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return traced; // ECHILD: nothing left
            }
            let tid = tid as u32;
            if libc::WIFSTOPPED(status) {
                stopped(tid, status, &mut threads, &mut traced, &mut on_fault);
            } else if !threads.remove(&tid) {
                ended(tid, Exit::from_wait(status), tid == pid);
            }
        }
    }

    /// The pid the command's child side wrote before exec; None when it never ran.
    fn command_pid(&self) -> Option<u32> {
        let from = match &self.pid {
            ChildPid::Known(pid) => return Some(*pid),
            ChildPid::FromPipe(from) => from,
        };
        let mut pid = [0u8; 4];
        let mut got = 0;
        while got < pid.len() {
            // SAFETY: reads into the rest of a local buffer.
            let n = unsafe {
                libc::read(
                    from.as_raw_fd(),
                    pid[got..].as_mut_ptr().cast(),
                    pid.len() - got,
                )
            };
            match n {
                n if n > 0 => got += n as usize,
                n if n < 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
                _ => return None,
            }
        }
        Some(i32::from_ne_bytes(pid) as u32)
    }
}

/// Why ptrace would not seize a process, as the row says it.
#[derive(Debug)]
struct Refused(nix::Error);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ptrace refused ({}): another tracer, a sandbox without ptrace, kernel.yama.ptrace_scope, or no permission", self.0)
    }
}

/// Seizes `pid`, and with `every_thread` each of its threads (a running process: a started one
/// has one thread yet), noting the threads; why not, when refused.
fn seize(pid: u32, every_thread: bool, threads: &mut BTreeSet<u32>) -> Result<(), Refused> {
    let mut seized = ptrace::seize(Pid::from_raw(pid as i32), options());
    // A running process that consents (prctl(PR_SET_PTRACER) under Yama) may do so a moment
    // after its helper starts: a refusal is tried again for a second.
    for _ in 0..50 {
        if !(every_thread && seized == Err(nix::errno::Errno::EPERM)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        seized = ptrace::seize(Pid::from_raw(pid as i32), options());
    }
    seized.map_err(Refused)?;
    if every_thread {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten();
        for tid in tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse::<u32>().ok())
        {
            if tid != pid && ptrace::seize(Pid::from_raw(tid as i32), options()).is_ok() {
                threads.insert(tid);
            }
        }
    }
    Ok(())
}

/// Handles one ptrace stop of `tid` and restarts it.
fn stopped(
    tid: u32,
    status: i32,
    threads: &mut BTreeSet<u32>,
    traced: &mut Traced,
    on_fault: &mut Option<OnFault>,
) {
    let signal = libc::WSTOPSIG(status);
    let event = status >> 16;
    let deliver = match event {
        0 => {
            if signal == libc::SIGBUS || signal == libc::SIGSEGV {
                catch(tid, traced, on_fault);
            }
            signal
        }
        libc::PTRACE_EVENT_STOP => {
            // A group-stop (SIGSTOP and friends) is kept as job control wants it: LISTEN
            // leaves the tracee stopped until a SIGCONT. Any other is a new tracee's first stop.
            if matches!(
                signal,
                libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
            ) {
                // SAFETY: plain ptrace request on our tracee; ESRCH (it died) is harmless.
                unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0, 0) };
                return;
            }
            // A thread's end is its process's business: only processes are reported. Told at
            // its first stop, before it can run (and end).
            if evidence::thread_group(tid).is_some_and(|group| group != tid) {
                threads.insert(tid);
            }
            0
        }
        _ => 0, // fork, vfork, exec
    };
    // SAFETY: plain ptrace request on our tracee; ESRCH (it died meanwhile) is harmless.
    unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0, deliver as libc::c_long) };
}

/// Reads the fault `tid` is stopped at.
fn catch(tid: u32, traced: &mut Traced, on_fault: &mut Option<OnFault>) {
    // The cap is per signal: a job that handles its own SIGSEGVs by the thousand (a JIT)
    // keeps room for the SIGBUS that ends it.
    let Ok(info) = ptrace::getsiginfo(Pid::from_raw(tid as i32)) else {
        return;
    };
    let kept = traced.faults.iter().filter(|f| f.signal == info.si_signo);
    if kept.count() >= MAX_FAULTS {
        traced.faults_dropped += 1;
        return;
    }
    let fault = evidence::read(tid, &info);
    if let Some(tell) = on_fault {
        tell(&fault);
    }
    traced.faults.push(fault);
}
