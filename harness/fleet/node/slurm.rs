//! What `shmbench node --slurm-health` did to its Slurm node, in one line for slurmd's log and
//! a person running it by hand.

use crate::node::drain::{DrainAction, Kept, SlurmNode};

/// The line said after the verdict.
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
