//! `cargo xtask fast`: the edit loop's tier. Formatting, lints, every crate's unit tests, the
//! source checks and the integration tests that touch no machine state, in the dev profile
//! (incremental, so an edit rebuilds in seconds) and with no set-up: nothing here needs Docker,
//! torch, Slurm or root. The full suite (`cargo xtask test`) is what CI runs; run it before
//! pushing a change to anything a cell, a runtime or the sweep does.
//!
//! Which integration tests are pure is read from them: a module of `tests/tests.rs` none of
//! whose tests takes `common::serial()`, `second_serial()` or `slurm_serial()` (the locks every test touching the
//! machine holds) runs here, so a new pure test file joins the tier by itself. Its tests are
//! named exactly (from the binary's `--list`), so a filter never catches another file's. What
//! needs the full set-up (the SARIF and Kubernetes schema checks' venvs, the plots' font where
//! it is missing) is skipped by name, and said.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use crate::tools::DEJAVU;

/// The modules of `tests/tests.rs` that never take the machine lock.
fn pure_modules(root: &Path) -> Vec<String> {
    let list = std::fs::read_to_string(root.join("tests/tests.rs")).unwrap_or_default();
    list.lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .filter(|m| {
            std::fs::read_to_string(root.join(format!("tests/{m}.rs")))
                // `serial()` also finds `second_serial()` and `slurm_serial()`.
                .is_ok_and(|src| !src.contains("serial()"))
        })
        .map(String::from)
        .collect()
}

/// Runs `cargo ARGS`, saying what and how long; false when it failed.
fn step(cargo: &str, args: &[&str]) -> bool {
    let shown = match args.len() {
        n if n > 12 => format!("{} ... ({} more)", args[..8].join(" "), n - 8),
        _ => args.join(" "),
    };
    println!("== cargo {shown}");
    let began = Instant::now();
    let ok = Command::new(cargo)
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    let took = began.elapsed().as_secs_f64();
    println!("== {} in {took:.1} s", if ok { "ok" } else { "FAILED" });
    ok
}

/// The integration tests of the `pure` modules, by their full names (built and listed first).
fn pure_tests(cargo: &str, pure: &[String]) -> Option<Vec<String>> {
    let listed = Command::new(cargo)
        .args([
            "test",
            "--test",
            "integration",
            "--",
            "--list",
            "--format",
            "terse",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let names = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .filter(|name| {
            name.split_once("::")
                .is_some_and(|(module, _)| pure.iter().any(|p| p == module))
        })
        .map(String::from)
        .collect();
    Some(names)
}

/// The requirements this tier does not set up, skipped by name (the full suite runs them).
fn skipped() -> Vec<(&'static str, &'static str)> {
    let mut skip = vec![
        (
            "SHMBENCH_SKIP_SARIF",
            "the SARIF schema check (a venv the set-up makes)",
        ),
        (
            "SHMBENCH_SKIP_K8S_VALIDATE",
            "the Kubernetes schema checks (a venv the set-up makes)",
        ),
        (
            "SHMBENCH_SKIP_PROMETHEUS",
            "the alert rules' promtool tests (programs the set-up unpacks)",
        ),
    ];
    if !Path::new(DEJAVU).is_file() {
        skip.push((
            "SHMBENCH_SKIP_FONT",
            "the plots' images (no TrueType font here)",
        ));
    }
    skip.retain(|(var, _)| std::env::var_os(var).is_none());
    skip
}

/// A file past this many lines is named after the run: a hint to look for a concept to cut out
/// of it, never a failure (files are cut by concept, not by size: ARCHITECTURE.md).
const LONG_FILE: usize = 400;

/// Names the Rust files of the workspace past `LONG_FILE` lines, longest first.
fn say_long_files(root: &Path) {
    fn walk(dir: &Path, out: &mut Vec<(usize, String)>, root: &Path) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out, root);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let lines = std::fs::read_to_string(&path).map_or(0, |s| s.lines().count());
                if lines > LONG_FILE {
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    out.push((lines, rel.display().to_string()));
                }
            }
        }
    }
    let mut long = Vec::new();
    for dir in ["harness", "tests", "xtask/src", "benches"] {
        walk(&root.join(dir), &mut long, root);
    }
    long.sort_by(|a, b| b.cmp(a));
    if !long.is_empty() {
        let named: Vec<String> = long.iter().map(|(n, f)| format!("{f} ({n})")).collect();
        println!(
            "== a hint, not a failure: files over {LONG_FILE} lines, is a concept to cut out? {}",
            named.join(", ")
        );
    }
}

pub fn run() -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = crate::host::workspace_root();
    let began = Instant::now();
    for (var, what) in skipped() {
        println!("== skipped here: {what} ({var}=1; `cargo xtask test` runs it)");
        std::env::set_var(var, "1");
    }
    // The tests' temporary directories, those a test keeps included (a report's), go in a
    // scratch directory of this run and leave with it, as under `cargo xtask test`.
    let scratch = crate::scratch::Scratch::create();
    if let Some(dir) = &scratch {
        std::env::set_var(crate::scratch::VARIABLE, dir.path());
    }
    let steps: [&[&str]; 4] = [
        &["fmt", "--all", "--check"],
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        // Every crate's own tests (the layers' pure functions), and the source checks.
        &["test", "--workspace", "--lib", "--bins"],
        &["test", "--test", "architecture"],
    ];
    // Every step runs, even after one fails, as the full suite does.
    let mut failed = steps.iter().filter(|args| !step(&cargo, args)).count();
    let pure = pure_modules(&root);
    match pure_tests(&cargo, &pure) {
        Some(names) if !names.is_empty() => {
            let mut args = vec!["test", "--test", "integration", "--", "--exact"];
            args.extend(names.iter().map(String::as_str));
            println!(
                "== the {} tests of the pure test files: {}",
                names.len(),
                pure.join(", ")
            );
            if !step(&cargo, &args) {
                failed += 1;
            }
        }
        // Never the whole suite by accident: no list, or no pure file, is a failure to say.
        _ => {
            eprintln!("== cannot list the pure integration tests (tests/tests.rs, `--list`)");
            failed += 1;
        }
    }
    say_long_files(&root);
    if scratch.is_some_and(|dir| !dir.remove_and_say()) {
        failed += 1;
    }
    let took = began.elapsed().as_secs_f64();
    if failed == 0 {
        println!("== fast tier passed in {took:.1} s; `cargo xtask test` runs everything");
        ExitCode::SUCCESS
    } else {
        eprintln!("== fast tier: {failed} step(s) failed after {took:.1} s");
        ExitCode::from(1)
    }
}
