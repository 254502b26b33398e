//! Scripts run in a mount namespace of the test's own, where they mount a private tmpfs on
//! /dev/shm (so the node's /dev/shm is never touched), and what `shmbench shm` prints there.

use super::*;

/// Runs `script` with bash in a private mount namespace; `$SHMBENCH` is the binary and `$OUT`
/// the directory `out`.
pub fn in_private_shm(script: &str, out: &Path) -> Output {
    Command::new("unshare")
        .args(["-m", "bash", "-c", script])
        .env("SHMBENCH", BIN)
        .env("OUT", out)
        .output()
        .expect("unshare runs")
}

/// What a script run in a private /dev/shm wrote into its scratch directory.
pub struct ScriptRun(Scratch);

impl ScriptRun {
    /// Runs `script` (as [`in_private_shm`]) in a scratch directory of its own, named after
    /// `name`, and checks it ran to its end.
    pub fn of(name: &str, script: &str) -> ScriptRun {
        let dir = temp_dir(name);
        let run = in_private_shm(script, dir.as_ref());
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        ScriptRun(dir)
    }

    /// The file `name` the script wrote, or "" where it wrote none.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap_or_default()
    }

    pub fn dir(&self) -> &Path {
        self.0.as_ref()
    }
}

/// Whether `program` is on the PATH.
pub fn which(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A JSON file written by the shmbench binary.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A sweep's JSON lines (`shm --format json --sweep-stale`): the audit, one line per event,
/// then the totals. Returns the events and the totals (`swept`).
pub fn sweep_lines(path: &Path) -> (Vec<Value>, Value) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        lines.len() >= 2,
        "a sweep prints its audit and totals: {text}"
    );
    let swept = lines[lines.len() - 1]["swept"].clone();
    (lines[1..lines.len() - 1].to_vec(), swept)
}

/// The directory of Prometheus's programs (`promtool`, `prometheus`,
/// `prometheus-node-exporter`) that `cargo xtask test` unpacks (SHMBENCH_SKIP_PROMETHEUS=1
/// skips the tests that need them).
pub fn prometheus_or_skip() -> Option<PathBuf> {
    let dir = std::env::var_os("SHMBENCH_PROMETHEUS_BIN").map(PathBuf::from);
    let found = dir.clone().filter(|d| d.join("promtool").is_file());
    require(
        "prometheus",
        || found.is_some(),
        "Prometheus's programs: set SHMBENCH_PROMETHEUS_BIN to the directory of promtool, prometheus and prometheus-node-exporter (cargo xtask test unpacks them into ~/.cache/shmbench/prometheus/root/usr/bin)",
    )
    .then(|| dir.unwrap())
}

/// Runs Prometheus's `promtool ARGS` (from `bin`, as `prometheus_or_skip` gives it) in `dir` and
/// fails, with what it said and `context`, unless it passes.
pub fn assert_promtool_passes(bin: &Path, args: &[&str], dir: &Path, context: &str) {
    let out = Command::new(bin.join("promtool"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}\n{context}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
