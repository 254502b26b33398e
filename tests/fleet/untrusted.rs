//! `shmbench fleet` on input from elsewhere: files that are not results, baselines that are not
//! one, and node names a shell, Slurm, a terminal or Markdown would act on.

use shmbench::results::Row;

use super::{file, fleet, fleet_rows, node_runs};
use crate::common::*;

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let dir = temp_dir("fleet-bad");
    let rows = fleet_rows(&[1000.0; 6], 3);
    let good = file(&dir, "good.csv", rows.clone());
    let g = good.to_str().unwrap();
    // No rows.
    let empty = file(&dir, "empty.csv", Vec::new());
    let (code, _, err) = fleet(&[empty.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("hold no rows"), "{err}");
    // No node names.
    let nameless: Vec<Row> = rows
        .into_iter()
        .map(|r| Row {
            host: String::new(),
            ..r
        })
        .collect();
    let (code, _, err) = fleet(&[file(&dir, "nameless.csv", nameless).to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("names its node"), "{err}");
    // Baselines that are not one, or hold what no fleet measured.
    for (name, text, says) in [
        ("not-json", "no json", "not a fleet baseline"),
        ("csv", "schema,run_id\n", "not a fleet baseline"),
        (
            "other",
            r#"{"format":"x","version":1,"nodes":[],"left_out":[],"cells":[]}"#,
            "its format is 'x'",
        ),
        (
            "future",
            r#"{"format":"shmbench-fleet-baseline","version":9,"nodes":[],"left_out":[],"cells":[]}"#,
            "version 9",
        ),
        (
            "passes",
            r#"{"format":"shmbench-fleet-baseline","version":1,"nodes":[],"left_out":[],"cells":[{"scenario":"s","cell":"c","knobs":{},"nodes":5,"runs":3,"passes":4}]}"#,
            "4 passes of 3 runs",
        ),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = fleet(&[g, "--baseline", path.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    let (code, _, err) = fleet(&[g, "--baseline", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("missing.json"), "{err}");
    // A "results file" with no line ends: refused after its first MiB, not read to the end of
    // the machine's memory.
    let (code, _, err) = fleet(&["/dev/zero"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("/dev/zero") && err.contains("not a results file"),
        "{err}"
    );
}

#[test]
fn node_names_from_a_results_file_stay_data() {
    // Three slow nodes whose names a shell or Slurm would act on, and good ones, two of them
    // with names a terminal, a CI runner or Markdown would act on.
    let slow = ["gpu[1-64]", "-f", "x;touch PWNED"];
    let mut names: Vec<String> = slow.iter().map(|s| s.to_string()).collect();
    names.extend(["::error::pwned\nnext".to_string(), "`a|b`".to_string()]);
    names.extend((1..=6).map(|i| format!("ok-{i}")));
    let rows: Vec<Row> = (names.iter().enumerate())
        .flat_map(|(i, n)| node_runs(n, 4, if i < 3 { 500.0 } else { 1000.0 }, 0.05))
        .collect();
    let dir = temp_dir("fleet-names");
    let path = file(&dir, "names.csv", rows);
    let p = path.to_str().unwrap();
    for format in ["slurm", "kubernetes"] {
        let (code, out, _) = fleet(&[p, "--format", format]);
        assert_eq!(code, Some(1), "{out}");
        assert_eq!(
            out.lines().filter(|l| l.starts_with("# left out:")).count(),
            3,
            "{out}"
        );
        assert!(
            out.lines().all(|l| l.starts_with('#')),
            "every line a comment: {out}"
        );
        // The header says none of the three is acted on.
        assert!(
            out.lines()
                .next()
                .unwrap()
                .contains(" 0 of the 3 flagged node(s) (3 left out below)"),
            "{out}"
        );
    }
    let (_, text, _) = fleet(&[p]);
    assert!(text.contains("3 flagged, 8 ok"), "{text}");
    assert!(
        text.lines().all(|l| !l.trim_start().starts_with("::")),
        "{text}"
    );
    assert!(text.contains("error::pwned\\nnext"), "{text}");
    let (_, md, _) = fleet(&[p, "--format", "markdown"]);
    assert!(md.contains("| `` `a\\|b` ``"), "{md}");
    assert!(md.contains("| `x;touch PWNED`"), "{md}");
}
