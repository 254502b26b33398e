//! SARIF 2.1.0 (OASIS), what GitHub code scanning and other tools read: one run of the
//! `shmbench` driver with every rule, a result per finding (level, message, the file's
//! relative URI and line; the fix in the message's markdown and in properties), and the inputs
//! that could not be checked as tool notifications. Validated against the official schema in
//! the tests.

use serde_json::{json, Value};

use super::CheckFormat;
use crate::check::rules::{Severity, RULES};
use crate::check::Report;

pub(crate) struct Sarif;

/// A path as a URI reference: unreserved characters and `/` as they are, the rest encoded.
fn uri(path: &str) -> String {
    let path = path.strip_prefix("./").unwrap_or(path);
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn level(s: Severity) -> &'static str {
    s.word()
}

impl CheckFormat for Sarif {
    fn render(&self, report: &Report) -> String {
        let rules: Vec<Value> = RULES
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "name": r.name,
                    "shortDescription": {"text": r.summary},
                    "defaultConfiguration": {"level": level(r.severity)},
                    "help": {"text": format!("{}: see docs/CHECK.md in shmbench for an example, the platform facts behind it and how to silence it (annotation shmbench.io/ignore: {}, or --ignore {})", r.summary, r.id, r.id)},
                })
            })
            .collect();
        let results: Vec<Value> = report
            .findings
            .iter()
            .map(|f| {
                let index = RULES.iter().position(|r| r.id == f.rule.id).unwrap_or(0);
                let mut result = json!({
                    "ruleId": f.rule.id,
                    "ruleIndex": index,
                    "level": level(f.rule.severity),
                    "message": {"text": format!("{}: {}", f.object, f.message)},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": uri(&f.file)},
                        "region": {"startLine": f.line.max(1)},
                    }}],
                });
                if let Some(fix) = &f.fix {
                    result["message"]["markdown"] = json!(format!(
                        "{}: {}\n\nFix:\n```\n{fix}\n```",
                        f.object, f.message
                    ));
                    result["properties"] = json!({"fix": fix});
                }
                if let Some(container) = &f.container {
                    result["properties"]["container"] = json!(container);
                }
                result
            })
            .collect();
        let notifications: Vec<Value> = report
            .problems
            .iter()
            .map(|p| {
                let mut location = json!({"physicalLocation": {"artifactLocation": {"uri": uri(&p.file)}}});
                if let Some(line) = p.line {
                    location["physicalLocation"]["region"] = json!({"startLine": line.max(1)});
                }
                json!({"level": "error", "message": {"text": format!("cannot check: {}", p.reason)}, "locations": [location]})
            })
            .collect();
        let doc = json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "shmbench",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }},
                "results": results,
                "invocations": [{
                    "executionSuccessful": report.problems.is_empty(),
                    "toolExecutionNotifications": notifications,
                }],
            }],
        });
        format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri("./k8s/train job.yaml"), "k8s/train%20job.yaml");
    }
}
