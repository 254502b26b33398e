//! merge and history on constructed results files: the run where a cell stepped (a kernel, a
//! /dev/shm size, a torch release, a knob changed on purpose) is found and drawn.

use crate::common;

use common::*;
use shmbench::model::record::Status;
use shmbench::results::{csv, Row};

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
    // Only runtimes are judged against a reference runtime: along kernels it is a usage error.
    let o = shmbench(&["history", merged.to_str().unwrap(), "--against", "runc"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("it needs --by runtime"));
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
            "--repeat",
            "4",
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
    // Four runs a size: a flip from crashing in every run to passing in every run is beyond
    // chance (Fisher p = 2/70).
    assert!(
        out.contains("small: outcome changed from sigbus 4 of 4 at step")
            && out.contains("to passes 4 of 4 at shm = 32 MiB")
            && out.contains("Fisher p = 0.029"),
        "{out}"
    );
    assert_clean(&before);
}

#[test]
fn history_by_torch_version_tracks_torch_cells_across_releases() {
    let history = |per_release: usize| -> String {
        let dir = temp_dir("history-torch");
        let files = torch_releases(dir.as_ref(), per_release);
        let mut args = vec!["history", "--by", "torch-version"];
        let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        args.extend(paths.iter().map(String::as_str));
        let o = shmbench(&args);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    // Two runs a release cannot show the change: said, not claimed.
    let two = history(2);
    assert!(
        !two.contains("outcome changed")
            && two.contains("outcomes not judged between 2 pair(s) of neighbouring runs, 1 of them with different outcomes"),
        "{two}"
    );
    let out = history(4);
    // Releases in version order (2.9 before 2.10), one trend for the cell, the step at 2.10.
    let header = out.lines().find(|l| l.starts_with("| cell")).unwrap();
    assert!(
        header.find("2.9.1").unwrap() < header.find("2.10.0").unwrap(),
        "{header}"
    );
    assert!(
        out.contains("outcome changed from sigbus 4 of 4 at step 12 to enospc 4 of 4 at step 12")
            && out.contains("at torch-version = 2.10.0"),
        "{out}"
    );
}

/// The same torch cell under three releases, `per_release` runs each; 2.10 moved shared
/// segments to posix_fallocate, so its crash kind changes there (and the profile column with it).
fn torch_releases(dir: &std::path::Path, per_release: usize) -> Vec<std::path::PathBuf> {
    use shmbench::model::knobs::{Loader, TorchProfile};
    let mut files = Vec::new();
    for (i, version) in ["2.9.1", "2.10.0", "2.15.0"].iter().enumerate() {
        let mut rows = runs(&vec![0.0; per_release], &format!("t{i}"), "6.1");
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
        files.push(write(dir, &format!("t{i}.csv"), rows));
    }
    files
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
