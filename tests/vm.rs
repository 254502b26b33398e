//! Runtime `vm`: cells under other kernels, booted for real in QEMU (TCG here: /dev/kvm exists on
//! these machines but a KVM guest hangs) from Debian's kernel packages, which `cargo xtask test`
//! names in SHMBENCH_TEST_KERNELS (SHMBENCH_SKIP_VM=1 skips). A boot, a crash, a kernel that
//! panics, a guest that stays silent, and a matrix over kernels with its history; nothing left
//! behind (QEMU processes, initrd files). The longer half (the matrix, the full tmpfs, the
//! guest's OOM killer) takes the second machine lane: a VM cell is self-contained (its own
//! kernel, its QEMU started by the lane-marked `shmbench`), and the first lane is the suite's
//! critical path.

use crate::common;

use std::process::Command;

use common::*;

/// The two kernels to boot (`debian:VERSION`), when set up.
fn kernels() -> Option<Vec<String>> {
    let present = || {
        std::env::var("SHMBENCH_TEST_KERNELS").is_ok_and(|k| k.contains(','))
            && Command::new("qemu-system-x86_64")
                .arg("--version")
                .output()
                .is_ok()
    };
    require("vm", present, "QEMU and two Debian kernels").then(|| {
        std::env::var("SHMBENCH_TEST_KERNELS")
            .unwrap()
            .split(',')
            .map(String::from)
            .collect()
    })
}

/// This test's QEMU processes and initrd files (those another user's live run holds left
/// out): none may outlive a run.
fn vm_leftovers() -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("shmbench-initrd-")
        })
        .filter(|e| !held_by_another_run(&e.path()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // This test's QEMU processes only: another user's VM cells are not its to judge.
    left.extend(
        our_processes(|args| args[0].contains("qemu-system"))
            .into_iter()
            .map(|pid| format!("qemu-system pid {pid}")),
    );
    left
}

/// `shmbench run` in a TCG VM with small batches (the mechanism is the same; TCG writes memory
/// 30-40x slower than the host).
fn vm_run(
    kernel: &str,
    extra: &str,
) -> (
    std::process::Output,
    Vec<std::collections::HashMap<String, String>>,
) {
    run_rows(&format!(
        "--runtime vm --kernel {kernel} --accel tcg --vm-memory 1g --workers 2 --batch 2 --steps 8 {extra}"
    ))
}

#[test]
fn a_cell_boots_its_kernel_and_reports_from_the_guest() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    let (o, rows) = vm_run(&kernels[0], "--shm-size 64m");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = &rows[0];
    assert_eq!(r["status"], "pass", "{r:?}");
    assert_eq!(r["runtime"], "vm");
    // The kernel column is the guest's own report; vm_kernel what was asked.
    let version = kernels[0].trim_start_matches("debian:");
    assert_eq!(r["kernel"], version);
    assert_eq!(r["vm_kernel"], kernels[0]);
    assert_eq!(r["vm_accel"], "tcg");
    assert_eq!(r["shm_seen_bytes"], (64u64 << 20).to_string());
    assert!(r["vm_wall_s"].parse::<f64>().unwrap() > 0.0);
    // Speeds under TCG are the emulator's, and said to be.
    assert!(stdout.contains("(TCG, emulated)"), "{stdout}");
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}

#[test]
fn a_full_tmpfs_in_the_guest_is_a_sigbus_as_on_the_host() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    // One batch (4.6 MiB) is larger than the 4 MiB tmpfs: the worker's first copy runs past its
    // end whatever the timing (as the seed's 73.5 MiB batch in 64 MiB does), and one worker
    // cannot race another into ENOSPC first.
    let (o, rows) = run_rows(&format!(
        "--runtime vm --kernel {} --accel tcg --vm-memory 1g --workers 1 --batch 8 --steps 6 --shm-size 4m",
        kernels[1]
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = &rows[0];
    assert_eq!(r["status"], "sigbus", "{r:?}");
    assert_eq!((r["signal"].as_str(), r["crash_step"].as_str()), ("7", "1"));
    assert_eq!(r["kernel"], kernels[1].trim_start_matches("debian:"));
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}

#[test]
fn a_kernel_that_panics_or_a_silent_guest_is_an_error_with_the_console() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    // No init it can run: the kernel panics, and panic=-1 powers it off at once.
    let results = temp_dir("panic");
    let o = output(|c| {
        c.args([
            "run",
            "--runtime",
            "vm",
            "--kernel",
            &kernels[0],
            "--accel",
            "tcg",
        ])
        .args([
            "--vm-memory",
            "1g",
            "--batch",
            "2",
            "--workers",
            "1",
            "--steps",
            "4",
        ])
        .arg("--out")
        .arg(results.join("p.csv"))
        .env("SHMBENCH_VM_APPEND", "rdinit=/nonexistent")
    });
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "a cell in error: {stdout}");
    assert!(
        stdout.contains("the guest kernel panicked") && stdout.contains("Kernel panic"),
        "{stdout}"
    );
    // A guest given half a second of silence ends as an error too, QEMU killed.
    let (o, rows) = vm_run(
        &kernels[0],
        "--shm-size 64m --vm-boot-s 0.5 --timeout-s 0.5",
    );
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(rows[0]["status"], "error");
    assert!(
        rows[0]["message"].contains("no console output in time"),
        "{:?}",
        rows[0]
    );
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}

