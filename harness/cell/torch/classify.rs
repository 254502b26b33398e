//! How a real-torch cell ended, from what torch said: its own messages are the evidence (a
//! worker killed by a signal, the RuntimeError of a failed shared-memory allocation, the fd table,
//! its timeout), classified by their text and the failed call rather than the errno alone, since
//! torch's message can carry a stale errno (pytorch#176069).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::INSTALL_HINT;
use model::record::Status;

/// How one worker process ended: `exitcode` as Python's multiprocessing gives it (-N: killed by
/// signal N).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
pub struct WorkerExit {
    pub pid: u32,
    pub exitcode: i32,
}

/// Everything known when the program is gone.
pub struct Ending<'a> {
    /// The program reported that every step ran.
    pub ended: bool,
    /// The exception it reported: (type, message).
    pub error: Option<&'a (String, String)>,
    /// Workers that had ended when the error was raised.
    pub worker_exits: &'a [WorkerExit],
    pub exit: Option<ExitStatus>,
    pub stderr_tail: &'a [String],
    /// The memory cgroup's OOM-kill count before and after the run.
    pub oom_kills: (Option<u64>, Option<u64>),
}

/// The cell's status, its message, and the worker and signal torch named.
#[derive(Debug, PartialEq)]
pub struct Verdict {
    pub status: Status,
    pub message: String,
    pub signal: Option<i32>,
    pub pid: Option<u32>,
}

/// Signal numbers of the names torch prints (strsignal's).
fn signal_number(name: &str) -> Option<i32> {
    Some(match name {
        "Bus error" => libc::SIGBUS,
        "Killed" => libc::SIGKILL,
        "Segmentation fault" => libc::SIGSEGV,
        "Aborted" => libc::SIGABRT,
        "Terminated" => libc::SIGTERM,
        "Interrupt" => libc::SIGINT,
        _ => return None,
    })
}

/// The worker pid in "DataLoader worker (pid 123)" or "(pid(s) 123, 456)".
pub fn worker_pid(message: &str) -> Option<u32> {
    let at = message.find("worker (pid")?;
    let digits: String = message[at..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The signal in "is killed by signal: Bus error."
pub fn killed_by(message: &str) -> Option<i32> {
    let rest = message.split("killed by signal: ").nth(1)?;
    let name = rest.split(['.', '\n']).next()?.trim();
    signal_number(name)
}

/// A worker's exception as torch re-raises it ("Caught RuntimeError in DataLoader worker process
/// 1.", the worker's traceback, then the error) as its first and last lines.
fn condensed(message: &str) -> String {
    let lines: Vec<&str> = message.lines().filter(|l| !l.trim().is_empty()).collect();
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() > 2 => format!("{first} {}", last.trim()),
        _ => message.to_string(),
    }
}

/// The failure torch's (or the C library's) words name: a full /dev/shm at allocation or write,
/// the fd table, torch's own timeout.
pub fn status_of_words(message: &str) -> Option<Status> {
    if message.contains("unable to mmap") && message.contains("Cannot allocate memory") {
        Some(Status::Enomem)
    } else if message.contains("unable to allocate shared memory")
        || message.contains("No space left on device")
    {
        Some(Status::Enospc)
    } else if message.contains("shared memory object") && message.contains("No such file") {
        Some(Status::Enoent)
    } else if message.contains("Too many open files") {
        Some(Status::Emfile)
    } else if message.contains("DataLoader timed out") {
        Some(Status::Timeout)
    } else {
        None
    }
}

pub fn classify(e: &Ending) -> Verdict {
    let oom = matches!(e.oom_kills, (Some(a), Some(b)) if b > a);
    let verdict = |status, message: String, signal, pid| Verdict {
        status,
        message,
        signal,
        pid,
    };
    if let Some((kind, message)) = e.error {
        if kind == "ImportError" {
            return verdict(
                Status::Error,
                format!("the cell's Python cannot import torch ({message}): {INSTALL_HINT}"),
                None,
                None,
            );
        }
        // The user's Dataset (the knob `dataset`) did not load: no cell ran.
        if kind == "DatasetError" {
            return verdict(Status::Error, message.to_string(), None, None);
        }
        // The evidence of a worker's death by a signal outranks the words torch chose for it
        // ("exited unexpectedly", a reset connection of the resource sharer).
        let died = e
            .worker_exits
            .iter()
            .find(|w| w.exitcode < 0)
            .map(|w| (w.pid, -w.exitcode));
        let named = killed_by(message);
        let pid = worker_pid(message).or(died.map(|(pid, _)| pid));
        let signal = named.or(died.map(|(_, sig)| sig));
        let mut text = format!("{kind}: {}", condensed(message));
        if let (Some((pid, sig)), None) = (died, named) {
            text.push_str(&format!(
                " (worker pid {pid} was killed by signal {sig}: {})",
                sys::signals::name(sig)
            ));
        }
        let status = if signal == Some(libc::SIGBUS) {
            Status::Sigbus
        } else if signal == Some(libc::SIGKILL) && oom {
            Status::Oom
        } else if kind == "MemoryError" {
            // An allocation refused with ENOMEM: at vm.max_map_count, Python's own allocator
            // may meet the limit before torch's mmap does (the message counts the mappings).
            Status::Enomem
        } else {
            status_of_words(message).unwrap_or(Status::Error)
        };
        return verdict(status, text, signal, pid);
    }
    if e.ended && e.exit.is_some_and(|s| s.success()) {
        return verdict(Status::Pass, String::new(), None, None);
    }
    // Gone without a word: the interpreter itself died or exited.
    let tail = e.stderr_tail.join(" | ");
    match e.exit.and_then(|s| s.signal()) {
        Some(sig) if sig == libc::SIGKILL && oom => verdict(
            Status::Oom,
            "the torch main process was OOM-killed: tmpfs pages count against the memory cgroup's limit".into(),
            Some(sig),
            None,
        ),
        Some(sig) => verdict(
            if sig == libc::SIGBUS {
                Status::Sigbus
            } else {
                Status::Error
            },
            format!("the torch main process was killed by signal {sig}. stderr: {tail}"),
            Some(sig),
            None,
        ),
        None => verdict(
            Status::Error,
            format!(
                "the torch program ended without a result ({}). stderr: {tail}",
                e.exit
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "not waited for".into())
            ),
            None,
            None,
        ),
    }
}

