//! `shmbench doctor`: how much /dev/shm a loader needs, whether it has it here, the fixes that
//! fit, and with `--verify` the proof under the recommended size.

use std::process::ExitCode;

use anyhow::Result;

use crate::model::knobs::Knobs;
use crate::model::size::ByteSize;
use crate::orchestrate::verify;
use crate::plan::{advice, guard};
use crate::present::doctor;
use crate::sys::detect::Environment;

#[derive(clap::Args)]
pub struct Args {
    /// Run the loader in a namespace cell under the recommended /dev/shm size
    #[arg(long)]
    pub verify: bool,
    /// Output format
    #[arg(long, value_parser = ["text", "json", "md"], default_value = "text")]
    pub format: String,
    /// Loader flags (--shm-size: diagnose against that size instead of the /dev/shm seen)
    #[command(flatten)]
    pub knobs: Knobs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut knobs = args.knobs;
    let assumed = knobs.shm_size.take();
    let config = guard::tool_config("doctor", knobs, &super::platform())?;
    let mut env = Environment::read();
    if let Some(size) = assumed {
        env.shm_total_bytes = size.bytes();
        env.shm_free_bytes = size.bytes();
        env.evidence
            .push_str("; /dev/shm size taken from --shm-size");
    }
    let diagnosis = advice::diagnose(&config, env);
    match args.format.as_str() {
        "json" => println!("{}", serde_json::to_string_pretty(&diagnosis)?),
        "md" => print!("{}", doctor::render(&diagnosis, true)),
        _ => print!("{}", doctor::render(&diagnosis, false)),
    }
    let mut ok = diagnosis.fits;
    if args.verify {
        let cell = verify::cell(&config, diagnosis.recommended_bytes);
        eprintln!(
            "verifying: {} steps under {} of /dev/shm (namespace cell, {} ms per step)...",
            cell.steps,
            ByteSize(diagnosis.recommended_bytes),
            cell.compute_ms
        );
        let record = verify::run(&cell)?;
        let verdict = if record.status.is_pass() {
            "PASSED"
        } else {
            "FAILED"
        };
        println!(
            "verify: {verdict} with /dev/shm = {}: {} after {} steps, peak /dev/shm {}{}",
            ByteSize(diagnosis.recommended_bytes),
            record.status,
            record.metrics.steps_done,
            ByteSize(record.metrics.peak_shm_bytes),
            if record.message.is_empty() {
                String::new()
            } else {
                format!(" ({})", record.message)
            }
        );
        ok = record.status.is_pass();
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
