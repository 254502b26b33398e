//! `cargo xtask test`: the README's test command. It sets up, idempotently, everything the tests
//! need on this machine (the tools and fonts the tests use, the Docker engine, a cached venv with
//! torch, a one-node Slurm cluster and a seven-node one), says what it does and how long each step took, then runs
//! `cargo test --release` with any extra arguments, and stops the cluster after.
//!
//! `cargo xtask setup` does the set-up alone. A requirement the user skips by name
//! (`SHMBENCH_SKIP_DOCKER=1`, `SHMBENCH_SKIP_TORCH=1`, `SHMBENCH_SKIP_K8S_VALIDATE=1`,
//! `SHMBENCH_SKIP_VM=1`, `SHMBENCH_SKIP_SLURM=1`, `SHMBENCH_SKIP_SARIF=1`) is not
//! set up, and the tests that need it
//! say they were skipped.

mod apt;
mod docker;
mod fast;
mod host;
mod lanes;
mod oci_runtimes;
mod prometheus;
mod pypi;
mod requirement;
mod rootless;
mod sarif;
mod scratch;
mod slurm;
mod tools;
mod torch;
mod venv;
mod vm;
mod wheel;

use std::process::{Command, ExitCode};

use requirement::Requirement;
use std::time::Instant;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  test [ARGS...]   set up what the tests need, then run
                   `cargo test --release --workspace --no-fail-fast [ARGS...]`
  fast             the edit loop: fmt, clippy, unit tests, source checks and the pure
                   integration tests, in the dev profile, with no set-up (under a minute after
                   an edit once built; the first build takes 5 minutes or more)
  setup            set up what the tests need, run nothing (the Slurm cluster stays up)
  stop             stop what the set-up started (the Slurm cluster)

examples:
  cargo xtask test                      # everything, as CI runs it
  cargo xtask fast                      # after an edit: the tier that needs nothing set up
  cargo xtask test --test integration cells::   # one test file, after the same set-up
  SHMBENCH_SKIP_DOCKER=1 cargo xtask test   # no Docker engine here: skip its tests by name
  SHMBENCH_SKIP_TORCH=1 cargo xtask test    # no 5 GB torch venv: skip the real-torch tests
  SHMBENCH_SKIP_K8S_VALIDATE=1 cargo xtask test   # no PyPI: skip the manifest schema checks
  SHMBENCH_SKIP_VM=1 cargo xtask test   # no QEMU or Debian archive: skip the VM runtime's tests
  SHMBENCH_SKIP_SLURM=1 cargo xtask test   # no Slurm cluster: skip the tests that submit jobs
  SHMBENCH_SKIP_SARIF=1 cargo xtask test   # no crates.io or PyPI: skip the SARIF schema check
  (also SHMBENCH_SKIP_RUNTIMES, _RAY, _WHEEL, _PROMETHEUS: docs/TESTING.md lists every one)";

/// Every requirement, in the order it is set up (a new one is a new entry here).
fn requirements() -> Vec<Box<dyn Requirement>> {
    vec![
        Box::new(tools::Commands),
        Box::new(tools::Font),
        Box::new(docker::Engine),
        Box::new(oci_runtimes::Runtimes),
        Box::new(rootless::RootlessUser),
        Box::new(torch::Torch),
        Box::new(pypi::K8S_VALIDATE),
        Box::new(pypi::RAY),
        Box::new(pypi::MATURIN),
        Box::new(wheel::Wheel),
        Box::new(sarif::Schema),
        Box::new(vm::Qemu),
        Box::new(prometheus::Prometheus),
        Box::new(slurm::ONE_NODE),
        Box::new(slurm::FLEET),
    ]
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    match command.as_deref() {
        Some("test") => {
            let code = match setup() {
                Ok(env) => test(&rest, &env),
                Err(code) => code,
            };
            teardown();
            code
        }
        Some("fast") => fast::run(),
        Some("stop") => {
            teardown();
            ExitCode::SUCCESS
        }
        Some("setup") => match setup() {
            Ok(_) => ExitCode::SUCCESS,
            Err(code) => code,
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!(
                "xtask: unknown command {}\n\n{USAGE}",
                other
                    .map(|o| format!("'{o}'"))
                    .unwrap_or_else(|| "(none)".into())
            );
            ExitCode::from(2)
        }
    }
}

