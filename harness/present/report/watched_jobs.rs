//! The report's section on watched commands (`shmbench watch`): one line per job (how it ended,
//! its peak and when, who held most, the trend, what it left) and, below, who held /dev/shm at
//! the peak, process by process.

use super::block::Block;
use super::Source;
use crate::watch_text::{mib_per_s, pid_label};
use analysis::trend::trend;
use model::knobs::Loader;
use model::size::ByteSize;
use model::watch::WatchFindings;
use results::Row;

/// Processes listed per job at the peak.
const HOLDERS: usize = 6;

/// The watched rows of a source, each with what watching it saw.
pub fn watched(source: &Source) -> Vec<(&Row, Option<&WatchFindings>)> {
    source
        .rows
        .iter()
        .zip(&source.watches)
        .filter(|(r, _)| r.loader == Loader::Command)
        .map(|(r, w)| (r, w.as_ref()))
        .collect()
}

fn ended(row: &Row) -> String {
    let when = match row.crash_step {
        Some(step) => format!(" at step {step}"),
        None if !row.status.is_pass() => format!(" after {:.2} s", row.wall_s),
        None => format!(" in {:.2} s", row.wall_s),
    };
    let code = row
        .exit_code
        .map(|c| format!(" (exit {c})"))
        .unwrap_or_default();
    let cause = row
        .cause
        .as_ref()
        .map(|c| format!(", cause {c}"))
        .unwrap_or_default();
    format!(
        "{}{when}{code}{cause}",
        row.status.to_string().to_uppercase()
    )
}

fn shm(row: &Row) -> String {
    match (&row.image, row.shm_bytes) {
        (Some(image), Some(size)) => format!("{} in {image}", ByteSize(size)),
        (Some(image), None) => format!("engine's default in {image}"),
        (None, Some(size)) => ByteSize(size).to_string(),
        (None, None) => format!("host's ({})", ByteSize(row.shm_seen_bytes)),
    }
}

fn trend_text(report: &WatchFindings) -> String {
    match trend(&report.samples) {
        Some(t) if t.leak => format!("LEAK, {} (r2 {:.2})", mib_per_s(t.bytes_per_s), t.r2),
        Some(t) => format!("steady ({})", mib_per_s(t.bytes_per_s)),
        None => "too short to tell".into(),
    }
}

fn left(report: &WatchFindings) -> String {
    if report.leftovers.is_empty() {
        return "nothing".into();
    }
    let removed = report.removed();
    format!(
        "{} file(s), {}{}",
        report.leftovers.len(),
        ByteSize(report.left_bytes()),
        if removed > 0 {
            format!(", {removed} swept")
        } else {
            String::new()
        }
    )
}

/// The section's blocks for one source; empty when it has no watched rows.
pub fn blocks(source: &Source) -> Vec<Block> {
    let jobs = watched(source);
    if jobs.is_empty() {
        return Vec::new();
    }
    let headers = [
        "Command",
        "/dev/shm",
        "Runtime",
        "Ended",
        "Peak /dev/shm (when)",
        "Trend after warm-up",
        "Left in /dev/shm",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut details = Vec::new();
    for (row, report) in &jobs {
        let command = row.watched_command.clone().unwrap_or_default();
        let (peak, trend, leftovers) = match report {
            Some(w) => (
                format!("{} ({:.2} s)", ByteSize(row.peak_shm_bytes), w.peak_t_s),
                trend_text(w),
                left(w),
            ),
            None => (
                ByteSize(row.peak_shm_bytes).to_string(),
                "-".into(),
                "-".into(),
            ),
        };
        rows.push(vec![
            format!("`{command}`"),
            shm(row),
            row.runtime.to_string(),
            ended(row),
            peak,
            trend,
            leftovers,
        ]);
        if let (Some(cause), Some(facts)) = (&row.cause, &row.cause_facts) {
            details.push(Block::Paragraph(format!(
                "`{command}`: why it ended so (cause {cause}, docs/EXPLAIN.md):"
            )));
            details.push(Block::List(facts.split("; ").map(String::from).collect()));
        }
        if let Some(w) = report {
            let list: Vec<String> = w
                .holders_by_bytes()
                .iter()
                .take(HOLDERS)
                .map(|h| {
                    format!(
                        "{}: {} in {} segment(s), {} fds, `{}`",
                        pid_label(w, h),
                        ByteSize(h.bytes()),
                        h.segments.len(),
                        h.fds,
                        h.command
                    )
                })
                .collect();
            if !list.is_empty() {
                details.push(Block::Paragraph(format!(
                    "`{command}`: who held /dev/shm at {:.2} s ({} in use then):",
                    w.holders_t_s,
                    ByteSize(w.holders_shm_bytes)
                )));
                details.push(Block::List(list));
            }
        }
        if !row.message.is_empty() {
            details.push(Block::Paragraph(format!("How it ended: {}", row.message)));
        }
    }
    let mut out = vec![
        Block::Heading(2, format!("Watched jobs: {}", source.label)),
        Block::Table(headers, rows),
    ];
    out.extend(details);
    out
}
