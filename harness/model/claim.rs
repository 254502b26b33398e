//! What a source being checked (the how-to) claims for a cell, carried as data beside the cell,
//! and how a measurement stands against it.

use serde::{Deserialize, Serialize};

/// The outcome a claim states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    #[default]
    Pass,
    Crash,
}

/// What the how-to claims for a row, carried as data for side-by-side output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Claim {
    pub status: ClaimStatus,
    #[serde(default)]
    pub crash_step: Option<u64>,
    #[serde(default)]
    pub img_per_s: Option<f64>,
    /// The row's /dev/shm as the how-to wrote it, e.g. "64 MB".
    #[serde(default)]
    pub shm: Option<String>,
    /// The cause the cell's end must have (`tmpfs-full`, `mapped-file`, ...: docs/EXPLAIN.md);
    /// unset: any.
    #[serde(default)]
    pub cause: Option<explain::Cause>,
    /// Who claims it (e.g. "Kubernetes documentation"); unset: the how-to.
    #[serde(default)]
    pub source: Option<String>,
}

impl Claim {
    /// The source a claim without one has.
    pub const DEFAULT_SOURCE: &'static str = "How-to";
}

/// A measurement against its claim (decided by `analysis::claims`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimVerdict {
    /// Same outcome (pass, or a crash at the same step).
    Agrees,
    /// Another outcome or another crash step.
    Differs,
    /// A sentence with several parts: some measured true, some not.
    Partly,
    /// The cell ended in an error or a timeout, which measures nothing about the claim.
    Inconclusive,
}

impl std::fmt::Display for ClaimVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClaimVerdict::Agrees => "agrees",
            ClaimVerdict::Differs => "differs",
            ClaimVerdict::Partly => "partly",
            ClaimVerdict::Inconclusive => "inconclusive",
        })
    }
}
