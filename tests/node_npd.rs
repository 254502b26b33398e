//! `shmbench node --emit npd` and `--emit daemonset`: Node Problem Detector's custom plugin
//! monitor config, checked field by field against NPD's documented format (its
//! pkg/custompluginmonitor/types: the fields it reads, their types, and what its `Validate`
//! refuses), its rule run as NPD runs it; and the DaemonSet that runs NPD with it on every
//! node, validated against the official Kubernetes schemas as the Job manifests are. NPD itself
//! is not run: no image registry or kubelet is reachable here.

use super::common::*;
use serde_json::Value;
use std::process::Command;

/// A Go duration (`time.ParseDuration`, as NPD parses `invoke_interval` and `timeout`):
/// decimal numbers each with a unit, in seconds; None when Go would refuse it.
fn go_duration(text: &str) -> Option<f64> {
    const UNITS: [(&str, f64); 7] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    if text.is_empty() {
        return None;
    }
    let mut rest = text;
    let mut total = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        // The longest unit that matches ("ms" before "m").
        let (unit, scale) = UNITS
            .iter()
            .filter(|(u, _)| rest.starts_with(u))
            .max_by_key(|(u, _)| u.len())?;
        total += number * scale;
        rest = &rest[unit.len()..];
    }
    Some(total)
}

/// NPD's custom plugin monitor config rules, one by one: every field is one NPD reads (Go
/// ignores unknown ones, so a misspelt field would silently be its default: refused here),
/// with its type; `Validate`'s checks (plugin "custom", a rule's timeout within the global
/// one, a permanent rule's condition among the default conditions); and, where `path_exists`,
/// the rule's path (NPD refuses a path that does not exist).
fn assert_npd_config(config: &Value, path_exists: bool) {
    let object = config.as_object().expect("an object");
    let known = [
        "plugin",
        "pluginConfig",
        "source",
        "conditions",
        "rules",
        "metricsReporting",
    ];
    for key in object.keys() {
        assert!(known.contains(&key.as_str()), "NPD reads no field {key:?}");
    }
    assert_eq!(
        config["plugin"], "custom",
        "NPD supports only the custom plugin"
    );
    assert!(
        config["source"].as_str().is_some_and(|s| !s.is_empty()),
        "source"
    );
    assert!(config["metricsReporting"].is_boolean());
    let global = &config["pluginConfig"];
    let global_keys = [
        "invoke_interval",
        "timeout",
        "max_output_length",
        "concurrency",
        "enable_message_change_based_condition_update",
        "skip_initial_status",
    ];
    for key in global.as_object().expect("pluginConfig").keys() {
        assert!(
            global_keys.contains(&key.as_str()),
            "pluginConfig has no {key:?}"
        );
    }
    let interval = go_duration(global["invoke_interval"].as_str().unwrap()).unwrap();
    let global_timeout = go_duration(global["timeout"].as_str().unwrap()).unwrap();
    assert!(interval > 0.0 && global_timeout > 0.0);
    assert!(
        global_timeout <= interval,
        "a check may not outlast its interval"
    );
    assert!(global["max_output_length"].as_u64().unwrap() >= 80);
    assert!(global["concurrency"].as_u64().unwrap() >= 1);
    assert!(global["enable_message_change_based_condition_update"].is_boolean());
    let conditions = config["conditions"].as_array().expect("conditions");
    for c in conditions {
        for key in c.as_object().unwrap().keys() {
            assert!(
                ["type", "reason", "message"].contains(&key.as_str()),
                "a default condition has no {key:?}"
            );
        }
        assert!(c["type"].as_str().is_some_and(|t| !t.is_empty()));
        assert!(c["reason"].as_str().is_some_and(|t| !t.is_empty()));
    }
    let rules = config["rules"].as_array().expect("rules");
    assert!(!rules.is_empty());
    for rule in rules {
        let keys = [
            "type",
            "condition",
            "reason",
            "path",
            "args",
            "timeout",
            "invoke_interval",
        ];
        for key in rule.as_object().unwrap().keys() {
            assert!(keys.contains(&key.as_str()), "a rule has no {key:?}");
        }
        let kind = rule["type"].as_str().unwrap();
        assert!(["temporary", "permanent"].contains(&kind), "{kind}");
        if kind == "permanent" {
            assert!(
                conditions.iter().any(|c| c["type"] == rule["condition"]),
                "a permanent problem needs a preset default condition"
            );
        }
        let timeout = go_duration(rule["timeout"].as_str().unwrap()).unwrap();
        assert!(
            timeout <= global_timeout,
            "plugin timeout is greater than global timeout"
        );
        let path = rule["path"].as_str().unwrap();
        assert!(path.starts_with('/'), "{path}");
        if path_exists {
            assert!(
                std::path::Path::new(path).exists(),
                "rule path {path} does not exist"
            );
        }
        assert!(rule["args"]
            .as_array()
            .unwrap()
            .iter()
            .all(Value::is_string));
    }
}

