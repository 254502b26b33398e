//! `shmbench fleet`: which nodes are the odd ones out. The rows of a fleet (each naming its
//! node: `k8s collect`'s and `slurm collect`'s node, else the host) are kept per cell and node
//! as a few numbers per run ([`Runs`]); each node's medians and pass share are then judged
//! against the fleet's norm for that cell ([`super::norm`]): the median across nodes and
//! a spread made robust by the median absolute deviation, so the bad nodes themselves cannot
//! widen it, and the other nodes' pooled outcome counts. A node is flagged on a measure only
//! beyond both a statistical and a practical threshold ([`super`]).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use analysis::cell_key::CellKey;
use analysis::history::By;
use analysis::natural_order::natural_key;
use analysis::runs::Runs;
use model::estimate::median;
use results::Row;

/// What a node is judged on in each cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The share of its runs that passed.
    Outcome,
    /// Images per second of the passing runs.
    ImgPerS,
    /// CPU milliseconds per image of the passing runs.
    CpuMsPerImg,
    /// Peak /dev/shm use of the passing runs, bytes.
    PeakShmBytes,
}

impl Measure {
    /// Every measure, in the order findings and tables list them.
    pub(crate) const ALL: [Measure; 4] = [
        Measure::Outcome,
        Measure::ImgPerS,
        Measure::CpuMsPerImg,
        Measure::PeakShmBytes,
    ];

    /// The measures that are values with a median (all but the outcome).
    pub(crate) const VALUES: [Measure; 3] = [
        Measure::ImgPerS,
        Measure::CpuMsPerImg,
        Measure::PeakShmBytes,
    ];

    /// Whether a larger value is the worse one: more CPU per image or more /dev/shm is worse,
    /// fewer images per second is. Only the worse side is flagged: a node faster than the fleet
    /// is nobody's problem to drain.
    pub(crate) fn higher_is_worse(self) -> bool {
        !matches!(self, Measure::ImgPerS | Measure::Outcome)
    }

    /// Its name as JSON and the baseline file write it.
    pub(crate) fn field(self) -> &'static str {
        match self {
            Measure::Outcome => "outcome",
            Measure::ImgPerS => "img_per_s",
            Measure::CpuMsPerImg => "cpu_ms_per_img",
            Measure::PeakShmBytes => "peak_shm_bytes",
        }
    }

    /// This measure's place among [`Measure::VALUES`] (None: the outcome).
    fn value_index(self) -> Option<usize> {
        Measure::VALUES.iter().position(|m| *m == self)
    }

    /// The passing runs' values of this measure (none for the outcome). A run under software
    /// emulation (a TCG guest) has the emulator's speed and CPU, not the node's.
    fn values(self, runs: &Runs) -> Vec<f64> {
        match self {
            Measure::Outcome => Vec::new(),
            Measure::ImgPerS | Measure::CpuMsPerImg if runs.emulated() => Vec::new(),
            Measure::ImgPerS => runs.rates().into_iter().map(|(_, x)| x).collect(),
            Measure::CpuMsPerImg => runs.cpu(),
            Measure::PeakShmBytes => runs.passing_peaks(),
        }
    }
}

/// The median of a node's values of one measure in one cell, and how many values it is of.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Sample {
    pub(crate) median: f64,
    pub(crate) values: usize,
}

/// One node's runs of one cell, as the judgement needs them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NodeCell {
    pub(crate) runs: usize,
    pub(crate) passes: usize,
    /// Per measure of [`Measure::VALUES`]: its values, and their median (None: no value).
    values: [Vec<f64>; 3],
    samples: [Option<Sample>; 3],
}

impl NodeCell {
    fn of(runs: &Runs) -> NodeCell {
        let values = Measure::VALUES.map(|m| m.values(runs));
        let samples = [0, 1, 2].map(|i| {
            median(&values[i]).map(|median| Sample {
                median,
                values: values[i].len(),
            })
        });
        let passes = runs
            .outcomes()
            .iter()
            .filter(|o| o.status.is_pass())
            .count();
        NodeCell {
            runs: runs.len(),
            passes,
            values,
            samples,
        }
    }

    /// The node's median of a value measure (None: the outcome, or no value).
    pub(crate) fn value(&self, measure: Measure) -> Option<Sample> {
        measure.value_index().and_then(|i| self.samples[i])
    }

    /// The node's values of a measure (none for the outcome).
    pub(crate) fn values(&self, measure: Measure) -> &[f64] {
        measure.value_index().map_or(&[], |i| &self.values[i])
    }
}

