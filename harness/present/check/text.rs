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
use crate::check::Report;

pub(crate) struct Text;

/// Untrusted text as part of one line: `\` doubled, control characters as `\n`, `\r`, `\t` or
/// `\u{1b}`, and `##[` as `#\u{23}[`.
fn data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.replace("##[", "#\\u{23}[")
}

/// The lines, none a workflow command: a leading `::` (after the space the runner trims) has
/// its first colon escaped. Only data can begin so, since none of this format's own lines do.
fn no_commands(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(':').filter(|r| r.starts_with(':')) {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str("\\u{3a}");
            out.push_str(rest);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

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
        no_commands(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_stays_on_its_line_and_never_commands_a_runner() {
        assert_eq!(
            data("p\n::error x\r\u{1b}[31m\u{7f}\u{9b}\\"),
            "p\\n::error x\\r\\u{1b}[31m\\u{7f}\\u{9b}\\\\"
        );
        assert_eq!(data("a ##[set-output]b"), "a #\\u{23}[set-output]b");
        assert_eq!(
            no_commands("::error f::x\n  \t::warning::y\nok: :: fine\n"),
            "\\u{3a}:error f::x\n  \t\\u{3a}:warning::y\nok: :: fine\n"
        );
    }
}
