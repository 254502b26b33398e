//! The `shmbench` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use shmbench::config::{Identity, Knobs, Platform, RuntimeKind, Strategy, TorchProfile};
use shmbench::detect::Environment;
use shmbench::record::fingerprint::mem_total;
use shmbench::report::{self, Report};
use shmbench::runtime::Runtimes;
use shmbench::scenario::{self, Scenario};
use shmbench::size::ByteSize;
use shmbench::{cell, doctor, loader, minshm, runner, table};

#[derive(Parser)]
#[command(
    name = "shmbench",
    version,
    about = "Reproduce, measure and track the PyTorch DataLoader \"Bus error\" (/dev/shm exhaustion)",
    long_about = "shmbench runs an emulation of the PyTorch DataLoader (worker processes that put every batch in POSIX shared memory, exactly as torch allocates and shares it) under a real /dev/shm of a chosen size, and records whether it passes or crashes (SIGBUS, ENOSPC, ...) at which step, and at how many images per second.",
    after_help = "Examples:\n  shmbench matrix                                   # the how-to's five rows, measured here\n  shmbench matrix --steps 20 --cells docker-default,docker-tuned\n  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 --out x.csv\n  shmbench run --shm-size 64m --strategy file_system --workers 1 --batch 8"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario's cells (default: the how-to's validation matrix) and print the table
    #[command(
        after_help = "Examples:\n  shmbench matrix\n  shmbench matrix scenarios/seed-matrix.toml --steps 30 --out results/quick.csv\n  shmbench matrix --cells docker-tuned --torch modern\n  shmbench matrix --dry-run"
    )]
    Matrix {
        /// Scenario file
        #[arg(default_value = scenario::SEED_MATRIX_PATH)]
        scenario: PathBuf,
        /// Only these cells (comma-separated names)
        #[arg(long, value_delimiter = ',')]
        cells: Option<Vec<String>>,
        /// Results CSV (default: results/<scenario>-<UTC time>.csv)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the resolved cells as JSON and run nothing
        #[arg(long)]
        dry_run: bool,
        /// Run cells whose predicted /dev/shm peak exceeds this machine's memory
        #[arg(long)]
        force: bool,
        /// Run every cell this many times, interleaved (for statistics and `compare`)
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
        /// Overrides applied to every cell
        #[command(flatten)]
        knobs: Knobs,
    },
    /// Run one ad-hoc cell from flags alone
    #[command(
        after_help = "Examples:\n  shmbench run                                 # seed setup on this machine's /dev/shm\n  shmbench run --shm-size 64m                  # Docker's default size: SIGBUS at step 1\n  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 --out x.csv\n  shmbench run --shm-size 256m --workers 2 --batch 8 --retain-every 4 --steps 200"
    )]
    Run {
        /// Cell name in the results
        #[arg(long, default_value = "adhoc")]
        name: String,
        /// Results CSV (default: results/run-<UTC time>.csv)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also print the cell's full JSON record on stdout
        #[arg(long)]
        json: bool,
        /// Run the cell this many times
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
        /// Run even if the predicted /dev/shm peak exceeds this machine's memory
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        knobs: Knobs,
    },
    /// Run one cell config in this process tree and print its JSON record (the protocol every
    /// runtime launches; you rarely call it by hand)
    Cell {
        /// The resolved cell config as JSON (see `matrix --dry-run`)
        config_json: String,
    },
    /// How much /dev/shm a loader needs, whether it has it here, and the fixes that fit
    #[command(
        after_help = "Examples:\n  shmbench doctor                                    # the seed loader (8 workers, batch 128) here\n  shmbench doctor --workers 4 --batch 64 --prefetch 2 --pin-memory\n  shmbench doctor --shape 3x512x512 --dtype u8 --format md\n  shmbench doctor --verify                           # run the loader under the recommended size\n\nExit status: 0 when the loader fits here, 1 when it does not (or --verify failed).\nIt never changes the system: it prints commands."
    )]
    Doctor {
        /// Run the loader in a namespace cell under the recommended /dev/shm size
        #[arg(long)]
        verify: bool,
        /// Output format
        #[arg(long, value_parser = ["text", "json", "md"], default_value = "text")]
        format: String,
        /// Loader flags (--shm-size: diagnose against that size instead of the /dev/shm seen)
        #[command(flatten)]
        knobs: Knobs,
    },
    /// Find the smallest /dev/shm a loader passes in, by bisection over real cells
    #[command(
        name = "min-shm",
        after_help = "Examples:\n  shmbench min-shm --workers 2 --batch 16 --steps 30 --compute-ms 20\n  shmbench min-shm --resolution 4m --repeat 3 --format json\n\nA --compute-ms slower than the workers (real training) gives the worst case the doctor predicts;\nwith a fast consumer fewer batches wait and the minimum is lower."
    )]
    MinShm {
        /// Stop when the bracket is this narrow
        #[arg(long, default_value = "1m")]
        resolution: ByteSize,
        /// Runs that must pass at the boundary
        #[arg(long, default_value_t = 2)]
        repeat: u32,
        /// Output format
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
        #[command(flatten)]
        knobs: Knobs,
    },
    /// Measure this machine's data-path limits (memset, memcpy, fresh shared segments per strategy)
    #[command(
        after_help = "Examples:\n  shmbench calibrate\n  shmbench calibrate --batch 32 --seconds 1 --format json"
    )]
    Calibrate {
        /// Seconds per fresh-segment measurement
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
        /// Only these strategy:torch pairs (default: all)
        #[arg(long)]
        only: Option<String>,
        /// Measure in this process's /dev/shm (used inside the private namespace calibrate
        /// makes for itself)
        #[arg(long, hide = true)]
        here: bool,
        /// Batch shape to measure with (batch, shape, dtype)
        #[command(flatten)]
        knobs: Knobs,
    },
    /// Benchmark the harness against this machine's limits (host cell, efficiency, matrix time, RSS)
    #[command(
        after_help = "Example:\n  shmbench bench    # about 30 s; prints each target and whether it is met"
    )]
    Bench {
        /// Where the benchmark's matrix writes its CSV
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Compare two results files cell by cell, beyond noise; exit 1 when anything regressed
    #[command(
        after_help = "Examples:\n  shmbench compare results/base.csv results/new.csv\n  shmbench compare base.csv new.csv --threshold 3% --out compare.md\n\nVerdicts: outcome-changed (worse: pass -> crash or an earlier crash), regressed / improved (the\n95% bootstrap interval of the img/s change lies wholly beyond +-threshold), unchanged, new, missing.\nExit status: 1 when any cell regressed or its outcome got worse, 0 otherwise, 2 on bad input."
    )]
    Compare {
        baseline: PathBuf,
        candidate: PathBuf,
        /// Smallest img/s change that counts (5%, 0.05)
        #[arg(long, default_value = "5%", value_parser = shmbench::compare::parse_threshold)]
        threshold: f64,
        /// Also write the comparison as Markdown here
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Merge results files from several machines or runs into one (same schema)
    #[command(
        after_help = "Example:\n  shmbench merge hostA/*.csv hostB/*.csv --out results/all.csv"
    )]
    Merge {
        #[arg(required = true)]
        results: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// Trends of the same cells across runs ordered by an environment field, with change points
    #[command(
        after_help = "Examples:\n  shmbench history results/*.csv --by kernel\n  shmbench history results/*.csv --by time --threshold 10%"
    )]
    History {
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// kernel, driver, engine, torch, host, shm (the /dev/shm size) or time
        #[arg(long, default_value = "time")]
        by: String,
        #[arg(long, default_value = "5%", value_parser = shmbench::compare::parse_threshold)]
        threshold: f64,
        /// Also write the history as Markdown here
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Make a report (Markdown, self-contained HTML, JSON, PNG/SVG plots) from results files
    #[command(
        after_help = "Examples:\n  shmbench report results/seed-matrix-20261130T031415Z.csv\n  shmbench report hostA.csv hostB.csv --out reports/a-vs-b --format md,html"
    )]
    Report {
        /// Results CSV files (several: shown side by side)
        #[arg(required = true)]
        results: Vec<PathBuf>,
        /// Output directory (default: reports/<stem of the first results file>)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Formats to write
        #[arg(long, value_delimiter = ',', default_value = "md,html,json")]
        format: Vec<String>,
    },
    /// Remove /dev/shm segments left by shmbench runs that died (SIGKILL)
    Sweep,
    /// Show, rebuild or remove the container image the Docker runtime builds for itself
    #[command(
        after_help = "Examples:\n  shmbench image             # this binary's image tag and whether the engine has it\n  shmbench image --rebuild   # build it again (e.g. after the engine lost it)\n  shmbench image --remove    # remove every shmbench image"
    )]
    Image {
        /// Build the image for this binary even if the engine has it
        #[arg(long, conflicts_with = "remove")]
        rebuild: bool,
        /// Remove every shmbench image from the engine
        #[arg(long)]
        remove: bool,
    },
    #[command(hide = true)]
    Worker {
        id: u32,
        main_pid: u32,
        config_json: String,
    },
}

