//! Results files as others will open them: values from elsewhere cannot run as spreadsheet
//! formulas or break a Markdown table, shmbench reads its own guarded cells back unchanged, and
//! a rewritten file keeps its mode (a new one is readable by all, as results are shared).

mod common;

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
