//! `shmbench check` on files: every fixture of `tests/fixtures/check/` raises exactly the rules
//! its first line names; the formats CI reads are what they claim (GitHub annotations with file
//! and line, SARIF 2.1.0 valid against the official schema); bad inputs (malformed YAML, a
//! binary file, a 50 MB file, a directory loop) give a clear error or a bounded run, never a
//! panic, and the rest is still checked.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check")
}

fn check(args: &[&str]) -> Output {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    common::shmbench(&all)
}

/// The rule ids a fixture's first line expects (`# expect: SHM001 SHM001`, `# expect: none`).
fn expected(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or_default();
    let list = first
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("{}: no `# expect:` line", path.display()));
    let mut ids: Vec<String> = list
        .split_whitespace()
        .filter(|w| *w != "none")
        .map(String::from)
        .collect();
    ids.sort();
    ids
}

#[test]
fn every_fixture_raises_exactly_the_rules_it_expects() {
    let mut seen_rules = std::collections::BTreeSet::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    for file in files {
        let out = check(&["--format", "json", file.to_str().unwrap()]);
        let doc = common::json_of(&out);
        let mut got = common::rule_ids(&doc);
        got.sort();
        let want = expected(&file);
        assert_eq!(got, want, "{}: {doc:#}", file.display());
        let failing = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"]["severity"] != "note");
        assert_eq!(
            out.status.code(),
            Some(i32::from(failing)),
            "{}",
            file.display()
        );
        seen_rules.extend(want);
    }
    // Every rule has a failing fixture (and the passing ones above hold the rest to none).
    let doc = common::json_of(&check(&["--format", "json", fixtures().to_str().unwrap()]));
    for rule in doc["rules"].as_array().unwrap() {
        let id = rule["id"].as_str().unwrap();
        assert!(seen_rules.contains(id), "no fixture raises {id}");
    }
}

