//! `shmbench check` on hostile inputs: names and values that try to command a CI runner through
//! the report, files nested far deeper than a recursive parser survives, a merge into a mapping
//! of a million keys, a FIFO or a device named as a file, and a broken document among good
//! ones. Each is named (exit 2) or reported safely, and everything else is still checked.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/check")
        .join(name)
}

/// A fixture's text without its `# expect:` line.
fn fixture_body(name: &str) -> String {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    text.split_once('\n').unwrap().1.to_string()
}

/// `shmbench check ARGS` run in `dir`, waited for at most a few minutes: a check that blocks
/// (on a FIFO) is killed and fails the test instead of hanging it.
fn check_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = common::command_in(dir)
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "shmbench check {args:?} never ended: {:?}",
                child.wait_with_output()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A pod whose names carry a newline and a workflow command, CR, ESC and a legacy command.
const EVIL: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"p\\n::error file=evil.yaml,line=1::x\"\nspec:\n  containers:\n    - name: \"c\\r\\n  ::warning::y\\e[2J ##[set-output name=a]b\"\n      image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\n";

/// Whether a runner would read a line as a workflow command (`::` after leading space, or the
/// older `##[` anywhere).
fn commands_a_runner(line: &str) -> bool {
    line.trim_start().starts_with("::") || line.contains("##[")
}

#[test]
fn data_never_commands_a_runner_through_the_report() {
    let dir = common::temp_dir("check-evil");
    // A file name that would itself start a line with a command, as given relative.
    let name = "::error file=a,line=1::n.yaml";
    std::fs::write(dir.join(name), EVIL).unwrap();
    let text = check_in(&dir, &[name]);
    let said = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.status.code(), Some(1), "{said}");
    assert!(said.contains("SHM001"), "{said}");
    for line in said.lines() {
        assert!(
            !commands_a_runner(line),
            "a command in the text: {line:?}\n{said}"
        );
        assert!(
            !line.contains(['\r', '\u{1b}']),
            "a control character: {line:?}"
        );
    }
    assert!(
        said.starts_with("\\u{3a}:error file=a,line=1::n.yaml:7: error SHM001"),
        "{said}"
    );
    assert!(said.contains("in Pod/p\\n::error file=evil.yaml"), "{said}");
    // JSON keeps the data exact for its readers, escaped where a runner would read it.
    for format in ["json", "sarif"] {
        let out = check_in(&dir, &["--format", format, name]);
        let said = String::from_utf8(out.stdout.clone()).unwrap();
        assert!(
            said.lines().all(|l| !commands_a_runner(l)),
            "{format}: {said}"
        );
        assert!(
            common::json_of(&out)
                .to_string()
                .contains("##[set-output name=a]b"),
            "{said}"
        );
    }
    // GitHub's own format: one annotation per finding, data escaped inside it.
    let out = check_in(&dir, &["--format", "github", name]);
    let said = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].starts_with("::error file=%3A%3Aerror file=a%2Cline=1%3A%3An.yaml,line="),
        "{said}"
    );
    assert!(
        lines[0].contains("Pod/p%0A::error file=evil.yaml"),
        "{said}"
    );
    assert!(!said.contains('\r'), "{said}");
}

