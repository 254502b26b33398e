//! What is read about a fault while the process that got it is stopped at the signal's delivery:
//! the siginfo's code, address and sender, the mapping and file system behind the address
//! ([`crate::mapping`]), the memory cgroup ([`crate::memory`]), and the process's fds and
//! mappings against their limits (EMFILE and vm.max_map_count share a SIGBUS's symptoms).

use crate::fault::{Fault, Sender};
use crate::{mapping, memory};

/// A fault of `tid` (a thread of the process that got it) with the siginfo the kernel gave.
pub fn read(tid: u32, info: &libc::siginfo_t) -> Fault {
    let pid = thread_group(tid).unwrap_or(tid);
    let by_kernel = info.si_code > 0;
    // SAFETY: the siginfo's union is read as the kernel filled it: an address for a fault the
    // kernel raised, a sender for one a process sent.
    let (address, sender) = unsafe {
        if by_kernel {
            (Some(info.si_addr() as u64), None)
        } else {
            (None, Some(sender(pid, info.si_pid() as u32, info.si_uid())))
        }
    };
    let mapping = address.and_then(|a| mapping::holding(tid, a));
    Fault {
        pid,
        command: command_line(pid).unwrap_or_default(),
        signal: info.si_signo,
        code: info.si_code,
        address,
        sender,
        mapping,
        memory: memory::of(pid),
        fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()
            .map(|d| d.count() as u64),
        fd_limit: fd_limit(pid),
        maps: std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .ok()
            .map(|m| m.lines().count() as u64),
        max_map_count: std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|t| t.trim().parse().ok()),
    }
}

/// The sender of a signal to `pid`, whose siginfo numbers it `si_pid` in the receiver's own pid
/// namespace: the receiver itself (a handler re-raising), or another process, named by its
/// command line only where the receiver's namespace is this process's (elsewhere that number
/// names another process here).
fn sender(pid: u32, si_pid: u32, uid: u32) -> Sender {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let inner = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|ids| ids.split_whitespace().last()?.parse::<u32>().ok());
    if si_pid != 0 && inner == Some(si_pid) {
        return Sender {
            pid,
            uid,
            command: command_line(pid),
        };
    }
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let same_namespace = ns("self").is_some() && ns("self") == ns(&pid.to_string());
    let command = (si_pid != 0 && same_namespace)
        .then(|| command_line(si_pid))
        .flatten();
    Sender {
        pid: si_pid,
        uid,
        command,
    }
}

/// The thread group (process) a thread belongs to.
pub fn thread_group(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Longest command line kept, and longest argument in it, in characters: a worker's arguments
/// can be a whole JSON config, a `python -c` a whole program.
const COMMAND_CHARS: usize = 120;
const ARGUMENT_CHARS: usize = 40;

/// A process's command line, its arguments shortened and joined by spaces.
fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|a| !a.is_empty())
        .map(|a| match a.char_indices().nth(ARGUMENT_CHARS) {
            Some((at, _)) => format!("{}...", &a[..at]),
            None => a.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ");
    Some(text.chars().take(COMMAND_CHARS).collect())
}

/// The RLIMIT_NOFILE soft limit of `pid` (/proc/PID/limits' "Max open files").
fn fd_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
}
