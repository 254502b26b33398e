//! A Python with the current torch for the real-torch tests, in a venv cached under the user's
//! cache directory (`$XDG_CACHE_HOME/shmbench/venvs/torch`, else `~/.cache/...`): made once with
//! `python3 -m venv` and `pip install torch` (about 5 GB from PyPI, a few minutes), reused after.
//! The tests find it through SHMBENCH_TORCH_PYTHON.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::apt;
use crate::needs::{on_path, run, Need};

/// Where the venv lives.
pub fn venv() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    cache.join("shmbench/venvs/torch")
}

fn python() -> PathBuf {
    venv().join("bin/python")
}

/// The torch version the venv's Python imports, if it does.
fn version() -> Option<String> {
    let out = Command::new(python())
        .args(["-c", "import torch; print(torch.__version__)"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

pub struct Torch;

impl Need for Torch {
    fn name(&self) -> &'static str {
        "Python venv with torch"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_TORCH")
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SHMBENCH_TORCH_PYTHON".into(),
            python().display().to_string(),
        )]
    }

    fn ensure(&self) -> Result<String, String> {
        if let Some(v) = version() {
            return Ok(format!("torch {v} in {} (cached)", venv().display()));
        }
        if !on_path("python3") {
            apt::install(&["python3", "python3-venv"])?;
        }
        let dir = venv();
        let dir_text = dir.display().to_string();
        if !python().is_file() {
            std::fs::create_dir_all(dir.parent().unwrap_or(&dir))
                .map_err(|e| format!("cannot create {dir_text}: {e}"))?;
            if run(&["python3", "-m", "venv", &dir_text]).is_err() {
                // Debian's python3 has venv in a package of its own.
                apt::install(&["python3-venv"])?;
                let _ = std::fs::remove_dir_all(&dir);
                run(&["python3", "-m", "venv", &dir_text])?;
            }
        }
        println!("   installing torch from PyPI into {dir_text} (about 5 GB, a few minutes)...");
        let pip = dir.join("bin/pip").display().to_string();
        run(&[
            &pip,
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "torch",
        ])?;
        let v = version().ok_or_else(|| {
            format!("torch was installed into {dir_text} but its Python cannot import it")
        })?;
        Ok(format!("installed torch {v} into {dir_text}"))
    }
}
