//! A node check's verdict in words: a first line short enough for the machinery that shows
//! little (Node Problem Detector cuts a plugin's output at 80 bytes; Slurm's drain reason and
//! NHC's `die` take it whole), prefixed `shmbench:` so a drain it caused is known for its own,
//! then the details.

use std::fmt::Write;

use crate::node::{NodeFacts, NodePolicy, NodeStatus, NodeVerdict, Problem, Unknown};
use model::size::ByteSize;

use audit::listing::age;
use present::terminal::shown;

pub(crate) use crate::node::verdict::REASON_PREFIX;

/// The most bytes of the first line (Node Problem Detector's `max_output_length`, in bytes).
pub(crate) const FIRST_LINE_MAX: usize = 80;

/// One problem in a few words.
pub(crate) fn problem_words(problem: &Problem, path: &str) -> String {
    match problem {
        Problem::Missing => format!("{path} does not exist"),
        Problem::NotTmpfs { filesystem } => format!("{path} is {filesystem}, not a tmpfs"),
        Problem::NoInodes => format!("{path} has no inode left"),
        Problem::ReadOnly => format!("{path} is mounted read-only"),
        Problem::NotOwnMount {
            filesystem,
            mount_point,
        } => format!(
            "{path} is not mounted (a directory of the {filesystem} at {})",
            shown(mount_point)
        ),
        Problem::NotWritable { mode } => {
            format!("{path} is mode {mode:04o}: jobs cannot write in it")
        }
        Problem::TooSmall {
            size_bytes,
            need_bytes,
            ..
        } => format!(
            "{path} is {}, jobs need {}",
            ByteSize(*size_bytes),
            ByteSize(*need_bytes)
        ),
        Problem::TooFull {
            used_bytes,
            size_bytes,
            ..
        } => format!(
            "{path} {:.0}% full ({} of {})",
            100.0 * *used_bytes as f64 / (*size_bytes).max(1) as f64,
            ByteSize(*used_bytes),
            ByteSize(*size_bytes)
        ),
        Problem::DeadLeftovers {
            bytes,
            files,
            oldest_s,
        } => format!(
            "{} of dead leftovers in {path} ({files} file{}, oldest {})",
            ByteSize(*bytes),
            if *files == 1 { "" } else { "s" },
            age(*oldest_s)
        ),
        Problem::FewMappings {
            max_map_count,
            needed,
        } => format!("vm.max_map_count {max_map_count} < {needed} the jobs map"),
    }
}

fn unknown_words(unknown: &Unknown) -> String {
    match unknown {
        Unknown::Leftovers { why } => format!("leftovers unproven: {why}"),
        Unknown::MapCount => "cannot read vm.max_map_count".into(),
    }
}

