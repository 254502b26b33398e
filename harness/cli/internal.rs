//! The commands the harness runs itself: `shmbench cell` (what every runtime launches),
//! `shmbench worker` (a DataLoader worker, re-exec'ed by a cell's main) and `shmbench job`
//! (several cells at once, as `doctor --verify` runs a job's ranks and loaders), and
//! `shmbench copy-self` (an init container handing the binary to its pod's other container).

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cell;
use crate::cell::loader::worker;
use crate::model::config::CellConfig;
use crate::model::pod::COMPLETION_INDEX_ENV;
use crate::orchestrate::verify;
use crate::sys::owner::Token;

/// What `shmbench cell --help` shows after the flags.
const CELL_HELP: &str = "\
Examples:
  shmbench matrix --dry-run --batch 8 > cells.json                 # the resolved cells
  shmbench cell \"$(jq -c '.[4]' cells.json)\"                       # one of them, right here
  JOB_COMPLETION_INDEX=2 shmbench cell --from cells.yaml           # as pod 2 of an Indexed Job
                                  # (cells.yaml: the cell list of `k8s manifest`'s ConfigMap)

The cell runs in this process tree as it is (no namespace, container or VM of its own: that is
the runtime's part) and prints one JSON record on stdout, whatever happens to it.";

#[derive(clap::Args)]
#[command(after_help = CELL_HELP)]
pub(crate) struct CellArgs {
    /// The resolved cell config as JSON (see `matrix --dry-run`)
    #[arg(required_unless_present = "from")]
    pub(crate) config_json: Option<String>,
    /// A YAML (or JSON) list of cell configs: run the one at JOB_COMPLETION_INDEX (modulo its length), as
    /// a pod of the Indexed Job `shmbench k8s manifest` writes does
    #[arg(long, value_name = "FILE", conflicts_with = "config_json")]
    pub(crate) from: Option<std::path::PathBuf>,
}

/// The config a `--from` list gives this pod, and the pod's completion index.
fn indexed(path: &std::path::Path) -> Result<(String, u64)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the cells file {}", path.display()))?;
    // YAML, as the manifest's ConfigMap holds it (JSON, which is YAML, too).
    let cells: Vec<serde_json::Value> = cluster::k8s::yaml::first_document(&text)
        .and_then(|list| serde_json::from_value(list).ok())
        .with_context(|| format!("{} is not a YAML list of cells", path.display()))?;
    let raw = std::env::var(COMPLETION_INDEX_ENV).with_context(|| {
        format!("{COMPLETION_INDEX_ENV} is not set: --from is for pods of an Indexed Job")
    })?;
    let index: u64 = raw
        .trim()
        .parse()
        .with_context(|| format!("{COMPLETION_INDEX_ENV}={raw} is not an index"))?;
    let cell = cells
        .get(index as usize % cells.len().max(1))
        .with_context(|| format!("{} holds no cells", path.display()))?;
    Ok((cell.to_string(), index))
}

#[derive(clap::Args)]
pub(crate) struct WorkerArgs {
    pub(crate) id: u32,
    pub(crate) main_pid: u32,
    /// The token of the main's segment owner record (names the worker's segments)
    pub(crate) token: String,
    pub(crate) config_json: String,
}

#[derive(clap::Args)]
pub(crate) struct JobArgs {
    /// The resolved cells as a JSON array
    pub(crate) cells_json: String,
}

/// Runs the cells at once; a line per cell, exit 1 when any did not pass.
pub(crate) fn job(args: JobArgs) -> Result<ExitCode> {
    let cells: Vec<CellConfig> =
        serde_json::from_str(&args.cells_json).context("the job's cells are not valid JSON")?;
    let records = verify::together(&cells);
    for r in &records {
        println!(
            "{}: {} after {} steps{}",
            r.config.cell,
            r.status,
            r.metrics.steps_done,
            if r.message.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.message)
            }
        );
    }
    let all_passed = records.iter().all(|r| r.status.is_pass());
    Ok(ExitCode::from(if all_passed { 0 } else { 1 }))
}

pub(crate) fn cell(args: CellArgs) -> Result<ExitCode> {
    let (json, index) = match (&args.from, args.config_json) {
        (Some(path), _) => {
            let (json, index) = indexed(path)?;
            (json, Some(index))
        }
        (None, Some(json)) => (json, None),
        (None, None) => unreachable!("clap requires one of them"),
    };
    cell::main(&json, index)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn worker(args: WorkerArgs) -> Result<ExitCode> {
    let config = serde_json::from_str(&args.config_json).context("worker config")?;
    let token = Token::parse(&args.token)
        .with_context(|| format!("worker token {:?} is not 16 hex digits", args.token))?;
    let code = worker::run(args.id, args.main_pid, &token, &config)?;
    Ok(ExitCode::from(code as u8))
}

#[derive(clap::Args)]
pub(crate) struct CopySelfArgs {
    /// Where the copy goes (its directory must exist)
    dest: std::path::PathBuf,
}

/// Copies this binary to `dest` (mode 0755) through a temporary file renamed over it, so a
/// container that runs it never sees half a binary.
pub(crate) fn copy_self(args: CopySelfArgs) -> Result<ExitCode> {
    use std::os::unix::fs::PermissionsExt;
    let me = std::env::current_exe().context("cannot tell where this binary is")?;
    let mut temp = args.dest.clone().into_os_string();
    temp.push(".partial");
    let temp = std::path::PathBuf::from(temp);
    let made = std::fs::copy(&me, &temp)
        .with_context(|| format!("cannot copy {} to {}", me.display(), temp.display()))
        .and_then(|_| {
            std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", temp.display()))
        })
        .and_then(|()| {
            std::fs::rename(&temp, &args.dest).with_context(|| {
                format!(
                    "cannot rename {} to {}",
                    temp.display(),
                    args.dest.display()
                )
            })
        });
    if made.is_err() {
        // Never leave half a binary behind.
        let _ = std::fs::remove_file(&temp);
    }
    made?;
    println!("copied {} to {}", me.display(), args.dest.display());
    Ok(ExitCode::SUCCESS)
}
