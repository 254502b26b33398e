//! Names the cause of a job's ending from what is known when it is gone: the faults caught at
//! delivery first (a fault's siginfo and the file system behind its address decide), then who
//! died by which signal, the memory cgroup's OOM kills, and last the job's own words (ENOSPC,
//! EMFILE, ENOMEM, ENOENT), which are kept as evidence, never taken for a fault.

use crate::cause::{Cause, Explanation};
use crate::fault::{code, Fault, FileSystem, Mapping};
use crate::tracer::Traced;

/// What the job's output said, as the caller read it (torch's and the C library's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// "killed by signal: Bus error" and the like.
    BusError,
    Enospc,
    /// ENOSPC in words that name no shared memory (a full disk, a quota).
    EnospcElsewhere,
    Emfile,
    Enomem,
    Enoent,
}

/// Everything known about a job that did not pass.
pub struct Ending<'a> {
    pub traced: &'a Traced,
    /// Processes of the job killed by a signal: (pid, signal).
    pub killed: &'a [(u32, i32)],
    pub said: Option<Said>,
    /// OOM kills in the job's memory cgroup while it ran, and its limit.
    pub oom_kills: u64,
    pub memory_limit: Option<u64>,
    /// The /dev/shm the job used: its size and the most the job held of it.
    pub shm: Option<(u64, u64)>,
}

/// The explanation of `e`; None when nothing about it is a Bus error or its look-alikes (a
/// plain non-zero exit).
pub fn explain(e: &Ending) -> Option<Explanation> {
    let faults = &e.traced.faults;
    let died = |f: &&crate::fault::Fault| e.killed.contains(&(f.pid, f.signal));
    // The SIGBUS of a process that died of one first: another may have caught its own and
    // gone on.
    let bus = |f: &&crate::fault::Fault| f.signal == libc::SIGBUS && f.by_kernel();
    let kernel_bus = (faults.iter().filter(bus).find(died)).or_else(|| faults.iter().find(bus));
    if let Some(f) = kernel_bus {
        return Some(of_fault(f));
    }
    // A self-sent SIGBUS with no fault before it is a `raise`; from another process, a kill.
    if let Some(f) = faults
        .iter()
        .find(|f| f.signal == libc::SIGBUS && !f.by_kernel())
    {
        return Some(sent(f));
    }
    if e.oom_kills > 0 {
        let limit = e
            .memory_limit
            .map(|l| format!(" of limit {}", bytes(l)))
            .unwrap_or_default();
        let mut facts = vec![format!(
            "the OOM killer took {} process(es) in the job's memory cgroup{limit}",
            e.oom_kills
        )];
        if let Some((_, peak)) = e.shm.filter(|(_, peak)| *peak > 0) {
            facts.push(format!(
                "/dev/shm held up to {} of it (tmpfs pages are charged to the cgroup)",
                bytes(peak)
            ));
        }
        return Some(decided(Cause::MemoryLimit, facts, None, false));
    }
    if let Some(words) = e.said.filter(|s| *s != Said::BusError) {
        return Some(of_words(words, e.shm));
    }
    // A SIGSEGV is a cause only where it killed: a JIT or a runtime handles its own.
    if let Some(f) = faults.iter().filter(|f| f.by_kernel()).find(died) {
        return Some(segfault(f));
    }
    let bus_death = e.killed.iter().find(|(_, s)| *s == libc::SIGBUS);
    if bus_death.is_some() || e.said == Some(Said::BusError) {
        let fact = match (&e.traced.untraced, bus_death) {
            (Some(why), _) => format!("the fault was not caught: {why}"),
            (None, Some((pid, _))) => format!("process {pid} died of SIGBUS, yet no delivery of it was caught (a process outside the trace?)"),
            (None, None) => "the job said a process died of a Bus error, but no process of it was seen to (its words alone)".into(),
        };
        let pid = bus_death.map(|(p, _)| *p);
        let mut why = decided(Cause::Unknown, vec![fact], pid, false);
        if e.traced.untraced.is_none() && bus_death.is_none() {
            why.fix = "no process of the job died of SIGBUS: the sentence was printed, not lived (a log replayed, an exception caught and re-raised, a retry); look at what printed it".into();
        }
        return Some(why);
    }
    None
}

fn decided(cause: Cause, facts: Vec<String>, pid: Option<u32>, caught: bool) -> Explanation {
    Explanation {
        cause,
        fix: cause.fix().to_string(),
        facts,
        pid,
        caught,
    }
}

