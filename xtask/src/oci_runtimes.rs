//! The container runtimes the runtime tests run cells under: Podman (rootful, through its
//! Docker-compatible service, which shmbench starts itself), crun and gVisor's runsc, from
//! Debian's packages; crun and runsc registered in the Docker engine's configuration for the
//! tests (`/etc/docker/daemon.json`, reloaded with SIGHUP) and the configuration put back as it
//! was when the tests end. A runtime the engine already knows is left as the user registered it.

use std::path::{Path, PathBuf};

use crate::host::{cache_dir, on_path, run};
use crate::requirement::Requirement;
use crate::{apt, docker};

const CONFIG: &str = "/etc/docker/daemon.json";

/// The runtimes registered for the tests: (name, binary, runtime arguments). gVisor needs
/// `--network=none` for containers without a network: it will not start a sandbox's network
/// stack from the root network namespace (measured with runsc 20221219).
const REGISTERED: &[(&str, &str, &[&str])] = &[
    ("crun", "/usr/bin/crun", &[]),
    ("runsc", "/usr/bin/runsc", &["--network=none"]),
];

/// The engine's configuration as it was before the tests changed it: `absent` when there was
/// none. Kept on disk so a run that died before putting it back is undone by the next.
fn backup() -> PathBuf {
    cache_dir("runtimes").join("daemon.json.before-tests")
}

pub struct Runtimes;

impl Requirement for Runtimes {
    fn name(&self) -> &'static str {
        "container runtimes (podman, crun, runsc)"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_RUNTIMES")
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut done = Vec::new();
        let missing: Vec<&str> = ["podman", "crun", "runsc"]
            .into_iter()
            .filter(|p| !on_path(p))
            .collect();
        if !missing.is_empty() {
            apt::install(&missing)?;
            done.push(format!("installed {}", missing.join(", ")));
        }
        let known = engine_runtimes().ok_or_else(|| {
            anyhow::anyhow!("the Docker engine did not say which runtimes it has (GET /info)")
        })?;
        let wanted: Vec<_> = REGISTERED
            .iter()
            .filter(|(name, ..)| !known.iter().any(|k| k == name))
            .collect();
        if !wanted.is_empty() {
            register(&wanted)?;
            done.push(format!(
                "registered {} in {CONFIG} for the tests (put back after them)",
                wanted
                    .iter()
                    .map(|(n, ..)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(match done.is_empty() {
            true => "present, and registered in the Docker engine".into(),
            false => done.join("; "),
        })
    }

    fn stop(&self) -> Option<String> {
        let saved = std::fs::read(backup()).ok()?;
        let before = (saved != b"absent").then_some(saved);
        Some(match put_back(before.as_deref()) {
            Ok(()) => {
                let _ = std::fs::remove_file(backup());
                format!("{CONFIG} and the engine's runtimes put back as they were")
            }
            Err(e) => format!(
                "could not put the engine back ({e}); its configuration before the tests is in {}",
                backup().display()
            ),
        })
    }
}

/// Puts the engine's configuration back to `before` (None: there was no file). A reload only
/// changes what the file names, and the original may not name `runtimes` at all: the engine
/// is reloaded first from the original with its own runtimes written out (none, when it had
/// none), so it drops the tests' ones, and then the file gets the original's exact bytes.
fn put_back(before: Option<&[u8]>) -> anyhow::Result<()> {
    let mut config: serde_json::Value = match before {
        Some(text) => serde_json::from_slice(text)?,
        None => serde_json::json!({}),
    };
    let object = config
        .as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("not a JSON object"))?;
    object
        .entry("runtimes")
        .or_insert_with(|| serde_json::json!({}));
    let original: Vec<String> = object["runtimes"]
        .as_object()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    let text = serde_json::to_string_pretty(&config)?;
    std::fs::write(CONFIG, text)?;
    reload()?;
    wait_for_runtimes(|known| {
        REGISTERED
            .iter()
            .all(|(n, ..)| original.iter().any(|o| o == n) || !known.iter().any(|k| k == n))
    })?;
    match before {
        Some(bytes) => std::fs::write(CONFIG, bytes),
        None => std::fs::remove_file(CONFIG),
    }
    .map_err(anyhow::Error::from)
}

/// Waits until the engine's runtimes satisfy `done` after a reload.
fn wait_for_runtimes(done: impl Fn(&[String]) -> bool) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if done(&engine_runtimes().unwrap_or_default()) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(anyhow::anyhow!(
        "the Docker engine did not take the runtimes of {CONFIG} after a reload (SIGHUP)"
    ))
}

/// The runtimes the engine has registered, by name.
fn engine_runtimes() -> Option<Vec<String>> {
    let info: serde_json::Value = serde_json::from_str(&docker::get("/info")?).ok()?;
    Some(info["Runtimes"].as_object()?.keys().cloned().collect())
}

/// Adds `wanted` to the engine's configuration (the original kept first) and reloads it.
fn register(wanted: &[&(&str, &str, &[&str])]) -> anyhow::Result<()> {
    let before = std::fs::read(CONFIG).ok();
    let mut config: serde_json::Value = match &before {
        Some(text) => serde_json::from_slice(text).map_err(|e| anyhow::anyhow!("{CONFIG} is not JSON ({e}): register crun and runsc yourself, or set SHMBENCH_SKIP_RUNTIMES=1"))?,
        None => serde_json::json!({}),
    };
    // A backup already there is from a run that died before putting it back: it, not the
    // configuration that run changed, is the original.
    if !backup().exists() {
        std::fs::create_dir_all(cache_dir("runtimes"))?;
        let original = before.clone().unwrap_or_else(|| b"absent".to_vec());
        std::fs::write(backup(), original)
            .map_err(|e| anyhow::anyhow!("cannot keep {CONFIG}'s original: {e}"))?;
    }
    let runtimes = config
        .as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("{CONFIG} is not a JSON object"))?
        .entry("runtimes")
        .or_insert_with(|| serde_json::json!({}));
    for (name, path, args) in wanted {
        runtimes[*name] = serde_json::json!({"path": path, "runtimeArgs": args});
    }
    if let Some(dir) = Path::new(CONFIG).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&config)?;
    std::fs::write(CONFIG, text).map_err(|e| anyhow::anyhow!("cannot write {CONFIG}: {e}"))?;
    reload()?;
    wait_for_runtimes(|known| wanted.iter().all(|(n, ..)| known.iter().any(|k| k == n)))
}

/// SIGHUP to the engine: it rereads its configuration's runtimes.
fn reload() -> anyhow::Result<()> {
    run(&["pkill", "-HUP", "-x", "dockerd"])
}
