//! `shmbench shm`: a live tmpfs (a node's /dev/shm) as it is, with who holds what, and the
//! removal of its stale entries on request (`sys::shm_audit`, `sys::stale_sweep`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::present::shm_audit;
use crate::sys::{shm_audit::audit, stale_sweep};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The tmpfs to audit
    #[arg(default_value = "/dev/shm")]
    path: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Remove the stale entries (regular files no live process holds) older than --older-than,
    /// each proven unheld as it goes; prints what it removed and its bytes
    #[arg(long, requires = "older_than")]
    sweep_stale: bool,
    /// With --sweep-stale: only entries not modified for this long, e.g. 10m, 2h, 1d
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    older_than: Option<Duration>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // The path the user names may be a symlink (/dev/shm -> /run/shm); nothing under it is
    // followed.
    let root = std::fs::canonicalize(&args.path)
        .with_context(|| format!("cannot audit {}", args.path.display()))?;
    let before = audit(&root)?;
    let swept = match (args.sweep_stale, args.older_than) {
        (true, Some(age)) => Some(stale_sweep::sweep(&root, &before, age)),
        (true, None) => bail!("--sweep-stale needs --older-than DURATION (e.g. 1h)"),
        _ => None,
    };
    match args.format {
        Format::Json => {
            let value = serde_json::json!({ "audit": before, "swept": swept });
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        Format::Text => {
            print!("{}", shm_audit::render(&before));
            if let Some(swept) = &swept {
                print!("{}", shm_audit::render_sweep(swept));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
