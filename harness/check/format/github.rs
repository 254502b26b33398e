//! GitHub Actions workflow annotations: `::error file=F,line=N,title=T::MESSAGE`, one line per
//! finding, at the levels the runner knows (`error`, `warning`, `notice`: a note is a
//! `notice`), escaped as the runner unescapes them (`%`, CR, LF in the message; also `:` and
//! `,` in properties), so each shows on its line in the pull request and no data can end the
//! line or the command's properties.

use std::fmt::Write as _;

use super::CheckFormat;
use crate::rules::Severity;
use crate::Report;

pub struct Github;

/// The runner's word for a severity.
fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Note => "notice",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

impl CheckFormat for Github {
    fn render(&self, report: &Report) -> String {
        let mut out = String::new();
        for f in &report.findings {
            let mut message = format!("{}: {}", f.object, f.message);
            if let Some(fix) = &f.fix {
                message.push_str(&format!("\nfix:\n{fix}"));
            }
            let _ = writeln!(
                out,
                "::{} file={},line={},title={}::{}",
                command(f.rule.severity),
                escape_property(&f.file),
                f.line,
                escape_property(&format!("{} {}", f.rule.id, f.rule.name)),
                escape_data(&message)
            );
        }
        for p in &report.problems {
            let line = p.line.map(|l| format!(",line={l}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "::error file={}{line},title=shmbench check::{}",
                escape_property(&p.file),
                escape_data(&format!("cannot check: {}", p.reason))
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_escape_what_the_runner_reads() {
        assert_eq!(escape_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
