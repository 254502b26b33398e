//! An unprivileged user for the rootless Podman tests (`shmbench-rootless`: no home, no login
//! shell, subordinate uid and gid ranges as `useradd` allocates them, which gVisor's sandbox
//! needs: without them runsc could not start one, "fork/exec /proc/self/exe: operation not
//! permitted"), and `newuidmap` (Debian's uidmap). A user this set-up made is removed after the
//! tests, its processes first (a rootless Podman's pause process outlives its commands); one
//! that was there before is left as it was.

use crate::host::{cache_dir, on_path, run};
use crate::requirement::Requirement;

/// The tests run `shmbench` as this user (tests/runtimes.rs names it too).
pub const USER: &str = "shmbench-rootless";

/// Kept while the user this set-up made exists: the proof that it may remove it.
fn made_here() -> std::path::PathBuf {
    cache_dir("runtimes").join("user-made-by-tests")
}

/// The user's line of `file` (/etc/passwd, /etc/subuid, /etc/subgid), if it has one.
fn entry(file: &str) -> Option<String> {
    std::fs::read_to_string(file)
        .ok()?
        .lines()
        .find(|l| l.split(':').next() == Some(USER))
        .map(str::to_string)
}

/// The user's uid, None while there is no such user.
fn uid() -> Option<u32> {
    entry("/etc/passwd")?.split(':').nth(2)?.parse().ok()
}

pub struct RootlessUser;

impl Requirement for RootlessUser {
    fn name(&self) -> &'static str {
        "an unprivileged user for rootless Podman"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_RUNTIMES")
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut done = Vec::new();
        if !on_path("newuidmap") {
            crate::apt::install(&["uidmap"])?;
            done.push("installed uidmap".to_string());
        }
        if uid().is_none() {
            std::fs::create_dir_all(cache_dir("runtimes"))?;
            std::fs::write(made_here(), USER)?;
            run(&[
                "useradd",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                "--comment",
                "shmbench tests, rootless Podman",
                USER,
            ])?;
            done.push(format!("made the user {USER} (removed after the tests)"));
        }
        if entry("/etc/subuid").is_none() || entry("/etc/subgid").is_none() {
            return Err(anyhow::anyhow!(
                "{USER} has no subordinate uid or gid range: add one (`usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {USER}`), or set SHMBENCH_SKIP_RUNTIMES=1"
            ));
        }
        Ok(match done.is_empty() {
            true => format!("{USER} present"),
            false => done.join("; "),
        })
    }

    fn stop(&self) -> Option<String> {
        if !made_here().exists() {
            return None;
        }
        let existed = uid();
        if let Some(uid) = existed {
            // Ours by the marker: what still runs as it is a rootless Podman's own, and so is
            // the lock file its Podman keeps in /dev/shm, named by its uid.
            let _ = run(&["pkill", "-KILL", "-u", USER]);
            std::thread::sleep(std::time::Duration::from_millis(300));
            let _ = std::fs::remove_file(format!("/dev/shm/libpod_rootless_lock_{uid}"));
            if let Err(e) = run(&["userdel", USER]) {
                return Some(format!("could not remove the user {USER}: {e}"));
            }
        }
        let _ = std::fs::remove_file(made_here());
        existed.map(|_| format!("removed the user {USER}"))
    }
}
