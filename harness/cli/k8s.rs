//! `shmbench k8s`: a scenario as Kubernetes objects, to run its cells on a fleet's nodes.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

use crate::model::knobs::Knobs;
use crate::plan::resolve::Platform;
use crate::plan::scenario::{self, Scenario};
use crate::present::k8s_manifest::{self, Target};
use crate::sys::fingerprint::mem_total;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(clap::Subcommand)]
pub enum Action {
    /// Write an Indexed Job per pod shape that runs the scenario's cells in pods
    #[command(
        after_help = "Examples:\n  shmbench k8s manifest --image registry.example/shmbench:1 > seed.yaml\n  shmbench k8s manifest kubernetes --image IMG --namespace ml --node-selector pool=a100 --repeat 3 --out k8s.yaml\n  shmbench image export --out shmbench.tar   # the image to push for IMG\n\nThe output is JSON documents separated by ---, which kubectl reads as YAML."
    )]
    Manifest(ManifestArgs),
}

#[derive(clap::Args)]
pub struct ManifestArgs {
    /// Scenario file or name
    #[arg(default_value = scenario::SEED_MATRIX_PATH)]
    pub scenario: PathBuf,
    /// Kubernetes namespace of the objects
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Run the pods on nodes with this label (KEY=VALUE; repeat for several)
    #[arg(long = "node-selector", value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// Runs of each cell (completion indexes, interleaved)
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Only these cells (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub cells: Option<Vec<String>>,
    /// Write here instead of stdout
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Loader flags override every cell; --image is the image the pods run (required)
    #[command(flatten)]
    pub knobs: Knobs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let Action::Manifest(mut args) = args.action;
    let image = args.knobs.image.take().ok_or_else(|| {
        anyhow!("--image: name the image the pods run, e.g. your registry's copy of `shmbench image export --out shmbench.tar`")
    })?;
    if args.repeat == 0 {
        bail!("--repeat 0: run each cell at least once");
    }
    let mut selector = Vec::new();
    for pair in &args.node_selector {
        match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => selector.push((k.to_string(), v.to_string())),
            _ => bail!("--node-selector '{pair}': write KEY=VALUE, e.g. pool=a100"),
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
    let text = k8s_manifest::render(&k8s_manifest::objects(&scenario.name, &cells, &target));
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
