//! The `shmbench` command line: clap types, one file per subcommand, and the only code that prints
//! to the terminal. Each subcommand parses its flags, calls the layer that does the work and
//! prints what comes back; the exit status follows from the result.

mod bench;
mod calibrate;
mod check;
mod choice;
mod compare;
mod doctor;
mod explain;
mod export;
mod fidelity;
mod fleet;
mod history;
mod image;
mod internal;
mod k8s;
mod knob_flags;
mod logs;
mod matrix;
mod merge;
mod min_shm;
mod node;
mod node_emit;
mod outcome;
mod progress;
mod repeat;
mod report;
mod run;
mod seconds;
mod shm;
mod slurm;
mod slurm_verify;
mod sweep;
mod text_or_json;
mod tune;
mod watch;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::plan::resolve::Platform;
use crate::runtime::docker::engine;
use crate::sys::fingerprint::mem_total;

/// What `shmbench --help` says of shmbench, in one line and in full.
const ABOUT: &str =
    "Reproduce, measure and track the PyTorch DataLoader \"Bus error\" (/dev/shm exhaustion)";
const LONG_ABOUT: &str = "shmbench runs an emulation of the PyTorch DataLoader (worker processes \
    that put every batch in POSIX shared memory, exactly as torch allocates and shares it) under a \
    real /dev/shm of a chosen size, and records whether it passes or crashes (SIGBUS, ENOSPC, ...) \
    at which step, and at how many images per second.";

/// What `shmbench --help` shows after the subcommands. Each subcommand's own examples are in
/// its file, beside its flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench matrix                                   # the how-to's five rows, measured here
  shmbench matrix --steps 20 --cells docker-default,docker-tuned
  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 \\
      --out x.csv
  shmbench run --shm-size 64m --strategy file_system --workers 1 --batch 8";

#[derive(Parser)]
#[command(
    name = "shmbench",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each one's examples and notes are its file's `AFTER_HELP`.
#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run a scenario's cells (default: the how-to's validation matrix) and print the table
    Matrix(matrix::Args),
    /// Run one ad-hoc cell from flags alone
    Run(run::Args),
    /// Run one cell config in this process tree and print its JSON record (the protocol every
    /// runtime launches; you rarely call it by hand)
    Cell(internal::CellArgs),
    /// How much /dev/shm a loader needs, whether it has it here, and the fixes that fit
    Doctor(doctor::Args),
    /// Find the smallest /dev/shm a loader passes in, by bisection over real cells
    #[command(name = "min-shm")]
    MinShm(min_shm::Args),
    /// Find the fastest DataLoader settings (workers, prefetch, pin_memory, start method,
    /// sharing strategy, persistent workers) that fit a /dev/shm and memory budget, by
    /// measurement
    Tune(tune::Args),
    /// Measure this machine's data-path limits (memset, memcpy, fresh shared segments per strategy)
    Calibrate(calibrate::Args),
    /// Benchmark the harness against this machine's limits (host cell, efficiency, matrix time,
    /// RSS)
    Bench(bench::Args),
    /// Compare two results files cell by cell, beyond noise; exit 1 when anything regressed
    Compare(compare::Args),
    /// Merge results files from several machines or runs into one (older schemas read as this one)
    Merge(merge::Args),
    /// Results in a format trackers read: Bencher's metric format (JSON)
    Export(export::Args),
    /// Trends of the same cells across runs ordered by an environment field, with change points
    History(history::Args),
    /// Make a report (Markdown, self-contained HTML, JSON, PNG/SVG plots) from results files
    Report(report::Args),
    /// Remove /dev/shm segments left by shmbench runs that died (SIGKILL)
    #[command(after_help = sweep::AFTER_HELP)]
    Sweep,
    /// Audit a live /dev/shm (or any tmpfs): every entry, who holds it (fd or mapping, unlinked
    /// ones too) and in which container, pod or job, and which files are stale (unheld, their
    /// named owner gone); remove those on request
    Shm(shm::Args),
    /// This node's /dev/shm against a policy, for the fleet's health checks: exit 0 ok, 1 a
    /// problem, 2 unknown, the first line the reason; Prometheus metrics with --textfile
    Node(node::Args),
    /// The fleet's odd nodes: each node's cells against the other nodes' (or a baseline's),
    /// flagged beyond a statistical and a practical threshold, with why; drain commands printed
    Fleet(fleet::Args),
    /// Measure the emulation against the real DataLoader: every cell with both loaders
    Fidelity(fidelity::Args),
    /// Show, rebuild or remove the container image the Docker runtime builds for itself
    Image(image::Args),
    /// Run any command under a chosen /dev/shm and explain its use: peak, who held it, trend,
    /// leftovers, the size to give it
    Watch(watch::Args),
    /// Follow a running process (a training job) and say the cause of each Bus error in it as
    /// it happens: a full tmpfs, a memory limit, a truncated mapped file, a kill, ...
    Explain(explain::Args),
    /// Find the /dev/shm mistakes in deployment files (Kubernetes, Kubeflow, KubeRay, JobSet,
    /// Compose, docker run lines, Slurm scripts) before they run
    Check(check::Args),
    /// Kubernetes: the scenario's cells as an Indexed Job per pod shape, and its pods' records
    /// back as results
    K8s(k8s::Args),
    /// Slurm: the scenario's cells as a job array, and its tasks' records and ends back as results
    Slurm(slurm::Args),
    #[command(hide = true)]
    Worker(internal::WorkerArgs),
    #[command(hide = true)]
    Job(internal::JobArgs),
    /// Copy this binary to a path (an init container's way to hand shmbench to another
    /// container of its pod: `node --emit daemonset`)
    #[command(hide = true, name = "copy-self")]
    CopySelf(internal::CopySelfArgs),
}