/// The cause of a SIGBUS the kernel raised.
fn of_fault(f: &Fault) -> Explanation {
    let at = |facts: Vec<String>, cause| decided(cause, facts, Some(f.pid), true);
    let head = format!(
        "SIGBUS ({}) in pid {} ({})",
        f.code_name(),
        f.pid,
        f.command
    );
    if matches!(f.code, code::BUS_MCEERR_AR | code::BUS_MCEERR_AO) {
        let where_ = f.address.map(|a| format!("at {a:#x}")).unwrap_or_default();
        return at(
            vec![head, format!("a memory error {where_}")],
            Cause::Hardware,
        );
    }
    let Some(m) = &f.mapping else {
        let fact = "its address was in no mapping when read".to_string();
        return at(vec![head, fact], Cause::Unknown);
    };
    let mut facts = vec![head, in_file(m)];
    let fs = m.fs.as_ref();
    if let Some(fs) = fs {
        facts.push(space(fs));
    }
    let page = fs.map_or(4096, |fs| fs.block_bytes.max(4096));
    let beyond = m
        .file_bytes
        .is_some_and(|size| m.offset >= size.div_ceil(page) * page);
    if beyond {
        facts.push(format!(
            "the file is {} long: the fault lies beyond its end (truncated under the mapping)",
            bytes(m.file_bytes.unwrap_or(0))
        ));
        return at(facts, Cause::MappedFile);
    }
    match fs {
        Some(fs) if fs.is_hugetlbfs() => at(facts, Cause::HugePages),
        Some(fs) if fs.is_tmpfs() && fs.full() => at(facts, Cause::TmpfsFull),
        Some(fs) if fs.is_tmpfs() => {
            // Room in the tmpfs, yet no page: the memory cgroup refused the charge, or
            // another process freed space between the fault and this reading.
            if let Some(limit) = at_limit(f) {
                facts.push(limit);
                return at(facts, Cause::MemoryLimit);
            }
            facts.push("the tmpfs had room when read (freed since the fault?)".into());
            at(facts, Cause::Unknown)
        }
        Some(_) => {
            facts.push(match m.file_bytes {
                Some(_) => "within the file's size: a read of it failed under the mapping (an NFS or FUSE error, a bad disk)".into(),
                None => "the file's size could not be read (unlinked, and no process of the job holds an fd to it): truncated under the mapping, or a read of it failed".into(),
            });
            at(facts, Cause::MappedFile)
        }
        None => at(facts, Cause::Unknown),
    }
}

/// The memory cgroup at its limit at the fault, in words.
fn at_limit(f: &Fault) -> Option<String> {
    let m = f.memory.as_ref()?;
    let (limit, usage) = (m.limit_bytes?, m.usage_bytes?);
    (usage + 4 * 1024 * 1024 >= limit).then(|| {
        format!(
            "memory cgroup {} at {} of its {} limit, {} of it tmpfs pages",
            m.path,
            bytes(usage),
            bytes(limit),
            bytes(m.shmem_bytes.unwrap_or(0))
        )
    })
}

fn in_file(m: &Mapping) -> String {
    let gone = if m.deleted { ", unlinked" } else { "" };
    format!(
        "address in {}{gone} at offset {}",
        if m.path.is_empty() {
            "anonymous memory"
        } else {
            &m.path
        },
        bytes(m.offset)
    )
}

fn space(fs: &FileSystem) -> String {
    let huge = fs
        .huge_pages_free
        .map(|n| {
            format!(
                ", {n} free huge pages of {} on the node",
                bytes(fs.block_bytes)
            )
        })
        .unwrap_or_default();
    if fs.mount_point.is_empty() {
        // A file system mounted nowhere: a memfd's, or MAP_HUGETLB's anonymous memory.
        return format!("the kernel's own {} (mounted nowhere){huge}", fs.kind);
    }
    format!(
        "{} ({}) {}, {} free at the fault{huge}",
        fs.mount_point,
        fs.kind,
        bytes(fs.size_bytes),
        bytes(fs.free_bytes)
    )
}

fn sent(f: &Fault) -> Explanation {
    let who = match &f.sender {
        Some(s) if s.pid == f.pid => format!("pid {} raised it itself", s.pid),
        Some(s) if s.pid == 0 => format!(
            "sent from outside the process's pid namespace (uid {})",
            s.uid
        ),
        Some(s) => format!(
            "sent by pid {} (uid {}{})",
            s.pid,
            s.uid,
            s.command
                .as_ref()
                .map(|c| format!(", {c}"))
                .unwrap_or_default()
        ),
        None => "sent by a process".into(),
    };
    let head = format!(
        "SIGBUS ({}) to pid {} ({})",
        f.code_name(),
        f.pid,
        f.command
    );
    decided(Cause::Sent, vec![head, who], Some(f.pid), true)
}

fn segfault(f: &Fault) -> Explanation {
    let what = if f.signal == libc::SIGSEGV {
        "SIGSEGV"
    } else {
        "a fault"
    };
    let head = format!(
        "{what} ({}) in pid {} ({})",
        f.code_name(),
        f.pid,
        f.command
    );
    let place = match &f.mapping {
        Some(m) => in_file(m),
        None => format!("address {:#x} in no mapping", f.address.unwrap_or(0)),
    };
    decided(Cause::Segfault, vec![head, place], Some(f.pid), true)
}

