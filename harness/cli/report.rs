//! `shmbench report`: Markdown, self-contained HTML and JSON with plots, from results files only.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::present::report::{self, FormatName, ReportContent};

/// What `shmbench report --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench report results/example-seed-matrix.csv      # the committed example run
  shmbench report results/seed-matrix-*.csv              # your matrix runs' files
  shmbench report hostA.csv hostB.csv --out reports/a-vs-b --format markdown,html";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Results CSV files (several: shown side by side)
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// Output directory (default: reports/<stem of the first results file>)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Formats to write, comma-separated
    #[arg(
        long,
        value_parser = super::choice::choice::<FormatName>(),
        value_delimiter = ',',
        default_value = "markdown,html,json"
    )]
    pub(crate) format: Vec<FormatName>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let dir = args
        .out
        .unwrap_or_else(|| report::default_dir(&args.results[0]));
    let report = ReportContent::load(&args.results)?;
    for problem in &report.problems {
        eprintln!("shmbench: report: {problem}");
    }
    for file in report.write(&dir, &args.format)? {
        println!("{}", file.display());
    }
    Ok(ExitCode::SUCCESS)
}
