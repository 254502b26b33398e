//! The layer map held to Cargo: each layer of ARCHITECTURE.md is the crate `harness/<layer>/`
//! (package `shmbench-<layer>`; the command line, `cli`, is the root package `shmbench`), and the
//! layers a crate depends on are exactly those the map lets it import, each an ordinary
//! dependency under the layer's own name (`model = { package = "shmbench-model", .. }`, so code
//! reads `model::knobs::Knobs`). Cargo then refuses every other import between layers: the map,
//! the manifests and the code cannot disagree.
//!
//! The manifests are read as Cargo reads them (`cargo metadata`), so no way of writing a
//! dependency escapes: a `[target.'cfg(..)'.dependencies]` table, a `[dependencies.x]` table, a
//! dependency not renamed, a dev- or build-dependency (Cargo allows dev-dependency cycles, which
//! would let a layer's tests reach the layers above it) are all seen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// One dependency of a workspace package, as `cargo metadata` gives it.
#[derive(Debug, Default)]
pub struct Dep {
    /// The package it names.
    pub package: String,
    /// The name it is imported under, when renamed.
    pub rename: Option<String>,
    /// `dev`, `build`, or None for an ordinary dependency.
    pub kind: Option<String>,
    /// A `cfg(..)` or target triple it is limited to.
    pub target: Option<String>,
}

/// The layer a package is, by its name (`shmbench-model` -> `model`; the root -> `cli`).
fn layer_of(package: &str) -> Option<&str> {
    match package {
        "shmbench" => Some("cli"),
        other => other.strip_prefix("shmbench-"),
    }
}

/// What is wrong with the dependencies `deps` of the package `package` against `layers`.
pub fn package_problems(
    package: &str,
    deps: &[Dep],
    layers: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut found = Vec::new();
    let own = layer_of(package);
    let allowed = own.and_then(|l| layers.get(l));
    if let (Some(layer), None) = (own, allowed) {
        found.push(format!(
            "{package}: the crate of a layer `{layer}` that ARCHITECTURE.md does not have: add it to the map"
        ));
    }
    let mut named = BTreeSet::new();
    for dep in deps {
        let Some(layer) = layer_of(&dep.package) else {
            continue;
        };
        if layer == "cli" {
            found.push(format!(
                "{package}: depends on the command line (`shmbench`): nothing may, it is the top"
            ));
            continue;
        }
        if dep.kind.is_some() || dep.target.is_some() {
            found.push(format!(
                "{package}: depends on {} as a {} dependency{}: a layer is an ordinary dependency, or none",
                dep.package,
                dep.kind.as_deref().unwrap_or("normal"),
                dep.target.as_deref().map(|t| format!(" for {t}")).unwrap_or_default()
            ));
        }
        if dep.rename.as_deref() != Some(layer) {
            found.push(format!(
                "{package}: imports {} as `{}`: import a layer under its own name (`{layer} = {{ package = \"{}\", .. }}`)",
                dep.package,
                dep.rename.as_deref().unwrap_or(&dep.package.replace('-', "_")),
                dep.package
            ));
        }
        match allowed {
            Some(allowed) if !allowed.contains(layer) => found.push(format!(
                "{package}: depends on the layer `{layer}`, which ARCHITECTURE.md does not let it import: move the code that needs it, or change the map"
            )),
            None => found.push(format!(
                "{package}: depends on the layer `{layer}`, and is no layer that may"
            )),
            Some(_) => {}
        }
        named.insert(layer.to_string());
    }
    for layer in allowed.into_iter().flatten() {
        if !named.contains(layer) {
            found.push(format!(
                "{package}: ARCHITECTURE.md lets it import `{layer}`, but it does not depend on shmbench-{layer}: the map says what the build is, so add it or take it off the map"
            ));
        }
    }
    found
}

/// The workspace's packages and their dependencies, from `cargo metadata`.
fn workspace(root: &Path) -> BTreeMap<String, Vec<Dep>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let text = |v: &Value| v.as_str().map(String::from);
    meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| Dep {
                    package: text(&d["name"]).unwrap_or_default(),
                    rename: text(&d["rename"]),
                    kind: text(&d["kind"]),
                    target: text(&d["target"]),
                })
                .collect();
            (text(&p["name"]).unwrap_or_default(), deps)
        })
        .collect()
}

/// Everything wrong between `layers` (ARCHITECTURE.md's block) and the workspace under `root`.
pub fn problems(root: &Path, layers: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let packages = workspace(root);
    let mut found = Vec::new();
    for layer in layers.keys() {
        let package = match layer.as_str() {
            "cli" => "shmbench".to_string(),
            other => format!("shmbench-{other}"),
        };
        if !packages.contains_key(&package) {
            found.push(format!(
                "ARCHITECTURE.md: layer `{layer}` has no crate: write harness/{layer}/Cargo.toml (package {package}) and list it in the workspace"
            ));
        }
    }
    for (package, deps) in &packages {
        found.extend(package_problems(package, deps, layers));
    }
    found
}

#[cfg(test)]
fn dep(package: &str, rename: Option<&str>, kind: Option<&str>, target: Option<&str>) -> Dep {
    Dep {
        package: package.into(),
        rename: rename.map(String::from),
        kind: kind.map(String::from),
        target: target.map(String::from),
    }
}

#[test]
fn every_way_of_reaching_a_layer_the_map_does_not_allow_is_named() {
    let layers = crate::declared_layers("```layers\nmodel:\nsys: model\ncli: sys, model\n```");
    let ok = [dep("shmbench-model", Some("model"), None, None)];
    assert_eq!(
        package_problems("shmbench-sys", &ok, &layers),
        Vec::<String>::new()
    );
    let cases: [(&str, Dep, &str); 5] = [
        (
            "shmbench-model",
            dep("shmbench-sys", Some("sys"), None, None),
            "does not let it import",
        ),
        (
            "shmbench-model",
            dep("shmbench-sys", Some("sys"), None, Some("cfg(unix)")),
            "for cfg(unix)",
        ),
        (
            "shmbench-model",
            dep("shmbench-sys", Some("sys"), Some("dev"), None),
            "as a dev dependency",
        ),
        (
            "shmbench-model",
            dep("shmbench", None, Some("dev"), None),
            "depends on the command line",
        ),
        (
            "shmbench-sys",
            dep("shmbench-model", None, None, None),
            "under its own name",
        ),
    ];
    for (package, d, says) in cases {
        let found = package_problems(package, &[d], &layers);
        assert!(found.iter().any(|f| f.contains(says)), "{says}: {found:?}");
    }
    let missing = package_problems("shmbench-sys", &[], &layers);
    assert!(
        missing[0].contains("does not depend on shmbench-model"),
        "{missing:?}"
    );
    let stray = package_problems("shmbench-extra", &[], &layers);
    assert!(stray[0].contains("does not have"), "{stray:?}");
}
