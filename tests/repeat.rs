//! `--repeat auto`: interleaved rounds until a cell's interval is tight, within a minimum and a
//! maximum, and a note naming what did not converge; named baselines saved by one run and
//! compared by the next; `--no-calibrate`. Real cells, small batches.

use crate::common;

use common::*;

fn run_auto(
    dir: &std::path::Path,
    extra: &[&str],
) -> (Vec<std::collections::HashMap<String, String>>, String) {
    let out = dir.join("r.csv");
    let mut args = vec!["run", "--repeat", "auto", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = shmbench(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    (read_csv(&out), stderr)
}

#[test]
fn a_crashing_cell_stops_after_the_minimum_rounds() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("auto-crash");
    // The seed batch cannot fit in 64 MiB: every run crashes, and more runs measure nothing.
    let (rows, stderr) = run_auto(
        &dir,
        &["--shm-size", "64m", "--steps", "3", "--max-repeat", "6"],
    );
    assert_eq!(rows.len(), 3, "{stderr}");
    assert!(
        rows.iter().all(|r| out_of_shm_kind(&r["status"])),
        "{rows:?}"
    );
    assert!(stderr.contains("--repeat auto: every cell"), "{stderr}");
    assert_clean(&before);
}

#[test]
fn a_passing_cell_runs_until_its_interval_is_tight_or_the_maximum() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("auto-pass");
    // An unreachable target (0.01%) runs to the maximum and says the cell did not converge; a
    // generous one (99%) stops at the minimum.
    let small = [
        "--batch",
        "8",
        "--workers",
        "2",
        "--steps",
        "10",
        "--max-repeat",
        "4",
    ];
    let mut strict = small.to_vec();
    strict.extend(["--until-ci", "0.01%"]);
    let (rows, stderr) = run_auto(&dir, &strict);
    assert_eq!(rows.len(), 4, "{stderr}");
    assert!(stderr.contains("1 cell(s) did not converge"), "{stderr}");
    let reps: Vec<&str> = rows.iter().map(|r| r["repeat"].as_str()).collect();
    assert_eq!(reps, ["1", "2", "3", "4"]);
    // A run measures the data path first, for the efficiency columns; --no-calibrate leaves
    // them empty and says so.
    assert!(
        rows.iter()
            .all(|r| r["limit_img_per_s"].parse::<f64>().is_ok_and(|l| l > 0.0)),
        "{rows:?}"
    );
    let mut loose = small.to_vec();
    loose.extend(["--until-ci", "99%", "--no-calibrate"]);
    let (rows, stderr) = run_auto(&dir, &loose);
    assert_eq!(rows.len(), 3, "{stderr}");
    assert!(stderr.contains("every cell"), "{stderr}");
    assert!(stderr.contains("calibration skipped"), "{stderr}");
    assert!(
        rows.iter()
            .all(|r| r["limit_img_per_s"].is_empty() && r["efficiency"].is_empty()),
        "{rows:?}"
    );
    assert_clean(&before);
}

