//! `--image IMG`: cells in a user's own image, which shmbench did not build and does not change.
//! The test images are built here with the real engine from what this machine has (there is no
//! registry): one `FROM scratch` with nothing but a marker file, so shmbench must bring its own
//! loader and libraries, and one with this machine's system Python and no torch. Needs an engine
//! (SHMBENCH_SKIP_DOCKER=1 skips).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// A user image built for one test, removed with it.
pub(crate) struct TestImage(pub(crate) String);

impl Drop for TestImage {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rmi", "--force", &self.0])
            .output();
    }
}

fn build_image(tag: &str, context: &Path, dockerfile: &str) -> TestImage {
    std::fs::write(context.join("Dockerfile"), dockerfile).unwrap();
    let out = Command::new("docker")
        .args(["build", "--quiet", "--tag", tag])
        .arg(context)
        .env("DOCKER_BUILDKIT", "0")
        .output()
        .expect("run docker build");
    assert!(
        out.status.success(),
        "docker build {tag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    TestImage(tag.to_string())
}

/// An image with no libc, no shell, nothing but one file.
fn bare_image() -> TestImage {
    let dir = temp_dir("bare-image");
    std::fs::write(dir.join("marker"), "a user's image\n").unwrap();
    build_image(
        "shmbench-test-bare:1",
        &dir,
        "FROM scratch\nCOPY marker /etc/marker\n",
    )
}

/// Copies `path` from this machine into `rootfs` at the same place.
fn copy_in(rootfs: &Path, path: &str) {
    let to = rootfs.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let status = Command::new("cp")
        .args(["-a", "-L", path])
        .arg(&to)
        .status()
        .unwrap();
    assert!(status.success(), "cp {path}");
}

/// An image whose python3 is this machine's system Python (with its libraries), without torch.
/// The test image with this machine's python3, or None where the user skips these tests
/// (SHMBENCH_SKIP_PYTHON3); a machine without it fails the test, saying how to set it up.
pub(crate) fn python_image_or_skip() -> Option<TestImage> {
    python_image_tagged_or_skip("shmbench-test-python:1")
}

/// The same image under `tag` (a test of another lane builds and removes its own).
pub(crate) fn python_image_tagged_or_skip(tag: &str) -> Option<TestImage> {
    let present = || std::path::Path::new("/usr/bin/python3").exists();
    if !require(
        "python3",
        present,
        "/usr/bin/python3 (to build a test image from)",
    ) {
        return None;
    }
    Some(python_image(tag).expect("an image with this machine's python3 builds"))
}

fn python_image(tag: &str) -> Option<TestImage> {
    let python = "/usr/bin/python3";
    let real = std::fs::canonicalize(python).ok()?;
    let ldd = Command::new("ldd").arg(&real).output().ok()?;
    let dir = temp_dir("python-image");
    let rootfs = dir.join("rootfs");
    copy_in(&rootfs, real.to_str()?);
    copy_in(&rootfs, python);
    for word in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
        if word.starts_with('/') {
            copy_in(&rootfs, word);
        }
    }
    let version = real.file_name()?.to_str()?.to_string();
    copy_in(&rootfs, &format!("/usr/lib/{version}"));
    Some(build_image(
        tag,
        &dir,
        "FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/bin\n",
    ))
}

#[test]
fn cells_run_in_a_users_image_with_shmbench_brought_in() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let image = bare_image();
    // The engine's default 64 MiB: the seed batch (73.5 MiB) cannot fit, its workers (started
    // inside the image through shmbench's own loader) die of SIGBUS at the first batch.
    let seed = run_cell(&format!("--image {} --steps 3 --torch legacy", image.0));
    assert_legacy_out_of_shm(&seed);
    assert_eq!(crash_step(&seed), 1, "{seed}");
    assert_eq!(seed["shm_seen_bytes"], 64 << 20, "{seed}");
    assert_eq!(seed["config"]["runtime"], "docker", "{seed}");
    // A small loader passes in the same image, and the row says where it ran.
    let (o, rows) = run_rows(&format!(
        "--image {} --batch 8 --workers 2 --steps 10",
        image.0
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows[0]["status"], "pass", "{:?}", rows[0]);
    assert_eq!(rows[0]["image"], image.0);
    assert_eq!(rows[0]["runtime"], "docker");
    assert_clean(&before);
}

