//! Module names across crates: a name in more than two crates is a concept spread over the
//! layers (six `watch` modules once: model, plan, cell, results, present and the command
//! line) or a role word that says nothing alone (`text`, `json`, `table`, `verdict`). Two is
//! the command line's module of a subcommand beside the crate that does its work, or a
//! concept's types beside its logic.

use std::collections::{BTreeMap, BTreeSet};

use crate::Tree;

/// The most crates one module name may appear in.
const MOST_CRATES: usize = 2;

/// One line per module name found in more crates than [`MOST_CRATES`], naming its files.
pub fn problems(tree: &Tree) -> Vec<String> {
    let mut crates: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut files: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (module, (file, _)) in tree {
        // A crate's root is its crate, not a module of it.
        if module.len() < 2 {
            continue;
        }
        let name = module.last().unwrap().as_str();
        crates.entry(name).or_default().insert(module[0].as_str());
        files.entry(name).or_default().push(file.as_str());
    }
    (crates.into_iter())
        .filter(|(_, c)| c.len() > MOST_CRATES)
        .map(|(name, c)| {
            format!(
                "the module name `{name}` is in {} crates ({}): {}; name each for what it holds",
                c.len(),
                c.into_iter().collect::<Vec<_>>().join(", "),
                files[name].join(", ")
            )
        })
        .collect()
}