/// Why a Python could not import torch: the last line it wrote, or, for one that crashed on
/// import and wrote nothing, the signal that killed it.
pub fn failed_import(status: &std::process::ExitStatus, stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let last = stderr.lines().last().unwrap_or("").trim().to_string();
    match std::os::unix::process::ExitStatusExt::signal(status) {
        Some(sig) => format!("killed by signal {}", sys::signals::name(sig)),
        None if last.is_empty() => format!("{status}, with no message"),
        None => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: &str, message: &str) -> Verdict {
        died(kind, message, &[])
    }

    fn died(kind: &str, message: &str, workers: &[WorkerExit]) -> Verdict {
        let e = (kind.to_string(), message.to_string());
        classify(&Ending {
            ended: false,
            error: Some(&e),
            worker_exits: workers,
            exit: Some(ExitStatus::from_raw(0)),
            stderr_tail: &[],
            oom_kills: (Some(0), Some(0)),
        })
    }

    #[test]
    fn torch_messages_classify_by_their_text() {
        let bus = error("RuntimeError", "DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.");
        assert_eq!(bus.status, Status::Sigbus);
        assert_eq!((bus.signal, bus.pid), (Some(7), Some(4242)));
        // pytorch#176069: a stale errno in the text; the failed call says what happened.
        let alloc = error("RuntimeError", "Caught RuntimeError in DataLoader worker process 0.\nRuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_3>: Success (0)");
        assert_eq!(alloc.status, Status::Enospc);
        let write = error(
            "RuntimeError",
            "unable to write to file </torch_1_2_3>: No space left on device (28)",
        );
        assert_eq!(write.status, Status::Enospc);
        let fds = error(
            "RuntimeError",
            "Too many open files. Communication with the workers is no longer possible.",
        );
        assert_eq!(fds.status, Status::Emfile);
        // The main at vm.max_map_count (MapAllocator's words).
        let maps = error(
            "RuntimeError",
            "unable to mmap 64 bytes from file </torch_1_2_3>: Cannot allocate memory (12)",
        );
        assert_eq!(maps.status, Status::Enomem);
        let python = error(
            "MemoryError",
            "(this process held about 65530 memory mappings, 64990 of them batches it kept; vm.max_map_count is 65530)",
        );
        assert_eq!(python.status, Status::Enomem);
        let late = error("RuntimeError", "DataLoader timed out after 1 seconds");
        assert_eq!(late.status, Status::Timeout);
        let killed = error(
            "RuntimeError",
            "DataLoader worker (pid(s) 77) exited unexpectedly",
        );
        assert_eq!((killed.status, killed.pid), (Status::Error, Some(77)));
        // torch 2.9 often words a SIGBUS death as "exited unexpectedly" or as a reset connection;
        // the worker's exit code says what happened.
        let bus = [WorkerExit {
            pid: 77,
            exitcode: -7,
        }];
        let unexpected = died(
            "RuntimeError",
            "DataLoader worker (pid(s) 77) exited unexpectedly",
            &bus,
        );
        assert_eq!(
            (unexpected.status, unexpected.signal),
            (Status::Sigbus, Some(7))
        );
        assert!(unexpected.message.contains("killed by signal 7: Bus error"));
        let reset = died(
            "ConnectionResetError",
            "[Errno 104] Connection reset by peer",
            &bus,
        );
        assert_eq!((reset.status, reset.pid), (Status::Sigbus, Some(77)));
        assert!(error("ImportError", "No module named 'torch'")
            .message
            .contains("pip install torch"));
    }
}
