//! `shmbench history`: the same cells across many runs (kernels, drivers, engines, torch
//! profiles, hosts), ordered by an environment field, one trend per cell, and the first
//! environment where a cell stepped.
//!
//! A metric's steps are the change points of each cell's run medians ([`super::change_points`]).
//! An outcome step is simply the first run whose most common outcome differs from the run before.

use std::collections::HashMap;

use anyhow::{bail, Result};
use serde::Serialize;

use super::cell_key::{CellKey, Varying};
use super::change_points;
use super::compare::{Match, Thresholds};
use super::history_against::{AgainstReference, Collector, REFERENCE};
pub(crate) use super::natural_order::natural_key;
use super::outcomes::{self, Shares};
use super::runs::{GroupedRuns, Runs};
use super::summary::Outcome;
use model::estimate::median;
use results::Row;

model::choice! {
    /// The environment field runs are ordered by.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum By {
        Kernel = "kernel",
        Driver = "driver": "The GPU driver.",
        Engine = "engine": "The container engine (Docker or Podman) and its version.",
        Torch = "torch": "The torch allocation profile.",
        TorchVersion = "torch-version": "The torch version of torch cells (`emulated` for the emulation).",
        Host = "host",
        Node = "node": "The Kubernetes node (`k8s collect` rows; the host elsewhere).",
        Runtime = "runtime": "The container runtime: a node's (`containerd://1.7.13`), or a container cell's engine and OCI runtime (`docker://20.10.24+dfsg1 runsc 0.0~20221219.0`).",
        Shm = "shm": "The /dev/shm size.",
        Time = "time": "When the run started.",
    }
}

/// A container row's engine column: `podman://4.3.1`, `podman://4.3.1 rootless`.
pub(crate) fn engine_column(r: &Row) -> Option<String> {
    let version = r.docker_version.as_ref()?;
    Some(match r.docker_rootless {
        Some(true) => format!("{}://{version} rootless", r.added.engine),
        _ => format!("{}://{version}", r.added.engine),
    })
}

impl By {
    /// The value of this field in a row.
    pub fn of(self, r: &Row) -> String {
        match self {
            By::Kernel => r.kernel.clone(),
            By::Driver => r.gpu_driver.clone().unwrap_or_else(|| "none".into()),
            By::Engine => engine_column(r).unwrap_or_else(|| "none".into()),
            By::Torch => r.torch.to_string(),
            By::TorchVersion => r.torch_version.clone().unwrap_or_else(|| "emulated".into()),
            By::Host => r.host.clone(),
            By::Node => r.node.clone().unwrap_or_else(|| r.host.clone()),
            By::Runtime => r
                .container_runtime
                .clone()
                .or_else(|| {
                    let engine = engine_column(r)?;
                    Some(match &r.docker_oci_runtime {
                        Some(oci) => format!("{engine} {oci}"),
                        None => engine,
                    })
                })
                .unwrap_or_else(|| "none".into()),
            By::Shm => r.shm_bytes.unwrap_or(r.shm_seen_bytes).to_string(),
            By::Time => r.started_at.clone(),
        }
    }

    /// The cell-key field that varies along this one, if any.
    fn varying(self) -> Option<Varying> {
        match self {
            By::Shm => Some(Varying::Shm),
            By::Torch | By::TorchVersion => Some(Varying::Torch),
            By::Kernel => Some(Varying::Kernel),
            By::Runtime => Some(Varying::Runtime),
            By::Engine => Some(Varying::Engine),
            _ => None,
        }
    }
}

model::choice! {
    /// The measure a history follows.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Metric {
        ImgPerS = "img-per-s": "Images per second of the passing runs.",
        CpuPerImage = "cpu-per-image": "CPU milliseconds per image of the passing runs (work, not wall time).",
        InstructionsPerImage = "instructions-per-image": "Instructions per image of the passing runs (hardware counters, where they exist).",
    }
}

impl Metric {
    /// The passing runs' values.
    fn of(self, runs: &Runs) -> Vec<f64> {
        match self {
            Metric::ImgPerS => runs.rates().into_iter().map(|(_, x)| x).collect(),
            Metric::CpuPerImage => runs.cpu(),
            Metric::InstructionsPerImage => runs.instructions(),
        }
    }
}

