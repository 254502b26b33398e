//! `shmbench slurm`: a scenario as a Slurm job array (`script`, `submit`), its tasks' records
//! and Slurm's word on how each ended back as results rows (`collect`), and the hidden `task`
//! each array task runs.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};

use super::logs::files_in;
use super::outcome;
use crate::plan::resolve::Platform;
use crate::plan::scenario::{self, Scenario};
use crate::sys::clock;
use crate::sys::fingerprint::mem_total;
use cluster::slurm::collect as slurm_rows;
use cluster::slurm::ends::settled_task_ends;
use cluster::slurm::output::{self, TaskFile};
use cluster::slurm::script::{self, Target};
use cluster::slurm::{commands, directive, hostlist, task};

/// Where the tasks write their output files unless told.
pub(super) const DEFAULT_DIR: &str = "shmbench-slurm";

/// What `shmbench slurm script --help` shows after the flags.
const SCRIPT_HELP: &str = "\
Examples:
  shmbench slurm script > seed.sbatch
  shmbench slurm script --partition gpu --constraint a100 --repeat 3 --time 30 --out seed.sbatch
  shmbench slurm script scenarios/seed-matrix.toml --batch 8 --steps 20 \\
      --output-dir /shared/shmbench-out

Each task runs its cell as shmbench runs it without Docker: in a private tmpfs of the cell's
size (a mount namespace), or in the node's own /dev/shm for the cells that ask for the host's.
The binary and --output-dir must be on a file system the nodes share.";

/// What `shmbench slurm submit --help` shows after the flags.
const SUBMIT_HELP: &str = "\
Examples:
  shmbench slurm submit --batch 8 --steps 20
  shmbench slurm submit --nodelist node01,node02 --partition gpu   # the matrix on each node
  shmbench slurm submit --wait && shmbench slurm collect 1234
  shmbench slurm submit --nodelist 'gpu[01-08]' --repeat 6 --in-turn --wait
                          # 6 rounds over 8 nodes, one job at a time: the fleet's runs for
                          # `shmbench fleet` where the nodes share what they measure";

/// What `shmbench slurm collect --help` shows after the flags.
const COLLECT_HELP: &str = "\
Examples:
  shmbench slurm collect 1234                     # job 1234's tasks, in ./shmbench-slurm
  shmbench slurm collect 1234 1235 --dir /shared/shmbench-out --out results/fleet.csv
  shmbench slurm collect /shared/shmbench-out/shmbench-1234_*.out \\
      --jobcomp /var/log/slurm/jobcomp.log
  shmbench history results/seed-matrix-slurm-*.csv --by node

A task that printed its record gives its row, with its job, node and Slurm version. A task the
scheduler ended first (OUT_OF_MEMORY, TIMEOUT, CANCELLED, PREEMPTED, NODE_FAIL) gives a row with
that state and Slurm's reason: oom, timeout, evicted (preempted) or error. Slurm is asked
through sacct, else `scontrol show job`, else the jobcomp/filetxt log (--jobcomp, or the one
the cluster's configuration names).";

/// What `shmbench slurm --help` shows: the whole round trip.
const GROUP_HELP: &str = "\
Examples:
  shmbench slurm script > seed.sbatch && sbatch seed.sbatch   # write it, submit it yourself
  shmbench slurm submit --nodelist node01,node02,node03,node04,node05 --wait
                                                  # or have shmbench submit it, once per node
  shmbench slurm collect 1234 1235 1236 1237 1238 --out results/fleet.csv   # the tasks' rows
  shmbench fleet results/fleet.csv                # which node is the odd one out (5 or more)

docs/SLURM.md has the set-up, the health check and what a task's row says.";

#[derive(clap::Args)]
#[command(after_help = GROUP_HELP)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Action,
}

