//! A watched job explained in text: how it ended, its peak /dev/shm and when, who held it, the
//! trend after warm-up, what it left behind, the size to give it and how.

use super::terminal::shown;
use model::segment_maker::made_by;
use std::fmt::Write;

use analysis::trend::Trend;
use model::record::CellRecord;
use model::size::ByteSize;
use model::watch::{Hold, Holder, WatchFindings};
use plan::advice::Sizing;

/// Processes and segments listed at most (the rest are counted).
const MAX_HOLDERS: usize = 8;
const MAX_SEGMENTS: usize = 4;

/// A rate of growth as the explanation and the report write it.
pub fn mib_per_s(bytes_per_s: f64) -> String {
    format!("{:+.2} MiB/s", bytes_per_s / (1u64 << 20) as f64)
}

/// A holder's process as the explanation, the report and its plot name it.
pub fn pid_label(report: &WatchFindings, h: &Holder) -> String {
    if h.pid == report.command_pid {
        format!("pid {} (the command)", h.pid)
    } else {
        format!("pid {}", h.pid)
    }
}

/// The explanation, as plain text for the terminal.
pub fn render(
    record: &CellRecord,
    report: &WatchFindings,
    trend: Option<&Trend>,
    sizing: &Sizing,
) -> String {
    let mut out = String::new();
    let c = &record.config;
    let command = c
        .watch
        .as_ref()
        .map(|w| w.command.join(" "))
        .unwrap_or_default();
    let _ = writeln!(out, "shmbench watch: {}", shown(&command));
    let place = match (&c.knobs.image, c.knobs.shm_size) {
        (Some(image), _) => {
            let oci = match c.knobs.oci_runtime.named() {
                Some(name) => format!(" with OCI runtime {}", shown(name)),
                None => String::new(),
            };
            format!(
                "in a container of image {image} under {}{oci}",
                c.knobs.engine
            )
        }
        (None, Some(size)) => format!(
            "in a private /dev/shm of {size}, runtime {}",
            c.knobs.runtime
        ),
        (None, None) => format!("in this machine's /dev/shm, runtime {}", c.knobs.runtime),
    };
    let when = match (record.failure.as_ref(), c.watch.as_ref()) {
        (Some(f), Some(w)) if w.step_regex.is_some() => format!(" at step {}", f.crash_step),
        (Some(_), _) => format!(" after {:.2} s", record.metrics.wall_s),
        (None, _) => format!(" in {:.2} s", record.metrics.wall_s),
    };
    let code = record
        .exit_code
        .map(|c| format!(", exit code {c}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  ended:       {}{when}{code} ({place})",
        record.status
    );
    if !record.message.is_empty() {
        let _ = writeln!(out, "               {}", record.message);
    }
    cause(&mut out, record, report);
    let capacity = record.shm_seen_bytes;
    let _ = writeln!(
        out,
        "  /dev/shm:    peak {} of {} at {:.2} s{}",
        ByteSize(record.metrics.peak_shm_bytes),
        ByteSize(capacity),
        report.peak_t_s,
        if report.base_bytes > 0 {
            format!(
                " (above the {} in use when it started)",
                ByteSize(report.base_bytes)
            )
        } else {
            String::new()
        }
    );
    memory(&mut out, report);
    holders(&mut out, report);
    trend_line(&mut out, trend);
    leftovers(&mut out, report);
    give_it(&mut out, sizing, trend);
    let span = record.metrics.wall_s.max(1e-9);
    let interval = c.watch.as_ref().map_or(0, |w| w.interval_ms);
    // The interval asked, and the one kept where walking the job took longer (a big tree under
    // a slow /proc, as gVisor's).
    let kept = 1000.0 * span / report.sample_count.max(1) as f64;
    let every = match kept > 1.5 * interval as f64 {
        true => format!("every {kept:.0} ms (asked: {interval} ms)"),
        false => format!("every {interval} ms"),
    };
    let _ = writeln!(
        out,
        "  sampler:     {} samples {every}, {:.3} s of CPU ({:.2}% of one core)",
        report.sample_count,
        report.sampler_cpu_s,
        100.0 * report.sampler_cpu_s / span
    );
    out
}

/// The cause of a failed end, its facts and its fix; or why the faults could not be caught.
fn cause(out: &mut String, record: &CellRecord, report: &WatchFindings) {
    if let Some(e) = &record.explanation {
        let _ = writeln!(out, "  cause:       {}: {}", e.cause, e.cause.summary());
        for fact in &e.facts {
            let _ = writeln!(out, "               {}", shown(fact));
        }
        let _ = writeln!(out, "  fix:         {}", e.fix);
    }
    if let Some(why) = &report.traced.untraced {
        let _ = writeln!(out, "  traced:      no: {}", shown(why));
    }
}

/// The memory cgroup's peak against its limit, where it has one.
fn memory(out: &mut String, report: &WatchFindings) {
    let cgroup_peak = report.samples.iter().filter_map(|s| s.cgroup_bytes).max();
    if let (Some(peak), Some(limit)) = (cgroup_peak, report.cgroup_limit) {
        let shmem = report
            .cgroup_shmem_bytes
            .map(|b| {
                format!(
                    "; {} of it shared memory at {:.2} s",
                    ByteSize(b),
                    report.holders_t_s
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  memory:      the cgroup peaked at {} of its {} limit (tmpfs pages count against it{shmem})",
            ByteSize(peak),
            ByteSize(limit)
        );
    }
}

/// Whether /dev/shm kept growing after warm-up.
fn trend_line(out: &mut String, trend: Option<&Trend>) {
    match trend {
        Some(t) if t.leak => {
            let _ = writeln!(
                out,
                "  trend:       LEAK: /dev/shm grew {} over {:.1}-{:.1} s ({}, r2 {:.2}); something keeps segments after use",
                ByteSize(t.growth_bytes.max(0.0) as u64),
                t.from_s,
                t.to_s,
                mib_per_s(t.bytes_per_s),
                t.r2
            );
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "  trend:       no leak after warm-up ({} over {:.1}-{:.1} s, r2 {:.2})",
                mib_per_s(t.bytes_per_s),
                t.from_s,
                t.to_s,
                t.r2
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  trend:       too short a run (under 2 s after warm-up) to tell"
            );
        }
    }
}

/// The size to give the job, and the snippets that give it.
fn give_it(out: &mut String, sizing: &Sizing, trend: Option<&Trend>) {
    let _ = match sizing.filled {
        Some(capacity) => writeln!(
            out,
            "  give it:     more than the {} it filled, by how much is not measured: try {} (twice it + 25%) and watch again, or find the least it passes in with `shmbench min-shm -- CMD`",
            ByteSize(capacity),
            ByteSize(sizing.recommended_bytes)
        ),
        None => writeln!(
            out,
            "  give it:     {} of /dev/shm (the measured peak {} + 25%, rounded up to 64 MiB)",
            ByteSize(sizing.recommended_bytes),
            ByteSize(sizing.peak_bytes)
        ),
    };
    if let Some(t) = trend.filter(|t| t.leak) {
        let _ = writeln!(
            out,
            "               with a leak no size lasts: at {} the recommended size fills about {:.0} s after the working level; find what keeps the segments",
            mib_per_s(t.bytes_per_s),
            sizing.recommended_bytes.saturating_sub(sizing.peak_bytes) as f64 / t.bytes_per_s.max(1.0)
        );
    }
    for fix in &sizing.fixes {
        let _ = writeln!(out, "    {}", fix.title);
        for command in &fix.commands {
            for line in command.lines() {
                let _ = writeln!(out, "      {line}");
            }
        }
    }
}

fn holders(out: &mut String, report: &WatchFindings) {
    if report.holders_at_peak.is_empty() {
        let _ = writeln!(
            out,
            "  held by:     no process of the job was seen holding /dev/shm"
        );
        return;
    }
    let _ = writeln!(
        out,
        "  held by:     at {:.2} s ({} processes at most, most fds in one: {})",
        report.holders_t_s, report.max_processes, report.max_fds
    );
    // A segment two processes hold (a worker's, mapped by the main) counts once here.
    let mut names: Vec<(&str, u64)> = report
        .holders_at_peak
        .iter()
        .flat_map(|h| h.segments.iter().map(|s| (s.name.as_str(), s.bytes)))
        .collect();
    names.sort();
    names.dedup_by_key(|(name, _)| *name);
    let held: u64 = names.iter().map(|(_, b)| b).sum();
    let unheld = report.holders_shm_bytes.saturating_sub(held);
    if unheld > report.holders_shm_bytes / 10 {
        // A walk far longer than a sample: what the job made and dropped meanwhile is in the
        // count and not in the walk.
        let during = match report.holders_walk_s > 0.05 {
            true => format!(
                ", or made and dropped during the {:.0} ms the walk of its processes took",
                report.holders_walk_s * 1000.0
            ),
            false => String::new(),
        };
        let _ = writeln!(
            out,
            "    {} of the {} in use then was held by no process of the job: files kept in /dev/shm (named segments not yet unlinked, or leaked){during}",
            ByteSize(unheld),
            ByteSize(report.holders_shm_bytes)
        );
    }
    let by_bytes = report.holders_by_bytes();
    for h in by_bytes.iter().take(MAX_HOLDERS) {
        let limit = h.fd_limit.map(|l| format!("/{l}")).unwrap_or_default();
        let who = if h.pid == report.command_pid {
            " (the command)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    pid {:<7} {:>10} in {} segment(s), {} fds{limit}  {}{who}",
            h.pid,
            ByteSize(h.bytes()).to_string(),
            h.segments.len(),
            h.fds,
            shown(&h.command)
        );
        let mut largest: Vec<_> = h.segments.iter().collect();
        largest.sort_by_key(|s| std::cmp::Reverse(s.bytes));
        for s in largest.into_iter().take(MAX_SEGMENTS) {
            let hold = match s.hold {
                Hold::Fd => "fd",
                Hold::Map => "mapped",
            };
            let gone = if s.deleted { ", unlinked" } else { "" };
            let maker = made_by(&s.name).map_or(String::new(), |m| format!("; by its name, {m}"));
            let _ = writeln!(
                out,
                "      {} {} ({hold}{gone}{maker})",
                shown(&s.name),
                ByteSize(s.bytes)
            );
        }
        if h.segments.len() > MAX_SEGMENTS {
            let _ = writeln!(out, "      ... {} more", h.segments.len() - MAX_SEGMENTS);
        }
    }
    if by_bytes.len() > MAX_HOLDERS {
        let _ = writeln!(
            out,
            "    ... {} more processes",
            by_bytes.len() - MAX_HOLDERS
        );
    }
}

fn leftovers(out: &mut String, report: &WatchFindings) {
    if report.leftovers.is_empty() {
        let _ = writeln!(out, "  left behind: nothing in /dev/shm");
        return;
    }
    let bytes = report.left_bytes();
    let removed = report.removed();
    let kept = report.leftovers.len() - removed;
    let what = match (removed, report.private_shm) {
        (0, true) => "gone with its private /dev/shm, but on a shared one (a host, --ipc=host) they would stay".to_string(),
        (0, false) => "still there: rm them, or watch again with --sweep".to_string(),
        (_, _) if kept == 0 => "removed (--sweep)".to_string(),
        (_, _) => format!(
            "{removed} removed (--sweep); {kept} left alone: a live process still holds them, or (on a shared /dev/shm) no process of the job was seen holding them"
        ),
    };
    let _ = writeln!(
        out,
        "  left behind: {} file(s), {} in /dev/shm when it ended; {what}",
        report.leftovers.len(),
        ByteSize(bytes)
    );
    for l in report.leftovers.iter().take(MAX_SEGMENTS) {
        let maker = made_by(&l.name).map_or(String::new(), |m| format!(" (by its name, {m})"));
        let removed = if l.removed { " (removed)" } else { "" };
        let _ = writeln!(
            out,
            "    {} {}{maker}{removed}",
            shown(&l.name),
            ByteSize(l.bytes)
        );
    }
    if report.leftovers.len() > MAX_SEGMENTS {
        let _ = writeln!(
            out,
            "    ... {} more",
            report.leftovers.len() - MAX_SEGMENTS
        );
    }
}
