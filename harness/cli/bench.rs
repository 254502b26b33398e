//! `shmbench bench`: the harness measured against this machine's limits.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::progress::Terminal;
use ::benchmark::measure as bench;
use ::benchmark::scorecard;

/// What `shmbench bench --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench bench                          # about 30 s; prints each target and whether it is met
  shmbench bench --results /tmp/bench     # its matrix's CSV somewhere else";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Where the benchmark's matrix writes its CSV
    #[arg(long, default_value = "results")]
    pub(crate) results: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let measured = bench::run(
        &super::platform(),
        &args.results,
        &mut Terminal::new().observer(),
    )?;
    println!("{}", scorecard::render(&measured));
    Ok(ExitCode::SUCCESS)
}
