//! The commands that take the flagged nodes out of service, printed for a person to read and
//! run, never run: Slurm's drain (`scontrol update NodeName=N State=DRAIN Reason="shmbench
//! fleet: ..."`) and Kubernetes' cordon (`kubectl cordon N`). The reason's prefix is not `node`'s
//! `shmbench:`: `shmbench node --slurm-health` resumes the drains that carry its own prefix once
//! the node's /dev/shm is fine again, and a node drained for being slow must stay drained until
//! a person resumes it.
//!
//! Node names come from results files, which anyone may have written. Each word is shell-quoted,
//! and a name is only written into a command when it is one plain node name: a Slurm hostlist
//! (`gpu[1-64]`, `a,b`) would drain many nodes, a name starting with `-` would be a flag. Any
//! other name is named in a comment, made inert, and left out.

use results::row_build::shell_words;

use super::text::short_words;
use crate::judge::rows::NodeName;
use crate::judge::verdict::{Status, Verdict};
use crate::node::drain::{one_plain_name, plain_node_name};
use model::choice::Choice;
use present::terminal::shown;

/// The platform whose commands are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    Slurm,
    Kubernetes,
}

/// What a fleet drain's reason starts with (NHC prefixes its own `NHC:`, `node` its `shmbench:`).
pub(crate) const DRAIN_PREFIX: &str = "shmbench fleet:";

/// The most characters of a drain's reason (Slurm shows it in `sinfo -R`, whose column is
/// narrow; the table and JSON carry the whole of it).
const REASON_MAX: usize = 120;

/// Whether `name` is one plain node name the command acts on alone (Slurm's rule:
/// `plain_node_name`; for Kubernetes, a DNS subdomain: lower case, no `_`).
fn plain(name: &str, platform: Platform) -> bool {
    match platform {
        Platform::Slurm => plain_node_name(name),
        // A DNS subdomain name (RFC 1123), as a Node's name is: at most 253 characters, labels
        // of 1 to 63 lower-case letters, digits and '-' joined by '.', each starting and ending
        // with a letter or digit (`n9..x` and `-n9` are refused by the API server).
        Platform::Kubernetes => {
            let label = |l: &str| {
                let b = l.as_bytes();
                (1..=63).contains(&b.len())
                    && b.iter()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                    && b[0] != b'-'
                    && b[b.len() - 1] != b'-'
            };
            name.len() <= 253
                && name.split('.').all(label)
                && one_plain_name(name, |b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b)
                })
        }
    }
}

/// The drain's reason: the fleet's prefix and the node's first finding, and how many more.
fn reason(v: &Verdict, node: usize) -> String {
    let n = &v.nodes[node];
    let Some(first) = n.findings.first() else {
        return DRAIN_PREFIX.to_string();
    };
    let mut reason = format!("{DRAIN_PREFIX} {}", short_words(v, first));
    if n.findings.len() > 1 {
        reason += &format!(" (+{} more)", n.findings.len() - 1);
    }
    match reason.char_indices().nth(REASON_MAX) {
        Some((cut, _)) => format!("{}...", &reason[..cut]),
        None => reason,
    }
}

/// A shell script of the commands for the flagged nodes, with comments that say what it is and
/// how to undo each.
pub fn render(v: &Verdict, platform: Platform, named_by: NodeName) -> String {
    let flagged: Vec<usize> = (0..v.nodes.len())
        .filter(|i| v.nodes[*i].status == Status::Flagged)
        .collect();
    let what = match platform {
        Platform::Slurm => "drain",
        Platform::Kubernetes => "cordon",
    };
    let refused = flagged
        .iter()
        .filter(|i| !plain(&v.nodes[**i].node, platform))
        .count();
    // The header counts what the script does: a refused name gets a comment, not a command.
    let whom = match refused {
        0 => format!("the {} flagged node(s)", flagged.len()),
        n => format!(
            "{} of the {} flagged node(s) ({n} left out below)",
            flagged.len() - n,
            flagged.len()
        ),
    };
    let mut out = vec![
        format!(
            "# shmbench fleet: {what} {whom} of {}. Printed, not run: read it, then run it.",
            v.nodes.len()
        ),
        format!(
            "# Node names: {}{} (--node-name {named_by}).",
            named_by.help()[..1].to_lowercase(),
            named_by.help()[1..].trim_end_matches('.')
        ),
    ];
    for i in flagged {
        let name = &v.nodes[i].node;
        if !plain(name, platform) {
            out.push(format!(
                "# left out: {} is not one plain node name (a hostlist or a flag would act on other nodes)",
                shown(&format!("{name:?}"))
            ));
            continue;
        }
        let (command, undo) = match platform {
            // `Name=` then the quoted value: one shell word, as scontrol's documentation
            // writes it, and the value alone is what quoting must guard.
            Platform::Slurm => (
                format!(
                    "scontrol update NodeName={} State=DRAIN Reason={}",
                    shell_words([name]),
                    shell_words([reason(v, i)])
                ),
                format!(
                    "scontrol update NodeName={} State=UNDRAIN",
                    shell_words([name])
                ),
            ),
            Platform::Kubernetes => (
                shell_words(["kubectl", "cordon", name]),
                shell_words(["kubectl", "uncordon", name]),
            ),
        };
        if platform == Platform::Kubernetes {
            out.push(format!("# {}", reason(v, i)));
        }
        out.push(command);
        out.push(format!("#   undo: {undo}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_node_names_make_commands() {
        for good in ["gpu-17", "node01.cluster", "a", "n_1"] {
            assert!(plain(good, Platform::Slurm), "{good}");
        }
        for bad in [
            "",
            "gpu[1-64]",
            "a,b",
            "-x",
            "a b",
            "a;b",
            "x\ny",
            "a$(id)",
            "node-",
            "ü",
            "ALL",
            "All",
        ] {
            assert!(!plain(bad, Platform::Slurm), "{bad:?}");
        }
        assert!(plain("gpu-17.example.com", Platform::Kubernetes));
        assert!(!plain("GPU-17", Platform::Kubernetes));
        assert!(!plain("n_1", Platform::Kubernetes));
        for bad in ["n9..x", ".n9", "n9.", "-n9", "n9-", "a.-b", &"x".repeat(64)] {
            assert!(!plain(bad, Platform::Kubernetes), "{bad:?}");
        }
    }
}