#[test]
fn a_named_baseline_is_saved_by_one_run_and_compared_by_the_next() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("baseline");
    // One cell whose outcome cannot vary: a batch of 16 images (9.2 MiB) never fits an 8 MiB
    // tmpfs, so every run dies at its first batch, however busy the machine.
    std::fs::write(
        dir.join("tiny.toml"),
        "name = \"tiny\"\n[defaults]\nruntime = \"namespace\"\nshm-size = \"8m\"\nbatch = 16\nworkers = 2\nsteps = 3\n[[cells]]\nname = \"overflow\"\nenvironment = \"8 MiB\"\n",
    )
    .unwrap();
    let matrix = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(BIN);
        cmd.current_dir(&dir)
            .args(["matrix", "tiny.toml", "--repeat", "2"]);
        cmd.args(extra).output().unwrap()
    };
    let o = matrix(&["--baseline", "main"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no baseline 'main'"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = matrix(&["--save-baseline", "main"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("results/baselines/main.csv").is_file());
    let o = matrix(&["--baseline", "main"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("against baseline 'main'"), "{stdout}");
    assert!(
        stdout.contains("sigbus 2 of 2 at step 1 in both"),
        "{stdout}"
    );
    assert_clean(&before);
}

/// The pids of this test's processes whose command line is `shmbench`'s path, then `word`.
fn processes_running(word: &str) -> Vec<u32> {
    our_processes(|args| args.get(1).is_some_and(|a| a == word))
}

#[test]
fn cpus_pins_the_cell_and_its_workers_and_a_cpu_that_is_not_there_is_an_error() {
    let _guard = serial();
    let before = machine_state();
    // Long enough to look at its workers: 100 steps of 20 ms compute.
    let mut child =
        spawn_run("--cpus 0 --batch 8 --workers 2 --steps 100 --compute-ms 20 --runtime host");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let workers = loop {
        let found = processes_running("worker");
        if found.len() == 2 || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(workers.len(), 2, "the workers never showed up");
    for pid in workers {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let allowed = status
            .lines()
            .find(|l| l.starts_with("Cpus_allowed_list:"))
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string());
        assert_eq!(allowed.as_deref(), Some("0"), "worker {pid}: {status}");
    }
    assert!(child.wait().unwrap().success());
    let (o, rows) = run_rows("--cpus 1000 --batch 8 --steps 2");
    assert_eq!(
        rows[0]["status"],
        "error",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        rows[0]["message"].contains("--cpus 1000: cannot run on those CPUs"),
        "{:?}",
        rows[0]
    );
    assert_eq!(rows[0]["cpus"], "1000");
    // Beyond any affinity mask: refused before anything runs.
    let o = shmbench(&["run", "--cpus", "4000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a CPU list"));
    assert_clean(&before);
}

/// One cell on this machine's /dev/shm (a private tmpfs here): a baseline saved where it passes,
/// then the same configuration where it cannot (an 8 MiB /dev/shm, a 9.2 MiB batch), judged
/// against it with runs added while undecided.
const FLIP: &str = r#"
set -u
cd "$OUT"
printf 'name = "flip"\n[defaults]\nruntime = "host"\nbatch = 16\nworkers = 1\nsteps = 3\n[[cells]]\nname = "one"\nenvironment = "host"\n' > flip.toml
mount -t tmpfs -o size=96m tmpfs /dev/shm
"$SHMBENCH" matrix flip.toml --repeat 3 --save-baseline b > saved.out 2>&1; echo $? > saved.rc
umount /dev/shm; mount -t tmpfs -o size=8m tmpfs /dev/shm
"$SHMBENCH" matrix flip.toml --repeat 3 --baseline b --max-repeat 8 --out flip.csv > flip.out 2>&1; echo $? > flip.rc
"#;

#[test]
fn an_undecided_flip_gets_runs_added_until_it_is_decided() {
    if !require("unshare", || which("unshare"), "unshare (util-linux)") {
        return;
    }
    let _guard = serial();
    let run = ScriptRun::of("more-runs", FLIP);
    let read = |name: &str| run.read(name);
    assert_eq!(read("saved.rc").trim(), "0", "{}", read("saved.out"));
    let flip = read("flip.out");
    // 3 passes against 3 crashes cannot be told from chance (Fisher's p = 0.1): runs are added
    // to the candidate until it can (3 against 4: p = 1/35 < 0.05), and the flip is a regression.
    assert_eq!(read("flip.rc").trim(), "1", "{flip}");
    assert!(
        flip.contains("added ") && flip.contains("no cell is left"),
        "{flip}"
    );
    let rows = read_csv(&run.dir().join("flip.csv"));
    assert!(
        rows.len() > 3 && rows.len() <= 8,
        "{} rows: {flip}",
        rows.len()
    );
}
