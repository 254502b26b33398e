//! A tool the tests need from PyPI, in a cached venv of its own (`venv`): made once, reused
//! after, found by the tests through a variable.

use std::path::PathBuf;

use crate::requirement::Requirement;
use crate::venv;

/// One venv's worth of PyPI packages and how to ask it whether it works.
pub struct Package {
    /// What it is, for the log.
    pub name: &'static str,
    /// The venv's directory name under the cache.
    pub venv: &'static str,
    pub packages: &'static [&'static str],
    /// The venv's program and arguments that print its version.
    pub probe: (&'static str, &'static [&'static str]),
    /// The variable that tells the tests where the probe's program is.
    pub variable: &'static str,
    pub skip_variable: &'static str,
}

impl Package {
    pub fn program(&self) -> PathBuf {
        venv::dir(self.venv).join("bin").join(self.probe.0)
    }

    fn version(&self) -> Option<String> {
        venv::answer(&self.program(), self.probe.1)
    }
}

impl Requirement for Package {
    fn name(&self) -> &'static str {
        self.name
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some(self.skip_variable)
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![(self.variable.into(), self.program().display().to_string())]
    }

    fn ensure(&self) -> anyhow::Result<String> {
        if let Some(v) = self.version() {
            return Ok(format!("{v} (cached)"));
        }
        venv::install(self.venv, self.packages)?;
        let v = self.version().ok_or_else(|| {
            anyhow::anyhow!(
                "{} was installed but {} does not run",
                self.packages.join(" "),
                self.program().display()
            )
        })?;
        Ok(format!("installed {v}"))
    }
}

/// The Kubernetes schema validator the manifest tests use: `kubernetes-validate` (the official
/// OpenAPI schemas of many Kubernetes versions, bundled).
pub const K8S_VALIDATE: Package = Package {
    name: "Kubernetes schema validator (kubernetes-validate)",
    venv: "k8s",
    packages: &["kubernetes-validate"],
    probe: ("kubernetes-validate", &["--version"]),
    variable: "SHMBENCH_K8S_VALIDATE",
    skip_variable: "SHMBENCH_SKIP_K8S_VALIDATE",
};

/// Ray, whose object store the doctor's `--with ray:SIZE` is measured against
/// (tests/ray_store.rs); numpy for the objects it puts.
pub const RAY: Package = Package {
    name: "Python venv with Ray",
    venv: "ray",
    packages: &["ray", "numpy"],
    probe: (
        "python",
        &["-c", "import ray, numpy; print('ray', ray.__version__)"],
    ),
    variable: "SHMBENCH_RAY_PYTHON",
    skip_variable: "SHMBENCH_SKIP_RAY",
};

/// maturin, which builds the wheel the Python tests install (tests/wheel.rs), as a release
/// would (`maturin build --release`).
pub const MATURIN: Package = Package {
    name: "maturin (the wheel's build tool)",
    venv: "maturin",
    packages: &["maturin>=1.5,<2"],
    probe: ("maturin", &["--version"]),
    variable: "SHMBENCH_MATURIN",
    skip_variable: "SHMBENCH_SKIP_WHEEL",
};
