//! `shmbench matrix`: a scenario's cells (default: the how-to's matrix), the table, the results
//! file and the report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use super::outcome;
use super::progress::Terminal;
use crate::analysis::compare;
use crate::analysis::statements::judge_all;
use crate::model::knobs::{EngineKind, OciRuntime};
use crate::orchestrate::runner;
use crate::plan::scenario::{self, Scenario};
use crate::plan::{container_runtimes, kernels, memory};
use crate::present::compare_tables as present_compare;
use crate::present::statements as present_statements;
use crate::present::table;
use crate::results::baseline;
use crate::results::claims_file;
use crate::results::Row;
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
  shmbench history results/seed-matrix-*.csv --by runtime
  shmbench matrix --baseline nightly --repeat 3 --max-repeat 8   # adds runs to undecided cells

Exit status: 0 every cell ran (passed, or crashed: a crash is a measurement), 1 a cell crashed
with --fail-on crash, or --baseline found a regression, 2 shmbench could not run (bad input),
3 --baseline left a cell undecided, 4 a cell ended in error (it measured nothing: its runtime
refused it), 128+N stopped by signal N.";

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
    #[arg(long, value_delimiter = ',', value_name = "ENGINES", value_parser = super::choice::choice::<EngineKind>())]
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
    /// Exit 1 when a cell crashed, not only 4 when one could not run (burn-in, prolog jobs)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub(crate) fail_on: Option<super::outcome::FailOn>,
    /// With --baseline: exit 0, not 3, when a cell is undecided
    #[arg(long, requires = "baseline")]
    pub(crate) allow_undecided: bool,
    /// Overrides applied to every cell
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
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
        memory::refuse_oversized(&plan, mem_total())?;
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
    // A missing baseline, or one added runs cannot judge against, is known before anything runs.
    let baseline = load_baseline(&args)?;
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
    let thresholds = compare::Thresholds::default();
    let undecided = |rows: &[Row]| undecided_against(baseline.as_deref(), rows, thresholds);
    let more = args
        .repeat
        .more_runs_cap()
        .filter(|_| baseline.is_some())
        .map(|up_to| runner::MoreRuns {
            up_to,
            wanted: &undecided,
        });
    let outcome = runner::run_until(
        &plan,
        &out,
        args.repeat.repeat(),
        more.as_ref(),
        args.calibrate.calibrate(),
        &mut Terminal::new().observer(),
    )?;
    // The sentences its cells measure together, kept beside the rows for the report.
    claims_file::write(&out, &scenario.statements)?;
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
        return Ok(outcome::stopped(&outcome));
    }
    if let Some(name) = &args.save_baseline {
        println!(
            "baseline '{name}': {}",
            baseline::save(name, rows)?.display()
        );
    }
    // A cell that could not run says more than a verdict on the others.
    let ended = outcome::exit_code(&outcome, args.fail_on);
    if let (Some(name), Some(base)) = (&args.baseline, &baseline) {
        let judged = against_baseline(name, base, rows, thresholds, args.allow_undecided);
        return Ok(if ended == ExitCode::SUCCESS {
            judged
        } else {
            ended
        });
    }
    Ok(ended)
}

/// The baseline `--baseline` names, if any, after checking what `--max-repeat` asks of it.
fn load_baseline(args: &Args) -> Result<Option<Vec<Row>>> {
    if let Some(cap) = args.repeat.more_runs_cap() {
        if args.baseline.is_none() {
            anyhow::bail!("--max-repeat with a fixed --repeat adds runs to cells a --baseline comparison leaves undecided: give --baseline NAME, or --repeat auto");
        }
        if cap < args.repeat.repeat().max_rounds() {
            anyhow::bail!("--max-repeat {cap} is below --repeat {}: it is the most runs a cell gets, its repeats included", args.repeat.repeat().max_rounds());
        }
    }
    let baseline = args.baseline.as_deref().map(baseline::load).transpose()?;
    if let (Some(name), Some(base), Some(_)) =
        (&args.baseline, &baseline, args.repeat.more_runs_cap())
    {
        let single = one_run_baselines(base);
        if !single.is_empty() {
            eprintln!(
                "note: baseline '{name}' holds one run of {}: no number of added runs can decide a comparison with one run (save it with --repeat 3)",
                single.join(", ")
            );
        }
    }
    Ok(baseline)
}

/// Whether a cell's rows so far leave its comparison with the baseline undecided, where more
/// runs of it can decide: a baseline of one run of the cell gives no interval however many
/// the candidate has (`one_run_baselines` says so before the run).
fn undecided_against(base: Option<&[Row]>, rows: &[Row], thresholds: compare::Thresholds) -> bool {
    base.is_some_and(|base| {
        compare::compare(base, rows, thresholds, compare::Match::Config)
            .iter()
            .any(|c| {
                c.candidate.is_some()
                    && c.baseline.as_ref().is_some_and(|b| b.runs >= 2)
                    && c.verdict.is_undecided()
            })
    })
}

/// The cells of which the baseline holds a single run: added runs cannot decide them.
fn one_run_baselines(base: &[Row]) -> Vec<String> {
    crate::analysis::summary::summarize(base)
        .into_iter()
        .filter(|s| s.runs < 2)
        .map(|s| s.cell)
        .collect()
}

/// The run's rows against the baseline `name`, printed; the exit status `compare` gives.
fn against_baseline(
    name: &str,
    base: &[Row],
    rows: &[Row],
    thresholds: compare::Thresholds,
    allow_undecided: bool,
) -> ExitCode {
    let comparisons = compare::compare(base, rows, thresholds, compare::Match::Config);
    println!(
        "\nagainst baseline '{name}':\n{}",
        present_compare::render(&comparisons, thresholds)
    );
    super::compare::verdict_exit(&comparisons, allow_undecided)
}
