//! The layer map held to Cargo: each layer of ARCHITECTURE.md is the crate `harness/<layer>/`
//! (the command line, `cli`, is the root package), and the layers a crate names as dependencies
//! are exactly those the map lets it import, each under the layer's own name (`model = { package =
//! "shmbench-model", .. }`, so code reads `model::knobs::Knobs`). Cargo then refuses every other
//! import between layers: the map, the manifests and the code cannot disagree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The package name of a layer's crate.
fn package_of(layer: &str) -> String {
    format!("shmbench-{layer}")
}

/// The layers the `[dependencies]` table of `manifest` names, by the name each is imported
/// under, with the package it points to.
pub fn layer_dependencies(manifest: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        let Some((name, spec)) = line.split_once('=') else {
            continue;
        };
        let package = spec
            .split("package")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .filter(|p| p.starts_with("shmbench-"));
        if let (true, Some(package)) = (in_dependencies, package) {
            out.insert(name.trim().to_string(), package.to_string());
        }
    }
    out
}

/// Everything wrong between `layers` (ARCHITECTURE.md's block) and the manifests under `root`.
pub fn problems(root: &Path, layers: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (layer, allowed) in layers {
        let manifest = if layer == "cli" {
            "Cargo.toml".to_string()
        } else {
            format!("harness/{layer}/Cargo.toml")
        };
        let Ok(text) = std::fs::read_to_string(root.join(&manifest)) else {
            found.push(format!(
                "ARCHITECTURE.md: layer `{layer}` has no crate: write {manifest} (package {})",
                package_of(layer)
            ));
            continue;
        };
        found.extend(manifest_problems(&manifest, &text, allowed));
    }
    found
}

/// What is wrong with one layer's manifest (`file`, its `text`) against the layers it may import.
pub fn manifest_problems(file: &str, text: &str, allowed: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    let deps = layer_dependencies(text);
    for (name, package) in &deps {
        if package != &package_of(name) {
            found.push(format!(
                "{file}: the dependency `{name}` is {package}: import a layer under its own name (`{} = {{ package = \"{package}\", .. }}`)",
                package.trim_start_matches("shmbench-")
            ));
        } else if !allowed.contains(name) {
            found.push(format!(
                "{file}: depends on the layer `{name}`, which ARCHITECTURE.md does not let it import: move the code that needs it, or change the map"
            ));
        }
    }
    for layer in allowed {
        if !deps.contains_key(layer) {
            found.push(format!(
                "{file}: ARCHITECTURE.md lets it import `{layer}`, but it does not depend on {}: the map says what the build is, so add it or take it off the map",
                package_of(layer)
            ));
        }
    }
    found
}

#[test]
fn a_dependency_the_map_does_not_allow_is_named_and_so_is_one_missing() {
    let allowed: BTreeSet<String> = ["model".to_string()].into();
    let text = r#"[package]
name = "shmbench-sys"

[dependencies]
present = { package = "shmbench-present", path = "../present" }
libc.workspace = true

[dev-dependencies]
model = { package = "shmbench-model", path = "../model" }
"#;
    let found = manifest_problems("harness/sys/Cargo.toml", text, &allowed);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains("depends on the layer `present`"),
        "{found:?}"
    );
    assert!(
        found[1].contains("does not depend on shmbench-model"),
        "{found:?}"
    );
    let right = "[dependencies]\nmodel = { package = \"shmbench-model\", path = \"../model\" }\n";
    assert_eq!(
        manifest_problems("harness/sys/Cargo.toml", right, &allowed),
        Vec::<String>::new()
    );
    let renamed = "[dependencies]\nm = { package = \"shmbench-model\", path = \"../model\" }\n";
    assert!(manifest_problems("x", renamed, &allowed)[0].contains("under its own name"));
}
