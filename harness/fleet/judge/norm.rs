//! A fleet's norm for a cell: what its nodes measure there, made robust to the bad nodes among
//! them. Per value measure, the median across nodes of the node medians and a spread of
//! 1.4826 x their median absolute deviation (a standard deviation for normal values, which
//! outliers cannot widen while they are fewer than half the nodes; SuperBench drops outliers
//! until its baseline is stable, the median and MAD need no loop); for the outcome, the runs
//! and passes pooled over the nodes. The norm is computed from the fleet's own rows, or read
//! from a baseline file ([`Baseline`]) that an earlier fleet's norms were written to, so one
//! new node can be judged alone.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::rows::{Fleet, Measure};
use analysis::cell_key::CellKey;
use analysis::stats::{median_and_mad, MAD_TO_SD};

/// The median and robust spread of one measure across the nodes of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    /// 1.4826 x the median absolute deviation of the node medians.
    pub(crate) spread: f64,
    /// The nodes whose medians it is of.
    pub(crate) nodes: usize,
}

/// A cell's norm across the fleet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellNorm {
    /// The nodes that ran the cell often enough to be counted.
    pub(crate) nodes: usize,
    /// Runs and passes pooled over those nodes.
    pub(crate) runs: u64,
    pub(crate) passes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) img_per_s: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_ms_per_img: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) peak_shm_bytes: Option<Spread>,
}

impl CellNorm {
    /// The spread of a value measure (None: the outcome, or no node measured it).
    pub(crate) fn spread(&self, measure: Measure) -> Option<&Spread> {
        match measure {
            Measure::Outcome => None,
            Measure::ImgPerS => self.img_per_s.as_ref(),
            Measure::CpuMsPerImg => self.cpu_ms_per_img.as_ref(),
            Measure::PeakShmBytes => self.peak_shm_bytes.as_ref(),
        }
    }

    fn spread_mut(&mut self, measure: Measure) -> Option<&mut Option<Spread>> {
        match measure {
            Measure::Outcome => None,
            Measure::ImgPerS => Some(&mut self.img_per_s),
            Measure::CpuMsPerImg => Some(&mut self.cpu_ms_per_img),
            Measure::PeakShmBytes => Some(&mut self.peak_shm_bytes),
        }
    }

    /// The norm of `cell` over the nodes not in `left_out`, each counted where it has at least
    /// `min_runs` runs (or values of a measure). How many nodes that is stays with the norm:
    /// the judgement decides whether they are enough.
    pub(crate) fn of(fleet: &Fleet, cell: usize, left_out: &[bool], min_runs: usize) -> CellNorm {
        let counted: Vec<_> = fleet
            .ran(cell)
            .filter(|(node, c)| !left_out[*node] && c.runs >= min_runs)
            .map(|(_, c)| c)
            .collect();
        let mut norm = CellNorm {
            nodes: counted.len(),
            runs: counted.iter().map(|c| c.runs as u64).sum(),
            passes: counted.iter().map(|c| c.passes as u64).sum(),
            ..CellNorm::default()
        };
        for measure in Measure::VALUES {
            let medians: Vec<f64> = counted
                .iter()
                .filter_map(|c| c.value(measure))
                .filter(|s| s.values >= min_runs)
                .map(|s| s.median)
                .collect();
            if let (Some((median, mad)), Some(slot)) =
                (median_and_mad(&medians), norm.spread_mut(measure))
            {
                *slot = Some(Spread {
                    median,
                    spread: MAD_TO_SD * mad,
                    nodes: medians.len(),
                });
            }
        }
        norm
    }

    /// Fails on numbers no fleet can have measured (a norm read from a file).
    fn check(&self) -> Result<()> {
        if self.passes > self.runs {
            bail!("{} passes of {} runs", self.passes, self.runs);
        }
        // The exact test's table grows with the runs: a forged count must not take the
        // machine's memory (a fleet's year is a few hundred thousand runs of a cell).
        if self.runs > MAX_RUNS {
            bail!("{} runs of a cell, more than {MAX_RUNS}", self.runs);
        }
        for measure in Measure::VALUES {
            let Some(s) = self.spread(measure) else {
                continue;
            };
            let bad = |x: f64| !x.is_finite() || x < 0.0;
            if bad(s.median) || bad(s.spread) {
                bail!(
                    "{}: median {} and spread {} (both must be finite and not negative)",
                    measure.field(),
                    s.median,
                    s.spread
                );
            }
        }
        Ok(())
    }
}

