//! Import cycles between the files of one crate: the layers' (read by `main`), and the crates
//! beside the harness, which have no layers but must not be one circle either (the test command
//! once was: its registry of requirements was also the helpers every requirement imported).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::scan::imports;
use crate::{rust_files, Tree};

/// The crates beside the harness whose files must import one another without a cycle: the
/// test command, the integration tests' binary and this checker. (directory, root file, folders
/// under it that are other crates.)
const CRATES: [(&str, &str, &[&str]); 3] = [
    ("xtask/src", "main.rs", &[]),
    ("tests", "tests.rs", &["architecture", "python", "fixtures"]),
    ("tests/architecture", "main.rs", &[]),
];

/// The import cycle of each crate beside the harness, one line each.
pub fn beside_the_harness(root: &Path) -> Vec<String> {
    CRATES
        .iter()
        .flat_map(|(dir, root_file, others)| {
            let tree = read_crate(&root.join(dir), dir, root_file, others);
            import_cycle(&tree, &|_: &[String]| Some(Vec::new()))
        })
        .collect()
}

/// The files of the crate in `dir` (its root file the root module, a folder's `mod.rs` the
/// folder's), leaving out the folders `others` (crates of their own).
fn read_crate(dir: &Path, shown: &str, root_file: &str, others: &[&str]) -> Tree {
    let mut tree = Tree::new();
    for path in rust_files(dir) {
        let rel = path.strip_prefix(dir).unwrap();
        if rel
            .iter()
            .next()
            .is_some_and(|first| rel.components().count() > 1 && others.iter().any(|o| first == *o))
        {
            continue;
        }
        let mut module: Vec<String> = rel
            .with_extension("")
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        if rel == Path::new(root_file) {
            module.clear();
        }
        let src = std::fs::read_to_string(&path).unwrap();
        tree.insert(module, (format!("{shown}/{}", rel.display()), src));
    }
    tree
}

/// The first import cycle between the files of `tree`, as a line naming each step's file and
/// line; `crate_root` gives each module's crate root (None: not checked). A folder using its own
/// parts (its mod.rs, a crate's root) is how a folder is built, not a cycle.
pub fn import_cycle(
    tree: &Tree,
    crate_root: &dyn Fn(&[String]) -> Option<Vec<String>>,
) -> Option<String> {
    let known: BTreeSet<Vec<String>> = tree.keys().cloned().collect();
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut lines: BTreeMap<(Vec<String>, Vec<String>), (usize, String)> = BTreeMap::new();
    for (module, (_, src)) in tree {
        graph.entry(module.clone()).or_default();
        let Some(root) = crate_root(module) else {
            continue;
        };
        for import in imports(module, &root, src, &known) {
            if import.target.starts_with(module) {
                continue;
            }
            lines
                .entry((module.clone(), import.target.clone()))
                .or_insert((import.line, import.written.clone()));
            graph
                .entry(module.clone())
                .or_default()
                .insert(import.target);
        }
    }
    let cycle = find_cycle(&graph)?;
    let steps: Vec<String> = cycle
        .windows(2)
        .map(|w| {
            let (line, written) = &lines[&(w[0].clone(), w[1].clone())];
            format!("{}:{line} uses {written}", tree[&w[0]].0)
        })
        .collect();
    Some(format!(
        "import cycle {}: {}",
        show(&cycle),
        steps.join("; ")
    ))
}

pub fn show(cycle: &[Vec<String>]) -> String {
    cycle
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// A cycle in `graph` (first node repeated at the end), if there is one.
pub fn find_cycle(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Option<Vec<Vec<String>>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        marks: &mut BTreeMap<Vec<String>, Mark>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| n == node)?;
                let mut cycle = stack[from..].to_vec();
                cycle.push(node.clone());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.clone(), Mark::Open);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, marks, stack) {
                return Some(c);
            }
        }
        stack.pop();
        marks.insert(node.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if let Some(c) = visit(node, graph, &mut marks, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn a_circle_between_the_files_of_a_crate_beside_the_harness_is_found() {
    let dir = std::env::temp_dir().join(format!("shmbench-cycles-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("common")).unwrap();
    let write = |file: &str, src: &str| std::fs::write(dir.join(file), src).unwrap();
    // The test command's old shape: a registry that is also the helpers its entries import.
    write(
        "main.rs",
        "mod needs;\nmod docker;\nmod common;\nfn main() { needs::all(); }",
    );
    write(
        "needs.rs",
        "use crate::docker;\npub fn run() {}\npub fn all() { docker::f() }",
    );
    write("docker.rs", "use crate::needs::run;\npub fn f() { run() }");
    write("common/mod.rs", "mod helpers;\npub use helpers::h;");
    write("common/helpers.rs", "pub fn h() {}");
    let tree = read_crate(&dir, "xtask/src", "main.rs", &[]);
    let found = import_cycle(&tree, &|_: &[String]| Some(Vec::new()));
    std::fs::remove_dir_all(&dir).unwrap();
    let found = found.expect("the circle is found");
    assert!(
        found.contains("xtask/src/docker.rs:1 uses crate::needs::run"),
        "{found}"
    );
    assert!(
        !found.contains("common"),
        "a folder using its parts is no circle: {found}"
    );
}
