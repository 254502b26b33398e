//! The fleet's verdict on each node: per cell and measure, the node against the norm
//! ([`super::fleet_norm`]), flagged only beyond both thresholds:
//! - statistical: for a median, its robust z (its distance from the fleet's median in robust
//!   spreads) beyond 3.5 or beyond the normal quantile of alpha / tests, whichever is further,
//!   or, against the fleet's own rows, the rank test of its runs against the other nodes' runs
//!   at p below alpha / tests; for the outcome, Fisher's exact test of its pass share against
//!   the other nodes' pooled runs (or the baseline's) at p below alpha / tests. The tests are
//!   every statistic of every node x cell x measure judged (Bonferroni), so a fleet of a
//!   hundred nodes is not flagged by chance.
//! - practical: a median at least `relative` (20%) worse, a pass share at least `share` (20
//!   points) lower. A difference that is sure but small is nobody's reason to drain a node.
//!
//! Only the worse side is flagged. A node with too few runs of a cell, or in a cell with too
//! few nodes to know the norm, is not judged there, and the reason is kept.

use serde::Serialize;

use super::cell_key::CellKey;
use super::exact_tests::{fisher_two_sided, normal_upper_quantile, rank_test_two_sided};
use super::fleet::{Fleet, Measure, NodeCell};
use super::fleet_norm::{Baseline, CellNorm};
use super::stats::OUTLIER_Z;

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
pub enum Against {
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
pub enum NotJudged {
    /// The node ran the cell (or measured the value) fewer times than judging needs.
    TooFewRuns { runs: usize, need: usize },
    /// Too few nodes ran the cell (or measured the value) often enough for a norm.
    TooFewNodes { nodes: usize, need: usize },
    /// The other nodes (or the baseline) hold too few runs of the cell.
    TooFewOtherRuns { runs: u64, need: usize },
    /// The baseline has no such cell.
    NotInBaseline,
    /// The fleet's median is zero (nothing used /dev/shm): no relative difference.
    FleetZero,
}

/// The test behind a finding, with its numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum Evidence {
    /// The node's median against the fleet's: z = (node - fleet) / spread (None when the
    /// spread is zero: at least half the nodes measured the very same value), over `nodes`
    /// nodes; and, against the fleet's own rows, the rank test's p of the node's `values` runs
    /// against the other nodes' `other_values`.
    Median {
        z: Option<f64>,
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
    fn statistics(&self) -> usize {
        match self {
            Evidence::Median { p, .. } => 1 + usize::from(p.is_some()),
            Evidence::Fisher { .. } => 1,
        }
    }
}

/// A node worse than the fleet on a measure of a cell, beyond both thresholds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The cell, an index into [`Verdict::cells`].
    pub cell: usize,
    pub measure: Measure,
    /// The node's median and the fleet's (the outcome: the node's pass share and the others').
    pub node: f64,
    pub fleet: f64,
    /// node / fleet - 1 (the outcome: the node's share - the others', a fraction of runs).
    pub difference: f64,
    pub evidence: Evidence,
}

/// A measure of a cell the node was not judged on, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unjudged {
    pub cell: usize,
    pub measure: Measure,
    pub why: NotJudged,
}

/// One node's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeVerdict {
    pub node: String,
    pub status: Status,
    /// Its runs, and the cells they are of.
    pub runs: usize,
    pub cells: usize,
    /// The measures of cells it was judged on.
    pub judged: usize,
    /// Outcomes first, then the largest differences first.
    pub findings: Vec<Finding>,
    pub not_judged: Vec<Unjudged>,
}

/// The fleet's verdict on every node.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub against: Against,
    pub thresholds: Thresholds,
    /// Tests made (node x cell x measure judged), and the thresholds they set.
    pub tests: usize,
    pub p_threshold: f64,
    pub z_threshold: f64,
    /// The cells (`present::cell_key` writes them) and their norms (None: not in the baseline).
    #[serde(skip)]
    pub cells: Vec<CellKey>,
    pub norms: Vec<Option<CellNorm>>,
    pub nodes: Vec<NodeVerdict>,
    pub rows: usize,
    pub nameless_rows: usize,
}

impl Verdict {
    /// Whether any node is flagged.
    pub fn flagged(&self) -> bool {
        self.nodes.iter().any(|n| n.status == Status::Flagged)
    }

