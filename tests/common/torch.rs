//! A Python with torch for the real-torch tests: `cargo xtask test` installs the current release
//! into a cached venv and points SHMBENCH_TORCH_PYTHON at it (SHMBENCH_SKIP_TORCH=1 skips them,
//! and they say so).

use std::path::PathBuf;
use std::process::Command;

use shmbench::model::knobs::TorchProfile;

use super::require;

/// The interpreter the tests use: SHMBENCH_TORCH_PYTHON, or the venv `cargo xtask test` makes.
pub fn python() -> PathBuf {
    match std::env::var_os("SHMBENCH_TORCH_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
            cache.join("shmbench/venvs/torch/bin/python")
        }
    }
}

pub fn torch_or_skip() -> Option<String> {
    let python = python();
    let present = || {
        Command::new(&python)
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    require("torch", present, "a Python with torch").then(|| python.display().to_string())
}

/// The profile torch's version implies: 2.10 reserves segments with posix_fallocate.
pub fn expected_failure(record: &serde_json::Value) -> &'static str {
    failure_of(record["torch_version"].as_str().expect("a torch version"))
}

/// How torch `version` ends in a full /dev/shm: SIGBUS up to 2.9, ENOSPC from 2.10.
pub fn failure_of(version: &str) -> &'static str {
    match shmbench::cell::torch::profile_of(version) {
        TorchProfile::Modern => "enospc",
        TorchProfile::Legacy => "sigbus",
    }
}
