//! gVisor's speed against runc's, judged as `compare` judges it: one small-batch cell (where a
//! runtime's per-batch costs show: creating, sizing, mapping and filling a fresh /dev/shm
//! segment per batch) repeated under Docker with runc and runsc; `history --by runtime` must say
//! of runsc's column what `compare` says of the same rows, its verdict and its intervals, and
//! the interval must come from the repeats (one run a side is "not judged": `runtimes`).

use crate::common;
use crate::runtimes::runtimes_or_skip;

use std::collections::HashMap;

use common::*;

/// One cell whose batches fit its /dev/shm, small enough that the copy and the per-batch
/// system calls are the work.
const COPY: &str = r#"
name = "runtime-speed"
[defaults]
container = "docker"
workers = 2
batch = 8
steps = 40
shm-size = "256m"
[[cells]]
name = "copy-8"
"#;

/// The rows of the results file `from` whose OCI runtime is `oci`, as a results file of their own.
fn rows_of(from: &std::path::Path, oci: &str, to: &std::path::Path) {
    let text = std::fs::read_to_string(from).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let column = header.split(',').position(|c| c == "oci_runtime").unwrap();
    let rows = read_csv(from);
    // The CSV's lines in order are its rows in order: a row's quoted fields may hold commas,
    // so the row read tells which lines are this runtime's.
    let mine: Vec<&str> = lines
        .zip(&rows)
        .filter(|(_, row)| row["oci_runtime"] == oci)
        .map(|(line, _)| line)
        .collect();
    assert!(!mine.is_empty(), "no {oci} rows ({column})");
    std::fs::write(to, format!("{header}\n{}\n", mine.join("\n"))).unwrap();
}

#[test]
fn gvisor_is_judged_against_runc_with_compares_tests_over_the_repeats() {
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let dir = temp_dir("runtime-speed");
    let (scenario, out) = (dir.join("speed.toml"), dir.join("speed.csv"));
    std::fs::write(&scenario, COPY).unwrap();
    let ran = shmbench(&[
        "matrix",
        scenario.to_str().unwrap(),
        "--oci-runtimes",
        "runc,runsc",
        "--repeat",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&ran.stdout);
    let rows: Vec<HashMap<String, String>> = read_csv(&out);
    assert_eq!(rows.len(), 6, "{text}");
    assert!(rows.iter().all(|r| r["status"] == "pass"), "{rows:?}");
    let history = shmbench(&["history", out.to_str().unwrap(), "--by", "runtime"]);
    let said = String::from_utf8_lossy(&history.stdout).to_string();
    let line = said
        .lines()
        .find(|l| l.starts_with("- copy-8: docker://") && l.contains(" runsc "))
        .unwrap_or_else(|| panic!("no judgement of runsc against runc: {said}"));
    // The same rows, split by runtime, through compare: the same verdict and intervals.
    let (runc, runsc) = (dir.join("runc.csv"), dir.join("runsc.csv"));
    rows_of(&out, "runc", &runc);
    rows_of(&out, "runsc", &runsc);
    let compared = shmbench(&[
        "compare",
        runc.to_str().unwrap(),
        runsc.to_str().unwrap(),
        "--match",
        "name",
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&compared.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&compared.stdout)));
    let cell = &json["cells"][0];
    // Where the intervals cannot tell (compare's "undecided"), the history says "not judged".
    let verdict = match cell["verdict"].as_str().unwrap() {
        "undecided" => "not judged",
        verdict => verdict,
    };
    assert!(
        line.contains(&format!(": {verdict}:")),
        "compare says {verdict}: {line}"
    );
    let interval = |x: &serde_json::Value| -> String {
        format!(
            "[{:+.1}%, {:+.1}%]",
            x[0].as_f64().unwrap() * 100.0,
            x[1].as_f64().unwrap() * 100.0
        )
    };
    for (measure, ci) in [("img/s", "change_ci"), ("CPU per image", "cpu_change_ci")] {
        let ci = interval(&cell[ci]);
        assert!(
            line.contains(measure) && line.contains(&ci),
            "compare's {measure} interval {ci}: {line}"
        );
    }
    assert_clean(&before);
}
