//! Container cells under each engine and OCI runtime: docs/RUNTIMES.md's table measured under
//! Docker and rootful Podman, each with runc, gVisor's runsc and crun (`cargo xtask test`
//! installs them and registers crun and runsc with the Docker engine). A runtime that does not
//! start here must say why in its rows (runc must start); every row records its engine and
//! runtime with their versions; each engine's default /dev/shm is measured as it leaves it;
//! nothing of either engine is left behind.

use crate::common;

use std::process::{Command, Stdio};

use common::*;

/// These tests need Podman, crun and runsc besides Docker (SHMBENCH_SKIP_RUNTIMES=1 skips them).
pub(crate) fn runtimes_or_skip() -> bool {
    docker_or_skip()
        && require(
            "runtimes",
            || {
                ["podman", "crun", "runsc"]
                    .iter()
                    .all(|p| which::which(p).is_ok())
            },
            "podman, crun and runsc",
        )
}

/// The Podman containers of these tests' cells (named `shmbench-TOKEN-CELL-N` after the
/// table's cells, or `adhoc` for `run`), and the Podman services their runs started (they carry
/// this lane's mark): another user's run beside them has neither.
fn podman_leftovers() -> Vec<String> {
    let listed = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let names = listed(&[
        "podman",
        "ps",
        "-a",
        "--format",
        "{{.Names}}",
        "--filter",
        "label=org.shmbench.run-token",
    ]);
    let cells = [
        "default-legacy",
        "default-modern",
        "sized-2g",
        "emptydir-64m",
        "memory-256m",
        "adhoc",
    ];
    let containers = names
        .lines()
        .filter(|n| cells.iter().any(|c| n.contains(c)));
    let services = listed(&[
        "pgrep",
        "-f",
        "system service --time=0 unix:///.*shmbench-podman-",
    ]);
    let ours = services
        .lines()
        .filter(|pid| pid.parse().is_ok_and(carries_mark));
    containers.chain(ours).map(String::from).collect()
}

/// The machine as clean as `before` (processes, segments, mounts, Docker's containers), and no
/// Podman container or service of these tests left.
fn assert_clean_of_podman(before: &MachineState) {
    assert_clean(before);
    let left = podman_leftovers();
    assert!(
        left.is_empty(),
        "Podman containers or services left: {left:?}"
    );
}

/// The memory controller is cgroup v1's (hybrid included).
pub(crate) fn cgroup_v1() -> bool {
    shmbench::sys::cgroup::version() == Some(1)
}

/// The table of docs/RUNTIMES.md as cells: each engine's default /dev/shm under both torch
/// profiles, a 2 GiB `--shm-size`, a Memory emptyDir of 64 MiB, and a memory limit below the
/// batches in flight. Full-size batches (73.5 MiB), 2 workers, 4 steps.
pub(crate) const TABLE: &str = r#"
name = "runtimes"
[defaults]
container = "docker"
workers = 2
steps = 4
[[cells]]
name = "default-legacy"
[[cells]]
name = "default-modern"
torch = "modern"
[[cells]]
name = "sized-2g"
shm-size = "2g"
[[cells]]
name = "emptydir-64m"
shm-size = "64m"
shm-tmpfs = true
[[cells]]
name = "memory-256m"
shm-size = "2g"
memory = "256m"
# Long enough that the container still lives when the harness reads its cgroup's limit: where
# no limit applies (rootless on cgroup v1) 4 steps ended before that read on a busy machine.
steps = 20
"#;

