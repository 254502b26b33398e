//! What `shmbench node --slurm-health` does to its Slurm node, decided from the verdict and
//! the node's state as `scontrol -o show node` prints it: drain a node with a problem (the
//! reason is the verdict's first line, so it starts `shmbench:`), undrain a healthy node only
//! when shmbench drained it (its reason starts `shmbench:`), and leave every node someone else
//! set aside as it is: an admin's or another health check's drain, a DOWN, FAILed or
//! rebooting node with its reason. Undrain, not resume: RESUME would also lift a DOWN an admin
//! set after shmbench's drain, and cancel a reboot asked for. Pure: `cluster::slurm::commands` asks and
//! updates.

use super::verdict::{NodeStatus, REASON_PREFIX};

/// A Slurm node's state and drain reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmNode {
    pub name: String,
    /// `IDLE`, `IDLE+DRAIN`, `MIXED+DRAIN`, `DOWN+DRAIN+NOT_RESPONDING`, ...
    pub(crate) state: String,
    /// The reason without Slurm's `[user@time]` suffix; None when there is none.
    pub(crate) reason: Option<String>,
}

impl SlurmNode {
    /// Whether the node is drained or draining (the DRAIN flag; `DRAINED`/`DRAINING` as
    /// `sinfo` words them).
    pub(crate) fn drained(&self) -> bool {
        self.state.split('+').any(|part| part.starts_with("DRAIN"))
    }

    /// Whether its reason is shmbench's own.
    pub(crate) fn reason_is_shmbench(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(REASON_PREFIX))
    }

    /// Whether its drain is shmbench's own.
    pub(crate) fn drained_by_shmbench(&self) -> bool {
        self.drained() && self.reason_is_shmbench()
    }

    /// Whether someone else set it aside: drained, down, failed or rebooting with a reason
    /// that is not shmbench's (a node down with no reason at all is Slurm's own doing, such
    /// as not responding, and Slurm always gives one).
    pub(crate) fn set_aside_by_other(&self) -> bool {
        let aside = self.state.split('+').any(|part| {
            part.starts_with("DRAIN")
                || part.starts_with("DOWN")
                || part.starts_with("FAIL")
                || part.starts_with("REBOOT")
                || part == "MAINTENANCE"
        });
        aside && !self.reason_is_shmbench()
    }
}

/// Whether `name` is one plain node name `scontrol update NodeName=` takes as one node: 1-253
/// letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit (no hostlist
/// brackets or commas, no flag, nothing a shell would read), and not `ALL`, which scontrol
/// reads as every node of the cluster (a NodeSet's name from slurm.conf is one too, and cannot
/// be told from a node's here: docs/FLEET.md says so).
pub fn plain_node_name(name: &str) -> bool {
    one_plain_name(name, |b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !name.eq_ignore_ascii_case("ALL")
}

/// Whether `name` is 1-253 bytes, each `allowed`, starting and ending with a letter or digit:
/// the shape of a node's name to Slurm and (lower case, no `_`) to Kubernetes.
pub(crate) fn one_plain_name(name: &str, allowed: impl Fn(u8) -> bool) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    (1..=253).contains(&bytes.len())
        && bytes.iter().all(|b| allowed(*b))
        && edge(bytes.first())
        && edge(bytes.last())
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
    /// Undrain it: shmbench drained it and the problem is gone.
    Undrain,
    /// Nothing to do.
    Keep(Kept),
}

/// Why nothing is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Healthy and not drained by shmbench.
    Healthy,
    /// Already drained by shmbench (its reason kept: it says when the drain began).
    AlreadyDrained,
    /// Drained, down, failed or rebooting for another reason (an admin's, another check's,
    /// Slurm's own): never touched.
    DrainedByOther { reason: Option<String> },
    /// The verdict is unknown: neither drain nor resume on what could not be seen.
    Unknown,
}

