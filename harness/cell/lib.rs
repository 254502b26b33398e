//! What runs inside a cell: `shmbench cell <config-json>` (this file), the emulated loader and
//! its workers (`loader/`), the real torch DataLoader run by the cell's Python (`torch/`), the
//! metrics both share (`metrics`), what a Kubernetes pod says about itself (`pod`), a VM guest's init (`guest`), any command watched (`watch`), the calibration measurement (`measure`), and the protocol shared
//! with the runtimes that launch it (`protocol`).
//!
//! A cell runs one loader configuration in this process tree and prints exactly one JSON record on
//! stdout. Every runtime launches this same command; they differ only in how (as is, in a mount
//! namespace, in a container).

pub mod command;
pub mod guest;
pub mod loader;
pub mod measure;
mod metrics;
mod pod;
pub mod protocol;
pub mod torch;
mod traced;

use anyhow::{Context, Result};

use model::config::CellConfig;
use model::knobs::Loader;
use model::record::{CellRecord, Status};
use sys::process;

/// The config a runtime passed, parsed and validated.
fn parse(config_json: &str) -> Result<CellConfig> {
    let config: CellConfig = serde_json::from_str(config_json)
        .context("the cell config is not valid JSON for this shmbench version")?;
    config
        .validate(0)
        .map_err(|e| anyhow::anyhow!("invalid cell config: {e}"))?;
    Ok(config)
}

/// Runs the cell of `config`.
fn run(config: CellConfig) -> CellRecord {
    // Pinned before anything starts, so workers (and a torch cell's Python) inherit it.
    if let Some(cpus) = &config.knobs.cpus {
        if let Err(e) = process::pin_to(&cpus.0) {
            let message = format!("--cpus {cpus}: {e}");
            return CellRecord::failed_to_run(config, Status::Error, message);
        }
    }
    if let Some(n) = config.knobs.nofile {
        if let Err(e) = process::limit_fds(n) {
            let message = format!("--nofile {n}: {e}");
            return CellRecord::failed_to_run(config, Status::Error, message);
        }
    }
    match config.knobs.loader {
        Loader::Emulated => loader::run_cell(&config),
        Loader::Torch => torch::run_cell(&config),
        Loader::Command => command::run_cell(&config),
    }
}

/// Runs and prints the record; the exit code is 0 whenever a record was printed (a crashed
/// cell is a result, not a failure of the command). A pod of an Indexed Job passes its
/// completion index: its record then says which pod, node and machine ran it.
pub fn main(config_json: &str, completion_index: Option<u64>) -> Result<()> {
    let lifeline = std::env::var(protocol::LIFELINE_ENV).as_deref() == Ok("stdin");
    let config = parse(config_json)?;
    // Forked first, while this thread runs alone: a fork copies no other thread. A watched
    // command's cell traces its own job.
    let untraced = match (config.knobs.loader, config.knobs.trace) {
        (Loader::Command, _) => None,
        (_, false) => Some("the trace knob is false"),
        (_, true) if !traced::single_threaded() => {
            Some("the cell had more than one thread, so it could not fork a tracer")
        }
        (_, true) => match traced::fork()? {
            traced::Side::Tracer(tracer, from_cell) => {
                if lifeline {
                    watch_lifeline();
                }
                return traced::finish(tracer, from_cell);
            }
            traced::Side::Cell => None,
        },
    };
    if lifeline {
        watch_lifeline();
    }
    let mut record = run(config);
    if let Some(why) = untraced {
        traced::explain_untraced(&mut record, why);
    }
    record.pod = completion_index.map(pod::info);
    let line = serde_json::to_string(&record)?;
    println!("{line}");
    Ok(())
}

/// In a container, the harness holds our stdin open; when it closes (the harness died), end at
/// once. Workers follow through PR_SET_PDEATHSIG, and the container ends with its pid 1.
fn watch_lifeline() {
    let _ = std::thread::Builder::new()
        .name("lifeline".into())
        .spawn(|| {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            loop {
                match std::io::Read::read(&mut stdin, &mut sink) {
                    Ok(0) | Err(_) => {
                        // SAFETY: _exit ends the process without running anything else.
                        unsafe { libc::_exit(3) };
                    }
                    Ok(_) => continue,
                }
            }
        });
}
