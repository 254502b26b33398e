//! The OCI runtime a cell's container runs under: checked against what the engine knows before
//! any cell runs (a name the engine lacks fails the run up front, with how to register it), and
//! named with its version, read from its own binary, for the row and the fingerprint.

use std::process::{Command, Stdio};

use anyhow::{bail, Result};

use super::engine::Engine;
use model::knobs::{EngineKind, OciRuntime};

/// `NAME VERSION` of the runtime `engine` starts `oci`'s containers with (`runsc
/// 0.0~20221219.0`); `NAME ?` when its binary does not say.
pub fn describe(engine: &Engine, oci: &OciRuntime) -> Result<String> {
    let (name, binary) = match engine.kind {
        EngineKind::Docker => {
            let name = oci.named().unwrap_or(&engine.default_oci_runtime);
            let Some((_, path)) = engine.oci_runtimes.iter().find(|(n, _)| n == name) else {
                let known: Vec<&str> = engine
                    .oci_runtimes
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect();
                let args = match oci.is_gvisor() {
                    // gVisor will not set up a sandbox's network from the root network namespace.
                    true => r#", "runtimeArgs": ["--network=none"]"#,
                    false => "",
                };
                bail!(
                    "oci-runtime {name}: the Docker engine has no runtime of that name (it has {}). Register it: add to the top-level object of /etc/docker/daemon.json (keeping what is there) \"runtimes\": {{\"{name}\": {{\"path\": \"/usr/bin/{name}\"{args}}}}}, then reload the engine: `sudo kill -HUP $(pidof dockerd)`. Or run these cells under Podman (--engine podman), which finds runtimes on PATH",
                    known.join(", ")
                );
            };
            (name.to_string(), path.clone())
        }
        EngineKind::Podman => {
            let name = oci
                .named()
                .map(str::to_string)
                .or_else(|| Some(engine.default_oci_runtime.clone()).filter(|d| !d.is_empty()))
                .unwrap_or_else(|| "crun".to_string());
            super::podman::runtime_on_path(&name)?;
            (name.clone(), name)
        }
    };
    Ok(format!(
        "{name} {}",
        version_of(&binary).unwrap_or_else(|| "?".into())
    ))
}

/// The version a runtime's `--version` prints on its first line (`runc version 1.1.5+ds1`).
fn version_of(binary: &str) -> Option<String> {
    let output = Command::new(binary)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    version_in(text.lines().next()?)
}

/// The word after `version` in a line (`crun version 1.8.1` -> `1.8.1`).
fn version_in(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "version")?;
    words.next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_is_the_word_after_version() {
        assert_eq!(
            super::version_in("runc version 1.1.5+ds1").as_deref(),
            Some("1.1.5+ds1")
        );
        assert_eq!(
            super::version_in("runsc version 0.0~20221219.0").as_deref(),
            Some("0.0~20221219.0")
        );
        assert_eq!(super::version_in("crun 1.8"), None);
    }
}
