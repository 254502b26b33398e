//! The results CSV is a public contract: every column a row is written with is documented in
//! results/README.md, and the README documents no column that is not written.

use std::collections::BTreeSet;
use std::path::Path;

use shmbench::model::knobs::AddedKnobs;
use shmbench::results::csv::{self, ResultsFile};

use crate::common;

#[test]
fn every_results_column_is_documented_in_results_readme() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A row as this shmbench writes it (the fixture is read and written again).
    let rows = csv::read(&root.join("tests/fixtures/seed.csv")).unwrap();
    let dir = common::temp_dir("schema");
    let path = dir.join("r.csv");
    ResultsFile::create(&path).unwrap().replace(rows).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let written: BTreeSet<&str> = text.lines().next().unwrap().split(',').collect();
    // Each table row of the README names its columns in backquotes in its first cell.
    let readme = std::fs::read_to_string(root.join("results/README.md")).unwrap();
    let documented: BTreeSet<&str> = readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').nth(1))
        .flat_map(|cell| cell.split('`').skip(1).step_by(2))
        .collect();
    // The columns of knobs added after schema 5 are documented by their knob's help (the
    // README says so), and only those.
    let added: BTreeSet<&str> = AddedKnobs::COLUMNS.iter().copied().collect();
    let undocumented: Vec<_> = written
        .difference(&documented)
        .filter(|c| !added.contains(*c))
        .collect();
    let unwritten: Vec<_> = documented.difference(&written).collect();
    assert!(
        undocumented.is_empty(),
        "columns missing from results/README.md: {undocumented:?}"
    );
    assert!(
        unwritten.is_empty(),
        "results/README.md documents columns that are not written: {unwritten:?}"
    );
}
