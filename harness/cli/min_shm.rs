//! `shmbench min-shm`: the smallest /dev/shm a loader, or any command (`-- CMD`), passes in, by
//! bisection over real cells.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::text_or_json::TextOrJson as Format;
use crate::model::knobs::{Knobs, RuntimeKind};
use crate::model::size::ByteSize;
use crate::model::watch::WatchSettings;
use crate::orchestrate::minshm;
use crate::plan::{command_cell, predict, resolve};
use crate::sys::fingerprint::mem_total;
use crate::sys::signals;

/// What `shmbench min-shm --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench min-shm --workers 2 --batch 16 --steps 30 --compute-ms 20
  shmbench min-shm --resolution 4m --repeat 3 --format json
  shmbench min-shm --resolution 8m --budget 600 -- python train.py --epochs 1   # any command

A --compute-ms slower than the workers (real training) gives the worst case the doctor predicts;
with a fast consumer fewer batches wait and the minimum is lower.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Stop when the bracket is this narrow
    #[arg(long, default_value = "1m")]
    pub(crate) resolution: ByteSize,
    /// Runs that must pass at the boundary
    #[arg(long, default_value_t = 2)]
    pub(crate) repeat: u32,
    /// Stop bisecting after this many seconds and report the bracket reached
    #[arg(long, value_name = "SECONDS", value_parser = super::seconds::positive)]
    pub(crate) budget: Option<Duration>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
    /// A command to size instead of a loader, run as `shmbench watch` runs it
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let budget = args.budget;
    let config = if args.command.is_empty() {
        resolve::tool_config("min-shm", args.knobs.0, &super::platform())?
    } else {
        // A placeholder size: the search sets each trial's.
        let knobs = Knobs {
            runtime: Some(RuntimeKind::Namespace),
            shm_size: Some(ByteSize(64 << 20)),
            ..args.knobs.0
        };
        let settings = WatchSettings::plain(args.command.clone());
        let config = command_cell::cell(&knobs, "min-shm", settings, &super::platform())
            .map_err(|e| anyhow!("--{e}"))?;
        super::watch::check_findable(&config)?;
        config
    };
    signals::install();
    let limit = mem_total() / 2;
    let bounds = minshm::Bounds {
        resolution: args.resolution.bytes(),
        repeats: args.repeat.max(1),
        limit,
        budget,
    };
    let result = minshm::search(&config, bounds, |t| {
        eprintln!(
            "  /dev/shm {:>12}: {}{}",
            ByteSize(t.shm_bytes).to_string(),
            t.status,
            t.crash_step
                .map(|s| format!(" at step {s}"))
                .unwrap_or_default()
        );
    })?;
    if args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        return Ok(ExitCode::SUCCESS);
    }
    let bracket = if result.budget_spent {
        format!(
            "between {} (failed) and {} (passed): the budget ran out before the {} resolution",
            ByteSize(result.failed_below_bytes),
            ByteSize(result.measured_bytes),
            ByteSize(result.resolution_bytes)
        )
    } else {
        format!(
            "{} (fails at {}; resolution {})",
            ByteSize(result.measured_bytes),
            ByteSize(result.failed_below_bytes),
            ByteSize(result.resolution_bytes)
        )
    };
    println!("minimum /dev/shm: {bracket}; {} runs", result.trials.len());
    if args.command.is_empty() {
        // Beside the batches, the Dataset's tensors under forkserver and spawn.
        let dataset = match predict::dataset_bytes(&config) {
            0 => String::new(),
            held => format!(" + the Dataset's {} of tensors", ByteSize(held)),
        };
        println!(
            "predicted peak:   {} ({} batches of {}{dataset})\nmeasured/predicted: {:.3}",
            ByteSize(result.predicted_bytes),
            result.predicted_batches,
            ByteSize(config.batch_bytes()),
            result.ratio()
        );
    } else {
        println!(
            "its peak in a roomy /dev/shm: {}\nminimum/peak: {:.3}",
            ByteSize(result.predicted_bytes),
            result.ratio()
        );
    }
    Ok(ExitCode::SUCCESS)
}
