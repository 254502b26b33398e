//! The Kubernetes schema validator the manifest tests use: `kubernetes-validate` from PyPI (the
//! official OpenAPI schemas of many Kubernetes versions, bundled), in a cached venv. The tests
//! find it through SHMBENCH_K8S_VALIDATE.

use std::path::PathBuf;

use crate::needs::Need;
use crate::venv;

fn program() -> PathBuf {
    venv::dir("k8s").join("bin/kubernetes-validate")
}

fn version() -> Option<String> {
    venv::answer(&program(), &["--version"])
}

pub struct Validator;

impl Need for Validator {
    fn name(&self) -> &'static str {
        "Kubernetes schema validator (kubernetes-validate)"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_K8S_VALIDATE")
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SHMBENCH_K8S_VALIDATE".into(),
            program().display().to_string(),
        )]
    }

    fn ensure(&self) -> Result<String, String> {
        if let Some(v) = version() {
            return Ok(format!("{v} (cached)"));
        }
        venv::install("k8s", &["kubernetes-validate"])?;
        let v = version().ok_or_else(|| {
            format!(
                "kubernetes-validate was installed but {} does not run",
                program().display()
            )
        })?;
        Ok(format!("installed {v}"))
    }
}
