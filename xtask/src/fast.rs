//! `cargo xtask fast`: the edit loop's tier. Formatting, lints, every crate's unit tests, the
//! source checks and the integration tests that touch no machine state, in the dev profile
//! (incremental, so an edit rebuilds in seconds) and with no set-up: nothing here needs Docker,
//! torch, Slurm or root. The full suite (`cargo xtask test`) is what CI runs; run it before
//! pushing a change to anything a cell, a runtime or the sweep does.
//!
//! Which integration tests are pure is read from them: a module of `tests/tests.rs` none of
//! whose tests takes `common::serial()` (the lock every test touching the machine holds) runs
//! here, so a new pure test file joins the tier by itself.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The modules of `tests/tests.rs` that never take the machine lock.
fn pure_modules(root: &Path) -> Vec<String> {
    let list = std::fs::read_to_string(root.join("tests/tests.rs")).unwrap_or_default();
    list.lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .filter(|m| {
            std::fs::read_to_string(root.join(format!("tests/{m}.rs")))
                .is_ok_and(|src| !src.contains("serial()"))
        })
        .map(String::from)
        .collect()
}

/// Runs `cargo ARGS`, saying what and how long; false when it failed.
fn step(cargo: &str, args: &[&str]) -> bool {
    println!("== cargo {}", args.join(" "));
    let began = Instant::now();
    let ok = Command::new(cargo)
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    let took = began.elapsed().as_secs_f64();
    println!("== {} in {took:.1} s", if ok { "ok" } else { "FAILED" });
    ok
}

pub fn run() -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let began = Instant::now();
    let pure = pure_modules(&root);
    // libtest runs the tests whose names contain any of the filters: `check::` and so on.
    let filters: Vec<String> = pure.iter().map(|m| format!("{m}::")).collect();
    let mut integration = vec!["test", "--test", "integration", "--"];
    integration.extend(filters.iter().map(String::as_str));
    let steps: [&[&str]; 5] = [
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
        &integration,
    ];
    // Every step runs, whichever fails first, as the full suite does.
    let failed = steps.iter().filter(|args| !step(&cargo, args)).count();
    let took = began.elapsed().as_secs_f64();
    if failed == 0 {
        println!(
            "== fast tier passed in {took:.1} s ({} pure test files: {}); `cargo xtask test` runs everything",
            pure.len(),
            pure.join(", ")
        );
        ExitCode::SUCCESS
    } else {
        eprintln!("== fast tier: {failed} step(s) failed after {took:.1} s");
        ExitCode::from(1)
    }
}
