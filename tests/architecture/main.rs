//! The architecture, checked where Cargo cannot: the layering ARCHITECTURE.md declares (its
//! `layers` block says what each crate may import) is the crates' dependencies (`manifests`:
//! each is the crate `harness/<crate>/` and depends on exactly the crates it may import, so
//! Cargo refuses an import up the map), no import cycle between the files of one crate, printing
//! to the terminal only where the map allows it, and every recipe naming each file its anchor
//! reaches (`recipes`).
//!
//! Imports within a crate are read from the source: every `crate::`, `super::` and `self::`
//! path, in `use` declarations (brace groups expanded) and inline, with comments and literals
//! skipped, and resolved to the file that defines the module it names. A folder's `mod.rs` (or a
//! layer's `lib.rs`) assembling its own parts (re-exports, dispatch) is not a cycle: a Rust
//! folder is built that way. Every other import between files must be acyclic.

mod cycles;
mod manifests;
mod names;
mod recipes;
mod removals;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use scan::code_only;

/// What the source tree looks like to the checker: module path (`cell::loader::pool`) -> its file
/// (relative to the crate root) and source.
pub(crate) type Tree = BTreeMap<Vec<String>, (String, String)>;

/// The `layers` block of ARCHITECTURE.md: layer -> the layers it may import.
fn declared_layers(markdown: &str) -> BTreeMap<String, BTreeSet<String>> {
    let block = markdown
        .split("```layers")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```layers block");
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (layer, allowed) = l.split_once(':').expect("`layer: a, b` lines");
            let allowed = allowed
                .split(',')
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect();
            (layer.trim().to_string(), allowed)
        })
        .collect()
}

/// Everything wrong with `tree` against `layers`, one line each, naming file and line.
fn problems(tree: &Tree, layers: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    // The declared layering must itself be a DAG over declared layers.
    for (layer, allowed) in layers {
        for a in allowed {
            if !layers.contains_key(a) {
                found.push(format!(
                    "ARCHITECTURE.md: layer `{layer}` may import `{a}`, which is not a layer"
                ));
            }
        }
    }
    if let Some(cycle) = cycles::find_cycle(
        &layers
            .iter()
            .map(|(l, a)| (vec![l.clone()], a.iter().map(|x| vec![x.clone()]).collect()))
            .collect(),
    ) {
        found.push(format!(
            "ARCHITECTURE.md: the layers form a cycle: {}",
            cycles::show(&cycle)
        ));
    }
    for (module, (file, _)) in tree {
        if let Some(layer) = module.first().filter(|l| !layers.contains_key(*l)) {
            found.push(format!(
                "{file}: folder `{layer}` is not a layer of ARCHITECTURE.md: add it to the map"
            ));
        }
    }
    // A layer's crate root is its folder; the command line's is the root package's.
    let crate_root = |module: &[String]| match module.first() {
        Some(layer) if layer == "cli" => Some(Vec::new()),
        Some(layer) if layers.contains_key(layer) => Some(module[..1].to_vec()),
        _ => None,
    };
    found.extend(cycles::import_cycle(tree, &crate_root));
    for (module, (file, src)) in tree {
        let layer = module.first().map(String::as_str).unwrap_or("");
        let code = code_only(src);
        if !matches!(layer, "cli" | "cell" | "") {
            for (n, l) in code.lines().enumerate() {
                if ["println!", "eprintln!", "print!", "eprint!"]
                    .iter()
                    .any(|m| l.contains(m))
                {
                    found.push(format!(
                        "{file}:{}: prints to the terminal; only cli/ does (and cell/, whose stdout and stderr are its protocol)",
                        n + 1
                    ));
                }
            }
        }
    }
    found
}

/// The Rust files under `dir`, at any depth (none when it does not exist).
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The crate's modules under `dir` (lib.rs and main.rs are the root, not a layer).
fn read_tree(root: &Path) -> Tree {
    let files = rust_files(&root.join("harness"));
    let mut tree = Tree::new();
    for path in files {
        let rel = path.strip_prefix(root.join("harness")).unwrap();
        let mut module: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        // A folder's mod.rs, and a layer crate's lib.rs, is the folder's module.
        if module.last().is_some_and(|m| m == "mod") || (module.len() == 2 && module[1] == "lib") {
            module.pop();
        }
        if module == ["lib"] || module == ["main"] {
            module.clear();
        }
        let src = std::fs::read_to_string(&path).unwrap();
        tree.insert(module, (format!("harness/{}", rel.display()), src));
    }
    tree
}

#[test]
fn the_code_follows_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let tree = read_tree(root);
    let layers = declared_layers(&map);
    let mut found = problems(&tree, &layers);
    found.extend(manifests::problems(root, &layers));
    found.extend(recipes::problems(&map, &tree));
    found.extend(cycles::beside_the_harness(root));
    found.extend(names::problems(&tree));
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
}

fn fake(files: &[(&str, &str)]) -> Tree {
    files
        .iter()
        .map(|(module, src)| {
            let m: Vec<String> = module
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            (m, (format!("harness/{module}.rs"), src.to_string()))
        })
        .collect()
}

fn two_layers() -> BTreeMap<String, BTreeSet<String>> {
    declared_layers("```layers\nlow:\nhigh: low\n```")
}

#[test]
fn a_module_name_in_three_crates_is_found_and_in_two_is_not() {
    let two = fake(&[("a::watch", ""), ("b::watch", ""), ("a::x::watch", "")]);
    assert!(names::problems(&two).is_empty());
    let three = fake(&[("a::watch", ""), ("b::watch", ""), ("c::watch", "")]);
    let found = names::problems(&three);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`watch` is in 3 crates (a, b, c)"),
        "{found:?}"
    );
}

#[test]
fn a_cycle_between_files_is_found_and_a_folder_using_its_parts_is_not() {
    let tree = fake(&[
        ("low", "mod a;\nmod b;\npub use a::A;\nfn f() { b::g() }"),
        ("low::a", "use super::b::B;\npub struct A;"),
        ("low::b", "use super::{a::A, self as me};\npub struct B;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
    ]);
    let found = problems(&tree, &two_layers());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("import cycle"), "{found:?}");
    assert!(
        found[0].contains("low::a.rs:1 uses super::b::B"),
        "{found:?}"
    );
    let fixed = fake(&[
        ("low", "mod a;\nmod b;\npub use a::A;"),
        ("low::a", "pub struct A;"),
        (
            "low::b",
            "use super::a::A; // \"crate::high\" in a comment\nconst S: &str = \"crate::high::x\";",
        ),
    ]);
    assert_eq!(problems(&fixed, &two_layers()), Vec::<String>::new());
}

#[test]
fn printing_outside_the_command_line_is_refused() {
    let tree = fake(&[("low", "fn f() { eprintln!(\"x\"); }")]);
    let found = problems(&tree, &two_layers());
    assert!(found[0].contains("prints to the terminal"), "{found:?}");
}
