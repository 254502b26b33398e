//! `shmbench watch -- CMD`: runs any command under a chosen /dev/shm (a private tmpfs of
//! `--shm-size`, this machine's, or a container of the user's image), forwards its output and exit
//! status, and explains its /dev/shm: the peak and when, who held it, the trend, what it left
//! behind, and the size to give it. The run is a results row like any cell's.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

use super::progress::Terminal;
use crate::analysis::trend;
use crate::explain::Cause;
use crate::model::config::CellConfig;
use crate::model::cpus::CpuList;
use crate::model::knobs::{EngineKind, Knobs, OciRuntime, RuntimeKind};
use crate::model::record::Status;
use crate::model::repeat::Repeat;
use crate::model::size::ByteSize;
use crate::model::watch::{WatchSettings, DEFAULT_INTERVAL_MS};
use crate::orchestrate::event::Event;
use crate::orchestrate::runner;
use crate::plan::{self, advice};
use crate::present::report::{FormatName, ReportContent};
use crate::present::watch_text;

/// A day: the longest a watched job may run by default (and at most).
const DEFAULT_TIMEOUT_S: f64 = 86_400.0;

/// What `shmbench watch --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench watch --shm-size 64m -- python train.py        # Docker's default size, privately
  shmbench watch -- python train.py                        # this machine's /dev/shm
  shmbench watch --shm-size 2g --memory 4g --step-regex 'step (\\d+)' -- python train.py
  shmbench watch --image my-train:latest --shm-size 1g -- python /app/train.py
  shmbench watch --image my-train:latest --oci-runtime runsc -- python /app/train.py
  shmbench watch --shm-size 256m --sweep --report reports/job -- ./job.sh

The command's output and exit status are its own; the explanation goes to stderr at the end.
Ends: pass, sigbus (the command or a process of it died of SIGBUS, as ptrace saw it; with
--no-trace, also torch's \"killed by signal: Bus error\"), enospc, emfile, oom (the memory cgroup's
OOM killer), timeout, error (another non-zero exit). Why: the `cause:` line (docs/EXPLAIN.md).";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Size of the private /dev/shm (a tmpfs in a mount namespace, or the container's); without
    /// it the command uses this machine's /dev/shm, or the engine's default in Docker
    #[arg(long)]
    pub(crate) shm_size: Option<ByteSize>,
    /// auto (namespace when --shm-size is given, docker with --image, else host), host,
    /// namespace, docker (not vm: a VM runs shmbench's own cells, `shmbench run --runtime vm`)
    #[arg(long, value_parser = super::choice::choice::<RuntimeKind>())]
    pub(crate) runtime: Option<RuntimeKind>,
    /// Run the command in a container of this local image (your training image)
    #[arg(long, value_name = "IMAGE")]
    pub(crate) image: Option<String>,
    /// With --image: the container engine, docker or podman (docs/RUNTIMES.md)
    #[arg(long, value_parser = super::choice::choice::<EngineKind>(), requires = "image")]
    pub(crate) engine: Option<EngineKind>,
    /// With --image: the OCI runtime the engine starts the container with (runc, crun, runsc,
    /// or any it has registered; default: the engine's)
    #[arg(long, value_name = "NAME", requires = "image")]
    pub(crate) oci_runtime: Option<OciRuntime>,
    /// Memory limit (a memory cgroup; tmpfs pages count against it)
    #[arg(long)]
    pub(crate) memory: Option<ByteSize>,
    /// CPUs the job may run on, e.g. 0-3
    #[arg(long)]
    pub(crate) cpus: Option<CpuList>,
    /// Milliseconds between samples of /dev/shm
    #[arg(long, default_value_t = DEFAULT_INTERVAL_MS)]
    pub(crate) interval_ms: u64,
    /// End the command after this many seconds (its end is then `timeout`)
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_S)]
    pub(crate) timeout_s: f64,
    /// Regular expression on output lines: each match is a step (a number in its first group is
    /// the step's number), so a crash gets a step
    #[arg(long, value_name = "RE")]
    pub(crate) step_regex: Option<String>,
    /// Remove the files the command left in /dev/shm (in this machine's shared /dev/shm, only
    /// those a process of the command was seen holding)
    #[arg(long)]
    pub(crate) sweep: bool,
    /// Do not follow the job with ptrace (by default every SIGBUS and SIGSEGV is caught at its
    /// delivery, to name its cause): for a job that traces itself (gdb, py-spy, a debugger)
    #[arg(long)]
    pub(crate) no_trace: bool,
    /// Let the command keep this process's capabilities (as root: read any user's files, sudo,
    /// perf). By default it runs, like every cell, with none and with no_new_privs, so a job that
    /// needs root's fails as if by its own error. Host and namespace runtimes (a container has
    /// the engine's default capabilities)
    #[arg(long)]
    pub(crate) keep_privileges: bool,
    /// Name of the run in the results
    #[arg(long, default_value = "watch")]
    pub(crate) name: String,
    /// Results CSV (default: results/watch-<UTC time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Also write a report (Markdown, HTML, JSON, plots) into this directory
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// Whether `program` can be started here: a path to an executable, or a name on PATH.
fn findable(program: &str) -> bool {
    which::which(program).is_ok()
}

