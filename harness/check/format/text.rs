//! The report for people: a finding per block (where, what, why, the fix indented), then the
//! inputs that could not be checked and a count.
//!
//! Every name and value comes from untrusted files, and this text often lands in a CI log that
//! a runner reads for commands: data is written with its control characters escaped (a
//! newline, CR, ESC, the rest of C0 and C1, DEL, the Unicode line separators), so it never
//! starts a line of its own; a line that would begin with `::` (a GitHub workflow command,
//! leading space aside) has that colon escaped, and `##[` (the runner's older commands,
//! anywhere in a line) is broken the same way.

use std::fmt::Write as _;

use super::CheckFormat;
use crate::Report;
use present::terminal::{no_workflow_commands as no_commands, shown as data};

pub struct Text;

impl CheckFormat for Text {
    fn render(&self, report: &Report) -> String {
        let mut out = String::new();
        for f in &report.findings {
            let container = f
                .container
                .as_deref()
                .map(|c| format!(", container {}", data(c)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{}:{}: {} {} ({}) in {}{container}\n    {}",
                data(&f.file),
                f.line,
                f.rule.severity.word(),
                f.rule.id,
                f.rule.name,
                data(&f.object),
                data(&f.message)
            );
            if let Some(fix) = &f.fix {
                let _ = writeln!(out, "    fix:");
                for line in fix.lines() {
                    let _ = writeln!(out, "        {}", data(line));
                }
            }
        }
        for p in &report.problems {
            let line = p.line.map(|l| format!(":{l}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}{line}: cannot check: {}",
                data(&p.file),
                data(&p.reason)
            );
        }
        for p in &report.skipped {
            let _ = writeln!(out, "{}: skipped: {}", data(&p.file), data(&p.reason));
        }
        let count = |s| {
            report
                .findings
                .iter()
                .filter(|f| f.rule.severity == s)
                .count()
        };
        use crate::rules::Severity::{Error, Note, Warning};
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
        no_commands(&out)
    }
}
