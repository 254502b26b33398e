//! `shmbench shm` as text: the tmpfs's use, its entries (stale ones marked), the unlinked
//! segments still held, the holders with their container, pod or job, and what a sweep of
//! stale entries did.

use std::fmt::Write;

use crate::findings::{Hold, ShmAudit, StaleSweep, Staleness, SweepEvent};
use model::size::ByteSize;
use present::table::markdown;
use present::terminal::shown;

/// Seconds as the largest unit that fits: `42s`, `17m`, `5h`, `3d`.
pub fn age(seconds: f64) -> String {
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
pub fn render(audit: &ShmAudit) -> String {
    let mut out = String::new();
    let unlinked: u64 = audit.unlinked.iter().map(|u| u.allocated_bytes).sum();
    let stale: Vec<_> = audit.stale().collect();
    let stale_bytes: u64 = stale.iter().map(|e| e.allocated_bytes).sum();
    let _ = writeln!(
        out,
        "{}: {} used of {} (named files {}, unlinked segments still held {})",
        shown(&audit.path),
        ByteSize(audit.used_bytes),
        ByteSize(audit.capacity_bytes),
        ByteSize(audit.named_bytes()),
        ByteSize(unlinked)
    );
    let _ = writeln!(
        out,
        "{} entries, {} stale ({}: unheld, their owner named and gone), {} unheld of unknown owner, {} unlinked segments held, {} holders\n",
        audit.entries.len(),
        stale.len(),
        ByteSize(stale_bytes),
        audit.entries.iter().filter(|e| e.unowned()).count(),
        audit.unlinked.len(),
        audit.holders.len()
    );
    entries(&mut out, audit);
    unlinked_segments(&mut out, audit);
    holder_totals(&mut out, audit);
    notes(&mut out, audit);
    out
}

/// What the audit could not see, and so did not judge.
fn notes(out: &mut String, audit: &ShmAudit) {
    if audit.pid_namespace_not_the_hosts {
        let _ = writeln!(
            out,
            "note: this audit runs in a pid namespace that is not the host's (a container?): processes outside it cannot be seen, so no file but a dead shmbench run's is called stale; run it on the host to judge the rest"
        );
    }
    if audit.unreadable_processes > 0 {
        let _ = writeln!(
            out,
            "note: {} processes could not be read (another user's, or a more privileged one's): an entry only they may hold is unknown, not stale; run as root to see them",
            audit.unreadable_processes
        );
    }
    if audit.unlisted > 0 {
        let _ = writeln!(
            out,
            "note: {} entries were counted but not listed (the listing keeps at most a million entries and 256 MiB of names): their bytes are in the use above",
            audit.unlisted
        );
    }
    if audit.not_walked > 0 {
        let _ = writeln!(
            out,
            "note: {} directories deeper than 64 levels were not walked: what they hold is in the use above but neither listed nor judged",
            audit.not_walked
        );
    }
}

/// The named entries, stale ones marked.
fn entries(out: &mut String, audit: &ShmAudit) {
    if !audit.entries.is_empty() {
        let rows: Vec<Vec<String>> = audit
            .entries
            .iter()
            .map(|e| {
                let held = match &e.staleness {
                    Staleness::Held => holders(&e.holders),
                    Staleness::Pinned { why } => format!("owner gone, kept: {}", shown(why)),
                    other => other.word().to_string(),
                };
                vec![
                    shown(&e.name),
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
            "held by (pid), or state",
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
                    shown(&u.name),
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
                    shown(&h.workload.to_string()),
                    h.segments.to_string(),
                    ByteSize(h.bytes).to_string(),
                    shown(&h.command),
                ]
            })
            .collect();
        let headers = ["pid", "uid", "runs in", "segments", "bytes", "command"];
        let _ = writeln!(out, "Holders:");
        let _ = writeln!(out, "{}", markdown(&headers, &rows));
    }
}

/// One thing a sweep did, as the line printed when it happens.
pub fn render_event(event: &SweepEvent) -> String {
    match event {
        SweepEvent::Removed {
            name,
            bytes,
            because,
        } => format!(
            "removed {} ({}): {}\n",
            shown(name),
            ByteSize(*bytes),
            shown(because)
        ),
        SweepEvent::Kept { name, why } => format!("kept {}: {}\n", shown(name), shown(why)),
    }
}

/// What a sweep did in all (each removal was printed as it happened).
pub fn render_sweep(swept: &StaleSweep) -> String {
    let mut out = format!(
        "swept {} entries, {} freed; {} kept at the last proof; {} changed or read more recently than --older-than (mtime and ctime count) left alone; {} of unknown owner left (opt a path in with --unowned PATH)\n",
        swept.removed.len(),
        ByteSize(swept.removed_bytes()),
        swept.kept.len(),
        swept.younger,
        swept.unowned_left
    );
    if swept.interrupted {
        out.push_str("interrupted: the sweep stopped before its last candidates\n");
    }
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
