//! The report for people: a finding per block (where, what, why, the fix indented), then the
//! inputs that could not be checked and a count.

use std::fmt::Write as _;

use super::CheckFormat;
use crate::check::Report;

pub(crate) struct Text;

impl CheckFormat for Text {
    fn render(&self, report: &Report) -> String {
        let mut out = String::new();
        for f in &report.findings {
            let container = f
                .container
                .as_deref()
                .map(|c| format!(", container {c}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{}:{}: {} {} ({}) in {}{container}\n    {}",
                f.file,
                f.line,
                f.rule.severity.word(),
                f.rule.id,
                f.rule.name,
                f.object,
                f.message
            );
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "    fix:");
                for line in fix.lines() {
                    let _ = writeln!(out, "        {line}");
                }
            }
        }
        for p in &report.problems {
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            let _ = writeln!(out, "{}{line}: cannot check: {}", p.file, p.reason);
        }
        for p in &report.skipped {
            let _ = writeln!(out, "{}: skipped: {}", p.file, p.reason);
        }
        let count = |s| {
            report
                .findings
                .iter()
                .filter(|f| f.rule.severity == s)
                .count()
        };
        use crate::check::rules::Severity::{Error, Note, Warning};
        let _ = writeln!(
            out,
            "{} file(s) checked: {} error(s), {} warning(s), {} note(s){}",
            report.files,
            count(Error),
            count(Warning),
            count(Note),
            match report.problems.len() {
                0 => String::new(),
                n => format!("; {n} input(s) could not be checked"),
            }
        );
        out
    }
}
