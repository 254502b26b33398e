//! A Python with the current torch for the real-torch tests, in a cached venv (`venv`: made once
//! with `pip install torch lightning`, about 5 GB from PyPI, a few minutes; reused after).
//! PyTorch Lightning is there for the pre-flight callback's test (tests/wheel.rs).
//! The tests find it through SHMBENCH_TORCH_PYTHON.

use std::path::PathBuf;

use crate::requirement::Requirement;
use crate::venv;

/// Where the venv lives.
pub fn venv() -> PathBuf {
    venv::dir("torch")
}

fn python() -> PathBuf {
    venv().join("bin/python")
}

/// The torch version the venv's Python imports, if it imports Lightning too.
fn version() -> Option<String> {
    venv::answer(
        &python(),
        &["-c", "import torch, lightning; print(torch.__version__)"],
    )
}

pub struct Torch;

impl Requirement for Torch {
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

    fn ensure(&self) -> anyhow::Result<String> {
        if let Some(v) = version() {
            return Ok(format!("torch {v} in {} (cached)", venv().display()));
        }
        let dir_text = venv().display().to_string();
        println!("   installing torch and PyTorch Lightning from PyPI into {dir_text} (about 5 GB, a few minutes)...");
        venv::install("torch", &["torch", "lightning"])?;
        let v = version().ok_or_else(|| {
            anyhow::anyhow!("torch and lightning were installed into {dir_text} but its Python cannot import them")
        })?;
        Ok(format!("installed torch {v} into {dir_text}"))
    }
}
