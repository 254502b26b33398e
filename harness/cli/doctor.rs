//! `shmbench doctor`: how much /dev/shm a loader needs, whether it has it here, the fixes that
//! fit, and with `--verify` the proof under the recommended size.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::model::config::CellConfig;
use crate::model::job::LoaderList;
use crate::model::knobs::Knobs;
use crate::model::size::ByteSize;
use crate::orchestrate::verify;
use crate::plan::consumers::Consumer;
use crate::plan::fixes::Target;
use crate::plan::job::JobPeak;
use crate::plan::scenario::Scenario;
use crate::plan::{advice, job, resolve};
use crate::present::doctor;
use crate::sys::detect::Environment;

/// What `--format` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    #[value(alias = "md")]
    Markdown,
}

/// What `shmbench doctor --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench doctor                                    # the seed loader (8 workers, batch 128) here
  shmbench doctor --workers 4 --batch 64 --prefetch 2 --pin-memory
  shmbench doctor --shape 3x512x512 --dtype u8 --format markdown
  shmbench doctor --verify                           # run the loader under the recommended size
  shmbench doctor --ranks 8 --loaders train:8x2x128,val:4x2x256 --platform kubernetes
  shmbench doctor --ranks 2 --loaders train:2x2x8,val:1x2x16 --verify   # all at once, measured
  shmbench doctor --ranks 8 --loaders train:8x2x128 --with nccl:8,ray:2g
                                                     # what else fills /dev/shm
  shmbench doctor --ranks 8 --loaders train:8x2x128 --with nccl:8,vllm:2
                                                     # RL: training beside a vLLM rollout
  shmbench doctor --scenario my-node.toml --cell train   # a scenario's loader and [[consumers]]

Exit status: 0 when the loader fits here, 1 when it does not (or --verify failed).
It never changes the system: it prints commands.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Run the loader (or every rank's loaders at once) in a namespace cell under the
    /// recommended /dev/shm size
    #[arg(long)]
    pub(crate) verify: bool,
    /// Processes per node, each with its own loaders (DDP: one per GPU)
    #[arg(long, default_value_t = 1)]
    pub(crate) ranks: u32,
    /// The loaders each rank runs at once, NAME:WORKERSxPREFETCHxBATCH[+DATASET], comma-separated
    /// (e.g. train:8x2x128,val:4x2x256; +2g: the tensors that loader's own Dataset holds, else
    /// --dataset-bytes; default: the one the loader flags describe)
    #[arg(long)]
    pub(crate) loaders: Option<LoaderList>,
    /// What else fills the node's /dev/shm, comma-separated: nccl:RANKS[:CHANNELS] (NCCL's
    /// shared-memory transport between the node's ranks and each rank's proxy ops pool),
    /// vllm:TENSOR_PARALLEL (vLLM's message queues between its workers), both predictions from
    /// their source, or ray:OBJECT_STORE_SIZE (a Ray node's object store; measured)
    #[arg(long, value_delimiter = ',', value_name = "CONSUMER")]
    pub(crate) with: Vec<Consumer>,
    /// Take the loader from a scenario (file or built-in name: its [defaults], or --cell's
    /// knobs) and add its [[consumers]]; loader flags given here override it
    #[arg(long, value_name = "SCENARIO")]
    pub(crate) scenario: Option<PathBuf>,
    /// The scenario's cell whose loader to diagnose (default: the scenario's defaults)
    #[arg(long, requires = "scenario")]
    pub(crate) cell: Option<String>,
    /// Where the job runs, for the fixes (default: detected)
    #[arg(long, value_parser = super::choice::choice::<Target>())]
    pub(crate) platform: Option<Target>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    /// Loader flags (--shm-size: diagnose against that size instead of the /dev/shm seen)
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

/// A job's loader knobs and what fills /dev/shm beside it: a scenario's (its defaults or
/// `cell`'s knobs, and its `[[consumers]]`) under the flags' knobs and `--with`, or the flags'
/// alone. `doctor` and `node` make their jobs this way.
pub(super) fn loader_and_consumers(
    scenario: Option<&Path>,
    cell: Option<&str>,
    flags: Knobs,
    with: Vec<Consumer>,
) -> Result<(Knobs, Vec<Consumer>)> {
    let (knobs, mut consumers) = match scenario {
        Some(path) => {
            let scenario = Scenario::load(path)?;
            let mut knobs = scenario.knobs_of(cell)?;
            knobs.overlay(&flags);
            (knobs, scenario.consumers)
        }
        None => (flags, Vec::new()),
    };
    consumers.extend(with);
    Ok((knobs, consumers))
}

/// `--ranks`, when it is a count of processes on one node.
pub(super) fn check_ranks(ranks: u32) -> Result<()> {
    if ranks == 0 || ranks > 1024 {
        bail!("--ranks {ranks}: give the processes per node, 1 to 1024");
    }
    Ok(())
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let (mut knobs, with) = loader_and_consumers(
        args.scenario.as_deref(),
        args.cell.as_deref(),
        args.knobs.0,
        args.with,
    )?;
    let assumed = knobs.shm_size.take();
    let config = resolve::tool_config("doctor", knobs, &super::platform())?;
    let mut env = Environment::read();
    if let Some(size) = assumed {
        env.shm_total_bytes = size.bytes();
        env.shm_free_bytes = size.bytes();
        env.evidence
            .push_str("; /dev/shm size taken from --shm-size");
    }
    check_ranks(args.ranks)?;
    let specs = args.loaders.map(|l| l.0).unwrap_or_default();
    if args.verify && !with.is_empty() {
        bail!("--verify runs the loaders only; the consumers of --with and [[consumers]] are not run: verify without them");
    }
    let job = job::predict(&config, args.ranks, &specs, &with);
    let diagnosis = advice::diagnose(&config, &job, env, args.platform);
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&diagnosis)?),
        Format::Markdown => print!("{}", doctor::render(&diagnosis, true)),
        Format::Text => print!("{}", doctor::render(&diagnosis, false)),
    }
    let mut ok = diagnosis.fits;
    if args.verify {
        ok = prove(
            &config,
            &job,
            args.ranks,
            args.platform,
            diagnosis.recommended_bytes,
        )?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The doctor's proof: the loader (or every rank's loaders at once) under `shm` of /dev/shm,
