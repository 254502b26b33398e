//! A node check as Prometheus metrics, in the text exposition format node_exporter's textfile
//! collector serves from a `*.prom` file (the alert rules in `integrations/prometheus/` read
//! these names). Every series carries the audited `path`; each problem kind is listed, 0 or 1,
//! so an alert can name it and a resolved one reads 0 rather than vanishing.

use std::fmt::Write;

use crate::node::{NodeFacts, NodePolicy, NodeVerdict, Problem};

const STATUS: (&str, &str) = (
    "shmbench_node_status",
    "The node check's verdict: 0 ok, 1 a problem, 2 unknown.",
);
const CHECKED_AT: (&str, &str) = (
    "shmbench_node_check_timestamp_seconds",
    "When the check ran (Unix time): an alert on its age finds a check that stopped running.",
);

/// The series that describe the filesystem at the path and its files: written only where it
/// was measured (a 0 would say it was, and was empty).
const OF_THE_FILESYSTEM: [&str; 7] = [
    "shmbench_node_shm_size_bytes",
    "shmbench_node_shm_used_bytes",
    "shmbench_node_shm_free_bytes",
    "shmbench_node_shm_is_tmpfs",
    "shmbench_node_shm_dead_bytes",
    "shmbench_node_shm_dead_files",
    "shmbench_node_shm_unowned_bytes",
];

/// A label value as the exposition format quotes it: backslash, double quote and line feed
/// escaped.
fn label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One metric: its help, its type, and its samples (extra labels, value).
fn metric(out: &mut String, name: &str, help: &str, path: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{{path=\"{path}\"{labels}}} {value}");
    }
}

/// The metrics of one check, checked at `unix_time` (seconds).
pub fn render(
    facts: &NodeFacts,
    policy: &NodePolicy,
    verdict: &NodeVerdict,
    unix_time: f64,
) -> String {
    let path = label_value(&facts.path);
    let mut out = String::new();
    let one = |value: f64| vec![(String::new(), value)];
    let dead_bytes: u64 = facts.dead.iter().map(|d| d.bytes).sum();
    let gauges: [(&str, &str, f64); 8] = [
        (
            "shmbench_node_shm_size_bytes",
            "Size of the filesystem at path (statvfs).",
            facts.size_bytes as f64,
        ),
        (
            "shmbench_node_shm_used_bytes",
            "Bytes in use on it (statvfs).",
            facts.used_bytes as f64,
        ),
        (
            "shmbench_node_shm_free_bytes",
            "Bytes free on it (statvfs).",
            facts.size_bytes.saturating_sub(facts.used_bytes) as f64,
        ),
        (
            "shmbench_node_shm_dead_bytes",
            "Bytes of files whose owner is proven gone and that no live process holds.",
            dead_bytes as f64,
        ),
        (
            "shmbench_node_shm_dead_files",
            "Files whose owner is proven gone and that no live process holds.",
            facts.dead.len() as f64,
        ),
        (
            "shmbench_node_shm_unowned_bytes",
            "Bytes of files no process holds whose names name no owner (never called dead).",
            facts.unowned_bytes as f64,
        ),
        (
            "shmbench_node_shm_is_tmpfs",
            "1 when the filesystem at path is a tmpfs.",
            f64::from(u8::from(facts.is_tmpfs())),
        ),
        (STATUS.0, STATUS.1, f64::from(verdict.status.exit_code())),
    ];
    // A path that is missing or not a directory was not measured: its size and type are not
    // 0 (a series of 0 would fire the size and type alerts for what is the `missing` problem).
    let measured = facts.mode.is_some();
    for (name, help, value) in gauges {
        if measured || !OF_THE_FILESYSTEM.contains(&name) {
            metric(&mut out, name, help, &path, &one(value));
        }
    }
    if let Some(need) = policy.need_bytes {
        metric(
            &mut out,
            "shmbench_node_shm_need_bytes",
            "The size the node's jobs need, by the check's policy.",
            &path,
            &one(need as f64),
        );
    }
    let producers: Vec<(String, f64)> = facts
        .producers
        .iter()
        .map(|p| {
            (
                format!(",producer=\"{}\"", p.producer.label()),
                p.bytes as f64,
            )
        })
        .collect();
    metric(
        &mut out,
        "shmbench_node_shm_producer_bytes",
        "Bytes of the files each kind of producer's names point to (a hint by name), held or not.",
        &path,
        &producers,
    );
    let problems: Vec<(String, f64)> = Problem::CODES
        .iter()
        .map(|code| {
            let found = verdict.problems.iter().any(|p| p.code() == *code);
            (format!(",problem=\"{code}\""), f64::from(u8::from(found)))
        })
        .collect();
    metric(
        &mut out,
        "shmbench_node_problem",
        "1 for each kind of problem the check found.",
        &path,
        &problems,
    );
    metric(
        &mut out,
        CHECKED_AT.0,
        CHECKED_AT.1,
        &path,
        &one(unix_time.floor()),
    );
    out
}

/// The metrics when the path could not be read: the verdict, unknown, and when.
pub fn render_unreadable(path: &str, unix_time: f64) -> String {
    let path = label_value(path);
    let mut out = String::new();
    metric(&mut out, STATUS.0, STATUS.1, &path, &[(String::new(), 2.0)]);
    let when = [(String::new(), unix_time.floor())];
    metric(&mut out, CHECKED_AT.0, CHECKED_AT.1, &path, &when);
    out
}

#[cfg(test)]
mod tests {
    use super::label_value;

    #[test]
    fn label_values_escape_what_the_format_reads() {
        assert_eq!(label_value("/dev/shm"), "/dev/shm");
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
