//! Runs a list of resolved cells one after another: launches each through its runtime, shows
//! progress, writes the results CSV after every cell, and stops cleanly on Ctrl-C.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use crate::config::{CellConfig, IpcMode, RuntimeKind};
use crate::interrupt;
use crate::record::csv::{ResultsFile, Row};
use crate::record::fingerprint::Fingerprint;
use crate::record::steps;
use crate::record::CellRecord;
use crate::runtime::{Progress, Runtimes};
use crate::size::ByteSize;
use crate::verdict;

pub struct Outcome {
    /// Each finished cell's record (its row is in `results`).
    pub records: Vec<CellRecord>,
    pub results: ResultsFile,
    /// The signal that stopped the run early, if one did.
    pub interrupted: Option<i32>,
}

fn describe(config: &CellConfig) -> String {
    let shm = match (config.shm_size, config.runtime, config.ipc) {
        (Some(size), _, _) => size.to_string(),
        (None, RuntimeKind::Docker, IpcMode::Private | IpcMode::Shareable) => {
            "engine's default /dev/shm".into()
        }
        _ => "host /dev/shm".into(),
    };
    format!(
        "{} ({}, {}, {})",
        config.cell, config.runtime, shm, config.strategy
    )
}

/// Runs `cells` in order, writing `out` after each.
pub fn run(cells: &[CellConfig], out: &Path) -> Result<Outcome> {
    let runtimes = Runtimes::for_cells(cells)?;
    interrupt::install();
    let removed = crate::loader::segment::sweep(None);
    if !removed.is_empty() {
        eprintln!(
            "removed {} segment(s) left in /dev/shm by dead shmbench runs: {}",
            removed.len(),
            removed.join(", ")
        );
    }
    let mut fingerprint = Fingerprint::collect();
    if let Some(docker) = &runtimes.docker {
        match docker.build_time {
            Some(took) => eprintln!(
                "built image {} in {:.1} s",
                docker.image(),
                took.as_secs_f64()
            ),
            None => eprintln!("using image {}", docker.image()),
        }
        let removed = crate::runtime::docker::sweep_dead_owners(docker.engine());
        if !removed.is_empty() {
            eprintln!(
                "removed {} container(s) left by dead shmbench runs: {}",
                removed.len(),
                removed.join(", ")
            );
        }
        fingerprint.docker = Some(docker.engine().info.clone());
    }
    let started_at = crate::timefmt::rfc3339_now();
    let run_id = format!("{}-{}", crate::timefmt::compact_now(), std::process::id());
    let mut results = ResultsFile::create(out)?;
    let mut records = Vec::new();
    let tty = std::io::stderr().is_terminal();
    let total = cells.len();
    let mut interrupted = None;
    for (i, config) in cells.iter().enumerate() {
        if let Some(sig) = interrupt::received() {
            interrupted = Some(sig);
            break;
        }
        let label = format!("[{}/{}] {}", i + 1, total, describe(config));
        if !tty {
            eprintln!("{label} ...");
        }
        let began = Instant::now();
        let runtime = runtimes.get(config);
        let mut show = |p: Progress| {
            if tty {
                eprint!(
                    "\r\x1b[2K{label}  step {}/{}  {:.1} s",
                    p.step,
                    p.total,
                    began.elapsed().as_secs_f64()
                );
                let _ = std::io::stderr().flush();
            }
        };
        let record = runtime.launch(config, &mut show);
        if let Some(sig) = interrupt::received() {
            if tty {
                eprintln!();
            }
            eprintln!("{label}  interrupted; this cell is not recorded");
            interrupted = Some(sig);
            break;
        }
        let mut row = Row::new(&record, runtime.name(), &fingerprint, &run_id, &started_at);
        row.steps_file = Some(steps::write(results.path(), &record)?);
        let rate = row
            .img_per_s
            .map(|r| format!("{r:.1} img/s"))
            .unwrap_or_else(|| "-".into());
        let line = format!(
            "{label}  {}  {rate}  peak /dev/shm {}  {:.1} s",
            verdict::status_label(&row),
            ByteSize(row.peak_shm_bytes),
            began.elapsed().as_secs_f64()
        );
        if tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!("{line}");
        results.push(row)?;
        records.push(record);
    }
    Ok(Outcome {
        records,
        results,
        interrupted,
    })
}
