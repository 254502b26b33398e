//! What the VM runtime's tests need: QEMU (`qemu-system-x86`) and two Debian kernels to boot,
//! the two newest `linux-image-6.1.0-N-cloud-amd64` in the archive (shmbench fetches them itself
//! with `apt-get download` into its cache the first time a test boots one; the package lists are
//! refreshed here so it can). The tests find them through SHMBENCH_TEST_KERNELS.

use std::process::Command;
use std::sync::OnceLock;

use crate::apt;
use crate::host::on_path;
use crate::requirement::Requirement;

pub struct Qemu;

/// The kernels the tests boot, newest first, as `debian:VERSION`; set by `ensure`.
static KERNELS: OnceLock<Vec<String>> = OnceLock::new();

/// The two newest cloud kernels of Debian 12's 6.1 series the archive has.
fn newest_kernels() -> anyhow::Result<Vec<String>> {
    let out = Command::new("apt-cache")
        .args([
            "search",
            "--names-only",
            r"^linux-image-6\.1\.0-[0-9]+-cloud-amd64$",
        ])
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run apt-cache: {e}"))?;
    let mut versions: Vec<(u32, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|name| {
            let version = name.strip_prefix("linux-image-")?;
            let abi = version
                .strip_prefix("6.1.0-")?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            Some((abi, version.to_string()))
        })
        .collect();
    versions.sort();
    versions.dedup();
    let newest: Vec<String> = versions
        .iter()
        .rev()
        .take(2)
        .map(|(_, v)| format!("debian:{v}"))
        .collect();
    if newest.len() < 2 {
        return Err(anyhow::anyhow!("the Debian archive offers fewer than two linux-image-6.1.0-*-cloud-amd64 kernels: set SHMBENCH_SKIP_VM=1 to skip the VM tests"));
    }
    Ok(newest)
}

impl Requirement for Qemu {
    fn name(&self) -> &'static str {
        "QEMU and two Debian kernels (the vm runtime)"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_VM")
    }

    fn env(&self) -> Vec<(String, String)> {
        KERNELS
            .get()
            .map(|k| vec![("SHMBENCH_TEST_KERNELS".to_string(), k.join(","))])
            .unwrap_or_default()
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut did = Vec::new();
        if !on_path("qemu-system-x86_64") {
            apt::install(&["qemu-system-x86"])?;
            did.push("installed qemu-system-x86");
        }
        apt::update()?;
        let kernels = newest_kernels()?;
        let said = format!(
            "{}kernels {}",
            did.iter().map(|d| format!("{d}; ")).collect::<String>(),
            kernels.join(", ")
        );
        let _ = KERNELS.set(kernels);
        Ok(said)
    }
}
