//! ARCHITECTURE.md's recipes held to the code: each `### ` recipe under `## Recipes` has an
//! `Anchor:` (a string in backticks), and every file of `harness/` whose code (comments and
//! literals left out) holds the anchor must be named in the recipe, so a recipe cannot miss a
//! place a change of its kind reaches. Every path a recipe names must exist (a path with `NAME`
//! in it is the new file), so a recipe cannot go stale when a file moves.

use std::path::Path;

use super::scan::code_only;
use super::Tree;

/// One recipe: its title, anchor and the text that names its files.
struct Recipe<'a> {
    title: &'a str,
    anchor: Option<&'a str>,
    text: &'a str,
}

/// The recipes of the `## Recipes` section, in order.
fn recipes(markdown: &str) -> Vec<Recipe<'_>> {
    let start = if markdown.starts_with("## Recipes\n") {
        Some(0)
    } else {
        markdown.find("\n## Recipes\n").map(|i| i + 1)
    };
    let Some(section) = start.map(|i| &markdown[i + "## Recipes\n".len()..]) else {
        return Vec::new();
    };
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .split("\n### ")
        .skip(1)
        .map(|part| {
            let (title, text) = part.split_once('\n').unwrap_or((part, ""));
            let anchor = text
                .lines()
                .find_map(|l| l.strip_prefix("Anchor: `"))
                .and_then(|rest| rest.split_once('`'))
                .map(|(anchor, _)| anchor);
            Recipe {
                title: title.trim(),
                anchor,
                text,
            }
        })
        .collect()
}

/// The paths a recipe names: words in backticks that start with a top-level folder.
fn named_paths(text: &str) -> Vec<&str> {
    const FOLDERS: [&str; 8] = [
        "harness/",
        "tests/",
        "xtask/",
        "docs/",
        "integrations/",
        "scenarios/",
        "results/",
        "benches/",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|w| w.split("::").next().unwrap_or(w))
        .filter(|w| FOLDERS.iter().any(|f| w.starts_with(f)) && !w.contains(' '))
        .collect()
}

/// Everything wrong with the recipes of `markdown` against `tree` (under `root`).
pub(crate) fn problems_under(root: &Path, markdown: &str, tree: &Tree) -> Vec<String> {
    let mut found = Vec::new();
    let all = recipes(markdown);
    if all.is_empty() {
        found.push("ARCHITECTURE.md: no `### ` recipes under `## Recipes`".to_string());
    }
    for recipe in all {
        let title = recipe.title;
        let Some(anchor) = recipe.anchor else {
            found.push(format!(
                "ARCHITECTURE.md: the recipe `{title}` has no `Anchor: `...`` line"
            ));
            continue;
        };
        let named = named_paths(recipe.text);
        let mut reached = 0;
        for (file, src) in tree.values() {
            if !code_only(src).contains(anchor) {
                continue;
            }
            reached += 1;
            if !named.contains(&file.as_str()) {
                found.push(format!(
                    "ARCHITECTURE.md: the recipe `{title}` misses {file}, which holds its anchor `{anchor}`: name it, with what to change there"
                ));
            }
        }
        if reached == 0 {
            found.push(format!(
                "ARCHITECTURE.md: the recipe `{title}`'s anchor `{anchor}` is in no file of harness/: the recipe is stale"
            ));
        }
        for path in named.iter().filter(|p| !p.contains("NAME")) {
            if !root.join(path).exists() {
                found.push(format!(
                    "ARCHITECTURE.md: the recipe `{title}` names {path}, which does not exist"
                ));
            }
        }
    }
    found
}

/// The recipes' problems in this checkout.
pub(crate) fn problems(markdown: &str, tree: &Tree) -> Vec<String> {
    problems_under(Path::new(env!("CARGO_MANIFEST_DIR")), markdown, tree)
}

#[test]
fn a_recipe_that_misses_a_file_of_its_anchor_or_names_a_missing_one_is_named() {
    let tree: Tree = [
        ("model/knobs.rs", "pub enum Kind { A }\nfn f() { Kind::A; }"),
        ("runtime/lib.rs", "fn g() { match k { Kind::A => () } }"),
        (
            "present/table.rs",
            "// Kind:: in a comment is no place to change",
        ),
    ]
    .iter()
    .map(|(file, src)| {
        let module = file.trim_end_matches(".rs").split('/').map(String::from);
        (
            module.collect(),
            (format!("harness/{file}"), src.to_string()),
        )
    })
    .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = "## Recipes\n\n### A kind\nAnchor: `Kind::`\n- `harness/model/NAME.rs`: new.\n- `docs/NOPE.md`\n- `harness/model/knobs.rs`: the variant.\n\n## Tests\n";
    let found = problems_under(root, map, &tree);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found[0].contains("misses harness/runtime/lib.rs"),
        "{found:#?}"
    );
    assert!(found[1].contains("names docs/NOPE.md"), "{found:#?}");
    let fixed = map.replace("- `docs/NOPE.md`", "- `harness/runtime/lib.rs`: its arm.");
    assert_eq!(problems_under(root, &fixed, &tree), Vec::<String>::new());
    let no_anchor = fixed.replace("Anchor: `Kind::`", "");
    assert!(problems_under(root, &no_anchor, &tree)[0].contains("has no `Anchor:"));
}