#[test]
fn github_notes_are_notices() {
    let out = check_in(
        Path::new("/"),
        &[
            "--format",
            "github",
            fixture("shm005-fail.yaml").to_str().unwrap(),
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("::notice file="), "{said}");
}

#[test]
fn nesting_too_deep_is_named_before_the_parser_recurses() {
    let dir = common::temp_dir("check-deep");
    let ci = dir.join("ci");
    std::fs::create_dir(&ci).unwrap();
    std::fs::write(ci.join("zz.yaml"), format!("{}x\n", "- ".repeat(25_000))).unwrap();
    std::fs::write(
        ci.join("flow.yaml"),
        format!("{}1{}\n", "[".repeat(25_000), "]".repeat(25_000)),
    )
    .unwrap();
    std::fs::write(ci.join("good.yaml"), fixture_body("shm006-fail.yaml")).unwrap();
    let out = check_in(&dir, &["ci/", "--format", "sarif"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::json_of(&out);
    let run = &doc["runs"][0];
    let notes = run["invocations"][0]["toolExecutionNotifications"].to_string();
    assert!(
        notes.contains("ci/zz.yaml") && notes.contains("deeper than 200"),
        "{notes}"
    );
    assert!(notes.contains("ci/flow.yaml"), "{notes}");
    let results = run["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["ruleId"] == "SHM006"),
        "the rest is checked: {run:#}"
    );
}

#[test]
fn a_merge_into_a_mapping_of_many_keys_is_linear() {
    // 300,000 keys of its own and 30,000 merged: 9 billion key comparisons when each merged
    // key was looked for among the mapping's; a pass over a set now.
    let dir = common::temp_dir("check-merge");
    let mut text = String::from("base: &base\n");
    for i in 0..30_000 {
        text.push_str(&format!("  m{i}: 1\n"));
    }
    text.push_str("big:\n  <<: *base\n");
    for i in 0..300_000 {
        text.push_str(&format!("  k{i}: 1\n"));
    }
    std::fs::write(dir.join("merge.yaml"), text).unwrap();
    let out = check_in(&dir, &["merge.yaml"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("1 file(s) checked: 0 error(s)"), "{said}");
}

#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let dir = common::temp_dir("check-fifo");
    let fifo = dir.join("pipe.yaml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::create_dir(dir.join("deploy")).unwrap();
    nix::unistd::mkfifo(
        &dir.join("deploy/walked.yaml"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    std::fs::write(
        dir.join("deploy/good.yaml"),
        fixture_body("shm006-fail.yaml"),
    )
    .unwrap();
    let out = check_in(&dir, &["pipe.yaml", "/dev/null", "deploy"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("pipe.yaml: cannot check: a FIFO: only regular files are read"),
        "{said}"
    );
    assert!(said.contains("/dev/null: cannot check: a device"), "{said}");
    assert!(
        said.contains("deploy/good.yaml:15: warning SHM006"),
        "{said}"
    );
    assert!(
        !said.contains("walked.yaml"),
        "a FIFO in a directory is not a deployment file: {said}"
    );
}

#[test]
fn one_broken_document_costs_only_itself() {
    let dir = common::temp_dir("check-multi");
    let good = fixture_body("shm006-fail.yaml");
    let text = format!("{good}---\napiVersion: v1\nkind: Pod\nspec: [1, 2\n  x: {{\n---\n{good}");
    std::fs::write(dir.join("multi.yaml"), &text).unwrap();
    let out = check_in(&dir, &["--format", "json", "multi.yaml"]);
    let doc = common::json_of(&out);
    assert_eq!(out.status.code(), Some(2), "{doc:#}");
    let lines: Vec<u64> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    let third = good.lines().count() as u64 + 6;
    assert_eq!(lines, [15, 15 + third], "{doc:#}");
    let problem = &doc["problems"][0];
    assert!(
        problem["reason"].as_str().unwrap().starts_with("not YAML"),
        "{doc:#}"
    );
    let at = problem["line"].as_u64().unwrap();
    assert!(at > good.lines().count() as u64 && at < third, "{doc:#}");
}

#[test]
fn aliases_of_aliases_are_walked_within_a_bound() {
    // Nine levels of nine aliases under a Job's spec: 387 million nodes if walked through
    // every alias; the walk through aliases stops at its bound, and the pod is still found.
    let dir = common::temp_dir("check-laughs");
    let mut text = String::from("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n");
    text.push_str("  l0: &l0 [x]\n");
    for i in 1..10 {
        let items = format!("*l{}, ", i - 1).repeat(9);
        text.push_str(&format!("  l{i}: &l{i} [{items}]\n"));
    }
    text.push_str("  template:\n    spec:\n      containers:\n");
    text.push_str("        - {name: t, image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime}\n");
    std::fs::write(dir.join("laughs.yaml"), text).unwrap();
    let out = check_in(&dir, &["--format", "json", "laughs.yaml"]);
    let doc = common::json_of(&out);
    let ids = common::rule_ids(&doc);
    assert_eq!(ids, ["SHM001"], "{doc:#}");
}
