//! The matrix as a table in the how-to's shape (a GitHub-flavoured Markdown table, aligned so it
//! also reads in a terminal), and the notes that explain each disagreement with the how-to.

use crate::record::csv::Row;
use crate::size::ByteSize;
use crate::verdict;

/// Pads columns to equal width and joins them as a Markdown table.
pub fn markdown(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
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
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
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

/// The cell's /dev/shm as measured inside it.
pub fn shm_label(row: &Row) -> String {
    let seen = ByteSize(row.shm_seen_bytes);
    if row.runtime == "host" || row.ipc == "host" {
        format!("host ({seen})")
    } else if row.shm_seen_bytes == 0 {
        row.shm_bytes
            .map(|s| ByteSize(s).to_string())
            .unwrap_or_else(|| "engine default".into())
    } else {
        seen.to_string()
    }
}

/// img/s as the how-to writes it: a number, or `0.0 (Failed)`.
pub fn throughput(row: &Row) -> String {
    match (row.status == "pass", row.img_per_s) {
        (true, Some(r)) => thousands(r),
        (true, None) => "n/a".into(),
        (false, Some(r)) if row.steps_done >= 2 => format!("{} until crash", thousands(r)),
        (false, _) => "0.0 (Failed)".into(),
    }
}

/// The matrix table as Markdown.
pub fn matrix(rows: &[Row]) -> String {
    let (headers, cells) = matrix_cells(rows);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    markdown(&headers, &cells)
}

/// The matrix table's headers and cells, for any output format.
pub fn matrix_cells(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    let steps = rows.first().map(|r| r.steps * r.epochs as u64).unwrap_or(0);
    let status_header = format!("Status After {steps} Steps");
    let has_claims = rows.iter().any(|r| r.claim_status.is_some());
    let mut headers: Vec<String> = [
        "Environment",
        "/dev/shm",
        "IPC Strategy",
        "Runtime",
        status_header.as_str(),
        "Throughput (img/s)",
        "Peak /dev/shm",
    ]
    .map(String::from)
    .to_vec();
    if has_claims {
        headers.extend(["How-to says".to_string(), "Verdict".to_string()]);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.environment.clone(),
                shm_label(r),
                r.strategy.clone(),
                r.runtime.clone(),
                verdict::status_label(r),
                throughput(r),
                ByteSize(r.peak_shm_bytes).to_string(),
            ];
            if has_claims {
                cells.push(verdict::claim_label(r).unwrap_or_default());
                cells.push(verdict::verdict(r).to_string());
            }
            cells
        })
        .collect();
    (headers, cells)
}

/// One note per row that disagrees with its claim, one per failed row's message, and one per
/// distinct reason rows ran in another runtime than their setup names.
pub fn notes(rows: &[Row]) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows {
        let env = &r.environment;
        if verdict::verdict(r) == "differs" {
            notes.push(format!(
                "{env}: the how-to says {}, measured {}: {}.",
                verdict::claim_label(r).unwrap_or_default(),
                verdict::status_label(r),
                verdict::explanation(r)
            ));
        }
        if r.status != "pass" && !r.message.is_empty() {
            notes.push(format!("{env}: {}", r.message));
        }
    }
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in rows {
        if let Some(note) = &r.runtime_note {
            match reasons.iter_mut().find(|(n, _)| n == note) {
                Some((_, envs)) => envs.push(&r.environment),
                None => reasons.push((note, vec![&r.environment])),
            }
        }
    }
    for (note, envs) in reasons {
        notes.push(format!("{}: {note}.", envs.join(", ")));
    }
    notes
}