/// What a cell of the table must measure where its runtime starts: its status, and the /dev/shm
/// its container saw (None: not asserted). `rootless`: the engine ran as an unprivileged user.
fn expected(
    cell: &str,
    engine: &str,
    oci: &str,
    rootless: bool,
) -> (&'static [&'static str], Option<u64>) {
    // Each engine's own default /dev/shm: Docker's 64 MiB, Podman's 64000k.
    let default_shm = match engine {
        "podman" => 64_000 << 10,
        _ => 64 << 20,
    };
    match cell {
        // torch <= 2.9 at a full tmpfs: SIGBUS, or the legacy 1-byte write's ENOSPC when both
        // workers fill it at once (the race `assert_legacy_out_of_shm` describes).
        "default-legacy" => (&["sigbus", "enospc"], Some(default_shm)),
        "default-modern" => (&["enospc"], Some(default_shm)),
        "sized-2g" => (&["pass"], Some(2 << 30)),
        "emptydir-64m" => (&["sigbus", "enospc"], Some(64 << 20)),
        // A rootless engine on cgroup v1 applies no resource limits: the run must say so (an
        // error row naming the container's unlimited cgroup), never measure the cell as if the
        // limit held. Where it does apply them, the limit is met as it is rootful.
        _ if rootless && cgroup_v1() => (&["error"], None),
        _ if rootless => (&["oom", "error"], None),
        // Under gVisor the OOM kill takes the whole sandbox, record and all: Docker reports the
        // OOM, Podman an exit code 0 and no OOM event (an error row).
        _ if oci == "runsc" => (&["oom", "error"], None),
        _ => (&["oom"], None),
    }
}

#[test]
fn the_table_is_measured_under_every_engine_and_oci_runtime_and_rows_name_them() {
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let dir = temp_dir("runtimes");
    let (scenario, out) = (dir.join("runtimes.toml"), dir.join("r.csv"));
    std::fs::write(&scenario, TABLE).unwrap();
    let ran = shmbench(&[
        "matrix",
        scenario.to_str().unwrap(),
        "--engines",
        "docker,podman",
        "--oci-runtimes",
        "runc,runsc,crun",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&ran.stdout);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 30, "{text}");
    assert!(
        rows.iter().all(|r| r["docker_rootless"] == "false"),
        "{text}"
    );
    let started = judge(&rows);
    for must in ["docker runc", "podman runc"] {
        assert!(
            started.iter().any(|s| s == must),
            "{must} did not run: {text}"
        );
    }
    // Tracked like kernels: the history's columns are the runtimes, and its cells pair across
    // them (one run a side judges nothing, and says so).
    let history = shmbench(&["history", out.to_str().unwrap(), "--by", "runtime"]);
    let said = String::from_utf8_lossy(&history.stdout);
    assert!(
        said.contains("docker://") && said.contains("podman://"),
        "{said}"
    );
    assert!(said.contains("not judged"), "{said}");
    assert_clean_of_podman(&before);
}

/// A row the engine would not run under its OCI runtime: an error before any step whose message
/// names the runtime (Docker's own words for a refusal do not).
pub(crate) fn refused_by_engine(row: &std::collections::HashMap<String, String>) -> bool {
    row["status"] == "error"
        && row["steps_done"] == "0"
        && row["message"].contains(&format!("(OCI runtime {} ", row["oci_runtime"]))
}

/// The row names the OCI runtime it ran under and the version its binary gave.
pub(crate) fn assert_names_its_runtime(row: &std::collections::HashMap<String, String>) {
    let recorded = &row["docker_oci_runtime"];
    assert!(
        recorded.starts_with(&format!("{} ", row["oci_runtime"])) && !recorded.ends_with(" ?"),
        "the row names its OCI runtime and version: {row:?}"
    );
}

/// Judges each row of the table under its engine and OCI runtime: a runtime that cannot start
/// here says so in its rows (runc must start), and one that starts measures what `expected`
/// says. The engines and runtimes that started (`podman runsc`).
pub(crate) fn judge(rows: &[std::collections::HashMap<String, String>]) -> Vec<String> {
    let mut started = Vec::new();
    for row in rows {
        let (engine, oci) = (row["engine"].as_str(), row["oci_runtime"].as_str());
        assert!(!row["docker_version"].is_empty(), "{row:?}");
        let refused = refused_by_engine(row) && !started.contains(&format!("{engine} {oci}"));
        if refused && row["cell"] == "default-legacy" {
            // A runtime that cannot start here: the engine's refusal, named; runc must start.
            assert_ne!(oci, "runc", "runc must start here: {row:?}");
            continue;
        }
        if row["cell"] == "default-legacy" {
            started.push(format!("{engine} {oci}"));
        }
        if !started.contains(&format!("{engine} {oci}")) {
            assert_eq!(
                row["status"], "error",
                "refused once, refused always: {row:?}"
            );
            continue;
        }
        assert_names_its_runtime(row);
        let rootless = row["docker_rootless"] == "true";
        let (statuses, shm) = expected(&row["cell"], engine, oci, rootless);
        assert!(statuses.contains(&row["status"].as_str()), "{row:?}");
        if rootless && cgroup_v1() && row["cell"] == "memory-256m" {
            assert!(
                row["message"].contains("did not apply the cell's memory limit of 256 MiB")
                    && row["message"].contains("has no limit"),
                "{row:?}"
            );
        }
        if let Some(bytes) = shm {
            assert_eq!(row["shm_seen_bytes"], bytes.to_string(), "{row:?}");
        }
        // Each profile's own words: the modern one never the legacy write's.
        let legacy_write = row["message"].contains("unable to write to file");
        if row["status"] == "enospc" {
            assert_eq!(legacy_write, row["cell"] != "default-modern", "{row:?}");
        }
        if row["status"] == "sigbus" || row["status"] == "enospc" {
            assert_eq!(
                row["crash_step"], "1",
                "a batch larger than /dev/shm: {row:?}"
            );
        }
    }
    started
}

