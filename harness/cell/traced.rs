//! A loader cell (emulated or real torch) run under `explain`'s tracer: this process re-executes
//! itself as the cell, seized before it runs (every worker it forks, a torch cell's Python and its
//! workers followed), reaps it, and adds to the record it prints the cause of its ending, from
//! the faults caught at their delivery. A watched command's cell traces its own job instead.
//!
//! The record passes through: the cell's stdout is read here, its stderr (progress lines) and
//! stdin (a container's lifeline) are the cell's own.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use explain::judge::{self, Said};
use explain::tracer::{self, Exit, Traced};
use model::record::{CellRecord, Status};

/// Set in the cell this process re-executes: it runs the cell itself.
const TRACED_ENV: &str = "SHMBENCH_CELL_TRACED";

/// Whether this process is the cell a tracer started.
pub fn is_traced_cell() -> bool {
    std::env::var_os(TRACED_ENV).is_some()
}

/// Runs this same command again as the cell, traced, and returns its record with the cause of
/// its ending.
pub fn run() -> Result<CellRecord> {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(std::env::args_os().skip(1))
        .env(TRACED_ENV, "1")
        .stdout(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; the cell dies with this process.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let (tracer, child_ends) = tracer::prepare(&mut cmd)?;
    let trace = true;
    let following = std::thread::spawn(move || {
        let mut ends = Vec::new();
        let traced = tracer.follow(trace, |pid, exit, command| ends.push((pid, exit, command)));
        (ends, traced)
    });
    let spawned = cmd.spawn();
    drop(child_ends);
    let mut child = spawned.context("cannot start the traced cell")?;
    let mut stdout = String::new();
    let read = child
        .stdout
        .take()
        .map(|mut s| s.read_to_string(&mut stdout));
    let (ends, traced) = following
        .join()
        .map_err(|_| anyhow::anyhow!("the tracer of the cell panicked"))?;
    let own = ends.iter().find(|(_, _, command)| *command).map(|e| e.1);
    let line = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let Some(line) = line.filter(|_| matches!(read, Some(Ok(_)))) else {
        bail!("the traced cell printed no record ({})", ended(own));
    };
    let mut record: CellRecord =
        serde_json::from_str(line).context("the traced cell's record is not valid JSON")?;
    let killed: Vec<(u32, i32)> = ends
        .iter()
        .filter_map(|&(pid, exit, _)| match exit {
            Exit::Signal(s) => Some((pid, s)),
            Exit::Code(_) => None,
        })
        .collect();
    if record.explanation.is_none() {
        record.explanation = explain(&record, &traced, &killed);
    }
    Ok(record)
}

/// The cause of an untraced loader cell's end (`trace` false), from its record alone.
pub fn explain_untraced(record: &mut CellRecord) {
    let traced = Traced {
        untraced: Some("the trace knob is false".into()),
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
    let bus = traced.faults.iter().any(|f| f.signal == libc::SIGBUS);
    let explained = match record.status {
        Status::Pass => bus,
        Status::Timeout | Status::Evicted | Status::Error => bus,
        _ => true,
    };
    if !explained {
        return None;
    }
    let said = match record.status {
        Status::Enospc => Some(Said::Enospc),
        Status::Emfile => Some(Said::Emfile),
        Status::Enomem => Some(Said::Enomem),
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