    /// Per node, whether it is flagged (what a baseline leaves out).
    pub fn flagged_nodes(&self) -> Vec<bool> {
        self.nodes
            .iter()
            .map(|n| n.status == Status::Flagged)
            .collect()
    }
}

/// A measure of a node's cell with its statistics made, before any threshold: its value
/// against the norm's, how far apart, and the evidence.
struct Measured {
    node: f64,
    fleet: f64,
    difference: f64,
    evidence: Evidence,
}

/// Each measure of each cell a node ran: measured, or why not.
type Plan = Vec<(usize, Measure, Result<Measured, NotJudged>)>;

/// Judges every node of `fleet` against its own norms, or against `baseline`'s.
pub fn judge(fleet: &Fleet, baseline: Option<&Baseline>, t: Thresholds) -> Verdict {
    let (against, norms) = match baseline {
        Some(b) => (Against::Baseline, b.norms_for(fleet)),
        None => {
            let none = vec![false; fleet.nodes.len()];
            let norms = (0..fleet.cells.len())
                .map(|c| Some(CellNorm::of(fleet, c, &none, t.min_runs)))
                .collect();
            (Against::Fleet, norms)
        }
    };
    // Every statistic first: their number sets the thresholds.
    let plans: Vec<Plan> = (0..fleet.nodes.len())
        .map(|node| plan(fleet, node, &norms, against, &t))
        .collect();
    let tests = (plans.iter().flatten())
        .filter_map(|(_, _, m)| m.as_ref().ok())
        .map(|m| m.evidence.statistics())
        .sum::<usize>();
    let p_threshold = t.alpha / tests.max(1) as f64;
    let z_threshold = t.z.max(normal_upper_quantile(p_threshold));
    let nodes = (plans.into_iter().enumerate())
        .map(|(node, plan)| node_verdict(fleet, node, plan, z_threshold, p_threshold, &t))
        .collect();
    Verdict {
        against,
        thresholds: t,
        tests,
        p_threshold,
        z_threshold,
        cells: fleet.cells.clone(),
        norms,
        nodes,
        rows: fleet.rows,
        nameless_rows: fleet.nameless_rows,
    }
}

/// Every measure of every cell `node` ran, measured against the norm.
fn plan(
    fleet: &Fleet,
    node: usize,
    norms: &[Option<CellNorm>],
    against: Against,
    t: &Thresholds,
) -> Plan {
    let mut plan = Vec::new();
    for (cell, row) in fleet.table.iter().enumerate() {
        let Some(c) = &row[node] else {
            continue;
        };
        let norm = norms[cell].as_ref().ok_or(NotJudged::NotInBaseline);
        for m in Measure::ALL {
            let measured = norm.and_then(|norm| match m {
                Measure::Outcome => outcome(c, norm, against, t),
                _ => {
                    // Against the fleet's own rows, the others' runs are at hand.
                    let others = match against {
                        Against::Fleet => others_values(fleet, cell, node, m),
                        Against::Baseline => Vec::new(),
                    };
                    median(c, norm, m, &others, t)
                }
            });
            plan.push((cell, m, measured));
        }
    }
    plan
}

/// A node's verdict from its measures: the findings beyond both thresholds (outcomes first,
/// then the largest differences), and what was not judged.
fn node_verdict(
    fleet: &Fleet,
    node: usize,
    plan: Plan,
    z_at: f64,
    p_at: f64,
    t: &Thresholds,
) -> NodeVerdict {
    let mut verdict = NodeVerdict {
        node: fleet.nodes[node].clone(),
        status: Status::Ok,
        runs: fleet.ran_by(node).map(|c| c.runs).sum(),
        cells: fleet.ran_by(node).count(),
        judged: 0,
        findings: Vec::new(),
        not_judged: Vec::new(),
    };
    for (cell, measure, measured) in plan {
        match measured {
            Ok(m) => {
                verdict.judged += 1;
                if beyond(&m, measure, z_at, p_at, t) {
                    verdict.findings.push(Finding {
                        cell,
                        measure,
                        node: m.node,
                        fleet: m.fleet,
                        difference: m.difference,
                        evidence: m.evidence,
                    });
                }
            }
            Err(why) => verdict.not_judged.push(Unjudged { cell, measure, why }),
        }
    }
    verdict.findings.sort_by(|a, b| {
        (b.measure == Measure::Outcome)
            .cmp(&(a.measure == Measure::Outcome))
            .then(b.difference.abs().total_cmp(&a.difference.abs()))
    });
    verdict.status = match (verdict.findings.is_empty(), verdict.judged) {
        (false, _) => Status::Flagged,
        (true, 0) => Status::NotJudged,
        (true, _) => Status::Ok,
    };
    verdict
}

