//! `shmbench check`: the /dev/shm mistakes in deployment files, found before they run.
//! `input` gathers and reads the files, `yaml` parses YAML with line numbers (`yaml_events`
//! builds its trees of `yaml_tree`'s nodes), `kube`, `compose` and `commands` (docker run lines, Slurm scripts) apply
//! the `rules`, sized by `demand` (the doctor's model). Nothing is run; every input is untrusted
//! text.

pub mod commands;
pub mod compose;
pub mod demand;
pub mod format;
pub mod input;
pub mod kube;
pub mod kube_objects;
pub mod rules;
pub mod runtime_class;
pub mod yaml;
pub mod yaml_events;
pub mod yaml_tree;

use std::path::{Path, PathBuf};

use demand::Loaders;
use input::Problem;
use rules::{Finding, Rule};
use runtime_class::RuntimeClasses;

/// What was found in the files.
#[derive(Default, serde::Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Inputs that could not be checked (exit 2), each named.
    pub problems: Vec<Problem>,
    /// Directories not walked on purpose (a symlink loop, too deep): said, not failed on.
    pub skipped: Vec<Problem>,
    pub files: usize,
    /// The directory the paths given are relative to (SARIF's `%SRCROOT%`), when it is known.
    #[serde(skip)]
    pub base: Option<PathBuf>,
}

/// Whether a file is read as YAML (by its name; `-` and named files by their content).
fn yaml_named(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    matches!(ext.as_str(), "yaml" | "yml" | "json")
}

/// Whether a file is read as YAML: by its name, or, unless a shell script, by how its text
/// begins (Kubernetes objects, a compose file).
fn read_as_yaml(path: &Path, text: &str) -> bool {
    yaml_named(path)
        || (path.extension().is_none_or(|e| e != "sh")
            && (text.contains("apiVersion:") || text.starts_with("services:")))
}

/// Checks one file's text (`classes`: the runtime classes every file given defines).
fn check_text(
    path: &Path,
    text: &str,
    classes: &RuntimeClasses,
    loaders: &Loaders,
    report: &mut Report,
) {
    let file = path.display().to_string();
    if read_as_yaml(path, text) {
        let parsed = yaml::documents(text);
        for doc in &parsed.docs {
            if kube::is_kubernetes(doc) {
                kube::check(doc, &file, loaders, classes, &mut report.findings);
            } else if compose::is_compose(doc) {
                compose::check(doc, &file, loaders, &mut report.findings);
            }
        }
        // A file read as YAML by its content only may be something else that parses badly.
        if yaml_named(path) {
            report
                .problems
                .extend(parsed.errors.into_iter().map(|e| Problem {
                    line: Some(e.line),
                    reason: format!("not YAML: {}", e.reason),
                    ..Problem::new(path, "")
                }));
        }
    }
    commands::check(text, &file, loaders, &mut report.findings);
}

/// Checks every file under `paths`; findings of the rules in `ignore` are left out.
pub fn run(paths: &[PathBuf], loaders: &Loaders, ignore: &[&'static Rule]) -> Report {
    let gathered = input::gather(paths);
    let mut report = Report {
        problems: gathered.problems,
        skipped: gathered.skipped,
        base: std::env::current_dir().ok(),
        ..Report::default()
    };
    // The runtime classes first: one may be defined in one file and named by pods in another.
    // Only files that mention one are parsed for them, and none is kept: memory stays one
    // file's, however many are given.
    let mut classes = RuntimeClasses::default();
    // Standard input can be read once: its text is kept for the second pass.
    let mut stdin = None;
    for path in &gathered.files {
        let read = input::read(path);
        if let Ok(text) = &read {
            if text.contains("RuntimeClass") && read_as_yaml(path, text) {
                for doc in &yaml::documents(text).docs {
                    classes.collect(doc);
                }
            }
        }
        if path.as_os_str() == "-" {
            stdin = Some(read);
        }
    }
    for path in &gathered.files {
        let read = match path.as_os_str() == "-" {
            true => stdin.take().unwrap_or_else(|| input::read(path)),
            false => input::read(path),
        };
        match read {
            Ok(text) => {
                report.files += 1;
                check_text(path, &text, &classes, loaders, &mut report);
            }
            Err(problem) => report.problems.push(problem),
        }
    }
    report
        .findings
        .retain(|f| !ignore.iter().any(|r| r.id == f.rule.id));
    report
        .findings
        .sort_by(|a, b| (&a.file, a.line, a.rule.id).cmp(&(&b.file, b.line, b.rule.id)));
    report
}