/// Refuses cells whose predicted /dev/shm peak is more than this machine's memory: tmpfs pages
/// are RAM, and filling them would push the whole machine into swap or the OOM killer.
fn refuse_oversized(cells: &[shmbench::config::CellConfig]) -> Result<()> {
    let mem = mem_total();
    for c in cells {
        let peak = shmbench::predict::batches_bytes(c, shmbench::predict::peak_batches(c));
        if mem > 0 && peak > mem {
            anyhow::bail!(
                "cell '{}' would need about {} of shared memory at its peak ({} batches of {}), more than this machine's {}: refused (use --force to run it anyway)",
                c.cell,
                ByteSize(peak),
                shmbench::predict::peak_batches(c),
                ByteSize(c.batch_bytes()),
                ByteSize(mem)
            );
        }
    }
    Ok(())
}

/// The loader config a tool command (doctor, min-shm, calibrate) works on: its flags on this
/// machine, with no runtime of its own (the tool decides where, if anywhere, cells run).
fn tool_config(name: &str, mut knobs: Knobs) -> Result<shmbench::config::CellConfig> {
    knobs.runtime = Some(RuntimeKind::Host);
    knobs.shm_size = None;
    let id = Identity {
        scenario: name.into(),
        cell: name.into(),
        environment: name.into(),
        claim: None,
    };
    knobs
        .resolve(id, &platform())
        .map_err(|e| anyhow::anyhow!("--{e}"))
}

