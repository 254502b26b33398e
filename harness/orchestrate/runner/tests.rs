//! The runner's logic through a scripted launcher: repeats interleaved, a row written before the
//! next cell starts, a stop that keeps what finished, `--repeat auto`'s early stop, the runs a
//! judge adds. No cell runs: the fake makes each record.

use std::path::PathBuf;

use model::config::CellConfig;
use model::knobs::RuntimeKind;
use model::record::Status;
use model::repeat::{Repeat, UntilStable};
use model::size::ByteSize;
use results::csv::ResultsFile;
use results::Row;

use super::{describe, rounds, MoreRuns, Outcome, Plan};
use crate::event::Event;
use crate::launcher::fake::{cell, crash, pass, Script};

/// Runs `plan` through `script` into a results file of a fresh directory; the outcome, the
/// events' labels (started, and interrupted) and the directory.
fn run(script: &mut Script, plan: &Plan) -> (Outcome, Vec<String>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("r.csv");
    script.watching = Some(out.clone());
    let mut said = Vec::new();
    let results = ResultsFile::create(&out).unwrap();
    let outcome = rounds(&*script, plan, results, None, &mut |e| match e {
        Event::Started { label, .. } => said.push(label.to_string()),
        Event::Interrupted { label } => said.push(format!("interrupted {label}")),
        Event::Note(note) => said.push(format!("note {note}")),
        _ => {}
    })
    .unwrap();
    (outcome, said, dir)
}

fn plan(cells: &[CellConfig], repeat: Repeat) -> Plan<'_> {
    Plan {
        cells,
        repeat,
        more: None,
    }
}

fn rows(outcome: &Outcome) -> &[Row] {
    outcome.results.rows()
}