/// The cell that runs the command as asked.
pub(crate) fn config(args: &Args) -> Result<CellConfig> {
    if args.runtime == Some(RuntimeKind::Vm) {
        bail!("--runtime vm: watch runs your command on this machine (host, namespace) or in your image (docker); a VM of another kernel runs shmbench's own cells: `shmbench run --runtime vm --kernel debian:VERSION`");
    }
    let knobs = Knobs {
        shm_size: args.shm_size,
        runtime: args.runtime,
        image: args.image.clone(),
        engine: args.engine,
        oci_runtime: args.oci_runtime.clone(),
        memory: args.memory,
        cpus: args.cpus.clone(),
        timeout_s: Some(args.timeout_s),
        trace: Some(!args.no_trace),
        ..Knobs::default()
    };
    let settings = WatchSettings {
        command: args.command.clone(),
        interval_ms: args.interval_ms,
        step_regex: args.step_regex.clone(),
        sweep: args.sweep,
        keep_privileges: args.keep_privileges,
    };
    let config = plan::command_cell::cell(&knobs, &args.name, settings, &super::platform())
        .map_err(|e| anyhow!("--{e}"))?;
    if args.keep_privileges && config.knobs.runtime == RuntimeKind::Docker {
        bail!("--keep-privileges applies to --runtime host and namespace: a container has the engine's default capabilities (docker run --cap-add is the engine's way)");
    }
    check_findable(&config)?;
    Ok(config)
}

/// Why a failed command may have failed: it ran without root's capabilities while the harness
/// had them (a job that reads another user's file or calls sudo fails as if by its own error).
fn privileges_note(args: &Args, config: &CellConfig, exit_code: Option<i32>) -> Option<String> {
    let failed = exit_code.is_some_and(|code| code != 0);
    let dropped = !args.keep_privileges && config.knobs.runtime != RuntimeKind::Docker;
    (failed && dropped && nix::unistd::geteuid().is_root()).then(|| {
        "the command ran without capabilities and with no_new_privs (every cell does), though shmbench runs as root: if it needs root's (another user's files, sudo, perf), run it again with --keep-privileges; if it traces itself (strace, gdb, py-spy), with --no-trace".to_string()
    })
}

/// Refuses a command that cannot start here (in a user's image the cell finds out, and says).
pub(crate) fn check_findable(config: &CellConfig) -> Result<()> {
    let program = config.watch.as_ref().and_then(|w| w.command.first());
    match program {
        Some(p) if config.knobs.image.is_none() && !findable(p) => {
            bail!("command not found: '{p}' is not an executable file or a program on PATH")
        }
        _ => Ok(()),
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let config = config(&args)?;
    let (out, _claim) = super::outcome::results_out(args.out.clone(), "watch")?;
    let mut terminal = Terminal::new().observer();
    // The command's output, and notes; no step line over its output.
    let mut observe = |event: Event| match event {
        Event::Output(_) | Event::Note(_) | Event::Swept(_) | Event::Interrupted { .. } => {
            terminal(event)
        }
        _ => {}
    };
    let outcome = runner::run(
        std::slice::from_ref(&config),
        &out,
        Repeat::Fixed(1),
        // A watched command has no data path of shmbench's to calibrate (runner filters it
        // out too): First says nothing for it.
        runner::Calibrate::First,
        &mut observe,
    )?;
    let Some(record) = outcome.records.first() else {
        return Ok(super::outcome::stopped(&outcome));
    };
    if let Some(report) = &record.watch {
        let trend = trend::trend(&report.samples);
        // A job that died of a full /dev/shm filled it: its peak is the size it had, not its need.
        // Not one whose fault was explained by another cause (a truncated file, a limit).
        let other_cause = record
            .explanation
            .as_ref()
            .is_some_and(|e| !matches!(e.cause, Cause::TmpfsFull | Cause::Unknown));
        let filled = (matches!(record.status, Status::Sigbus | Status::Enospc) && !other_cause)
            .then_some(record.shm_seen_bytes);
        let sizing = advice::for_watched(
            record.metrics.peak_shm_bytes,
            filled,
            (config.knobs.runtime, config.knobs.engine),
            report.cgroup_limit,
        );
        eprint!(
            "\n{}",
            watch_text::render(record, report, trend.as_ref(), &sizing)
        );
        if let Some(e) = record.explanation.as_ref().filter(|_| other_cause) {
            eprintln!("  note:        it did not end for want of /dev/shm (cause {}): the trend and the size above describe its /dev/shm use, not its fix", e.cause);
        }
    } else {
        eprintln!("shmbench watch: {}: {}", record.status, record.message);
    }
    if let Some(note) = privileges_note(&args, &config, record.exit_code) {
        eprintln!("  note:        {note}");
    }
    eprintln!("  results:     {}", out.display());
    if let Some(dir) = &args.report {
        let files =
            ReportContent::load(std::slice::from_ref(&out))?.write(dir, &FormatName::ALL)?;
        eprintln!("  report:      {}", files[0].display());
    }
    Ok(match record.exit_code {
        Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
        // The command never ran (it could not start, or the harness ended it).
        None => ExitCode::from(if record.status.is_pass() { 0 } else { 2 }),
    })
}