#[derive(clap::Subcommand)]
pub(crate) enum Action {
    /// Write a batch script: a job array with one task per cell and run
    #[command(after_help = SCRIPT_HELP)]
    Script(Box<ScriptArgs>),
    /// Hand the batch script to sbatch (once per node of --nodelist) and print the job ids
    #[command(after_help = SUBMIT_HELP)]
    Submit(Box<ScriptArgs>),
    /// Turn the tasks' output files and Slurm's job states into a results CSV, one row per task
    #[command(after_help = COLLECT_HELP)]
    Collect(CollectArgs),
    /// One array task: run the cell SLURM_ARRAY_TASK_ID picks from the cells on stdin
    #[command(hide = true)]
    Task,
}

#[derive(clap::Args)]
pub(crate) struct ScriptArgs {
    /// Scenario file or name
    #[arg(default_value = scenario::SEED_MATRIX_PATH)]
    pub(crate) scenario: PathBuf,
    /// The partition (#SBATCH --partition)
    #[arg(long)]
    pub(crate) partition: Option<String>,
    /// Run at most N tasks at once, one node each (--array=...%N)
    #[arg(long, value_name = "N", conflicts_with = "nodelist")]
    pub(crate) nodes: Option<u32>,
    /// Run every cell on each of these nodes, a Slurm host list (node01,node02 or
    /// gpu[01-04,7]); one job per node (at once, unless --in-turn or --wait)
    #[arg(long, value_name = "HOSTLIST")]
    pub(crate) nodelist: Option<String>,
    /// Only nodes with these features (#SBATCH --constraint)
    #[arg(long)]
    pub(crate) constraint: Option<String>,
    /// Memory per task as sbatch takes it (default: what the cells need, /dev/shm pages included)
    #[arg(long)]
    pub(crate) mem: Option<String>,
    /// Time limit per task as sbatch takes it (30, 1:00:00, 0:20 is twenty seconds)
    #[arg(long)]
    pub(crate) time: Option<String>,
    /// Runs of each cell (array tasks, interleaved)
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: u32,
    /// Only these cells (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub(crate) cells: Option<Vec<String>>,
    /// Let tasks share a node (default: each takes its node whole, since a neighbour's /dev/shm
    /// and CPU disturb what a cell measures)
    #[arg(long)]
    pub(crate) shared: bool,
    /// Where the tasks write their output files (on a file system the nodes share)
    #[arg(long, default_value = DEFAULT_DIR)]
    pub(crate) output_dir: PathBuf,
    /// The shmbench the tasks run (default: this one; on a file system the nodes share)
    #[arg(long)]
    pub(crate) binary: Option<PathBuf>,
    /// Wait until every task has ended (sbatch --wait); submit only
    #[arg(long)]
    pub(crate) wait: bool,
    /// Run the jobs one after another, never two at once: each node's job after the previous
    /// one ended (sbatch --dependency=afterany), and --repeat as rounds over the nodes, so that
    /// every node's runs meet the same moments; for nodes that share what a measurement feels
    /// (one machine's cores, a rack's power) or a fleet that must not be taken at once. Submit
    /// only
    #[arg(long)]
    pub(crate) in_turn: bool,
    /// Write the script here instead of stdout; script only
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Loader flags override every cell
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

#[derive(clap::Args)]
pub(crate) struct CollectArgs {
    /// Job ids (their tasks' files are read from --dir), or output files and directories
    #[arg(required = true)]
    pub(crate) jobs_or_files: Vec<String>,
    /// Where the tasks wrote their output files
    #[arg(long, default_value = DEFAULT_DIR)]
    pub(crate) dir: PathBuf,
    /// A jobcomp/filetxt log to read the tasks' ends from (default: asked of Slurm)
    #[arg(long, value_name = "FILE")]
    pub(crate) jobcomp: Option<PathBuf>,
    /// Results file to write (default results/<scenario>-slurm-<time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    match args.action {
        Action::Script(args) => script(*args),
        Action::Submit(args) => submit(*args),
        Action::Collect(args) => collect(args),
        Action::Task => task(),
    }
}

/// What `render` made: the script, the output directory made absolute, and the nodes of
/// `--nodelist` expanded.
struct Rendered {
    text: String,
    dir: PathBuf,
    nodes: Vec<String>,
}

