//! `--repeat auto`: interleaved rounds until a cell's interval is tight, within a minimum and a
//! maximum, and a note naming what did not converge. Real cells, small batches.

mod common;

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
    assert!(rows.iter().all(|r| r["status"] == "sigbus"), "{rows:?}");
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
    let mut loose = small.to_vec();
    loose.extend(["--until-ci", "99%"]);
    let (rows, stderr) = run_auto(&dir, &loose);
    assert_eq!(rows.len(), 3, "{stderr}");
    assert!(stderr.contains("every cell"), "{stderr}");
    assert_clean(&before);
}