/// One run of the history.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub label: String,
    pub run_id: String,
    pub host: String,
    pub started_at: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub median: Option<f64>,
    pub outcome: Outcome,
    /// Why its usual outcome ended so (`explain`'s cause), when its rows say it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// Every run's outcome, for judging a change of outcome between points.
    #[serde(skip)]
    pub outcomes: Vec<Outcome>,
    /// Variance of the passing repeats (for the penalty).
    pub variance: Option<f64>,
    pub runs: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Trend {
    pub cell: String,
    /// The cell's key, without the field the history runs along.
    #[serde(skip)]
    pub key: CellKey,
    /// One per run of the history (None: the cell was not in that run).
    pub points: Vec<Option<Point>>,
    /// Runs (indices) where the metric stepped, with the relative step.
    pub rate_steps: Vec<(usize, f64)>,
    /// Runs where the outcomes changed beyond chance, with before and after.
    pub outcome_steps: Vec<OutcomeStep>,
    /// Runs whose cause differs from the point before's: (run, before, after).
    pub cause_changes: Vec<(usize, String, String)>,
    /// Neighbouring points whose runs are too few to judge their outcomes, those of them whose
    /// usual outcomes differ, and the pairs whose outcomes differ within chance.
    pub outcomes_unjudged: usize,
    pub outcomes_unjudged_differ: usize,
    pub outcomes_within_chance: usize,
}

/// A change of outcome between two neighbouring points, judged beyond chance.
#[derive(Clone, Debug, Serialize)]
pub struct OutcomeStep {
    /// The run (index) where it changed.
    pub at: usize,
    pub before: Shares,
    pub after: Shares,
    /// The tests' p-values: Fisher's of the shares, the rank test's of the crash steps (None:
    /// too few crashed runs a side).
    pub share_p: Option<f64>,
    pub step_p: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub by: By,
    pub metric: Metric,
    pub runs: Vec<Run>,
    pub trends: Vec<Trend>,
    /// By runtime: each OCI runtime's column judged against the reference's with `compare`'s
    /// tests (None along other fields).
    pub against: Option<AgainstReference>,
}

/// A row's cell key and run, as [`Builder::keys`] computes them.
pub struct Keys {
    cell: CellKey,
    run: (String, String, String),
}

/// A history built as rows stream by: each (cell, run) keeps a few numbers per row, so a
/// fleet's year (a million rows) takes memory that grows with cells times runs, not rows.
pub struct Builder {
    by: By,
    metric: Metric,
    matching: Match,
    threshold: f64,
    /// Runs in order of first appearance, keyed by host, run id and the field's value (one run
    /// may span several: a fleet's collected rows, one per node).
    runs: Vec<Run>,
    run_index: HashMap<(String, String, String), usize>,
    /// Cells (key and name) in order of first appearance, and each one's runs by the run
    /// they belong to.
    cells: Vec<(CellKey, String)>,
    cell_index: HashMap<CellKey, usize>,
    groups: Vec<GroupedRuns>,
    against: Option<Collector>,
}

impl Builder {
    pub fn new(by: By, metric: Metric, matching: Match, threshold: f64) -> Builder {
        Builder {
            against: (by == By::Runtime).then(|| Collector::new(REFERENCE)),
            by,
            metric,
            matching,
            threshold,
            runs: Vec::new(),
            run_index: HashMap::new(),
            cells: Vec::new(),
            cell_index: HashMap::new(),
            groups: Vec::new(),
        }
    }

    /// Judges a runtime history's columns against this OCI runtime's (default: runc).
    pub fn against(mut self, reference: &str) -> Builder {
        self.against = self.against.map(|_| Collector::new(reference));
        self
    }

    /// What [`Builder::add_keyed`] needs of a row: its cell key and its run (host, run id and
    /// the field's value). A function of the row alone, so it can run where the row was read.
    pub fn keys(&self) -> impl Fn(&Row) -> Keys + Sync {
        let (by, matching) = (self.by, self.matching);
        move |r| Keys {
            cell: matching.key(r, by.varying()),
            run: (r.host.clone(), r.run_id.clone(), by.of(r)),
        }
    }

    /// Adds a row with what [`Builder::keys`] computed of it.
    pub fn add_keyed(&mut self, keys: &Keys, r: &Row) {
        let run = match self.run_index.get(&keys.run) {
            Some(i) => *i,
            None => {
                self.runs.push(Run {
                    label: keys.run.2.clone(),
                    run_id: r.run_id.clone(),
                    host: r.host.clone(),
                    started_at: r.started_at.clone(),
                });
                self.run_index.insert(keys.run.clone(), self.runs.len() - 1);
                self.runs.len() - 1
            }
        };
        let key = &keys.cell;
        let cell = match self.cell_index.get(key) {
            Some(i) => *i,
            None => {
                self.cell_index.insert(key.clone(), self.cells.len());
                self.cells.push((key.clone(), r.cell.clone()));
                self.groups.push(GroupedRuns::default());
                self.cells.len() - 1
            }
        };
        // A history of more than 4 billion runs is not one this machine holds.
        self.groups[cell].add(run as u32, r);
        if let Some(against) = &mut self.against {
            against.add(cell, run, r, engine_column(r));
        }
    }

