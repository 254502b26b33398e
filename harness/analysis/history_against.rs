//! A runtime history's columns judged against the reference OCI runtime's column (runc unless
//! asked otherwise) under the same engine on the same host, cell by cell, with `compare`'s own
//! tests: outcomes by Fisher's exact test and the rank test of the crash steps, img/s, CPU and
//! instructions per image by the bootstrap interval of the change of medians.
//!
//! A history's steps follow an ordered axis (kernels, versions, time) from neighbour to
//! neighbour. Runtimes have no order: gVisor's column next to crun's in the alphabet says
//! nothing, so each is judged against the runtime everyone measures against, as `compare` would
//! judge the two files, and where the repeats cannot tell it says so.

use std::collections::HashMap;

use serde::Serialize;

use super::cell_key::CellKey;
use super::compare::{compare_summaries, Comparison, Thresholds};
use super::runs::Runs;
use super::summary::summarize_runs;
use results::Row;

/// The OCI runtime a runtime history judges the others against unless told.
pub const REFERENCE: &str = "runc";

/// Where a column sits among the runtimes: the host and engine it ran under, and the name of
/// its OCI runtime as the runtime's binary gave it (`runsc`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Side {
    /// The host, and the engine with its version and whether rootless, each compared apart.
    host: String,
    engine: String,
    oci: String,
    /// The run it came from: a reference of the same run (one matrix over runtimes) first.
    run_id: String,
}

impl Side {
    /// None for a row no container engine ran (a host cell, a Kubernetes node's row).
    fn of(r: &Row, engine: Option<String>) -> Option<Side> {
        // A node's runtime (a Kubernetes row's `containerd://...`) heads its column: not a
        // container engine's OCI runtime, so not judged as one.
        if r.container_runtime.is_some() {
            return None;
        }
        let oci = r.docker_oci_runtime.as_deref()?.split_whitespace().next()?;
        Some(Side {
            host: r.host.clone(),
            engine: engine?,
            oci: oci.to_string(),
            run_id: r.run_id.clone(),
        })
    }

    fn beside(&self, other: &Side) -> bool {
        (&self.host, &self.engine) == (&other.host, &other.engine)
    }
}

/// One cell of one column, against the same cell of the column it is judged against.
#[derive(Clone, Debug, Serialize)]
pub struct Against {
    pub cell: String,
    /// The two columns (indices into the history's runs, in its order).
    pub column: usize,
    pub reference: usize,
    pub comparison: Comparison,
}

/// What the judgement against the reference found, for the history to carry.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AgainstReference {
    /// The reference OCI runtime's name.
    pub reference: String,
    pub thresholds_rate: f64,
    pub cells: Vec<Against>,
    /// Columns with no reference column under their engine on their host (judged against
    /// nothing, and said so).
    pub without_reference: Vec<usize>,
}

/// Gathers, as rows stream by, what the judgement needs beyond the history's own groups: each
/// column's side and each (cell, column)'s first row (a summary's knobs and names).
pub(crate) struct Collector {
    reference: String,
    sides: HashMap<usize, Option<Side>>,
    firsts: HashMap<(usize, usize), Row>,
}

impl Collector {
    pub(crate) fn new(reference: &str) -> Collector {
        Collector {
            reference: reference.to_string(),
            sides: HashMap::new(),
            firsts: HashMap::new(),
        }
    }

    /// A row of `cell` in column `run` (`engine`: the row's engine column, if a container's).
    pub(crate) fn add(&mut self, cell: usize, run: usize, r: &Row, engine: Option<String>) {
        self.sides.entry(run).or_insert_with(|| Side::of(r, engine));
        self.firsts.entry((cell, run)).or_insert_with(|| r.clone());
    }

