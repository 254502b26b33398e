//! A loader cell (emulated or real torch) run under `explain`'s tracer: the cell process forks
//! while it is still single-threaded; the child, seized before it goes on, is the cell (every
//! worker it forks, a torch cell's Python and its workers, followed) and writes its record down a
//! pipe; the parent follows it, reaps it, and prints the record with the cause of its ending
//! added, from the faults caught at their delivery. A watched command's cell traces its own job.
//!
//! A fork, not an exec of /proc/self/exe: in a user's image the binary runs through the ELF
//! interpreter shmbench brings, and /proc/self/exe is that interpreter.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};

use anyhow::{bail, Context, Result};

use explain::judge::{self, Said};
use explain::tracer::{self, Forked, Traced};
use explain::Exit;
use model::record::{CellRecord, Status};

/// Which side of the fork this process is on.
pub enum Side {
    /// The cell: go on and print the record (it goes down the pipe to the tracer).
    Cell,
    /// The tracer: [`finish`] follows the cell and prints its record, explained.
    Tracer(tracer::Tracer, OwnedFd),
}

/// Whether only this thread runs (a fork copies no other).
pub fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}

/// Forks the cell under the tracer.
pub fn fork() -> Result<Side> {
    let (from_cell, to_tracer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    match tracer::fork().context("forking the traced cell")? {
        Forked::Child => {
            drop(from_cell);
            // SAFETY: this thread alone runs; fd 1 becomes the pipe, and the cell dies with its
            // tracer.
            unsafe {
                libc::dup2(to_tracer.as_raw_fd(), 1);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            Ok(Side::Cell)
        }
        Forked::Parent(tracer) => Ok(Side::Tracer(tracer, from_cell)),
    }
}

/// The tracer's side: follows the cell, then prints its record with the cause of its ending.
pub fn finish(tracer: tracer::Tracer, from_cell: OwnedFd) -> Result<()> {
    let record = follow(tracer, from_cell)?;
    println!("{}", serde_json::to_string(&record)?);
    Ok(())
}

/// Follows the cell and returns its record with the cause of its ending.
fn follow(tracer: tracer::Tracer, from_cell: OwnedFd) -> Result<CellRecord> {
    let reading = std::thread::spawn(move || {
        let mut text = String::new();
        std::fs::File::from(from_cell)
            .read_to_string(&mut text)
            .map(|_| text)
    });
    let mut ends = Vec::new();
    let traced = tracer.follow(true, |pid, exit, command| ends.push((pid, exit, command)));
    let stdout = reading
        .join()
        .map_err(|_| anyhow::anyhow!("the traced cell's reader panicked"))?
        .context("reading the traced cell's record")?;
    let own = ends.iter().find(|(_, _, command)| *command).map(|e| e.1);
    let Some(line) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        bail!("the traced cell printed no record ({})", ended(own));
    };
    let mut record: CellRecord =
        serde_json::from_str(line).context("the traced cell's record is not valid JSON")?;
    let killed = Exit::killed(ends.iter().map(|&(pid, exit, _)| (pid, exit)));
    if record.explanation.is_none() {
        record.explanation = explain(&record, &traced, &killed);
    }
    Ok(record)
}

/// The cause of an untraced loader cell's end, from its record alone; `why` it was not traced.
pub fn explain_untraced(record: &mut CellRecord, why: &str) {
    let traced = Traced {
        untraced: Some(why.into()),
        ..Traced::default()
    };
    let killed: Vec<(u32, i32)> = record
        .failure
        .as_ref()
        .and_then(|f| Some((f.pid?, f.signal?)))
        .into_iter()
        .collect();
    record.explanation = explain(record, &traced, &killed);
}

fn ended(exit: Option<Exit>) -> String {
    match exit {
        Some(Exit::Code(c)) => format!("it exited with code {c}"),
        Some(Exit::Signal(s)) => format!("it was killed by signal {s}"),
        None => "its end was not seen".into(),
    }
}

/// The cause of a loader cell's end: the faults caught, its workers' deaths, and what its record
/// says of the rest (ENOSPC, EMFILE, ENOMEM, an OOM kill the cell saw). None for a pass with no
/// SIGBUS, a timeout or an error of the harness's own.
fn explain(
    record: &CellRecord,
    traced: &Traced,
    killed: &[(u32, i32)],
) -> Option<explain::Explanation> {
    let bus = traced.caught_bus();
    let explained = match record.status {
        Status::Pass | Status::Timeout | Status::Evicted | Status::Error => bus,
        _ => true,
    };
    if !explained {
        return None;
    }
    let said = match record.status {
        Status::Enospc => Some(Said::Enospc),
        Status::Emfile => Some(Said::Emfile),
        Status::Enomem => Some(Said::Enomem),
        Status::Enoent => Some(Said::Enoent),
        Status::Sigbus => Some(Said::BusError),
        _ => None,
    };
    judge::explain(&judge::Ending {
        traced,
        killed,
        said,
        oom_kills: u64::from(record.status == Status::Oom),
        memory_limit: record.config.knobs.memory.map(|m| m.bytes()),
        shm: Some((record.shm_seen_bytes, record.metrics.peak_shm_bytes)),
    })
}