#[test]
fn every_cell_runs_its_repeats_interleaved_and_each_row_is_written_before_the_next_cell() {
    let cells = [cell("a"), cell("b")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    let (outcome, labels, _dir) = run(&mut script, &plan(&cells, Repeat::Fixed(3)));
    assert_eq!(script.names(), ["a", "b", "a", "b", "a", "b"]);
    // The file on disk held every finished cell's row when the next one started.
    assert_eq!(*script.rows_seen.borrow(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(outcome.records.len(), 6);
    let repeats: Vec<u32> = rows(&outcome).iter().map(|r| r.repeat).collect();
    assert_eq!(repeats, [1, 1, 2, 2, 3, 3]);
    assert!(labels[0].starts_with("[1/6] a ("), "{labels:?}");
    assert!(labels[5].ends_with("run 3/3"), "{labels:?}");
    assert_eq!(outcome.interrupted, None);
}

#[test]
fn one_run_of_each_cell_is_labelled_without_a_run_count() {
    let cells = [cell("a")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    let (_, labels, _dir) = run(&mut script, &plan(&cells, Repeat::Fixed(1)));
    assert!(labels[0].starts_with("[1/1] a ("), "{labels:?}");
    assert!(!labels[0].contains("run "), "{labels:?}");
}

#[test]
fn a_stop_ends_the_run_after_the_cell_it_interrupted_and_keeps_the_rows_before_it() {
    let cells = [cell("a"), cell("b")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    script.interrupt_after = Some(3);
    let (outcome, labels, _dir) = run(&mut script, &plan(&cells, Repeat::Fixed(3)));
    assert_eq!(script.names(), ["a", "b", "a"]);
    // The interrupted cell's record is not a measurement: no row for it.
    assert_eq!(rows(&outcome).len(), 2);
    assert_eq!(outcome.interrupted, Some(libc::SIGINT));
    assert!(
        labels.iter().any(|l| l.starts_with("interrupted [3/6] a")),
        "{labels:?}"
    );
}

#[test]
fn a_crashed_cell_is_a_row_with_its_status_and_step_and_the_run_goes_on() {
    let cells = [cell("small"), cell("big")];
    let mut script = Script::new(|c, _| match c.cell.as_str() {
        "small" => crash(c, Status::Sigbus, 3),
        _ => pass(c, 900.0),
    });
    let (outcome, _, _dir) = run(&mut script, &plan(&cells, Repeat::Fixed(2)));
    let rows = rows(&outcome);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].status, Status::Sigbus);
    assert_eq!(rows[0].crash_step, Some(3));
    assert_eq!(rows[1].status, Status::Pass);
    assert_eq!(rows[1].img_per_s, Some(900.0));
}

#[test]
fn repeat_auto_stops_a_steady_cell_at_its_minimum_and_runs_a_noisy_one_to_its_maximum() {
    let cells = [cell("steady"), cell("noisy")];
    let mut script = Script::new(|c, n| match c.cell.as_str() {
        "steady" => pass(c, 1000.0),
        _ => pass(c, if n % 4 == 1 { 500.0 } else { 1500.0 }),
    });
    let rule = UntilStable {
        target: 0.03,
        min: 3,
        max: 6,
    };
    let (_, said, _dir) = run(&mut script, &plan(&cells, Repeat::Auto(rule)));
    let count = |name: &str| script.names().iter().filter(|n| *n == name).count();
    assert_eq!(count("steady"), 3);
    assert_eq!(count("noisy"), 6);
    let note = said
        .iter()
        .find(|s| s.starts_with("note --repeat auto"))
        .unwrap();
    assert!(note.contains("noisy (6 runs"), "{note}");
    assert!(!note.contains("steady"), "{note}");
    assert!(said[0].starts_with("[1/up to 12]"), "{said:?}");
}

#[test]
fn repeat_auto_stops_a_cell_that_crashes_in_every_run_and_runs_a_marginal_one_to_the_end() {
    let cells = [cell("crashes"), cell("marginal")];
    let mut script = Script::new(|c, n| match (c.cell.as_str(), n % 4) {
        ("crashes", _) => crash(c, Status::Enospc, 1),
        (_, 1) => crash(c, Status::Sigbus, 5),
        _ => pass(c, 1000.0),
    });
    let rule = UntilStable {
        target: 0.03,
        min: 3,
        max: 5,
    };
    let (_, said, _dir) = run(&mut script, &plan(&cells, Repeat::Auto(rule)));
    let count = |name: &str| script.names().iter().filter(|n| *n == name).count();
    assert_eq!(count("crashes"), 3);
    assert_eq!(count("marginal"), 5);
    let note = said
        .iter()
        .find(|s| s.starts_with("note --repeat auto"))
        .unwrap();
    assert!(note.contains("marginal (undecided after 5 runs"), "{note}");
}

#[test]
fn more_runs_go_only_to_the_cells_the_judge_wants_and_stop_at_the_cap() {
    let cells = [cell("decided"), cell("open")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    let wanted = |rows: &[Row]| rows.first().is_some_and(|r| r.cell == "open");
    let more = MoreRuns {
        up_to: 5,
        wanted: &wanted,
    };
    let plan = Plan {
        cells: &cells,
        repeat: Repeat::Fixed(2),
        more: Some(&more),
    };
    let (outcome, said, _dir) = run(&mut script, &plan);
    let count = |name: &str| script.names().iter().filter(|n| *n == name).count();
    assert_eq!(count("decided"), 2);
    assert_eq!(count("open"), 5);
    assert_eq!(rows(&outcome).len(), 7);
    let note = said.iter().find(|s| s.starts_with("note added")).unwrap();
    assert!(
        note.contains("added 3 run(s) to 1 undecided cell(s)"),
        "{note}"
    );
    assert!(note.contains("still undecided at 5 runs: open"), "{note}");
}

#[test]
fn more_runs_that_decide_every_cell_say_so() {
    let cells = [cell("a")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    // Wanted until it has three runs.
    let wanted = |rows: &[Row]| rows.len() < 3;
    let more = MoreRuns {
        up_to: 6,
        wanted: &wanted,
    };
    let plan = Plan {
        cells: &cells,
        repeat: Repeat::Fixed(1),
        more: Some(&more),
    };
    let (_, said, _dir) = run(&mut script, &plan);
    assert_eq!(script.names().len(), 3);
    let note = said.iter().find(|s| s.starts_with("note added")).unwrap();
    assert!(
        note.contains("no cell is left that more runs can decide"),
        "{note}"
    );
}

#[test]
fn each_row_names_its_steps_file_which_is_written_beside_the_results() {
    let cells = [cell("a")];
    let mut script = Script::new(|c, _| pass(c, 1000.0));
    let (outcome, _, dir) = run(&mut script, &plan(&cells, Repeat::Fixed(2)));
    for row in rows(&outcome) {
        let file = row.steps_file.as_deref().expect("a steps file");
        assert!(dir.path().join(file).is_file(), "{file}");
    }
}

#[test]
fn a_cell_is_described_by_its_runtime_size_and_strategy() {
    let mut c = cell("seed");
    c.knobs.runtime = RuntimeKind::Namespace;
    c.knobs.shm_size = Some(ByteSize(64 << 20));
    assert_eq!(describe(&c), "seed (namespace, 64 MiB, file_descriptor)");
    c.knobs.shm_size = None;
    c.knobs.runtime = RuntimeKind::Host;
    assert_eq!(describe(&c), "seed (host, host /dev/shm, file_descriptor)");
}
