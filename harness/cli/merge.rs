//! `shmbench merge`: results files from several machines or runs as one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::results::merge;

/// What `shmbench merge --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench merge hostA/*.csv hostB/*.csv --out results/all.csv
  shmbench merge results/nightly-*.csv --out year.csv && shmbench history year.csv --by kernel

A row that appears twice (the same host, run, cell and repeat: a file given twice, a copy) is
kept once; each row's files (time series, watch report) are copied beside the merged file.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Results files (CSV, of this schema or an older one shmbench reads)
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// The merged file to write (replaced atomically)
    #[arg(long)]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // Ctrl-C or SIGTERM stops the rows; the temporary files go as the merge returns.
    crate::sys::signals::install();
    let merged = match merge::merge(&args.results, &args.out) {
        Ok(merged) => merged,
        Err(e) => match e.downcast_ref::<merge::Stopped>() {
            Some(merge::Stopped(sig)) => {
                eprintln!("shmbench merge: {e}");
                return Ok(ExitCode::from(128 + *sig as u8));
            }
            None => return Err(e),
        },
    };
    println!(
        "{} rows from {} files -> {} ({} duplicate rows dropped)",
        merged.rows,
        args.results.len(),
        args.out.display(),
        merged.duplicates_dropped
    );
    Ok(ExitCode::SUCCESS)
}
