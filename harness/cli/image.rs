//! `shmbench image`: the container image the Docker runtime builds for itself.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::model::knobs::{EngineKind, OciRuntime};
use crate::runtime::docker::engine::{self, Engine};
use crate::runtime::docker::{image, podman};

/// What `shmbench image --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench image             # this binary's image tag and whether the engine has it
  shmbench image --rebuild   # build it again (e.g. after the engine lost it)
  shmbench image --remove    # remove every shmbench image
  shmbench image export --out shmbench.tar   # for docker load, a registry, a cluster
  shmbench image --engine podman             # the same in Podman's storage";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) action: Option<Action>,
    /// Build the image for this binary even if the engine has it
    #[arg(long, conflicts_with = "remove")]
    pub(crate) rebuild: bool,
    /// Remove every shmbench image from the engine
    #[arg(long)]
    pub(crate) remove: bool,
    /// The container engine whose images these are: docker (DOCKER_HOST, else its socket) or
    /// podman (CONTAINER_HOST, the user's or root's socket, else a service started for this
    /// command and stopped after)
    #[arg(long, value_parser = super::choice::choice::<EngineKind>(), default_value = "docker")]
    pub(crate) engine: EngineKind,
}

#[derive(clap::Subcommand)]
pub(crate) enum Action {
    /// Write the image for this binary as a tar (`docker load -i FILE`, then tag and push it to
    /// your registry for a cluster to pull)
    Export {
        /// Where to write the tar
        #[arg(long, value_name = "FILE.tar")]
        out: PathBuf,
    },
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // A Podman service started for this command lives as long as `_service`.
    let (engine, _service) = match args.engine {
        EngineKind::Docker => (Engine::connect()?, None),
        EngineKind::Podman => podman::connect(&OciRuntime::default())?,
    };
    if let Some(Action::Export { out }) = &args.action {
        let (tag, built) = image::ensure(&engine)?;
        if let Some(took) = built {
            eprintln!("built {tag} in {:.2} s", took.as_secs_f64());
        }
        let bytes = image::export(&engine, &tag, out)?;
        println!(
            "wrote {} ({:.1} MiB): image {tag}\nload it with: {} load -i {}",
            out.display(),
            bytes as f64 / (1 << 20) as f64,
            engine.kind,
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.remove {
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
    if args.rebuild || !image::exists(&engine, &context.tag) {
        let took = image::build(&engine, &context)?;
        println!("built {} in {:.2} s", context.tag, took.as_secs_f64());
    }
    println!("image for this binary: {} (present)", context.tag);
    println!(
        "contents: {}",
        context.paths().collect::<Vec<_>>().join(", ")
    );
    println!(
        "engine: {} {} (API {}){}",
        engine.kind,
        engine.info.version,
        engine.info.api_version,
        match engine.kind {
            EngineKind::Docker => format!(" at {}", engine::address()),
            EngineKind::Podman => String::new(),
        }
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
