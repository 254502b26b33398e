//! The fleet's verdict on each node: per cell and measure, the node against the norm
//! ([`super::fleet_norm`]), flagged only beyond both thresholds:
//! - statistical: for a median, its robust z (distance from the fleet's median in robust
//!   spreads) beyond 3.5 or beyond the normal quantile of alpha / tests, whichever is further;
//!   for the outcome, Fisher's exact test of the node's pass share against the other nodes'
//!   pooled runs (or the baseline's), p below alpha / tests. Tests are every node x cell x
//!   measure judged (Bonferroni), so a fleet of a hundred nodes is not flagged by chance.
//! - practical: a median at least `relative` (20%) worse, a pass share at least `share` (20
//!   points) lower. A difference that is sure but small is nobody's reason to drain a node.
//!
//! Only the worse side is flagged. A node with too few runs of a cell, or in a cell with too
//! few nodes to know the norm, is not judged there, and the reason is kept.

use serde::Serialize;

use super::cell_key::CellKey;
use super::exact_tests::{fisher_two_sided, normal_upper_quantile};
use super::fleet::{Fleet, Measure, NodeCell, Sample};
use super::fleet_norm::{Baseline, CellNorm, Spread};
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
    /// (node median - fleet median) / spread; None when the spread is zero (at least half the
    /// nodes measured the very same value).
    RobustZ {
        z: Option<f64>,
        spread: f64,
        nodes: usize,
        values: usize,
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

/// A test ready to be made.
enum Test {
    Value {
        sample: Sample,
        norm: Spread,
    },
    Outcome {
        node: (usize, usize),
        others: (u64, u64),
    },
}

/// Judges every node of `fleet` against its own norms, or against `baseline`'s.
pub fn judge(fleet: &Fleet, baseline: Option<&Baseline>, t: Thresholds) -> Verdict {
    let norms: Vec<Option<CellNorm>> = match baseline {
        Some(b) => b.norms_for(fleet),
        None => {
            let none = vec![false; fleet.nodes.len()];
            (0..fleet.cells.len())
                .map(|c| Some(CellNorm::of(fleet, c, &none, t.min_runs)))
                .collect()
        }
    };
    let against = match baseline {
        Some(_) => Against::Baseline,
        None => Against::Fleet,
    };
    // Every test first: their number sets the thresholds.
    let plans: Vec<Vec<(usize, Measure, Result<Test, NotJudged>)>> = (0..fleet.nodes.len())
        .map(|node| {
            (0..fleet.cells.len())
                .filter_map(|cell| fleet.table[cell][node].as_ref().map(|c| (cell, c)))
                .flat_map(|(cell, c)| {
                    let norm = norms[cell].as_ref();
                    Measure::ALL.map(|m| (cell, m, plan(c, norm, m, against, &t)))
                })
                .collect()
        })
        .collect();
    let tests = plans.iter().flatten().filter(|(_, _, p)| p.is_ok()).count();
    let p_threshold = t.alpha / tests.max(1) as f64;
    let z_threshold = t.z.max(normal_upper_quantile(p_threshold));
    let nodes = plans
        .into_iter()
        .enumerate()
        .map(|(node, plan)| {
            let mut verdict = NodeVerdict {
                node: fleet.nodes[node].clone(),
                status: Status::Ok,
                runs: fleet.ran_by(node).map(|c| c.runs).sum(),
                cells: fleet.ran_by(node).count(),
                judged: 0,
                findings: Vec::new(),
                not_judged: Vec::new(),
            };
            for (cell, measure, test) in plan {
                match test {
                    Ok(test) => {
                        verdict.judged += 1;
                        let found = make(&test, measure, z_threshold, p_threshold, &t);
                        verdict
                            .findings
                            .extend(found.map(|f| Finding { cell, ..f }));
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
        })
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

/// The test of one measure of a node's cell, or why there is none.
fn plan(
    c: &NodeCell,
    norm: Option<&CellNorm>,
    measure: Measure,
    against: Against,
    t: &Thresholds,
) -> Result<Test, NotJudged> {
    let norm = norm.ok_or(NotJudged::NotInBaseline)?;
    let need = t.min_runs;
    if measure == Measure::Outcome {
        if c.runs < need {
            return Err(NotJudged::TooFewRuns { runs: c.runs, need });
        }
        if norm.nodes < t.min_nodes {
            let need = t.min_nodes;
            return Err(NotJudged::TooFewNodes {
                nodes: norm.nodes,
                need,
            });
        }
        // Against the fleet, the others are the pool less this node (counted in it, since it
        // has enough runs); a baseline's pool is others already.
        let others = match against {
            Against::Fleet => (norm.runs - c.runs as u64, norm.passes - c.passes as u64),
            Against::Baseline => (norm.runs, norm.passes),
        };
        if others.0 < need as u64 {
            return Err(NotJudged::TooFewOtherRuns {
                runs: others.0,
                need,
            });
        }
        return Ok(Test::Outcome {
            node: (c.runs, c.passes),
            others,
        });
    }
    let values = c.value(measure).map_or(0, |s| s.values);
    let sample = c
        .value(measure)
        .filter(|s| s.values >= need)
        .ok_or(NotJudged::TooFewRuns { runs: values, need })?;
    let spread = norm.spread(measure).copied();
    let nodes = spread.map_or(0, |s| s.nodes);
    let spread = spread
        .filter(|s| s.nodes >= t.min_nodes)
        .ok_or(NotJudged::TooFewNodes {
            nodes,
            need: t.min_nodes,
        })?;
    if spread.median <= 0.0 {
        return Err(NotJudged::FleetZero);
    }
    Ok(Test::Value {
        sample,
        norm: spread,
    })
}

/// The test made: a finding (its cell set by the caller) when beyond both thresholds.
fn make(test: &Test, measure: Measure, z_at: f64, p_at: f64, t: &Thresholds) -> Option<Finding> {
    match *test {
        Test::Value { sample, norm } => {
            let difference = sample.median / norm.median - 1.0;
            let z = (norm.spread > 0.0).then(|| (sample.median - norm.median) / norm.spread);
            let worse = match measure.higher_is_worse() {
                true => difference > 0.0,
                false => difference < 0.0,
            };
            // A zero spread: at least half the nodes agree exactly, so any difference is sure.
            let sure = z.map_or(difference != 0.0, |z| z.abs() >= z_at);
            (worse && sure && difference.abs() >= t.relative).then_some(Finding {
                cell: 0,
                measure,
                node: sample.median,
                fleet: norm.median,
                difference,
                evidence: Evidence::RobustZ {
                    z,
                    spread: norm.spread,
                    nodes: norm.nodes,
                    values: sample.values,
                },
            })
        }
        Test::Outcome { node, others } => {
            let (runs, passes) = (node.0 as u64, node.1 as u64);
            let share = passes as f64 / runs as f64;
            let other_share = others.1 as f64 / others.0 as f64;
            let p = fisher_two_sided(passes, runs - passes, others.1, others.0 - others.1);
            let difference = share - other_share;
            (difference <= -t.share && p <= p_at).then_some(Finding {
                cell: 0,
                measure,
                node: share,
                fleet: other_share,
                difference,
                evidence: Evidence::Fisher {
                    p,
                    runs: node.0,
                    passes: node.1,
                    other_runs: others.0,
                    other_passes: others.1,
                },
            })
        }
    }
}