/// The action for a verdict of `status` whose first line is `reason` on `node`.
pub fn decide(status: NodeStatus, reason: &str, node: &SlurmNode) -> DrainAction {
    match status {
        NodeStatus::Unknown => DrainAction::Keep(Kept::Unknown),
        NodeStatus::Ok if node.drained_by_shmbench() => DrainAction::Undrain,
        NodeStatus::Ok => DrainAction::Keep(Kept::Healthy),
        NodeStatus::Problem if node.set_aside_by_other() => {
            DrainAction::Keep(Kept::DrainedByOther {
                reason: node.reason.clone(),
            })
        }
        NodeStatus::Problem if node.drained_by_shmbench() => {
            DrainAction::Keep(Kept::AlreadyDrained)
        }
        NodeStatus::Problem => DrainAction::Drain {
            reason: reason.to_string(),
        },
    }
}

/// What `shmbench node --slurm-health` did to its Slurm node, in one line for slurmd's log
/// and a person running it by hand: the line said after the verdict.
pub fn action_line(node: &SlurmNode, action: &DrainAction) -> String {
    let name = &node.name;
    match action {
        DrainAction::Drain { reason } => format!("slurm: drained {name}: \"{reason}\""),
        DrainAction::Undrain => format!(
            "slurm: undrained {name} (shmbench drained it: \"{}\")",
            node.reason.as_deref().unwrap_or_default()
        ),
        DrainAction::Keep(Kept::Healthy) => {
            format!("slurm: {name} is {}; nothing to do", node.state)
        }
        DrainAction::Keep(Kept::AlreadyDrained) => {
            format!(
                "slurm: {name} stays drained by shmbench (\"{}\")",
                node.reason.as_deref().unwrap_or_default()
            )
        }
        DrainAction::Keep(Kept::DrainedByOther { reason }) => format!(
            "slurm: {name} is {} for another reason (\"{}\"): left as it is",
            node.state,
            reason.as_deref().unwrap_or("none given")
        ),
        DrainAction::Keep(Kept::Unknown) => {
            format!("slurm: {name} left {}: the verdict is unknown", node.state)
        }
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
    fn a_node_name_is_one_plain_name() {
        assert!(plain_node_name("gpu-17.rack2_a"));
        for bad in [
            "", "gpu[1-2]", "a,b", "-x", "a b", "a;b", "ü", "ALL", "all", "node-",
        ] {
            assert!(!plain_node_name(bad), "{bad:?}");
        }
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
        // A changed first line on its own drain (its age, its share): the reason it drained
        // with stays, and with it the time the drain began.
        let other_problem = "shmbench: /dev/shm is 64 MiB, jobs need 1.2 GiB";
        assert_eq!(
            decide(NodeStatus::Problem, other_problem, &ours),
            DrainAction::Keep(Kept::AlreadyDrained)
        );
        assert_eq!(
            decide(NodeStatus::Ok, "shmbench: ok", &ours),
            DrainAction::Undrain
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
        // A node down, failed or rebooting for another reason is left as it is: draining it
        // would replace that reason, and undraining it later would not bring it back.
        for state in [
            "DOWN",
            "DOWN+NOT_RESPONDING",
            "IDLE+FAIL",
            "IDLE+REBOOT_REQUESTED",
        ] {
            let aside = node(state, Some("PSU dead, ticket 9"));
            assert!(
                matches!(
                    decide(NodeStatus::Problem, problem, &aside),
                    DrainAction::Keep(Kept::DrainedByOther { .. })
                ),
                "{state}"
            );
        }
        // shmbench's own drain of a node an admin then set down: undrained, the DOWN kept
        // (UNDRAIN leaves the base state alone).
        let ours_down = node("DOWN+DRAIN", Some(problem));
        assert_eq!(
            decide(NodeStatus::Ok, "shmbench: ok", &ours_down),
            DrainAction::Undrain
        );
    }
}
