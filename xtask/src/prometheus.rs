//! Prometheus's programs for the node check's tests: `promtool` (the alert rules' checks and
//! unit tests), `prometheus` and `prometheus-node-exporter` (the live test, on loopback ports
//! of its own). Debian's packages are unpacked (`dpkg -x`) into the cache, never installed:
//! installing them starts both as system services, which the tests must not leave running.

use std::path::PathBuf;
use std::process::Command;

use crate::apt;
use crate::host::{cache_dir, run};
use crate::requirement::Requirement;

/// The packages, unpacked under `cache_dir("prometheus")`.
const PACKAGES: [&str; 2] = ["prometheus", "prometheus-node-exporter"];

/// The programs the tests run, in the unpacked `usr/bin`.
const PROGRAMS: [&str; 3] = ["promtool", "prometheus", "prometheus-node-exporter"];

pub struct Prometheus;

fn bin_dir() -> PathBuf {
    cache_dir("prometheus").join("root/usr/bin")
}

fn unpacked() -> bool {
    PROGRAMS.iter().all(|p| bin_dir().join(p).is_file())
}

/// Downloads the packages into the cache and unpacks them there.
fn unpack() -> anyhow::Result<()> {
    let cache = cache_dir("prometheus");
    let debs = cache.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| anyhow::anyhow!("{}: {e}", debs.display()))?;
    // The package lists may be missing on a fresh machine; refreshing them needs root.
    let _ = apt::update();
    let status = Command::new("apt-get")
        .arg("download")
        .args(PACKAGES)
        .current_dir(&debs)
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run apt-get download: {e}"))?;
    if !status.success() {
        return Err(anyhow::anyhow!(
            "`apt-get download {}` failed ({status}): the node check's tests need Debian's Prometheus packages (or set SHMBENCH_SKIP_PROMETHEUS=1)",
            PACKAGES.join(" ")
        ));
    }
    let root = cache.join("root");
    for entry in std::fs::read_dir(&debs)?.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "deb") {
            run(&[
                "dpkg",
                "-x",
                &path.to_string_lossy(),
                &root.to_string_lossy(),
            ])?;
        }
    }
    Ok(())
}

fn version() -> String {
    Command::new(bin_dir().join("promtool"))
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

impl Requirement for Prometheus {
    fn name(&self) -> &'static str {
        "Prometheus, promtool and node_exporter (unpacked into the cache, not installed)"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_PROMETHEUS")
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![(
            "SHMBENCH_PROMETHEUS_BIN".into(),
            bin_dir().to_string_lossy().into_owned(),
        )]
    }

    fn ensure(&self) -> anyhow::Result<String> {
        if unpacked() {
            return Ok(format!("{} (cached in {})", version(), bin_dir().display()));
        }
        unpack()?;
        if !unpacked() {
            return Err(anyhow::anyhow!(
                "unpacked {} but {} lacks one of {}",
                PACKAGES.join(", "),
                bin_dir().display(),
                PROGRAMS.join(", ")
            ));
        }
        Ok(format!(
            "unpacked {} into {}",
            version(),
            bin_dir().display()
        ))
    }
}
