//! `shmbench shm` as text: the tmpfs's use, its entries (stale ones marked), the unlinked
//! segments still held, the holders with their container, pod or job, and what a sweep of
//! stale entries did.

use std::fmt::Write;

use super::table::markdown;
use crate::model::shm_audit::{Hold, ShmAudit, StaleSweep};
use crate::model::size::ByteSize;

/// Seconds as the largest unit that fits: `42s`, `17m`, `5h`, `3d`.
pub(crate) fn age(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

fn holders(holds: &[Hold]) -> String {
    let each: Vec<String> = holds
        .iter()
        .map(|h| {
            let how = match (h.by_fd, h.by_map) {
                (true, true) => "fd+map",
                (true, false) => "fd",
                _ => "map",
            };
            format!("{} ({how})", h.pid)
        })
        .collect();
    each.join(", ")
}

/// The audit as text.
pub(crate) fn render(audit: &ShmAudit) -> String {
    let mut out = String::new();
    let unlinked: u64 = audit.unlinked.iter().map(|u| u.allocated_bytes).sum();
    let stale: Vec<_> = audit.stale().collect();
    let stale_bytes: u64 = stale.iter().map(|e| e.allocated_bytes).sum();
    let _ = writeln!(
        out,
        "{}: {} used of {} (named files {}, unlinked segments still held {})",
        audit.path,
        ByteSize(audit.used_bytes),
        ByteSize(audit.capacity_bytes),
        ByteSize(audit.named_bytes()),
        ByteSize(unlinked)
    );
    let _ = writeln!(
        out,
        "{} entries, {} stale ({}: no live process holds them), {} unlinked segments held, {} holders\n",
        audit.entries.len(),
        stale.len(),
        ByteSize(stale_bytes),
        audit.unlinked.len(),
        audit.holders.len()
    );
    entries(&mut out, audit);
    unlinked_segments(&mut out, audit);
    holder_totals(&mut out, audit);
    if audit.unreadable_processes > 0 {
        let _ = writeln!(
            out,
            "note: {} processes could not be read (another user's, or a more privileged one's): an entry only they hold looks stale here; run as root to see them",
            audit.unreadable_processes
        );
    }
    out
}

/// The named entries, stale ones marked.
fn entries(out: &mut String, audit: &ShmAudit) {
    if !audit.entries.is_empty() {
        let rows: Vec<Vec<String>> = audit
            .entries
            .iter()
            .map(|e| {
                let held = match e.stale() {
                    true => "stale".to_string(),
                    false => holders(&e.holders),
                };
                vec![
                    e.name.clone(),
                    e.made_by.unwrap_or("").to_string(),
                    format!("{:?}", e.kind).to_lowercase(),
                    ByteSize(e.allocated_bytes).to_string(),
                    age(e.age_s),
                    e.uid.to_string(),
                    held,
                ]
            })
            .collect();
        let headers = [
            "entry",
            "made by (from its name)",
            "kind",
            "allocated",
            "age",
            "uid",
            "held by (pid)",
        ];
        let _ = writeln!(out, "{}", markdown(&headers, &rows));
    }
}

/// The unlinked segments still held.
fn unlinked_segments(out: &mut String, audit: &ShmAudit) {
    if !audit.unlinked.is_empty() {
        let rows: Vec<Vec<String>> = audit
            .unlinked
            .iter()
            .map(|u| {
                vec![
                    u.name.clone(),
                    u.made_by.unwrap_or("").to_string(),
                    u.inode.to_string(),
                    ByteSize(u.allocated_bytes).to_string(),
                    holders(&u.holders),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "Unlinked, still held (they count until the last holder lets go):"
        );
        let _ = writeln!(
            out,
            "{}",
            markdown(
                &["was", "made by", "inode", "allocated", "held by (pid)"],
                &rows
            )
        );
    }
}

/// Each holder, most bytes first.
fn holder_totals(out: &mut String, audit: &ShmAudit) {
    if !audit.holders.is_empty() {
        let rows: Vec<Vec<String>> = audit
            .holders
            .iter()
            .map(|h| {
                vec![
                    h.pid.to_string(),
                    h.uid.map_or_else(|| "?".into(), |u| u.to_string()),
                    h.workload.to_string(),
                    h.segments.to_string(),
                    ByteSize(h.bytes).to_string(),
                    h.command.clone(),
                ]
            })
            .collect();
        let headers = ["pid", "uid", "runs in", "segments", "bytes", "command"];
        let _ = writeln!(out, "Holders:");
        let _ = writeln!(out, "{}", markdown(&headers, &rows));
    }
}

/// What a sweep of stale entries did: each removed entry with its bytes, each kept one with
/// why, and the total freed.
pub(crate) fn render_sweep(swept: &StaleSweep) -> String {
    let mut out = String::new();
    for (name, bytes) in &swept.removed {
        let _ = writeln!(out, "removed {name} ({})", ByteSize(*bytes));
    }
    for (name, why) in &swept.kept {
        let _ = writeln!(out, "kept {name}: {why}");
    }
    let _ = writeln!(
        out,
        "swept {} stale entries, {} freed; {} kept; {} younger than asked left alone",
        swept.removed.len(),
        ByteSize(swept.removed_bytes()),
        swept.kept.len(),
        swept.younger
    );
    out
}

#[cfg(test)]
mod tests {
    use super::age;

    #[test]
    fn ages_take_the_largest_unit_that_fits() {
        assert_eq!(age(42.4), "42s");
        assert_eq!(age(600.0), "10m");
        assert_eq!(age(5.0 * 3600.0), "5h");
        assert_eq!(age(3.0 * 86_400.0), "3d");
    }
}
