//! The wheel maturin builds from this repository, installed into fresh venvs, for the tests
//! of the Python distribution (`wheel.rs`, and `explain.rs`'s script that follows itself).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{require, temp_dir, torch_or_skip, Scratch};

pub fn maturin() -> PathBuf {
    match std::env::var_os("SHMBENCH_MATURIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let home = std::env::var_os("HOME").unwrap();
            PathBuf::from(home).join(".cache/shmbench/venvs/maturin/bin/maturin")
        }
    }
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The wheel: the one `cargo xtask test` built before the tests (SHMBENCH_TEST_WHEEL), else
/// built once for the tests of this file, with a target directory of its own: maturin's build
/// of the binary would otherwise replace `target/release/shmbench` while other tests run it.
pub fn wheel() -> &'static Path {
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL.get_or_init(|| {
        if let Some(built) = std::env::var_os("SHMBENCH_TEST_WHEEL") {
            return PathBuf::from(built);
        }
        let out = temp_dir("wheel").keep();
        run(Command::new(maturin())
            .args(["build", "--release", "--out"])
            .arg(&out)
            .env("CARGO_TARGET_DIR", out.join("target"))
            .current_dir(env!("CARGO_MANIFEST_DIR")));
        let built: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "whl"))
            .collect();
        assert_eq!(built.len(), 1, "{built:?}");
        built[0].clone()
    })
}

/// A fresh venv with the wheel pip-installed, and torch's site-packages beside it when given.
pub fn venv_with_wheel(torch_python: Option<&str>) -> (Scratch, PathBuf) {
    let dir = temp_dir("wheel-venv");
    let venv = dir.as_ref().join("v");
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-index",
        ])
        .arg(wheel()));
    if let Some(python) = torch_python {
        let site = run(Command::new(python).args([
            "-c",
            "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))",
        ]));
        let ours = run(Command::new(venv.join("bin/python")).args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ]));
        let purelib = String::from_utf8_lossy(&ours.stdout).trim().to_string();
        std::fs::write(Path::new(&purelib).join("torch_beside.pth"), &site.stdout).unwrap();
    }
    (dir, venv)
}

pub fn wheel_or_skip() -> bool {
    require(
        "wheel",
        || maturin().is_file(),
        "maturin (the wheel's build tool)",
    )
}

/// The Python with torch to install beside the wheel; None (the test skips, and says why) when
/// maturin or torch is missing.
pub fn wheel_and_torch_or_skip() -> Option<String> {
    if !wheel_or_skip() {
        return None;
    }
    torch_or_skip()
}
