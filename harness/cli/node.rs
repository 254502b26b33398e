//! `shmbench node`: this node's /dev/shm against a policy, one verdict for the fleet's health
//! machinery (exit 0 ok, 1 a problem, 2 unknown; the first line its reason), and the metrics
//! node_exporter's textfile collector serves (`--textfile`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use super::node_emit;
use crate::model::job::LoaderList;
use crate::model::knobs::Knobs;
use crate::model::size::ByteSize;
use crate::plan::consumers::Consumer;
use crate::plan::{advice, job, resolve};
use crate::results::atomic::write_bytes;
use ::fleet::node::drain::{self, DrainAction};
use ::fleet::node::{facts as node_facts, prom as node_prom, text as node};
use ::fleet::node::{judge, NodePolicy, NodeStatus};

/// The file `--textfile DIR` writes (node_exporter's textfile collector reads `*.prom`).
const TEXTFILE_NAME: &str = "shmbench-node.prom";

const AFTER_HELP: &str = "\
Examples:
  shmbench node                                    # /dev/shm here: a tmpfs, not over 90% full,
                                                   # no dead leftovers
  shmbench node --need 8g                          # and at least 8 GiB
  shmbench node --ranks 8 --loaders train:8x2x128  # the need of a job, by the doctor's model
  shmbench node --textfile /var/lib/node_exporter/textfile_collector
  shmbench node --format json
  shmbench node --slurm-health --need 8g           # slurm.conf: HealthCheckProgram=<a script
                                                   # running this>, HealthCheckInterval=300

Exit status (Node Problem Detector's plugin protocol): 0 ok, 1 a problem, 2 unknown (the node
could not be seen well enough: the first line says what). The first line is the reason, at
most 80 bytes, starting 'shmbench:'. A leftover is dead only when its owner is proven
gone and no live process holds it (the proof `shmbench shm` shows); a file of unknown owner is
counted, never called dead. Without --slurm-health it changes nothing:
`shmbench shm --sweep-stale --older-than 1m` removes the dead leftovers. A usage error exits 2
too, with nothing on stdout and its message on stderr. Run it as root in the host's pid namespace: elsewhere leftovers cannot be proven.
Alert rules for the metrics: integrations/prometheus/. See docs/FLEET.md.";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The node's shared-memory filesystem
    #[arg(default_value = "/dev/shm")]
    path: PathBuf,
    /// The size the node's jobs need (e.g. 8g); or give the job (--ranks, --loaders, --with,
    /// --scenario) and the doctor's model says it
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["ranks", "loaders", "with", "scenario"])]
    need: Option<ByteSize>,
    /// Processes per node of the job, each with its own loaders (default 1)
    #[arg(long)]
    ranks: Option<u32>,
    /// The loaders each rank runs, NAME:WORKERSxPREFETCHxBATCH, comma-separated (as `doctor`)
    #[arg(long)]
    loaders: Option<LoaderList>,
    /// What else fills the node's /dev/shm (as `doctor`: nccl:RANKS, vllm:TP, ray:SIZE)
    #[arg(long, value_delimiter = ',', value_name = "CONSUMER")]
    with: Vec<Consumer>,
    /// Take the job's loader and [[consumers]] from a scenario (file or built-in name)
    #[arg(long, value_name = "SCENARIO")]
    scenario: Option<PathBuf>,
    /// The scenario's cell whose loader the job runs (default: the scenario's defaults)
    #[arg(long, requires = "scenario")]
    cell: Option<String>,
    /// A problem when more than this percent of the size is in use
    #[arg(long, value_name = "PERCENT", default_value_t = 90.0)]
    max_used: f64,
    /// Bytes of dead leftovers tolerated (0: none, not even an empty file)
    #[arg(long, value_name = "SIZE", default_value = "0")]
    max_dead: ByteSize,
    /// Dead leftovers younger than this are not counted yet (a job's teardown in progress)
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "1m")]
    dead_older_than: Duration,
    /// Also write the metrics to DIR/shmbench-node.prom, atomically, for node_exporter's
    /// textfile collector
    #[arg(long, value_name = "DIR")]
    textfile: Option<PathBuf>,
    /// text: the first line, then the details; line: the first line only (what Node Problem
    /// Detector shows: it keeps the first 80 bytes of a plugin's whole output); json
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Instead of checking, print a file that runs this check, with these flags, for other
    /// health machinery: `nhc` (a check function for LBNL NHC's scripts directory), `npd` (a
    /// Node Problem Detector custom plugin monitor config), `daemonset` (Node Problem Detector
    /// with that config on every node: Kubernetes YAML; needs --image)
    #[arg(long, value_enum, value_name = "FOR")]
    emit: Option<node_emit::Emit>,
    /// PATH is a read-only view of the node's /dev/shm (a bind mount, as `--emit daemonset`'s
    /// pod has it): judge the filesystem's own read-only flag, not this mount's
    #[arg(long)]
    read_only_view: bool,
    /// With --emit daemonset: shmbench's image in your registry (`shmbench image export`)
    #[arg(long, value_name = "IMAGE", requires = "emit")]
    image: Option<String>,
    /// With --emit daemonset: Node Problem Detector's image
    #[arg(long, value_name = "IMAGE", default_value = node_emit::NPD_IMAGE)]
    npd_image: String,
    /// With --emit daemonset: the namespace of its objects
    #[arg(long, default_value = "kube-system")]
    namespace: String,
    /// Run as Slurm's HealthCheckProgram: drain this node when the verdict is a problem (its
    /// reason the first line, `shmbench: ...`), undrain it when healthy only if shmbench drained
    /// it; an admin's drain is never undone. Exits 0 once Slurm has been told
    #[arg(long, conflicts_with = "emit")]
    slurm_health: bool,
    /// The Slurm node to drain or undrain (default: $SLURMD_NODENAME, which slurmd sets for its
    /// health check, else this host's short name)
    #[arg(long, value_name = "NAME", requires = "slurm_health")]
    slurm_node: Option<String>,
}

