//! `shmbench history`: the same cells across runs ordered by an environment field.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use super::compare::parse_threshold;
use crate::analysis::compare::Match;
use crate::analysis::history::{self, By, Metric};
use crate::analysis::history_against;
use crate::present::history_table as table;
use crate::present::report::plots;
use crate::results::stream;

/// What `shmbench history --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench history results/*.csv --by kernel           # your matrix runs' files, two or more runs
  shmbench history results/*.csv --by time --threshold 10%
  shmbench history results/runtimes.csv --by runtime --against runc
  shmbench history results/*.csv --metric cpu-per-image --match name --plot reports/history";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Results CSV files holding two or more runs of the same cells
    #[arg(required = true)]
    pub(crate) results: Vec<PathBuf>,
    /// The environment field that orders the runs
    #[arg(long, value_parser = super::choice::choice::<By>(), default_value = "time")]
    pub(crate) by: By,
    /// The measure to follow: img-per-s, cpu-per-image (work, far less noisy), or
    /// instructions-per-image (where hardware counters measured it)
    #[arg(long, value_parser = super::choice::choice::<Metric>(), default_value = "img-per-s")]
    pub(crate) metric: Metric,
    /// How runs of a cell are recognised: config (same knobs) or name (same scenario and name,
    /// to follow a cell through a knob changed on purpose)
    #[arg(long = "match", value_parser = super::choice::choice::<Match>(), default_value = "config")]
    pub(crate) matching: Match,
    /// The smallest step of the metric that counts (and, by runtime, the img/s threshold of
    /// the judgement against --against)
    #[arg(long, default_value = "5%", value_parser = parse_threshold)]
    pub(crate) threshold: f64,
    /// With --by runtime: the OCI runtime each other runtime's column is judged against, under
    /// the same engine on the same host, with compare's tests [default: runc]
    #[arg(long, value_name = "OCI_RUNTIME")]
    pub(crate) against: Option<String>,
    /// Also draw the trends (PNG and SVG, change points marked) into this directory
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Also write the history as Markdown here
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // Built as read: a fleet's year of rows is never held.
    if args.against.as_deref().is_some_and(|a| a.trim().is_empty()) {
        bail!("--against names an OCI runtime (runc, crun, runsc, ...): it is empty");
    }
    if args.against.is_some() && args.by != By::Runtime {
        bail!("--against names the OCI runtime a runtime history judges the others against: it needs --by runtime");
    }
    let reference = args
        .against
        .as_deref()
        .unwrap_or(history_against::REFERENCE);
    let mut builder = history::Builder::new(args.by, args.metric, args.matching, args.threshold)
        .against(reference);
    let keys = builder.keys();
    stream::each_prepared(&args.results, keys, |keys, row| {
        builder.add_keyed(keys, row);
        Ok(())
    })?;
    let history = builder.finish()?;
    let text = table::render(&history);
    println!("{text}");
    if history.against.is_none() {
        println!("method: binary segmentation of each cell's run medians (piecewise-constant fit), a split kept when it lowers the squared error by more than 2 s^2 ln(n) and steps by at least {:.0}%", args.threshold * 100.0);
    }
    if let Some(path) = args.out {
        std::fs::write(&path, format!("# shmbench history\n\n{text}\n"))?;
    }
    if let Some(dir) = args.plot {
        std::fs::create_dir_all(&dir)?;
        for plot in plots::write_history(&history, &dir)? {
            println!("plot: {}", dir.join(&plot.png).display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
