//! `shmbench explain --pid PID`: follows a running process (a training job shmbench did not
//! start) and every process it starts from then on, catches each SIGBUS and SIGSEGV at its
//! delivery and says its cause as it happens, until the process ends. The wheel's
//! `shmbench.explain.follow()` runs it beside a training script, whose worker deaths it then
//! explains (docs/EXPLAIN.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::explain::judge::{self, Ending};
use crate::explain::tracer::{self, Traced};
use crate::explain::Fault;
use crate::present::terminal::shown;

const AFTER_HELP: &str = "\
Examples:
  shmbench explain --pid 4242                       # a running job, from now on
  shmbench explain --pid 4242 --out causes.jsonl    # each cause also as a JSON line

Workers the process already has are not followed (only those it starts from now on): start it
before the first epoch, as shmbench.explain.follow() does from the training script. ptrace needs
the same user and, where kernel.yama.ptrace_scope is 1, the process's consent
(prctl(PR_SET_PTRACER), which follow() gives). A job shmbench starts is better watched:
shmbench watch -- CMD.

Exit status: 0 once the process was followed to its end (whatever its own end), 2 when it could
not be followed (no such process, another tracer, no permission).";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The process to follow
    #[arg(long)]
    pub(crate) pid: u32,
    /// Also append each explanation to this file, one JSON object per line
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", args.pid));
    let Ok(status) = status else {
        bail!(
            "no process {} here (`ps -p {}` shows none)",
            args.pid,
            args.pid
        );
    };
    let field = |name: &str| {
        let line = status.lines().find_map(|l| l.strip_prefix(name));
        line.map(|v| v.trim().to_string()).unwrap_or_default()
    };
    if field("State:").starts_with('Z') {
        bail!(
            "process {} has already exited (a zombie its parent has not reaped)",
            args.pid
        );
    }
    if field("Tgid:") != args.pid.to_string() {
        bail!(
            "{} is a thread of process {}: follow the process",
            args.pid,
            field("Tgid:")
        );
    }
    if let Some(path) = &args.out {
        let kind = std::fs::metadata(path).map(|m| m.file_type());
        if kind.is_ok_and(|k| !k.is_file()) {
            bail!(
                "--out {}: not a regular file (a FIFO or a device would block or lose the causes)",
                path.display()
            );
        }
    }
    let mut out = match &args.out {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("--out {}", path.display()))?,
        ),
        None => None,
    };
    let mut faulted = std::collections::BTreeSet::new();
    let on_fault = Box::new(move |fault: &Fault| {
        // A handler re-raising the fault it caught (torch's worker handler) is that fault's.
        if fault.by_kernel() {
            faulted.insert(fault.pid);
        } else if fault.self_sent() && faulted.contains(&fault.pid) {
            return;
        }
        let Some(why) = explained(fault) else { return };
        // The facts hold the job's own names (a mapped file's path): data, never a control.
        eprintln!("shmbench explain: {}: {}", why.cause, shown(&why.line()));
        eprintln!("  fix: {}", why.fix);
        if let Some(file) = out.as_mut() {
            let line = serde_json::to_string(&why).unwrap_or_default();
            if let Err(e) = writeln!(file, "{line}") {
                eprintln!("shmbench explain: --out: cannot write the cause ({e})");
            }
        }
    });
    // Said on stdout once the process is seized: a caller waiting for it (the wheel) reads it.
    let pid = args.pid;
    let on_seized = Box::new(move |refused: Option<&str>| {
        if refused.is_none() {
            println!("following {pid}");
            let _ = std::io::stdout().flush();
        }
    });
    let tracer = tracer::attach(args.pid)
        .on_fault(on_fault)
        .on_seized(on_seized);
    let mut end = None;
    let traced = tracer.follow(true, |_, exit, command| {
        if command {
            end = Some(exit);
        }
    });
    if let Some(why) = &traced.untraced {
        bail!("cannot follow pid {}: {why}", args.pid);
    }
    let n = traced.faults.len() as u64 + traced.faults_dropped;
    let ended = end.map_or("ended".to_string(), |e| format!("ended ({})", e.code()));
    eprintln!(
        "shmbench explain: pid {} {ended}; {n} fault(s) caught",
        args.pid
    );
    Ok(ExitCode::SUCCESS)
}

/// One fault explained alone.
fn explained(fault: &Fault) -> Option<crate::explain::Explanation> {
    let traced = Traced {
        faults: vec![fault.clone()],
        ..Traced::default()
    };
    judge::explain(&Ending {
        traced: &traced,
        killed: &[],
        said: None,
        oom_kills: 0,
        memory_limit: None,
        shm: None,
    })
}
