//! Data shown as text, made inert: file names, command lines and values come from anyone (any
//! user can name a file in /dev/shm, any manifest can hold any string), and a terminal obeys
//! the escape sequences in what it prints while a CI log reads a line's start as a command. So
//! every control character in data is written as a visible escape (`\n`, `\e`, `\x7f`,
//! `\u{9b}`), and a backslash as `\\`, so that what is shown says exactly what was there and can
//! neither move the cursor nor end a line.

use std::borrow::Cow;
use std::fmt::Write;

/// `data` with every control character (C0, DEL, C1) and backslash escaped.
pub(crate) fn shown(data: &str) -> Cow<'_, str> {
    if !data.chars().any(|c| c.is_control() || c == '\\') {
        return Cow::Borrowed(data);
    }
    let mut out = String::with_capacity(data.len() + 8);
    for c in data.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x1b' => out.push_str("\\e"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn control_characters_and_backslashes_are_shown_escaped() {
        assert_eq!(shown("plain_name-1.bin"), "plain_name-1.bin");
        assert_eq!(
            shown("a\nremoved x\r\x1b]0;pwned\x07\x7f\u{9b}\\"),
            "a\\nremoved x\\r\\e]0;pwned\\x07\\x7f\\u{9b}\\\\"
        );
        assert!(!shown("x\n::error::y").contains('\n'));
    }
}
