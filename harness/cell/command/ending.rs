//! How a watched command ended, from the evidence the cell gathers: the command's own wait
//! status, the wait statuses of the processes it orphaned (the cell is their subreaper), what it
//! printed (torch's "killed by signal: Bus error" when the parent survives a worker's death, the
//! C library's and torch's ENOSPC and EMFILE words), the memory cgroup's OOM-kill count, and the
//! deadline. A worker reaped by its own parent leaves no wait status for the cell to see, so a
//! SIGBUS there is known only from what the parent printed about it.

use crate::torch::classify::{killed_by, status_of_words, worker_pid};
use explain::judge::{self, Said};
use explain::tracer::Traced;
use model::record::Status;
use sys::signals;

pub use explain::Exit;

/// Everything known when the command is gone.
pub struct Ending<'a> {
    /// The command's own end; None when it was ended at the deadline, `timeout_s`.
    pub exit: Option<Exit>,
    pub pid: u32,
    /// Processes of the tree the cell reaped as their subreaper.
    pub orphans: &'a [(u32, Exit)],
    /// Output lines that name a failure (see [`is_evidence`]).
    pub evidence: &'a [String],
    pub timeout_s: f64,
    /// The memory cgroup's OOM-kill count before and after.
    pub oom_kills: (Option<u64>, Option<u64>),
    /// Every process of the job was traced: each one's end is among the orphans, a
    /// grandchild's too, so words alone never make a Bus error.
    pub traced: bool,
}

/// The cell's status, its message, and the process and signal that failed: a torch cell's kind.
pub use crate::torch::classify::Verdict;

/// Whether an output line names a failure the classification uses.
pub fn is_evidence(line: &str) -> bool {
    line.contains("Bus error") || killed_by(line).is_some() || status_of_words(line).is_some()
}

fn verdict(status: Status, message: String, signal: Option<i32>, pid: Option<u32>) -> Verdict {
    Verdict {
        status,
        message,
        signal,
        pid,
    }
}

pub fn classify(e: &Ending) -> Verdict {
    let said = |line: &String| format!("it printed: {}", line.trim());
    let Some(exit) = e.exit else {
        return verdict(
            Status::Timeout,
            format!(
                "the command ran past --timeout-s {:.0} s and was ended",
                e.timeout_s
            ),
            None,
            None,
        );
    };
    if exit == Exit::Code(0) {
        let bus = e
            .orphans
            .iter()
            .find(|(_, x)| *x == Exit::Signal(libc::SIGBUS));
        let note = match bus {
            Some((pid, _)) => format!(
                "exited 0, though a process of it (pid {pid}) was killed by signal 7 (Bus error)"
            ),
            None => e
                .evidence
                .first()
                .map(|l| format!("exited 0, though {}", said(l)))
                .unwrap_or_default(),
        };
        return verdict(Status::Pass, note, None, None);
    }
    let how = match exit {
        Exit::Code(c) => format!("the command exited with code {c}"),
        Exit::Signal(s) => format!(
            "the command was killed by signal {s} ({})",
            signals::name(s)
        ),
    };
    // Who died by which signal: the command itself, then the orphans the cell reaped.
    let deaths = Exit::killed(std::iter::once((e.pid, exit)).chain(e.orphans.iter().copied()));
    if let Some(&(pid, sig)) = deaths.iter().find(|(_, s)| *s == libc::SIGBUS) {
        let text = if pid == e.pid {
            format!("the command (pid {pid}) was killed by signal {sig} (Bus error)")
        } else {
            format!(
                "a process of the job (pid {pid}) was killed by signal {sig} (Bus error); {how}"
            )
        };
        return verdict(Status::Sigbus, text, Some(sig), Some(pid));
    }
    let bus_words = e
        .evidence
        .iter()
        .filter(|_| !e.traced)
        .find(|l| killed_by(l) == Some(libc::SIGBUS) || l.contains("Bus error"));
    if let Some(line) = bus_words {
        let text = format!("{how}; {}", said(line));
        return verdict(Status::Sigbus, text, Some(libc::SIGBUS), worker_pid(line));
    }
    let oom = matches!(e.oom_kills, (Some(a), Some(b)) if b > a);
    let killed = deaths.iter().find(|(_, s)| *s == libc::SIGKILL);
    if oom {
        let text = format!(
            "{how}; the OOM killer acted in its memory cgroup (tmpfs pages count against the limit)"
        );
        return verdict(
            Status::Oom,
            text,
            killed.map(|(_, s)| *s),
            killed.map(|(p, _)| *p),
        );
    }
    if let Some((status, line)) = e
        .evidence
        .iter()
        .find_map(|l| status_of_words(l).map(|s| (s, l)))
    {
        return verdict(
            status,
            format!("{how}; {}", said(line)),
            None,
            worker_pid(line),
        );
    }
    let signal = exit.signal();
    // Traced, the words of a Bus error no process died of are evidence, not the ending.
    let words = e.evidence.iter().find(|l| l.contains("Bus error"));
    let how = match words {
        Some(line) => format!(
            "{how}; {} (no process of the job died of SIGBUS)",
            said(line)
        ),
        None => how,
    };
    verdict(Status::Error, how, signal, Some(e.pid))
}

