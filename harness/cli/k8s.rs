//! `shmbench k8s`: a scenario as Kubernetes objects, to run its cells on a fleet's nodes
//! (`manifest`), and the fleet's pods back as results rows (`collect`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};

use super::logs::files_in;
use super::outcome;

use crate::model::pod::{NodeInfo, PodStatus};
use crate::plan::resolve::Platform;
use crate::plan::scenario::{self, Scenario};
use crate::sys::clock;
use crate::sys::fingerprint::mem_total;
use cluster::k8s::collect::{self, Fleet};
use cluster::k8s::jobs;
use cluster::k8s::manifest::{self, Target};

/// What `shmbench k8s manifest --help` shows after the flags.
const MANIFEST_HELP: &str = "\
Examples:
  shmbench k8s manifest --image registry.example/shmbench:1 > seed.yaml
  shmbench k8s manifest kubernetes --image IMG --namespace ml --node-selector pool=a100 \\
      --repeat 3 --out k8s.yaml
  shmbench image export --out shmbench.tar   # the image to push for IMG

The output is block-style YAML; the cells each pod can run are a YAML list in the ConfigMap.";

/// What `shmbench k8s collect --help` shows after the flags.
const COLLECT_HELP: &str = "\
Examples:
  kubectl logs -n ml -l shmbench.org/scenario=seed-matrix --prefix --tail=-1 \\
      --max-log-requests 50 > logs.txt
  kubectl get pods -n ml -l shmbench.org/scenario=seed-matrix -o json > pods.json
  kubectl get nodes -o json > nodes.json
  shmbench k8s collect logs.txt --pods pods.json --nodes nodes.json --manifest k8s.yaml
  shmbench history results/seed-matrix-k8s-*.csv --by node

A pod that printed a record gives its row, with its node and the pod's own fingerprint. A pod
ended from outside prints nothing: its row's status comes from its status (OOMKilled -> oom,
Evicted -> evicted, another failure -> error) and its cell from --manifest. Pods still running
are named and left out.";

/// What `shmbench k8s --help` shows: the whole round trip.
const GROUP_HELP: &str = "\
Examples:
  shmbench k8s manifest --image registry.example/shmbench:1 --out k8s.yaml
  kubectl apply -f k8s.yaml
  kubectl logs -l shmbench.org/scenario=seed-matrix --prefix --tail=-1 > logs.txt
  kubectl get pods -l shmbench.org/scenario=seed-matrix -o json > pods.json
  shmbench k8s collect logs.txt --pods pods.json --manifest k8s.yaml --out results/k8s.csv

docs/KUBERNETES.md has the image, the pod shapes and what a pod's row says.";

#[derive(clap::Args)]
#[command(after_help = GROUP_HELP)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Action,
}

#[derive(clap::Subcommand)]
pub(crate) enum Action {
    /// Write an Indexed Job per pod shape that runs the scenario's cells in pods
    #[command(after_help = MANIFEST_HELP)]
    Manifest(Box<ManifestArgs>),
    /// Turn a fleet run's pod logs and pod statuses into a results CSV, one row per pod
    #[command(after_help = COLLECT_HELP)]
    Collect(CollectArgs),
}