fn platform() -> Platform {
    Platform::new(mem_total(), shmbench::runtime::engine::reachable)
}

fn print_outcome(outcome: &runner::Outcome) {
    let rows = outcome.results.rows();
    if rows.iter().any(|r| r.repeat > 1) {
        // Repeated: one line per cell with its statistics, then the first run's matrix.
        println!(
            "{}\n",
            shmbench::compare::render_summary(&shmbench::compare::summarize(rows))
        );
    }
    let first: Vec<_> = rows.iter().filter(|r| r.repeat == 1).cloned().collect();
    println!("{}", table::matrix(&first));
    let notes = table::notes(&first);
    if !notes.is_empty() {
        println!();
        for n in notes {
            println!("- {n}");
        }
    }
    println!();
    println!(
        "results: {} ({} rows)",
        outcome.results.path().display(),
        outcome.results.rows().len()
    );
}

fn interrupted_exit(outcome: &runner::Outcome) -> ExitCode {
    match outcome.interrupted {
        Some(sig) => {
            eprintln!(
                "stopped by {}: {} cell(s) finished and are in {}",
                loader::signal_name(sig),
                outcome.records.len(),
                outcome.results.path().display()
            );
            ExitCode::from(128 + sig as u8)
        }
        None => ExitCode::SUCCESS,
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Matrix {
            scenario: path,
            cells,
            out,
            dry_run,
            force,
            repeat,
            knobs,
        } => {
            let scenario = Scenario::load(&path)?;
            let plan = scenario.plan(&knobs, cells.as_deref(), &platform())?;
            if !force {
                refuse_oversized(&plan)?;
            }
            if dry_run {
                println!("{}", serde_json::to_string_pretty(&plan)?);
                return Ok(ExitCode::SUCCESS);
            }
            let out = out.unwrap_or_else(|| scenario::default_results_path(&scenario.name));
            eprintln!(
                "scenario {} ({}): {} cell(s) -> {}",
                scenario.name,
                scenario.origin,
                plan.len(),
                out.display()
            );
            let outcome = runner::run_repeated(&plan, &out, repeat)?;
            print_outcome(&outcome);
            if !outcome.results.rows().is_empty() {
                let dir = report::default_dir(&out);
                let all: Vec<String> = ["md", "html", "json"].map(String::from).to_vec();
                match Report::load(std::slice::from_ref(&out)).and_then(|r| r.write(&dir, &all)) {
                    Ok(files) => println!("report: {}", files[0].display()),
                    Err(e) => eprintln!("shmbench: the report could not be written: {e:#}"),
                }
            }
            Ok(interrupted_exit(&outcome))
        }
        Command::Doctor {
            verify,
            format,
            mut knobs,
        } => {
            let assumed = knobs.shm_size.take();
            let config = tool_config("doctor", knobs)?;
            let mut env = Environment::read();
            if let Some(size) = assumed {
                env.shm_total_bytes = size.bytes();
                env.shm_free_bytes = size.bytes();
                env.evidence
                    .push_str("; /dev/shm size taken from --shm-size");
            }
            let diagnosis = doctor::diagnose(&config, env);
            match format.as_str() {
                "json" => println!("{}", serde_json::to_string_pretty(&diagnosis)?),
                "md" => print!("{}", doctor::render(&diagnosis, true)),
                _ => print!("{}", doctor::render(&diagnosis, false)),
            }
            let mut ok = diagnosis.fits;
            if verify {
                let mut cell = config.clone();
                cell.runtime = RuntimeKind::Namespace;
                cell.shm_size = Some(ByteSize(diagnosis.recommended_bytes));
                cell.steps = cell.steps.min(40);
                if cell.compute_ms == 0.0 {
                    // A training step slower than the loader: every outstanding batch waits in
                    // /dev/shm, the worst case the prediction covers.
                    cell.compute_ms = 50.0;
                }
                let runtimes = Runtimes::for_cells(std::slice::from_ref(&cell))?;
                eprintln!(
                    "verifying: {} steps under {} of /dev/shm (namespace cell, {} ms per step)...",
                    cell.steps,
                    ByteSize(diagnosis.recommended_bytes),
                    cell.compute_ms
                );
                let record = runtimes.get(&cell).launch(&cell, &mut |_| {});
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
        Command::MinShm {
            resolution,
            repeat,
            format,
            knobs,
        } => {
            let config = tool_config("min-shm", knobs)?;
            shmbench::interrupt::install();
            let limit = mem_total() / 2;
            let result = minshm::search(&config, resolution.bytes(), repeat.max(1), limit, |t| {
                eprintln!(
                    "  /dev/shm {:>12}: {}{}",
                    ByteSize(t.shm_bytes).to_string(),
                    t.status,
                    t.crash_step
                        .map(|s| format!(" at step {s}"))
                        .unwrap_or_default()
                );
            })?;
            if format == "json" {
                println!("{}", serde_json::to_string_pretty(&result)?);
            } else {
                println!(
                    "minimum /dev/shm: {} (fails at {}; resolution {}; {} runs)\npredicted peak:   {} ({} batches of {})\nmeasured/predicted: {:.3}",
                    ByteSize(result.measured_bytes),
                    ByteSize(result.failed_below_bytes),
                    ByteSize(result.resolution_bytes),
                    result.trials.len(),
                    ByteSize(result.predicted_bytes),
                    result.predicted_batches,
                    ByteSize(config.batch_bytes()),
                    result.ratio()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Calibrate {
            seconds,
            format,
            only,
            here,
            knobs,
        } => {
            let config = tool_config("calibrate", knobs)?;
            if !(seconds > 0.0 && seconds <= 60.0) {
                anyhow::bail!("--seconds must be between 0 and 60");
            }
            let combos: Vec<(Strategy, TorchProfile)> = match only {
                Some(text) => shmbench::calibrate::parse_combos(&text)?,
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
            let duration = std::time::Duration::from_secs_f64(seconds);
            let c = if here {
                shmbench::calibrate::run(config.batch_bytes(), config.batch, &combos, duration)?
            } else {
                shmbench::calibrate::isolated(&config, &combos, duration)?
            };
            if format == "json" {
                println!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                println!("{}", shmbench::calibrate::render(&c));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { results } => {
            println!("{}", shmbench::bench::run(&platform(), &results)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Compare {
            baseline,
            candidate,
            threshold,
            out,
        } => {
            let base = shmbench::record::csv::read(&baseline)?;
            let cand = shmbench::record::csv::read(&candidate)?;
            let comparisons = shmbench::compare::compare(&base, &cand, threshold);
            if !comparisons
                .iter()
                .any(|c| c.baseline.is_some() && c.candidate.is_some())
            {
                anyhow::bail!(
                    "no cell in common between {} and {}: compare results of the same scenario (cells match by scenario, name and configuration)",
                    baseline.display(),
                    candidate.display()
                );
            }
            let text = shmbench::compare::render(&comparisons, threshold);
            println!("{text}");
            if let Some(path) = out {
                std::fs::write(
                    &path,
                    format!(
                        "# shmbench compare\n\n`{}` -> `{}`\n\n{text}\n",
                        baseline.display(),
                        candidate.display()
                    ),
                )?;
            }
            let regressed = comparisons.iter().any(|c| c.verdict.is_regression());
            Ok(if regressed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Merge { results, out } => {
            let mut merged = shmbench::record::csv::ResultsFile::create(&out)?;
            let mut rows = Vec::new();
            for path in &results {
                for mut row in shmbench::record::csv::read(path)? {
                    // Time series stay where they are: point at them from the merged file.
                    if let Some(rel) = &row.steps_file {
                        let at = path.parent().unwrap_or(std::path::Path::new(".")).join(rel);
                        row.steps_file = Some(
                            std::fs::canonicalize(&at)
                                .unwrap_or(at)
                                .display()
                                .to_string(),
                        );
                    }
                    rows.push(row);
                }
            }
            let before = rows.len();
            let mut seen = std::collections::HashSet::new();
            rows.retain(|r| {
                seen.insert((r.host.clone(), r.run_id.clone(), r.cell.clone(), r.repeat))
            });
            merged.replace(rows)?;
            println!(
                "{} rows from {} files -> {} ({} duplicate rows dropped)",
                merged.rows().len(),
                results.len(),
                out.display(),
                before - merged.rows().len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::History {
            results,
            by,
            threshold,
            out,
        } => {
            let mut rows = Vec::new();
            for path in &results {
                rows.extend(shmbench::record::csv::read(path)?);
            }
            let history = shmbench::history::build(&rows, &by, threshold)?;
            let text = shmbench::history::render(&history);
            println!("{text}");
            println!("method: binary segmentation of each cell's run medians (piecewise-constant fit), a split kept when it lowers the squared error by more than 2 s^2 ln(n) and steps by at least {:.0}%", threshold * 100.0);
            if let Some(path) = out {
                std::fs::write(&path, format!("# shmbench history\n\n{text}\n"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Report {
            results,
            out,
            format,
        } => {
            let dir = out.unwrap_or_else(|| report::default_dir(&results[0]));
            let report = Report::load(&results)?;
            for problem in &report.problems {
                eprintln!("shmbench: report: {problem}");
            }
            for file in report.write(&dir, &format)? {
                println!("{}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            name,
            out,
            json,
            repeat,
            force,
            knobs,
        } => {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                anyhow::bail!("--name '{name}': use letters, digits, '-' or '_' (it names files beside the results)");
            }
            let id = Identity {
                scenario: "run".into(),
                environment: name.clone(),
                cell: name,
                claim: None,
            };
            let config = knobs
                .resolve(id, &platform())
                .map_err(|e| anyhow::anyhow!("--{e}"))?;
            if !force {
                refuse_oversized(std::slice::from_ref(&config))?;
            }
            let out = out.unwrap_or_else(|| scenario::default_results_path("run"));
            let outcome = runner::run_repeated(std::slice::from_ref(&config), &out, repeat)?;
            if json {
                for record in &outcome.records {
                    println!("{}", serde_json::to_string(record)?);
                }
            }
            print_outcome(&outcome);
            Ok(interrupted_exit(&outcome))
        }
        Command::Cell { config_json } => {
            cell::main(&config_json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sweep => {
            let removed = loader::segment::sweep(None);
            if removed.is_empty() {
                println!("nothing to remove: no shmbench segments of dead runs in /dev/shm");
            }
            for r in removed {
                println!("removed {r}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Image { rebuild, remove } => {
            use shmbench::runtime::{engine::Engine, image};
            let engine = Engine::connect()?;
            if remove {
                let removed = image::remove_all(&engine)?;
                if removed.is_empty() {
                    println!("no shmbench images to remove");
                }
                for r in removed {
                    println!("removed {r}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            let context = image::BuildContext::of_this_binary()?;
            if rebuild || !image::exists(&engine, &context.tag) {
                let took = image::build(&engine, &context)?;
                println!("built {} in {:.2} s", context.tag, took.as_secs_f64());
            }
            println!("image for this binary: {} (present)", context.tag);
            println!(
                "contents: {}",
                context.paths().collect::<Vec<_>>().join(", ")
            );
            println!(
                "engine: Docker {} (API {}) at {}",
                engine.info.version,
                engine.info.api_version,
                shmbench::runtime::engine::address()
            );
            for listed in image::list(&engine)? {
                println!(
                    "  {} {} {:.1} MiB",
                    listed.tags.join(","),
                    &listed.id.trim_start_matches("sha256:")[..12.min(listed.id.len())],
                    listed.size as f64 / (1 << 20) as f64
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker {
            id,
            main_pid,
            config_json,
        } => {
            let config = serde_json::from_str(&config_json).context("worker config")?;
            let code = loader::worker::run(id, main_pid, &config)?;
            Ok(ExitCode::from(code as u8))
        }
    }
}

fn main() -> ExitCode {
    // Die quietly when stdout goes away (`shmbench matrix | head`), as command-line tools do,
    // instead of panicking on the write; workers write to sockets with MSG_NOSIGNAL.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("shmbench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
