//! What the tests need from the machine, one [`Need`] each, in the order they are set up. A new
//! requirement is a new entry here.

use std::path::Path;
use std::process::Command;

use crate::{
    apt, docker, oci_runtimes, prometheus, pypi, rootless, sarif, slurm, torch, vm, wheel,
};

/// One requirement of the tests.
pub trait Need {
    /// What it is, for the log.
    fn name(&self) -> &'static str;
    /// The variable that skips it (and the tests that need it) by name, if it can be skipped.
    fn skip_variable(&self) -> Option<&'static str> {
        None
    }
    /// Variables the tests need to find it (set for `cargo test`).
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// Makes it present (idempotent: cheap when it already is); says what was done, or why it
    /// could not be, with the command that would do it.
    fn ensure(&self) -> Result<String, String>;
    /// Ends what `ensure` started, after the tests (a daemon of its own); says what it did.
    fn stop(&self) -> Option<String> {
        None
    }
}

pub fn all() -> Vec<Box<dyn Need>> {
    vec![
        Box::new(Commands),
        Box::new(Font),
        Box::new(docker::Engine),
        Box::new(oci_runtimes::Runtimes),
        Box::new(rootless::RootlessUser),
        Box::new(torch::Torch),
        Box::new(pypi::K8S_VALIDATE),
        Box::new(pypi::RAY),
        Box::new(pypi::MATURIN),
        Box::new(wheel::Wheel),
        Box::new(sarif::Schema),
        Box::new(vm::Qemu),
        Box::new(prometheus::Prometheus),
        Box::new(slurm::Cluster),
    ]
}

/// Programs the tests run: unshare (private mount namespaces with a small tmpfs) and prlimit
/// (an fd limit), both from util-linux.
struct Commands;

/// Runs `args[0]` with the rest as arguments (non-interactive for apt); an error names the command.
pub fn run(args: &[&str]) -> Result<(), String> {
    let status = Command::new(args[0])
        .args(&args[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", args.join(" ")))
    }
}

/// Where the tests' set-up keeps what it fetched, `what` under the user's cache directory
/// (`$XDG_CACHE_HOME/shmbench/WHAT`, else `~/.cache/shmbench/WHAT`).
pub fn cache_dir(what: &str) -> std::path::PathBuf {
    use std::path::PathBuf;
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("shmbench").join(what)
}

/// Where a program is on PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl Need for Commands {
    fn name(&self) -> &'static str {
        "unshare and prlimit (util-linux), strace"
    }

    fn ensure(&self) -> Result<String, String> {
        let mut installed = Vec::new();
        if !(on_path("unshare") && on_path("prlimit")) {
            apt::install(&["util-linux"])?;
            installed.push("util-linux");
        }
        // The sweep's race test widens a window with strace's fault injection.
        if !on_path("strace") {
            apt::install(&["strace"])?;
            installed.push("strace");
        }
        Ok(match installed.is_empty() {
            true => "present".into(),
            false => format!("installed {}", installed.join(", ")),
        })
    }
}

/// A TrueType font for the report's plots (shmbench rasterises text without fontconfig).
struct Font;

/// The font shmbench looks for first (see `harness/present/report/font.rs`).
pub const DEJAVU: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

impl Need for Font {
    fn name(&self) -> &'static str {
        "a TrueType font for plots"
    }

    fn ensure(&self) -> Result<String, String> {
        if Path::new(DEJAVU).is_file() {
            return Ok(format!("present ({DEJAVU})"));
        }
        apt::install(&["fonts-dejavu-core"])?;
        Ok("installed fonts-dejavu-core".into())
    }
}
