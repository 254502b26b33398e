//! What every set-up step shares: running a command, finding a program, the cache directory,
//! the workspace's root. Nothing here knows a requirement; every requirement may use it.

use std::process::Command;

/// Runs `args[0]` with the rest as arguments (non-interactive for apt); an error names the command.
pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let status = Command::new(args[0])
        .args(&args[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", args[0]))?;
    if status.success() {
        Ok(())
    } else {
        Err(anyhow::anyhow!("`{}` failed ({status})", args.join(" ")))
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

/// The workspace this xtask runs for. `cargo run` sets CARGO_MANIFEST_DIR for the process it
/// starts; the path compiled in is only the fallback, because one CARGO_TARGET_DIR shared by
/// several checkouts (as `.ci/run`'s cache is) keeps the xtask built in another clone, whose
/// files may be gone (the wheel's `maturin build` once failed to start in a removed clone).
pub fn workspace_root() -> std::path::PathBuf {
    let xtask = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    xtask
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or(xtask)
}
