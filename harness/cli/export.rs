//! `shmbench export`: results in a format other tools read (Bencher's metric format).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::present::bmf;
use crate::results::csv;

#[derive(clap::Args)]
pub struct Args {
    /// Results files (rows of all of them are exported together)
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// bmf: Bencher's metric format (JSON), for `bencher run --adapter json`
    #[arg(long, value_parser = ["bmf"], default_value = "bmf")]
    pub format: String,
    /// Write here instead of stdout
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let rows = csv::read_all(&args.results)?;
    if rows.is_empty() {
        bail!("no rows to export: the results files hold none");
    }
    let text = serde_json::to_string_pretty(&bmf::render(&rows))?;
    match args.out {
        Some(path) => {
            std::fs::write(&path, format!("{text}\n"))?;
            eprintln!("{} row(s) -> {}", rows.len(), path.display());
        }
        None => println!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
