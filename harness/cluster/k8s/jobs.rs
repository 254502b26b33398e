//! The cells a fleet's manifest holds (`shmbench k8s manifest` wrote it): each Job's cells in
//! completion-index order, from the ConfigMap its pods mount, and the size of its pods'
//! /dev/shm, so `k8s collect` can give a pod that printed nothing its cell's row.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};

use crate::k8s::yaml;
use model::config::CellConfig;
use model::kube_quantity::kube_quantity;
use results::log_lines::names_problem;

/// The cells of each Job in a manifest `shmbench k8s manifest` wrote (the ConfigMap a Job's pods
/// mount holds them, in completion-index order), and the size of its pods' /dev/shm (the
/// emptyDir's sizeLimit; None for the runtime's default).
#[derive(Default)]
pub struct JobCells(BTreeMap<String, (Vec<CellConfig>, Option<u64>)>);

impl JobCells {
    pub fn from_manifest(text: &str) -> Result<JobCells> {
        let mut maps = BTreeMap::new();
        let mut jobs = Vec::new();
        let docs = yaml::from_yaml(text).map_err(|e| {
            anyhow!("the manifest is not the YAML `shmbench k8s manifest` writes: {e}")
        })?;
        for object in docs.into_iter().filter(|d| !d.is_null()) {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            match object["kind"].as_str() {
                Some("ConfigMap") => {
                    // `cells.yaml` since manifests are YAML; `cells.json` before.
                    let data = &object["data"];
                    let text = data["cells.yaml"].as_str().or(data["cells.json"].as_str());
                    if let Some(text) = text {
                        let list = yaml::first_document(text).unwrap_or_default();
                        let cells: Vec<CellConfig> =
                            serde_json::from_value(list).with_context(|| {
                                format!("ConfigMap {name}: cells of another shmbench version")
                            })?;
                        if let Some(problem) = cells.iter().find_map(names_problem) {
                            bail!("ConfigMap {name}: {problem}");
                        }
                        maps.insert(name, cells);
                    }
                }
                Some("Job") => {
                    let volumes = object["spec"]["template"]["spec"]["volumes"].as_array();
                    let volumes = volumes.into_iter().flatten();
                    let map = volumes
                        .clone()
                        .find_map(|v| v["configMap"]["name"].as_str())
                        .map(str::to_string);
                    let shm = volumes
                        .filter_map(|v| v["emptyDir"]["sizeLimit"].as_str())
                        .find_map(kube_quantity);
                    jobs.extend(map.map(|m| (name, m, shm)));
                }
                _ => {}
            }
        }
        let cells: BTreeMap<_, _> = jobs
            .into_iter()
            .filter_map(|(job, map, shm)| Some((job, (maps.get(&map)?.clone(), shm))))
            .collect();
        if cells.is_empty() {
            bail!("the manifest holds no Job of `shmbench k8s manifest` (a Job and its cells ConfigMap)");
        }
        Ok(JobCells(cells))
    }

    /// The cell a pod of `job` at `index` ran (the pod picks it modulo the list's length).
    pub(crate) fn cell(&self, job: &str, index: u64) -> Option<&CellConfig> {
        let (cells, _) = self.0.get(job)?;
        cells.get(index as usize % cells.len().max(1))
    }

    /// The sizeLimit of the /dev/shm of the pods that ran `cell`.
    pub(crate) fn shm_of(&self, cell: &str) -> Option<u64> {
        self.0
            .values()
            .find(|(cells, _)| cells.iter().any(|c| c.cell == cell))
            .and_then(|(_, shm)| *shm)
    }
}
