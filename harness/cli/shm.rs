//! `shmbench shm`: a live tmpfs (a node's /dev/shm) as it is, with who holds what, and the
//! removal of its stale entries on request (`audit::live`, `audit::sweep`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::text_or_json::TextOrJson as Format;
use crate::sys::signals;
use ::audit::listing;
use ::audit::live::audit;
use ::audit::sweep::{self, SweepAsk};

/// The least age `--unowned` accepts: below it, being unheld, unchanged and unread proves little.
const MIN_UNOWNED_AGE: Duration = Duration::from_secs(600);

#[derive(clap::Args)]
#[command(after_help = "Examples:
  shmbench shm                                   # who holds what in /dev/shm, what is stale
  shmbench shm /run/user/1000 --format json
  shmbench shm --sweep-stale --older-than 1h     # remove files whose named owner is gone
  shmbench shm --sweep-stale --older-than 1d --unowned /dev/shm/old-run
                                                 # also files of unknown owner under that path

A file is stale only when no live process holds it and its owner is named and proven gone: a
dead shmbench run (its owner record unlocked), or a producer that puts its pid in the name
(torch_<pid>_..., sgl_shm_<kind>_<pid>, __KMP_REGISTERED_LIB_<pid>) when no process of that
pid started before the file last changed. Files of unknown owner are never removed unless
--unowned names a path above them, and then only when unchanged and unread for the age.
The age counts from the later of the mtime and the ctime (touch -d sets only the mtime; the
table's age column is the mtime's). Where not every process can be seen (not root, another
pid namespace), files are 'unknown', never stale; run it as root on the host.
Each removal is printed as it happens; with --format json and --sweep-stale, the output is
JSON lines: the audit, one line per removal or kept candidate, then the totals.
See docs/SAFETY.md.")]
pub(crate) struct Args {
    /// The tmpfs to audit
    #[arg(default_value = "/dev/shm")]
    path: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Remove the stale entries (unheld files whose named owner is proven gone) unchanged for
    /// --older-than, each proven unheld again as it goes
    #[arg(long, requires = "older_than")]
    sweep_stale: bool,
    /// With --sweep-stale: only entries unchanged (mtime and ctime) for this long, e.g. 10m,
    /// 2h, 1d; files of unknown owner must also be unread (atime) for it
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "sweep_stale")]
    older_than: Option<Duration>,
    /// With --sweep-stale: also remove files of unknown owner under PATH (repeatable), when
    /// unheld and unchanged and unread for --older-than (at least 10m)
    #[arg(long, value_name = "PATH", requires = "sweep_stale")]
    unowned: Vec<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // The path the user names may be a symlink (/dev/shm -> /run/shm); nothing under it is
    // followed.
    let root = std::fs::canonicalize(&args.path)
        .with_context(|| format!("cannot audit {}", args.path.display()))?;
    let unowned = opted_in(&root, &args.unowned)?;
    let before = audit(&root)?;
    let older_than = match (args.sweep_stale, args.older_than) {
        (true, Some(age)) => age,
        (true, None) => bail!("--sweep-stale needs --older-than DURATION (e.g. 1h)"),
        (false, _) => {
            match args.format {
                Format::Json => {
                    let value = serde_json::json!({ "audit": before, "swept": null });
                    println!("{}", serde_json::to_string_pretty(&value)?);
                }
                Format::Text => print!("{}", listing::render(&before)),
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    if !unowned.is_empty() && older_than < MIN_UNOWNED_AGE {
        bail!(
            "--unowned needs --older-than of at least {}: a file of unknown owner must have shown no change and no read for a while (an open-read-close loop is unheld most of the time)",
            humantime::format_duration(MIN_UNOWNED_AGE)
        );
    }
    let mut stdout = std::io::stdout().lock();
    match args.format {
        Format::Json => writeln!(stdout, "{}", serde_json::json!({ "audit": before }))?,
        Format::Text => write!(stdout, "{}", listing::render(&before))?,
    }
    stdout.flush()?;
    signals::install();
    let ask = SweepAsk {
        older_than,
        unowned: &unowned,
    };
    // Each event is written and flushed as it happens, so a sweep cut short still says what
    // it removed.
    let mut report = |event: &_| {
        let line = match args.format {
            Format::Json => format!("{}\n", serde_json::json!(event)),
            Format::Text => listing::render_event(event),
        };
        let _ = stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.flush());
    };
    let swept = sweep::sweep(&root, &before, &ask, &mut report);
    match args.format {
        Format::Json => writeln!(stdout, "{}", serde_json::json!({ "swept": swept }))?,
        Format::Text => write!(stdout, "{}", listing::render_sweep(&swept))?,
    }
    Ok(if swept.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--unowned` paths, canonical, each under the audited root.
fn opted_in(root: &std::path::Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| {
            let canonical = std::fs::canonicalize(p)
                .with_context(|| format!("--unowned {}: no such path", p.display()))?;
            if !canonical.starts_with(root) {
                bail!(
                    "--unowned {}: not under the audited {} (give a path inside it)",
                    p.display(),
                    root.display()
                );
            }
            Ok(canonical)
        })
        .collect()
}
