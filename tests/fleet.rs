//! `shmbench fleet` on fleets made of constructed rows (a cell's runs per node with chosen img/s,
//! CPU per image or crashes): who is flagged and why, who is not judged and why, the baseline
//! written and read, the outputs (text, JSON, Markdown, the drain and cordon commands) with node
//! names a results file may hold; `outputs` holds each output's snapshot, `untrusted` bad input and hostile names. A fleet
//! of real nodes is `fleet_made`'s.

mod outputs;
mod untrusted;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

use common::*;
use shmbench::fleet::judge::judge;
use shmbench::fleet::judge::rows::{Builder, Measure};
use shmbench::fleet::judge::verdict::{Status, Thresholds, Verdict};
use shmbench::model::record::Status as RunStatus;
use shmbench::results::Row;

/// A node's runs of the seed's docker-tuned cell: img/s about `rate` (each run moved by a
/// fixed pseudo-random amount within `jitter`), or crashes when `rate` is 0.
fn node_runs(node: &str, runs: usize, rate: f64, jitter: f64) -> Vec<Row> {
    let template = fixture_rows()
        .into_iter()
        .find(|r| r.cell == "docker-tuned")
        .unwrap();
    // Deterministic, different per node and run: a hash of both folded into [-1, 1].
    let wobble = |i: usize| {
        let mut h = node.bytes().fold(i as u64 * 7919 + 17, |h, b| {
            h.wrapping_mul(6364136223846793005).wrapping_add(b as u64)
        });
        // splitmix64's finaliser: names that differ in one byte wobble apart.
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d049bb133111eb);
        ((h ^ (h >> 31)) % 2001) as f64 / 1000.0 - 1.0
    };
    (0..runs)
        .map(|i| {
            let mut r = template.clone();
            (r.host, r.repeat, r.steps_file) = (node.into(), i as u32 + 1, None);
            r.cpu_ms_per_img = Some(2.0 * (1.0 + 0.02 * wobble(i + 100)));
            if rate > 0.0 {
                r.img_per_s = Some(rate * (1.0 + jitter * wobble(i)));
            } else {
                (r.status, r.crash_step, r.img_per_s) = (RunStatus::Sigbus, Some(2), None);
            }
            r
        })
        .collect()
}

/// Nodes `gpu-1`.. with these rates (0: crashes), `runs` runs each, img/s within 5%.
fn fleet_rows(rates: &[f64], runs: usize) -> Vec<Row> {
    (rates.iter().enumerate())
        .flat_map(|(i, rate)| node_runs(&format!("gpu-{}", i + 1), runs, *rate, 0.05))
        .collect()
}

fn verdict(rows: &[Row], thresholds: Thresholds) -> Verdict {
    let mut b = Builder::new();
    rows.iter().for_each(|r| b.add(r));
    judge(&b.finish().unwrap(), None, thresholds)
}

fn status_of(v: &Verdict, node: &str) -> Status {
    v.nodes.iter().find(|n| n.node == node).unwrap().status
}

