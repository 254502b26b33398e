//! Snapshots of the fleet's verdict as each output writes it, from a fixed fleet (eight nodes of
//! the seed's docker-tuned cell, five runs each: one 40% slower, one crashing, one new with two
//! runs), so a change to any renderer shows as a diff. Review with `cargo insta review`.

use super::{fleet_rows, node_runs, verdict};
use shmbench::fleet::judge::actions::{self as fleet_commands, Platform};
use shmbench::fleet::judge::rows::NodeName;
use shmbench::fleet::judge::verdict::Thresholds;
use shmbench::fleet::judge::{json_verdict as fleet_json, text as fleet};

fn fixed() -> shmbench::fleet::judge::verdict::Verdict {
    let mut rows = fleet_rows(
        &[1000.0, 1000.0, 600.0, 1000.0, 0.0, 1000.0, 1000.0, 1000.0],
        5,
    );
    rows.extend(node_runs("gpu-new", 2, 1000.0, 0.05));
    verdict(&rows, Thresholds::default())
}

#[test]
fn fleet_text() {
    insta::assert_snapshot!(fleet::render_text(&fixed()));
}

#[test]
fn fleet_markdown() {
    insta::assert_snapshot!(fleet::render_markdown(&fixed()));
}

#[test]
fn fleet_json() {
    insta::assert_snapshot!(fleet_json::render(&fixed()).unwrap());
}

#[test]
fn fleet_commands() {
    let v = fixed();
    insta::assert_snapshot!(format!(
        "{}\n{}",
        fleet_commands::render(&v, Platform::Slurm, NodeName::Node),
        fleet_commands::render(&v, Platform::Kubernetes, NodeName::Node)
    ));
}
