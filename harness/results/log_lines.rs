//! Records read from other machines' logs (a pod's, a Slurm task's output file): untrusted data.
//! A line is taken only when it parses as the record it claims to be and its scenario and cell
//! names may name a file, since names become paths beside the results. Lines are read up to a
//! bound ([`MAX_LINE`]) and a bad one is named by its number and length, with at most a short
//! escaped excerpt of what was said about it: never echoed whole.

use std::io::BufRead;

use serde::de::DeserializeOwned;

use model::config::CellConfig;
use model::name;

/// The longest line read as a record. A record holds its cell's step series (about 100 bytes a
/// step), so a 100,000-step cell's is some 10 MB; a longer line is skipped unread, so a log that
/// is one endless line costs this much memory, not its size.
pub const MAX_LINE: usize = 16 << 20;

/// Characters of a text quoted about a bad line, at most.
const EXCERPT_CHARS: usize = 120;

/// `text` escaped (control characters and quotes as Rust writes them in a string), cut to a
/// readable length, saying how long it was when cut.
pub fn excerpt(text: &str) -> String {
    let head: String = text.chars().take(EXCERPT_CHARS).collect();
    let escaped: String = head.escape_debug().collect();
    match head.len() < text.len() {
        true => format!("{escaped}... ({} bytes)", text.len()),
        false => escaped,
    }
}

/// One line of a log, as read.
pub enum Line<'a> {
    Text(&'a str),
    /// Longer than [`MAX_LINE`]: its length in bytes, its bytes skipped.
    TooLong(u64),
}

/// Hands every line of `reader` to `f` with its 1-based number, holding at most [`MAX_LINE`]
/// bytes of one (bytes that are not UTF-8 are replaced).
pub fn each_line(mut reader: impl BufRead, mut f: impl FnMut(usize, Line)) -> std::io::Result<()> {
    let mut line = Vec::new();
    let (mut number, mut length) = (0usize, 0u64);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if length > 0 {
                number += 1;
                hand_over(number, &line, length, &mut f);
            }
            return Ok(());
        }
        let (chunk, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let room = (MAX_LINE + 1).saturating_sub(line.len()).min(chunk.len());
        line.extend_from_slice(&chunk[..room]);
        length += chunk.len() as u64;
        let newline = ends > chunk.len();
        reader.consume(ends);
        if newline {
            number += 1;
            hand_over(number, &line, length, &mut f);
            line.clear();
            length = 0;
        }
    }
}

fn hand_over(number: usize, line: &[u8], length: u64, f: &mut impl FnMut(usize, Line)) {
    if length > MAX_LINE as u64 {
        f(number, Line::TooLong(length));
    } else {
        f(number, Line::Text(&String::from_utf8_lossy(line)));
    }
}

/// Why a log line was not taken as the record it looked like: named by its number, with at
/// most an escaped excerpt of what was wrong with it, never the line itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadLine {
    #[error("line {line}: {length} bytes, longer than the {} MiB a record may be", MAX_LINE >> 20)]
    TooLong { line: usize, length: u64 },
    /// Not JSON of the record's shape: serde's words, as an excerpt.
    #[error("line {line} ({length} bytes): {why}")]
    NotARecord {
        line: usize,
        length: usize,
        why: String,
    },
    /// A scenario or cell name that may not name a file (`names_problem`).
    #[error("line {line}: {problem}")]
    BadName { line: usize, problem: String },
}

/// What is said of a line skipped for its length.
pub fn too_long(line: usize, length: u64) -> String {
    BadLine::TooLong { line, length }.to_string()
}

/// Why a record's scenario or cell name may not name a file, if it may not.
pub fn names_problem(config: &CellConfig) -> Option<String> {
    [("scenario", &config.scenario), ("cell", &config.cell)]
        .into_iter()
        .find_map(|(what, value)| {
            name::problem(value).map(|p| format!("{what} name \"{}\" {p}", excerpt(value)))
        })
}

/// Whether a log line's body looks like a cell record (a JSON object with a config), so that a
/// line that does but does not parse is named rather than skipped.
pub fn looks_like_record(body: &str) -> bool {
    body.starts_with('{') && body.contains("\"config\"")
}

/// `json`, the body of 1-based line `line`, read as a `T` whose config is `config_of` it; Err:
/// why not, naming the line.
pub fn read_line<T: DeserializeOwned>(
    json: &str,
    line: usize,
    config_of: impl Fn(&T) -> &CellConfig,
) -> Result<T, BadLine> {
    // serde quotes what it could not take (an unknown variant, a string where a number goes):
    // an excerpt of its words only.
    let value = serde_json::from_str::<T>(json).map_err(|e| BadLine::NotARecord {
        line,
        length: json.len(),
        why: excerpt(&e.to_string()),
    })?;
    match names_problem(config_of(&value)) {
        Some(problem) => Err(BadLine::BadName { line, problem }),
        None => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_bound_is_measured_not_kept() {
        let mut text = b"short\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend(b"\nlast");
        let mut seen = Vec::new();
        each_line(
            std::io::BufReader::with_capacity(4096, text.as_slice()),
            |n, l| {
                seen.push(match l {
                    Line::Text(t) => format!("{n}: {t}"),
                    Line::TooLong(len) => format!("{n}: {len} bytes"),
                })
            },
        )
        .unwrap();
        assert_eq!(
            seen,
            [
                "1: short",
                &format!("2: {} bytes", MAX_LINE + 10),
                "3: last"
            ]
        );
        assert_eq!(excerpt("a\nb\"c"), "a\\nb\\\"c");
        assert!(excerpt(&"y".repeat(1000)).ends_with("... (1000 bytes)"));
    }
}