    /// Each column (`order`: the history's columns as indices of the collected runs) against its
    /// reference, every cell the two share.
    pub(crate) fn judge(
        &self,
        cells: &[(CellKey, String)],
        groups: &HashMap<(usize, usize), Runs>,
        order: &[usize],
        thresholds: Thresholds,
    ) -> anyhow::Result<AgainstReference> {
        let side = |column: usize| self.sides.get(&order[column]).and_then(Option::as_ref);
        let mut present: Vec<&str> = (0..order.len())
            .filter_map(|c| Some(side(c)?.oci.as_str()))
            .collect();
        present.sort_unstable();
        present.dedup();
        if !present.is_empty() && !present.contains(&self.reference.as_str()) {
            anyhow::bail!(
                "--against {:?}: no column of these runs ran under that OCI runtime; they ran under {} (the name as the runtime's binary gives it, without its version)",
                self.reference,
                (present.iter().map(|p| format!("{p:?}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut found = AgainstReference {
            reference: self.reference.clone(),
            thresholds_rate: thresholds.rate,
            ..AgainstReference::default()
        };
        for column in 0..order.len() {
            let Some(mine) = side(column).filter(|s| s.oci != self.reference) else {
                continue;
            };
            // A reference column under the same engine on the same host: of the same run if
            // there is one, else the latest.
            let references: Vec<usize> = (0..order.len())
                .filter(|c| side(*c).is_some_and(|s| s.oci == self.reference && s.beside(mine)))
                .collect();
            let reference = (references.iter())
                .find(|c| side(**c).is_some_and(|s| s.run_id == mine.run_id))
                .or(references.last())
                .copied();
            let Some(reference) = reference else {
                found.without_reference.push(column);
                continue;
            };
            for (cell, (key, name)) in cells.iter().enumerate() {
                let summary = |column: usize| {
                    let runs = groups.get(&(cell, order[column]))?.clone();
                    let first = self.firsts.get(&(cell, order[column]))?;
                    Some(summarize_runs(key.clone(), first, runs))
                };
                let (Some(base), Some(cand)) = (summary(reference), summary(column)) else {
                    continue;
                };
                let comparison = compare_summaries(&[base], &[cand], thresholds).remove(0);
                found.cells.push(Against {
                    cell: name.clone(),
                    column,
                    reference,
                    comparison,
                });
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell_key::Varying;
    use crate::compare::{compare, Match, Verdict};
    use model::knob_types::EngineKind;

    /// Runs of one passing seed-fixture cell in a container of `engine` under `oci`, at these
    /// img/s.
    fn runs(engine: EngineKind, oci: &str, rates: &[f64]) -> Vec<Row> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let rows = results::csv::read(std::path::Path::new(path)).unwrap();
        let mut pass = rows.iter().find(|r| r.status.is_pass()).unwrap().clone();
        pass.docker_version = Some("20.10.24".into());
        pass.docker_oci_runtime = Some(format!("{oci} 1.0"));
        pass.added.engine = engine;
        pass.added.oci_runtime = oci.parse().unwrap();
        (rates.iter().enumerate())
            .map(|(i, rate)| Row {
                repeat: i as u32 + 1,
                img_per_s: Some(*rate),
                cpu_ms_per_img: Some(2.0 * 1000.0 / rate + i as f64 * 0.001),
                ..pass.clone()
            })
            .collect()
    }

    /// Each side's rows a column of their own, in the order given, judged against `reference`.
    fn judged(sides: &[&[Row]], reference: &str) -> AgainstReference {
        let mut collector = Collector::new(reference);
        let key = Match::Config.key(&sides[0][0], Some(Varying::Runtime));
        let mut groups: HashMap<(usize, usize), Runs> = HashMap::new();
        for (run, rows) in sides.iter().enumerate() {
            for r in rows.iter() {
                assert_eq!(Match::Config.key(r, Some(Varying::Runtime)), key);
                groups.entry((0, run)).or_default().add(r);
                let engine = format!("{:?}://20.10.24", r.added.engine).to_lowercase();
                collector.add(0, run, r, Some(engine));
            }
        }
        let order: Vec<usize> = (0..sides.len()).collect();
        let cells = [(key, "cell".to_string())];
        collector
            .judge(&cells, &groups, &order, Thresholds::default())
            .unwrap()
    }

    #[test]
    fn each_runtime_is_judged_against_runc_under_its_engine_as_compare_judges_them() {
        let runc = runs(
            EngineKind::Docker,
            "runc",
            &[1000.0, 1010.0, 990.0, 1005.0, 995.0],
        );
        let runsc = runs(
            EngineKind::Docker,
            "runsc",
            &[400.0, 410.0, 390.0, 405.0, 395.0],
        );
        let podman_crun = runs(EngineKind::Podman, "crun", &[900.0, 910.0]);
        let against = judged(&[&runc, &runsc, &podman_crun], REFERENCE);
        assert_eq!(against.cells.len(), 1, "{against:?}");
        assert_eq!(
            (against.cells[0].column, against.cells[0].reference),
            (1, 0)
        );
        let judged = &against.cells[0].comparison;
        let by_compare = &compare(&runc, &runsc, Thresholds::default(), Match::Name)[0];
        assert_eq!(judged.verdict, Verdict::Regressed);
        assert_eq!(judged.verdict, by_compare.verdict);
        assert_eq!(judged.change_ci, by_compare.change_ci);
        assert_eq!(judged.cpu_change_ci, by_compare.cpu_change_ci);
        // Podman has no runc column here: its crun is judged against nothing, never Docker's.
        assert_eq!(against.without_reference, vec![2]);
    }

    #[test]
    fn one_run_a_side_is_not_judged_and_another_reference_can_be_asked() {
        let runc = runs(EngineKind::Docker, "runc", &[1000.0]);
        let runsc = runs(EngineKind::Docker, "runsc", &[400.0]);
        let c = &judged(&[&runc, &runsc], REFERENCE).cells[0].comparison;
        assert_eq!(c.verdict, Verdict::Undecided);
        assert!(c.change_ci.is_none());
        let against = judged(&[&runc, &runsc], "runsc");
        assert_eq!(against.reference, "runsc");
        assert_eq!(
            (against.cells[0].column, against.cells[0].reference),
            (0, 1)
        );
        assert!(against.cells[0].comparison.change.unwrap() > 1.0);
        // A name no column ran under is an error naming the ones they did.
        let mut collector = Collector::new("RUNC");
        let key = Match::Config.key(&runc[0], Some(Varying::Runtime));
        let mut groups: HashMap<(usize, usize), Runs> = HashMap::new();
        groups.entry((0, 0)).or_default().add(&runc[0]);
        collector.add(0, 0, &runc[0], Some("docker://20.10.24".into()));
        let cells = [(key, "cell".to_string())];
        let error = collector
            .judge(&cells, &groups, &[0], Thresholds::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains(r#"they ran under "runc""#), "{error}");
    }
}
