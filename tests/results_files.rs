//! Results files as others will open them: values from elsewhere cannot run as spreadsheet
//! formulas or break a Markdown table, shmbench reads its own guarded cells back unchanged, and
//! a rewritten file keeps its mode (a new one is readable by all, as results are shared).

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::*;

const FORMULA: &str = "=cmd|' /C calc'!A0";

#[test]
fn formulas_stay_text_tables_stay_tables_and_modes_are_kept() {
    let _guard = serial();
    let dir = temp_dir("results-files");
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"inj\"\n[defaults]\nruntime = \"host\"\nbatch = 8\nworkers = 1\nsteps = 2\n\
             [[cells]]\nname = \"a\"\nenvironment = \"{}\"\n",
            FORMULA
        ),
    )
    .unwrap();
    let out = dir.join("r.csv");
    // An earlier file with a mode of its own: the rewrite keeps it.
    std::fs::write(&out, "").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = shmbench(&[
        "matrix",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the results file's mode changed");
    let raw = std::fs::read_to_string(&out).unwrap();
    assert!(raw.contains(&format!("'{FORMULA}")), "not guarded: {raw}");
    assert!(
        !raw.lines()
            .any(|l| l.split(',').any(|c| c.starts_with('='))),
        "{raw}"
    );
    // The table on the terminal keeps its columns.
    let row = stdout.lines().find(|l| l.contains("calc")).unwrap();
    assert!(row.contains("=cmd\\|"), "{row}");
    // Read back by shmbench, the value is the one written.
    let o = shmbench(&["export", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = shmbench(&[
        "merge",
        out.to_str().unwrap(),
        "--out",
        dir.join("m.csv").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = read_csv(&dir.join("m.csv"));
    assert_eq!(
        merged[0]["environment"],
        format!("'{FORMULA}"),
        "the file keeps the guard"
    );
    let new_mode = std::fs::metadata(dir.join("m.csv"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(new_mode, 0o644, "a new results file is readable by all");
}

/// The seed fixture's rows with `steps_file` set to each of `names`, written to `dir/r.csv`.
fn naming(dir: &std::path::Path, names: &[&str]) -> std::path::PathBuf {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed.csv");
    let seed = shmbench::results::csv::read(&fixture).unwrap();
    let rows = names
        .iter()
        .zip(seed.iter().cycle())
        .map(|(name, row)| shmbench::results::Row {
            steps_file: Some(name.to_string()),
            ..row.clone()
        })
        .collect();
    let path = dir.join("r.csv");
    shmbench::results::csv::ResultsFile::create(&path)
        .unwrap()
        .replace(rows)
        .unwrap();
    path
}

#[test]
fn a_rows_file_names_are_data_not_paths_to_follow_and_a_merge_carries_them() {
    let dir = temp_dir("beside");
    // A FIFO no one writes to, a device that never ends, a way out of the directory, a link.
    let fifo = dir.join("r").join("fifo.steps.csv");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/etc/passwd", dir.join("r").join("link.steps.csv")).unwrap();
    let hostile = [
        "r/fifo.steps.csv",
        "/dev/zero",
        "../../../../etc/passwd",
        "r/link.steps.csv",
    ];
    let csv = naming(&dir, &hostile);
    let out = dir.join("report");
    let o = shmbench(&[
        "report",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("fifo.steps.csv is not a regular file: not read"),
        "{md}"
    );
    assert!(md.contains("'/dev/zero' is not a path down from"), "{md}");
    assert!(
        md.contains("'../../../../etc/passwd' is not a path down from"),
        "{md}"
    );
    assert!(
        md.contains("link.steps.csv is not a regular file: not read"),
        "{md}"
    );
    assert!(!md.contains("root:x:0:0"), "{md}");
    // A merge copies each row's file beside the merged file: it travels whole, relative.
    let real = dir.join("good");
    std::fs::create_dir_all(real.join("g")).unwrap();
    std::fs::write(
        real.join("g").join("a.steps.csv"),
        "step,t_s,latency_ms,shm_used_bytes,in_flight\n1,0.5,500,4096,1\n",
    )
    .unwrap();
    let good = naming(&real, &["g/a.steps.csv"]);
    let merged = dir.join("elsewhere").join("all.csv");
    let o = shmbench(&[
        "merge",
        good.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let row = read_csv(&merged).remove(0);
    assert_eq!(row["steps_file"], "all/1-a.steps.csv");
    let series =
        std::fs::read_to_string(merged.parent().unwrap().join(&row["steps_file"])).unwrap();
    assert!(series.contains("1,0.5,500,4096,1"), "{series}");
}
