//! SARIF 2.1.0 (OASIS), what GitHub code scanning and other tools read: one run of the
//! `shmbench` driver with every rule, a result per finding (level, message, the file and line;
//! the fix in the message's markdown and in properties), and the inputs that could not be
//! checked as tool notifications. A file is a percent-encoded URI relative to the directory
//! shmbench ran in (`uriBaseId` %SRCROOT%, given in `originalUriBaseIds`), or an absolute
//! `file://` URI when it lies outside it. Written with `serde-sarif`'s types (generated from
//! the official schema), and validated against that schema in the tests.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::json;
use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, Message, MultiformatMessageString, Notification,
    NotificationLevel, PhysicalLocation, PropertyBag, Region, ReportingConfiguration,
    ReportingConfigurationLevel, ReportingDescriptor, Result as SarifResult, ResultLevel, Run,
    Sarif as SarifLog, Tool, ToolComponent, Version,
};

use super::CheckFormat;
use crate::input::Problem;
use crate::rules::{Finding, Rule, Severity, RULES};
use crate::Report;

pub struct Sarif;

/// The base the relative URIs are resolved against, named as code scanning expects.
const SRCROOT: &str = "%SRCROOT%";
/// The schema `$schema` names (serde-sarif's own `SCHEMA_URL` is another host's copy).
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

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

/// A URI alone, or one relative to %SRCROOT%.
fn uri(uri: String, relative: bool) -> ArtifactLocation {
    ArtifactLocation::builder()
        .uri(uri)
        .opt_uri_base_id(relative.then(|| SRCROOT.to_string()))
        .build()
}

/// Where a file is, as an artifact location: relative to the directory shmbench ran in (with
/// `uriBaseId` %SRCROOT%), or an absolute `file://` URI for a file outside it; `-` (stdin) as
/// it is.
fn artifact(file: &str, base: Option<&Path>) -> ArtifactLocation {
    let path = Path::new(file);
    if file == "-" {
        return uri("-".into(), false);
    }
    let Some(base) = base else {
        return match path.is_absolute() {
            true => uri(file_uri(&lexical(path)), false),
            false => uri(encode(&lexical(path).display().to_string()), false),
        };
    };
    let whole = lexical(&base.join(path));
    match whole.strip_prefix(lexical(base)) {
        Ok(inside) => uri(encode(&inside.display().to_string()), true),
        Err(_) => uri(file_uri(&whole), false),
    }
}

/// A file and, when known, its line (1-based; a 0 read as the first).
fn location(file: &str, line: Option<usize>, base: Option<&Path>) -> Location {
    let region = line.map(|l| {
        Region::builder()
            .start_line(i64::try_from(l.max(1)).unwrap_or(i64::MAX))
            .build()
    });
    let physical = PhysicalLocation::builder()
        .artifact_location(artifact(file, base))
        .opt_region(region)
        .build();
    Location::builder().physical_location(physical).build()
}

fn result_level(s: Severity) -> ResultLevel {
    match s {
        Severity::Note => ResultLevel::Note,
        Severity::Warning => ResultLevel::Warning,
        Severity::Error => ResultLevel::Error,
    }
}

fn configuration_level(s: Severity) -> ReportingConfigurationLevel {
    match s {
        Severity::Note => ReportingConfigurationLevel::Note,
        Severity::Warning => ReportingConfigurationLevel::Warning,
        Severity::Error => ReportingConfigurationLevel::Error,
    }
}

/// A rule as the driver lists it: id, name, summary, default level and where its help is.
fn descriptor(r: &Rule) -> ReportingDescriptor {
    let help = format!("{}: see docs/CHECK.md in shmbench for an example, the platform facts behind it and how to silence it (annotation shmbench.io/ignore: {}, or --ignore {})", r.summary, r.id, r.id);
    ReportingDescriptor::builder()
        .id(r.id)
        .name(r.name)
        .short_description(MultiformatMessageString::builder().text(r.summary).build())
        .default_configuration(
            ReportingConfiguration::builder()
                .level(json!(configuration_level(r.severity)))
                .build(),
        )
        .help(MultiformatMessageString::builder().text(help).build())
        .build()
}

/// A finding: its rule, level, message (the fix in its markdown), file and line, and the fix
/// and container in properties.
fn result(f: &Finding, base: Option<&Path>) -> SarifResult {
    let index = RULES.iter().position(|r| r.id == f.rule.id).unwrap_or(0);
    let text = format!("{}: {}", f.object, f.message);
    let markdown = f
        .fix
        .as_ref()
        .map(|fix| format!("{text}\n\nFix:\n```\n{fix}\n```"));
    let mut properties = BTreeMap::new();
    if let Some(fix) = &f.fix {
        properties.insert("fix".to_string(), json!(fix));
    }
    if let Some(container) = &f.container {
        properties.insert("container".to_string(), json!(container));
    }
    let properties = (!properties.is_empty()).then(|| {
        PropertyBag::builder()
            .additional_properties(properties)
            .build()
    });
    SarifResult::builder()
        .rule_id(f.rule.id)
        .rule_index(i64::try_from(index).unwrap_or(0))
        .level(result_level(f.rule.severity))
        .message(Message::builder().text(text).opt_markdown(markdown).build())
        .locations(vec![location(&f.file, Some(f.line), base)])
        .opt_properties(properties)
        .build()
}

/// An input that could not be checked, as a tool notification.
fn notification(p: &Problem, base: Option<&Path>) -> Notification {
    Notification::builder()
        .level(json!(NotificationLevel::Error))
        .message(format!("cannot check: {}", p.reason).as_str())
        .locations(vec![location(&p.file, p.line, base)])
        .build()
}

/// The one run: the driver with every rule, the results, and the invocation with what could
/// not be checked; %SRCROOT% given as the directory shmbench ran in, when it is known.
fn run(report: &Report) -> Run {
    let base = report.base.as_deref();
    let driver = ToolComponent::builder()
        .name("shmbench")
        .version(env!("CARGO_PKG_VERSION"))
        .rules(RULES.iter().copied().map(descriptor).collect::<Vec<_>>())
        .build();
    let invocation = Invocation::builder()
        .execution_successful(report.problems.is_empty())
        .tool_execution_notifications(
            report
                .problems
                .iter()
                .map(|p| notification(p, base))
                .collect::<Vec<_>>(),
        )
        .build();
    let roots = base.map(|base| {
        let root = format!("{}/", file_uri(base).trim_end_matches('/'));
        BTreeMap::from([(SRCROOT.to_string(), uri(root, false))])
    });
    Run::builder()
        .tool(Tool::from(driver))
        .results(
            report
                .findings
                .iter()
                .map(|f| result(f, base))
                .collect::<Vec<_>>(),
        )
        .invocations(vec![invocation])
        .opt_original_uri_base_ids(roots)
        .build()
}

impl CheckFormat for Sarif {
    fn render(&self, report: &Report) -> String {
        let log = SarifLog::builder()
            .schema(SCHEMA)
            .version(json!(Version::V2_1_0))
            .runs(vec![run(report)])
            .build();
        let json = serde_json::to_string_pretty(&log).unwrap_or_default();
        format!("{}\n", super::json_for_logs(&json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references_under_the_source_root() {
        let base = Some(Path::new("/work/repo"));
        let at = |file: &str| serde_json::to_value(artifact(file, base)).unwrap();
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
        assert_eq!(
            serde_json::to_value(artifact("../a.yaml", None)).unwrap(),
            json!({"uri": "../a.yaml"})
        );
    }
}