/// The values of `measure` that the nodes other than `node` measured in `cell`: what the rank
/// test sets a node's runs against.
fn others_values(fleet: &Fleet, cell: usize, node: usize, measure: Measure) -> Vec<f64> {
    fleet
        .ran(cell)
        .filter(|(n, _)| *n != node)
        .flat_map(|(_, c)| c.values(measure).iter().copied())
        .collect()
}

/// A node's median of a value measure against the norm's (and its runs against `others`').
fn median(
    c: &NodeCell,
    norm: &CellNorm,
    measure: Measure,
    others: &[f64],
    t: &Thresholds,
) -> Result<Measured, NotJudged> {
    let need = t.min_runs;
    let values = c.value(measure).map_or(0, |s| s.values);
    let sample = c
        .value(measure)
        .filter(|s| s.values >= need)
        .ok_or(NotJudged::TooFewRuns { runs: values, need })?;
    let spread = norm.spread(measure).copied();
    let nodes = spread.map_or(0, |s| s.nodes);
    let norm = spread
        .filter(|s| s.nodes >= t.min_nodes)
        .ok_or(NotJudged::TooFewNodes {
            nodes,
            need: t.min_nodes,
        })?;
    if norm.median <= 0.0 {
        return Err(NotJudged::FleetZero);
    }
    let p = (!others.is_empty()).then(|| rank_test_two_sided(c.values(measure), others));
    Ok(Measured {
        node: sample.median,
        fleet: norm.median,
        difference: sample.median / norm.median - 1.0,
        evidence: Evidence::Median {
            z: (norm.spread > 0.0).then(|| (sample.median - norm.median) / norm.spread),
            spread: norm.spread,
            nodes: norm.nodes,
            values: sample.values,
            p,
            other_values: others.len(),
        },
    })
}

/// A node's pass share in a cell against the others' pooled runs (or the baseline's).
fn outcome(
    c: &NodeCell,
    norm: &CellNorm,
    against: Against,
    t: &Thresholds,
) -> Result<Measured, NotJudged> {
    let need = t.min_runs;
    if c.runs < need {
        return Err(NotJudged::TooFewRuns { runs: c.runs, need });
    }
    if norm.nodes < t.min_nodes {
        let (nodes, need) = (norm.nodes, t.min_nodes);
        return Err(NotJudged::TooFewNodes { nodes, need });
    }
    // Against the fleet, the others are the pool less this node (counted in it, since it has
    // enough runs); a baseline's pool is others already.
    let (other_runs, other_passes) = match against {
        Against::Fleet => (norm.runs - c.runs as u64, norm.passes - c.passes as u64),
        Against::Baseline => (norm.runs, norm.passes),
    };
    if other_runs < need as u64 {
        let runs = other_runs;
        return Err(NotJudged::TooFewOtherRuns { runs, need });
    }
    let (runs, passes) = (c.runs as u64, c.passes as u64);
    let share = passes as f64 / runs as f64;
    let other_share = other_passes as f64 / other_runs as f64;
    let p = fisher_two_sided(
        passes,
        runs - passes,
        other_passes,
        other_runs - other_passes,
    );
    Ok(Measured {
        node: share,
        fleet: other_share,
        difference: share - other_share,
        evidence: Evidence::Fisher {
            p,
            runs: c.runs,
            passes: c.passes,
            other_runs,
            other_passes,
        },
    })
}

/// Whether a measured difference is a finding: on the worse side, beyond the statistical
/// threshold (by any of its statistics) and the practical one.
fn beyond(m: &Measured, measure: Measure, z_at: f64, p_at: f64, t: &Thresholds) -> bool {
    match m.evidence {
        Evidence::Median { z, p, .. } => {
            let worse = match measure.higher_is_worse() {
                true => m.difference > 0.0,
                false => m.difference < 0.0,
            };
            // A zero spread: at least half the nodes agree exactly, so any difference is sure.
            let by_z = z.map_or(m.difference != 0.0, |z| z.abs() >= z_at);
            let by_rank = p.is_some_and(|p| p <= p_at);
            worse && (by_z || by_rank) && m.difference.abs() >= t.relative
        }
        Evidence::Fisher { p, .. } => m.difference <= -t.share && p <= p_at,
    }
}
