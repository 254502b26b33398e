//! Claims that several cells measure together (`[[claims]]`): a small scenario of real cells in
//! sized namespaces, whose verdicts follow from the loader model (peak /dev/shm grows with
//! prefetch; file_system's segments are in /dev/shm too; file_descriptor costs an fd per live
//! batch and hits `ulimit -n`; a remount grows a full tmpfs), the statements kept beside the
//! results, and the report's section and plot.

use crate::common;

use common::*;

/// Batches of 8 images (4.6 MiB); the consumer waits 20 ms a step, so the workers fill every
/// outstanding slot whatever the machine's load.
const SCENARIO: &str = r#"
name = "claims-test"
[defaults]
batch = 8
workers = 2
steps = 40
compute-ms = 20
runtime = "namespace"
shm-size = "1g"

[[cells]]
name = "p1"
prefetch = 1
[[cells]]
name = "p4"
prefetch = 4
[[cells]]
name = "p16"
prefetch = 16
[[cells]]
name = "fs-p16"
prefetch = 16
strategy = "file_system"
[[cells]]
name = "small"
shm-size = "16m"
[[cells]]
name = "remounted"
shm-size = "16m"
shm-remount = "64m"
[[cells]]
name = "leak-fd"
retain-every = 1
compute-ms = 0
steps = 150
nofile = 64
[[cells]]
name = "leak-fs"
retain-every = 1
compute-ms = 0
steps = 150
nofile = 64
strategy = "file_system"

[[claims]]
id = "prefetch-grows"
section = "Flags"
quote = "each prefetched batch sits in shared memory"
kind = "grows"
quantity = "peak-shm"
cells = ["p1", "p4", "p16"]

[[claims]]
id = "fs-off-shm"
section = "Fix"
quote = "It does not consume /dev/shm"
kind = "zero"
cells = ["fs-p16"]

[[claims]]
id = "fd-per-batch"
section = "Strategies"
quote = "constrained by file descriptor limits"
kind = "greater"
quantity = "peak-fds"
cells = ["p16", "fs-p16"]

[[claims]]
id = "remount"
section = "Bare metal"
quote = "remount it with a larger ceiling"
kind = "status"
expect = "pass"
cells = ["small", "remounted"]

[[claims]]
id = "emfile"
section = "Strategies"
quote = "Too many open files"
kind = "status"
expect = "emfile"
cells = ["leak-fd", "leak-fs"]
"#;

/// The verdict the terminal table gives the claim whose command names `cells`.
fn verdict(stdout: &str, cells: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.contains(&format!("--cells {cells}`")))
        .unwrap_or_else(|| panic!("no claim of {cells}: {stdout}"));
    line.split('|').nth(4).unwrap().trim().to_string()
}

#[test]
fn claims_are_judged_from_the_cells_that_measure_them() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("claims");
    let scenario = dir.join("claims-test.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let out = dir.join("c.csv");
    let o = shmbench(&[
        "matrix",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("The how-to's claims, checked"), "{stdout}");
    assert_eq!(verdict(&stdout, "p1,p4,p16"), "agrees");
    assert_eq!(
        verdict(&stdout, "fs-p16"),
        "differs",
        "file_system's segments are in /dev/shm"
    );
    assert_eq!(verdict(&stdout, "p16,fs-p16"), "agrees");
    assert_eq!(verdict(&stdout, "small,remounted"), "partly");
    assert_eq!(verdict(&stdout, "leak-fd,leak-fs"), "partly");
    let rows = read_csv(&out);
    let row = |cell: &str| rows.iter().find(|r| r["cell"] == cell).unwrap();
    assert!(
        out_of_shm_kind(&row("small")["status"]),
        "{:?}",
        row("small")
    );
    let remounted = row("remounted");
    assert_eq!(remounted["status"], "pass");
    assert_eq!(
        remounted["shm_seen_bytes"],
        (64u64 << 20).to_string(),
        "the remounted size"
    );
    assert_eq!(remounted["shm_remount_bytes"], (64u64 << 20).to_string());
    let leak = row("leak-fd");
    assert_eq!(
        (leak["status"].as_str(), leak["nofile"].as_str()),
        ("emfile", "64")
    );
    assert!(leak["peak_fds"].parse::<u64>().unwrap() <= 64);
    assert_eq!(row("leak-fs")["status"], "pass");
    // The statements are kept beside the rows; a report made later from the CSV has them.
    assert!(dir.join("c/claims.json").exists());
    let report = dir.join("rep");
    let o = shmbench(&[
        "report",
        out.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("The how-to's claims, checked"), "{md}");
    assert!(
        md.contains("shmbench matrix claims-test --cells p1,p4,p16"),
        "{md}"
    );
    assert!(report.join("claims.png").exists() && report.join("claims.svg").exists());
    assert_clean(&before);
}

#[test]
fn a_claim_that_names_no_cell_or_lacks_its_expectation_is_refused() {
    let dir = temp_dir("claims-bad");
    let base = "name = \"x\"\n[[cells]]\nname = \"a\"\n";
    let cases = [
        (
            "[[claims]]\nid = \"c\"\nsection = \"s\"\nquote = \"q\"\nkind = \"zero\"\ncells = [\"nope\"]\n",
            "claim 'c': cells: no cell is named 'nope'",
        ),
        (
            "[[claims]]\nid = \"c\"\nsection = \"s\"\nquote = \"q\"\nkind = \"status\"\ncells = [\"a\"]\n",
            "kind status needs expect",
        ),
        (
            "[[claims]]\nid = \"c\"\nsection = \"s\"\nquote = \"q\"\nkind = \"likely\"\ncells = [\"a\"]\n",
            "claims[0]: unknown variant `likely`",
        ),
    ];
    for (claims, expected) in cases {
        let file = dir.join("x.toml");
        std::fs::write(&file, format!("{base}{claims}")).unwrap();
        let o = shmbench(&["matrix", file.to_str().unwrap(), "--dry-run"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(expected), "{expected}: {err}");
    }
    // A remount is a namespace cell's own tmpfs; this machine's /dev/shm is never remounted.
    let o = shmbench(&[
        "run",
        "--runtime",
        "host",
        "--shm-remount",
        "2g",
        "--batch",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shm-remount"));
}
