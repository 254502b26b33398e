//! `shmbench export`: results in a format other tools read (Bencher's metric format).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::analysis::cell_key::CellKey;
use crate::analysis::summary::Summaries;
use crate::present::bmf;
use crate::results::stream;

/// What `--format` names: one format so far, named so a second can join it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Bmf,
}

/// What `shmbench export --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench export results/example-seed-matrix.csv > bmf.json   # the committed example run
  bencher run --adapter json --file bmf.json    # push to a Bencher project

One benchmark per cell (scenario/cell), measures: throughput (img/s), cpu-ms-per-image,
peak-shm-bytes, pass-share (with its Wilson interval), and crash-step for a cell that crashed;
medians with 95% intervals as lower/upper.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Results files (rows of all of them are exported together)
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// bmf: Bencher's metric format (JSON), for `bencher run --adapter json`
    #[arg(long, value_enum, default_value = "bmf")]
    pub(crate) format: Format,
    /// Write here instead of stdout
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // Summarised as read: memory grows with the cells, whatever the rows.
    let mut cells = Summaries::new();
    let mut rows = 0usize;
    stream::each_prepared(&args.results, CellKey::of, |key, row| {
        cells.add(key, row);
        rows += 1;
        Ok(())
    })?;
    if rows == 0 {
        bail!("no rows to export: the results files hold none");
    }
    let text = match args.format {
        Format::Bmf => serde_json::to_string_pretty(&bmf::render(cells.finish_with_rows()))?,
    };
    match args.out {
        Some(path) => {
            std::fs::write(&path, format!("{text}\n"))?;
            eprintln!("{rows} row(s) -> {}", path.display());
        }
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
