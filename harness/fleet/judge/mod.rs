//! The fleet's verdict on each node: per cell and measure, the node against the norm
//! ([`norm`]), flagged only beyond both thresholds:
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
//! The rank test is exact up to 30 values pooled and the normal approximation beyond
//! (`exact_tests`), which is conservative in the far tail: in a fleet of a hundred nodes the
//! robust z is what finds a node, the rank test what finds one among few.
//!
//! Only the worse side is flagged. A node with too few runs of a cell, or in a cell with too
//! few nodes to know the norm, is not judged there, and the reason is kept.

pub mod actions;
pub mod json_verdict;
pub mod norm;
pub mod rows;
pub mod text;
pub mod verdict;

use self::norm::{Baseline, CellNorm};
use self::rows::{Fleet, Measure, NodeCell};
use self::verdict::{
    Against, Comparison, Evidence, NodeJudgement, NotJudged, Status, Thresholds, Unjudged, Verdict,
};
use analysis::exact_tests::{normal_upper_quantile, LnFactorials, RankPool};

/// A measure of a node's cell with its statistics made, before any threshold: its value
/// against the norm's, how far apart, and the evidence.
struct Measured {
    node: f64,
    fleet: f64,
    difference: f64,
    evidence: Evidence,
    /// The rank test's p had this node's runs, as spread as they are, been worse than the
    /// fleet by exactly the practical threshold (against the fleet's own rows).
    p_at_threshold: Option<f64>,
    /// Whether the node's mildest run (the least worse) is its median: its runs moved to a
    /// median the threshold worse would then all be beyond it.
    mildest_is_median: bool,
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
    let pools = match against {
        Against::Fleet => Pools::of(fleet),
        Against::Baseline => Pools::default(),
    };
    // Fisher's tables are at most a cell's runs: this fleet's and a baseline's together.
    // (and the most runs a node is told to give, beyond them).
    let most_runs = MOST_RUNS_NEEDED
        + fleet.rows
        + norms
            .iter()
            .flatten()
            .map(|n| n.runs as usize)
            .max()
            .unwrap_or(0);
    let shared = Shared {
        pools,
        ln_factorials: LnFactorials::new(most_runs),
    };
    // Every statistic first: their number sets the thresholds.
    let plans: Vec<Plan> = (0..fleet.nodes.len())
        .map(|node| plan(fleet, node, &norms, against, &shared, &t))
        .collect();
    let tests = (plans.iter().flatten())
        .filter_map(|(_, _, m)| m.as_ref().ok())
        .map(|m| m.evidence.statistics())
        .sum::<usize>();
    let p_threshold = t.alpha / tests.max(1) as f64;
    let z_threshold = t.z.max(normal_upper_quantile(p_threshold));
    let nodes = (plans.into_iter().enumerate())
        .map(|(node, plan)| {
            let lf = &shared.ln_factorials;
            let at = (z_threshold, p_threshold);
            node_judgement(fleet, node, plan, at, &t, against, lf)
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
        duplicate_rows: fleet.duplicate_rows,
    }
}

/// What every node's tests share, made once: the pools of runs and Fisher's table.
struct Shared {
    pools: Pools,
    ln_factorials: LnFactorials,
}

/// Each cell's values of each value measure pooled over the nodes that ran it: what the rank
/// test sets a node's runs against (the others' runs are the pool less the node's own). Empty
/// against a baseline, which keeps no runs.
#[derive(Default)]
struct Pools(Vec<Vec<(Measure, RankPool)>>);

impl Pools {
    fn of(fleet: &Fleet) -> Pools {
        let pool = |cell, m| {
            let values = fleet
                .ran(cell)
                .flat_map(|(_, c)| c.values(m).iter().copied());
            (m, RankPool::new(values))
        };
        let cells = (0..fleet.cells.len())
            .map(|cell| Measure::VALUES.iter().map(|m| pool(cell, *m)).collect())
            .collect();
        Pools(cells)
    }

