//! `shmbench fleet`: every node's cells against the fleet's own norm (or a baseline's), and
//! the nodes that are the odd ones out, with why; exit 1 when any is flagged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use super::compare::parse_threshold;
use crate::results::atomic::write_bytes;
use crate::results::stream;
use ::fleet::judge::actions::Platform;
use ::fleet::judge::judge;
use ::fleet::judge::norm::Baseline;
use ::fleet::judge::rows::{Builder, NodeName};
use ::fleet::judge::verdict::Thresholds;
use ::fleet::judge::{actions as fleet_commands, json_verdict as fleet_json, text as fleet};

/// The fewest nodes a norm may be of: two nodes cannot say which of them is the odd one.
const MIN_NODES_LEAST: usize = 3;

const AFTER_HELP: &str = "\
Examples:
  shmbench fleet results/fleet-*.csv                  # which nodes are the odd ones out
  shmbench slurm collect 4242 --out fleet.csv && shmbench fleet fleet.csv --format markdown
  shmbench fleet fleet.csv --format slurm > drain.sh  # the drain commands, printed, not run
  shmbench fleet fleet.csv --format kubernetes        # kubectl cordon, printed, not run
  shmbench fleet fleet.csv --write-baseline fleet-baseline.json
  shmbench fleet new-node.csv --baseline fleet-baseline.json   # one new node, judged alone

A row's node is its `node` column (rows of `k8s collect` and `slurm collect`), else its `host`.
Per cell, each node's medians of img/s, CPU per image and peak /dev/shm (passing runs) are set
against the median across nodes, in robust spreads (1.4826 x the median absolute deviation of
the node medians, which the bad nodes cannot widen), and its pass share against the other
nodes' runs by Fisher's exact test. A node is flagged only beyond both a statistical threshold
(robust z beyond 3.5, or further as tests grow, or its runs below the others' by the rank test;
every p below 0.05 / tests) and a practical one (--threshold worse, --outcome-threshold fewer
passes). A node with fewer than --min-runs runs of
a cell, or a cell run by fewer than --min-nodes nodes, is not judged there, and says why.
--write-baseline keeps the fleet's norms, less the flagged nodes, for --baseline.
Exit status: 0 no node flagged, 1 a node flagged, 2 bad input or no node judged at all.
See docs/FLEET.md.";

/// What `--format` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    #[value(alias = "md")]
    Markdown,
    /// `scontrol update ... State=DRAIN` for each flagged node (printed, never run)
    Slurm,
    /// `kubectl cordon` for each flagged node (printed, never run)
    Kubernetes,
}

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Results files of the fleet's runs
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// Judge the nodes against this baseline (written by --write-baseline) instead of each
    /// other: one node can be judged alone
    #[arg(long, value_name = "FILE", conflicts_with = "write_baseline")]
    baseline: Option<PathBuf>,
    /// Also write the fleet's norms per cell, less the flagged nodes, to FILE (JSON)
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// text (a table of nodes), json, markdown (for an issue), slurm or kubernetes (the
    /// commands that take the flagged nodes out, printed, never run)
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Which column names a node, for the table and the drain and cordon lines: node (the
    /// rows' node, else their host), host, or short (the node, else the host up to its first
    /// dot: Slurm's usual name)
    #[arg(long, value_name = "COLUMN", default_value = "node", value_parser = super::choice::choice::<NodeName>())]
    node_name: NodeName,
    /// The least difference of a median that counts (img/s lower; CPU per image or peak
    /// /dev/shm higher)
    #[arg(long, default_value = "20%", value_parser = parse_threshold)]
    threshold: f64,
    /// The least difference of pass share that counts (points: 20%)
    #[arg(long, default_value = "20%", value_parser = parse_threshold)]
    outcome_threshold: f64,
    /// The runs of a cell a node needs to be judged on it
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    min_runs: u32,
    /// The nodes a cell needs for the fleet's norm
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(MIN_NODES_LEAST as i64..))]
    min_nodes: u32,
}

/// The most bytes of a baseline file read (a fleet's thousand cells are a few hundred KB).
const BASELINE_MAX_BYTES: u64 = 64 << 20;