fn of_words(words: Said, shm: Option<(u64, u64)>) -> Explanation {
    // ENOSPC naming no file system is the tmpfs's where the job filled it (to within a page).
    let filled = shm.is_some_and(|(size, peak)| size > 0 && peak + 4096 >= size);
    let words = match words {
        Said::EnospcElsewhere if filled => Said::Enospc,
        other => other,
    };
    let shm_fact = shm.map(|(size, peak)| {
        format!(
            "/dev/shm {}, the job held up to {} of it",
            bytes(size),
            bytes(peak)
        )
    });
    let (cause, fact) = match words {
        Said::Enospc => (
            Cause::TmpfsFull,
            "the job said ENOSPC (No space left on device)",
        ),
        Said::EnospcElsewhere => (
            Cause::Unknown,
            "the job said ENOSPC in words that name no shared memory: a full disk or a quota, not /dev/shm?",
        ),
        Said::Emfile => (Cause::FdLimit, "the job said EMFILE (Too many open files)"),
        Said::Enomem => (Cause::MapCount, "the job said mmap failed with ENOMEM"),
        Said::Enoent => (
            Cause::SegmentMissing,
            "the job said ENOENT opening a shared segment",
        ),
        Said::BusError => (Cause::Unknown, "the job said Bus error"),
    };
    let facts = std::iter::once(fact.to_string()).chain(shm_fact).collect();
    let mut why = decided(cause, facts, None, false);
    if words == Said::EnospcElsewhere {
        why.fix = "free room on the file system its words name (a disk, a quota); a bigger /dev/shm does not help".into();
    }
    why
}

/// Bytes in the unit that reads best: "64 MiB", "4 KiB", "1.2 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 || value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cause::Cause;
    use crate::exit::Exit;
    use crate::tracer::prepare;
    use std::process::Command;

    /// Runs `sh -c script` under the tracer (real processes, real faults); what it saw, its end
    /// and who died by which signal. The tracer reaps every child (a Child's wait finds none).
    #[allow(clippy::zombie_processes)]
    fn traced(script: &str) -> (Traced, Exit, Vec<(u32, i32)>) {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        let (tracer, child_ends) = prepare(&mut cmd).unwrap();
        let following = std::thread::spawn(move || {
            let mut ends = Vec::new();
            let traced = tracer.follow(true, |pid, exit, _| ends.push((pid, exit)));
            (traced, ends)
        });
        let child = cmd.spawn().unwrap();
        drop(child_ends);
        let (traced, ends) = following.join().unwrap();
        let own = ends.iter().find(|(p, _)| *p == child.id()).unwrap().1;
        let killed = Exit::killed(ends.iter().copied());
        (traced, own, killed)
    }

    fn cause(traced: &Traced, killed: &[(u32, i32)]) -> Option<Explanation> {
        explain(&Ending {
            traced,
            killed,
            said: None,
            oom_kills: 0,
            memory_limit: None,
            shm: None,
        })
    }

    #[test]
    #[allow(clippy::zombie_processes)] // reaped by the tracer, as above
    fn faults_are_caught_at_delivery_and_delivered_unchanged() {
        // A file truncated under its mapping, read beyond its new end by a grandchild.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data.bin");
        std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
        let script = format!(
            "python3 -c \"import mmap,os; f=open('{}','r+b'); m=mmap.mmap(f.fileno(), 1<<20); os.truncate('{}', 4096); m[65536]\"; echo after",
            file.display(),
            file.display()
        );
        let (seen, own, killed) = traced(&script);
        assert_eq!(seen.untraced, None);
        assert_eq!(
            own,
            Exit::Code(0),
            "the shell goes on: the signal was the grandchild's"
        );
        assert!(killed.iter().any(|(_, s)| *s == libc::SIGBUS), "{killed:?}");
        let why = cause(&seen, &killed).unwrap();
        assert_eq!(why.cause, Cause::MappedFile, "{why:?}");
        let m = seen.faults[0].mapping.as_ref().unwrap();
        assert_eq!((m.offset, m.file_bytes), (65536, Some(4096)));

        // A kill from another process is not a fault.
        let (seen, _, killed) = traced("sleep 5 & kill -BUS $!; wait");
        let why = cause(&seen, &killed).unwrap();
        assert_eq!(why.cause, Cause::Sent, "{why:?}");
        let sender = seen.faults[0].sender.as_ref().unwrap();
        assert_ne!(sender.pid, seen.faults[0].pid);

        // Untraced, the same end is known from the exit status only.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "kill -BUS $$"]);
        let (tracer, ends) = prepare(&mut cmd).unwrap();
        let following = std::thread::spawn(move || tracer.follow(false, |_, _, _| {}));
        let _child = cmd.spawn().unwrap();
        drop(ends);
        let seen = following.join().unwrap();
        assert!(seen.untraced.unwrap().contains("--no-trace"));
        assert!(seen.faults.is_empty());
    }
}
