//! compare, merge and history on constructed results files: known changes must get the known
//! verdicts and exit codes, and noise must not.

use crate::common;

use common::*;
use shmbench::model::knobs::{AddedKnobs, StartMethod};
use shmbench::results::row::SCHEMA;
use shmbench::results::Row;

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
    // 5 of 5 passing against 1 of 5: Fisher's two-sided p = 12/252.
    assert!(
        out.contains("outcome-changed (worse)")
            && out.contains("passes 5 of 5 -> passes 1 of 5; sigbus 4 of 5 at step 12")
            && out.contains("Fisher p = 0.048"),
        "{out}"
    );
}

#[test]
fn one_run_a_side_judges_no_outcome_change() {
    let dir = temp_dir("cmp-one-outcome");
    let base = write(&dir, "base.csv", runs(&[3000.0], "a", "6.1"));
    let cand = write(&dir, "cand.csv", runs(&[0.0], "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(3), "undecided fails CI: {out}");
    assert!(
        out.contains("| docker-tuned | undecided")
            && out.contains(
                "passes 1 of 1 -> sigbus 1 of 1 at step 12: not judged with 1 and 1 run(s)"
            )
            && out.contains("--repeat 4"),
        "{out}"
    );
}

/// `compare BASE CAND --allow-undecided`: its exit code.
fn compare_allowing(base: &std::path::Path, cand: &std::path::Path) -> Option<i32> {
    let (base, cand) = (base.to_str().unwrap(), cand.to_str().unwrap());
    shmbench(&["compare", base, cand, "--allow-undecided"])
        .status
        .code()
}

#[test]
fn three_passes_against_three_crashes_is_undecided_never_unchanged() {
    let dir = temp_dir("cmp-three");
    let base = write(&dir, "base.csv", runs(&BASE[..3], "a", "6.1"));
    let cand = write(&dir, "cand.csv", runs(&[0.0, 0.0, 0.0], "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    // 3 of 3 against 0 of 3: Fisher p = 0.10, so no test can call it a change, nor no change.
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("| docker-tuned | undecided")
            && out.contains(
                "passes 3 of 3 -> sigbus 3 of 3 at step 12: not judged with 3 and 3 run(s)"
            )
            && out.contains("1 undecided")
            && !out.contains("| docker-tuned | unchanged"),
        "{out}"
    );
    assert_eq!(compare_allowing(&base, &cand), Some(0));
    let o = shmbench(&[
        "compare",
        "--format",
        "json",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["undecided"], 1, "{json}");
    assert_eq!(json["cells"][0]["verdict"], "undecided", "{json}");
}

#[test]
fn measures_no_run_can_have_are_refused_naming_the_file_and_line() {
    let dir = temp_dir("cmp-garbage");
    let base = write(&dir, "base.csv", runs(&BASE, "a", "6.1"));
    for (bad, said) in [
        (f64::NAN, "NaN"),
        (f64::INFINITY, "inf"),
        (-3000.0, "-3000"),
    ] {
        let mut rows = runs(&BASE, "b", "6.1");
        rows[2].img_per_s = Some(bad);
        let cand = write(&dir, "cand.csv", rows);
        let (code, out) = compare(&base, &cand);
        assert_eq!(code, Some(2), "{said}: {out}");
        assert!(
            out.contains("cand.csv: line 4: not a valid shmbench results row: img_per_s is")
                && out.contains(said),
            "{said}: {out}"
        );
    }
}

#[test]
fn a_marginal_cell_run_twice_is_not_an_outcome_change_and_earlier_crashes_are() {
    let dir = temp_dir("cmp-marginal");
    // The same boundary cell twice: passes and crashes at scattered steps, by chance alone.
    let base = write(
        &dir,
        "base.csv",
        runs(&[3000.0, -9.0, 3010.0, -23.0, -14.0], "a", "6.1"),
    );
    let again = write(
        &dir,
        "again.csv",
        runs(&[-11.0, 2990.0, 3005.0, 3001.0, -19.0], "b", "6.1"),
    );
    let (code, out) = compare(&base, &again);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("within chance"), "{out}");
    assert!(!out.contains("outcome-changed"), "{out}");
    // A retained batch moves every crash earlier: a shift of the crash steps.
    let late = write(
        &dir,
        "late.csv",
        runs(&[-20.0, -22.0, -21.0, -24.0, -23.0], "c", "6.1"),
    );
    let early = write(
        &dir,
        "early.csv",
        runs(&[-6.0, -5.0, -7.0, -6.0, -5.0], "d", "6.1"),
    );
    let (code, out) = compare(&late, &early);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("outcome-changed (worse)") && out.contains("crash steps rank test p = 0.008"),
        "{out}"
    );
}

#[test]
fn one_run_per_side_never_claims_a_regression() {
    let dir = temp_dir("cmp-one");
    let base = write(&dir, "base.csv", runs(&[3000.0], "a", "6.1"));
    let cand = write(&dir, "cand.csv", runs(&[2000.0], "b", "6.1"));
    let (code, out) = compare(&base, &cand);
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("| docker-tuned | undecided")
            && out.contains("no interval, so a change of any size"),
        "{out}"
    );
    assert!(!out.contains("regressed"), "{out}");
    assert_eq!(compare_allowing(&base, &cand), Some(0));
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
    // A schema from the future: every row's first column.
    let rows = body.replace(&format!("\n{SCHEMA},"), "\n99,");
    let future = dir.join("future.csv");
    let rows = rows.replacen(&format!("{SCHEMA},"), "99,", 1);
    std::fs::write(&future, format!("{header}\n{rows}")).unwrap();
    let (code, out) = compare(&base, &future);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("schema 99 but this shmbench reads schemas 1, 2, 3"),
        "{out}"
    );
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

/// Two files of the same runs but for one knob `change` makes: compare finds no cell in common
/// (and fails), and paired by name it names the knob with `note`. The candidate file's text.
fn differ_only_in(name: &str, change: impl Fn(Row) -> Row, note: &str) -> String {
    let dir = temp_dir(name);
    let rates = [3500.0, 3510.0, 3490.0];
    let base = write(&dir, "base.csv", runs(&rates, "b", "6.1"));
    let changed: Vec<Row> = runs(&rates, "c", "6.1").into_iter().map(change).collect();
    let cand = write(&dir, "cand.csv", changed);
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
    assert!(text.contains(note), "{text}");
    std::fs::read_to_string(&cand).unwrap()
}

#[test]
fn runs_that_differ_only_in_persistent_workers_are_two_cells() {
    let respawn = |r: Row| Row {
        persistent_workers: false,
        ..r
    };
    differ_only_in(
        "compare-persistent",
        respawn,
        "persistent-workers: true -> false",
    );
}

#[test]
fn runs_that_differ_only_in_a_knob_added_after_schema_5_are_two_cells() {
    let spawn = |r: Row| Row {
        added: AddedKnobs {
            start_method: StartMethod::Spawn,
            ..r.added.clone()
        },
        ..r
    };
    let text = differ_only_in("compare-start-method", spawn, "start-method: fork -> spawn");
    // The knob's column went through the file and came back.
    let (header, row) = (text.lines().next().unwrap(), text.lines().nth(1).unwrap());
    assert!(
        header.ends_with(",start_method,dataset_bytes,engine,inject,oci_runtime"),
        "{text}"
    );
    assert!(row.ends_with(",spawn,0,docker,none,default"), "{text}");
}
