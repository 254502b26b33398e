//! Ray's object store in /dev/shm, measured with real Ray (the doctor's `--with ray:SIZE`):
//! in a /dev/shm smaller than the store Ray moves it to its temporary directory and warns; in a
//! larger one the store is there, its pages taken as objects are put. Each run is in a private
//! tmpfs and pid namespace, so nothing of Ray outlives it. Needs a Python with Ray (`cargo
//! xtask test` installs one; SHMBENCH_SKIP_RAY=1 skips this, and says so).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use serde_json::Value;

/// Starts Ray with a 256 MiB store in a private /dev/shm of $SHM, puts 32 MiB, and prints what
/// /dev/shm held before and after, as JSON; Ray's warnings go to stderr.
const RAY: &str = r#"
set -e
mount -t tmpfs -o size=$SHM tmpfs /dev/shm
"$PYTHON" -c "
import json, os, numpy, ray
def used():
    st = os.statvfs('/dev/shm'); return (st.f_blocks - st.f_bfree) * st.f_frsize
before = used()
ray.init(num_cpus=1, include_dashboard=False, object_store_memory=256 << 20, _temp_dir=os.environ['TMP_DIR'])
ref = ray.put(numpy.ones(32 << 20, dtype=numpy.uint8))
print(json.dumps({'before': before, 'after': used()}), flush=True)
ray.shutdown()"
"#;

fn python() -> PathBuf {
    match std::env::var_os("SHMBENCH_RAY_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let home = std::env::var_os("HOME").unwrap();
            PathBuf::from(home).join(".cache/shmbench/venvs/ray/bin/python")
        }
    }
}

/// Ray in a /dev/shm of `shm`: what the store used there, and Ray's stderr.
fn store_in(shm: &str) -> (Value, String) {
    // Ray puts its sockets under its temporary directory and refuses a socket path over 107
    // bytes (AF_UNIX): a directory straight under the system's, not in the run's scratch one.
    let dir = tempfile::Builder::new()
        .prefix("shmbench-ray-")
        .tempdir()
        .unwrap();
    let out = Command::new("unshare")
        .args([
            "-m",
            "-p",
            "-f",
            "--kill-child",
            "--mount-proc",
            "bash",
            "-c",
            RAY,
        ])
        .env("PYTHON", python())
        .env("SHM", shm)
        .env("TMP_DIR", dir.as_ref())
        .env("RAY_AUTH_MODE", "disabled")
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .output()
        .expect("unshare runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (value, stderr)
}

#[test]
fn ray_s_store_is_in_dev_shm_only_when_it_fits() {
    let present = || {
        Command::new(python())
            .args(["-c", "import ray, numpy"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !require("ray", present, "a Python with Ray") {
        return;
    }
    let _guard = serial();
    // Docker's default 64 MiB: the store goes elsewhere, and Ray says so.
    let (small, warned) = store_in("64m");
    assert!(warned.contains("instead of /dev/shm"), "{warned}");
    assert_eq!(small["after"], small["before"], "{small}");
    // 512 MiB: the store is in /dev/shm, 32 MiB of it used by the object.
    let (large, warned) = store_in("512m");
    assert!(!warned.contains("instead of /dev/shm"), "{warned}");
    let used = large["after"].as_u64().unwrap() - large["before"].as_u64().unwrap();
    assert!((32 << 20..34 << 20).contains(&used), "{large}");
}
