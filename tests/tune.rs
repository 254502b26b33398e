//! `shmbench tune` with real cells: a small grid searched in a /dev/shm of a chosen size (each
//! trial a namespace cell with its own tmpfs), the pick passing every run it had at the budget
//! and at the margin; and a loader whose every run gets a SIGBUS: nothing picked, each setting
//! named with how it ended, exit 1. Nothing is left behind either way. And real torch over a
//! user's own Dataset: the pick passes 5 runs of 5 of the real loader under the budget.

use crate::common;

use common::*;

/// The grid: 1 or 2 workers, prefetch 1 or 3, batch 8 of 3x224x224 f32 (4.6 MiB): each fits
/// in the margin's 40.8 MiB when training stalls (at most 8 batches, 36.8 MiB).
const GRID: &[&str] = &[
    "tune",
    "--shm-size",
    "48m",
    "--batch",
    "8",
    "--steps",
    "12",
    "--compute-ms",
    "5",
    "--tune-workers",
    "1,2",
    "--tune-prefetch",
    "1,3",
    "--tune-pin",
    "no",
    "--tune-start",
    "fork",
    "--tune-strategy",
    "file_descriptor",
    "--format",
    "json",
];

#[test]
fn the_pick_passed_every_run_at_the_budget_and_at_the_margin() {
    let _guard = third_serial();
    let before = machine_state();
    let plot = temp_dir("tune-plot");
    let mut args = GRID.to_vec();
    args.extend(["--plot", plot.as_ref().to_str().unwrap()]);
    let o = shmbench(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The frontier's plot, the pick named on it.
    let svg = std::fs::read_to_string(plot.as_ref().join("frontier.svg")).unwrap();
    assert!(svg.contains("(pick)") && plot.as_ref().join("frontier.png").exists());
    let tuned: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let candidates = tuned["candidates"].as_array().unwrap();
    // The grid and the usual guess (num_workers = the cores, prefetch 2) beside it.
    assert!(candidates.len() >= 4, "{tuned:#}");
    let pick = &candidates[tuned["pick"].as_u64().unwrap() as usize];
    let runs = pick["runs"].as_array().unwrap();
    let at = |bytes: u64| runs.iter().filter(|r| r["shm_bytes"] == bytes).count();
    assert!(
        at(48 << 20) >= 1 && at(tuned["margin_bytes"].as_u64().unwrap()) >= 2,
        "{pick:#}"
    );
    assert!(runs.iter().all(|r| r["status"] == "pass"), "{pick:#}");
    assert!(pick["needs_bytes"].as_u64().unwrap() <= tuned["margin_bytes"].as_u64().unwrap());
    // Progress went to stderr, one line per run, the JSON alone to stdout.
    let trials = tuned["trials"].as_u64().unwrap() as usize;
    let lines = stderr.lines().filter(|l| l.starts_with("  [")).count();
    assert_eq!(lines, trials, "{stderr}");
    assert_clean(&before);
}

#[test]
fn a_loader_that_always_gets_a_sigbus_has_no_pick() {
    let _guard = third_serial();
    let before = machine_state();
    let mut args: Vec<&str> = GRID.iter().copied().filter(|a| *a != "json").collect();
    args.retain(|a| *a != "--format");
    args.extend(["--inject", "kill-bus"]);
    let o = shmbench(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("pick:       none"), "{stdout}");
    assert!(stdout.contains("failed a run (never picked):"), "{stdout}");
    for setting in ["w1-p1-fork", "w2-p3-fork"] {
        assert!(
            (stdout.lines()).any(|l| l.trim_start().starts_with(setting) && l.contains("sigbus")),
            "{setting}: {stdout}"
        );
    }
    assert_clean(&before);
}

#[test]
fn a_budget_or_a_grid_it_cannot_honour_is_refused_before_any_trial() {
    let before = machine_state();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--memory", "900t"],
            "--memory 900 TiB is more than this machine's memory",
        ),
        (&["--memory", "5m"], "under 6 MiB at the margin"),
        (
            &[
                "--strategy",
                "file_system",
                "--tune-strategy",
                "file_descriptor",
            ],
            "--strategy fixes what --tune-strategy lists",
        ),
        (
            &["--persistent-workers", "true", "--tune-persistent", "no"],
            "--persistent-workers fixes what --tune-persistent lists",
        ),
        (
            &["--tune-strategy", "file_system,memfd"],
            "not a torch sharing strategy",
        ),
        (&["--tune-persistent", "yes,no"], "give --epochs 2 or more"),
        (&["--vm-cpus", "2"], "not in a container or a VM"),
    ];
    for (flags, says) in cases {
        let mut args = vec!["tune", "--shm-size", "64m"];
        args.extend_from_slice(flags);
        let o = shmbench(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(says), "{flags:?}: {stderr}");
        assert!(!stderr.contains("  ["), "a trial ran: {stderr}");
    }
    assert_clean(&before);
}

#[test]
fn a_real_torch_dataset_s_pick_passes_five_runs_of_five_under_the_budget() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = third_serial();
    let before = machine_state();
    let dataset = format!(
        "{}/tests/python/tune_dataset.py:images",
        env!("CARGO_MANIFEST_DIR")
    );
    // Batch 16 of 3x128x128 f32 and a label: 3.0 MiB a batch; in 16 MiB the usual guess (two
    // workers, prefetch 2: 6 batches when training stalls) has no room for a stall.
    let common = [
        "--loader",
        "torch",
        "--python",
        &python,
        "--dataset",
        &dataset,
        "--batch",
        "16",
        "--steps",
        "16",
        "--shm-size",
        "16m",
    ];
    let mut args = vec!["tune", "--tune-workers", "2", "--tune-prefetch", "1"];
    args.extend([
        "--tune-start",
        "fork",
        "--most-runs",
        "2",
        "--format",
        "json",
    ]);
    args.extend(common);
    let o = shmbench(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let tuned: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pick = &tuned["candidates"][tuned["pick"].as_u64().unwrap() as usize];
    let setting = &pick["setting"];
    // The model counted the Dataset's own sample (196,616 bytes: the image and its label), a
    // batch of 16 in whole pages.
    let batch = (16 * 196_616u64).div_ceil(4096) * 4096;
    assert!(
        pick["needs_bytes"].as_u64().unwrap().is_multiple_of(batch),
        "{pick:#}"
    );
    // Both of torch's strategies were tried (each trial real torch's own).
    let names: Vec<&str> = (tuned["candidates"].as_array().unwrap().iter())
        .filter(|c| !c["runs"].as_array().unwrap().is_empty())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.ends_with("-file_system")),
        "{names:?}"
    );
    let (workers, prefetch) = (
        setting["workers"].to_string(),
        setting["prefetch"].to_string(),
    );
    let strategy = setting["strategy"].as_str().unwrap();
    let out = temp_dir("tune-torch");
    let rows = out.as_ref().join("rows.csv");
    let mut run = vec![
        "run",
        "--repeat",
        "5",
        "--workers",
        &workers,
        "--prefetch",
        &prefetch,
    ];
    run.extend(["--start-method", "fork", "--strategy", strategy]);
    run.extend(["--out", rows.to_str().unwrap()]);
    run.extend(common);
    let o = shmbench(&run);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&rows).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), 5, "{text}");
    for r in &records {
        assert_eq!(&r[column("status")], "pass", "{text}");
        // The row says what went through /dev/shm: the Dataset's sample, its table.
        assert_eq!((&r[column("shape")], &r[column("dtype")]), ("196616", "u8"));
        assert_eq!(&r[column("dataset_bytes")], "1048576");
    }
    assert_clean(&before);
}