#[derive(clap::Args)]
pub(crate) struct CollectArgs {
    /// Pod logs (`kubectl logs`, with or without --prefix): files, directories of them, or - for
    /// stdin
    #[arg(required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// `kubectl get pods -o json` of the Jobs' pods (repeat for several)
    #[arg(long, value_name = "FILE")]
    pub(crate) pods: Vec<PathBuf>,
    /// `kubectl get nodes -o json`: each node's kubelet and container runtime versions
    #[arg(long, value_name = "FILE")]
    pub(crate) nodes: Option<PathBuf>,
    /// The manifest the Jobs were made from (`k8s manifest --out`): the cell of a pod that left no
    /// record
    #[arg(long, value_name = "FILE")]
    pub(crate) manifest: Option<PathBuf>,
    /// Results file to write (default results/<scenario>-k8s-<time>.csv)
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct ManifestArgs {
    /// Scenario file or name
    #[arg(default_value = scenario::SEED_MATRIX_PATH)]
    pub(crate) scenario: PathBuf,
    /// Kubernetes namespace of the objects
    #[arg(long, default_value = "default")]
    pub(crate) namespace: String,
    /// Run the pods on nodes with this label (KEY=VALUE; repeat for several)
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub(crate) node_selector: Vec<String>,
    /// Runs of each cell (completion indexes, interleaved)
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: u32,
    /// Only these cells (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub(crate) cells: Option<Vec<String>>,
    /// Write here instead of stdout
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Loader flags override every cell; --image is the image the pods run (required)
    #[command(flatten)]
    pub(crate) knobs: super::knob_flags::KnobFlags,
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    match args.action {
        Action::Manifest(args) => manifest(*args),
        Action::Collect(args) => collect(args),
    }
}

fn manifest(mut args: ManifestArgs) -> Result<ExitCode> {
    let image = args.knobs.image.take().filter(|i| !i.trim().is_empty()).ok_or_else(|| {
        anyhow!("--image: name the image the pods run, e.g. your registry's copy of `shmbench image export --out shmbench.tar`")
    })?;
    if args.repeat == 0 {
        bail!("--repeat 0: run each cell at least once");
    }
    let mut selector = Vec::new();
    for pair in &args.node_selector {
        match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                if let Some(why) = manifest::node_selector_problem(k, v) {
                    bail!("--node-selector {pair:?}: {why}: Kubernetes refuses it as a node label");
                }
                selector.push((k.to_string(), v.to_string()))
            }
            _ => bail!("--node-selector {pair:?}: write KEY=VALUE, e.g. pool=a100"),
        }
    }
    let scenario = Scenario::load(&args.scenario)?;
    // Cells as a container would run them (the pod is one): Docker's setups keep their sizes.
    let platform = Platform::fixed(mem_total(), true);
    let cells = scenario.plan(&args.knobs, args.cells.as_deref(), &platform)?;
    let target = Target {
        image: &image,
        namespace: &args.namespace,
        node_selector: &selector,
        repeat: args.repeat,
    };
    let text = manifest::render(&manifest::objects(&scenario.name, &cells, &target));
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {} ({} cells)", path.display(), cells.len());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Every log to read for `paths`: files as given, a directory's files in name order, `-` stdin
/// (None).
fn logs(paths: &[PathBuf]) -> Result<Vec<Option<PathBuf>>> {
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            out.push(None);
        } else if path.is_dir() {
            out.extend(files_in(path, |_| true)?.into_iter().map(Some));
        } else {
            out.push(Some(path.clone()));
        }
    }
    Ok(out)
}

/// The records in one log (None: stdin), read a line at a time, each line bounded.
fn records_of(log: Option<&Path>) -> Result<(String, Vec<collect::Logged>, Vec<String>)> {
    let (name, read) = match log {
        None => (
            "stdin".to_string(),
            collect::records_from(std::io::stdin().lock()),
        ),
        Some(path) => (
            path.display().to_string(),
            std::fs::File::open(path)
                .map(std::io::BufReader::new)
                .and_then(collect::records_from),
        ),
    };
    let (found, bad) = read.with_context(|| format!("cannot read {name}"))?;
    Ok((name, found, bad))
}

/// A JSON document of the API (`kubectl get ... -o json`).
fn api_document(path: &Path, what: &str) -> Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not JSON; write it with `kubectl get {what} -o json`",
            path.display()
        )
    })
}

fn collect(args: CollectArgs) -> Result<ExitCode> {
    let mut logged = Vec::new();
    for log in logs(&args.logs)? {
        let (name, found, bad) = records_of(log.as_deref())?;
        for problem in bad {
            eprintln!("shmbench: {name}, {problem}: not a record of this shmbench; skipped");
        }
        logged.extend(found);
    }
    let mut fleet = Fleet::default();
    for path in &args.pods {
        fleet
            .pods
            .extend(PodStatus::all_in(&api_document(path, "pods")?));
    }
    if let Some(path) = &args.nodes {
        fleet.nodes = NodeInfo::all_in(&api_document(path, "nodes")?);
    }
    if let Some(path) = &args.manifest {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        fleet.jobs = Some(
            jobs::JobCells::from_manifest(&text)
                .with_context(|| format!("--manifest {}", path.display()))?,
        );
    }
    if logged.is_empty() && fleet.pods.is_empty() {
        bail!("no cell record in the logs given, and no --pods: collect the logs with `kubectl logs -l shmbench.org/scenario=NAME --prefix --tail=-1`");
    }
    // The run began when its first pod did.
    let started_at = fleet
        .pods
        .iter()
        .filter_map(|p| p.start_time.clone())
        .min()
        .unwrap_or_else(clock::rfc3339_now);
    let run_id = format!("{}-k8s", clock::compact_now());
    let collected = collect::collect(logged, &fleet, &run_id, &started_at)?;
    for note in &collected.notes {
        eprintln!("{note}");
    }
    if collected.rows.is_empty() {
        bail!("no pod has ended yet: nothing to collect");
    }
    outcome::write_collected(collected.rows, args.out.clone(), "k8s")
}
