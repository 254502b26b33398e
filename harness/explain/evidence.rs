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
            let (pid, uid) = (info.si_pid() as u32, info.si_uid());
            let command = (pid != 0).then(|| command_line(pid)).flatten();
            (None, Some(Sender { pid, uid, command }))
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
