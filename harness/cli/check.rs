//! `shmbench check`: the /dev/shm mistakes in deployment files (Kubernetes and the operators'
//! objects, compose files, `docker run` lines, Slurm scripts), with the size each workload
//! needs; exit 1 when a finding at or above `--fail-on` exists, 2 when an input could not be
//! checked (the rest still is).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::check::demand::{Loaders, MAX_RANKS};
use crate::check::format::{format, FormatName};
use crate::check::rules::{self, Severity};
use crate::model::job::LoaderList;
use crate::plan::resolve;

/// `shmbench check --help`'s examples.
const EXAMPLES: &str = "\
Examples:
  shmbench check k8s/                           # every YAML, script and compose file under it
  shmbench check train.yaml --loaders train:8x2x128 --ranks 8
  helm template charts/train | shmbench check -
  shmbench check . --format sarif > shm.sarif   # for GitHub code scanning
  shmbench check . --format github              # annotations in a workflow
  shmbench check deploy/ --ignore host-ipc --fail-on error";

/// What `shmbench check --help` says after the rules.
const SILENCING_AND_EXIT: &str = "\
Silence one with the annotation or compose label `shmbench.io/ignore: SHM001`, a
`# shmbench-ignore: SHM020` comment, or --ignore.
Exit status: 1 when a finding at or above --fail-on exists, 2 when an input could not be
checked (the rest still is), 0 otherwise.";

/// What `shmbench check --help` shows after the flags: the examples, the rules (from the rule
/// table, so the list cannot drift from the rules there are), how to silence one, the exit status.
fn after_help() -> String {
    let rules: String = rules::RULES
        .iter()
        .map(|r| format!("  {} {} ({})\n", r.id, r.name, r.severity.word()))
        .collect();
    format!("{EXAMPLES}\n\nRules (docs/CHECK.md):\n{rules}{SILENCING_AND_EXIT}")
}

#[derive(clap::Args)]
#[command(after_help = after_help())]
pub(crate) struct Args {
    /// Files and directories to check (- for stdin)
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Output format
    #[arg(long, value_parser = super::choice::choice::<FormatName>(), default_value = "text")]
    pub(crate) format: FormatName,
    /// The loaders each rank runs, NAME:WORKERSxPREFETCHxBATCH, comma-separated: every
    /// workload is held to what they need (and counted as ML)
    #[arg(long)]
    pub(crate) loaders: Option<LoaderList>,
    /// Processes per node, each with its own loaders (default: what each workload says, its
    /// accelerators or launcher, else 1)
    #[arg(long)]
    pub(crate) ranks: Option<u32>,
    /// Exit 1 when a finding of this severity or worse exists
    #[arg(long, value_parser = super::choice::choice::<Severity>(), default_value = "warning")]
    pub(crate) fail_on: Severity,
    /// Rules to leave out (ids or names, comma-separated; `all`)
    #[arg(long, value_delimiter = ',')]
    pub(crate) ignore: Vec<String>,
    /// Loader flags: the sample shape, dtype, workers... the needs are sized with
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let (ignore, unknown) = rules::ignored(&args.ignore.join(","));
    if !unknown.is_empty() {
        let known: Vec<String> = rules::RULES
            .iter()
            .map(|r| format!("{} ({})", r.id, r.name))
            .collect();
        bail!(
            "--ignore {}: no such rule; the rules are {}",
            unknown.join(","),
            known.join(", ")
        );
    }
    if let Some(ranks) = args.ranks.filter(|r| !(1..=MAX_RANKS).contains(r)) {
        bail!("--ranks {ranks}: give the processes per node, 1 to {MAX_RANKS}");
    }
    let given = args.loaders.is_some() || args.ranks.is_some();
    let k = &args.knobs;
    let base_from_flags =
        k.workers.is_some() || k.prefetch.is_some() || k.batch.is_some() || k.shape.is_some();
    let base = resolve::tool_config("check", args.knobs.0, &super::platform())?;
    let loaders = Loaders {
        base,
        specs: args.loaders.map(|l| l.0).unwrap_or_default(),
        ranks: args.ranks,
        given,
        base_from_flags,
    };
    let report = crate::check::run(&args.paths, &loaders, &ignore);
    print!("{}", format(args.format).render(&report));
    let failing = report
        .findings
        .iter()
        .any(|f| f.rule.severity >= args.fail_on);
    Ok(ExitCode::from(
        match (report.problems.is_empty(), failing) {
            (false, _) => 2,
            (true, true) => 1,
            (true, false) => 0,
        },
    ))
}
