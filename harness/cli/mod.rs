//! The `shmbench` command line: clap types, one file per subcommand, and the only code that prints
//! to the terminal. Each subcommand parses its flags, calls the layer that does the work and
//! prints what comes back; the exit status follows from the result.

mod bench;
mod calibrate;
mod check;
mod compare;
mod doctor;
mod export;
mod fidelity;
mod history;
mod image;
mod internal;
mod k8s;
mod logs;
mod matrix;
mod merge;
mod min_shm;
mod outcome;
mod progress;
mod repeat;
mod report;
mod run;
mod shm;
mod slurm;
mod slurm_verify;
mod sweep;
mod watch;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::plan::resolve::Platform;
use crate::runtime::docker::engine;
use crate::sys::fingerprint::mem_total;

#[derive(Parser)]
#[command(
    name = "shmbench",
    version,
    about = "Reproduce, measure and track the PyTorch DataLoader \"Bus error\" (/dev/shm exhaustion)",
    long_about = "shmbench runs an emulation of the PyTorch DataLoader (worker processes that put every batch in POSIX shared memory, exactly as torch allocates and shares it) under a real /dev/shm of a chosen size, and records whether it passes or crashes (SIGBUS, ENOSPC, ...) at which step, and at how many images per second.",
    after_help = "Examples:\n  shmbench matrix                                   # the how-to's five rows, measured here\n  shmbench matrix --steps 20 --cells docker-default,docker-tuned\n  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 --out x.csv\n  shmbench run --shm-size 64m --strategy file_system --workers 1 --batch 8"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run a scenario's cells (default: the how-to's validation matrix) and print the table
    #[command(
        after_help = "Examples:\n  shmbench matrix\n  shmbench matrix scenarios/seed-matrix.toml --steps 30 --out results/quick.csv\n  shmbench matrix --cells docker-tuned --torch modern\n  shmbench matrix --repeat 5                        # for compare: medians and 95% intervals\n  shmbench matrix --repeat auto --until-ci 3%       # rounds until CPU per image is that tight\n  shmbench matrix --dry-run\n  shmbench matrix --batch 8 --steps 20 --kernels host,debian:6.1.0-57-cloud-amd64,debian:6.1.0-53-cloud-amd64\n  shmbench history results/seed-matrix-*.csv --by kernel"
    )]
    Matrix(matrix::Args),
    /// Run one ad-hoc cell from flags alone
    #[command(
        after_help = "Examples:\n  shmbench run                                 # seed setup on this machine's /dev/shm\n  shmbench run --shm-size 64m                  # Docker's default size: SIGBUS at step 1\n  shmbench run --shm-size 512m --workers 8 --batch 128 --torch modern --touch first --steps 60 --out x.csv\n  shmbench run --shm-size 256m --workers 2 --batch 8 --retain-every 4 --steps 200"
    )]
    Run(run::Args),
    /// Run one cell config in this process tree and print its JSON record (the protocol every
    /// runtime launches; you rarely call it by hand)
    Cell(internal::CellArgs),
    /// How much /dev/shm a loader needs, whether it has it here, and the fixes that fit
    #[command(
        after_help = "Examples:\n  shmbench doctor                                    # the seed loader (8 workers, batch 128) here\n  shmbench doctor --workers 4 --batch 64 --prefetch 2 --pin-memory\n  shmbench doctor --shape 3x512x512 --dtype u8 --format markdown\n  shmbench doctor --verify                           # run the loader under the recommended size\n  shmbench doctor --ranks 8 --loaders train:8x2x128,val:4x2x256 --platform kubernetes\n  shmbench doctor --ranks 2 --loaders train:2x2x8,val:1x2x16 --verify   # all at once, measured\n  shmbench doctor --ranks 8 --loaders train:8x2x128 --with nccl:8,ray:2g   # what else fills /dev/shm\n  shmbench doctor --ranks 8 --loaders train:8x2x128 --with nccl:8,vllm:2   # RL: training beside a vLLM rollout\n  shmbench doctor --scenario my-node.toml --cell train   # a scenario's loader and [[consumers]]\n\nExit status: 0 when the loader fits here, 1 when it does not (or --verify failed).\nIt never changes the system: it prints commands."
    )]
    Doctor(doctor::Args),
    /// Find the smallest /dev/shm a loader passes in, by bisection over real cells
    #[command(
        name = "min-shm",
        after_help = "Examples:\n  shmbench min-shm --workers 2 --batch 16 --steps 30 --compute-ms 20\n  shmbench min-shm --resolution 4m --repeat 3 --format json\n  shmbench min-shm --resolution 8m --budget 600 -- python train.py --epochs 1   # any command\n\nA --compute-ms slower than the workers (real training) gives the worst case the doctor predicts;\nwith a fast consumer fewer batches wait and the minimum is lower."
    )]
    MinShm(min_shm::Args),
    /// Measure this machine's data-path limits (memset, memcpy, fresh shared segments per strategy)
    #[command(
        after_help = "Examples:\n  shmbench calibrate\n  shmbench calibrate --batch 32 --seconds 1 --format json"
    )]
    Calibrate(calibrate::Args),
    /// Benchmark the harness against this machine's limits (host cell, efficiency, matrix time, RSS)
    #[command(
        after_help = "Example:\n  shmbench bench    # about 30 s; prints each target and whether it is met"
    )]
    Bench(bench::Args),
    /// Compare two results files cell by cell, beyond noise; exit 1 when anything regressed
    #[command(
        after_help = "Examples:\n  shmbench compare results/base.csv results/new.csv\n  shmbench compare base.csv new.csv --threshold 3% --cpu-threshold 2% --out compare.md\n  shmbench compare before.csv after.csv --match name    # a knob changed on purpose\n\nVerdicts: outcome-changed (worse: fewer runs pass, or the crashes come earlier, beyond chance at\np < 0.05 by Fisher's exact test of the shares or a rank test of the crash steps; one run a side\nis not judged: a flip needs 4 runs a side), regressed / improved (the\n95% bootstrap interval of the change of img/s, or of CPU time per image, lies wholly beyond its\nthreshold), undecided (the sides differ, or may, and the repeats are too few to judge it: one\npassing run a side gives no interval, 3 passes against 3 crashes cannot reach p < 0.05; never\ncalled unchanged), unchanged, new, missing.\nExit status: 1 when any cell regressed or its outcome got worse; else 3 when any cell is\nundecided (0 with --allow-undecided); else 0; 2 on bad input (a measure that is NaN, infinite\nor negative included)."
    )]
    Compare(compare::Args),
    /// Merge results files from several machines or runs into one (same schema)
    #[command(
        after_help = "Example:\n  shmbench merge hostA/*.csv hostB/*.csv --out results/all.csv"
    )]
    Merge(merge::Args),
    /// Results in a format trackers read: Bencher's metric format (JSON)
    #[command(
        after_help = "Examples:\n  shmbench export results/seed-matrix-*.csv > bmf.json\n  bencher run --adapter json --file bmf.json    # push to a Bencher project\n\nOne benchmark per cell (scenario/cell), measures: throughput (img/s), cpu-ms-per-image,\npeak-shm-bytes, and crash-step for a cell that crashed; medians with 95% intervals as lower/upper."
    )]
    Export(export::Args),
    /// Trends of the same cells across runs ordered by an environment field, with change points
    #[command(
        after_help = "Examples:\n  shmbench history results/*.csv --by kernel\n  shmbench history results/*.csv --by time --threshold 10%\n  shmbench history results/*.csv --metric cpu-per-image --match name --plot reports/history"
    )]
    History(history::Args),
    /// Make a report (Markdown, self-contained HTML, JSON, PNG/SVG plots) from results files
    #[command(
        after_help = "Examples:\n  shmbench report results/seed-matrix-20261130T031415Z.csv\n  shmbench report hostA.csv hostB.csv --out reports/a-vs-b --format markdown,html"
    )]
    Report(report::Args),
    /// Remove /dev/shm segments left by shmbench runs that died (SIGKILL)
    Sweep,
    /// Audit a live /dev/shm (or any tmpfs): every entry, who holds it (fd or mapping, unlinked
    /// ones too) and in which container, pod or job, and which files are stale (unheld, their
    /// named owner gone); remove those on request
    Shm(shm::Args),
    /// Measure the emulation against the real DataLoader: every cell with both loaders
    #[command(
        after_help = "Examples:\n  shmbench fidelity --python ~/venvs/torch/bin/python\n  shmbench fidelity --with ~/venvs/torch29/bin/python --with ~/venvs/torch/bin/python --repeat 3\n  shmbench fidelity --cells seed-fd-64m,seed-fd-2g --steps 20\n\nVerdict per cell: agrees (same outcome; crash steps within one step) or differs.\nReal torch's later runs are held to the same test against its earlier ones (`real torch against itself`): how often the race alone makes a cell differ. The distance between the median crash steps is the steadier measure.\nExit status: 1 when any cell differs, 0 otherwise, 2 on bad input (e.g. a Python without torch)."
    )]
    Fidelity(fidelity::Args),
    /// Show, rebuild or remove the container image the Docker runtime builds for itself
    #[command(
        after_help = "Examples:\n  shmbench image             # this binary's image tag and whether the engine has it\n  shmbench image --rebuild   # build it again (e.g. after the engine lost it)\n  shmbench image --remove    # remove every shmbench image\n  shmbench image export --out shmbench.tar   # for docker load, a registry, a cluster"
    )]
    Image(image::Args),
    /// Run any command under a chosen /dev/shm and explain its use: peak, who held it, trend,
    /// leftovers, the size to give it
    #[command(
        after_help = "Examples:\n  shmbench watch --shm-size 64m -- python train.py        # Docker's default size, privately\n  shmbench watch -- python train.py                        # this machine's /dev/shm\n  shmbench watch --shm-size 2g --memory 4g --step-regex 'step (\\d+)' -- python train.py\n  shmbench watch --image my-train:latest --shm-size 1g -- python /app/train.py\n  shmbench watch --shm-size 256m --sweep --report reports/job -- ./job.sh\n\nThe command's output and exit status are its own; the explanation goes to stderr at the end.\nEnds: pass, sigbus (the command or a process of it, or torch's \"killed by signal: Bus error\"),\nenospc, emfile, oom (the memory cgroup's OOM killer), timeout, error (another non-zero exit)."
    )]
    Watch(watch::Args),
    /// Find the /dev/shm mistakes in deployment files (Kubernetes, Kubeflow, KubeRay, JobSet,
    /// Compose, docker run lines, Slurm scripts) before they run
    #[command(
        after_help = "Examples:\n  shmbench check k8s/                                  # every YAML, script and compose file under it\n  shmbench check train.yaml --loaders train:8x2x128 --ranks 8\n  helm template charts/train | shmbench check -\n  shmbench check . --format sarif > shm.sarif           # for GitHub code scanning\n  shmbench check . --format github                      # annotations in a workflow\n  shmbench check deploy/ --ignore host-ipc --fail-on error\n\nRules: SHM001 no-dev-shm, SHM002 memory-emptydir-without-size-limit, SHM003\nsize-limit-over-memory-limit, SHM004 dev-shm-below-need, SHM005 host-ipc, SHM006 dev-shm-on-disk,\nSHM010 compose-without-shm-size, SHM020 docker-run-without-shm-size, SHM030\nslurm-mem-below-dev-shm (docs/CHECK.md). Silence one with the annotation or compose label\n`shmbench.io/ignore: SHM001`, a `# shmbench-ignore: SHM020` comment, or --ignore.\nExit status: 1 when a finding at or above --fail-on exists, 2 when an input could not be\nchecked (the rest still is), 0 otherwise."
    )]
    Check(check::Args),
    /// Kubernetes: the scenario's cells as an Indexed Job per pod shape, and its pods' records back as results
    K8s(k8s::Args),
    /// Slurm: the scenario's cells as a job array, and its tasks' records and ends back as results
    Slurm(slurm::Args),
    #[command(hide = true)]
    Worker(internal::WorkerArgs),
    #[command(hide = true)]
    Job(internal::JobArgs),
}

/// This machine, as planning sees it (memory; whether a Docker engine answers, asked lazily).
fn platform() -> Platform {
    Platform::new(mem_total(), engine::reachable)
}

/// Runs the parsed command; its exit status.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let code = dispatch(cli);
    // Whatever this run made is gone by now: its owner record proves nothing any more.
    crate::sys::run_owner::release_run();
    code
}

fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Matrix(args) => matrix::run(args),
        Command::Run(args) => run::run(args),
        Command::Cell(args) => internal::cell(args),
        Command::Doctor(args) => doctor::run(args),
        Command::MinShm(args) => min_shm::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Export(args) => export::run(args),
        Command::History(args) => history::run(args),
        Command::Report(args) => report::run(args),
        Command::Fidelity(args) => fidelity::run(args),
        Command::Sweep => sweep::run(),
        Command::Shm(args) => shm::run(args),
        Command::Image(args) => image::run(args),
        Command::Watch(args) => watch::run(args),
        Command::Check(args) => check::run(args),
        Command::K8s(args) => k8s::run(args),
        Command::Slurm(args) => slurm::run(args),
        Command::Worker(args) => internal::worker(args),
        Command::Job(args) => internal::job(args),
    }
}