/// What `--format` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Line,
    Json,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    if !(0.0..=100.0).contains(&args.max_used) {
        bail!("--max-used {}: give a percent, 0 to 100", args.max_used);
    }
    if let Some(dir) = &args.textfile {
        if !dir.is_dir() {
            bail!(
                "--textfile {}: not a directory (give node_exporter's --collector.textfile.directory)",
                dir.display()
            );
        }
    }
    let policy = policy(&args)?;
    if let Some(emit) = args.emit {
        let target = node_emit::Target {
            path: &args.path,
            image: args.image.as_deref(),
            npd_image: &args.npd_image,
            namespace: &args.namespace,
            read_only_view: args.read_only_view,
        };
        print!("{}", node_emit::emitted(emit, &target)?);
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    // Before the work: a textfile directory that cannot take the file would leave the node
    // silently out of monitoring (node_exporter serves nothing, and cron drops the error).
    if let Some(dir) = &args.textfile {
        textfile_dir_usable(dir)?;
    }
    let facts = match node_facts::collect(&args.path, args.read_only_view) {
        Ok(facts) => facts,
        Err(why) => {
            // Nothing to judge: the machinery still gets a verdict, unknown, and its reason.
            let path = args.path.display().to_string();
            if let Some(dir) = &args.textfile {
                write_textfile(dir, &node_prom::render_unreadable(&path, now));
            }
            let why = why.to_string();
            let line = node::unreadable_line(&why);
            match args.format {
                Format::Text | Format::Line => println!("{line}"),
                Format::Json => println!(
                    "{}",
                    serde_json::json!({
                        "status": NodeStatus::Unknown,
                        "first_line": line,
                        "error": why,
                    })
                ),
            }
            if args.slurm_health {
                return Ok(slurm_health(&args, NodeStatus::Unknown, &line));
            }
            return Ok(ExitCode::from(NodeStatus::Unknown.exit_code()));
        }
    };
    let verdict = judge(&facts, &policy);
    if let Some(dir) = &args.textfile {
        write_textfile(dir, &node_prom::render(&facts, &policy, &verdict, now));
    }
    match args.format {
        Format::Text => print!("{}", node::render(&facts, &policy, &verdict)),
        Format::Line => println!("{}", node::first_line(&facts, &policy, &verdict)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "status": verdict.status,
                "first_line": node::first_line(&facts, &policy, &verdict),
                "verdict": verdict,
                "facts": facts,
                "policy": policy,
            }))?
        ),
    }
    if args.slurm_health {
        let line = node::first_line(&facts, &policy, &verdict);
        return Ok(slurm_health(&args, verdict.status, &line));
    }
    Ok(ExitCode::from(verdict.status.exit_code()))
}

