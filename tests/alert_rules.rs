//! The alert rules shmbench ships for its node metrics (`integrations/prometheus/`), checked by
//! Prometheus's own `promtool`: the rules parse, and their unit tests (series written as
//! `shmbench node --textfile` writes them) fire and resolve as they say.

use std::process::{Command, Stdio};

use super::common::*;

#[test]
fn the_alert_rules_pass_promtool_s_check_and_their_unit_tests() {
    let Some(bin) = prometheus_or_skip() else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/prometheus");
    for args in [
        ["check", "rules", "shmbench.rules.yml"],
        ["test", "rules", "shmbench.rules.test.yml"],
    ] {
        assert_promtool_passes(&bin, &args, &dir, "");
    }
}

/// The metrics file `shmbench node --textfile` writes passes `promtool check metrics` (the
/// exposition format's linter), whatever this node's verdict (the check only reads).
#[test]
fn the_node_check_s_metrics_file_passes_promtool_s_lint() {
    let Some(bin) = prometheus_or_skip() else {
        return;
    };
    let dir = temp_dir("textfile");
    let out = shmbench(&["node", "--need", "1g", "--textfile", dir.to_str().unwrap()]);
    let code = out.status.code();
    assert!(matches!(code, Some(0..=2)), "{out:?}");
    let metrics = std::fs::read(dir.join("shmbench-node.prom")).unwrap();
    let mut lint = Command::new(bin.join("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut lint.stdin.take().unwrap(), &metrics).unwrap();
    let lint = lint.wait_with_output().unwrap();
    assert!(
        lint.status.success() && lint.stdout.is_empty() && lint.stderr.is_empty(),
        "{}{}\n{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr),
        String::from_utf8_lossy(&metrics)
    );
}
