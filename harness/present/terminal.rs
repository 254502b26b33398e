//! Data shown as text, made inert: file names, command lines and values come from anyone (any
//! user can name a file in /dev/shm, any manifest can hold any string), a terminal obeys the
//! escape sequences in what it prints, and a CI runner reads a log's lines for commands. So
//! every control character in data (C0, DEL, C1, the Unicode line separators) is written as a
//! visible escape (`\n`, `\r`, `\t`, `\u{1b}`), a backslash as `\\`, and `##[` (the GitHub
//! runner's older commands, obeyed anywhere in a line) as `#\u{23}[`: what is shown says exactly
//! what was there and can neither move the cursor nor end a line. [`no_workflow_commands`]
//! guards the start of each line, where GitHub's `::` commands begin.

use std::fmt::Write;

/// `data` as part of one line: `\` doubled, control characters escaped, `##[` broken.
pub fn shown(data: &str) -> String {
    let mut out = String::with_capacity(data.len());
    for c in data.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Line separators end a line in some readers; bidirectional controls reorder
            // what follows them on screen.
            c if c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{61c}'
                )
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c) =>
            {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.replace("##[", "#\\u{23}[")
}

/// The lines of `text`, none a workflow command: a leading `::` (after the space the runner
/// trims) has its first colon escaped. Only data can begin so, where a format's own lines never
/// do.
pub fn no_workflow_commands(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_stays_on_its_line_and_never_commands_a_runner() {
        assert_eq!(shown("plain_name-1.bin"), "plain_name-1.bin");
        assert_eq!(
            shown("p\n::error x\r\u{1b}]0;t\u{7}\u{7f}\u{9b}\\"),
            "p\\n::error x\\r\\u{1b}]0;t\\u{7}\\u{7f}\\u{9b}\\\\"
        );
        assert_eq!(shown("a ##[set-output]b"), "a #\\u{23}[set-output]b");
        assert_eq!(shown("txt.\u{202e}exe"), "txt.\\u{202e}exe");
        assert_eq!(
            no_workflow_commands("::error f::x\n  \t::warning::y\nok: :: fine\n"),
            "\\u{3a}:error f::x\n  \t\\u{3a}:warning::y\nok: :: fine\n"
        );
    }
}