/// The first line: the verdict and its main reason, at most [`FIRST_LINE_MAX`] characters.
pub fn first_line(facts: &NodeFacts, policy: &NodePolicy, verdict: &NodeVerdict) -> String {
    let path = shown(&facts.path);
    let line = match verdict.status {
        NodeStatus::Ok => format!(
            "{REASON_PREFIX} ok: {path} {}, {:.0}% used{}",
            ByteSize(facts.size_bytes),
            100.0 * facts.used_bytes as f64 / facts.size_bytes.max(1) as f64,
            policy
                .need_bytes
                .map(|n| format!(", jobs need {}", ByteSize(n)))
                .unwrap_or_default()
        ),
        NodeStatus::Problem => {
            let more = match verdict.problems.len() {
                1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            format!(
                "{REASON_PREFIX} {}{more}",
                problem_words(&verdict.problems[0], &path)
            )
        }
        NodeStatus::Unknown => format!(
            "{REASON_PREFIX} unknown: {}",
            unknown_words(&verdict.unknowns[0])
        ),
    };
    cut(&line, FIRST_LINE_MAX)
}

/// The first line when the path could not be read at all: unknown, and why.
pub fn unreadable_line(why: &str) -> String {
    cut(
        &format!("{REASON_PREFIX} unknown: {}", shown(why)),
        FIRST_LINE_MAX,
    )
}

/// `text` cut to `max` bytes at a character's boundary, the cut marked.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// The whole verdict: the first line, then every reason and the facts behind it.
pub fn render(facts: &NodeFacts, policy: &NodePolicy, verdict: &NodeVerdict) -> String {
    let path = shown(&facts.path);
    let mut out = format!("{}\n", first_line(facts, policy, verdict));
    for problem in &verdict.problems {
        let _ = writeln!(out, "  problem: {}", problem_words(problem, &path));
        if let Problem::TooSmall { need_from, .. } = problem {
            let _ = writeln!(out, "           (the need: {})", shown(need_from));
        }
    }
    for unknown in &verdict.unknowns {
        let _ = writeln!(out, "  unknown: {}", shown(&unknown_words(unknown)));
    }
    let _ = writeln!(
        out,
        "  {path}: {}, {} of {} used, {} free",
        facts.filesystem,
        ByteSize(facts.used_bytes),
        ByteSize(facts.size_bytes),
        ByteSize(facts.size_bytes.saturating_sub(facts.used_bytes))
    );
    let _ = writeln!(out, "  policy: {}", policy_words(policy));
    for dead in facts.dead.iter().take(5) {
        let counted = match dead.age_s >= policy.dead_older_than_s {
            true => "",
            false => "; younger than the policy's age, not counted yet",
        };
        let _ = writeln!(
            out,
            "  dead: {} {} (unchanged {}, its owner gone, held by no process{counted})",
            shown(&dead.name),
            ByteSize(dead.bytes),
            age(dead.age_s)
        );
    }
    if facts.dead.len() > 5 {
        let _ = writeln!(out, "  dead: ... {} more", facts.dead.len() - 5);
    }
    // Files counted apart, never as dead leftovers: what each is, and where to look.
    let apart = [
        (facts.unowned_files, facts.unowned_bytes, "unheld, owner unknown", "never called dead: `shmbench shm` lists them"),
        (facts.pinned_files, facts.pinned_bytes, "owner gone, not removable", "a second name, a loop device, an fd in flight or a mount holds them: `shmbench shm` says which"),
    ];
    for (files, bytes, what, why) in apart.into_iter().filter(|a| a.0 > 0) {
        let _ = writeln!(
            out,
            "  {what}: {} in {files} file(s) ({why})",
            ByteSize(bytes)
        );
    }
    let held: Vec<String> = facts
        .producers
        .iter()
        .filter(|p| p.files > 0)
        .map(|p| format!("{} {}", p.producer.label(), ByteSize(p.bytes)))
        .collect();
    if !held.is_empty() {
        let _ = writeln!(out, "  by name: {}", held.join(", "));
    }
    if let Some(max) = facts.max_map_count {
        let _ = writeln!(out, "  vm.max_map_count: {max}");
    }
    out
}

fn policy_words(policy: &NodePolicy) -> String {
    let mut parts = Vec::new();
    if let Some(need) = policy.need_bytes {
        parts.push(format!("at least {}", ByteSize(need)));
    }
    parts.push(format!(
        "at most {:.0}% used",
        100.0 * policy.max_used_share
    ));
    parts.push(match policy.max_dead_bytes {
        0 => "no dead leftovers".to_string(),
        n => format!("at most {} of dead leftovers", ByteSize(n)),
    });
    if policy.dead_older_than_s > 0.0 {
        parts.push(format!(
            "leftovers counted after {}",
            age(policy.dead_older_than_s)
        ));
    }
    if let Some(maps) = policy.maps_needed {
        parts.push(format!("vm.max_map_count at least {maps}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{judge, NodeFacts, NodePolicy};

    #[test]
    fn the_first_line_is_prefixed_and_never_past_80_characters() {
        let facts = NodeFacts {
            size_bytes: 64 << 20,
            ..NodeFacts::bare(format!("/run/{}/shm", "x".repeat(100)), "tmpfs", None)
        };
        let policy = NodePolicy {
            need_bytes: Some(1 << 30),
            need_from: "--need".into(),
            max_used_share: 0.9,
            max_dead_bytes: 0,
            dead_older_than_s: 60.0,
            maps_needed: None,
        };
        let line = first_line(&facts, &policy, &judge(&facts, &policy));
        assert!(line.starts_with("shmbench: /run/xxx"), "{line}");
        assert_eq!(line.len(), FIRST_LINE_MAX, "{line}");
        let wide = NodeFacts {
            path: format!("/run/{}", "磁".repeat(40)),
            ..facts.clone()
        };
        let line = first_line(&wide, &policy, &judge(&wide, &policy));
        assert!(
            line.len() <= FIRST_LINE_MAX && line.ends_with("..."),
            "{line}"
        );
        assert!(line.ends_with("..."), "{line}");
        let short = NodeFacts {
            path: "/dev/shm".into(),
            ..facts
        };
        assert_eq!(
            first_line(&short, &policy, &judge(&short, &policy)),
            "shmbench: /dev/shm is 64 MiB, jobs need 1 GiB"
        );
    }
}