    fn of_cell(&self, cell: usize, measure: Measure) -> Option<&RankPool> {
        let pools = self.0.get(cell)?;
        pools.iter().find(|(m, _)| *m == measure).map(|(_, p)| p)
    }
}

/// Every measure of every cell `node` ran, measured against the norm.
fn plan(
    fleet: &Fleet,
    node: usize,
    norms: &[Option<CellNorm>],
    against: Against,
    shared: &Shared,
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
                Measure::Outcome => outcome(c, norm, against, &shared.ln_factorials, t),
                _ => median(c, norm, m, shared.pools.of_cell(cell, m), t),
            });
            plan.push((cell, m, measured));
        }
    }
    plan
}

/// A node's verdict from its measures: the findings beyond both thresholds (outcomes first,
/// then the largest differences), and what was not judged.
fn node_judgement(
    fleet: &Fleet,
    node: usize,
    plan: Plan,
    (z_at, p_at): (f64, f64),
    t: &Thresholds,
    against: Against,
    ln_factorials: &LnFactorials,
) -> NodeJudgement {
    let mut verdict = NodeJudgement {
        node: fleet.nodes[node].clone(),
        status: Status::Ok,
        runs: fleet.ran_by(node).map(|c| c.runs).sum(),
        cells: fleet.ran_by(node).count(),
        judged: 0,
        judged_cells: 0,
        findings: Vec::new(),
        compared: Vec::new(),
        not_judged: Vec::new(),
    };
    for (cell, measure, measured) in plan {
        let m = match measured {
            Ok(m) => m,
            Err(why) => {
                verdict.not_judged.push(Unjudged { cell, measure, why });
                continue;
            }
        };
        let comparison = Comparison {
            cell,
            measure,
            node: m.node,
            fleet: m.fleet,
            difference: m.difference,
            evidence: m.evidence,
        };
        if beyond(&m, measure, z_at, p_at, t) {
            verdict.judged += 1;
            verdict.findings.push(comparison.clone());
        } else if let Some(why) = untold(&m, against, (z_at, p_at), t, ln_factorials) {
            verdict.not_judged.push(Unjudged { cell, measure, why });
        } else {
            verdict.judged += 1;
        }
        verdict.compared.push(comparison);
    }
    let told = |c: &&Comparison| {
        !(verdict.not_judged.iter()).any(|u| u.cell == c.cell && u.measure == c.measure)
    };
    let mut cells: Vec<usize> = verdict
        .compared
        .iter()
        .filter(told)
        .map(|c| c.cell)
        .collect();
    cells.dedup();
    verdict.judged_cells = cells.len();
    verdict.findings.sort_by(|a, b| {
        (b.measure == Measure::Outcome)
            .cmp(&(a.measure == Measure::Outcome))
            .then(b.difference.abs().total_cmp(&a.difference.abs()))
    });
    // Ok says the node was seen to be as the others: not when some of its runs could not have
    // shown a difference that matters.
    let cannot_tell =
        (verdict.not_judged.iter()).any(|u| matches!(u.why, NotJudged::CannotTell { .. }));
    verdict.status = match (verdict.findings.is_empty(), verdict.judged, cannot_tell) {
        (false, _, _) => Status::Flagged,
        (true, 0, _) | (true, _, true) => Status::NotJudged,
        (true, _, false) => Status::Ok,
    };
    verdict
}

/// The most runs a node is told to give: where more would be needed, more runs are not what
/// the judgement lacks.
const MOST_RUNS_NEEDED: usize = 1000;

