//! What operators install beside the binary (`integrations/`), checked by the tools that will
//! read it: the systemd service and timer by `systemd-analyze verify` (in a root of their own,
//! so this machine's units are not touched) with the service's own command run for real, and
//! the Grafana dashboard's queries against the metrics `shmbench node --textfile` writes, each
//! query parsed by Prometheus's `promtool`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::common::*;

fn integrations() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/integrations"))
}

#[test]
fn the_systemd_units_pass_systemd_analyze_and_the_service_s_command_runs() {
    if !require(
        "systemd_analyze",
        || {
            Command::new("systemd-analyze")
                .arg("--version")
                .output()
                .is_ok()
        },
        "systemd-analyze (systemd)",
    ) {
        return;
    }
    let units = integrations().join("systemd");
    let scratch = temp_dir("systemd-units");
    let root = scratch.as_ref().join("root");
    // A root with the system's own units (so `sysinit.target` and the like resolve) and the
    // binary where the service names it: a stand-in, since verify only asks that it runs.
    let system = root.join("usr/lib/systemd");
    std::fs::create_dir_all(&system).unwrap();
    let copied = Command::new("cp")
        .args(["-a", "/usr/lib/systemd/system"])
        .arg(&system)
        .status()
        .unwrap();
    assert!(copied.success());
    let bin = root.join("usr/local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("shmbench"), "#!/bin/sh\n").unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(bin.join("shmbench"), mode).unwrap();
    let installed = root.join("etc/systemd/system");
    std::fs::create_dir_all(&installed).unwrap();
    for unit in ["shmbench-node.service", "shmbench-node.timer"] {
        std::fs::copy(units.join(unit), installed.join(unit)).unwrap();
    }
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg(installed.join("shmbench-node.service"))
        .arg(installed.join("shmbench-node.timer"))
        .output()
        .unwrap();
    // A unit systemd only half understands (a misspelt key) is a warning with exit 0: any word
    // from verify is a failure.
    assert!(
        verify.status.success() && verify.stdout.is_empty() && verify.stderr.is_empty(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );

    // The service's command, as written, with this binary and a directory of the test's.
    let service = std::fs::read_to_string(units.join("shmbench-node.service")).unwrap();
    let exec = (service.lines())
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let mut words: Vec<String> = exec.split_whitespace().map(String::from).collect();
    assert_eq!(words[0], "/usr/local/bin/shmbench");
    let textfile = scratch.as_ref().join("textfile");
    std::fs::create_dir_all(&textfile).unwrap();
    let at = words.iter().position(|w| w == "--textfile").unwrap();
    words[at + 1] = textfile.display().to_string();
    let out = Command::new(BIN).args(&words[1..]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0..=2)), "{out:?}");
    assert!(textfile.join("shmbench-node.prom").is_file(), "{out:?}");
}

/// The metric names and labels `shmbench node --textfile` writes here (with --need, so the
/// need's series is there too).
fn written() -> (BTreeSet<String>, BTreeSet<String>) {
    let dir = temp_dir("dashboard-metrics");
    let out = shmbench(&["node", "--need", "1g", "--textfile", dir.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{out:?}");
    let text = std::fs::read_to_string(dir.join("shmbench-node.prom")).unwrap();
    let mut names = BTreeSet::new();
    let mut labels = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, rest) = line.split_once('{').unwrap_or((line, ""));
        names.insert(name.split_whitespace().next().unwrap().to_string());
        for pair in rest.split(',') {
            if let Some((label, _)) = pair.split_once('=') {
                labels.insert(label.to_string());
            }
        }
    }
    (names, labels)
}

/// Every query of the dashboard: its panels' targets and its variables'.
fn queries(dashboard: &Value) -> Vec<String> {
    let panels = dashboard["panels"].as_array().unwrap();
    let targets = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap())
        .map(|t| t["expr"].as_str().unwrap().to_string());
    let variables = (dashboard["templating"]["list"].as_array().unwrap().iter())
        .filter_map(|v| v["query"]["query"].as_str())
        .map(String::from);
    targets.chain(variables).collect()
}

/// The identifiers a query names that look like shmbench's metrics, and the labels it groups
/// by or shows.
fn named(query: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<&str> = query
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let metrics = words
        .iter()
        .filter(|w| w.starts_with("shmbench_"))
        .map(|w| w.to_string())
        .collect();
    let grouped = query
        .split("by (")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .flat_map(|(labels, _)| labels.split(',').map(|l| l.trim().to_string()))
        .collect();
    (metrics, grouped)
}

#[test]
fn the_dashboard_queries_only_what_the_node_check_writes_and_promtool_parses_them() {
    let Some(prometheus) = prometheus_or_skip() else {
        return;
    };
    let path = integrations().join("grafana/shmbench-node.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (names, labels) = written();
    let queries = queries(&dashboard);
    assert!(queries.len() >= 10, "{queries:?}");
    for query in &queries {
        let (metrics, grouped) = named(query);
        assert!(
            !metrics.is_empty(),
            "a query of no shmbench metric: {query}"
        );
        for m in metrics {
            assert!(
                names.contains(&m),
                "{query}: {m} is not written (written: {names:?})"
            );
        }
        for label in grouped {
            assert!(
                labels.contains(&label),
                "{query}: no series has the label {label}"
            );
        }
    }
    // Each query as Prometheus parses it: a recording rule per query, `promtool check rules`.
    let dir = temp_dir("dashboard-rules");
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, query) in queries.iter().enumerate() {
        // Grafana's variables as a query would receive them: every instance.
        let query = query.replace("$instance", ".*");
        if query.starts_with("label_values(") {
            continue;
        }
        rules.push_str(&format!(
            "      - record: shmbench:dashboard:{i}\n        expr: {}\n",
            serde_json::to_string(&query).unwrap()
        ));
    }
    std::fs::write(dir.join("dashboard.rules.yml"), &rules).unwrap();
    let args = ["check", "rules", "dashboard.rules.yml"];
    assert_promtool_passes(&prometheus, &args, &dir, &rules);
}