/// The script for `args`. Only a submission creates the output directory (`create`): a script
/// printed for a person to submit makes nothing.
fn render(args: &mut ScriptArgs, create: bool) -> Result<Rendered> {
    if args.repeat == 0 {
        bail!("--repeat 0: run each cell at least once");
    }
    if args.nodes == Some(0) {
        bail!("--nodes 0: give the tasks at least one node");
    }
    // Checked before the directory is made: a name with a line break is refused, not created.
    directive::output_dir(&args.output_dir.display().to_string())?;
    let nodes = match &args.nodelist {
        Some(list) => hostlist::expand(list)?,
        None => Vec::new(),
    };
    let scenario = Scenario::load(&args.scenario)?;
    // As cells run without Docker: Docker's setups in a namespace tmpfs of their size.
    let platform = Platform::fixed(mem_total(), false);
    let cells = scenario.plan(&args.knobs, args.cells.as_deref(), &platform)?;
    let dir = if create {
        std::fs::create_dir_all(&args.output_dir)
            .with_context(|| format!("cannot create {}", args.output_dir.display()))?;
        std::fs::canonicalize(&args.output_dir)?
    } else {
        std::path::absolute(&args.output_dir)?
    };
    let binary = match &args.binary {
        Some(b) => std::path::absolute(b)?,
        None => std::env::current_exe().context("cannot name this shmbench's binary")?,
    };
    let target = Target {
        binary: &binary,
        output_dir: &dir,
        partition: args.partition.as_deref(),
        constraint: args.constraint.as_deref(),
        mem: args.mem.as_deref(),
        time: args.time.as_deref(),
        repeat: args.repeat,
        max_parallel: args.nodes,
        shared: args.shared,
    };
    let text = script::render(&scenario.name, &cells, &target)?;
    Ok(Rendered { text, dir, nodes })
}