/// The most runs of one cell a baseline may hold.
pub(crate) const MAX_RUNS: u64 = 10_000_000;

/// A cell of a baseline: its key, spelt out, and its norm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineCell {
    pub(crate) scenario: String,
    pub(crate) cell: String,
    /// The identity knobs by flag name, as rows record them.
    pub(crate) knobs: BTreeMap<String, String>,
    #[serde(flatten)]
    pub(crate) norm: CellNorm,
}

/// What a baseline file says it is.
pub(crate) const BASELINE_FORMAT: &str = "shmbench-fleet-baseline";
pub(crate) const BASELINE_VERSION: u32 = 1;

/// A fleet's norms, written by `fleet --write-baseline` and read by `fleet --baseline`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub(crate) format: String,
    pub(crate) version: u32,
    /// The nodes it was made from, and those of them left out as flagged.
    pub nodes: Vec<String>,
    pub left_out: Vec<String>,
    pub cells: Vec<BaselineCell>,
}

/// A cell key as a baseline spells it: scenario, name and the knobs by name.
type KeyFields = (String, String, BTreeMap<String, String>);

fn key_fields(key: &CellKey) -> KeyFields {
    let knobs = key
        .knobs()
        .map(|k| k.map(|(n, v)| (n.to_string(), v.to_string())).collect())
        .unwrap_or_default();
    (key.scenario.clone(), key.cell.clone(), knobs)
}

impl Baseline {
    /// The norms of `fleet`'s cells over its nodes, less those flagged (`left_out`).
    pub fn of(fleet: &Fleet, left_out: &[bool], min_runs: usize) -> Baseline {
        let cells = fleet
            .cells
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let (scenario, cell, knobs) = key_fields(key);
                BaselineCell {
                    scenario,
                    cell,
                    knobs,
                    norm: CellNorm::of(fleet, i, left_out, min_runs),
                }
            })
            .collect();
        let names = |keep: bool| -> Vec<String> {
            (fleet.nodes.iter().zip(left_out))
                .filter(|(_, out)| **out != keep)
                .map(|(n, _)| n.clone())
                .collect()
        };
        Baseline {
            format: BASELINE_FORMAT.into(),
            version: BASELINE_VERSION,
            nodes: names(true),
            left_out: names(false),
            cells,
        }
    }

    /// A baseline read from a file, checked: its format and version, and numbers no fleet can
    /// have measured.
    pub fn checked(self) -> Result<Baseline> {
        if self.format != BASELINE_FORMAT {
            bail!(
                "its format is '{}', not '{BASELINE_FORMAT}': give a file `shmbench fleet --write-baseline` wrote",
                self.format
            );
        }
        if self.version != BASELINE_VERSION {
            bail!(
                "version {} of the baseline format; this shmbench reads version {BASELINE_VERSION}: write the baseline again with this shmbench",
                self.version
            );
        }
        let mut seen = std::collections::HashSet::new();
        for c in &self.cells {
            c.norm
                .check()
                .with_context(|| format!("cell {}/{}", c.scenario, c.cell))?;
            if !seen.insert((&c.scenario, &c.cell, &c.knobs)) {
                bail!(
                    "cell {}/{} is in it twice with the same knobs",
                    c.scenario,
                    c.cell
                );
            }
        }
        Ok(self)
    }

    /// For each of `fleet`'s cells, its norm in this baseline (None: not in it).
    pub(crate) fn norms_for(&self, fleet: &Fleet) -> Vec<Option<CellNorm>> {
        let index: HashMap<KeyFields, &CellNorm> = self
            .cells
            .iter()
            .map(|c| {
                (
                    (c.scenario.clone(), c.cell.clone(), c.knobs.clone()),
                    &c.norm,
                )
            })
            .collect();
        fleet
            .cells
            .iter()
            .map(|key| index.get(&key_fields(key)).map(|n| (*n).clone()))
            .collect()
    }
}
