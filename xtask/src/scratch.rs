//! The tests' scratch directory: one directory this run creates (`create_dir` fails on one that
//! exists, so what it removes afterwards is provably its own, not a name pattern), handed to the
//! tests as `SHMBENCH_TEST_SCRATCH`; their temporary directories go inside it and leave with it,
//! those a test keeps for a child that outlives it included.

use std::path::{Path, PathBuf};

pub(crate) const VARIABLE: &str = "SHMBENCH_TEST_SCRATCH";

pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// A new directory in the system's temporary directory, or None (the tests then use it
    /// directly, as without the xtask).
    pub(crate) fn create() -> Option<Scratch> {
        let base = std::env::temp_dir();
        (0..100).find_map(|n| {
            let dir = base.join(format!("shmbench-tests-{}-{n}", std::process::id()));
            std::fs::create_dir(&dir).ok().map(|()| Scratch(dir))
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Removes the directory, unless something is still mounted inside it (removing would reach
    /// into that file system): then it is left, and the error says so. The run fails on an
    /// error: this directory is the one leftover of the tests' that only the run can name (a
    /// check by name pattern afterwards would also judge another run's directory).
    pub(crate) fn remove(self) -> anyhow::Result<String> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let inside = format!("{}/", self.0.display());
        let mounted = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|point| point.starts_with(&inside) || *point == self.0.to_str().unwrap_or(""))
            .count();
        if mounted > 0 {
            anyhow::bail!(
                "left {}: {mounted} mount(s) inside it are still there",
                self.0.display()
            );
        }
        match std::fs::remove_dir_all(&self.0) {
            Ok(()) => Ok(format!("removed {}", self.0.display())),
            Err(e) => anyhow::bail!("could not remove {}: {e}", self.0.display()),
        }
    }

    /// Removes the directory and says so; false when it stays (the run then fails).
    pub(crate) fn remove_and_say(self) -> bool {
        match self.remove() {
            Ok(what) => {
                println!("== the tests' scratch directory: {what}");
                true
            }
            Err(why) => {
                eprintln!("== the tests' scratch directory: {why:#}");
                false
            }
        }
    }
}
