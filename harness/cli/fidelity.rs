//! `shmbench fidelity`: the emulation measured against real torch, cell by cell; exit 1 when an
//! outcome differs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use super::outcome;
use super::progress::Terminal;
use crate::plan::scenario::{self, Scenario};
use crate::results::csv;
use ::fidelity::pairs as fidelity;
use ::fidelity::run as run_pairs;
use ::fidelity::table;

/// What `shmbench fidelity --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench fidelity --python ~/venvs/torch/bin/python
  shmbench fidelity --with ~/venvs/torch29/bin/python --with ~/venvs/torch/bin/python --repeat 3
  shmbench fidelity --cells seed-fd-64m,seed-fd-2g --steps 20
  shmbench fidelity --cells seed-fd-1g,w4-b32-160m --repeat 4          # boundary cells, judged

Verdict per cell, as `compare` judges outcomes: differs when the emulation's pass share or crash
steps differ from torch's at p < 0.05 (Fisher's exact test, the exact rank test), or when both pass
and the emulated passing peak /dev/shm lies outside 10% of torch's beyond its interval; not judged
when the runs cannot tell (a flip from always passing to always crashing needs --repeat 4); else
agrees. Peaks and img/s are ratios of medians with 95% bootstrap intervals. Real torch's later runs
are held to the same test against its earlier ones (`real torch against itself`): how often the
race alone makes a cell differ.
Exit status: 1 when any cell differs, 0 otherwise (not judged and inconclusive blame nothing), 2 on bad input (e.g. a Python without torch).";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Scenario file
    #[arg(default_value = scenario::FIDELITY_PATH)]
    pub(crate) scenario: PathBuf,
    /// Python interpreters with torch to measure against (one run of every cell per Python);
    /// default: the cells' python (--python, else the knob's default)
    #[arg(long = "with", value_name = "PYTHON")]
    pub(crate) pythons: Vec<String>,
    /// Only these cells (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub(crate) cells: Option<Vec<String>>,
    /// Results CSV (default: results/<scenario>-<UTC time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Analyse these results files of earlier fidelity runs instead of running cells
    #[arg(long, value_name = "CSV", num_args = 1.., conflicts_with_all = ["pythons", "repeat"])]
    pub(crate) from: Vec<PathBuf>,
    /// Run every cell this many times with each loader, interleaved
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
    /// Overrides applied to every cell (--python: the torch to measure against)
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

/// The verdicts as an exit status: 1 when any cell differs (an inconclusive cell blames
/// nothing).
fn verdict(pairs: &[fidelity::Pair]) -> ExitCode {
    if pairs
        .iter()
        .all(|p| p.verdict != fidelity::Verdict::Differs)
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    if !args.from.is_empty() {
        let rows = csv::read_all(&args.from)?;
        let pairs = fidelity::pairs(&rows);
        if pairs.is_empty() {
            bail!("no cell in these results ran with both loaders: run `shmbench fidelity` to make such results");
        }
        println!("{}", table::render(&pairs));
        return Ok(verdict(&pairs));
    }
    let scenario = Scenario::load(&args.scenario)?;
    let plan = scenario.plan(&args.knobs, args.cells.as_deref(), &super::platform())?;
    let pythons = if args.pythons.is_empty() {
        // The cells' own (--python, the scenario's, or the knob's default).
        let mut own: Vec<String> = plan.iter().map(|c| c.knobs.python.clone()).collect();
        own.sort();
        own.dedup();
        own
    } else {
        args.pythons
    };
    let (out, _claim) = outcome::results_out(args.out, &scenario.name)?;
    eprintln!(
        "fidelity {} ({}): {} cell(s) x emulated and torch ({}) -> {}",
        scenario.name,
        scenario.origin,
        plan.len(),
        pythons.join(", "),
        out.display()
    );
    let outcome = run_pairs::run(
        &plan,
        &pythons,
        &out,
        args.repeat,
        &mut Terminal::new().observer(),
    )?;
    let pairs = fidelity::pairs(outcome.results.rows());
    let text = table::render(&pairs);
    println!("{text}");
    println!("\nresults: {}", outcome.results.path().display());
    if let Some(dir) = outcome::write_report(&out) {
        let path = dir.join("fidelity.md");
        std::fs::write(
            &path,
            format!("# shmbench fidelity: {}\n\n{text}\n", scenario.name),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        println!("fidelity: {}", path.display());
    }
    if outcome.interrupted.is_some() {
        return Ok(outcome::stopped(&outcome));
    }
    Ok(verdict(&pairs))
}