/// A terminal's Ctrl-C reaches the whole process group: the Podman service the run started must
/// outlive it long enough for the harness to remove its container, and the harness must end.
#[test]
fn a_ctrl_c_to_the_group_mid_podman_cell_ends_the_run_and_leaves_no_service() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let out = temp_dir("runtimes-int").keep().join("r.csv");
    let args = "--container docker --engine podman --oci-runtime runc --shm-size 256m --batch 8 --workers 2 --steps 100000 --compute-ms 20";
    let mut child = command()
        .args(["run", "--out", out.to_str().unwrap()])
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[1/1]");
    std::thread::sleep(Duration::from_secs(2));
    let group = format!("-{}", child.id());
    assert!(Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .unwrap()
        .success());
    let reader =
        std::thread::spawn(move || stderr.lines().map_while(Result::ok).collect::<Vec<_>>());
    // Bounded: a harness that hangs here is the failure this test is for.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the harness did not end within 60 s of a Ctrl-C to its group");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let rest = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("Interrupt")), "{rest:?}");
    assert_clean_of_podman(&before);
}

/// A SIGKILLed run cannot stop its Podman service: the service dies with it (PR_SET_PDEATHSIG),
/// its container with the lifeline, and the service's directory goes at the next sweep, by the
/// run's token.
#[test]
fn a_killed_runs_podman_service_dies_with_it_and_its_directory_is_swept() {
    use std::io::BufReader;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let mut child = spawn_run(
        "--container docker --engine podman --oci-runtime runc --shm-size 256m --batch 8 --workers 2 --steps 100000 --compute-ms 20",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[1/1]");
    // The run's service, found by this lane's mark, names its directory in its socket's path.
    let services = Command::new("pgrep")
        .args(["-af", "system service --time=0 unix:///.*shmbench-podman-"])
        .output()
        .unwrap();
    let services = String::from_utf8_lossy(&services.stdout).into_owned();
    let ours: Vec<PathBuf> = services
        .lines()
        .filter(|l| {
            l.split(' ')
                .next()
                .and_then(|p| p.parse().ok())
                .is_some_and(carries_mark)
        })
        .filter_map(|l| l.split("unix://").nth(1))
        .filter_map(|sock| {
            std::path::Path::new(sock.trim())
                .parent()
                .map(PathBuf::from)
        })
        .collect();
    send_signal(child.id(), "KILL");
    child.wait().unwrap();
    assert_eq!(ours.len(), 1, "the run's one service: {services}");
    let dirs = || {
        ours.iter()
            .filter(|d| d.exists())
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(dirs().len(), 1, "the service's directory, left by the kill");
    // The service dies with the run; a container it was making may stay, created and never
    // started: the sweep removes it, and the directory, by the dead run's token.
    let swept = shmbench(&["sweep"]);
    let said = String::from_utf8_lossy(&swept.stdout).into_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !podman_leftovers().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let left = podman_leftovers();
    assert!(
        left.is_empty(),
        "left after the sweep: {left:?}; it said {said}"
    );
    assert_eq!(dirs(), Vec::<PathBuf>::new(), "{said}");
    assert_clean(&before);
}