/// Why a compared measure is no judgement, when it is none: no result of these runs could have
/// been beyond both thresholds. For a value: a node exactly the practical threshold worse,
/// with runs as spread as this node's, would reach neither the robust z (`relative x median /
/// spread`) nor the rank test's p (the node's own runs moved to that median, against the
/// others'); for the outcome: not even a node failing every run against the others' share,
/// where that share is high enough for a drop of the practical threshold. The runs that would
/// tell, every node giving as many: the spread of the medians shrinks as 1/sqrt(runs) (not a
/// baseline's, which is fixed), and the rank test's z grows as sqrt(runs).
fn untold(
    m: &Measured,
    against: Against,
    (z_at, p_at): (f64, f64),
    t: &Thresholds,
    ln_factorials: &LnFactorials,
) -> Option<NotJudged> {
    match m.evidence {
        Evidence::Median { spread, values, .. } => {
            // No practical threshold: any sure difference counts, nothing to tell apart.
            if t.relative <= 0.0 {
                return None;
            }
            let shrinks = against == Against::Fleet;
            // A zero spread: a node the threshold worse is told when every run of it would be
            // beyond (as `beyond` judges, the rank test aside), which its runs moved there are
            // when the mildest of them is its median; more runs do not change that.
            let z_of = |runs: usize| match (spread > 0.0, shrinks) {
                (false, _) if m.mildest_is_median => f64::INFINITY,
                (false, _) => 0.0,
                (true, true) => {
                    t.relative * m.fleet.abs() / spread * (runs as f64 / values as f64).sqrt()
                }
                (true, false) => t.relative * m.fleet.abs() / spread,
            };
            // The rank test's z at the threshold, as the normal quantile of its p.
            let rank_z =
                (m.p_at_threshold.filter(|_| spread > 0.0)).map(|p| normal_upper_quantile(p / 2.0));
            let rank_z_at = normal_upper_quantile(p_at / 2.0);
            let by_rank = |runs: usize| {
                rank_z.is_some_and(|z| z * (runs as f64 / values as f64).sqrt() >= rank_z_at)
            };
            let told = (spread > 0.0 && m.p_at_threshold.is_some_and(|p| p <= p_at))
                || z_of(values) >= z_at;
            if told {
                return None;
            }
            let can = |runs: usize| z_of(runs) >= z_at || by_rank(runs);
            Some(NotJudged::CannotTell {
                runs: values,
                need: least_runs(values, can),
                percent: (t.relative * 100.0).round() as u32,
            })
        }
        Evidence::Fisher {
            runs,
            other_runs,
            other_passes,
            ..
        } => {
            if t.share <= 0.0 || (other_passes as f64) < t.share * other_runs as f64 {
                return None;
            }
            let told = |k: usize, scale: bool| {
                let grow = |n: u64| match scale {
                    true => (n as f64 * k as f64 / runs as f64).round() as u64,
                    false => n,
                };
                let (passes, fails) = (grow(other_passes), grow(other_runs - other_passes));
                // A share known from this many runs: a node failing all k, by the binomial.
                if passes + fails > 20_000 {
                    let share = passes as f64 / (passes + fails) as f64;
                    return (1.0 - share).powi(k as i32) <= p_at;
                }
                ln_factorials.fisher(0, k as u64, passes, fails) <= p_at
            };
            if told(runs, false) {
                return None;
            }
            // Against a baseline, its runs stay as they are.
            let scale = against == Against::Fleet;
            Some(NotJudged::CannotTell {
                runs,
                need: least_runs(runs, |k| told(k, scale)),
                percent: (t.share * 100.0).round() as u32,
            })
        }
    }
}

/// The least runs above `runs` for which `can` holds (it holds from some number on), by
/// halving; None when even [`MOST_RUNS_NEEDED`] would not do.
fn least_runs(runs: usize, can: impl Fn(usize) -> bool) -> Option<usize> {
    if runs >= MOST_RUNS_NEEDED || !can(MOST_RUNS_NEEDED) {
        return None;
    }
    let (mut cannot, mut does) = (runs, MOST_RUNS_NEEDED);
    while does - cannot > 1 {
        let mid = (cannot + does) / 2;
        match can(mid) {
            true => does = mid,
            false => cannot = mid,
        }
    }
    Some(does)
}

