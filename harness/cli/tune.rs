//! `shmbench tune`: the fastest DataLoader settings that fit a /dev/shm budget, by measurement.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::text_or_json::TextOrJson as Format;
use crate::model::config::CellConfig;
use crate::model::knobs::{Knobs, Loader, RuntimeKind, StartMethod, Strategy};
use crate::model::size::ByteSize;
use crate::plan::resolve;
use crate::present::report::plots::{self, frontier};
use crate::runtime::Runtimes;
use crate::sys::fingerprint::mem_total;
use crate::sys::signals;
use crate::tune::candidate::Bounds;
use crate::tune::search::{self, Tuned};
use crate::tune::setting::{self, Setting, Space};
use crate::tune::trials::Progress;
use crate::tune::{grid, grid_text, pick_text, trial};

/// What `shmbench tune --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench tune --shm-size 256m --batch 32 --steps 40 --compute-ms 30
  shmbench tune --shm-size 1g --decode-us 500 --max-time 600 --format json
  shmbench tune --shm-size 128m --batch 8 --tune-workers 1,2,4 --tune-prefetch 2,4 --tune-pin no
  shmbench tune --shm-size 64m --memory 2g --batch 8 --strategy file_descriptor
  shmbench tune --shm-size 256m --epochs 3 --steps 10   # persistent_workers tried both ways
  shmbench tune --shm-size 64m --batch 8 --decode-us 300 --compute-ms 20 --validate   # and the whole grid, to judge it

Each setting the model says cannot fit when training stalls (every worker's prefetch full) in
the margin of the /dev/shm or of the memory (--memory, else the limit this runs under, else
this node's) is left out; of the rest, a few run as real cells in a /dev/shm of exactly
--shm-size, one knob at a time from the usual guess towards the fastest (the screen: workers,
prefetch, pinning; the start method, sharing strategy and persistent workers as the leaders'
twins); the few close to the best race in --margin of it, the faster half again (successive
halving), until two pass there twice: a pick passed every run it had. The loader's other knobs
(batch, shape, dtype, decode and step time) describe your data; docs/TUNE.md says how to read
the result.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The share of --shm-size the pick must also pass in
    #[arg(long, default_value_t = 0.85, value_parser = margin)]
    pub(crate) margin: f64,
    /// The most runs one setting gets while racing
    #[arg(long, default_value_t = 3)]
    pub(crate) most_runs: u32,
    /// Stop screening and racing after this many seconds (the pick is still checked at the
    /// margin; not the grid of --validate, which runs whole)
    #[arg(long, value_name = "SECONDS", value_parser = super::seconds::positive)]
    pub(crate) max_time: Option<Duration>,
    /// num_workers values to try [default: 1, 2, 4, ... up to twice the cores]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub(crate) tune_workers: Vec<u32>,
    /// prefetch_factor values to try [default: 1,2,4]
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub(crate) tune_prefetch: Vec<u32>,
    /// pin_memory values to try: yes, no [default: no,yes]
    #[arg(long, value_delimiter = ',', value_name = "yes|no,...", value_parser = yes_no)]
    pub(crate) tune_pin: Vec<bool>,
    /// Start methods to try [default: fork,forkserver]
    #[arg(long, value_delimiter = ',', value_name = "METHOD,...", value_parser = super::choice::choice::<StartMethod>())]
    pub(crate) tune_start: Vec<StartMethod>,
    /// Sharing strategies to try (torch.multiprocessing.set_sharing_strategy)
    /// [default: file_descriptor,file_system]
    #[arg(long, value_delimiter = ',', value_name = "STRATEGY,...", value_parser = super::choice::choice::<Strategy>())]
    pub(crate) tune_strategy: Vec<Strategy>,
    /// persistent_workers values to try: yes, no [default: no,yes with --epochs 2 or more (a
    /// trial of one epoch never respawns its workers); else the loader's, --persistent-workers]
    #[arg(long, value_delimiter = ',', value_name = "yes|no,...", value_parser = yes_no)]
    pub(crate) tune_persistent: Vec<bool>,
    /// Also run every setting of the grid --grid-runs times and judge the pick by it (within
    /// --within of the grid's best, never a setting that failed a run of it), with each one's
    /// trial time: a check of the search on this machine, many times longer than the search
    #[arg(long)]
    pub(crate) validate: bool,
    /// Runs of each setting in --validate's grid
    #[arg(long, default_value_t = 3, requires = "validate")]
    pub(crate) grid_runs: u32,
    /// The share of the grid's best img/s a pick may fall short by under --validate
    #[arg(long, default_value_t = 0.05, requires = "validate", value_parser = share)]
    pub(crate) within: f64,
    /// Write the frontier's plot (frontier.png and .svg: img/s against the /dev/shm each
    /// setting needs, the pick ringed, the budget and margin drawn) into this folder
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<std::path::PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub(crate) format: Format,
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

fn margin(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(m) if m > 0.0 && m <= 1.0 => Ok(m),
        _ => Err(format!(
            "{text}: a share of the budget, above 0 and at most 1 (0.85: 85%)"
        )),
    }
}

fn share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(m) if (0.0..1.0).contains(&m) => Ok(m),
        _ => Err(format!(
            "{text}: a share, at least 0 and below 1 (0.05: 5%)"
        )),
    }
}

