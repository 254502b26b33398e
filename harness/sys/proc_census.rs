//! One pass over /proc for what proving a named owner dead needs of every process: the pid it
//! sees itself as (the last field of `NSpid`: what a producer writes into a name), when it
//! started, and whether it is a kernel thread (which makes no files); and whether this process
//! runs in the host's pid namespace, the only one from which every process can be seen.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The inode of the initial pid namespace (`PROC_PID_INIT_INO` in the kernel's
/// `include/linux/proc_ns.h`): `/proc/self/ns/pid` reads `pid:[4026531836]` only there.
const INIT_PID_NAMESPACE: &str = "pid:[4026531836]";

/// A process start is known to a clock tick, and boot time to a second: a process is taken to
/// have started after a file only when it started this much later.
const START_SLACK: Duration = Duration::from_secs(2);

/// What one process is, for an owner's proof.
#[derive(Clone, Debug)]
pub struct ProcessFacts {
    pub pid: u32,
    /// Its pid in its own pid namespace.
    pub own_pid: u32,
    pub started: SystemTime,
}

/// Every user process visible in /proc, read once.
#[derive(Debug)]
pub struct Census {
    processes: Vec<ProcessFacts>,
    /// This process runs in the host's pid namespace.
    pub in_host_pid_namespace: bool,
    /// /proc hides other users' processes from this one (`hidepid=`, `subset=pid` mounts).
    hidden_by_proc: bool,
}

impl Census {
    /// Reads /proc once.
    pub fn take() -> Census {
        let in_host_pid_namespace = in_host_pid_namespace();
        let boot = boot_time();
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100)
            .max(1) as u64;
        let mut processes = Vec::new();
        if let Ok(listing) = std::fs::read_dir("/proc") {
            for entry in listing.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                    continue;
                };
                if let Some(facts) = facts(pid, boot, ticks) {
                    processes.push(facts);
                }
            }
        }
        Census {
            processes,
            in_host_pid_namespace,
            hidden_by_proc: proc_hides_processes(),
        }
    }

    /// Whether every process on the machine is in this census: none of another pid
    /// namespace's is missing, and /proc hides nobody's.
    pub fn sees_every_process(&self) -> bool {
        self.in_host_pid_namespace && !self.hidden_by_proc
    }

    /// A user process that may be the one that called itself `own_pid` when it made a file
    /// that existed by `born`: same own pid, started no later than the file (within the
    /// clocks' slack). None proves that process gone, if this census sees every process.
    pub fn may_have_made(&self, own_pid: u32, born: SystemTime) -> Option<&ProcessFacts> {
        self.processes
            .iter()
            .find(|p| p.own_pid == own_pid && p.started <= born + START_SLACK)
    }
}

/// Whether this process runs in the host's pid namespace.
fn in_host_pid_namespace() -> bool {
    std::fs::read_link("/proc/self/ns/pid").is_ok_and(|ns| ns.as_os_str() == INIT_PID_NAMESPACE)
}

/// Whether /proc shows this process every process on the machine (what
/// [`Census::sees_every_process`] says, without reading the processes).
pub fn sees_every_process() -> bool {
    in_host_pid_namespace() && !proc_hides_processes()
}

/// Whether /proc is mounted so that it hides other users' processes from this one: `hidepid`
/// of 1 or more (`noaccess`, `invisible`, `ptraceable`) for a user without the exemption root
/// has, or a `subset=pid` mount (every process then shows, but not all of their fds).
fn proc_hides_processes() -> bool {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let root = nix::unistd::geteuid().is_root();
    mountinfo
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some("/proc"))
        .filter_map(|l| l.split(" - ").nth(1))
        .any(|fs| {
            let options = fs.split(' ').nth(2).unwrap_or("");
            options.split(',').any(|o| {
                let hidden = o.starts_with("hidepid=") && !matches!(o, "hidepid=0" | "hidepid=off");
                (hidden && !root) || o == "subset=pid"
            })
        })
}

/// The host's boot time, from `btime` in /proc/stat.
fn boot_time() -> SystemTime {
    let seconds = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    UNIX_EPOCH + Duration::from_secs(seconds)
}

/// Process `pid`'s facts; None for a kernel thread or a process that ended meanwhile.
fn facts(pid: u32, boot: SystemTime, ticks: u64) -> Option<ProcessFacts> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // Fields from 3 on: flags is field 9, starttime field 22.
    let flags: u64 = fields.get(9 - 3)?.parse().ok()?;
    const PF_KTHREAD: u64 = 0x0020_0000;
    if flags & PF_KTHREAD != 0 {
        return None;
    }
    let start_ticks: u64 = fields.get(22 - 3)?.parse().ok()?;
    let started = boot + Duration::from_millis(start_ticks * 1000 / ticks);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let own_pid = status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|ids| ids.split_whitespace().last()?.parse().ok())
        .unwrap_or(pid);
    Some(ProcessFacts {
        pid,
        own_pid,
        started,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_have_made_a_file_made_now_but_not_one_made_before_it_started() {
        let census = Census::take();
        let me = std::process::id();
        let facts = census
            .processes
            .iter()
            .find(|p| p.pid == me)
            .expect("this process is in the census");
        assert!(census
            .may_have_made(facts.own_pid, SystemTime::now())
            .is_some());
        let long_before = facts.started - Duration::from_secs(3600);
        assert!(census
            .may_have_made(facts.own_pid, long_before)
            .is_none_or(|p| p.pid != me));
    }
}
