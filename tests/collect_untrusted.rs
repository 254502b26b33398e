//! `k8s collect` reads pod logs, which anyone who can run a pod can write: names in them stay
//! data. A record whose cell or scenario name is not a plain name is refused, no path is built
//! from it, and a collect that finds no record at all fails and leaves an existing --out as it was.

use crate::common;

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
    // And one line of 17 MiB: named by its length, never held or echoed whole.
    let long = dir.join("long.log");
    std::fs::write(
        &long,
        format!("{{\"config\": \"{}\"}}\n", "A".repeat(17 << 20)),
    )
    .unwrap();
    for logs in [&empty, &torn, &long] {
        let o = collect(logs, &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.len() < 4096, "{} bytes of stderr", err.len());
        assert_eq!(o.status.code(), Some(2), "{}", logs.display());
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "an earlier result\n"
        );
    }
}

/// A Slurm task's output file holding `record` with the task `job_task` (`500_0`) written into
/// it, as `shmbench slurm task` prints it.
fn task_file(
    dir: &std::path::Path,
    name: &str,
    record: &serde_json::Value,
    job_task: &str,
    node: &str,
) {
    let (job, task) = job_task.split_once('_').unwrap();
    let mut record = record.clone();
    record["slurm"] = serde_json::json!({
        "job_id": format!("9{job}{task}"), "array_job_id": job,
        "array_task_id": task.parse::<u64>().unwrap(), "node": node,
        "cluster": null, "partition": null, "version": null,
    });
    std::fs::write(dir.join(name), format!("{record}\n")).unwrap();
}

#[test]
fn slurm_collect_takes_a_tasks_record_from_its_own_file_only_and_never_echoes_a_line() {
    let dir = temp_dir("collect-slurm-forged");
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let record = run_cell("--runtime host --workers 1 --batch 8 --steps 2");
    // `shmbench-500_.out` sorts before `shmbench-500_0.out` and claims its task.
    task_file(
        &out_dir,
        "shmbench-500_.out",
        &record,
        "500_0",
        "forged-node",
    );
    task_file(
        &out_dir,
        "shmbench-500_0.out",
        &record,
        "500_0",
        "real-node",
    );
    // Task 1's file claims task 2; task 2's own file is a cell name of a megabyte.
    task_file(
        &out_dir,
        "shmbench-500_1.out",
        &record,
        "500_2",
        "forged-node",
    );
    let mut long_name = record.clone();
    long_name["config"]["cell"] = format!("../{}", "x".repeat(1 << 20)).into();
    task_file(&out_dir, "shmbench-500_2.out", &long_name, "500_2", "n");
    // Task 3's file is one line of 17 MiB.
    let line = format!("{{\"config\": \"{}\"}}\n", "A".repeat(17 << 20));
    std::fs::write(out_dir.join("shmbench-500_3.out"), line).unwrap();
    let csv = dir.join("t.csv");
    let o = shmbench(&[
        "slurm",
        "collect",
        "500",
        "--dir",
        out_dir.to_str().unwrap(),
        "--out",
        csv.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let rows = read_csv(&csv);
    assert_eq!(rows.len(), 1, "task 500_0's own record only: {rows:?}");
    assert_eq!(rows[0]["node"], "real-node", "{rows:?}");
    assert!(
        err.contains("shmbench-500_.out: not named as a task's output file"),
        "{err}"
    );
    assert!(
        err.contains("shmbench-500_1.out: holds a record of task 500_2"),
        "{err}"
    );
    assert!(
        err.contains("shmbench-500_3.out, line 1: 17825806 bytes"),
        "{err}"
    );
    assert!(
        err.contains("(1048579 bytes)"),
        "the long name's length: {err}"
    );
    assert!(
        err.len() < 4096,
        "no line echoed whole: {} bytes of stderr",
        err.len()
    );
}
