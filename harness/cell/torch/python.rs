//! Which Python runs a torch cell, and which torch it has: where the interpreter lives (for a
//! container's mounts), its torch version and allocation profile, each interpreter asked once,
//! and why one cannot serve (with how to get one that can).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use super::{classify, INSTALL_HINT};
use model::knobs::TorchProfile;

/// The allocation profile of a torch version: 2.10 reserves segments with posix_fallocate.
pub fn profile_of(version: &str) -> TorchProfile {
    let mut parts = version.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .unwrap_or(0)
    });
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) >= (2, 10) {
        TorchProfile::Modern
    } else {
        TorchProfile::Legacy
    }
}

/// Why `python` could not be started, and how to get one that can.
pub(super) fn cannot_run(python: &str, e: std::io::Error) -> PythonError {
    PythonError::CannotRun {
        python: python.to_string(),
        why: std::sync::Arc::new(e),
    }
}

/// Why a Python cannot run torch cells, each with how to get one that can. Cloneable: each
/// interpreter is asked once and its answer kept.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PythonError {
    #[error("cannot run the Python interpreter '{python}' ({why}): {INSTALL_HINT}")]
    CannotRun {
        python: String,
        why: std::sync::Arc<std::io::Error>,
    },
    #[error("'{0}' did not say where it lives")]
    Unlocated(String),
    #[error("'{python}' cannot import torch ({why}): {INSTALL_HINT}")]
    NoTorch { python: String, why: String },
}

/// Runs `python -c code`; an interpreter that cannot start is an error saying how to get one.
fn ask(python: &str, code: &str) -> Result<std::process::Output, PythonError> {
    Command::new(python)
        .args(["-c", code])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| cannot_run(python, e))
}

/// Where a Python lives: its executable (a venv's own `bin/python`, which finds the venv) and
/// the installation directories it needs (the venv's prefix and the base it was made from).
pub fn locate(python: &str) -> Result<(String, Vec<String>), PythonError> {
    let out = ask(
        python,
        "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)",
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let executable = lines
        .next()
        .filter(|_| out.status.success())
        .ok_or_else(|| PythonError::Unlocated(python.to_string()))?
        .to_string();
    let mut dirs: Vec<String> = lines.map(String::from).collect();
    dirs.sort();
    dirs.dedup();
    Ok((executable, dirs))
}

/// What a Python's torch is.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub version: String,
    /// Whether torch sees an accelerator (without one it ignores pin_memory).
    pub accelerator: bool,
}

impl Found {
    pub fn profile(&self) -> TorchProfile {
        profile_of(&self.version)
    }
}

/// The torch `python` has, or why it has none (with how to get one). Importing torch takes
/// seconds, so each interpreter is asked once per process (a fidelity run checks its Pythons
/// and then the runner checks them again).
pub fn probe(python: &str) -> Result<Found, PythonError> {
    static ASKED: Mutex<BTreeMap<String, Result<Found, PythonError>>> = Mutex::new(BTreeMap::new());
    let mut asked = ASKED.lock().unwrap_or_else(|e| e.into_inner());
    asked
        .entry(python.to_string())
        .or_insert_with(|| probe_once(python))
        .clone()
}

fn probe_once(python: &str) -> Result<Found, PythonError> {
    let out = ask(
        python,
        "import torch; print(torch.__version__.split('+')[0], torch.cuda.is_available())",
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut words = stdout.split_whitespace();
    if let (true, Some(version), Some(accelerator)) =
        (out.status.success(), words.next(), words.next())
    {
        Ok(Found {
            version: version.to_string(),
            accelerator: accelerator == "True",
        })
    } else {
        Err(PythonError::NoTorch {
            python: python.to_string(),
            why: classify::failed_import(&out.status, &out.stderr),
        })
    }
}
