//! `shmbench node --emit`: a file that runs this node check, with this invocation's policy,
//! for other health machinery (NHC's check file, Node Problem Detector's plugin config, NPD
//! with it on every node as a DaemonSet).

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::results::row_build::shell_words;
use crate::runtime::docker::image::BINARY_IN_IMAGE;
use ::fleet::node::{daemonset as node_daemonset, nhc as node_nhc, npd as node_npd};
use cluster::k8s::manifest;

/// Node Problem Detector's image the DaemonSet runs by default.
/// What `--emit` makes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Emit {
    Nhc,
    Npd,
    Daemonset,
}

/// What the emitted file is for: the flags of `node` it depends on.
pub(super) struct Target<'a> {
    pub(super) path: &'a Path,
    pub(super) image: Option<&'a str>,
    pub(super) npd_image: &'a str,
    pub(super) namespace: &'a str,
    pub(super) read_only_view: bool,
}

pub(super) const NPD_IMAGE: &str =
    "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.20";

/// Flags that are this invocation's, not the check's policy: left out of what `--emit` runs.
const NOT_POLICY: [&str; 8] = [
    "--emit",
    "--format",
    "--textfile",
    "--image",
    "--npd-image",
    "--namespace",
    "--slurm-health",
    "--slurm-node",
];
/// Of those, the flags that take no value.
const NO_VALUE: [&str; 1] = ["--slurm-health"];

/// The file `--emit` makes, running this check with this invocation's policy.
pub(super) fn emitted(emit: Emit, args: &Target) -> Result<String> {
    let binary = || {
        std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("cannot tell where this shmbench binary is, for the emitted file to run")
    };
    let policy = policy_args(args);
    // `--format line` first: after a `--` of the user's it would be a path.
    let line_args = |extra: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = ["node", "--format", "line"].map(String::from).to_vec();
        all.extend(extra.iter().map(|a| a.to_string()));
        all.extend(policy.iter().cloned());
        all
    };
    Ok(match emit {
        Emit::Nhc => {
            let mut command = vec![binary()?.into_os_string(), "node".into()];
            command.extend(policy.iter().map(Into::into));
            node_nhc::check_file(&shell_words(command))
        }
        Emit::Npd => {
            let path = binary()?.display().to_string();
            serde_json::to_string_pretty(&node_npd::plugin_config(&path, &line_args(&[])))? + "\n"
        }
        Emit::Daemonset => {
            let image = args.image.context(
                "--emit daemonset: give --image, shmbench's image in your registry (push the one \
                 `shmbench image export --out shmbench.tar` writes)",
            )?;
            if args.path != Path::new("/dev/shm") {
                bail!(
                    "--emit daemonset checks the node's /dev/shm (the pod mounts it there): give \
                     no path, not {}",
                    args.path.display()
                );
            }
            // Kubernetes refuses a manifest whose namespace is not a DNS label, and an image
            // reference with a control character or a space is no reference.
            let label = args.namespace.as_bytes();
            if !((1..=63).contains(&label.len())
                && label
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && label[0] != b'-'
                && label[label.len() - 1] != b'-')
            {
                bail!(
                    "--namespace {:?}: not a Kubernetes namespace name (1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit)",
                    args.namespace
                );
            }
            for (flag, reference) in [("--image", image), ("--npd-image", args.npd_image)] {
                if reference.is_empty()
                    || reference
                        .chars()
                        .any(|c| c.is_control() || c.is_whitespace())
                {
                    bail!("{flag} {reference:?}: not an image reference (no spaces or control characters)");
                }
            }
            let target = node_daemonset::Target {
                image,
                npd_image: args.npd_image,
                namespace: args.namespace,
                binary_in_image: BINARY_IN_IMAGE,
            };
            // The pod sees the host's /dev/shm through a read-only mount of its own.
            let extra: &[&str] = if args.read_only_view {
                &[]
            } else {
                &["--read-only-view"]
            };
            manifest::render(&node_daemonset::objects(&target, &line_args(extra)))
        }
    })
}

/// The policy flags and the path this invocation was given, in order: what an emitted file
/// runs, on other nodes and from other directories, so a relative path or scenario file is
/// made absolute.
fn policy_args(parsed: &Target) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = std::env::args_os().skip(2).map(|a| {
        a.into_string()
            .unwrap_or_else(|a| a.to_string_lossy().into_owned())
    });
    let given_path = parsed.path.to_string_lossy().into_owned();
    while let Some(arg) = args.next() {
        let flag = arg.split('=').next().unwrap_or("");
        if NOT_POLICY.contains(&flag) {
            if !arg.contains('=') && !NO_VALUE.contains(&flag) {
                args.next();
            }
            continue;
        }
        if arg == "--scenario" {
            kept.push(arg);
            if let Some(value) = args.next() {
                kept.push(absolute(&value));
            }
            continue;
        }
        if let Some(value) = arg.strip_prefix("--scenario=") {
            kept.push(format!("--scenario={}", absolute(value)));
            continue;
        }
        if arg == given_path {
            // The path is a path wherever it is run, there or not here.
            kept.push(
                std::path::absolute(&arg)
                    .map(|p| p.display().to_string())
                    .unwrap_or(arg),
            );
            continue;
        }
        kept.push(arg);
    }
    kept
}

/// `arg` as an absolute path when it names a relative file or directory that exists here
/// (a built-in scenario's name stays a name).
fn absolute(arg: &str) -> String {
    let path = Path::new(arg);
    if path.is_relative() && path.exists() {
        if let Ok(full) = std::path::absolute(path) {
            return full.display().to_string();
        }
    }
    arg.to_string()
}