#[test]
fn loaders_given_hold_every_workload_to_their_need() {
    // 8 ranks x 8 workers x 2 x 73.5 MiB: far above the 4 GiB the passing fixture gives.
    let file = fixtures().join("shm001-pass-deployment.yaml");
    let out = check(&[
        "--format",
        "json",
        "--loaders",
        "train:8x2x128",
        "--ranks",
        "8",
        file.to_str().unwrap(),
    ]);
    let doc = common::json_of(&out);
    let ids = common::rule_ids(&doc);
    assert_eq!(ids, ["SHM004"], "{doc:#}");
    let fix = doc["findings"][0]["fix"].as_str().unwrap();
    assert!(
        fix.contains("sizeLimit:"),
        "the fix is the doctor's, sized: {fix}"
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_compose_fix_names_the_service_and_file_it_is_for() {
    let file = fixtures().join("shm010-fail-compose-merge.yaml");
    let doc = common::json_of(&check(&["--format", "json", file.to_str().unwrap()]));
    let fixes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fix"].as_str().unwrap())
        .collect();
    assert_eq!(fixes.len(), 2, "{doc:#}");
    assert!(
        fixes[0].contains("\n  webui:\n    shm_size:"),
        "{}",
        fixes[0]
    );
    assert!(
        fixes[1].contains("\n  batch:\n    shm_size:"),
        "{}",
        fixes[1]
    );
    assert!(
        fixes[0].starts_with(&format!("# {}", file.display())),
        "{}",
        fixes[0]
    );
}

#[test]
fn github_annotations_name_the_file_and_line() {
    let file = fixtures().join("shm003-fail.yaml");
    let out = check(&["--format", "github", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or_default();
    assert!(line.starts_with("::warning file="), "{text}");
    assert!(
        line.contains("shm003-fail.yaml,line=20,title=SHM003 size-limit-over-memory-limit::"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "one line per finding: {text}");
}

#[test]
fn warnings_pass_when_only_errors_fail() {
    let file = fixtures().join("shm003-fail.yaml");
    let out = check(&["--fail-on", "error", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = check(&["--ignore", "SHM003", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = check(&["--ignore", "SHM999", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such rule"));
}

#[test]
fn stdin_is_read_as_helm_template_output_would_be() {
    let text = std::fs::read(fixtures().join("shm001-fail-deployment.yaml")).unwrap();
    let mut child = Command::new(common::BIN)
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &text).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("-:15: error SHM001"), "{said}");
}

#[test]
fn bad_inputs_are_named_and_the_rest_still_checked() {
    let dir = common::temp_dir("check-bad");
    std::fs::write(
        dir.join("broken.yaml"),
        "apiVersion: v1\nkind: Pod\nspec: [1, 2\n  x: {\n",
    )
    .unwrap();
    std::fs::write(dir.join("binary.yaml"), b"\x7fELF\x00\x00\x01binary").unwrap();
    // 50 MB: refused by its size, never parsed.
    let big = std::fs::File::create(dir.join("huge.yaml")).unwrap();
    big.set_len(50_000_000).unwrap();
    std::os::unix::fs::symlink(&*dir, dir.join("loop")).unwrap();
    std::fs::copy(fixtures().join("shm006-fail.yaml"), dir.join("good.yaml")).unwrap();
    let out = check(&[dir.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("broken.yaml:4: cannot check: not YAML"),
        "{said}"
    );
    assert!(
        said.contains("binary.yaml: cannot check: a binary file"),
        "{said}"
    );
    assert!(
        said.contains("huge.yaml: cannot check: larger than 16 MiB"),
        "{said}"
    );
    assert!(
        said.contains("skipped: a directory already walked"),
        "{said}"
    );
    assert!(
        said.contains("good.yaml:16: warning SHM006"),
        "the rest is checked: {said}"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

/// The official SARIF 2.1.0 schema, as `cargo xtask test` finds it (SHMBENCH_SARIF_SCHEMA),
/// and a Python with `jsonschema` to hold a document to it.
fn sarif_validator() -> Option<(PathBuf, PathBuf)> {
    let found = || {
        std::env::var_os("SHMBENCH_SARIF_SCHEMA").is_some_and(|p| Path::new(&p).is_file())
            && std::env::var_os("SHMBENCH_SARIF_PYTHON").is_some()
    };
    if !common::require(
        "sarif",
        found,
        "the SARIF 2.1.0 schema and a Python with jsonschema",
    ) {
        return None;
    }
    Some((
        std::env::var_os("SHMBENCH_SARIF_SCHEMA").unwrap().into(),
        std::env::var_os("SHMBENCH_SARIF_PYTHON").unwrap().into(),
    ))
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0() {
    let Some((schema, python)) = sarif_validator() else {
        return;
    };
    let dir = common::temp_dir("check-sarif");
    std::fs::write(dir.join("broken.yaml"), "a: [1\n").unwrap();
    // From the repository: the fixtures relative to it, the broken file outside it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = common::command_in(root)
        .args(["check", "--format", "sarif", "./tests/fixtures/check"])
        .arg(dir.join("broken.yaml"))
        .output()
        .unwrap();
    let doc = common::json_of(&out);
    assert_eq!(doc["version"], "2.1.0");
    let run = &doc["runs"][0];
    assert!(run["results"].as_array().unwrap().len() >= 10);
    let location = &run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(location["uriBaseId"], "%SRCROOT%", "{location}");
    let uri = location["uri"].as_str().unwrap();
    assert!(uri.starts_with("tests/fixtures/check/"), "{uri}");
    let base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        base.starts_with("file:///") && base.ends_with('/'),
        "{base}"
    );
    let outside = &run["invocations"][0]["toolExecutionNotifications"][0]["locations"][0];
    let outside = outside["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        outside.starts_with("file:///") && outside.ends_with("/broken.yaml"),
        "{outside}"
    );
    let sarif = dir.join("out.sarif");
    let script = "import json, sys, jsonschema\nschema = json.load(open(sys.argv[1]))\ndoc = json.load(open(sys.argv[2]))\njsonschema.validators.validator_for(schema)(schema).validate(doc)\nprint('valid')\n";
    let valid = |doc: &Value| {
        std::fs::write(&sarif, doc.to_string()).unwrap();
        let run = Command::new(&python)
            .args(["-c", script])
            .arg(&schema)
            .arg(&sarif)
            .output()
            .unwrap();
        (
            run.status.success(),
            String::from_utf8_lossy(&run.stderr).into_owned(),
        )
    };
    let (ok, why) = valid(&doc);
    assert!(ok, "not valid SARIF 2.1.0: {why}");
    // The validator bites: the same document as SARIF 2.0 is refused.
    let mut wrong = doc.clone();
    wrong["version"] = Value::from("2.0.0");
    assert!(!valid(&wrong).0, "a wrong version passed the schema");
}

/// The `sizeLimit:` a finding's fix gives, and its message.
fn size_limit_and_message(args: &[&str]) -> (String, String) {
    let doc = common::json_of(&check(args));
    let finding = &doc["findings"][0];
    let fix = finding["fix"].as_str().unwrap_or_default();
    let limit = fix
        .lines()
        .find_map(|l| l.trim().strip_prefix("sizeLimit:"))
        .unwrap_or_else(|| panic!("no sizeLimit in {doc:#}"));
    (
        limit.trim().to_string(),
        finding["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_ranks_come_from_the_workload_when_not_given() {
    // torchrun's eight ranks on eight GPUs: sized as --ranks 8 sizes it, and said where from.
    let file = fixtures().join("shm001-fail-pytorchjob-eight-gpus.yaml");
    let file = file.to_str().unwrap();
    let (own, message) = size_limit_and_message(&["--format", "json", file]);
    let (given, _) = size_limit_and_message(&["--format", "json", "--ranks", "8", file]);
    assert_eq!(own, given, "{message}");
    assert!(
        message.contains("x 8 ranks (--nproc_per_node=8 in its command)"),
        "{message}"
    );
    // --ranks still wins over what the workload says.
    let (one, _) = size_limit_and_message(&["--format", "json", "--ranks", "1", file]);
    assert_ne!(one, own);
    // Slurm's GPUs per node, when nothing launches more.
    let script = fixtures().join("shm030-fail-gres.sbatch");
    let doc = common::json_of(&check(&["--format", "json", script.to_str().unwrap()]));
    let message = doc["findings"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("x 4 ranks (#SBATCH --gres=gpu:4)"),
        "{message}"
    );
}

#[test]
fn help_lists_every_rule_of_the_rule_table() {
    let o = check(&["--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{help}");
    for rule in shmbench::check::rules::RULES {
        let line = format!("  {} {} ({})", rule.id, rule.name, rule.severity.word());
        assert!(help.contains(&line), "no `{line}` in\n{help}");
    }
}

/// docs/RUNTIMES.md's table in the check: Podman's own default /dev/shm, and what a sandboxed
/// runtime class does to a Memory emptyDir.
#[test]
fn podman_lines_and_sandboxed_runtime_classes_are_judged_by_the_measured_table() {
    let said = |name: &str| {
        let file = fixtures().join(name);
        String::from_utf8_lossy(&check(&[file.to_str().unwrap()]).stdout).into_owned()
    };
    let podman = said("shm020-fail-podman-rootless.sh");
    assert!(
        podman.contains("Podman's 62.5 MiB (size=64000k"),
        "{podman}"
    );
    // The fix in the line's own engine's words.
    assert!(
        podman.contains("podman run --shm-size=") && !podman.contains("docker run"),
        "{podman}"
    );
    let kata = said("shm007-fail-kata.yaml");
    assert!(
        kata.contains("kata-qemu is Kata") && kata.contains("not by its sizeLimit 2 GiB"),
        "{kata}"
    );
    let gvisor = said("shm008-fail-gvisor.yaml");
    assert!(
        gvisor.contains("note SHM008") && gvisor.contains("ends the whole sandbox"),
        "{gvisor}"
    );
    // A class is what its handler is, when a file given defines it, in any of the files.
    let fixture = fixtures().join("shm008-fail-runtimeclass-handler.yaml");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let (class, pod) = text.split_once("\n---\n").unwrap();
    let dir = crate::common::temp_dir("check-classes");
    std::fs::write(dir.join("class.yaml"), class).unwrap();
    std::fs::write(dir.join("pod.yaml"), pod).unwrap();
    let apart = String::from_utf8_lossy(&check(&[dir.to_str().unwrap()]).stdout).into_owned();
    assert!(
        apart.contains("runtimeClassName sandboxed (handler runsc) is gVisor"),
        "{apart}"
    );
    let alone = dir.join("pod.yaml");
    let unknown = String::from_utf8_lossy(&check(&[alone.to_str().unwrap()]).stdout).into_owned();
    assert!(
        !unknown.contains("SHM008"),
        "sandboxed alone names no runtime: {unknown}"
    );
}
