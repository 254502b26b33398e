//! compare, merge and history on constructed results files: known changes must get the known
//! verdicts and exit codes, and noise must not.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use shmbench::model::record::Status;
use shmbench::results::csv::{self, ResultsFile};
use shmbench::results::row::SCHEMA;
use shmbench::results::Row;

fn fixture_rows() -> Vec<Row> {
    csv::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed.csv")).unwrap()
}

/// The docker-tuned cell, `rates.len()` runs with these img/s (a rate of 0 makes a crash).
fn runs(rates: &[f64], run_id: &str, kernel: &str) -> Vec<Row> {
    let template = fixture_rows()
        .into_iter()
        .find(|r| r.cell == "docker-tuned")
        .unwrap();
    rates
        .iter()
        .enumerate()
        .map(|(i, &rate)| {
            let mut r = template.clone();
            r.repeat = i as u32 + 1;
            r.run_id = run_id.to_string();
            r.kernel = kernel.to_string();
            r.steps_file = None;
            if rate > 0.0 {
                r.img_per_s = Some(rate);
            } else {
                r.status = Status::Sigbus;
                r.crash_step = Some(12);
                r.img_per_s = None;
            }
            r
        })
        .collect()
}

fn write(dir: &Path, name: &str, rows: Vec<Row>) -> PathBuf {
    let path = dir.join(name);
    ResultsFile::create(&path).unwrap().replace(rows).unwrap();
    path
}

