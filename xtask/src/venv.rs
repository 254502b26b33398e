//! Python venvs the tests use, cached under the user's cache directory
//! (`$XDG_CACHE_HOME/shmbench/venvs/NAME`, else `~/.cache/...`): made once with `python3 -m venv`
//! and filled from PyPI with pip, reused after.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::apt;
use crate::host::{on_path, run};

/// Where the venv `name` lives.
pub fn dir(name: &str) -> PathBuf {
    crate::host::cache_dir("venvs").join(name)
}

/// Makes the venv `name` if it is not there, and pip-installs `packages` into it.
pub fn install(name: &str, packages: &[&str]) -> anyhow::Result<()> {
    if !on_path("python3") {
        apt::install(&["python3", "python3-venv"])?;
    }
    let dir = dir(name);
    let dir_text = dir.display().to_string();
    if !dir.join("bin/python").is_file() {
        std::fs::create_dir_all(dir.parent().unwrap_or(&dir))
            .map_err(|e| anyhow::anyhow!("cannot create {dir_text}: {e}"))?;
        if run(&["python3", "-m", "venv", &dir_text]).is_err() {
            // Debian's python3 has venv in a package of its own.
            apt::install(&["python3-venv"])?;
            let _ = std::fs::remove_dir_all(&dir);
            run(&["python3", "-m", "venv", &dir_text])?;
        }
    }
    let pip = dir.join("bin/pip").display().to_string();
    let mut args = vec![
        pip.as_str(),
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ];
    args.extend(packages);
    run(&args)
}

/// What `program args` prints on stdout, trimmed, when it runs and succeeds with something to
/// say (how a venv's tool is asked whether it works, and which version it is).
pub fn answer(program: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}