/// as a Slurm job where the platform is Slurm and a controller answers; whether it passed.
fn prove(
    config: &CellConfig,
    job: &JobPeak,
    ranks: u32,
    platform: Option<Target>,
    shm: u64,
) -> Result<bool> {
    let single = ranks == 1 && job.loaders.len() == 1;
    let on_slurm = platform == Some(Target::Slurm) && super::slurm_verify::available();
    let record = if single && on_slurm {
        super::slurm_verify::run(&verify::cell(config, shm), shm)?
    } else if single {
        if platform == Some(Target::Slurm) {
            eprintln!("no Slurm controller answers here (scontrol ping): verifying here instead");
        }
        let cell = verify::cell(config, shm);
        eprintln!(
            "verifying: {} steps under {} of /dev/shm (namespace cell, {} ms per step)...",
            cell.knobs.steps,
            ByteSize(shm),
            cell.knobs.compute_ms
        );
        verify::run(&cell)?
    } else {
        let specs: Vec<_> = job.loaders.iter().map(|l| l.spec.clone()).collect();
        let cells = verify::job_cells(config, ranks, &specs);
        eprintln!(
            "verifying: {} loaders at once ({} rank(s) x {}), {} steps each, under {} of /dev/shm (one namespace cell, {} ms per step)...",
            cells.len(),
            ranks,
            specs.len(),
            cells[0].knobs.steps,
            ByteSize(shm),
            cells[0].knobs.compute_ms
        );
        verify::run_job(&cells, shm, &super::platform())?
    };
    let verdict = if record.status.is_pass() {
        "PASSED"
    } else {
        "FAILED"
    };
    // As a Slurm job it ran in the node's own /dev/shm, whatever size that is.
    let under = match single && on_slurm {
        true => format!(
            "as a Slurm job in the node's /dev/shm of {}",
            ByteSize(record.shm_seen_bytes)
        ),
        false => format!("with /dev/shm = {}", ByteSize(shm)),
    };
    println!(
        "verify: {verdict} {under}: {} after {:.1} s, peak /dev/shm {} against the predicted {} ({:.0}%){}",
        record.status,
        record.metrics.wall_s,
        ByteSize(record.metrics.peak_shm_bytes),
        ByteSize(job.node_bytes),
        100.0 * record.metrics.peak_shm_bytes as f64 / job.node_bytes.max(1) as f64,
        if record.message.is_empty() {
            String::new()
        } else {
            format!(" ({})", record.message)
        }
    );
    Ok(record.status.is_pass())
}
