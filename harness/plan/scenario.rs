//! Scenario files (TOML): defaults plus named cells, each cell a set of knob overrides and,
//! optionally, what the source being checked claims for it.
//!
//! ```toml
//! name = "seed-matrix"
//! [defaults]
//! workers = 8
//! [[cells]]
//! name = "docker-default"
//! environment = "Docker Default"
//! shm-size = "64m"
//! claim = { status = "crash", crash-step = 2, img-per-s = 0.0 }
//! ```
//!
//! Keys are the `run` flags' names (`shm-size`; `shm_size` is accepted too). Every error names
//! the file, the cell and the key.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;

use super::consumers::{self, Consumer};
use super::resolve::{Identity, Platform};
use crate::resolve::Resolve;
use model::claim::Claim;
use model::config::CellConfig;
use model::knobs::Knobs;
use model::name;
use model::statement::Statement;
use sys::clock;

/// The seed matrix, built in so `shmbench matrix` works from any directory.
pub const SEED_MATRIX: &str = include_str!("../../scenarios/seed-matrix.toml");
pub const SEED_MATRIX_PATH: &str = "scenarios/seed-matrix.toml";
/// The emulation against real torch, built in too.
pub const FIDELITY: &str = include_str!("../../scenarios/fidelity.toml");
pub const FIDELITY_PATH: &str = "scenarios/fidelity.toml";

/// Where scenario files live, and every scenario built into the binary: (name, text).
pub const SCENARIO_DIR: &str = "scenarios";
const BUILT_IN: &[(&str, &str)] = &[
    ("seed-matrix", SEED_MATRIX),
    ("fidelity", FIDELITY),
    (
        "kubernetes",
        include_str!("../../scenarios/kubernetes.toml"),
    ),
    (
        "seed-claims",
        include_str!("../../scenarios/seed-claims.toml"),
    ),
    (
        "runtime-speed",
        include_str!("../../scenarios/runtime-speed.toml"),
    ),
    ("causes", include_str!("../../scenarios/causes.toml")),
    ("fleet", include_str!("../../scenarios/fleet.toml")),
];

#[derive(Clone, Debug)]
pub struct ScenarioCell {
    pub name: String,
    pub environment: String,
    pub knobs: Knobs,
    pub claim: Option<Claim>,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where it was read from (for messages).
    pub origin: String,
    pub defaults: Knobs,
    pub cells: Vec<ScenarioCell>,
    /// Sentences of the source that several cells measure together (`[[claims]]`).
    pub statements: Vec<Statement>,
    /// What else fills the node's /dev/shm beside the loader (`[[consumers]]`), for the doctor.
    pub consumers: Vec<Consumer>,
}

/// Scenario keys may be written with `_` or `-`; knobs use `-`.
fn normalise(table: toml::Table) -> toml::Table {
    table
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                toml::Value::Table(t) => toml::Value::Table(normalise(t)),
                other => other,
            };
            (k.replace('_', "-"), v)
        })
        .collect()
}

/// Deserialises knobs one key at a time so an error names its key.
fn knobs_from(table: toml::Table, origin: &str, place: &str) -> Result<Knobs> {
    let mut knobs = Knobs::default();
    for (key, value) in table {
        let mut single = toml::Table::new();
        single.insert(key.clone(), value);
        let one = Knobs::deserialize(toml::Value::Table(single)).map_err(|e| {
            let text = e.to_string();
            if text.contains("unknown field") {
                let known: Vec<&str> = Knobs::KEYS.iter().map(|k| Knobs::flag_name(k)).collect();
                anyhow!("{origin}: {place}: unknown key '{key}'. Known keys: name, environment, claim, {}", known.join(", "))
            } else {
                anyhow!("{origin}: {place}: key '{key}': {}", text.trim())
            }
        })?;
        knobs.overlay(&one);
    }
    Ok(knobs)
}

fn take_string(
    table: &mut toml::Table,
    key: &str,
    origin: &str,
    place: &str,
) -> Result<Option<String>> {
    match table.remove(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(other) => bail!(
            "{origin}: {place}: key '{key}' must be a string, found {}",
            other.type_str()
        ),
    }
}