#[test]
fn a_torch_cell_uses_the_images_python_and_says_when_it_has_no_torch() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let Some(image) = python_image_or_skip() else {
        return;
    };
    let before = machine_state();
    let record = run_cell(&format!(
        "--image {} --loader torch --batch 4 --workers 1 --steps 2",
        image.0
    ));
    assert_eq!(status(&record), "error", "{record}");
    let message = record["message"].as_str().unwrap();
    assert!(message.contains("No module named 'torch'"), "{message}");
    assert!(
        message.contains(&format!(
            "the image '{}' needs a Python with torch",
            image.0
        )),
        "{message}"
    );
    assert_clean(&before);
}

#[test]
fn an_image_the_engine_does_not_have_or_outside_docker_is_a_clear_error() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let o = shmbench(&[
        "run",
        "--image",
        "shmbench-test-absent:nope",
        "--steps",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("image 'shmbench-test-absent:nope' is not in this Docker engine")
            && stderr.contains("docker load"),
        "{stderr}"
    );
    let o = shmbench(&["run", "--image", "x:1", "--runtime", "namespace"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("image: an image is a Docker setting"),
        "{stderr}"
    );
    assert_clean(&before);
}

#[test]
fn a_watched_command_runs_in_the_users_image_with_the_engines_64m() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let Some(image) = python_image_or_skip() else {
        return;
    };
    let before = machine_state();
    // The image's own python3, in a container with the engine's default /dev/shm: the ninth
    // 8 MiB segment does not fit in 64 MiB.
    let (out, row, report) = watch(
        &["--image", &image.0, "--step-regex", r"^step (\d+)$"],
        &["python3", "-c", FILL_SHM_PY, "128", WATCHED_MARK],
    );
    let text = String::from_utf8_lossy(&out.stderr);
    let row = row.expect("a row");
    assert_eq!(row["status"], "sigbus", "{text}");
    assert_eq!(row["crash_step"], "9", "{text}");
    assert_eq!(
        (row["runtime"].as_str(), row["image"].as_str()),
        ("docker", image.0.as_str())
    );
    assert_eq!(row["shm_seen_bytes"], (64u64 << 20).to_string());
    assert_eq!(out.status.code(), Some(135), "{text}");
    let report = report.expect("a watch report");
    assert!(
        !report["holders_at_peak"].as_array().unwrap().is_empty(),
        "{report}"
    );
    assert!(text.contains("docker run --shm-size="), "{text}");
    // A command the image does not have is the cell's error, said plainly.
    let (out, row, _) = watch(&["--image", &image.0], &["no-such-tool"]);
    let row = row.expect("a row");
    assert_eq!(row["status"], "error");
    assert!(
        row["message"].contains("cannot start 'no-such-tool'"),
        "{row:?}"
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn the_harness_image_exports_as_a_tar_docker_load_accepts() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let dir = temp_dir("export");
    let tar = dir.join("shmbench.tar");
    let o = shmbench(&["image", "export", "--out", tar.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let tag = stdout
        .split("image ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("{stdout}"))
        .trim()
        .to_string();
    // The tar is what `docker save` writes: a manifest naming the tag, and its layers.
    let list = Command::new("tar")
        .arg("-xOf")
        .arg(&tar)
        .arg("manifest.json")
        .output()
        .unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(manifest[0]["RepoTags"][0], tag.as_str(), "{manifest}");
    // docker load reads it back.
    let load = Command::new("docker")
        .arg("load")
        .arg("-i")
        .arg(&tar)
        .output()
        .unwrap();
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    assert!(String::from_utf8_lossy(&load.stdout).contains(&tag));
    // Nowhere to write: a clear error, no partial file.
    let o = shmbench(&["image", "export", "--out", "/nonexistent-dir/x.tar"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir"));
    let left: Vec<_> = std::fs::read_dir(&*dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "only the tar: {left:?}");
}

/// Images of other binaries do not pile up: a build removes those no live run uses. Judged on an
/// image this test made (another binary's stand-in: built from this one's, so it carries the
/// label shmbench's images carry), not on what other users' runs left or hold.
#[test]
fn a_build_removes_another_binarys_image_no_run_uses() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let own = this_binarys_image();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let other = format!("shmbench:{:012x}", nanos & 0xffff_ffff_ffff);
    let dir = temp_dir("other-image");
    let _other = build_image(
        &other,
        dir.as_ref(),
        &format!("FROM {own}\nLABEL org.shmbench.test-stand-in={nanos}\n"),
    );
    assert!(image_exists(&other), "the stand-in was built");
    let rebuilt = shmbench(&["image", "--rebuild"]);
    assert!(
        rebuilt.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuilt.stderr)
    );
    assert!(
        !image_exists(&other),
        "a build removes another binary's unused image"
    );
    assert!(image_exists(&own), "and keeps its own");
}

fn image_exists(tag: &str) -> bool {
    Command::new("docker")
        .args(["image", "inspect", tag])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