#[test]
fn a_matrix_over_kernels_is_one_csv_with_a_history_by_kernel() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    let dir = temp_dir("kernels");
    let out = dir.join("k.csv");
    let list = format!("host,{}", kernels.join(","));
    let o = shmbench(&[
        "matrix",
        "--cells",
        "docker-tuned,docker-standard",
        "--batch",
        "2",
        "--workers",
        "2",
        "--steps",
        "8",
        "--runtime",
        "namespace",
        "--container",
        "none",
        "--vm-memory",
        "1g",
        "--accel",
        "tcg",
        "--kernels",
        &list,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 6, "two cells on three kernels");
    let mut seen: Vec<&str> = rows.iter().map(|r| r["kernel"].as_str()).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "{seen:?}");
    let o = shmbench(&["history", out.to_str().unwrap(), "--by", "kernel"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for k in &kernels {
        assert!(text.contains(k.trim_start_matches("debian:")), "{text}");
    }
    // A name that is no kernel fails the run up front, with what to do.
    let o = shmbench(&[
        "run",
        "--runtime",
        "vm",
        "--kernel",
        "/nonexistent/bzImage",
        "--batch",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such file"));
    let o = shmbench(&["run", "--runtime", "vm", "--batch", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--kernel"));
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}

#[test]
fn a_memory_limit_in_the_guest_ends_the_loader_by_its_oom_killer() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    // One batch of 32 images is 18.4 MiB of tmpfs pages, charged to the guest's 16 MiB cgroup.
    let (o, rows) = run_rows(&format!(
        "--runtime vm --kernel {} --accel tcg --vm-memory 1g --workers 2 --batch 32 --steps 8 --shm-size 256m --memory 16m",
        kernels[0]
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(rows[0]["status"], "oom", "{:?}", rows[0]);
    assert_eq!(rows[0]["memory_bytes"], (16u64 << 20).to_string());
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}

#[test]
fn the_kernels_five_causes_are_named_in_a_6_1_guest_in_three_of_three_runs() {
    let Some(kernels) = kernels() else { return };
    let _guard = third_serial();
    let before = machine_state();
    let dir = temp_dir("kernel-causes");
    let out = dir.join("c.csv");
    // The generic flavor of the newest kernel: the cloud flavor is built without
    // CONFIG_MEMORY_FAILURE, so it cannot poison a page (shmbench fetches the package itself).
    let guest = kernels[0]
        .trim_start_matches("debian:")
        .replace("-cloud-amd64", "-amd64");
    let list = format!("debian:{guest}");
    // The causes the kernel decides (a tmpfs's pages, a cgroup's charge, a mapping beyond a
    // file's end, hugetlb's reservations, a poisoned page), caught by the tracer inside the
    // guest, three times each (the host's three runs, and the hardware cell refused there, are
    // tests/explain.rs's).
    let cells = "tmpfs-full,memory-limit,mapped-file,huge-pages,hardware";
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/causes.toml");
    let o = shmbench(&[
        "matrix",
        scenario,
        "--cells",
        cells,
        "--kernels",
        &list,
        "--repeat",
        "3",
        "--accel",
        "tcg",
        "--vm-memory",
        "1g",
        // One vCPU: one TCG thread, so the lane keeps one core busy, not both.
        "--vm-cpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stderr);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 15, "five cells, three runs each: {text}");
    for row in &rows {
        assert_eq!(row["cause"], row["cell"], "{row:?}");
        assert_eq!(row["claim_verdict"], "agrees", "{row:?}");
    }
    assert!(vm_leftovers().is_empty(), "{:?}", vm_leftovers());
    assert_clean(&before);
}