/// The `[[claims]]` tables: each a [`Statement`] whose cells are the scenario's.
fn statements_from(
    value: Option<toml::Value>,
    cells: &[&str],
    origin: &str,
) -> Result<Vec<Statement>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(entries) = value else {
        bail!("{origin}: 'claims' must be an array of tables ([[claims]])");
    };
    let mut out: Vec<Statement> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let statement = Statement::deserialize(entry)
            .map_err(|e| anyhow!("{origin}: claims[{i}]: {}", e.to_string().trim()))?;
        let place = format!("claim '{}'", statement.id);
        if out.iter().any(|s| s.id == statement.id) {
            bail!("{origin}: {place} is defined twice");
        }
        if let Some(problem) = statement.problem(cells) {
            bail!("{origin}: {place}: {problem}");
        }
        out.push(statement);
    }
    Ok(out)
}

impl Scenario {
    /// Reads a scenario file; `scenarios/seed-matrix.toml` falls back to the built-in copy when
    /// run outside the repository.
    /// Loads a scenario by path, or by name (`kubernetes` is `scenarios/kubernetes.toml`); a
    /// built-in scenario is found by its name or its usual path from any directory.
    pub fn load(path: &Path) -> Result<Scenario> {
        let by_name = path.components().count() == 1 && path.extension().is_none();
        let name = path
            .file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = match by_name {
            true => Path::new(SCENARIO_DIR).join(format!("{name}.toml")),
            false => path.to_path_buf(),
        };
        match std::fs::read_to_string(&file) {
            Ok(text) => return Scenario::parse(&text, &file.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("cannot read scenario {}: {e}", file.display()),
        }
        // Not on disk: a built-in scenario answers to its name and to its usual path.
        if by_name || path == Path::new(SCENARIO_DIR).join(format!("{name}.toml")) {
            if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
                return Scenario::parse(text, &format!("{name} (built in)"));
            }
        }
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        bail!(
            "no scenario {}: give a file's path, or a name of one in {SCENARIO_DIR}/ or built in ({})",
            path.display(),
            names.join(", ")
        )
    }

    pub fn parse(text: &str, origin: &str) -> Result<Scenario> {
        let root: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            anyhow!("{origin}: not valid TOML: {}", e.to_string().trim())
        })?;
        let mut root = normalise(root);
        let name = take_string(&mut root, "name", origin, "top level")?
            .ok_or_else(|| anyhow!("{origin}: top level: missing key 'name'"))?;
        if let Some(problem) = name::problem(&name) {
            bail!("{origin}: top level: name '{name}' {problem}");
        }
        let description =
            take_string(&mut root, "description", origin, "top level")?.unwrap_or_default();
        let defaults = match root.remove("defaults") {
            None => Knobs::default(),
            Some(toml::Value::Table(t)) => knobs_from(t, origin, "[defaults]")?,
            Some(_) => bail!("{origin}: 'defaults' must be a table ([defaults])"),
        };
        let cells_value = root
            .remove("cells")
            .ok_or_else(|| anyhow!("{origin}: no cells: add at least one [[cells]] table"))?;
        let statements_value = root.remove("claims");
        let consumers = consumers::from_tables(root.remove("consumers"), origin)?;
        if let Some(key) = root.keys().next() {
            bail!("{origin}: top level: unknown key '{key}' (expected name, description, [defaults], [[cells]], [[claims]], [[consumers]])");
        }
        let toml::Value::Array(entries) = cells_value else {
            bail!("{origin}: 'cells' must be an array of tables ([[cells]])");
        };
        let mut cells = Vec::new();
        let mut seen = HashSet::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let toml::Value::Table(mut table) = entry else {
                bail!("{origin}: cells[{i}] must be a table");
            };
            let place = format!("cells[{i}]");
            let name = take_string(&mut table, "name", origin, &place)?
                .ok_or_else(|| anyhow!("{origin}: {place}: missing key 'name'"))?;
            if let Some(problem) = name::problem(&name) {
                bail!("{origin}: {place}: name '{name}' {problem}");
            }
            if !seen.insert(name.clone()) {
                bail!("{origin}: cell '{name}' is defined twice");
            }
            let place = format!("cell '{name}'");
            let environment = take_string(&mut table, "environment", origin, &place)?
                .unwrap_or_else(|| name.clone());
            let claim = match table.remove("claim") {
                None => None,
                Some(value) => Some(Claim::deserialize(value).map_err(|e| {
                    anyhow!("{origin}: {place}: key 'claim': {}", e.to_string().trim())
                })?),
            };
            let knobs = knobs_from(table, origin, &place)?;
            cells.push(ScenarioCell {
                name,
                environment,
                knobs,
                claim,
            });
        }
        if cells.is_empty() {
            bail!("{origin}: no cells: add at least one [[cells]] table");
        }
        let names: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
        let statements = statements_from(statements_value, &names, origin)?;
        Ok(Scenario {
            name,
            description,
            origin: origin.to_string(),
            defaults,
            cells,
            statements,
            consumers,
        })
    }

    /// The knobs of one cell as the scenario gives them (its defaults, then the cell's keys), or
    /// of its defaults when no cell is named.
    pub fn knobs_of(&self, cell: Option<&str>) -> Result<Knobs> {
        let mut knobs = self.defaults.clone();
        if let Some(name) = cell {
            knobs.overlay(&self.cell_named(name)?.knobs);
        }
        Ok(knobs)
    }

    /// The cell of that name; none: an error listing the known ones.
    fn cell_named(&self, name: &str) -> Result<&ScenarioCell> {
        self.cells.iter().find(|c| c.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.cells.iter().map(|c| c.name.as_str()).collect();
            anyhow!(
                "{}: no cell named '{name}'. Cells: {}",
                self.origin,
                known.join(", ")
            )
        })
    }

    /// Resolves the cells to run: defaults, then each cell's keys, then `overrides` (CLI flags);
    /// `only` keeps the named cells (an unknown name is an error listing the known ones).
    pub fn plan(
        &self,
        overrides: &Knobs,
        only: Option<&[String]>,
        platform: &Platform,
    ) -> Result<Vec<CellConfig>> {
        for name in only.unwrap_or_default() {
            self.cell_named(name)?;
        }
        let mut planned = Vec::new();
        for cell in &self.cells {
            if only.is_some_and(|names| !names.contains(&cell.name)) {
                continue;
            }
            let mut knobs = self.defaults.clone();
            knobs.overlay(&cell.knobs);
            knobs.overlay(overrides);
            let id = Identity {
                scenario: self.name.clone(),
                cell: cell.name.clone(),
                environment: cell.environment.clone(),
                claim: cell.claim.clone(),
            };
            let config = knobs
                .resolve(id, platform)
                .map_err(|e| anyhow!("{}: cell '{}': {e}", self.origin, cell.name))?;
            planned.push(config);
        }
        Ok(planned)
    }
}

