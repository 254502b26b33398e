//! Rootless Podman: docs/RUNTIMES.md's table measured by `shmbench` run as an unprivileged user
//! (`shmbench-rootless`, which `cargo xtask test` makes), as HPC sites and laptops run it. The
//! run starts the user's own Podman service, builds its image in the user's storage, records
//! that the engine ran rootless, and says which limit the engine did not apply rather than
//! measure a cell as if it held; nothing of the user's Podman is left running.

use crate::common;
use crate::runtime_seed::{judge_seed, SEED_FLAGS};
use crate::runtimes::{cgroup_v1, judge, runtimes_or_skip, TABLE};

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use common::*;

const USER: &str = "shmbench-rootless";

/// The user's uid and gid, from /etc/passwd.
fn user_ids() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [name, _, uid, gid, ..] if *name == USER => {
                Some((uid.parse().ok()?, gid.parse().ok()?))
            }
            _ => None,
        }
    })
}

/// `program` as the user, in `home` (its Podman's storage goes there) with the runtime directory
/// `run` (its pause process's), carrying this lane's mark.
fn as_user(home: &Path, run: &Path, program: &Path, (uid, gid): (u32, u32)) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", run)
        // The run's Podman socket goes in TMPDIR: a scratch path would pass a socket's 107 bytes.
        .env("TMPDIR", std::env::temp_dir())
        .env(OWNER_VARIABLE, lane_mark())
        .current_dir(home)
        .uid(uid)
        .gid(gid);
    command
}

/// Ends the user's Podman pause process of this test's runtime directory (rootless Podman keeps
/// one per runtime directory to hold its user namespace; it outlives every command).
fn end_pause_process(run: &Path) {
    let pid = std::fs::read_to_string(run.join("libpod/tmp/pause.pid")).unwrap_or_default();
    if let Ok(pid) = pid.trim().parse::<u32>() {
        send_signal(pid, "KILL");
    }
}

/// `shmbench doctor --format json` inside a container of the user's Podman, from the image the
/// run built (its tag is in what the run `said`).
fn doctor_as_user(home: &Path, run: &Path, ids: (u32, u32), said: &str) -> serde_json::Value {
    let image = image_tag_in(said)
        .map(|tag| format!("docker.io/library/{tag}"))
        .unwrap_or_default();
    let doctor = as_user(home, run, Path::new("/usr/bin/podman"), ids)
        .args([
            "--runtime",
            "runc",
            "run",
            "--rm",
            "--network",
            "none",
            "--ulimit",
            "nofile=1024:1024",
        ])
        .args([&image, "doctor", "--format", "json", "--batch", "8"])
        .output()
        .unwrap();
    serde_json::from_slice(&doctor.stdout)
        .unwrap_or_else(|e| panic!("{e}: {image} {}", String::from_utf8_lossy(&doctor.stderr)))
}

/// The doctor inside the user's container knows it is rootless, and what that costs here.
fn assert_doctor_knows_rootless(doctor: &serde_json::Value) {
    assert_eq!(doctor["environment"]["user_namespace"], true, "{doctor}");
    assert_eq!(
        doctor["environment"]["shm_total_bytes"],
        64_000 << 10,
        "{doctor}"
    );
    let warnings = doctor["warnings"].to_string();
    assert!(
        warnings.contains("Podman's default (size=64000k"),
        "{warnings}"
    );
    if cgroup_v1() {
        assert!(
            warnings.contains("rootless, by /proc/self/uid_map) on cgroup v1"),
            "{warnings}"
        );
    }
}

#[test]
fn rootless_podman_measures_the_table_and_says_which_limit_it_cannot_apply() {
    if !runtimes_or_skip() || !require("runtimes", || user_ids().is_some(), USER) {
        return;
    }
    let ids = user_ids().unwrap();
    let _lane = second_serial();
    let before = machine_state();
    let home = temp_dir("rootless");
    // A short path: under a runtime directory of 52 bytes Podman 4.3's rootless containers
    // hung unattached (23 bytes ran), and the scratch directory's are longer. The user's own is
    // /run/user/UID.
    let run = tempfile::Builder::new()
        .prefix("shmbench-rl-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let (bin, table) = (home.join("shmbench"), home.join("runtimes.toml"));
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::write(&table, TABLE).unwrap();
    for (path, mode) in [
        (home.as_ref(), 0o755),
        (&bin, 0o755),
        (&table, 0o644),
        (run.path(), 0o700),
    ] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(path, Some(ids.0), Some(ids.1)).unwrap();
    }
    let ran = as_user(home.as_ref(), run.path(), &bin, ids)
        .args(["matrix", "runtimes.toml", "--engines", "podman"])
        .args(["--oci-runtimes", "runc,runsc,crun", "--out", "r.csv"])
        .output()
        .unwrap();
    // The seed matrix too, as the rootful engines run it (`runtime_seed`).
    let seed = as_user(home.as_ref(), run.path(), &bin, ids)
        .args([
            "matrix",
            "seed-matrix",
            "--engines",
            "podman",
            "--out",
            "seed.csv",
        ])
        .args(["--oci-runtimes", "runc,runsc,crun"])
        .args(SEED_FLAGS)
        .output()
        .unwrap();
    let podman_left = as_user(home.as_ref(), run.path(), Path::new("/usr/bin/podman"), ids)
        .args(["ps", "-a", "--format", "{{.Names}}"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&ran.stderr);
    let doctor = doctor_as_user(home.as_ref(), run.path(), ids, &said);
    end_pause_process(run.path());
    assert_doctor_knows_rootless(&doctor);
    let text = String::from_utf8_lossy(&ran.stdout);
    assert!(home.join("r.csv").exists(), "no results: {text}{said}");
    let rows = read_csv(&home.join("r.csv"));
    assert_eq!(rows.len(), 15, "{text}{said}");
    assert!(
        rows.iter().all(|r| r["docker_rootless"] == "true"),
        "every row says its engine ran rootless: {text}"
    );
    let started = judge(&rows);
    assert!(started.iter().any(|s| s == "podman runc"), "{text}");
    let seed_rows = read_csv(&home.join("seed.csv"));
    assert_eq!(
        seed_rows.len(),
        15,
        "{}",
        String::from_utf8_lossy(&seed.stderr)
    );
    assert!(seed_rows.iter().all(|r| r["docker_rootless"] == "true"));
    // `--ipc host` rootless: refused where the host has no /dev/mqueue to share (this one).
    let seed_started = judge_seed(&seed_rows, &["docker-ipc-host"]);
    assert!(seed_started.iter().any(|s| s == "podman runc"));
    assert!(
        text.contains("podman rootless runc"),
        "the table names it: {text}"
    );
    assert_eq!(
        String::from_utf8_lossy(&podman_left.stdout).trim(),
        "",
        "the user's Podman holds no container"
    );
    // Tracked like any engine: the history's columns say rootless.
    let history = shmbench(&[
        "history",
        home.join("r.csv").to_str().unwrap(),
        "--by",
        "runtime",
    ]);
    let columns = String::from_utf8_lossy(&history.stdout);
    assert!(
        columns.contains("podman://") && columns.contains(" rootless "),
        "{columns}"
    );
    assert_clean(&before);
}