/// The fleet's rows, per cell and node.
#[derive(Clone, Debug)]
pub struct Fleet {
    /// Node names in natural order (`gpu-9` before `gpu-17`).
    pub(crate) nodes: Vec<String>,
    /// Cells in key order.
    pub(crate) cells: Vec<CellKey>,
    /// `table[cell][node]`: that node's runs of the cell (None: it ran none).
    pub(crate) table: Vec<Vec<Option<NodeCell>>>,
    /// Rows read, those left out because they name no node, and those left out because they
    /// repeat a run already read (a file given twice, or merged into another given too).
    pub(crate) rows: usize,
    pub(crate) nameless_rows: usize,
    pub(crate) duplicate_rows: usize,
}

impl Fleet {
    /// The nodes that ran `cell` with their runs of it, by node index.
    pub(crate) fn ran(&self, cell: usize) -> impl Iterator<Item = (usize, &NodeCell)> {
        self.table[cell]
            .iter()
            .enumerate()
            .filter_map(|(node, c)| c.as_ref().map(|c| (node, c)))
    }

    /// The cells `node` ran, with its runs of each.
    pub(crate) fn ran_by(&self, node: usize) -> impl Iterator<Item = &NodeCell> {
        self.table.iter().filter_map(move |row| row[node].as_ref())
    }
}

model::choice! {
    /// Which of a row's columns names its node: what the drain and cordon lines act on, so it
    /// must be the scheduler's name for the node (`--node-name`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum NodeName {
        #[default]
        Node = "node": "The rows' node column (a Slurm task's or a pod's own node), else their host.",
        Host = "host": "The host each row was measured on, as it named itself (a FQDN where it said one).",
        Short = "short": "The node column, else the host up to its first dot (gpu01.example.com is gpu01): Slurm's and Kubernetes' usual node names.",
    }
}

impl NodeName {
    /// The node `r` was measured on, by this rule.
    pub fn of(self, r: &Row) -> String {
        match self {
            NodeName::Node => By::Node.of(r),
            NodeName::Host => r.host.clone(),
            NodeName::Short => match &r.node {
                Some(node) => node.clone(),
                None => r.host.split('.').next().unwrap_or_default().to_string(),
            },
        }
    }
}

/// A row's cell key and node, as [`Builder::keys`] computes them.
pub struct Keys {
    cell: CellKey,
    node: String,
}

/// A fleet built as rows stream by: memory grows with cells times nodes times runs' few
/// numbers, never with the rows' text.
#[derive(Default)]
pub struct Builder {
    nodes: Vec<String>,
    node_index: HashMap<String, usize>,
    cells: Vec<CellKey>,
    cell_index: HashMap<CellKey, usize>,
    groups: HashMap<(usize, usize), Runs>,
    /// Each run read, as (cell, node, run id's hash, repeat): a run counts once.
    seen: HashSet<(usize, usize, u64, u32)>,
    rows: usize,
    nameless_rows: usize,
    duplicate_rows: usize,
}

impl Builder {
    pub fn new() -> Builder {
        Builder::default()
    }

    /// What [`Builder::add_keyed`] needs of a row, computed where the row was read, its node
    /// named by `name`.
    pub fn keys(name: NodeName) -> impl Fn(&Row) -> Keys + Sync {
        move |r| Keys {
            cell: CellKey::of(r),
            node: name.of(r),
        }
    }

    pub fn add(&mut self, r: &Row) {
        self.add_keyed(&Builder::keys(NodeName::Node)(r), r);
    }

