//! What the SARIF test needs: the official SARIF 2.1.0 JSON schema (OASIS's
//! `sarif-schema-2.1.0.json`, as the `serde-sarif` crate ships it in its sources: fetched from
//! crates.io with `cargo fetch`, never copied into this repository) and a Python with
//! `jsonschema` (a cached venv) to hold `shmbench check --format sarif` to it.

use std::path::PathBuf;
use std::process::Command;

use crate::requirement::Requirement;
use crate::venv;

/// The crate whose sources hold the schema, pinned.
const CRATE: &str = "serde-sarif";
const VERSION: &str = "0.8.0";
/// The schema's own id: what makes it the official one.
const SCHEMA_ID: &str = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json";

pub struct Schema;

fn python() -> PathBuf {
    venv::dir("sarif").join("bin").join("python")
}

/// Where cargo keeps registry sources.
fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
}

/// The schema in cargo's registry sources, if fetched.
fn schema() -> Option<PathBuf> {
    let src = cargo_home().join("registry").join("src");
    std::fs::read_dir(src).ok()?.flatten().find_map(|index| {
        let path = index
            .path()
            .join(format!("{CRATE}-{VERSION}"))
            .join("src")
            .join("schema.json");
        std::fs::read_to_string(&path)
            .ok()
            .filter(|t| t.contains(SCHEMA_ID))
            .map(|_| path)
    })
}

/// Fetches the crate's sources through a throw-away manifest.
fn fetch() -> anyhow::Result<()> {
    let dir = venv::dir("sarif-fetch");
    std::fs::create_dir_all(dir.join("src"))
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let manifest = format!("[package]\nname = \"sarif-schema-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{CRATE} = \"={VERSION}\"\n");
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::write(dir.join("src").join("lib.rs"), "")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["fetch", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .status()
        .map_err(|e| anyhow::anyhow!("cannot run cargo fetch: {e}"))?;
    status
        .success()
        .then_some(())
        .ok_or_else(|| anyhow::anyhow!("cargo fetch of {CRATE} {VERSION} failed ({status})"))
}

impl Requirement for Schema {
    fn name(&self) -> &'static str {
        "the SARIF 2.1.0 schema and jsonschema"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_SARIF")
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![(
            "SHMBENCH_SARIF_PYTHON".into(),
            python().display().to_string(),
        )];
        env.extend(schema().map(|p| ("SHMBENCH_SARIF_SCHEMA".into(), p.display().to_string())));
        env
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut done = Vec::new();
        if schema().is_none() {
            fetch()?;
            done.push(format!("fetched {CRATE} {VERSION}'s sources"));
        }
        let path = schema().ok_or_else(|| {
            anyhow::anyhow!("{CRATE} {VERSION} holds no schema with the id {SCHEMA_ID}")
        })?;
        let probe = [
            "-c",
            "import jsonschema; print('jsonschema', jsonschema.__version__)",
        ];
        if venv::answer(&python(), &probe).is_none() {
            venv::install("sarif", &["jsonschema"])?;
            done.push("installed jsonschema".into());
        }
        let version = venv::answer(&python(), &probe)
            .ok_or_else(|| anyhow::anyhow!("jsonschema was installed but does not import"))?;
        done.push(format!("schema {}, {version}", path.display()));
        Ok(done.join(", "))
    }
}