fn script(mut args: ScriptArgs) -> Result<ExitCode> {
    if let Some(flag) = [(args.wait, "--wait"), (args.in_turn, "--in-turn")]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    {
        bail!("{flag} is for `shmbench slurm submit`: `slurm script` only writes the script (sbatch it yourself, or use submit)");
    }
    let Rendered {
        mut text,
        dir,
        nodes,
    } = render(&mut args, false)?;
    if !dir.is_dir() {
        text.push_str(&format!(
            "# Make {} on a file system every node shares before sbatch: Slurm does not.\n",
            directive::shell_word(&dir.display().to_string())
        ));
    }
    if !nodes.is_empty() {
        text.push_str(&format!(
            "# Once per node: for n in {}; do sbatch --nodelist=$n THIS_FILE; done\n",
            nodes.join(" ")
        ));
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn submit(mut args: ScriptArgs) -> Result<ExitCode> {
    if let Some(out) = &args.out {
        bail!(
            "--out {}: is for `shmbench slurm script`; submit hands the script to sbatch (write it with `slurm script --out`)",
            out.display()
        );
    }
    if args.in_turn {
        if args.repeat == 0 {
            bail!("--repeat 0: run each cell at least once");
        }
        if let Some(n) = args.nodes {
            bail!(
                "--nodes {n} with --in-turn: in turn is one task at a time; give one or the other"
            );
        }
        if args.shared {
            bail!("--shared with --in-turn: in turn each task takes its node whole; give one or the other");
        }
    }
    // In turn, a round is one run of each cell on each node; one node at a time without a list.
    let rounds = match args.in_turn {
        true => std::mem::replace(&mut args.repeat, 1),
        false => 1,
    };
    if args.in_turn && args.nodelist.is_none() {
        args.nodes = Some(1);
    }
    let Rendered { text, dir, nodes } = render(&mut args, true)?;
    let nodes: Vec<Option<String>> = match nodes.is_empty() {
        true => vec![None],
        false => nodes.into_iter().map(Some).collect(),
    };
    let jobs = rounds as usize * nodes.len();
    let mut ids: Vec<String> = Vec::new();
    for (i, node) in (0..rounds).flat_map(|_| &nodes).enumerate() {
        let mut flags = Vec::new();
        if let Some(node) = node {
            flags.push(format!("--nodelist={node}"));
        }
        if let (true, Some(previous)) = (args.in_turn, ids.last()) {
            flags.push(format!("--dependency=afterany:{previous}"));
        }
        // In turn, the last job ends after every other: it alone is waited for.
        if args.wait && (!args.in_turn || i + 1 == jobs) {
            flags.push("--wait".into());
        }
        let id = match commands::sbatch(&text, &flags) {
            Ok(id) => id,
            // The jobs already queued are said, with how to collect or cancel them.
            Err(e) if !ids.is_empty() => {
                println!("{}", ids.join(" "));
                return Err(e.context(format!(
                    "job {} of {jobs} not submitted; the {} queued before it ({}) run on: \
                     collect them with `shmbench slurm collect {} --dir {}`, or cancel them with \
                     `scancel {}`",
                    i + 1,
                    ids.len(),
                    ids.join(" "),
                    ids.join(" "),
                    dir.display(),
                    ids.join(" ")
                )));
            }
            Err(e) => return Err(e),
        };
        let on = node
            .as_ref()
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        let after = match (args.in_turn, ids.last()) {
            (true, Some(previous)) => format!(", after {previous}"),
            _ => String::new(),
        };
        eprintln!(
            "submitted job {id}{on}{after} ({} of {jobs}); output files in {}",
            i + 1,
            dir.display()
        );
        ids.push(id);
    }
    println!("{}", ids.join(" "));
    eprintln!(
        "collect: shmbench slurm collect {} --dir {}",
        ids.join(" "),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs the task's cell and prints its start line and record (both on stdout, the task's file).
fn task() -> Result<ExitCode> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("cannot read the cells on stdin")?;
    let start = task::start(&text)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", start.line())?;
    stdout.flush()?;
    let (record, ran) = task::run(&start);
    writeln!(stdout, "{}", serde_json::to_string(&record)?)?;
    Ok(ExitCode::from(if ran { 0 } else { 1 }))
}

/// The output files the arguments name: a job's tasks' files in `dir` (a job id), or files and
/// directories as given; and the jobs named.
fn output_files(args: &CollectArgs) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut files = Vec::new();
    let mut jobs = Vec::new();
    for arg in &args.jobs_or_files {
        if output::is_number(arg) {
            let found = files_in(&args.dir, |n| output::claims_job(n, arg))?;
            if found.is_empty() {
                eprintln!(
                    "shmbench: job {arg}: no output file in {} (yet); its ends are still asked",
                    args.dir.display()
                );
            }
            files.extend(found);
            jobs.push(arg.clone());
        } else {
            let path = PathBuf::from(arg);
            if path.is_dir() {
                files.extend(files_in(&path, output::may_be_output)?);
            } else {
                files.push(path);
            }
        }
    }
    Ok((files, jobs))
}

fn collect(args: CollectArgs) -> Result<ExitCode> {
    let (paths, mut jobs) = output_files(&args)?;
    let mut files = Vec::new();
    for path in paths {
        let file = TaskFile::read(&path)?;
        // The array a file's task belongs to is asked of Slurm too.
        if let Some(job) = file.job().filter(|j| !jobs.contains(j)) {
            jobs.push(job);
        }
        files.push(file);
    }
    // A task Slurm is still ending has its final state in moments: wait for it.
    let ends = settled_task_ends(&jobs, args.jobcomp.as_deref());
    let run_id = format!("{}-slurm", clock::compact_now());
    let collected = slurm_rows::collect(files, &ends, &run_id, &clock::rfc3339_now());
    for note in &collected.notes {
        eprintln!("{note}");
    }
    if collected.rows.is_empty() {
        bail!("no task has a result yet: nothing to collect");
    }
    outcome::write_collected(collected.rows, args.out.clone(), "slurm")
}
