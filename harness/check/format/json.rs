//! The report as JSON: the findings (each with its rule), the inputs that could not be
//! checked, and the rules that were applied.

use super::CheckFormat;
use crate::rules::RULES;
use crate::Report;

pub struct Json;

impl CheckFormat for Json {
    fn render(&self, report: &Report) -> String {
        let doc = serde_json::json!({
            "files": report.files,
            "findings": report.findings,
            "problems": report.problems,
            "skipped": report.skipped,
            "rules": RULES,
        });
        let json = serde_json::to_string_pretty(&doc).unwrap_or_default();
        format!("{}\n", super::json_for_logs(&json))
    }
}
