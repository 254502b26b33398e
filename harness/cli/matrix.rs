//! `shmbench matrix`: a scenario's cells (default: the how-to's matrix), the table, the results
//! file and the report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::outcome;
use super::progress::Terminal;
use crate::analysis::compare;
use crate::analysis::statements::judge_all;
use crate::model::knobs::{EngineKind, Knobs, OciRuntime};
use crate::orchestrate::runner;
use crate::plan::scenario::{self, Scenario};
use crate::plan::{container_runtimes, guard, kernels};
use crate::present::compare as present_compare;
use crate::present::statements as present_statements;
use crate::present::table;
use crate::results::baseline;
use crate::results::statements;
use crate::sys::fingerprint::mem_total;

/// What `shmbench matrix --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench matrix
  shmbench matrix scenarios/seed-matrix.toml --steps 30 --out results/quick.csv
  shmbench matrix --cells docker-tuned --torch modern
  shmbench matrix --repeat 5                        # for compare: medians and 95% intervals
  shmbench matrix --repeat auto --until-ci 3%       # rounds until CPU per image is that tight
  shmbench matrix --dry-run
  shmbench matrix --batch 8 --steps 20 \\
      --kernels host,debian:6.1.0-57-cloud-amd64,debian:6.1.0-53-cloud-amd64
  shmbench history results/seed-matrix-*.csv --by kernel
  shmbench matrix --engines docker,podman --oci-runtimes runc,runsc --steps 30
  shmbench history results/seed-matrix-*.csv --by runtime";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Scenario file
    #[arg(default_value = scenario::SEED_MATRIX_PATH)]
    pub(crate) scenario: PathBuf,
    /// Only these cells (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub(crate) cells: Option<Vec<String>>,
    /// Results CSV (default: results/<scenario>-<UTC time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Print the resolved cells as JSON and run nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Run every cell on each of these kernels, interleaved, into one CSV: `host` (this machine's
    /// own), a bzImage path, or debian:VERSION (booted in a QEMU VM, runtime vm)
    #[arg(long, value_delimiter = ',', value_name = "KERNELS")]
    pub(crate) kernels: Option<Vec<String>>,
    /// Run every cell under each of these container engines, interleaved, into one CSV: docker,
    /// podman (its Docker-compatible service; started for the run when none answers)
    #[arg(long, value_delimiter = ',', value_name = "ENGINES", value_enum)]
    pub(crate) engines: Option<Vec<EngineKind>>,
    /// Run every cell under each of these OCI runtimes, interleaved, into one CSV: default (the
    /// engine's), runc, crun, runsc (gVisor), or any the engine has registered
    #[arg(long, value_delimiter = ',', value_name = "RUNTIMES")]
    pub(crate) oci_runtimes: Option<Vec<OciRuntime>>,
    /// Run cells whose predicted /dev/shm peak exceeds this machine's memory
    #[arg(long)]
    pub(crate) force: bool,
    #[command(flatten)]
    pub(crate) repeat: super::repeat::RepeatArgs,
    #[command(flatten)]
    pub(crate) calibrate: super::repeat::CalibrateArgs,
    /// Save this run's results as baseline NAME (results/baselines/NAME.csv)
    #[arg(long, value_name = "NAME")]
    pub(crate) save_baseline: Option<String>,
    /// Compare this run with baseline NAME afterwards (as `shmbench compare`, default
    /// thresholds); exit 1 on a regression, 3 on a cell too few runs can judge
    #[arg(long, value_name = "NAME")]
    pub(crate) baseline: Option<String>,
    /// With --baseline: exit 0, not 3, when a cell is undecided
    #[arg(long, requires = "baseline")]
    pub(crate) allow_undecided: bool,
    /// Overrides applied to every cell
    #[command(flatten)]
    pub(crate) knobs: Knobs,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let scenario = Scenario::load(&args.scenario)?;
    let platform = super::platform();
    let layers = container_runtimes::layers(args.engines.as_deref(), args.oci_runtimes.as_deref());
    let mut plan = container_runtimes::interleaved(&layers, |layer| {
        let mut knobs = args.knobs.clone();
        knobs.overlay(layer);
        scenario.plan(&knobs, args.cells.as_deref(), &platform)
    })?;
    if let Some(kernels) = &args.kernels {
        plan = kernels::on_kernels(&plan, kernels, mem_total())?;
    }
    if !args.force {
        guard::refuse_oversized(&plan, mem_total())?;
    }
    if !scenario.consumers.is_empty() {
        eprintln!(
            "note: the scenario's [[consumers]] ({}) are not run: the matrix runs the loaders; `shmbench doctor --scenario {}` adds their share",
            scenario.consumers.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", "),
            args.scenario.display()
        );
    }
    if args.dry_run {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(ExitCode::SUCCESS);
    }
    // A missing baseline is known before anything runs.
    let baseline = args.baseline.as_deref().map(baseline::load).transpose()?;
    if let Some(name) = &args.save_baseline {
        baseline::path(name)?;
    }
    let (out, _claim) = outcome::results_out(args.out, &scenario.name)?;
    eprintln!(
        "scenario {} ({}): {} cell(s) -> {}",
        scenario.name,
        scenario.origin,
        plan.len(),
        out.display()
    );
    let outcome = runner::run(
        &plan,
        &out,
        args.repeat.repeat(),
        args.calibrate.calibrate(),
        &mut Terminal::new().observer(),
    )?;
    // The sentences its cells measure together, kept beside the rows for the report.
    statements::write(&out, &scenario.statements)?;
    outcome::print(&outcome);
    let rows = outcome.results.rows();
    if !scenario.statements.is_empty() {
        let judged = judge_all(&scenario.statements, rows);
        let (headers, cells) = present_statements::table(&judged, &scenario.name);
        let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
        println!(
            "\nThe how-to's claims, checked:\n{}",
            table::markdown(&headers, &cells)
        );
    }
    if !rows.is_empty() {
        outcome::write_report(&out);
    }
    if outcome.interrupted.is_some() {
        return Ok(outcome::exit_code(&outcome));
    }
    if let Some(name) = &args.save_baseline {
        println!(
            "baseline '{name}': {}",
            baseline::save(name, rows)?.display()
        );
    }
    if let (Some(name), Some(base)) = (&args.baseline, baseline) {
        let thresholds = compare::Thresholds::default();
        let comparisons = compare::compare(&base, rows, thresholds, compare::Match::Config);
        println!(
            "\nagainst baseline '{name}':\n{}",
            present_compare::render(&comparisons, thresholds)
        );
        let judged = super::compare::verdict_exit(&comparisons, args.allow_undecided);
        if judged != ExitCode::SUCCESS {
            return Ok(judged);
        }
    }
    Ok(outcome::exit_code(&outcome))
}
