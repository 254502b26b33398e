//! GitHub-flavoured Markdown tables, aligned so they also read in a terminal, and numbers as the
//! how-to's table writes them.

use super::terminal::shown;

/// Pads columns to equal width and joins them as a Markdown table.
pub fn markdown(headers: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| cell(c)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| cell(h).chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let mut out = vec![line(headers.iter().map(|h| cell(h)).collect())];
    out.push(format!(
        "|{}|",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    ));
    out.extend(rows.iter().map(|r| line(r.clone())));
    out.join("\n")
}

/// A value as a Markdown table cell: control characters made visible escapes (a line break, a
/// terminal's escape sequence: [`shown`]) and a `|` escaped (values come from elsewhere: a
/// message, a pod's log, a command line, a results file's host).
pub fn cell(value: &str) -> String {
    shown(value).replace('|', "\\|")
}

/// `1,234.5`
pub fn thousands(x: f64) -> String {
    let whole = x.trunc() as u64;
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{grouped}.{}", ((x.fract() * 10.0).round() as u64).min(9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_or_line_break_in_a_value_stays_in_its_cell() {
        let table = markdown(
            &["cell", "message"],
            &[vec!["a".into(), "=cmd|' /C calc'!A0\nnext".into()]],
        );
        let last = table.lines().last().unwrap();
        assert_eq!(table.lines().count(), 3, "{table}");
        assert_eq!(last.matches(" | ").count(), 1, "{last}");
        assert!(last.contains("=cmd\\|' /C calc'!A0\\nnext"), "{last}");
        // A terminal's escape sequence in a header or a value is shown, not obeyed.
        let table = markdown(&["host\u{1b}]0;x\u{7}"], &[vec!["\u{1b}[31mred".into()]]);
        assert!(!table.contains('\u{1b}'), "{table}");
        assert!(table.contains("\\u{1b}[31mred"), "{table}");
    }
}