/// A node's median of a value measure against the norm's (and its runs against the others' in
/// `pool`, when the fleet's own rows are at hand).
fn median(
    c: &NodeCell,
    norm: &CellNorm,
    measure: Measure,
    pool: Option<&RankPool>,
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
    let own = c.values(measure);
    // Against the fleet's own rows, its runs against the others'.
    let pool = pool.filter(|p| p.len() > own.len());
    let others = pool.map_or(0, |p| p.len() - own.len());
    let p = pool.map(|p| p.test(own));
    // The same runs moved to a median exactly the practical threshold worse than the fleet's.
    let worse = match measure.higher_is_worse() {
        true => 1.0 + t.relative,
        false => 1.0 - t.relative,
    };
    let moved = |scale: f64| own.iter().map(|v| v * scale).collect::<Vec<f64>>();
    let p_at_threshold = (pool.filter(|_| sample.median > 0.0))
        .map(|p| p.test_instead(own, &moved(worse * norm.median / sample.median)));
    let mildest = match measure.higher_is_worse() {
        true => own.iter().copied().fold(f64::INFINITY, f64::min),
        false => own.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    };
    let every_run = match measure.higher_is_worse() {
        true => mildest >= norm.median * worse,
        false => mildest <= norm.median * worse,
    };
    Ok(Measured {
        node: sample.median,
        fleet: norm.median,
        difference: sample.median / norm.median - 1.0,
        evidence: Evidence::Median {
            z: (norm.spread > 0.0).then(|| (sample.median - norm.median) / norm.spread),
            every_run,
            spread: norm.spread,
            nodes: norm.nodes,
            values: sample.values,
            p,
            other_values: others,
        },
        p_at_threshold,
        mildest_is_median: mildest == sample.median,
    })
}

/// A node's pass share in a cell against the others' pooled runs (or the baseline's).
fn outcome(
    c: &NodeCell,
    norm: &CellNorm,
    against: Against,
    ln_factorials: &LnFactorials,
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
    let p = ln_factorials.fisher(
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
        p_at_threshold: None,
        mildest_is_median: false,
    })
}

/// Whether a measured difference is a finding: on the worse side, beyond the statistical
/// threshold (by any of its statistics) and the practical one.
fn beyond(m: &Measured, measure: Measure, z_at: f64, p_at: f64, t: &Thresholds) -> bool {
    match m.evidence {
        Evidence::Median {
            z, p, every_run, ..
        } => {
            let worse = match measure.higher_is_worse() {
                true => m.difference > 0.0,
                false => m.difference < 0.0,
            };
            // A zero spread (at least half the nodes agree exactly) makes no z, and a median
            // off it is no certainty: a measure counted in whole units (batches in /dev/shm)
            // agrees by its grain, and a node whose timing let one more batch in, in half its
            // runs, moves its median by a whole batch. Off a fleet that agrees exactly, every
            // run of the node must be beyond (or the rank test of the runs must tell).
            // And the rank test is no help there: with nearly every value tied its normal
            // approximation's variance collapses and its p comes out orders of magnitude small
            // (3 batches in 28 runs against a node's [4, 4, 3, 3]: p = 1.4e-4 where the exact
            // test gives 0.012).
            // Nor is a small spread: node medians of a measure counted in batches sit a fraction
            // of a batch apart (a median between two runs of 3 and two of 4), and a z against
            // that makes one timing-made batch a finding (a quiet CI run flagged two good nodes
            // +33% by z 5.5 where the rank test said p = 0.07). For it, z needs every run too.
            let units = matches!(measure, Measure::PeakShmBytes);
            let (by_z, by_rank) = match z {
                Some(z) => (
                    z.abs() >= z_at && (every_run || !units),
                    p.is_some_and(|p| p <= p_at),
                ),
                None => (every_run, false),
            };
            worse && (by_z || by_rank) && m.difference.abs() >= t.relative
        }
        Evidence::Fisher { p, .. } => m.difference <= -t.share && p <= p_at,
    }
}
