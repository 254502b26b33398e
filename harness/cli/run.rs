//! `shmbench run`: one ad-hoc cell from flags alone.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

use super::outcome;
use super::progress::Terminal;
use crate::orchestrate::runner;
use crate::plan::memory;
use crate::plan::resolve::Identity;
use crate::plan::resolve::Resolve;
use crate::sys::fingerprint::mem_total;

/// What `shmbench run --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench run                                 # seed setup on this machine's /dev/shm
  shmbench run --shm-size 64m                  # Docker's default size: SIGBUS at step 1
  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 \\
      --out x.csv
  shmbench run --shm-size 256m --workers 2 --batch 8 --retain-every 4 --steps 200
  shmbench run --runtime host --fail-on crash  # a prolog: exit 1 if this node's /dev/shm crashes it

Exit status: 0 the cell ran (passed, or crashed: a crash is a measurement), 1 it crashed and
--fail-on crash was given, 2 shmbench could not run it (bad input), 4 it ended in error (it
measured nothing: its runtime refused it), 128+N stopped by signal N.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Cell name in the results
    #[arg(long, default_value = "adhoc")]
    pub(crate) name: String,
    /// Results CSV (default: results/run-<UTC time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Also print the cell's full JSON record on stdout
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) repeat: super::repeat::RepeatArgs,
    #[command(flatten)]
    pub(crate) calibrate: super::repeat::CalibrateArgs,
    /// Run even if the predicted /dev/shm peak exceeds this machine's memory
    #[arg(long)]
    pub(crate) force: bool,
    /// Exit 1 when the cell crashed, not only 4 when it could not run (burn-in, prolog jobs)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub(crate) fail_on: Option<outcome::FailOn>,
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let name = args.name;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!(
            "--name '{name}': use letters, digits, '-' or '_' (it names files beside the results)"
        );
    }
    let id = Identity {
        scenario: "run".into(),
        environment: name.clone(),
        cell: name,
        claim: None,
    };
    let config = args
        .knobs
        .resolve(id, &super::platform())
        .map_err(|e| anyhow!("--{e}"))?;
    if !args.force {
        memory::refuse_oversized(std::slice::from_ref(&config), mem_total())?;
    }
    if args.repeat.more_runs_cap().is_some() {
        bail!("--max-repeat is the most rounds of --repeat auto (or, for matrix --baseline, of runs added to undecided cells): give --repeat auto");
    }
    let (out, _claim) = outcome::results_out(args.out, "run")?;
    let outcome = runner::run(
        std::slice::from_ref(&config),
        &out,
        args.repeat.repeat(),
        args.calibrate.calibrate(),
        &mut Terminal::new().observer(),
    )?;
    if args.json {
        for record in &outcome.records {
            println!("{}", serde_json::to_string(record)?);
        }
    }
    outcome::print(&outcome);
    Ok(outcome::exit_code(&outcome, args.fail_on))
}