/// Default results path: `results/<scenario>-<UTC time>.csv`.
pub fn default_results_path(scenario: &str) -> PathBuf {
    PathBuf::from("results").join(format!("{scenario}-{}.csv", clock::compact_now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_matrix_parses_with_five_rows_and_claims() {
        let s = Scenario::parse(SEED_MATRIX, "seed").unwrap();
        assert_eq!(s.cells.len(), 5);
        assert!(s.cells.iter().all(|c| c.claim.is_some()));
        let plan = s
            .plan(&Knobs::default(), None, &Platform::fixed(24 << 30, false))
            .unwrap();
        assert_eq!(plan[0].batch_bytes(), 77_070_336);
    }

    #[test]
    fn errors_name_file_cell_and_key() {
        let text = "name = \"x\"\n[[cells]]\nname = \"a\"\nshm-size = \"64q\"\n";
        let e = Scenario::parse(text, "f.toml").unwrap_err().to_string();
        assert!(
            e.contains("f.toml") && e.contains("cell 'a'") && e.contains("shm-size"),
            "{e}"
        );
        let text = "name = \"x\"\n[[cells]]\nname = \"a\"\nwrokers = 3\n";
        let e = Scenario::parse(text, "f.toml").unwrap_err().to_string();
        assert!(e.contains("unknown key 'wrokers'"), "{e}");
        let text = "name = \"x\"\n[[cells]]\nname = \"a\"\nworkers = 0\n";
        let s = Scenario::parse(text, "f.toml").unwrap();
        let e = s
            .plan(&Knobs::default(), None, &Platform::fixed(1 << 34, false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cell 'a'") && e.contains("workers"), "{e}");
    }

    #[test]
    fn cli_overrides_win_and_underscores_work() {
        let text =
            "name = \"x\"\n[defaults]\nretain_every = 3\n[[cells]]\nname = \"a\"\nworkers = 2\n";
        let s = Scenario::parse(text, "f").unwrap();
        let top = Knobs {
            workers: Some(5),
            ..Knobs::default()
        };
        let plan = s
            .plan(&top, None, &Platform::fixed(1 << 34, false))
            .unwrap();
        assert_eq!(plan[0].knobs.workers, 5);
        assert_eq!(plan[0].knobs.retain_every, 3);
        assert!(s
            .plan(
                &top,
                Some(&["b".to_string()]),
                &Platform::fixed(1 << 34, false)
            )
            .is_err());
    }
}
