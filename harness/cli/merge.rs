//! `shmbench merge`: results files from several machines or runs as one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::results::merge;

/// What `shmbench merge --help` shows after the flags.
const AFTER_HELP: &str = "\
Example:
  shmbench merge hostA/*.csv hostB/*.csv --out results/all.csv";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    #[arg(long)]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let merged = merge::merge(&args.results, &args.out)?;
    println!(
        "{} rows from {} files -> {} ({} duplicate rows dropped)",
        merged.rows,
        args.results.len(),
        args.out.display(),
        merged.duplicates_dropped
    );
    Ok(ExitCode::SUCCESS)
}
