//! Runs a list of resolved cells one after another: launches each through its runtime, shows
//! progress, writes the results CSV after every cell, and stops cleanly on Ctrl-C.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::calibrate::{self, Calibration};
use crate::config::{CellConfig, IpcMode, RuntimeKind, Strategy, TorchProfile};
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

/// Calibrates this machine for the strategies and profiles `cells` use (briefly: it runs before
/// every matrix) and writes `calibration.json` beside the results. A calibration that cannot run
/// (e.g. too little free /dev/shm) is reported and skipped: it never stops the cells.
fn calibrate_for(cells: &[CellConfig], out: &Path) -> Option<Calibration> {
    let first = cells.first()?;
    let mut combos: Vec<(Strategy, TorchProfile)> =
        cells.iter().map(|c| (c.strategy, c.torch)).collect();
    combos.sort_by_key(|(s, t)| (s.to_string(), t.to_string()));
    combos.dedup();
    eprint!(
        "calibrating the data path ({} combination(s))...",
        combos.len()
    );
    match calibrate::isolated(first, &combos, Duration::from_millis(250)) {
        Ok(c) => {
            eprintln!(" memcpy {:.1} GB/s", c.memcpy_gb_per_s);
            let stem = out
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let dir = out.parent().unwrap_or(Path::new(".")).join(stem);
            if let Ok(text) = serde_json::to_string_pretty(&c) {
                let _ = std::fs::create_dir_all(&dir)
                    .and_then(|_| std::fs::write(dir.join("calibration.json"), text));
            }
            Some(c)
        }
        Err(e) => {
            eprintln!(" skipped: {e:#}");
            None
        }
    }
}

/// Runs `cells` in order, writing `out` after each.
pub fn run(cells: &[CellConfig], out: &Path) -> Result<Outcome> {
    run_repeated(cells, out, 1)
}

/// Runs every cell `repeat` times, interleaved (all cells, then all cells again) so a slow
/// spell of the machine spreads over cells instead of landing on one.
pub fn run_repeated(cells: &[CellConfig], out: &Path, repeat: u32) -> Result<Outcome> {
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
    let calibration = calibrate_for(cells, out);
    let mut records = Vec::new();
    let tty = std::io::stderr().is_terminal();
    let repeat = repeat.max(1);
    let total = cells.len() * repeat as usize;
    let mut interrupted = None;
    let schedule = (1..=repeat).flat_map(|r| cells.iter().map(move |c| (r, c)));
    for (i, (rep, config)) in schedule.enumerate() {
        if let Some(sig) = interrupt::received() {
            interrupted = Some(sig);
            break;
        }
        let label = if repeat > 1 {
            format!(
                "[{}/{}] {} run {rep}/{repeat}",
                i + 1,
                total,
                describe(config)
            )
        } else {
            format!("[{}/{}] {}", i + 1, total, describe(config))
        };
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
        if let Some(c) = &calibration {
            row.judge(c, config);
        }
        row.repeat = rep;
        row.steps_file = Some(steps::write(results.path(), &record, rep)?);
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