    pub fn finish(mut self) -> Result<History> {
        // Runs ordered by the field (versions by their numbers), then by start.
        let labels: Vec<_> = self.runs.iter().map(|r| natural_key(&r.label)).collect();
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_by(|a, b| {
            let by_label = labels[*a].cmp(&labels[*b]);
            let (a, b) = (&self.runs[*a], &self.runs[*b]);
            by_label
                .then(a.started_at.cmp(&b.started_at))
                .then(a.host.cmp(&b.host))
                .then(a.run_id.cmp(&b.run_id))
        });
        if order.len() < 2 {
            bail!(
                "a history needs at least two runs; these files hold {}",
                order.len()
            );
        }
        let runs: Vec<Run> = order.iter().map(|i| self.runs[*i].clone()).collect();
        let thresholds = Thresholds {
            rate: self.threshold,
            ..Thresholds::default()
        };
        let against = (self.against.as_ref())
            .map(|a| {
                // Along runtimes: a few runs, each point's runs looked up by the judgement.
                let groups: HashMap<(usize, usize), Runs> = (self.groups.iter().enumerate())
                    .flat_map(|(cell, runs)| {
                        (runs.clone().into_groups()).map(move |(run, r)| ((cell, run as usize), r))
                    })
                    .collect();
                a.judge(&self.cells, &groups, &order, thresholds)
            })
            .transpose()?;
        // Where each run goes in the order.
        let mut place = vec![0; order.len()];
        for (at, run) in order.iter().enumerate() {
            place[*run] = at;
        }
        let mut trends = Vec::new();
        let groups = std::mem::take(&mut self.groups);
        for ((key, cell), runs) in self.cells.into_iter().zip(groups) {
            let mut points: Vec<Option<Point>> = vec![None; order.len()];
            for (run, mine) in runs.into_groups() {
                points[place[run as usize]] = Some(point(&mine, self.metric));
            }
            // Runtimes have no order: each is judged against the reference instead.
            let threshold = against.is_none().then_some(self.threshold);
            trends.push(trend(key, cell, points, threshold));
        }
        Ok(History {
            by: self.by,
            metric: self.metric,
            runs,
            trends,
            against,
        })
    }
}

/// One cell in one run.
fn point(runs: &Runs, metric: Metric) -> Point {
    // A TCG guest's speed is the emulator's: its outcome counts, its rate does not.
    let values = match runs.emulated() {
        true => Vec::new(),
        false => metric.of(runs),
    };
    let variance = change_points::variance(&values);
    Point {
        median: median(&values),
        outcome: runs.outcome(),
        cause: runs.cause(),
        outcomes: runs.outcomes(),
        variance,
        runs: runs.len(),
    }
}

/// A cell's trend from its points: where its outcome changed and where its metric stepped.
/// `threshold`: None along a field with no order (runtimes), where a point is no step from its
/// neighbour and none is looked for.
fn trend(key: CellKey, cell: String, points: Vec<Option<Point>>, threshold: Option<f64>) -> Trend {
    let present: Vec<(usize, &Point)> = match threshold {
        Some(_) => (points.iter().enumerate())
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
            .collect(),
        None => Vec::new(),
    };
    let mut outcome_steps = Vec::new();
    let (mut outcomes_unjudged, mut outcomes_unjudged_differ, mut outcomes_within_chance) =
        (0, 0, 0);
    for pair in present.windows(2) {
        let j = outcomes::judge(&pair[0].1.outcomes, &pair[1].1.outcomes);
        let differ = pair[0].1.outcome != pair[1].1.outcome;
        match (j.changed, j.judged) {
            (true, _) => outcome_steps.push(OutcomeStep {
                at: pair[1].0,
                share_p: j.share_p,
                step_p: j.step_p,
                before: j.baseline,
                after: j.candidate,
            }),
            (false, false) => {
                outcomes_unjudged += 1;
                outcomes_unjudged_differ += usize::from(differ);
            }
            (false, true) if differ => outcomes_within_chance += 1,
            _ => {}
        }
    }
    let cause_changes = (present.windows(2))
        .filter_map(|w| Some((w[0].1.cause.as_ref()?, w[1].1.cause.as_ref()?, w[1].0)))
        .filter(|(a, b, _)| a != b)
        .map(|(a, b, at)| (at, a.clone(), b.clone()))
        .collect();
    let rated: Vec<(usize, f64, Option<f64>)> = present
        .iter()
        .filter_map(|(i, p)| p.median.map(|m| (*i, m, p.variance)))
        .collect();
    let values: Vec<f64> = rated.iter().map(|(_, m, _)| *m).collect();
    let at: Vec<usize> = rated.iter().map(|(i, _, _)| *i).collect();
    let variances: Vec<f64> = rated.iter().filter_map(|(_, _, v)| *v).collect();
    let rate_steps =
        (threshold.map(|t| change_points::steps(&values, &at, &variances, t))).unwrap_or_default();
    Trend {
        cell,
        key,
        points,
        rate_steps,
        outcome_steps,
        cause_changes,
        outcomes_unjudged,
        outcomes_unjudged_differ,
        outcomes_within_chance,
    }
}