/// `shmbench fleet ARGS`: exit status, stdout, stderr.
fn fleet(args: &[&str]) -> (Option<i32>, String, String) {
    let mut full = vec!["fleet"];
    full.extend(args);
    let o = shmbench(&full);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

/// `fleet --write-baseline` over a fleet of these nodes' img/s, five runs each: the baseline's
/// path, the exit status and stderr.
fn write_baseline(dir: &Path, rates: &[f64]) -> (PathBuf, Option<i32>, String) {
    let fleet_csv = file(dir, "fleet.csv", fleet_rows(rates, 5));
    let baseline = dir.join("baseline.json");
    let (code, _, err) = fleet(&[
        fleet_csv.to_str().unwrap(),
        "--write-baseline",
        baseline.to_str().unwrap(),
    ]);
    (baseline, code, err)
}

fn file(dir: &Path, name: &str, rows: Vec<Row>) -> PathBuf {
    write(dir, name, rows)
}

#[test]
fn a_slow_node_and_a_crashing_node_are_flagged_with_their_reasons() {
    let rows = fleet_rows(
        &[1000.0, 1000.0, 600.0, 1000.0, 0.0, 1000.0, 1000.0, 1000.0],
        5,
    );
    let v = verdict(&rows, Thresholds::default());
    let flagged: Vec<&str> = (v.nodes.iter())
        .filter(|n| n.status == Status::Flagged)
        .map(|n| n.node.as_str())
        .collect();
    assert_eq!(flagged, ["gpu-3", "gpu-5"], "{v:#?}");
    let slow = &v.nodes[2].findings;
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert_eq!(slow[0].measure, Measure::ImgPerS);
    assert!((slow[0].difference + 0.4).abs() < 0.05, "{slow:?}");
    let crashing = &v.nodes[4].findings;
    assert_eq!(crashing[0].measure, Measure::Outcome);
    assert_eq!((crashing[0].node, crashing[0].fleet), (0.0, 1.0));

    let dir = temp_dir("fleet");
    let path = file(&dir, "fleet.csv", rows);
    let (code, text, _) = fleet(&[path.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{text}");
    let line = |node: &str| {
        text.lines()
            .find(|l| l.starts_with(node))
            .unwrap()
            .to_string()
    };
    assert!(
        line("gpu-3 ").contains("flagged  seed-matrix/docker-tuned: img/s"),
        "{text}"
    );
    assert!(line("gpu-3 ").contains("(-40%; robust z"), "{text}");
    assert!(
        line("gpu-5 ").contains("passes 0 of 5 against 35 of 35"),
        "{text}"
    );
    assert!(line("gpu-1 ").contains("ok"), "{text}");
    assert!(
        text.contains("8 node(s): 2 flagged, 6 ok, 0 not judged"),
        "{text}"
    );

    let (_, json, _) = fleet(&[path.to_str().unwrap(), "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["counts"]["flagged"], 2);
    let gpu3 = &json["nodes"][2];
    assert_eq!(
        (gpu3["status"].as_str(), gpu3["status_words"].as_str()),
        (Some("flagged"), Some("flagged"))
    );
    assert_eq!(gpu3["findings"][0]["measure"], "img_per_s");
    assert_eq!(gpu3["findings"][0]["evidence"]["test"], "median");
    assert!(gpu3["findings"][0]["words"]
        .as_str()
        .unwrap()
        .contains("img/s"));
    assert!(json["cells"][0]["key"]
        .as_str()
        .unwrap()
        .starts_with("seed-matrix/docker-tuned ["));

    let (_, md, _) = fleet(&[path.to_str().unwrap(), "--format", "markdown"]);
    assert!(md.starts_with("## shmbench fleet\n"), "{md}");
    assert!(
        md.contains("| `gpu-3` | flagged | `seed-matrix/docker-tuned`: img/s"),
        "{md}"
    );

    let (_, slurm, _) = fleet(&[path.to_str().unwrap(), "--format", "slurm"]);
    let drains: Vec<&str> = slurm
        .lines()
        .filter(|l| l.starts_with("scontrol"))
        .collect();
    assert_eq!(drains, [
        "scontrol update NodeName=gpu-3 State=DRAIN Reason='shmbench fleet: img/s -40% vs fleet in seed-matrix/docker-tuned'",
        "scontrol update NodeName=gpu-5 State=DRAIN Reason='shmbench fleet: pass share -100 points vs fleet in seed-matrix/docker-tuned'",
    ], "{slurm}");
    let (_, kube, _) = fleet(&[path.to_str().unwrap(), "--format", "kubernetes"]);
    let cordons: Vec<&str> = kube.lines().filter(|l| l.starts_with("kubectl")).collect();
    assert_eq!(
        cordons,
        ["kubectl cordon gpu-3", "kubectl cordon gpu-5"],
        "{kube}"
    );
}

#[test]
fn a_fleet_of_good_nodes_flags_none() {
    // Ten nodes whose runs wander by up to 15% and whose medians differ by up to 10%: eight
    // runs each, since five cannot tell a 20% change among runs this spread (they are not
    // judged, with "give 6").
    let rates = [
        1000.0, 950.0, 1040.0, 990.0, 1060.0, 1010.0, 970.0, 1000.0, 1030.0, 960.0,
    ];
    let rows: Vec<Row> = (rates.iter().enumerate())
        .flat_map(|(i, rate)| node_runs(&format!("n{i}"), 8, *rate, 0.15))
        .collect();
    let v = verdict(&rows, Thresholds::default());
    assert!(v.nodes.iter().all(|n| n.status == Status::Ok), "{v:#?}");
    let dir = temp_dir("fleet-good");
    let (code, text, _) = fleet(&[file(&dir, "good.csv", rows).to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    let (_, slurm, _) = fleet(&[dir.join("good.csv").to_str().unwrap(), "--format", "slurm"]);
    assert!(!slurm.contains("scontrol"), "{slurm}");
}

#[test]
fn a_node_is_flagged_only_beyond_both_thresholds() {
    // 10% slower in every run: sure (its runs are all below the others') but not 20%.
    let sure_but_small = fleet_rows(&[1000.0, 1000.0, 900.0, 1000.0, 1000.0, 1000.0], 5);
    let v = verdict(&sure_but_small, Thresholds::default());
    assert_eq!(status_of(&v, "gpu-3"), Status::Ok, "{v:#?}");
    let half = Thresholds {
        relative: 0.05,
        ..Thresholds::default()
    };
    assert_eq!(
        status_of(&verdict(&sure_but_small, half), "gpu-3"),
        Status::Flagged
    );
    // 40% slower than the fleet's median, in a fleet whose nodes differ by as much: large, but
    // not sure (and 3 runs against 15 cannot reach alpha / tests by ranks). Not flagged, and not
    // called ok either: no 3 runs here could have shown a 20% change, and the words say how
    // many would.
    let rates = [1000.0, 600.0, 700.0, 1400.0, 1300.0, 1000.0];
    let unsure: Vec<Row> = (rates.iter().enumerate())
        .flat_map(|(i, r)| node_runs(&format!("gpu-{}", i + 1), 3, *r, 0.3))
        .collect();
    let v = verdict(&unsure, Thresholds::default());
    assert_eq!(status_of(&v, "gpu-2"), Status::NotJudged, "{v:#?}");
    let dir = temp_dir("fleet-unsure");
    let (code, text, _) = fleet(&[file(&dir, "unsure.csv", unsure).to_str().unwrap()]);
    // No node judged: a gate reading exit 0 as "the fleet is fine" must not pass.
    assert_eq!(code, Some(2), "{text}");
    let gpu2 = text.lines().find(|l| l.starts_with("gpu-2 ")).unwrap();
    assert!(
        gpu2.contains("not judged")
            && gpu2
                .contains("3 run(s) of seed-matrix/docker-tuned cannot tell a 20% change of img/s")
            && gpu2.contains("; give ")
            // What it was judged on is said beside (CPU per image and peak /dev/shm).
            && gpu2.ends_with("; within the thresholds on 2 other measure(s) of 1 cell(s)"),
        "{text}"
    );
}

#[test]
fn a_measure_counted_in_whole_batches_is_judged_by_every_run_where_the_fleet_agrees_exactly() {
    // Peak /dev/shm is whole batches: six nodes hold 3 batches in every run, so their medians
    // agree exactly (no spread). One node's timing let a 4th batch in, in 2 of its 4 runs
    // (its median 3.5 batches, +17%); another held 4 in every run (+33%). Only the second is
    // a finding (CI saw the first flagged once, as "sure" off a zero spread). The first is not
    // called ok either: runs a whole batch apart could not show a 15% change.
    let batch = 4_816_896u64;
    let mut rows = fleet_rows(&[1000.0; 6], 4);
    for r in &mut rows {
        r.peak_shm_bytes = 3 * batch;
    }
    let with = |node: &str, batches: [u64; 4]| {
        let mut runs = node_runs(node, 4, 1000.0, 0.05);
        for (r, b) in runs.iter_mut().zip(batches) {
            r.peak_shm_bytes = b * batch;
        }
        runs
    };
    rows.extend(with("timing", [3, 4, 3, 4]));
    rows.extend(with("holds-more", [4, 4, 4, 4]));
    let v = verdict(
        &rows,
        Thresholds {
            relative: 0.15,
            ..Thresholds::default()
        },
    );
    assert_eq!(status_of(&v, "timing"), Status::NotJudged, "{v:#?}");
    assert_eq!(status_of(&v, "holds-more"), Status::Flagged, "{v:#?}");
    assert_eq!(status_of(&v, "gpu-1"), Status::Ok, "{v:#?}");
    // With more nodes (more than 30 runs pooled: the rank test's normal approximation, whose
    // variance nearly every tie collapses), the node of [3, 4, 3, 4] is still no finding.
    let mut more = rows.clone();
    more.retain(|r| r.host != "holds-more");
    for r in fleet_rows(&[1000.0; 14], 4).into_iter().skip(24) {
        more.push(Row {
            peak_shm_bytes: 3 * batch,
            ..r
        });
    }
    let v = verdict(
        &more,
        Thresholds {
            relative: 0.15,
            ..Thresholds::default()
        },
    );
    assert_ne!(status_of(&v, "timing"), Status::Flagged, "{v:#?}");
}

#[test]
fn a_node_one_timing_made_batch_over_a_fleet_a_fraction_of_a_batch_apart_is_no_finding() {
    // As a quiet CI run saw: the nodes' peaks are 3 or 4 batches by timing, plus a few pages
    // each, so their medians sit a fraction of a batch apart and the robust z of a node whose
    // median is a whole batch more is large (5.5 in CI), while its runs say little (the rank
    // test p = 0.07). A node with one run of 3 among its 4s is no finding; one with 4 in every
    // run is.
    let batch = 4_816_896u64;
    let with = |node: &str, batches: [u64; 4], pages: u64| {
        let mut runs = node_runs(node, 4, 1000.0, 0.05);
        for (r, b) in runs.iter_mut().zip(batches) {
            r.peak_shm_bytes = b * batch + pages * 4096;
        }
        runs
    };
    let mut rows = Vec::new();
    for (i, batches) in [
        [3, 3, 3, 4],
        [3, 3, 4, 3],
        [3, 4, 3, 3],
        [4, 3, 3, 3],
        [3, 3, 3, 3],
    ]
    .into_iter()
    .enumerate()
    {
        rows.extend(with(&format!("gpu-{i}"), batches, i as u64));
    }
    rows.extend(with("timing", [4, 4, 3, 4], 2));
    rows.extend(with("holds-more", [4, 4, 4, 4], 2));
    let v = verdict(&rows, Thresholds::default());
    assert_ne!(status_of(&v, "timing"), Status::Flagged, "{v:#?}");
    assert_eq!(status_of(&v, "holds-more"), Status::Flagged, "{v:#?}");
}

#[test]
fn too_few_runs_or_nodes_are_not_judged_and_say_why() {
    let mut rows = fleet_rows(&[1000.0; 6], 4);
    rows.extend(node_runs("gpu-new", 2, 500.0, 0.0));
    let dir = temp_dir("fleet-few");
    let (code, text, _) = fleet(&[file(&dir, "f.csv", rows).to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    let line = text.lines().find(|l| l.starts_with("gpu-new")).unwrap();
    assert!(
        line.contains("not judged  2 run(s) of a cell (3 needed: --repeat 3)"),
        "{text}"
    );
    // Three nodes are too few to know the fleet's spread: nobody is judged, and the exit
    // status does not say "none flagged".
    let (code, text, err) = fleet(&[file(&dir, "g.csv", fleet_rows(&[1000.0, 1000.0, 0.0], 5))
        .to_str()
        .unwrap()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(err.contains("no node could be judged"), "{err}");
    assert!(
        text.contains("3 node(s): 0 flagged, 0 ok, 3 not judged"),
        "{text}"
    );
    assert!(
        text.contains("3 node(s) ran a cell often enough (5 needed for the fleet's norm)"),
        "{text}"
    );
    // Nor does it replace a baseline already there with an empty one.
    let kept = dir.join("kept.json");
    std::fs::write(&kept, "the last good baseline").unwrap();
    let g = dir.join("g.csv");
    let (code, _, err) = fleet(&[
        g.to_str().unwrap(),
        "--write-baseline",
        kept.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        "the last good baseline"
    );
}

#[test]
fn a_baseline_judges_one_new_node_alone() {
    let dir = temp_dir("fleet-baseline");
    let (baseline, code, err) = write_baseline(
        &dir,
        &[1000.0, 1000.0, 600.0, 1000.0, 1000.0, 1000.0, 1000.0],
    );
    assert_eq!(code, Some(1), "{err}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    assert_eq!(written["format"], "shmbench-fleet-baseline");
    assert_eq!(
        written["left_out"],
        serde_json::json!(["gpu-3"]),
        "{written}"
    );
    // The baseline's median is the good nodes' only.
    let median = written["cells"][0]["img_per_s"]["median"].as_f64().unwrap();
    assert!((median - 1000.0).abs() < 30.0, "{median}");
    let b = baseline.to_str().unwrap();
    for (node, rate, code, words) in [
        ("new-slow", 650.0, 1, "img/s"),
        ("new-good", 1010.0, 0, "within the thresholds"),
        ("new-crashing", 0.0, 1, "against 30 of 30 in the baseline"),
    ] {
        let one = file(&dir, &format!("{node}.csv"), node_runs(node, 4, rate, 0.05));
        let (got, text, err) = fleet(&[one.to_str().unwrap(), "--baseline", b]);
        assert_eq!(got, Some(code), "{node}: {text}{err}");
        assert!(text.contains(words), "{node}: {text}");
    }
}

/// A baseline of fewer nodes than a judgement needs judges nobody: writing one says so then,
/// not when it is used.
#[test]
fn a_baseline_too_small_to_judge_with_is_said_when_it_is_written() {
    let dir = temp_dir("fleet-small-baseline");
    // Five nodes, one flagged: the baseline keeps four, below the default --min-nodes 5.
    let (baseline, code, err) = write_baseline(&dir, &[1000.0, 1000.0, 600.0, 1000.0, 1000.0]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the baseline holds 4 node(s), fewer than --min-nodes 5")
            && err.contains("unless it is given --min-nodes 4"),
        "{err}"
    );
    let one = file(&dir, "new.csv", node_runs("new", 4, 1000.0, 0.05));
    let b = baseline.to_str().unwrap();
    let (code, text, _) = fleet(&[one.to_str().unwrap(), "--baseline", b, "--min-nodes", "4"]);
    assert_eq!(code, Some(0), "as the warning says: {text}");
}