/// What the job's words said, for [`explain::judge`]: the first evidence line that names an
/// ending.
fn said(evidence: &[String]) -> Option<Said> {
    // ENOSPC is the tmpfs's only where the words name shared memory: a full disk says it too.
    let shared = |l: &str| {
        ["shared memory", "/dev/shm", "</torch_"]
            .iter()
            .any(|w| l.contains(w))
    };
    evidence.iter().find_map(|l| match status_of_words(l) {
        Some(Status::Enospc) if shared(l) => Some(Said::Enospc),
        Some(Status::Enospc) => Some(Said::EnospcElsewhere),
        Some(Status::Emfile) => Some(Said::Emfile),
        Some(Status::Enomem) => Some(Said::Enomem),
        Some(Status::Enoent) => Some(Said::Enoent),
        _ if killed_by(l) == Some(libc::SIGBUS) || l.contains("Bus error") => Some(Said::BusError),
        _ => None,
    })
}

/// The cause of a watched job's failed end (`explain::judge`), from its processes' ends (the
/// command's `own`, the `others`), the faults caught, its words, its memory cgroup's OOM kills
/// before and after, and its /dev/shm's size and peak use. None for an end no Bus error or
/// look-alike had a part in (a pass, a plain non-zero exit, a timeout).
pub fn explain(
    verdict: &Verdict,
    own: Option<(u32, Exit)>,
    others: &[(u32, Exit)],
    evidence: &[String],
    traced: &Traced,
    oom_kills: (Option<u64>, Option<u64>),
    shm: (u64, u64),
) -> Option<explain::Explanation> {
    // A job that passed though a process of it got a SIGBUS is explained too.
    if verdict.status == Status::Timeout || (verdict.status.is_pass() && !traced.caught_bus()) {
        return None;
    }
    let killed = Exit::killed(own.into_iter().chain(others.iter().copied()));
    let oom_kills = match oom_kills {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    judge::explain(&judge::Ending {
        traced,
        killed: &killed,
        said: said(evidence),
        oom_kills,
        memory_limit: sys::cgroup::memory_limit(),
        shm: Some(shm),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ending(exit: Option<Exit>, orphans: &[(u32, Exit)], evidence: &[&str]) -> Verdict {
        let evidence: Vec<String> = evidence.iter().map(|s| s.to_string()).collect();
        classify(&Ending {
            exit,
            pid: 10,
            orphans,
            evidence: &evidence,
            timeout_s: 5.0,
            oom_kills: (Some(0), Some(0)),
            traced: false,
        })
    }

    #[test]
    fn the_end_is_read_from_statuses_first_and_words_second() {
        let bus = ending(Some(Exit::Signal(7)), &[], &[]);
        assert_eq!((bus.status, bus.pid), (Status::Sigbus, Some(10)));
        let orphan = ending(Some(Exit::Code(1)), &[(11, Exit::Signal(7))], &[]);
        assert_eq!((orphan.status, orphan.pid), (Status::Sigbus, Some(11)));
        let torch = ending(
            Some(Exit::Code(1)),
            &[],
            &["RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible"],
        );
        assert_eq!((torch.status, torch.pid), (Status::Sigbus, Some(4242)));
        let full = ending(
            Some(Exit::Code(1)),
            &[],
            &["OSError: [Errno 28] No space left on device"],
        );
        assert_eq!(full.status, Status::Enospc);
        let fds = ending(
            Some(Exit::Code(1)),
            &[],
            &["OSError: [Errno 24] Too many open files"],
        );
        assert_eq!(fds.status, Status::Emfile);
        assert_eq!(ending(Some(Exit::Code(3)), &[], &[]).status, Status::Error);
        assert_eq!(ending(None, &[], &[]).status, Status::Timeout);
        // A job that recovered and exited 0 passed; what it printed is noted.
        let ok = ending(Some(Exit::Code(0)), &[], &["No space left on device"]);
        assert_eq!(ok.status, Status::Pass);
        assert!(ok.message.contains("No space left"));
        assert_eq!(Exit::Signal(7).code(), 135);
    }

    #[test]
    fn traced_words_alone_are_evidence_not_the_end() {
        let evidence = vec![
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error."
                .to_string(),
        ];
        let v = classify(&Ending {
            exit: Some(Exit::Code(1)),
            pid: 10,
            orphans: &[],
            evidence: &evidence,
            timeout_s: 5.0,
            oom_kills: (Some(0), Some(0)),
            traced: true,
        });
        assert_eq!(v.status, Status::Error);
        assert!(
            v.message.contains("no process of the job died of SIGBUS"),
            "{}",
            v.message
        );
    }

    #[test]
    fn an_oom_kill_in_the_cgroup_is_named() {
        let evidence: Vec<String> = Vec::new();
        let v = classify(&Ending {
            exit: Some(Exit::Signal(9)),
            pid: 10,
            orphans: &[],
            evidence: &evidence,
            timeout_s: 5.0,
            oom_kills: (Some(0), Some(1)),
            traced: false,
        });
        assert_eq!((v.status, v.signal), (Status::Oom, Some(9)));
    }
}
