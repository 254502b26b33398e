//! What `shmbench node --slurm-health` does to its Slurm node, decided from the verdict and
//! the node's state as `scontrol -o show node` prints it: drain a node with a problem (the
//! reason is the verdict's first line, so it starts `shmbench:`), resume a healthy node only
//! when shmbench drained it (its reason starts `shmbench:`), and leave every other drain (an
//! admin's, another health check's) as it is. Pure: `sys::slurm` asks and updates.

use crate::node_verdict::{NodeStatus, REASON_PREFIX};

/// A Slurm node's state and drain reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmNode {
    pub name: String,
    /// `IDLE`, `IDLE+DRAIN`, `MIXED+DRAIN`, `DOWN+DRAIN+NOT_RESPONDING`, ...
    pub state: String,
    /// The reason without Slurm's `[user@time]` suffix; None when there is none.
    pub reason: Option<String>,
}

impl SlurmNode {
    /// Whether the node is drained or draining (the DRAIN flag; `DRAINED`/`DRAINING` as
    /// `sinfo` words them).
    pub fn drained(&self) -> bool {
        self.state.split('+').any(|part| part.starts_with("DRAIN"))
    }

    /// Whether its drain reason is shmbench's own.
    pub fn drained_by_shmbench(&self) -> bool {
        self.drained()
            && self
                .reason
                .as_deref()
                .is_some_and(|r| r.starts_with(REASON_PREFIX))
    }
}

/// Reads one node out of `scontrol -o show node NAME` (one line of `Key=Value` pairs; the
/// reason, which may hold spaces, runs to Slurm's ` [user@time]` suffix). None when the line
/// names no node.
pub fn parse_show_node(text: &str) -> Option<SlurmNode> {
    let line = text.lines().find(|l| l.starts_with("NodeName="))?;
    let value = |key: &str| -> Option<&str> {
        let at = line
            .match_indices(&format!(" {key}="))
            .map(|(i, _)| i + 1)
            .next()
            .or_else(|| line.starts_with(&format!("{key}=")).then_some(0))?;
        let rest = &line[at + key.len() + 1..];
        Some(rest)
    };
    let word = |key: &str| value(key).map(|v| v.split(' ').next().unwrap_or("").to_string());
    let name = word("NodeName")?;
    let state = word("State")?;
    let reason = value("Reason").map(|rest| {
        // `Reason=text [root@2026-12-03T22:40:01] Comment=...`: the reason ends where Slurm's
        // suffix starts (an `[` after a space, holding `@`), or at the line's end.
        let end = rest
            .match_indices(" [")
            .find(|(i, _)| {
                rest[i + 2..]
                    .split(']')
                    .next()
                    .is_some_and(|s| s.contains('@'))
            })
            .map_or(rest.len(), |(i, _)| i);
        rest[..end].trim().to_string()
    });
    Some(SlurmNode {
        name,
        state,
        reason: reason.filter(|r| !r.is_empty() && r != "(null)"),
    })
}

/// What to do to the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainAction {
    /// Drain it with this reason (or set shmbench's new reason on its own drain).
    Drain { reason: String },
    /// Resume it: shmbench drained it and the problem is gone.
    Resume,
    /// Nothing to do.
    Keep(Kept),
}

/// Why nothing is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Healthy and not drained by shmbench.
    Healthy,
    /// Already drained by shmbench with this very reason.
    AlreadyDrained,
    /// Drained for another reason (an admin's, another check's): never touched.
    DrainedByOther { reason: Option<String> },
    /// The verdict is unknown: neither drain nor resume on what could not be seen.
    Unknown,
}

/// The action for a verdict of `status` whose first line is `reason` on `node`.
pub fn decide(status: NodeStatus, reason: &str, node: &SlurmNode) -> DrainAction {
    match status {
        NodeStatus::Unknown => DrainAction::Keep(Kept::Unknown),
        NodeStatus::Ok if node.drained_by_shmbench() => DrainAction::Resume,
        NodeStatus::Ok => DrainAction::Keep(Kept::Healthy),
        NodeStatus::Problem if node.drained() && !node.drained_by_shmbench() => {
            DrainAction::Keep(Kept::DrainedByOther {
                reason: node.reason.clone(),
            })
        }
        NodeStatus::Problem if node.reason.as_deref() == Some(reason) && node.drained() => {
            DrainAction::Keep(Kept::AlreadyDrained)
        }
        NodeStatus::Problem => DrainAction::Drain {
            reason: reason.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(state: &str, reason: Option<&str>) -> SlurmNode {
        SlurmNode {
            name: "gpu-1".into(),
            state: state.into(),
            reason: reason.map(Into::into),
        }
    }

    #[test]
    fn reads_the_state_and_the_reason_without_slurms_suffix() {
        let line = "NodeName=gpu-1 Arch=x86_64 CoresPerSocket=1 State=IDLE+DRAIN ThreadsPerCore=1 \
                    Partitions=debug Reason=shmbench: 8 MiB of dead [x] leftovers [root@2026-12-03T22:40:01] Comment=(null)";
        let n = parse_show_node(line).unwrap();
        assert_eq!(n.name, "gpu-1");
        assert_eq!(n.state, "IDLE+DRAIN");
        assert_eq!(
            n.reason.as_deref(),
            Some("shmbench: 8 MiB of dead [x] leftovers")
        );
        assert!(n.drained_by_shmbench());
        let idle = parse_show_node("NodeName=gpu-2 State=IDLE Partitions=debug").unwrap();
        assert_eq!(idle.reason, None);
        assert!(!idle.drained());
        assert_eq!(parse_show_node("Node gpu-3 not found"), None);
    }

    #[test]
    fn drains_a_problem_resumes_only_its_own_drain_and_never_an_admins() {
        let problem = "shmbench: 8 MiB of dead leftovers in /dev/shm (1 file, oldest 2h)";
        let idle = node("IDLE", None);
        assert_eq!(
            decide(NodeStatus::Problem, problem, &idle),
            DrainAction::Drain {
                reason: problem.into()
            }
        );
        let ours = node("IDLE+DRAIN", Some(problem));
        assert_eq!(
            decide(NodeStatus::Problem, problem, &ours),
            DrainAction::Keep(Kept::AlreadyDrained)
        );
        // A new problem on its own drain: the reason follows it.
        let other_problem = "shmbench: /dev/shm is 64 MiB, jobs need 1.2 GiB";
        assert_eq!(
            decide(NodeStatus::Problem, other_problem, &ours),
            DrainAction::Drain {
                reason: other_problem.into()
            }
        );
        assert_eq!(
            decide(NodeStatus::Ok, "shmbench: ok", &ours),
            DrainAction::Resume
        );
        let admin = node("IDLE+DRAIN", Some("bad DIMM, ticket 42"));
        assert_eq!(
            decide(NodeStatus::Ok, "shmbench: ok", &admin),
            DrainAction::Keep(Kept::Healthy)
        );
        assert!(matches!(
            decide(NodeStatus::Problem, problem, &admin),
            DrainAction::Keep(Kept::DrainedByOther { .. })
        ));
        assert_eq!(
            decide(NodeStatus::Unknown, "shmbench: unknown: x", &ours),
            DrainAction::Keep(Kept::Unknown)
        );
        // A down node that is not drained gets shmbench's drain on top.
        let down = node("DOWN+NOT_RESPONDING", Some("Not responding"));
        assert!(matches!(
            decide(NodeStatus::Problem, problem, &down),
            DrainAction::Drain { .. }
        ));
    }
}
