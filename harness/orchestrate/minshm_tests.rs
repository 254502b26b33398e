//! The bisection through a scripted launcher: a loader that passes from a threshold up, one that
//! fails once at the boundary, one that fails for another reason, a budget, a stop, a command.

use std::time::Duration;

use model::knobs::Loader;
use model::record::Status;

use super::{search_with, Bounds, MinShm};
use crate::launcher::fake::{cell, crash, pass, Script};

const MIB: u64 = 1 << 20;

fn bounds(resolution: u64, repeats: u32) -> Bounds {
    Bounds {
        resolution,
        repeats,
        limit: 8 << 30,
        budget: None,
    }
}

/// A loader that passes in `threshold` bytes of /dev/shm or more, and crashes below.
fn threshold(at: u64) -> Script {
    Script::new(move |c, _| match c.knobs.shm_size.map(|s| s.bytes()) {
        Some(size) if size >= at => pass(c, 1000.0),
        _ => crash(c, Status::Sigbus, 2),
    })
}

/// The trials the script ran at `size`.
fn runs_at(script: &Script, size: u64) -> usize {
    let launched = script.launched.borrow();
    launched.iter().filter(|(_, s)| *s == Some(size)).count()
}

fn search(script: &Script, bounds: Bounds) -> anyhow::Result<MinShm> {
    search_with(script, &cell("seed"), bounds, |_| {})
}

#[test]
fn the_bisection_brackets_the_threshold_within_the_resolution() {
    let script = threshold(37 * MIB);
    let found = search(&script, bounds(4 * MIB, 1)).unwrap();
    assert!(found.measured_bytes >= 37 * MIB, "{found:?}");
    assert!(found.failed_below_bytes < 37 * MIB, "{found:?}");
    assert!(
        found.measured_bytes - found.failed_below_bytes <= 4 * MIB,
        "{found:?}"
    );
    assert_eq!(found.measured_bytes % 4096, 0);
    assert!(!found.budget_spent);
    // Every trial is recorded, with its size and how it ended.
    assert_eq!(found.trials.len(), script.launched.borrow().len());
    assert!(found.trials.iter().any(|t| t.crash_step == Some(2)));
}

#[test]
fn the_boundary_passes_every_repeat_before_it_is_the_answer() {
    let script = threshold(20 * MIB);
    let found = search(&script, bounds(MIB, 3)).unwrap();
    let at_answer = runs_at(&script, found.measured_bytes);
    assert!(
        at_answer >= 3,
        "{at_answer} runs at {}",
        found.measured_bytes
    );
}

#[test]
fn a_boundary_that_fails_in_a_repeat_is_stepped_up_a_resolution() {
    // Passes from 20 MiB, except that the first repeat at the boundary crashes (a run of luck).
    let failed_once = std::cell::Cell::new(false);
    let script = Script::new(move |c, _| {
        let size = c.knobs.shm_size.map(|s| s.bytes()).unwrap_or(0);
        let confirming = (20 * MIB..21 * MIB).contains(&size);
        if size < 20 * MIB || (confirming && !failed_once.replace(true)) {
            crash(c, Status::Sigbus, 4)
        } else {
            pass(c, 1000.0)
        }
    });
    let found = search(&script, bounds(MIB, 2)).unwrap();
    assert!(found.measured_bytes >= 21 * MIB, "{found:?}");
    // The boundary stepped up to passes as many runs as any boundary must.
    let at_answer = runs_at(&script, found.measured_bytes);
    assert_eq!(at_answer, 2, "{found:?}");
    assert!(found.failed_below_bytes >= 20 * MIB, "{found:?}");
}

#[test]
fn the_first_upper_bound_and_its_doublings_stay_within_the_limit() {
    let script = threshold(u64::MAX);
    let small = Bounds {
        limit: 100 * MIB,
        ..bounds(MIB, 1)
    };
    let err = search(&script, small).unwrap_err().to_string();
    assert!(err.contains("does not pass even with 100 MiB"), "{err}");
    let tried: Vec<u64> = script
        .launched
        .borrow()
        .iter()
        .filter_map(|l| l.1)
        .collect();
    assert!(tried.iter().all(|s| *s <= 100 * MIB), "{tried:?}");
    assert_eq!(
        tried.last(),
        Some(&(100 * MIB)),
        "the limit itself is tried"
    );
}

#[test]
fn a_failure_that_is_not_dev_shm_s_stops_the_search_and_says_so() {
    let script = Script::new(|c, _| crash(c, Status::Oom, 1));
    let err = search(&script, bounds(MIB, 1)).unwrap_err().to_string();
    assert!(
        err.contains("failed for another reason than /dev/shm (oom"),
        "{err}"
    );
}

#[test]
fn a_loader_that_crashes_even_at_the_limit_is_refused() {
    let script = Script::new(|c, _| crash(c, Status::Sigbus, 1));
    let err = search(&script, bounds(MIB, 1)).unwrap_err().to_string();
    assert!(err.contains("does not pass even with"), "{err}");
}

#[test]
fn a_stop_ends_the_search_at_the_next_trial() {
    let mut script = threshold(37 * MIB);
    script.interrupt_after = Some(2);
    let err = search(&script, bounds(MIB, 1)).unwrap_err().to_string();
    assert_eq!(err, "interrupted");
    assert_eq!(script.launched.borrow().len(), 2);
}

#[test]
fn a_spent_budget_returns_the_bracket_it_has() {
    let script = threshold(37 * MIB);
    let spent = Bounds {
        budget: Some(Duration::ZERO),
        ..bounds(MIB, 3)
    };
    let found = search(&script, spent).unwrap();
    assert!(found.budget_spent);
    // The upper bound passed; nothing was bisected.
    assert_eq!(found.failed_below_bytes, 0);
    assert!(found.measured_bytes >= 37 * MIB);
}

#[test]
fn a_command_s_bracket_starts_from_its_peak_in_a_roomy_first_run() {
    let script = Script::new(|c, _| {
        let size = c.knobs.shm_size.map(|s| s.bytes()).unwrap_or(0);
        let mut record = match size >= 10 * MIB {
            true => pass(c, 1.0),
            false => crash(c, Status::Enospc, 1),
        };
        record.metrics.peak_shm_bytes = 10 * MIB;
        record
    });
    let mut command = cell("train");
    command.knobs.loader = Loader::Command;
    let found = search_with(&script, &command, bounds(MIB, 1), |_| {}).unwrap();
    assert_eq!(found.predicted_bytes, 10 * MIB);
    assert_eq!(found.predicted_batches, 0);
    // The first trial is the roomy one, at the limit.
    assert_eq!(script.launched.borrow()[0].1, Some(8 << 30));
    assert!(found.measured_bytes >= 10 * MIB && found.measured_bytes <= 11 * MIB);
}

#[test]
fn a_sigbus_of_another_cause_than_the_tmpfs_is_no_size_s_failure() {
    // A SIGBUS a `kill` sent: no /dev/shm size passes it, and the search says so at once.
    let script = Script::new(|c, _| {
        let mut record = crash(c, Status::Sigbus, 2);
        record.explanation = Some(explain::Explanation {
            cause: explain::Cause::Sent,
            facts: vec!["sent by pid 1".into()],
            fix: String::new(),
            pid: None,
            caught: true,
        });
        record
    });
    let err = search(&script, bounds(MIB, 1)).unwrap_err().to_string();
    assert!(err.contains("(sigbus, cause sent"), "{err}");
    assert_eq!(script.launched.borrow().len(), 1);
}