fn compare(base: &Path, cand: &Path) -> (Option<i32>, String) {
    let o = shmbench(&["compare", base.to_str().unwrap(), cand.to_str().unwrap()]);
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

const BASE: [f64; 5] = [3000.0, 3010.0, 2990.0, 3005.0, 2995.0];

#[test]
fn a_tight_ten_percent_drop_is_regressed_and_fails_ci() {
    let dir = temp_dir("cmp-drop");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let drop: Vec<f64> = BASE.iter().map(|x| x * 0.9).collect();
    let cand = write(&dir, "cand.csv", runs(&drop, "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("| docker-tuned | regressed"), "{out}");
    assert!(out.contains("-10.0%"), "{out}");
    // And the other way round it is an improvement, exit 0.
    let (code, out) = compare(&cand, &base);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("improved"), "{out}");
}

#[test]
fn one_percent_noise_is_unchanged() {
    let dir = temp_dir("cmp-noise");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let noisy = [2985.0, 3020.0, 2970.0, 3000.0, 3010.0];
    let cand = write(&dir, "cand.csv", runs(&noisy, "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("| docker-tuned | unchanged"), "{out}");
}

#[test]
fn a_pass_that_becomes_a_sigbus_is_an_outcome_change_and_fails_ci() {
    let dir = temp_dir("cmp-crash");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let cand = write(
        &dir,
        "cand.csv",
        runs(&[0.0, 0.0, 0.0, 3000.0, 0.0], "b", "6.1"),
    );
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("outcome-changed (worse)") && out.contains("pass -> sigbus at step 12"),
        "{out}"
    );
}

#[test]
fn one_run_per_side_never_claims_a_regression() {
    let dir = temp_dir("cmp-one");
    let base = write(&dir, "base.csv", runs(&[3000.0], "a", "6.1"));
    let cand = write(&dir, "cand.csv", runs(&[2000.0], "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("no interval, so no change is claimed"),
        "{out}"
    );
}

#[test]
fn mismatched_inputs_are_clear_errors() {
    let dir = temp_dir("cmp-bad");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let mut other = fixture_rows();
    other.retain(|r| r.cell != "docker-tuned");
    for r in &mut other {
        r.scenario = "another".into();
    }
    let other = write(&dir, "other.csv", other);
    let (code, out) = compare(&base, &other);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no cell in common"), "{out}");
    let text = std::fs::read_to_string(&base).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    let v9 = dir.join("v9.csv");
    std::fs::write(
        &v9,
        format!(
            "{header}\n{}",
            body.replace(&format!("\n{SCHEMA},"), "\n9,")
                .replacen(&format!("{SCHEMA},"), "9,", 1)
        ),
    )
    .unwrap();
    let (code, out) = compare(&base, &v9);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("schema 9 but this shmbench reads schemas 1, 2, 3"),
        "{out}"
    );
}

#[test]
fn merge_and_history_find_the_kernel_that_stepped() {
    let dir = temp_dir("history");
    let mut files = Vec::new();
    for (i, (kernel, scale)) in [("6.1", 1.0), ("6.6", 1.0), ("6.9", 0.8), ("6.18", 0.8)]
        .iter()
        .enumerate()
    {
        let rates: Vec<f64> = BASE.iter().map(|x| x * scale).collect();
        files.push(write(
            &dir,
            &format!("k{i}.csv"),
            runs(&rates, &format!("run{i}"), kernel),
        ));
    }
    let merged = dir.join("all.csv");
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--out".into(), merged.display().to_string()]);
    let o = shmbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(csv::read(&merged).unwrap().len(), 20);
    let o = shmbench(&["history", merged.to_str().unwrap(), "--by", "kernel"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("img/s stepped -20.0% at kernel = 6.9"),
        "{out}"
    );
    assert!(
        !out.contains("at kernel = 6.18"),
        "no step where nothing changed: {out}"
    );
}

#[test]
fn history_by_shm_size_shows_where_the_outcome_changes() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("history-shm");
    let mut files = Vec::new();
    // Batch 8 (4.6 MiB): 2 workers x prefetch 2 + 1 held = 5 batches (23 MiB) at the peak.
    for size in ["8m", "16m", "32m", "64m"] {
        let out = dir.join(format!("{size}.csv"));
        let o = shmbench(&[
            "run",
            "--name",
            "small",
            "--batch",
            "8",
            "--workers",
            "2",
            "--steps",
            "10",
            "--compute-ms",
            "20",
            "--decode-us",
            "300",
            "--shm-size",
            size,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(out.display().to_string());
    }
    let mut args = vec!["history".to_string()];
    args.extend(files);
    args.extend(["--by".into(), "shm".into()]);
    let o = shmbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("small: outcome changed from sigbus at step")
            && out.contains("to pass at shm = 32 MiB"),
        "{out}"
    );
    assert_clean(&before);
}

#[test]
fn history_by_torch_version_tracks_torch_cells_across_releases() {
    use shmbench::model::knobs::{Loader, TorchProfile};
    let dir = temp_dir("history-torch");
    // The same torch cell under three releases; 2.10 moved shared segments to posix_fallocate,
    // so its crash kind changes there (and the profile column with it).
    let mut files = Vec::new();
    for (i, version) in ["2.9.1", "2.10.0", "2.15.0"].iter().enumerate() {
        let mut rows = runs(&[0.0, 0.0], &format!("t{i}"), "6.1");
        for r in &mut rows {
            r.loader = Loader::Torch;
            r.torch_version = Some(version.to_string());
            let modern = i > 0;
            r.torch = if modern {
                TorchProfile::Modern
            } else {
                TorchProfile::Legacy
            };
            r.status = if modern {
                Status::Enospc
            } else {
                Status::Sigbus
            };
        }
        files.push(write(&dir, &format!("t{i}.csv"), rows));
    }
    let mut args = vec!["history", "--by", "torch-version"];
    let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    let o = shmbench(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Releases in version order (2.9 before 2.10), one trend for the cell, the step at 2.10.
    let header = out.lines().find(|l| l.starts_with("| cell")).unwrap();
    assert!(
        header.find("2.9.1").unwrap() < header.find("2.10.0").unwrap(),
        "{header}"
    );
    assert!(
        out.contains("outcome changed from sigbus at step")
            && out.contains("at torch-version = 2.10.0"),
        "{out}"
    );
}

/// `runs` with CPU per image set per run (img/s all the same).
fn runs_with_cpu(cpu: &[f64], run_id: &str) -> Vec<Row> {
    let rates = vec![3000.0; cpu.len()];
    runs(&rates, run_id, "6.1")
        .into_iter()
        .zip(cpu)
        .map(|(mut r, &c)| {
            r.cpu_ms_per_img = Some(c);
            r
        })
        .collect()
}

#[test]
fn a_tight_rise_of_cpu_per_image_is_regressed_even_when_img_per_s_holds() {
    let dir = temp_dir("cmp-cpu");
    let cpu = [0.600, 0.602, 0.598, 0.601, 0.599];
    let base = write(&dir, "base.csv", runs_with_cpu(&cpu, "a"));
    let up: Vec<f64> = cpu.iter().map(|x| x * 1.10).collect();
    let cand = write(&dir, "cand.csv", runs_with_cpu(&up, "b"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("regressed") && out.contains("CPU per image up"),
        "{out}"
    );
    // The same CPU again is no change, and a rise within the CPU threshold is none either.
    let again = write(&dir, "again.csv", runs_with_cpu(&cpu, "c"));
    let (code, out) = compare(&base, &again);
    assert_eq!(code, Some(0), "{out}");
    // What a green result means: with this spread and 5 runs a side, only a change beyond the
    // threshold plus the noise interval's half-width can be flagged.
    assert!(out.contains("detectable here with the baseline's spread and up to 5 runs per side: CPU per image changes beyond 3."), "{out}");
    let small: Vec<f64> = cpu.iter().map(|x| x * 1.01).collect();
    let small = write(&dir, "small.csv", runs_with_cpu(&small, "d"));
    let (code, out) = compare(&base, &small);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn match_name_pairs_cells_whose_knobs_changed_on_purpose_and_names_the_knob() {
    let dir = temp_dir("cmp-match");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let changed: Vec<Row> = runs(&BASE, "b", "6.1")
        .into_iter()
        .map(|mut r| {
            r.decode_us = 300;
            r
        })
        .collect();
    let cand = write(&dir, "cand.csv", changed);
    // By configuration they are different cells: nothing in common.
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--match name"), "{out}");
    let o = shmbench(&[
        "compare",
        "--match",
        "name",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("decode-us: 0 -> 300"), "{out}");
}

#[test]
fn compare_speaks_github_and_json_for_ci_services() {
    let dir = temp_dir("cmp-formats");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    let drop: Vec<f64> = BASE.iter().map(|x| x * 0.9).collect();
    let cand = write(&dir, "cand.csv", runs(&drop, "b", "6.1"));
    let args = |format: &str| {
        shmbench(&[
            "compare",
            "--format",
            format,
            base.to_str().unwrap(),
            cand.to_str().unwrap(),
        ])
    };
    let o = args("github");
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("**shmbench: 1 regression(s)**: docker-tuned"),
        "{out}"
    );
    let o = args("json");
    assert_eq!(o.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["regressions"], 1, "{json}");
    assert_eq!(json["cells"][0]["verdict"], "regressed", "{json}");
    assert!(
        json["cells"][0]["change"].as_f64().unwrap() < -0.05,
        "{json}"
    );
}

#[test]
fn export_writes_bencher_metric_format_with_intervals() {
    let dir = temp_dir("bmf");
    let rows: Vec<Row> = runs(&BASE, "a", "6.1")
        .into_iter()
        .chain(runs(&[0.0, 0.0], "a", "6.1").into_iter().map(|mut r| {
            r.cell = "crashing".into();
            r
        }))
        .collect();
    let file = write(&dir, "r.csv", rows);
    let o = shmbench(&["export", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bmf: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tuned = &bmf["seed-matrix/docker-tuned"];
    assert_eq!(tuned["throughput"]["value"], 3000.0, "{bmf}");
    assert!(
        tuned["throughput"]["lower_value"].as_f64().unwrap() <= 3000.0,
        "{bmf}"
    );
    assert!(
        tuned["throughput"]["upper_value"].as_f64().unwrap() >= 3000.0,
        "{bmf}"
    );
    assert_eq!(
        bmf["seed-matrix/crashing"]["crash-step"]["value"], 12.0,
        "{bmf}"
    );
    assert!(
        bmf["seed-matrix/crashing"].get("throughput").is_none(),
        "{bmf}"
    );
}

#[test]
fn history_follows_cpu_per_image_through_a_knob_change_and_draws_it() {
    let dir = temp_dir("hist-cpu");
    let cpu = [0.600, 0.602, 0.598, 0.601, 0.599];
    let before: Vec<Row> = runs_with_cpu(&cpu, "a");
    let after: Vec<Row> = runs_with_cpu(&cpu.map(|x| x * 1.13), "b")
        .into_iter()
        .map(|mut r| {
            r.kernel = "6.2".into();
            r.decode_us = 70;
            r
        })
        .collect();
    let a = write(&dir, "a.csv", before);
    let b = write(&dir, "b.csv", after);
    let plots = dir.join("plots");
    let o = shmbench(&[
        "history",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--by",
        "kernel",
        "--metric",
        "cpu-per-image",
        "--match",
        "name",
        "--plot",
        plots.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("docker-tuned: CPU ms/img stepped +13.0% at kernel = 6.2"),
        "{out}"
    );
    let png = std::fs::read(plots.join("history.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    assert!(std::fs::read_to_string(plots.join("history.svg"))
        .unwrap()
        .contains("<svg"));
}

#[test]
fn runs_that_differ_only_in_persistent_workers_are_two_cells() {
    let dir = temp_dir("compare-persistent");
    let rates = [3500.0, 3510.0, 3490.0];
    let base = write(&dir, "base.csv", runs(&rates, "b", "6.1"));
    let respawned: Vec<Row> = runs(&rates, "c", "6.1")
        .into_iter()
        .map(|r| Row {
            persistent_workers: false,
            ..r
        })
        .collect();
    let cand = write(&dir, "cand.csv", respawned);
    // Not the same cell run again: nothing in common by configuration...
    let (code, text) = compare(&base, &cand);
    assert!(text.contains("no cell in common"), "{text}");
    assert_ne!(code, Some(0), "{text}");
    // ... and paired by name, the note says which knob changed.
    let o = shmbench(&[
        "compare",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--match",
        "name",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("persistent-workers: true -> false"), "{text}");
}