fn yes_no(text: &str) -> Result<bool, String> {
    match text {
        "yes" | "true" => Ok(true),
        "no" | "false" => Ok(false),
        _ => Err(format!("{text}: yes or no")),
    }
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    let max_time = args.max_time;
    if args.most_runs == 0 {
        bail!("--most-runs 0: a setting needs at least one run");
    }
    if args.grid_runs == 0 {
        bail!("--grid-runs 0: a setting needs at least one run");
    }
    let knobs = &args.knobs.0;
    refuse_what_tune_sets(&args)?;
    // Where the plot goes is known before any trial, not found unwritable after them all.
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("--plot {}: {e}", dir.display()))?;
    }
    let (shm_bytes, budget_from) = budget(knobs, args.margin)?;
    let cpus = match &knobs.cpus {
        Some(list) => list.0.len() as u32,
        None => std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
    };
    let mut space = space(&args, cpus)?;
    // The loader resolved and checked as its least demanding setting, then each setting.
    // The memory limit is each trial's (a cgroup around its namespace cell): set once the
    // loader is resolved, as a tool's one host loader cannot carry it.
    let least = Knobs {
        workers: space.workers.iter().min().copied(),
        prefetch: space.prefetch.iter().min().copied(),
        memory: None,
        ..knobs.clone()
    };
    let mut base = resolve::tool_config("tune", least, &super::platform())?;
    base.knobs.memory = knobs.memory;
    // Checked before a torch loader runs the user's Dataset (seconds).
    let (memory_bytes, memory_from) = memory_budget(knobs, args.margin)?;
    let loader = torch_loader(&args, &mut base, &mut space)?;
    let usual = setting::usual_guess(cpus, &base);
    let settings = space.settings();
    let bounds = Bounds {
        shm_bytes,
        margin: args.margin,
        most_runs: args.most_runs,
        margin_runs: 2,
        max_time,
        memory_bytes: Some(memory_bytes),
    };
    // The usual guess is always measured, so the pick is said against it (never picked from
    // outside the grid).
    for s in settings.iter().chain([&usual]) {
        let cell = trial::cell(&s.apply(&base), bounds.margin_bytes(), &bounds);
        if let Err(e) = cell.validate(mem_total()) {
            bail!("the setting {}: --{e}", s.name());
        }
    }
    signals::install();
    // What dead runs left (a SIGKILLed tune's cgroups, folders), as every run does first.
    for line in super::sweep::lines(&crate::orchestrate::leftovers::sweep(&[])) {
        eprintln!("shmbench tune: {line}");
    }
    let runtimes = trial::runtimes(&base)?;
    // The grid first, when validating: the search after it on the machine as the grid left it.
    let grid = match args.validate {
        true => match run_grid(&args, &base, &settings, bounds, &runtimes)? {
            Ok(grid) => Some(grid),
            Err(code) => return Ok(code),
        },
        false => None,
    };
    let began = Instant::now();
    eprintln!(
        "shmbench tune: {} setting(s) in a /dev/shm of {} (each run a namespace cell); the model leaves out what cannot fit",
        settings.len(),
        ByteSize(shm_bytes)
    );
    let mut runs = 0;
    let searched = search::search(
        &base,
        &settings,
        Some(usual),
        bounds,
        |config, bytes| trial::run(&runtimes, config, bytes, &bounds),
        |p: &Progress| {
            runs = p.done;
            eprintln!("{}", progress_line(p, began.elapsed()));
        },
    );
    if let Some(code) = stopped(runs) {
        return Ok(code);
    }
    let tuned = searched?;
    let validation = (grid.as_ref()).map(|g| grid::validate(g, &tuned, args.within));
    if let Some(dir) = &args.plot {
        plot(&tuned, dir)?;
    }
    let from = pick_text::From {
        shm: budget_from,
        memory: memory_from,
    };
    print(args.format, &tuned, &grid, &validation, || {
        pick_text::render(&tuned, &base, &loader, from)
    })?;
    // No pick is an answer, not a failure of the tool; said by the exit status for scripts
    // (and a search the grid disagrees with, under --validate, where agreeing on none is still
    // no pick).
    Ok(match (tuned.pick, validation) {
        (Some(_), Some(v)) if v.agrees => ExitCode::SUCCESS,
        (Some(_), None) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

/// The result on stdout: the search (`text` its words), and the grid and its verdict under
/// --validate.
fn print(
    format: Format,
    tuned: &Tuned,
    grid: &Option<grid::Grid>,
    validation: &Option<grid::Validation>,
    text: impl FnOnce() -> String,
) -> Result<()> {
    match format {
        Format::Json => {
            let json = match (grid, validation) {
                (Some(grid), Some(validation)) => serde_json::json!({
                    "search": tuned, "grid": grid, "validation": validation
                }),
                _ => serde_json::to_value(tuned)?,
            };
            println!("{}", serde_json::to_string_pretty(&json)?)
        }
        Format::Text => {
            println!("{}", text());
            if let (Some(grid), Some(validation)) = (grid, validation) {
                println!("\n{}", grid_text::render(grid, tuned, validation));
            }
        }
    }
    Ok(())
}

/// A torch tune's Python and Dataset read into `base` (trial::torch_loader), pin_memory left out
/// of `space` where torch ignores it (no accelerator), unless asked for; the loader's words.
fn torch_loader(args: &Args, base: &mut CellConfig, space: &mut Space) -> Result<String> {
    let torch = trial::torch_loader(base)?;
    let sample = torch.as_ref().and_then(|t| t.sample.as_ref());
    let words = pick_text::loader_words(base, sample.map(|s| s.shapes.as_str()));
    // Both values would be one setting.
    let pin_asked = !args.tune_pin.is_empty() || args.knobs.0.pin_memory.is_some();
    if torch.as_ref().is_some_and(|t| !t.accelerator) && !pin_asked {
        space.pin_memory = vec![false];
        eprintln!(
            "shmbench tune: pin_memory left out: torch sees no accelerator here and ignores it"
        );
    }
    Ok(words)
}

/// Writes the frontier's plot into `dir` and says where (on stderr: stdout may be JSON).
fn plot(tuned: &Tuned, dir: &std::path::Path) -> Result<()> {
    let frontier = tuned.frontier();
    let settings: Vec<frontier::Setting> = (tuned.candidates.iter().enumerate())
        .map(|(i, c)| {
            // A failed run: no rate is drawn for it, only its cross.
            let failed = !c.runs.is_empty() && !c.passed_every_run();
            frontier::Setting {
                name: c.name.clone(),
                needs_bytes: c.needs_bytes,
                img_per_s: c.median().filter(|_| !failed),
                failed,
                on_frontier: frontier.contains(&i),
                pick: tuned.pick == Some(i),
            }
        })
        .collect();
    let drawn = frontier::Frontier {
        settings: &settings,
        shm_bytes: tuned.shm_bytes,
        margin_bytes: tuned.margin_bytes,
    };
    for p in plots::write_frontier(&drawn, dir)? {
        eprintln!("plot: {}", dir.join(&p.png).display());
    }
    Ok(())
}

/// The exit status when a signal stopped the runs, said on stderr.
fn stopped(runs: usize) -> Option<ExitCode> {
    let signal = signals::received()?;
    eprintln!(
        "shmbench tune: stopped by {} after {runs} run(s): nothing picked (each run's cell is gone)",
        signals::name(signal)
    );
    Some(ExitCode::from(128 + signal as u8))
}

/// The grid: `--tune-*` lists, else the defaults for `cpus`, a loader flag of what tune
/// chooses fixing it (`--workers 4`: tune the rest).
fn space(args: &Args, cpus: u32) -> Result<Space> {
    let knobs = &args.knobs.0;
    let mut defaults = Space::for_cpus(cpus);
    if let Some(workers) = knobs.workers {
        defaults.workers = vec![workers];
    }
    if let Some(prefetch) = knobs.prefetch {
        defaults.prefetch = vec![prefetch];
    }
    if let Some(pin) = knobs.pin_memory {
        defaults.pin_memory = vec![pin];
    }
    if let Some(start) = knobs.start_method {
        defaults.start_methods = vec![start];
    }
    if let Some(strategy) = knobs.strategy {
        defaults.strategies = vec![strategy];
    }
    // Respawned workers cost only at an epoch's end: a one-epoch trial cannot tell them apart.
    defaults.persistent_workers = match (knobs.persistent_workers, knobs.epochs) {
        (Some(given), _) => vec![given],
        (None, Some(epochs)) if epochs > 1 => vec![false, true],
        (None, _) => vec![true],
    };
    fn or<T>(given: Vec<T>, default: Vec<T>) -> Vec<T> {
        if given.is_empty() {
            default
        } else {
            given
        }
    }
    let space = Space {
        workers: or(args.tune_workers.clone(), defaults.workers),
        prefetch: or(args.tune_prefetch.clone(), defaults.prefetch),
        pin_memory: or(args.tune_pin.clone(), defaults.pin_memory),
        start_methods: or(args.tune_start.clone(), defaults.start_methods),
        strategies: or(args.tune_strategy.clone(), defaults.strategies),
        persistent_workers: or(args.tune_persistent.clone(), defaults.persistent_workers),
    };
    if space.workers.contains(&0) || space.prefetch.contains(&0) {
        bail!("--tune-workers and --tune-prefetch take values of 1 or more (prefetch_factor needs workers)");
    }
    Ok(space)
}

/// Every setting of the grid `--grid-runs` times (`--validate`); Err: the exit status of a
/// signal that stopped it.
fn run_grid(
    args: &Args,
    base: &CellConfig,
    settings: &[Setting],
    bounds: Bounds,
    runtimes: &Runtimes,
) -> Result<Result<grid::Grid, ExitCode>> {
    let shm_bytes = bounds.shm_bytes;
    let grid_bounds = Bounds {
        most_runs: args.grid_runs,
        max_time: None,
        ..bounds
    };
    eprintln!(
        "shmbench tune --validate: every one of {} setting(s), {} run(s) each, in a /dev/shm of {}, then the search",
        settings.len(),
        args.grid_runs,
        ByteSize(shm_bytes)
    );
    let (began, mut runs) = (Instant::now(), 0);
    let grid = grid::grid(
        base,
        settings,
        grid_bounds,
        |config, bytes| trial::run(runtimes, config, bytes, &bounds),
        |p: &Progress| {
            runs = p.done;
            eprintln!("grid {}", progress_line(p, began.elapsed()));
        },
    );
    if let Some(code) = stopped(runs) {
        return Ok(Err(code));
    }
    Ok(Ok(grid?))
}

/// The budget: --shm-size, else this machine's (or this container's) /dev/shm; and where it
/// came from when not given. Refused when the margin leaves no batch room, or when it is more
/// than this machine's memory.
fn budget(knobs: &Knobs, margin: f64) -> Result<(u64, Option<&'static str>)> {
    let (shm_bytes, budget_from) = match knobs.shm_size {
        Some(size) => (size.bytes(), None),
        None => match crate::sys::shm::usage().0 {
            0 => bail!("/dev/shm cannot be read here: give the budget with --shm-size"),
            size => (
                size,
                Some("this machine's /dev/shm (give the job's with --shm-size)"),
            ),
        },
    };
    if (shm_bytes as f64 * margin) < (1 << 20) as f64 {
        bail!(
            "--shm-size {} with --margin {margin}: under 1 MiB to pass in, no batch fits",
            ByteSize(shm_bytes)
        );
    }
    if shm_bytes > mem_total() {
        bail!(
            "--shm-size {} is more than this machine's memory ({}): its trials could not hold it; tune on a machine like the job's",
            ByteSize(shm_bytes),
            ByteSize(mem_total())
        );
    }
    Ok((shm_bytes, budget_from))
}

/// The memory budget: --memory (each trial's limit too: a memory cgroup around its cell), else
/// the limit this process runs under (a container's, a Slurm job's: the trials run under it as
/// well), else this node's memory; and where it came from when not given.
/// Refused: a limit over this machine's memory (its trials could not tell), or one whose margin
/// is below the 6 MiB a cell's memory limit takes.
fn memory_budget(knobs: &Knobs, margin: f64) -> Result<(u64, Option<&'static str>)> {
    let Some(given) = knobs.memory else {
        return Ok(match crate::sys::cgroup::memory_limit() {
            Some(limit) => (
                limit,
                Some("the limit this runs under, its cgroup's (give the job's with --memory)"),
            ),
            None => (
                mem_total(),
                Some("this node's, no limit here (give the job's with --memory)"),
            ),
        });
    };
    if given.bytes() > mem_total() {
        bail!(
            "--memory {given} is more than this machine's memory ({}): its trials could not tell what fits; tune on a machine like the job's",
            ByteSize(mem_total())
        );
    }
    // The trials' own cgroups are made at the hierarchy's root, outside the one this runs in.
    if let Some(limit) = crate::sys::cgroup::memory_limit().filter(|l| given.bytes() > *l) {
        bail!(
            "--memory {given} is more than the limit this runs under ({}, its cgroup's): a job here could not have it; give at most that",
            ByteSize(limit)
        );
    }
    if (given.bytes() as f64 * margin) < (6 << 20) as f64 {
        bail!("--memory {given} with --margin {margin}: under 6 MiB at the margin, the least a cell's memory limit may be");
    }
    Ok((given.bytes(), None))
}

/// Refuses a flag tune cannot honour: a setting it chooses given twice (`--workers` fixes it,
/// `--tune-workers` lists it), a runtime other than its own namespace cells, the real torch
/// loader (not yet).
fn refuse_what_tune_sets(args: &Args) -> Result<()> {
    let k = &args.knobs.0;
    let twice = [
        (
            "workers",
            k.workers.is_some() && !args.tune_workers.is_empty(),
        ),
        (
            "prefetch",
            k.prefetch.is_some() && !args.tune_prefetch.is_empty(),
        ),
        (
            "pin-memory",
            k.pin_memory.is_some() && !args.tune_pin.is_empty(),
        ),
        (
            "start-method",
            k.start_method.is_some() && !args.tune_start.is_empty(),
        ),
        (
            "strategy",
            k.strategy.is_some() && !args.tune_strategy.is_empty(),
        ),
        (
            "persistent-workers",
            k.persistent_workers.is_some() && !args.tune_persistent.is_empty(),
        ),
    ];
    if let Some((flag, _)) = twice.iter().find(|(_, both)| *both) {
        bail!(
            "--{flag} fixes what --tune-{} lists: give one of them",
            flag.split('-').next().unwrap_or(flag)
        );
    }
    if let Some(runtime) = k
        .runtime
        .filter(|r| !matches!(r, RuntimeKind::Auto | RuntimeKind::Namespace))
    {
        bail!("--runtime {runtime}: tune runs each trial as a namespace cell (a tmpfs of exactly the budget); leave --runtime out");
    }
    // A container's or a VM's: a trial is a namespace cell here, whatever they say.
    let foreign = [
        ("image", k.image.is_some()),
        ("container", k.container.is_some()),
        ("ipc", k.ipc.is_some()),
        ("shm-tmpfs", k.shm_tmpfs.is_some()),
        ("shm-remount", k.shm_remount.is_some()),
        ("kernel", k.kernel.is_some()),
        ("vm-memory", k.vm_memory.is_some()),
        ("vm-cpus", k.vm_cpus.is_some()),
        ("vm-boot-s", k.vm_boot_s.is_some()),
        ("accel", k.accel.is_some()),
    ];
    if let Some((flag, _)) = foreign.iter().find(|(_, given)| *given) {
        bail!("--{flag}: tune runs each trial as a namespace cell on this machine (a tmpfs of exactly the budget), not in a container or a VM; leave --{flag} out");
    }
    // What tune picks is pasted into a torch job: an emulation's own strategy is no setting.
    let mut strategies = k.strategy.iter().chain(&args.tune_strategy);
    if let Some(other) =
        strategies.find(|s| !matches!(s, Strategy::FileDescriptor | Strategy::FileSystem))
    {
        bail!("--strategy/--tune-strategy {other}: not a torch sharing strategy; tune picks among torch's two, file_descriptor and file_system");
    }
    if !args.tune_persistent.is_empty() && k.epochs.unwrap_or(1) < 2 {
        bail!("--tune-persistent with one epoch a trial: workers are respawned only between epochs, so its trials could not tell persistent_workers apart; give --epochs 2 or more");
    }
    if k.loader == Some(Loader::Command) {
        bail!("--loader command: tune runs a DataLoader (emulated, or torch with --dataset), not a command");
    }
    if k.dataset.is_some() && (k.shape.is_some() || k.dtype.is_some() || k.dataset_bytes.is_some())
    {
        bail!("--dataset: its samples' shape and dtype, and the tensors it holds, are read from it: leave --shape, --dtype and --dataset-bytes out");
    }
    Ok(())
}

/// `  [12, ~20 left, ETA 0:45] w2-p4-fork in 256 MiB: pass, 412 img/s`.
fn progress_line(p: &Progress, elapsed: Duration) -> String {
    let per = elapsed.as_secs_f64() / p.done.max(1) as f64;
    let eta = (per * p.left as f64) as u64;
    let outcome = match (p.run.status.is_pass(), p.run.img_per_s) {
        (true, Some(rate)) => format!("pass, {rate:.0} img/s"),
        (true, None) => "pass".to_string(),
        (false, _) => format!(
            "{}{}",
            p.run.status,
            p.run
                .crash_step
                .map(|s| format!(" at step {s}"))
                .unwrap_or_default()
        ),
    };
    format!(
        "  [{}, ~{} left, ETA {}:{:02}] {} in {}: {outcome}",
        p.done,
        p.left,
        eta / 60,
        eta % 60,
        p.setting.name(),
        ByteSize(p.run.shm_bytes)
    )
}