/// The arguments the config's rule runs the binary with.
fn rule_args(config: &Value) -> Vec<&str> {
    config["rules"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

#[test]
fn the_plugin_config_has_npds_fields_and_its_rule_runs_as_npd_runs_it() {
    let o = shmbench(&["node", "--emit", "npd", "--need", "64k", "--max-used", "95"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let config: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_npd_config(&config, true);
    let rule = &config["rules"][0];
    let args = rule_args(&config);
    assert_eq!(
        args,
        [
            "node",
            "--format",
            "line",
            "--need",
            "64k",
            "--max-used",
            "95"
        ],
        "the first line alone (NPD keeps max_output_length bytes), and the policy given"
    );
    // As NPD runs it: the status is 0, 1 or 2 (OK, NonOK, Unknown) and the message a line
    // within max_output_length.
    let run = Command::new(rule["path"].as_str().unwrap())
        .args(&args)
        .output()
        .unwrap();
    let code = run.status.code().unwrap();
    assert!([0, 1, 2].contains(&code), "{run:?}");
    let said = String::from_utf8(run.stdout).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.starts_with("shmbench: "), "{said}");
    assert!(
        said.trim_end().len() as u64
            <= config["pluginConfig"]["max_output_length"]
                .as_u64()
                .unwrap(),
        "{said}"
    );
}

#[test]
fn the_daemonset_runs_npd_with_the_host_pids_and_dev_shm_read_only_and_the_schemas_accept_it() {
    let o = shmbench(&[
        "node",
        "--emit",
        "daemonset",
        "--image",
        "registry.example/shmbench:1",
        "--need",
        "8g",
        "--namespace",
        "monitoring",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let objects = shmbench::cluster::k8s::yaml::from_yaml(&text).unwrap();
    let kinds: Vec<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRoleBinding",
            "ConfigMap",
            "DaemonSet"
        ]
    );
    let daemonset = &objects[3];
    assert_eq!(daemonset["metadata"]["namespace"], "monitoring");
    let pod = &daemonset["spec"]["template"]["spec"];
    assert_eq!(
        pod["hostPID"], true,
        "leftovers are proven dead from the host's pids"
    );
    let npd = &pod["containers"][0];
    let shm_mount = npd["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == "/dev/shm")
        .expect("the host's /dev/shm mounted");
    assert_eq!(shm_mount["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == shm_mount["name"])
        .unwrap();
    assert_eq!(volume["hostPath"]["path"], "/dev/shm");
    assert_eq!(
        pod["initContainers"][0]["image"],
        "registry.example/shmbench:1"
    );
    // The config NPD reads is the plugin monitor config, the check's policy kept.
    let config_text = objects[2]["data"]["shmbench.json"].as_str().unwrap();
    let config: Value = serde_json::from_str(config_text).unwrap();
    assert_npd_config(&config, false);
    let flag = npd["command"][2].as_str().unwrap();
    assert_eq!(flag, "--config.custom-plugin-monitor=/config/shmbench.json");
    let args = rule_args(&config);
    assert_eq!(
        args,
        [
            "node",
            "--format",
            "line",
            "--read-only-view",
            "--need",
            "8g"
        ],
        "the pod's /dev/shm is a read-only view of the node's: its own read-only flag is not \
         the node's"
    );
    // The init container's command copies the binary to where the rule runs it.
    assert_eq!(
        pod["initContainers"][0]["command"][2],
        config["rules"][0]["path"]
    );
    let Some(program) = validator() else { return };
    let dir = temp_dir("npd");
    let file = dir.join("daemonset.yaml");
    std::fs::write(&file, &text).unwrap();
    assert_schemas_accept(&program, &file, "the DaemonSet");
}

#[test]
fn what_npd_runs_holds_after_a_double_dash_and_from_any_directory() {
    // A relative path is made absolute (NPD runs the rule from its own directory), and the
    // first-line flag comes before a `--` of the user's, where it would be a path.
    let dir = temp_dir("npd-paths");
    std::fs::create_dir(dir.join("shm")).unwrap();
    let o = output(|c| {
        c.current_dir(dir.as_ref())
            .args(["node", "--need", "1m", "--emit", "npd", "--", "shm"])
    });
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let config: Value = serde_json::from_slice(&o.stdout).unwrap();
    let args = &config["rules"][0]["args"];
    let full = dir.join("shm").display().to_string();
    assert_eq!(
        args,
        &serde_json::json!(["node", "--format", "line", "--need", "1m", "--", full]),
        "{args}"
    );
    let run = Command::new(config["rules"][0]["path"].as_str().unwrap())
        .args(args.as_array().unwrap().iter().map(|a| a.as_str().unwrap()))
        .output()
        .unwrap();
    assert!(
        [0, 1, 2].contains(&run.status.code().unwrap()) && run.stdout.starts_with(b"shmbench: "),
        "{run:?}"
    );
    assert!(
        !String::from_utf8_lossy(&run.stdout).contains("error"),
        "{run:?}"
    );
    // The DaemonSet's pod mounts the node's /dev/shm at /dev/shm: another path is refused.
    let o = shmbench(&["node", "/run/shm", "--emit", "daemonset", "--image", "i:1"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("give no path"),
        "{o:?}"
    );
}

#[test]
fn copy_self_hands_over_a_binary_that_runs() {
    let dir = temp_dir("copy-self");
    let dest = dir.join("shmbench");
    let o = shmbench(&["copy-self", dest.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = Command::new(&dest).arg("--version").output().unwrap();
    assert!(run.status.success());
    assert!(String::from_utf8_lossy(&run.stdout).starts_with("shmbench"));
    assert!(!dir.join("shmbench.partial").exists());
}

#[test]
fn go_durations_parse_as_go_parses_them() {
    assert_eq!(go_duration("60s"), Some(60.0));
    assert_eq!(go_duration("1m30s"), Some(90.0));
    assert_eq!(go_duration("500ms"), Some(0.5));
    assert_eq!(go_duration("60"), None, "Go needs a unit");
    assert_eq!(go_duration(""), None);
}

#[test]
fn a_manifest_kubernetes_would_refuse_and_a_textfile_directory_that_cannot_take_the_file_are_errors_first(
) {
    let daemonset = |extra: &[&str]| {
        let mut args = vec![
            "node",
            "--emit",
            "daemonset",
            "--image",
            "registry.example/shmbench:1",
        ];
        args.extend_from_slice(extra);
        shmbench(&args)
    };
    for (extra, says) in [
        (&["--namespace", "kube-system\nx"][..], "--namespace"),
        (
            &["--namespace", "Bad_Name"][..],
            "not a Kubernetes namespace name",
        ),
        (
            &["--npd-image", "npd:1 --privileged"][..],
            "not an image reference",
        ),
    ] {
        let o = daemonset(extra);
        let said = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {said}");
        assert!(said.contains(says), "{extra:?}: {said}");
        assert!(o.stdout.is_empty(), "{extra:?}: a manifest was printed");
    }
    // Before any work: a directory node_exporter cannot be serving.
    let o = shmbench(&["node", "--textfile", "/nonexistent/textfile"]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("--textfile /nonexistent/textfile"), "{said}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