/// Tells Slurm what the verdict means for this node (drain, undrain or nothing) and says what
/// it did. Its exit status is whether Slurm could be told: slurmd only logs a health check's
/// status, and the drain is how the verdict reaches the scheduler.
fn slurm_health(args: &Args, status: NodeStatus, first_line: &str) -> ExitCode {
    let done = slurm_node_name(args).and_then(|name| {
        let text = cluster::slurm::commands::show_node(&name)?;
        let node = drain::parse_show_node(&text)
            .with_context(|| format!("scontrol show node {name} printed no node's state"))?;
        if node.name != name {
            bail!(
                "scontrol show node {name} printed node {}: refusing to act on another node",
                node.name
            );
        }
        let action = drain::decide(status, first_line, &node);
        match &action {
            DrainAction::Drain { reason } => {
                cluster::slurm::commands::update_node(&node.name, Some(reason))?
            }
            DrainAction::Undrain => cluster::slurm::commands::update_node(&node.name, None)?,
            DrainAction::Keep(_) => {}
        }
        Ok(drain::action_line(&node, &action))
    });
    match done {
        Ok(line) if args.format == Format::Json => {
            // stdout holds one JSON document; what was done goes beside it.
            eprintln!("{line}");
            ExitCode::SUCCESS
        }
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shmbench node --slurm-health: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--slurm-node`, else the name slurmd gives its health check, else this host's short name
/// (what Slurm's NodeName usually is); one plain node name, never a hostlist.
fn slurm_node_name(args: &Args) -> Result<String> {
    let name = if let Some(name) = &args.slurm_node {
        name.clone()
    } else if let Some(name) = std::env::var_os("SLURMD_NODENAME").filter(|n| !n.is_empty()) {
        name.to_string_lossy().into_owned()
    } else {
        let host = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        host.split('.').next().unwrap_or_default().to_string()
    };
    if !drain::plain_node_name(&name) {
        bail!(
            "{name:?} is not one Slurm node name (letters, digits, '-', '_', '.'; no hostlist): \
             give --slurm-node NAME"
        );
    }
    Ok(name)
}

/// The policy the flags give: the need from `--need`, or from the job by the doctor's model
/// (the size the doctor would recommend, and the mappings each rank holds).
fn policy(args: &Args) -> Result<NodePolicy> {
    let mut policy = NodePolicy {
        need_bytes: args.need.map(|n| n.bytes()),
        need_from: match args.need {
            Some(_) => "--need".into(),
            None => String::new(),
        },
        max_used_share: args.max_used / 100.0,
        max_dead_bytes: args.max_dead.bytes(),
        dead_older_than_s: args.dead_older_than.as_secs_f64(),
        maps_needed: None,
    };
    let job_given = args.ranks.is_some()
        || args.loaders.is_some()
        || args.scenario.is_some()
        || !args.with.is_empty();
    if !job_given {
        return Ok(policy);
    }
    let ranks = args.ranks.unwrap_or(1);
    super::doctor::check_ranks(ranks)?;
    let (knobs, with) = super::doctor::loader_and_consumers(
        args.scenario.as_deref(),
        args.cell.as_deref(),
        Knobs::default(),
        args.with.clone(),
    )?;
    let config = resolve::tool_config("node", knobs, &super::platform())?;
    let specs = args.loaders.clone().map(|l| l.0).unwrap_or_default();
    let job = job::predict(&config, ranks, &specs, &with);
    let (need, basis) = advice::recommend_job(&job, config.knobs.pin_memory);
    policy.need_bytes = Some(need);
    policy.need_from = format!("the doctor's model of the job: {basis}");
    policy.maps_needed = Some(job.rank_maps);
    Ok(policy)
}

/// Writes the metrics into `dir` atomically (a temp file renamed over the last), so the
/// collector never reads half a file. A failure is said on stderr and changes nothing else:
/// the verdict and its exit status still reach the machinery that reads them.
/// Why `dir` cannot take the metrics file, if it cannot: not a directory, or not writable.
fn textfile_dir_usable(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir).with_context(|| {
        format!(
            "--textfile {}: cannot use it as the metrics directory (give node_exporter's --collector.textfile.directory, which must exist)",
            dir.display()
        )
    })?;
    if !meta.is_dir() {
        bail!(
            "--textfile {}: not a directory (give node_exporter's --collector.textfile.directory)",
            dir.display()
        );
    }
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK)
        .with_context(|| format!("--textfile {}: this user cannot write in it", dir.display()))?;
    Ok(())
}

fn write_textfile(dir: &Path, text: &str) {
    let path = dir.join(TEXTFILE_NAME);
    if let Err(e) = write_bytes(&path, text.as_bytes()) {
        eprintln!(
            "shmbench node: cannot write the metrics to {}: {e:#}",
            path.display()
        );
    }
}
