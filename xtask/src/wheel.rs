//! The wheel the Python tests install (tests/wheel.rs), built before the tests run rather than
//! by them: maturin builds the `shmbench` binary with flags of its own, and Cargo then puts its
//! copy at `target/release/shmbench`, the path every other test runs. Built during the tests,
//! that swap left the path missing for a moment, and a test starting shmbench then failed to
//! find it. Built here, `cargo test` puts its own binary back before any test starts.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::host::cache_dir;
use crate::pypi::MATURIN;
use crate::requirement::Requirement;

pub struct Wheel;

static BUILT: OnceLock<PathBuf> = OnceLock::new();

impl Requirement for Wheel {
    fn name(&self) -> &'static str {
        "the wheel (maturin build --release)"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_WHEEL")
    }

    fn env(&self) -> Vec<(String, String)> {
        BUILT
            .get()
            .map(|w| vec![("SHMBENCH_TEST_WHEEL".into(), w.display().to_string())])
            .unwrap_or_default()
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let out = cache_dir("wheel");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).map_err(|e| anyhow::anyhow!("{}: {e}", out.display()))?;
        let root = crate::host::workspace_root();
        let status = Command::new(MATURIN.program())
            .args(["build", "--release", "--quiet", "--out"])
            .arg(&out)
            .current_dir(root)
            .status()
            .map_err(|e| anyhow::anyhow!("cannot run maturin: {e}"))?;
        if !status.success() {
            return Err(anyhow::anyhow!(
                "`maturin build --release` failed ({status})"
            ));
        }
        let wheel = std::fs::read_dir(&out)?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "whl"))
            .ok_or_else(|| anyhow::anyhow!("maturin wrote no wheel into {}", out.display()))?;
        let said = format!("built {}", wheel.display());
        let _ = BUILT.set(wheel);
        Ok(said)
    }
}
