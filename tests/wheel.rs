//! The Python distribution, for real: the wheel built by maturin from this repository (as a
//! release is), installed into a fresh venv with pip, gives the `shmbench` command, `python -m
//! shmbench` and the package; beside torch from PyPI, a training script's pre-flight check stops
//! it before its first batch in a 64 MiB /dev/shm, with the fix, and lets it pass in 2 GiB with a
//! predicted need the watched peak agrees with; so does the Lightning callback in a Trainer, and
//! the script in a Docker container of a local image names Docker's fix.
//! Needs maturin (`cargo xtask test` installs it;
//! SHMBENCH_SKIP_WHEEL=1 skips) and a Python with torch (tests/common/torch.rs).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The batch size the training scripts of tests/python are run with: 32 ImageNet-sized f32
/// images and their int64 labels.
const BATCH: u64 = 32;

#[test]
fn the_wheel_installs_the_command_and_the_package() {
    if !wheel_or_skip() {
        return;
    }
    let name = wheel().file_name().unwrap().to_string_lossy().to_string();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        name.starts_with(&format!("shmbench-{version}-")) && name.contains("manylinux"),
        "{name}"
    );
    let (_dir, venv) = venv_with_wheel(None);
    for cmd in [
        vec![
            venv.join("bin/shmbench").display().to_string(),
            "--version".into(),
        ],
        vec![
            venv.join("bin/python").display().to_string(),
            "-m".into(),
            "shmbench".into(),
            "--version".into(),
        ],
    ] {
        let out = run(Command::new(&cmd[0]).args(&cmd[1..]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.trim(), format!("shmbench {version}"), "{cmd:?}");
    }
    // The package imports without torch; the check itself needs torch, and says so.
    let out = run(Command::new(venv.join("bin/python"))
        .args(["-c", "import shmbench; print(shmbench.binary())"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("/bin/shmbench"));
}

#[test]
fn the_preflight_reads_the_live_loader() {
    let Some(python) = wheel_and_torch_or_skip() else {
        return;
    };
    let found = preflight_script(&python, "preflight_cases.py");
    // No workers: the main loads every batch, nothing in /dev/shm.
    assert_eq!(found["no_workers"]["need"], 0, "{found}");
    assert_eq!(found["no_workers"]["fits"], true, "{found}");
    // forkserver pickles the Dataset's tensor through /dev/shm: its bytes join the need.
    let (fork, forkserver) = (
        found["fork"].as_u64().unwrap(),
        found["forkserver"].as_u64().unwrap(),
    );
    assert_eq!(
        forkserver - fork,
        found["held"].as_u64().unwrap(),
        "{found}"
    );
    // Two forkserver loaders: each one's own Dataset once (64 MiB + 16 MiB), not the sum for each.
    let (two_fork, two_forkserver) = (
        found["two_fork"].as_u64().unwrap(),
        found["two_forkserver"].as_u64().unwrap(),
    );
    assert_eq!(
        two_forkserver - two_fork,
        found["held"].as_u64().unwrap() + found["small"].as_u64().unwrap(),
        "{found}"
    );
    // An iterable-style dataset has no sample to read without iterating it: asked for one,
    // and given one, the same need as the map-style loader of the same samples.
    assert!(
        found["iterable_refused"]
            .as_str()
            .unwrap()
            .contains("sample="),
        "{found}"
    );
    assert_eq!(found["iterable_with_sample"], found["one_rank"], "{found}");
    // A batch sampler's batches are its first batch's size; unbatched, one sample each.
    assert_eq!(found["batch_sampler"], found["one_rank"], "{found}");
    let unbatched = found["unbatched"].as_u64().unwrap();
    assert!(
        unbatched > 0 && unbatched < found["one_rank"].as_u64().unwrap(),
        "{found}"
    );
    // Ranks per node from torchrun's LOCAL_WORLD_SIZE.
    assert_eq!(
        found["four_ranks"].as_u64().unwrap(),
        4 * found["one_rank"].as_u64().unwrap(),
        "{found}"
    );
}

/// Issue 40's cases, each checked by the script (tests/python/preflight_defects.py): wrapped
/// Datasets' tensors counted under forkserver, raise_on=None never raising, string-keyed
/// Datasets sampled through their own sampler, a seeded run unchanged by the check, and a loader
/// that does not fit offered a batch_size in samples below its own.
#[test]
fn the_preflight_follows_wrappers_keeps_rngs_and_offers_batches_in_samples() {
    let Some(python) = wheel_and_torch_or_skip() else {
        return;
    };
    let found = preflight_script(&python, "preflight_defects.py");
    assert_eq!(found["failures"], serde_json::json!([]), "{found}");
    assert!(
        found["nonfit_offers"]
            .as_array()
            .is_some_and(|o| !o.is_empty()),
        "{found}"
    );
}

/// `shmbench watch` of a training script of tests/python in a private /dev/shm of `size`.
fn watch_training(venv: &Path, script: &str, size: &str, out: &Path) -> (Output, String) {
    let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let python = venv.join("bin/python").display().to_string();
    let o = shmbench(&[
        "watch",
        "--shm-size",
        size,
        "--out",
        out.to_str().unwrap(),
        "--",
        &python,
        &script,
        &BATCH.to_string(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o, text)
}

#[test]
fn a_training_script_s_preflight_stops_it_in_64m_and_predicts_its_peak_in_2g() {
    stops_in_64m_and_predicts_its_peak_in_2g("train_with_preflight.py");
}

#[test]
fn the_lightning_callback_stops_a_trainer_before_any_worker_starts() {
    stops_in_64m_and_predicts_its_peak_in_2g("lightning_preflight.py");
}

fn stops_in_64m_and_predicts_its_peak_in_2g(script: &str) {
    let Some(python) = wheel_and_torch_or_skip() else {
        return;
    };
    // Its cells are a watched script in a private /dev/shm: nothing of the host's.
    let _guard = third_serial();
    let before = machine_state();
    let (dir, venv) = venv_with_wheel(Some(&python));
    // 64 MiB: the check raises before the first batch, with the fix; nothing reached /dev/shm.
    let small = dir.as_ref().join("small.csv");
    let (o, text) = watch_training(&venv, script, "64m", &small);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains("PreflightError") && text.contains("Fix:") && text.contains("--shm-size="),
        "{text}"
    );
    assert!(!text.contains("trained"), "{text}");
    let row = &read_csv(&small)[0];
    assert_eq!(row["peak_shm_bytes"], "0", "{text}");
    // 2 GiB: it passes, and the watched peak lies within 10% below the need the check predicted
    // and at most one batch (and the queues' semaphores) above it. The check predicts the steady peak, workers * prefetch + 1
    // batches; torch refills the freed slot inside `__next__` while the loop still holds the last
    // step's batch, and freeing a batch's pages takes milliseconds, so with a quick Dataset a new
    // batch can be allocated before the old one is gone (CI's busy run sampled 5.5 batches).
    let large = dir.as_ref().join("large.csv");
    let (o, text) = watch_training(&venv, script, "2g", &large);
    assert!(o.status.success(), "{text}");
    assert!(text.contains("trained"), "{text}");
    let need: f64 = text
        .split("need_bytes=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no need printed: {text}"));
    let peak: f64 = read_csv(&large)[0]["peak_shm_bytes"].parse().unwrap();
    let one_batch = (BATCH * (3 * 224 * 224 * 4 + 8)) as f64;
    // Beside the batches, /dev/shm holds the POSIX semaphores of the loader's queues and events,
    // a 4 KiB page each (14 with 2 workers, CI's run saw exactly six batches plus those): allow
    // 64 pages, which no loader of 2 workers reaches and which is far under a batch.
    let semaphores = (64 * 4096) as f64;
    assert!(
        peak >= need * 0.9 && peak <= need + one_batch + semaphores,
        "watched peak {peak} against the predicted {need} (one batch: {one_batch}): {text}"
    );
    assert_clean(&before);
}

/// The same script in a real Docker container of a local image built here (`docker import` of
/// an empty tree: no registry), with this machine's system libraries, the venv and torch
/// mounted read-only: the engine's /dev/shm of `--shm-size`.
fn in_container(venv: &Path, torch_python: &str, shm: &str) -> (bool, String) {
    let image = format!("shmbench-test-preflight:{}", std::process::id());
    let empty = temp_dir("empty-image");
    let tar = Command::new("tar")
        .args(["-c", "-C"])
        .arg(empty.as_ref())
        .arg(".")
        .output()
        .unwrap();
    let mut import = Command::new("docker")
        .args(["import", "-", &image])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut import.stdin.take().unwrap(), &tar.stdout).unwrap();
    assert!(import.wait().unwrap().success());
    let torch_venv = Path::new(torch_python).parent().unwrap().parent().unwrap();
    let scripts = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python");
    let mut docker = Command::new("docker");
    docker.args(["run", "--rm", "--shm-size", shm]);
    for dir in ["/usr", "/lib", "/lib64", "/etc/ld.so.cache"] {
        if Path::new(dir).exists() {
            docker.args(["-v", &format!("{dir}:{dir}:ro")]);
        }
    }
    // The installation the venvs were made from (pyenv's, or the system's under /usr).
    let base =
        run(Command::new(venv.join("bin/python"))
            .args(["-c", "import sys; print(sys.base_prefix)"]));
    let base = PathBuf::from(String::from_utf8_lossy(&base.stdout).trim());
    for dir in [venv, torch_venv, Path::new(scripts), &base] {
        docker.args(["-v", &format!("{}:{}:ro", dir.display(), dir.display())]);
    }
    let out = docker
        .arg(&image)
        .arg(venv.join("bin/python"))
        .arg(format!("{scripts}/train_with_preflight.py"))
        .arg(BATCH.to_string())
        .output()
        .unwrap();
    let _ = Command::new("docker").args(["rmi", &image]).output();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn in_a_docker_container_the_preflight_names_the_engine_s_fix() {
    if !wheel_or_skip() || !docker_or_skip() {
        return;
    }
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = serial();
    let before = machine_state();
    let (_dir, venv) = venv_with_wheel(Some(&python));
    // The engine's default size: stopped before the first batch, with Docker's own fix.
    let (ok, text) = in_container(&venv, &python, "64m");
    assert!(!ok, "{text}");
    assert!(
        text.contains("PreflightError")
            && text.contains("(docker)")
            && text.contains("docker run --shm-size="),
        "{text}"
    );
    assert!(!text.contains("trained"), "{text}");
    let (ok, text) = in_container(&venv, &python, "2g");
    assert!(ok && text.contains("trained"), "{text}");
    assert_clean(&before);
}

/// Runs `tests/python/NAME` in a venv with the wheel and `python`'s torch: the JSON its last
/// line prints.
fn preflight_script(python: &str, name: &str) -> serde_json::Value {
    let (dir, venv) = venv_with_wheel(Some(python));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name);
    // multiprocessing's directories (`pymp-*`, a forkserver's socket, which its server does not
    // remove) go in the test's scratch, not /tmp.
    let out = run(Command::new(venv.join("bin/python"))
        .arg(script)
        .env("TMPDIR", dir.as_ref()));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The settings `train_tuned.py` tries: one worker, prefetch 1, fork, two runs at most (and the
/// usual guess beside it): the pick is the one setting; what is tested is the path to it.
const TUNE_GRID: &[&str] = &[
    "--tune-workers",
    "1",
    "--tune-prefetch",
    "1",
    "--tune-start",
    "fork",
    "--most-runs",
    "2",
    "--timeout-s",
    "30",
];

#[test]
fn the_wheel_s_tune_picks_for_the_script_s_own_loader_and_leaves_nothing_when_interrupted() {
    let Some(python) = wheel_and_torch_or_skip() else {
        return;
    };
    // Its trials are namespace cells, each its own /dev/shm: nothing of the host's.
    let _guard = third_serial();
    let before = machine_state();
    let (dir, venv) = venv_with_wheel(Some(&python));
    let script = format!("{}/tests/python/train_tuned.py", env!("CARGO_MANIFEST_DIR"));
    // The script's temporary files (the pickled Dataset) go in a folder of the test's own.
    let tmp = dir.as_ref().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let script_command = || {
        let mut cmd = Command::new(venv.join("bin/python"));
        cmd.arg(&script).args(["16", "16m"]).args(TUNE_GRID);
        // Its cells are this lane's: the leak checks of the others do not count them.
        cmd.env("TMPDIR", &tmp).env(OWNER_VARIABLE, lane_mark());
        cmd
    };
    // Batch 16 of the script's own Dataset (a class of its __main__), in 16 MiB.
    let out = run(&mut script_command());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let found: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    let kwargs = &found["kwargs"];
    assert!(
        kwargs["num_workers"] == 1
            && kwargs["prefetch_factor"] == 1
            && kwargs["multiprocessing_context"] == "fork"
            && kwargs["persistent_workers"] == true,
        "{text}"
    );
    assert!(
        found["img_per_s"].as_f64().is_some_and(|r| r > 0.0),
        "{text}"
    );
    let left = |dir: &Path| {
        (std::fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<Vec<String>>()
    };
    assert_eq!(
        left(&tmp),
        Vec::<String>::new(),
        "the pickled Dataset's folder stays"
    );
    // Interrupted once its first trial is done: Ctrl-C reaches the script (the binary under
    // it gets it from the script), which raises KeyboardInterrupt once every process of the
    // tune is gone and its folder removed.
    let mut interruptible = script_command();
    // Ctrl-C as a terminal delivers it: a test run in the background inherits SIGINT ignored,
    // and Python then never raises KeyboardInterrupt.
    // SAFETY: signal(2) in the forked child before exec, async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut interruptible, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = interruptible
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.lines().any(|l| l.starts_with("  [")) {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() == 0 {
            panic!("the script ended before a trial: {seen}");
        }
        seen.push_str(&line);
    }
    let tree = Tree::under(child.id());
    assert!(!tree.is_empty(), "the tune runs under the script");
    // SAFETY: kill(2) of the child this test spawned and has not waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{seen}{rest}");
    assert!(rest.contains("KeyboardInterrupt"), "{seen}{rest}");
    assert_eq!(
        tree.left_after_waiting(),
        Vec::<u32>::new(),
        "processes of the tune outlived it: {rest}"
    );
    assert_eq!(
        left(&tmp),
        Vec::<String>::new(),
        "an interrupted tune left its folder: {rest}"
    );
    assert_clean(&before);
}