    pub fn add_keyed(&mut self, keys: &Keys, r: &Row) {
        self.rows += 1;
        if keys.node.is_empty() {
            self.nameless_rows += 1;
            return;
        }
        let node = *self.node_index.entry(keys.node.clone()).or_insert_with(|| {
            self.nodes.push(keys.node.clone());
            self.nodes.len() - 1
        });
        let cell = match self.cell_index.get(&keys.cell) {
            Some(i) => *i,
            None => {
                self.cell_index.insert(keys.cell.clone(), self.cells.len());
                self.cells.push(keys.cell.clone());
                self.cells.len() - 1
            }
        };
        let run = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            r.run_id.hash(&mut h);
            h.finish()
        };
        if !self.seen.insert((cell, node, run, r.repeat)) {
            self.duplicate_rows += 1;
            return;
        }
        self.groups.entry((cell, node)).or_default().add(r);
    }

    /// The fleet, or why there is none to judge.
    pub fn finish(self) -> Result<Fleet> {
        if self.rows == 0 {
            bail!("these files hold no rows: give the results of the fleet's runs (`slurm collect`, `k8s collect`, or each node's `run`/`matrix`)");
        }
        if self.nodes.is_empty() {
            bail!(
                "none of the {} rows names its node (the `node` column, else `host`, is empty in every row): the fleet's nodes cannot be told apart",
                self.rows
            );
        }
        let mut node_order: Vec<usize> = (0..self.nodes.len()).collect();
        node_order.sort_by_cached_key(|i| (natural_key(&self.nodes[*i]), self.nodes[*i].clone()));
        let mut cell_order: Vec<usize> = (0..self.cells.len()).collect();
        cell_order.sort_by(|a, b| self.cells[*a].cmp(&self.cells[*b]));
        let mut groups = self.groups;
        let table = cell_order
            .iter()
            .map(|c| {
                node_order
                    .iter()
                    .map(|n| groups.remove(&(*c, *n)).map(|runs| NodeCell::of(&runs)))
                    .collect()
            })
            .collect();
        Ok(Fleet {
            nodes: node_order.iter().map(|i| self.nodes[*i].clone()).collect(),
            cells: cell_order.iter().map(|i| self.cells[*i].clone()).collect(),
            table,
            rows: self.rows,
            nameless_rows: self.nameless_rows,
            duplicate_rows: self.duplicate_rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_named_by_the_column_asked_for() {
        let mut row = Row {
            host: "gpu01.example.com".into(),
            ..Row::default()
        };
        assert_eq!(NodeName::Node.of(&row), "gpu01.example.com");
        assert_eq!(NodeName::Short.of(&row), "gpu01");
        row.node = Some("gpu-01".into());
        assert_eq!(NodeName::Node.of(&row), "gpu-01");
        assert_eq!(NodeName::Short.of(&row), "gpu-01", "Slurm's own name wins");
        assert_eq!(NodeName::Host.of(&row), "gpu01.example.com");
    }
    use model::record::Status;

    fn row(node: Option<&str>, host: &str, status: Status, rate: f64) -> Row {
        Row {
            scenario: "s".into(),
            cell: "c".into(),
            host: host.into(),
            node: node.map(String::from),
            status,
            img_per_s: Some(rate),
            cpu_ms_per_img: Some(2.0),
            peak_shm_bytes: 1000,
            ..Row::default()
        }
    }

    #[test]
    fn rows_are_kept_per_cell_and_node_named_by_node_else_host() {
        let mut b = Builder::new();
        let second = Row {
            run_id: "run-2".into(),
            ..row(Some("gpu-17"), "pod-b", Status::Pass, 300.0)
        };
        b.add(&row(Some("gpu-17"), "pod-a", Status::Pass, 100.0));
        b.add(&second);
        // The same run again (a file given twice): counted once.
        b.add(&second);
        b.add(&row(None, "gpu-9", Status::Sigbus, 5.0));
        b.add(&row(None, "", Status::Pass, 1.0));
        let fleet = b.finish().unwrap();
        assert_eq!(fleet.nodes, ["gpu-9", "gpu-17"]);
        assert_eq!(
            (fleet.rows, fleet.nameless_rows, fleet.duplicate_rows),
            (5, 1, 1)
        );
        let gpu17 = fleet.table[0][1].as_ref().unwrap();
        assert_eq!((gpu17.runs, gpu17.passes), (2, 2));
        assert_eq!(gpu17.value(Measure::ImgPerS).unwrap().median, 200.0);
        // A crashed run has no rate: gpu-9 ran the cell, measured nothing.
        let gpu9 = fleet.table[0][0].as_ref().unwrap();
        assert_eq!((gpu9.runs, gpu9.passes), (1, 0));
        assert_eq!(gpu9.value(Measure::ImgPerS), None);
        assert_eq!(gpu9.value(Measure::Outcome), None);
    }

    #[test]
    fn no_rows_or_no_node_names_is_an_error_that_says_so() {
        let empty = Builder::new().finish().unwrap_err().to_string();
        assert!(empty.contains("no rows"), "{empty}");
        let mut b = Builder::new();
        b.add(&row(None, "", Status::Pass, 1.0));
        let nameless = b.finish().unwrap_err().to_string();
        assert!(nameless.contains("names its node"), "{nameless}");
    }
}
