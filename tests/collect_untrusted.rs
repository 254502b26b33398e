//! `k8s collect` reads pod logs, which anyone who can run a pod can write: names in them stay
//! data. A record whose cell or scenario name is not a plain name is refused, no path is built
//! from it, and a collect that finds no record at all fails and leaves an existing --out as it was.

mod common;

use common::*;

/// A real record, with its cell and scenario names replaced by `cell` and `scenario`.
fn tampered(cell: &str, scenario: &str) -> String {
    let mut record = run_cell("--runtime host --workers 1 --batch 8 --steps 2");
    record["config"]["cell"] = cell.into();
    record["config"]["scenario"] = scenario.into();
    record.to_string()
}

/// `shmbench k8s collect LOGS --out OUT`.
fn collect(logs: &std::path::Path, out: &std::path::Path) -> std::process::Output {
    shmbench(&[
        "k8s",
        "collect",
        logs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn names_from_logs_never_build_paths_and_nothing_found_is_an_error() {
    let _guard = serial();
    let dir = temp_dir("collect-untrusted");
    let out_dir = dir.join("outdir");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("t.csv");
    std::fs::write(&out, "an earlier result\n").unwrap();
    for (cell, scenario) in [
        ("../../../../../../elsewhere/PWNED", "s"),
        ("ok", "../../../escaped"),
        ("/abs", "s"),
    ] {
        let logs = dir.join("pod.log");
        std::fs::write(
            &logs,
            format!("[pod/p-0/cell] {}\n", tampered(cell, scenario)),
        )
        .unwrap();
        let o = collect(&logs, &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cell} / {scenario}: {err}");
        assert!(err.contains("name"), "names the bad name: {err}");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "an earlier result\n",
            "--out untouched"
        );
        let written: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            written.iter().all(|n| n == "outdir" || n == "pod.log"),
            "{written:?}"
        );
        assert!(!std::path::Path::new("/elsewhere").exists());
    }
    // Nothing to collect: an empty directory, and torn lines only.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let torn = dir.join("torn.log");
    let whole = tampered("fine", "fine");
    std::fs::write(&torn, &whole[..whole.len() / 2]).unwrap();
    for logs in [&empty, &torn] {
        let o = collect(logs, &out);
        assert_eq!(o.status.code(), Some(2), "{}", logs.display());
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "an earlier result\n"
        );
    }
}
