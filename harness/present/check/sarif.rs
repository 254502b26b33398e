//! SARIF 2.1.0 (OASIS), what GitHub code scanning and other tools read: one run of the
//! `shmbench` driver with every rule, a result per finding (level, message, the file and line;
//! the fix in the message's markdown and in properties), and the inputs that could not be
//! checked as tool notifications. A file is a percent-encoded URI relative to the directory
//! shmbench ran in (`uriBaseId` %SRCROOT%, given in `originalUriBaseIds`), or an absolute
//! `file://` URI when it lies outside it. Validated against the official schema in the tests.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use super::CheckFormat;
use check::rules::{Severity, RULES};
use check::Report;

pub struct Sarif;

/// The base the relative URIs are resolved against, named as code scanning expects.
const SRCROOT: &str = "%SRCROOT%";

/// Bytes as a URI's path: unreserved characters and `/` as they are, the rest percent-encoded
/// (RFC 3986; a `:` too, so that no first segment reads as a scheme).
fn encode(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A path without `.` and with each `..` taken back (by the words, not the file system: the
/// path stays the one the user gave).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A directory as an absolute `file://` URI ending in `/`.
fn file_uri(path: &Path) -> String {
    format!("file://{}", encode(&path.display().to_string()))
}

/// Where a file is, as an artifact location: relative to the directory shmbench ran in (with
/// `uriBaseId` %SRCROOT%), or an absolute `file://` URI for a file outside it; `-` (stdin) as
/// it is.
fn artifact(file: &str, base: Option<&Path>) -> Value {
    let path = Path::new(file);
    if file == "-" {
        return json!({"uri": "-"});
    }
    let Some(base) = base else {
        return match path.is_absolute() {
            true => json!({"uri": file_uri(&lexical(path))}),
            false => json!({"uri": encode(&lexical(path).display().to_string())}),
        };
    };
    let whole = lexical(&base.join(path));
    match whole.strip_prefix(lexical(base)) {
        Ok(inside) => json!({"uri": encode(&inside.display().to_string()), "uriBaseId": SRCROOT}),
        Err(_) => json!({"uri": file_uri(&whole)}),
    }
}

fn level(s: Severity) -> &'static str {
    s.word()
}

impl CheckFormat for Sarif {
    fn render(&self, report: &Report) -> String {
        let base = report.base.as_deref();
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
                        "artifactLocation": artifact(&f.file, base),
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
                let mut location = json!({"physicalLocation": {"artifactLocation": artifact(&p.file, base)}});
                if let Some(line) = p.line {
                    location["physicalLocation"]["region"] = json!({"startLine": line.max(1)});
                }
                json!({"level": "error", "message": {"text": format!("cannot check: {}", p.reason)}, "locations": [location]})
            })
            .collect();
        let mut doc = json!({
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
        if let Some(base) = base {
            let root = format!("{}/", file_uri(base).trim_end_matches('/'));
            doc["runs"][0]["originalUriBaseIds"] = json!({SRCROOT: {"uri": root}});
        }
        let json = serde_json::to_string_pretty(&doc).unwrap_or_default();
        format!("{}\n", super::json_for_logs(&json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references_under_the_source_root() {
        let base = Some(Path::new("/work/repo"));
        let at = |file: &str| artifact(file, base);
        assert_eq!(
            at("./k8s/train job.yaml"),
            json!({"uri": "k8s/train%20job.yaml", "uriBaseId": "%SRCROOT%"})
        );
        assert_eq!(
            at("/work/repo/deploy/../ci/a:b.yaml"),
            json!({"uri": "ci/a%3Ab.yaml", "uriBaseId": "%SRCROOT%"})
        );
        assert_eq!(
            at("../other/x%y.yaml"),
            json!({"uri": "file:///work/other/x%25y.yaml"})
        );
        assert_eq!(
            at("/etc/k8s/ü.yaml"),
            json!({"uri": "file:///etc/k8s/%C3%BC.yaml"})
        );
        assert_eq!(artifact("../a.yaml", None), json!({"uri": "../a.yaml"}));
    }
}