/// Brings up every requirement, in order; stops at the first that cannot be met. Returns the variables
/// the tests need to find what was set up.
fn setup() -> Result<Vec<(String, String)>, ExitCode> {
    let mut env = Vec::new();
    let started = Instant::now();
    for requirement in requirements() {
        let name = requirement.name();
        if let Some(var) = requirement
            .skip_variable()
            .filter(|v| std::env::var_os(v).is_some())
        {
            println!("== {name}: skipped ({var} is set; the tests that need it will say so)");
            continue;
        }
        let began = Instant::now();
        let result = requirement.ensure();
        let took = began.elapsed().as_secs_f64();
        match result {
            Ok(what) => {
                println!("== {name}: {what} ({took:.1} s)");
                env.extend(requirement.env());
            }
            Err(why) => {
                eprintln!("== {name}: FAILED after {took:.1} s\n{why:#}");
                return Err(ExitCode::from(1));
            }
        }
    }
    println!("== set-up done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(env)
}

/// Ends what the set-up started for the tests (the Slurm cluster), whatever the tests did.
fn teardown() {
    for requirement in requirements() {
        if requirement
            .skip_variable()
            .is_some_and(|v| std::env::var_os(v).is_some())
        {
            continue;
        }
        if let Some(what) = requirement.stop() {
            println!("== {}: {what}", requirement.name());
        }
    }
}

fn test(extra: &[String], env: &[(String, String)]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!(
        "== cargo test --release --workspace --no-fail-fast {}",
        extra.join(" ")
    );
    let began = Instant::now();
    let scratch = scratch::Scratch::create();
    let mut command = Command::new(cargo);
    command
        // Every crate's tests (`--workspace`: the layers' unit tests live in their crates) and
        // every test binary run, even after one fails: one failure must not hide the rest.
        .args(["test", "--release", "--workspace", "--no-fail-fast"])
        .args(extra)
        .envs(env.iter().map(|(k, v)| (k, v)));
    // Machine tests take one lock and Slurm's another, and libtest starts tests in name order
    // as threads come free: with a few threads, they all end up waiting on one lock (four
    // Slurm tests in a row held all four once, the machine tests' lane idle for minutes)
    // while the tests behind them wait for a thread. A thread per test (more than there are)
    // starts every test at once: each lock's tests queue on it, the two lanes run side by
    // side, and a pure test never waits behind either.
    if std::env::var_os("RUST_TEST_THREADS").is_none() {
        command.env("RUST_TEST_THREADS", "256");
    }
    if let Some(dir) = &scratch {
        command.env(scratch::VARIABLE, dir.path());
    }
    let status = command.status();
    let took = began.elapsed().as_secs_f64();
    let mut removed = true;
    if let Some(dir) = scratch {
        if let Ok(held) = std::fs::read_to_string(dir.path().join("lanes.tsv")) {
            print!("{}", lanes::summary(&held));
            println!("{}", lanes::keep(&held));
        }
        removed = dir.remove_and_say();
    }
    match status {
        Ok(s) if s.success() && !removed => {
            eprintln!("== tests passed in {took:.1} s, but their scratch directory stayed");
            ExitCode::from(1)
        }
        Ok(s) if s.success() => {
            println!("== tests passed in {took:.1} s");
            ExitCode::SUCCESS
        }
        Ok(s) => {
            eprintln!("== tests failed after {took:.1} s ({s})");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("== cannot run cargo test: {e}");
            ExitCode::from(1)
        }
    }
}
