//! `shmbench min-shm`: the smallest /dev/shm a loader passes in, by bisection over real cells.

use std::process::ExitCode;

use anyhow::Result;

use crate::model::knobs::Knobs;
use crate::model::size::ByteSize;
use crate::orchestrate::minshm;
use crate::plan::guard;
use crate::sys::fingerprint::mem_total;
use crate::sys::signals;

#[derive(clap::Args)]
pub struct Args {
    /// Stop when the bracket is this narrow
    #[arg(long, default_value = "1m")]
    pub resolution: ByteSize,
    /// Runs that must pass at the boundary
    #[arg(long, default_value_t = 2)]
    pub repeat: u32,
    /// Output format
    #[arg(long, value_parser = ["text", "json"], default_value = "text")]
    pub format: String,
    #[command(flatten)]
    pub knobs: Knobs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let config = guard::tool_config("min-shm", args.knobs, &super::platform())?;
    signals::install();
    let limit = mem_total() / 2;
    let result = minshm::search(
        &config,
        args.resolution.bytes(),
        args.repeat.max(1),
        limit,
        |t| {
            eprintln!(
                "  /dev/shm {:>12}: {}{}",
                ByteSize(t.shm_bytes).to_string(),
                t.status,
                t.crash_step
                    .map(|s| format!(" at step {s}"))
                    .unwrap_or_default()
            );
        },
    )?;
    if args.format == "json" {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!(
            "minimum /dev/shm: {} (fails at {}; resolution {}; {} runs)\npredicted peak:   {} ({} batches of {})\nmeasured/predicted: {:.3}",
            ByteSize(result.measured_bytes),
            ByteSize(result.failed_below_bytes),
            ByteSize(result.resolution_bytes),
            result.trials.len(),
            ByteSize(result.predicted_bytes),
            result.predicted_batches,
            ByteSize(config.batch_bytes()),
            result.ratio()
        );
    }
    Ok(ExitCode::SUCCESS)
}
