//! `shmbench history`: the same cells across runs ordered by an environment field.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::compare::parse_threshold;
use crate::analysis::history::{self, By};
use crate::present::history as table;
use crate::results::csv;

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// The environment field that orders the runs
    #[arg(long, value_enum, default_value = "time")]
    pub by: By,
    #[arg(long, default_value = "5%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Also write the history as Markdown here
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let rows = csv::read_all(&args.results)?;
    let history = history::build(&rows, args.by, args.threshold)?;
    let text = table::render(&history);
    println!("{text}");
    println!("method: binary segmentation of each cell's run medians (piecewise-constant fit), a split kept when it lowers the squared error by more than 2 s^2 ln(n) and steps by at least {:.0}%", args.threshold * 100.0);
    if let Some(path) = args.out {
        std::fs::write(&path, format!("# shmbench history\n\n{text}\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}
