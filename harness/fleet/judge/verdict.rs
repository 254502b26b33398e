//! What the fleet's judgement finds ([`super`]), as numbers and codes: each
//! node's verdict, its findings with the evidence behind them, what it was not judged on and
//! why, and the thresholds they were judged by. `text` puts them into words.

use serde::Serialize;

use super::norm::CellNorm;
use super::rows::Measure;
use analysis::cell_key::CellKey;
use analysis::stats::OUTLIER_Z;

/// Where a judgement stops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// The family-wise level: each test's p must be below alpha / tests.
    pub alpha: f64,
    /// The least |robust z| that counts, however few the tests (Iglewicz and Hoaglin's 3.5).
    pub z: f64,
    /// The least relative difference of a median (img/s, CPU per image, peak /dev/shm).
    pub relative: f64,
    /// The least difference of pass share (a fraction of runs).
    pub share: f64,
    /// Runs of a cell a node needs to be judged there (and values of a measure).
    pub min_runs: usize,
    /// Nodes a cell's norm needs.
    pub min_nodes: usize,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            alpha: 0.05,
            z: OUTLIER_Z,
            relative: 0.2,
            share: 0.2,
            min_runs: 3,
            min_nodes: 5,
        }
    }
}

/// What the nodes were judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Against {
    /// The fleet of these rows: the other nodes.
    Fleet,
    /// A baseline file's norms.
    Baseline,
}

/// A node's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Flagged,
    NotJudged,
}

/// Why a node was not judged on a measure of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub(crate) enum NotJudged {
    /// The node ran the cell (or measured the value) fewer times than judging needs.
    TooFewRuns { runs: usize, need: usize },
    /// Too few nodes ran the cell (or measured the value) often enough for a norm.
    TooFewNodes { nodes: usize, need: usize },
    /// The other nodes (or the baseline) hold too few runs of the cell.
    TooFewOtherRuns { runs: u64, need: usize },
    /// The baseline has no such cell.
    NotInBaseline,
    /// The node's runs were compared, but no result of these runs could have been beyond both
    /// thresholds (for a value, a difference of the practical threshold within the statistical
    /// one; for the outcome, a node failing every run): `need` runs would (a value's: every
    /// node running as many; None: more runs cannot, the nodes differ too much). `percent`:
    /// the practical threshold of a value.
    CannotTell {
        runs: usize,
        need: Option<usize>,
        percent: u32,
    },
    /// The fleet's median is zero (nothing used /dev/shm): no relative difference.
    FleetZero,
}

/// The test behind a finding, with its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub(crate) enum Evidence {
    /// The node's median against the fleet's: z = (node - fleet) / spread (None when the
    /// spread is zero: at least half the nodes measured the very same value), over `nodes`
    /// nodes; and, against the fleet's own rows, the rank test's p of the node's `values` runs
    /// against the other nodes' `other_values`; `every_run` when each of the node's runs
    /// (not only its median) is beyond the practical threshold on the worse side, what a zero
    /// spread needs to be a finding.
    Median {
        z: Option<f64>,
        every_run: bool,
        spread: f64,
        nodes: usize,
        values: usize,
        p: Option<f64>,
        other_values: usize,
    },
    /// Fisher's exact test, two-sided, of the node's passes against the others'.
    Fisher {
        p: f64,
        runs: usize,
        passes: usize,
        other_runs: u64,
        other_passes: u64,
    },
}

impl Evidence {
    /// The statistics it holds (what the Bonferroni count counts).
    pub(crate) fn statistics(&self) -> usize {
        match self {
            Evidence::Median { p, .. } => 1 + usize::from(p.is_some()),
            Evidence::Fisher { .. } => 1,
        }
    }
}

/// A node against the fleet on a measure of a cell: a finding when it is worse beyond both
/// thresholds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The cell, an index into [`Verdict::cells`].
    pub(crate) cell: usize,
    pub measure: Measure,
    /// The node's median and the fleet's (the outcome: the node's pass share and the others').
    pub node: f64,
    pub fleet: f64,
    /// node / fleet - 1 (the outcome: the node's share - the others', a fraction of runs).
    pub difference: f64,
    pub(crate) evidence: Evidence,
}

/// A measure of a cell the node was not judged on, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Unjudged {
    pub(crate) cell: usize,
    pub measure: Measure,
    pub(crate) why: NotJudged,
}

/// One node judged against the fleet (a node check's own verdict is `node::NodeVerdict`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeJudgement {
    pub node: String,
    pub status: Status,
    /// Its runs, and the cells they are of.
    pub(crate) runs: usize,
    pub(crate) cells: usize,
    /// The measures of cells it was judged on, and the cells they are of.
    pub(crate) judged: usize,
    pub(crate) judged_cells: usize,
    /// Outcomes first, then the largest differences first.
    pub findings: Vec<Comparison>,
    /// Every measure of every cell compared, findings or not, in the cells' order: its numbers.
    pub(crate) compared: Vec<Comparison>,
    pub(crate) not_judged: Vec<Unjudged>,
}

/// The fleet's verdict on every node.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub(crate) against: Against,
    pub(crate) thresholds: Thresholds,
    /// Tests made (node x cell x measure judged), and the thresholds they set.
    pub(crate) tests: usize,
    pub(crate) p_threshold: f64,
    pub(crate) z_threshold: f64,
    /// The cells (`present::cell_key` writes them) and their norms (None: not in the baseline).
    #[serde(skip)]
    pub(crate) cells: Vec<CellKey>,
    pub(crate) norms: Vec<Option<CellNorm>>,
    pub nodes: Vec<NodeJudgement>,
    pub(crate) rows: usize,
    pub(crate) nameless_rows: usize,
    /// Rows left out because they repeat a run already read (same run id, repeat, node and
    /// cell).
    pub(crate) duplicate_rows: usize,
}

impl Verdict {
    /// Whether any node is flagged.
    pub fn flagged(&self) -> bool {
        self.nodes.iter().any(|n| n.status == Status::Flagged)
    }

    /// Whether any node was judged (ok or flagged): when none was, "no node flagged" says
    /// nothing.
    pub fn judged_any(&self) -> bool {
        (self.nodes.iter()).any(|n| matches!(n.status, Status::Ok | Status::Flagged))
    }

    /// Per node, whether it is flagged (what a baseline leaves out).
    pub fn flagged_nodes(&self) -> Vec<bool> {
        self.nodes
            .iter()
            .map(|n| n.status == Status::Flagged)
            .collect()
    }
}