fn read_baseline(path: &Path) -> Result<Baseline> {
    use std::io::Read;
    let what = || format!("--baseline {}", path.display());
    // Read through the limit, not the size the file reports: /dev/zero and a FIFO say 0.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(BASELINE_MAX_BYTES + 1).read_to_end(&mut bytes))
        .with_context(what)?;
    if bytes.len() as u64 > BASELINE_MAX_BYTES {
        bail!(
            "{}: over {BASELINE_MAX_BYTES} bytes, more than a baseline holds",
            what()
        );
    }
    let baseline: Baseline = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{}: not a fleet baseline (give a file `shmbench fleet --write-baseline` wrote)",
            what()
        )
    })?;
    baseline.checked().with_context(what)
}

/// `--write-baseline`'s path must be a file this run may replace: not a device, FIFO or
/// directory (the write renames a new file over it: as root, over /dev/null), and not one of
/// its inputs.
fn refuse_as_output(path: &Path, inputs: &[PathBuf], baseline: Option<&Path>) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        bail!(
            "--write-baseline {}: not a regular file; give a new file's path",
            path.display()
        );
    }
    for input in inputs.iter().map(PathBuf::as_path).chain(baseline) {
        if std::fs::metadata(input).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino()) {
            bail!(
                "--write-baseline {}: that is {}, an input of this run; give another path",
                path.display(),
                input.display()
            );
        }
    }
    Ok(())
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // A path that cannot take the baseline is refused before the work, not after it.
    if let Some(path) = &args.write_baseline {
        refuse_as_output(path, &args.results, args.baseline.as_deref())?;
    }
    let baseline = args.baseline.as_deref().map(read_baseline).transpose()?;
    let mut builder = Builder::new();
    stream::each_prepared(&args.results, Builder::keys(args.node_name), |keys, row| {
        builder.add_keyed(keys, row);
        Ok(())
    })?;
    let fleet_rows = builder.finish()?;
    let thresholds = Thresholds {
        relative: args.threshold,
        share: args.outcome_threshold,
        min_runs: args.min_runs as usize,
        min_nodes: args.min_nodes as usize,
        ..Thresholds::default()
    };
    let verdict = judge(&fleet_rows, baseline.as_ref(), thresholds);
    if let Some(path) = &args.write_baseline {
        // A fleet too small to judge has no norm to keep, and a file already at the path (the
        // last good baseline, perhaps) must not be replaced by an empty one.
        if !verdict.judged_any() {
            bail!(
                "--write-baseline {}: no node could be judged, so there is no norm to keep; \
                 nothing written (run without it to see why each node was not judged)",
                path.display()
            );
        }
        let made = Baseline::of(&fleet_rows, &verdict.flagged_nodes(), thresholds.min_runs);
        let json = serde_json::to_vec_pretty(&made)?;
        write_bytes(path, &json).with_context(|| format!("--write-baseline {}", path.display()))?;
        eprintln!(
            "baseline: {} ({} cell(s) from {} node(s), {} flagged node(s) left out)",
            path.display(),
            made.cells.len(),
            made.nodes.len(),
            made.left_out.len()
        );
        // A norm of fewer nodes than a judgement needs judges nobody: say so now, not when
        // the baseline is used.
        let held = made.nodes.len();
        if held < thresholds.min_nodes {
            let lower = match held >= MIN_NODES_LEAST {
                true => format!("unless it is given --min-nodes {held}, or "),
                false => "until it is ".into(),
            };
            eprintln!(
                "warning: the baseline holds {held} node(s), fewer than --min-nodes {}: a \
                 judgement against it judges no node {lower}made from a larger fleet",
                thresholds.min_nodes
            );
        }
    }
    let text = match args.format {
        Format::Text => fleet::render_text(&verdict),
        Format::Json => fleet_json::render(&verdict)?,
        Format::Markdown => fleet::render_markdown(&verdict),
        Format::Slurm => fleet_commands::render(&verdict, Platform::Slurm, args.node_name),
        Format::Kubernetes => {
            fleet_commands::render(&verdict, Platform::Kubernetes, args.node_name)
        }
    };
    println!("{}", text.trim_end());
    if verdict.flagged() {
        return Ok(ExitCode::from(1));
    }
    if !verdict.judged_any() {
        // A gate that reads exit 0 as "the fleet is fine" must not pass on rows too few to
        // judge: the verdict above says why each node was not judged.
        eprintln!(
            "shmbench fleet: no node could be judged (too few runs or nodes, or runs too few to \
             tell a difference that matters: see above); give each node the runs the verdict \
             says (at least --min-runs) and each cell --min-nodes nodes"
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
