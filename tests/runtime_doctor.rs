//! The doctor inside containers of each OCI runtime, run from shmbench's own image under rootful
//! Podman: it must know from inside that it is in gVisor (the memory cgroup is invisible there,
//! and an OOM ends the sandbox) and when /dev/shm is Podman's default, and what it reads of
//! /dev/shm (statvfs) must be the size the engine gave, under runc and gVisor alike.

use crate::common;
use crate::runtimes::runtimes_or_skip;

use std::process::Command;

use common::*;

/// `shmbench doctor --format json` in a container of Podman's image `image` under `oci`, with
/// `extra` flags: its JSON.
fn doctor_in(image: &str, oci: &str, extra: &[&str]) -> serde_json::Value {
    let mut podman = Command::new("podman");
    podman.args(["--runtime", oci]);
    if oci == "runsc" {
        podman.args(["--runtime-flag", "network=none"]);
    }
    let out = podman
        .args(["run", "--rm", "--network", "none"])
        .args([
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
        ])
        .args(["--env", &format!("{OWNER_VARIABLE}={}", lane_mark())])
        .args(extra)
        .args([image, "doctor", "--format", "json", "--batch", "8"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn the_doctor_in_each_runtime_knows_it_and_reads_dev_shm_truthfully() {
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    // A cell under Podman builds this binary's image in Podman's storage (under runc: Podman's
    // default crun refuses this machine's hybrid cgroups, an error that exits 4).
    let (built, _) = run_rows(
        "--container docker --engine podman --oci-runtime runc --shm-size 64m --batch 8 --steps 1",
    );
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let image = format!("docker.io/library/{}", this_binarys_image());
    for oci in ["runc", "runsc"] {
        for (extra, size) in [
            (&[][..], 64_000u64 << 10),
            (&["--shm-size", "256m"][..], 256 << 20),
        ] {
            let doctor = doctor_in(&image, oci, extra);
            let env = &doctor["environment"];
            let warnings = doctor["warnings"].to_string();
            let gvisor = oci == "runsc";
            assert_eq!(env["gvisor"], gvisor, "{oci}: {env}");
            assert_eq!(warnings.contains("a gVisor sandbox"), gvisor, "{warnings}");
            // statvfs tells the truth: the size the engine gave, all of it free.
            assert_eq!(env["shm_total_bytes"], size, "{oci} {extra:?}: {env}");
            assert_eq!(env["shm_free_bytes"], size, "{oci} {extra:?}: {env}");
            let podman_default = warnings.contains("Podman's default (size=64000k");
            assert_eq!(
                podman_default,
                extra.is_empty(),
                "{oci} {extra:?}: {warnings}"
            );
        }
    }
    assert_clean(&before);
}