/// This machine, as planning sees it (memory; whether a Docker engine answers, asked lazily).
fn platform() -> Platform {
    Platform::new(mem_total(), engine::reachable)
}

/// Runs the parsed command; its exit status.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let code = dispatch(cli);
    // Whatever this run made is gone by now: its owner record proves nothing any more.
    crate::sys::run_owner::release_run();
    code
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Matrix(args) => matrix::run(args),
        Command::Run(args) => run::run(args),
        Command::Cell(args) => internal::cell(args),
        Command::Doctor(args) => doctor::run(args),
        Command::MinShm(args) => min_shm::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Export(args) => export::run(args),
        Command::History(args) => history::run(args),
        Command::Report(args) => report::run(args),
        Command::Fidelity(args) => fidelity::run(args),
        Command::Sweep => sweep::run(),
        Command::Shm(args) => shm::run(args),
        Command::Node(args) => node::run(args),
        Command::Fleet(args) => fleet::run(args),
        Command::Image(args) => image::run(args),
        Command::Watch(args) => watch::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Check(args) => check::run(args),
        Command::K8s(args) => k8s::run(args),
        Command::Slurm(args) => slurm::run(args),
        Command::Worker(args) => internal::worker(args),
        Command::Job(args) => internal::job(args),
        Command::CopySelf(args) => internal::copy_self(args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of every subcommand: defaults that parse (`--format`'s among them),
    /// no two flags of one name, help that renders.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// The `shmbench ...` commands of a help's `Examples:` section, each as its words: lines
    /// joined where they end in `\`, comments dropped, each command of a `&&`, `|` or `;`
    /// chain that starts with `shmbench` (after any `VAR=value`), redirections dropped.
    fn examples(help: &str) -> Vec<Vec<String>> {
        let Some(section) = help.split("Examples:\n").nth(1) else {
            return Vec::new();
        };
        let section = section.split("\n\n").next().unwrap_or(section);
        let joined = section.replace("\\\n", " ");
        let mut out = Vec::new();
        for line in joined.lines() {
            let code = line.split(" #").next().unwrap_or(line);
            for command in code
                .split("&&")
                .flat_map(|c| c.split('|'))
                .flat_map(|c| c.split(';'))
            {
                let Some(words) = shlex::split(command) else {
                    continue;
                };
                let words: Vec<String> = words
                    .into_iter()
                    .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                    .collect();
                if words.first().map(String::as_str) != Some("shmbench") {
                    continue;
                }
                let mut kept = Vec::new();
                let mut skip_next = false;
                for w in words {
                    if skip_next {
                        skip_next = false;
                    } else if w == ">" || w == "<" || w == "2>" {
                        skip_next = true;
                    } else if !w.starts_with('>') && !w.starts_with("2>") {
                        kept.push(w);
                    }
                }
                out.push(kept);
            }
        }
        out
    }

    /// Every example a help shows is a command line shmbench accepts: parsed, never run.
    #[test]
    fn every_example_in_the_help_parses() {
        fn visit(command: &clap::Command, seen: &mut Vec<String>) {
            if let Some(help) = command.get_after_help() {
                seen.push(help.to_string());
            }
            for sub in command.get_subcommands() {
                visit(sub, seen);
            }
        }
        let mut helps = Vec::new();
        visit(&super::Cli::command(), &mut helps);
        let mut failures = Vec::new();
        let mut checked = 0;
        for help in &helps {
            for words in examples(help) {
                checked += 1;
                if let Err(e) = <super::Cli as clap::Parser>::try_parse_from(&words) {
                    if !matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) {
                        failures.push(format!("{}: {}", words.join(" "), e.kind()));
                    }
                }
            }
        }
        assert!(checked > 60, "only {checked} examples found");
        assert!(failures.is_empty(), "{failures:#?}");
    }
}
