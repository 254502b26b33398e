//! `watch` under gVisor and Podman: a user's command in a user's image (this machine's python3,
//! built by `docker_image`, copied into Podman's storage), filling /dev/shm 8 MiB a step, ends
//! where each engine's default /dev/shm ends it (Docker's 64 MiB at the 9th segment, Podman's
//! 62.5 MiB at the 8th), and under gVisor, whose /proc has no `task/TID/children`, the job's
//! processes and what they hold are still found.

use crate::common;
use crate::docker_image::python_image_tagged_or_skip;
use crate::runtimes::{assert_names_its_runtime, runtimes_or_skip};

use std::process::{Command, Stdio};

use common::*;

/// Four 8 MiB segments filled and held for a second before they are unlinked: the peak's
/// holder is there to be seen, whatever the sampler's phase.
const HOLD_PY: &str = r#"
import time
from multiprocessing import shared_memory
segs = [shared_memory.SharedMemory(create=True, size=8 << 20) for _ in range(4)]
for i, s in enumerate(segs):
    s.buf[:] = b"\1" * (8 << 20)
    print(f"step {i + 1}", flush=True)
time.sleep(1)
for s in segs:
    s.close()
    s.unlink()
"#;

/// The test image in Podman's storage, removed from it after.
struct InPodman(String);

impl InPodman {
    fn copy(tag: &str) -> InPodman {
        let mut save = Command::new("docker")
            .args(["save", tag])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let load = Command::new("podman")
            .args(["load", "--quiet"])
            .stdin(save.stdout.take().unwrap())
            .output()
            .unwrap();
        assert!(
            save.wait().unwrap().success() && load.status.success(),
            "{load:?}"
        );
        InPodman(format!("localhost/{tag}"))
    }
}

impl Drop for InPodman {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rmi", "--force", &self.0])
            .output();
    }
}

#[test]
fn a_watched_command_ends_at_each_engines_default_and_its_holders_are_seen_under_gvisor() {
    if !runtimes_or_skip() {
        return;
    }
    // The second lane: the first holds the real-torch tests, the longer of the two.
    let _guard = second_serial();
    let Some(image) = python_image_tagged_or_skip("shmbench-test-python-runtimes:1") else {
        return;
    };
    let before = machine_state();
    let _podman = InPodman::copy(&image.0);
    let fill = ["python3", "-c", FILL_SHM_PY, "128", WATCHED_MARK];
    for (engine, oci) in [("docker", "runsc"), ("podman", "runc"), ("podman", "runsc")] {
        let flags = [
            "--image",
            &image.0,
            "--engine",
            engine,
            "--oci-runtime",
            oci,
        ];
        let mut args = flags.to_vec();
        args.extend(["--step-regex", r"^step (\d+)$"]);
        let (out, row, _) = watch(&args, &fill);
        let text = String::from_utf8_lossy(&out.stderr);
        let row = row.unwrap_or_else(|| panic!("{engine} {oci}: no row: {text}"));
        assert_names_its_runtime(&row);
        let default_shm = match engine {
            "podman" => 64_000u64 << 10,
            _ => 64 << 20,
        };
        assert_eq!(row["shm_seen_bytes"], default_shm.to_string(), "{row:?}");
        // The first 8 MiB segment that does not fit: the SIGBUS of its filling.
        let step = default_shm / (8 << 20) + 1;
        assert_eq!(
            (row["status"].as_str(), row["crash_step"].as_str()),
            ("sigbus", step.to_string().as_str()),
            "{engine} {oci}: {text}"
        );
        // The fix in the engine's own words.
        let other = if engine == "podman" {
            "docker"
        } else {
            "podman"
        };
        assert!(
            text.contains(&format!("{engine} run --shm-size="))
                && !text.contains(&format!("{other} run")),
            "{engine} {oci}: {text}"
        );
    }
    // gVisor: the holders at the peak, found without /proc's children files.
    let mut args = vec!["--image", &image.0, "--oci-runtime", "runsc"];
    args.extend(["--shm-size", "256m", "--step-regex", r"^step (\d+)$"]);
    let (out, row, report) = watch(&args, &["python3", "-c", HOLD_PY, WATCHED_MARK]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(row.expect("a row")["status"], "pass", "{text}");
    let report = report.expect("a watch report");
    let holders = report["holders_at_peak"].as_array().unwrap();
    let held: u64 = holders
        .iter()
        .flat_map(|h| h["segments"].as_array().unwrap())
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert!(held >= 32 << 20, "the command's four segments: {report}");
    // A full tmpfs under gVisor: the Sentry, not Linux, delivers the fault.
    let mut args = vec![
        "--image",
        &image.0,
        "--oci-runtime",
        "runsc",
        "--shm-size",
        "64m",
    ];
    args.extend(["--step-regex", r"^step (\d+)$"]);
    let (out, row, report) = watch(&args, &fill);
    let text = String::from_utf8_lossy(&out.stderr);
    let row = row.expect("a row");
    assert_eq!(
        (&row["status"][..], &row["cause"][..]),
        ("sigbus", "tmpfs-full"),
        "{text}"
    );
    // Traced under gVisor too; its Sentry says BUS_ADRALN (1) at the segment's start where
    // Linux says BUS_ADRERR (2) at the page (docs/EXPLAIN.md).
    let fault = &report.expect("a watch report")["traced"]["faults"][0];
    assert!([1, 2].contains(&fault["code"].as_i64().unwrap()), "{fault}");
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}
