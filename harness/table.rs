//! The matrix as a table in the how-to's shape (a GitHub-flavoured Markdown table, aligned so it
//! also reads in a terminal), and the notes that explain each disagreement with the how-to.

use crate::config::{IpcMode, RuntimeKind};
use crate::record::CellRecord;
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

fn thousands(x: f64) -> String {
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
fn shm_label(record: &CellRecord, runtime: &str) -> String {
    let seen = ByteSize(record.shm_seen_bytes);
    if runtime == "host"
        || record.config.runtime == RuntimeKind::Host
        || record.config.ipc == IpcMode::Host
    {
        format!("host ({seen})")
    } else if record.shm_seen_bytes == 0 {
        record
            .config
            .shm_size
            .map(|s| s.to_string())
            .unwrap_or_default()
    } else {
        seen.to_string()
    }
}

fn throughput(record: &CellRecord) -> String {
    match (record.status.is_pass(), record.metrics.img_per_s) {
        (true, Some(r)) => thousands(r),
        (true, None) => "n/a".into(),
        (false, Some(r)) if record.metrics.steps_done >= 2 => {
            format!("{} until crash", thousands(r))
        }
        (false, _) => "0.0 (Failed)".into(),
    }
}

/// The matrix table; `runtimes[i]` is the runtime that ran `records[i]`.
pub fn matrix(records: &[(CellRecord, String)]) -> String {
    let steps = records
        .first()
        .map(|(r, _)| r.config.total_steps())
        .unwrap_or(0);
    let status_header = format!("Status After {steps} Steps");
    let has_claims = records.iter().any(|(r, _)| r.config.claim.is_some());
    let mut headers = vec![
        "Environment",
        "/dev/shm",
        "IPC Strategy",
        "Runtime",
        status_header.as_str(),
        "Throughput (img/s)",
        "Peak /dev/shm",
    ];
    if has_claims {
        headers.extend(["How-to says", "Verdict"]);
    }
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|(r, runtime)| {
            let mut row = vec![
                r.config.environment.clone(),
                shm_label(r, runtime),
                r.config.strategy.to_string(),
                runtime.clone(),
                verdict::status_label(r),
                throughput(r),
                ByteSize(r.metrics.peak_shm_bytes).to_string(),
            ];
            if has_claims {
                row.push(verdict::claim_label(&r.config).unwrap_or_default());
                row.push(verdict::verdict(r).to_string());
            }
            row
        })
        .collect();
    markdown(&headers, &rows)
}

/// One note per row that disagrees with its claim, and one per failed row's message.
pub fn notes(records: &[(CellRecord, String)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (r, _) in records {
        let env = &r.config.environment;
        if verdict::verdict(r) == "differs" {
            notes.push(format!(
                "{env}: the how-to says {}, measured {}: {}.",
                verdict::claim_label(&r.config).unwrap_or_default(),
                verdict::status_label(r),
                verdict::explanation(r)
            ));
        }
        if !r.status.is_pass() && !r.message.is_empty() {
            notes.push(format!("{env}: {}", r.message));
        }
    }
    // One line per distinct reason a row ran in another runtime than its setup names.
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for (r, _) in records {
        if let Some(note) = &r.config.runtime_note {
            match reasons.iter_mut().find(|(n, _)| n == note) {
                Some((_, envs)) => envs.push(&r.config.environment),
                None => reasons.push((note, vec![&r.config.environment])),
            }
        }
    }
    for (note, envs) in reasons {
        notes.push(format!("{}: {note}.", envs.join(", ")));
    }
    notes
}
