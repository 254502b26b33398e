//! `shmbench calibrate`: this machine's data-path limits (memset, memcpy, fresh shared segments per
//! strategy and profile), measured in a private namespace with its own tmpfs.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};

use super::text_or_json::TextOrJson as Format;
use crate::cell::measure;
use crate::model::knobs::{Strategy, TorchProfile};
use crate::orchestrate::calibrate;
use crate::plan::resolve;
use crate::present::calibration;

/// What `shmbench calibrate --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench calibrate
  shmbench calibrate --batch 32 --seconds 1 --format json";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Seconds per fresh-segment measurement
    #[arg(long, default_value_t = 0.5)]
    pub(crate) seconds: f64,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    /// Only these strategy:torch pairs (default: all)
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// Measure in this process's /dev/shm (used inside the private namespace calibrate
    /// makes for itself)
    #[arg(long, hide = true)]
    pub(crate) here: bool,
    /// Batch shape to measure with (batch, shape, dtype)
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let config = resolve::tool_config("calibrate", args.knobs.0, &super::platform())?;
    if !(args.seconds > 0.0 && args.seconds <= 60.0) {
        bail!("--seconds must be between 0 and 60");
    }
    let combos: Vec<(Strategy, TorchProfile)> = match args.only {
        Some(text) => parse_combos(&text)?,
        None => [
            Strategy::FileDescriptor,
            Strategy::FileSystem,
            Strategy::Memfd,
            Strategy::Disk,
        ]
        .iter()
        .flat_map(|s| [(*s, TorchProfile::Legacy), (*s, TorchProfile::Modern)])
        .collect(),
    };
    let duration = Duration::from_secs_f64(args.seconds);
    let c = if args.here {
        measure::run(config.batch_bytes(), config.knobs.batch, &combos, duration)?
    } else {
        calibrate::isolated(&config, &combos, duration)?
    };
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&c)?),
        Format::Text => println!("{}", calibration::render(&c)),
    }
    Ok(ExitCode::SUCCESS)
}

/// `strategy:torch` pairs, as `--only` takes them.
pub(crate) fn parse_combos(text: &str) -> Result<Vec<(Strategy, TorchProfile)>> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (s, t) = pair.split_once(':').ok_or_else(|| {
                anyhow::anyhow!("'{pair}': write strategy:torch, e.g. file_descriptor:legacy")
            })?;
            let s: Strategy = s.parse()?;
            let t: TorchProfile = t.parse()?;
            Ok((s, t))
        })
        .collect()
}
