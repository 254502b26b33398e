//! Rows from a fleet's pods (`shmbench k8s collect`): the records the pods printed, found in
//! their logs, keyed by pod and node; and for a pod ended from outside (OOMKilled, evicted), which
//! prints nothing, a row whose status is read from the API's pod status and whose cell is the one
//! its Job's completion index picks in the manifest that made it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::row::Row;
use crate::model::config::CellConfig;
use crate::model::fingerprint::Fingerprint;
use crate::model::name;
use crate::model::pod::{NodeInfo, PodStatus};
use crate::model::record::{CellRecord, Status};

/// A record found in a log, with the pod a `kubectl logs --prefix` line named.
pub struct Logged {
    pub pod: Option<String>,
    pub record: CellRecord,
}

/// The records in a log: every line that is a cell record, bare or behind the prefix
/// `kubectl logs --prefix` writes (`[pod/NAME/CONTAINER] `). Lines that look like a record but
/// are not one of this shmbench's are named in the second list.
pub fn records_in(text: &str) -> (Vec<Logged>, Vec<String>) {
    let mut found = Vec::new();
    let mut bad = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (pod, body) = match line.strip_prefix("[pod/").and_then(|r| r.split_once("] ")) {
            Some((who, body)) => (who.split('/').next().map(str::to_string), body),
            None => (None, line),
        };
        let body = body.trim();
        if !(body.starts_with('{') && body.contains("\"config\"")) {
            continue;
        }
        match serde_json::from_str::<CellRecord>(body) {
            Ok(record) => match names_problem(&record.config) {
                // Names become paths beside the results: a log is untrusted data.
                Some(problem) => bad.push(format!("line {}: {problem}", n + 1)),
                None => found.push(Logged { pod, record }),
            },
            Err(e) => bad.push(format!("line {}: {e}", n + 1)),
        }
    }
    (found, bad)
}

/// Why a record's scenario or cell name may not name a file, if it may not.
fn names_problem(config: &CellConfig) -> Option<String> {
    [("scenario", &config.scenario), ("cell", &config.cell)]
        .into_iter()
        .find_map(|(what, value)| {
            name::problem(value).map(|p| format!("{what} name {value:?} {p}"))
        })
}

/// The cells of each Job in a manifest `shmbench k8s manifest` wrote (the ConfigMap a Job's pods
/// mount holds them, in completion-index order), and the size of its pods' /dev/shm (the
/// emptyDir's sizeLimit; None for the runtime's default).
#[derive(Default)]
pub struct JobCells(BTreeMap<String, (Vec<CellConfig>, Option<u64>)>);

/// A Kubernetes quantity in bytes (`2048Mi`, `2Gi`, `1000000`); None for other forms.
fn quantity_bytes(q: &str) -> Option<u64> {
    let units = [
        ("Ki", 1u64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(suffix, scale)| Some((q.strip_suffix(suffix)?, *scale)))
        .unwrap_or((q, 1));
    number.parse::<u64>().ok().map(|n| n * scale)
}

impl JobCells {
    pub fn from_manifest(text: &str) -> Result<JobCells> {
        let mut maps = BTreeMap::new();
        let mut jobs = Vec::new();
        for doc in text.split("\n---") {
            let doc = doc.trim().trim_start_matches("---").trim();
            if doc.is_empty() {
                continue;
            }
            let object: Value = serde_json::from_str(doc)
                .context("the manifest is not the JSON documents `shmbench k8s manifest` writes")?;
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            match object["kind"].as_str() {
                Some("ConfigMap") => {
                    if let Some(cells) = object["data"]["cells.json"].as_str() {
                        let cells: Vec<CellConfig> =
                            serde_json::from_str(cells).with_context(|| {
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
                        .find_map(quantity_bytes);
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
    fn cell(&self, job: &str, index: u64) -> Option<&CellConfig> {
        let (cells, _) = self.0.get(job)?;
        cells.get(index as usize % cells.len().max(1))
    }

    /// The sizeLimit of the /dev/shm of the pods that ran `cell`.
    fn shm_of(&self, cell: &str) -> Option<u64> {
        self.0
            .values()
            .find(|(cells, _)| cells.iter().any(|c| c.cell == cell))
            .and_then(|(_, shm)| *shm)
    }
}

/// What the API says about the fleet, beside the logs.
#[derive(Default)]
pub struct Fleet {
    pub pods: Vec<PodStatus>,
    pub nodes: Vec<NodeInfo>,
    pub jobs: Option<JobCells>,
}

/// The rows, each with the record it came from (None for a pod that left none), and what was
/// noticed on the way.
pub struct Collected {
    pub rows: Vec<(Row, Option<CellRecord>)>,
    pub notes: Vec<String>,
}

/// One pod's result before it is numbered among the cell's repeats.
struct Entry {
    order: (String, u64, String),
    row: Row,
    record: Option<CellRecord>,
}

/// The rows of a fleet run: one per pod record, one per pod ended from outside.
pub fn collect(
    logged: Vec<Logged>,
    fleet: &Fleet,
    run_id: &str,
    started_at: &str,
) -> Result<Collected> {
    let mut notes = Vec::new();
    let mut entries = Vec::new();
    let mut seen = BTreeSet::new();
    for Logged { pod, record } in logged {
        let name = pod
            .or_else(|| record.pod.as_ref().map(|p| p.pod.clone()))
            .unwrap_or_default();
        if !name.is_empty() && !seen.insert(name.clone()) {
            notes.push(format!(
                "pod {name}: its record appears twice in the logs; counted once"
            ));
            continue;
        }
        let status = fleet.pods.iter().find(|p| p.name == name);
        let info = record.pod.as_ref();
        let node = info
            .and_then(|p| p.node.clone())
            .or_else(|| status.and_then(|s| s.node.clone()));
        let mut fp = info.map(|p| p.fingerprint.clone()).unwrap_or_default();
        if let Some(node) = &node {
            fp.host = node.clone();
        }
        let mut row = Row::new(&record, &fp, run_id, started_at);
        place(&mut row, node, &name, fleet);
        let index = info
            .map(|p| p.completion_index)
            .or_else(|| status.and_then(|s| s.completion_index))
            .unwrap_or(0);
        let job = status.and_then(|s| s.job.clone()).unwrap_or_default();
        entries.push(Entry {
            order: (job, index, name),
            row,
            record: Some(record),
        });
    }
    let mut unplaced = Vec::new();
    for status in &fleet.pods {
        if seen.contains(&status.name) || !status.shmbench {
            continue;
        }
        let Some((outcome, message)) = ending(status) else {
            let why = match status.phase.as_str() {
                "Succeeded" => {
                    "its record is not in the logs given (rotated, or not collected): no row"
                }
                _ => "no result yet",
            };
            notes.push(format!("pod {}: {}, {why}", status.name, status.phase));
            continue;
        };
        let (job, index) = (
            status.job.clone().unwrap_or_default(),
            status.completion_index.unwrap_or(0),
        );
        let Some(jobs) = &fleet.jobs else {
            unplaced.push(format!("{} ({outcome})", status.name));
            continue;
        };
        let Some(config) = jobs.cell(&job, index) else {
            notes.push(format!(
                "pod {}: its Job {job} is not in the manifest given; skipped",
                status.name
            ));
            continue;
        };
        let record = CellRecord::failed_to_run(config.clone(), outcome, message);
        let node = status.node.clone();
        let fp = node_fingerprint(node.as_deref(), &fleet.nodes);
        let mut row = Row::new(&record, &fp, run_id, started_at);
        place(&mut row, node, &status.name, fleet);
        notes.push(format!(
            "pod {}: {outcome} from its status ({})",
            status.name, record.message
        ));
        entries.push(Entry {
            order: (job, index, status.name.clone()),
            row,
            record: None,
        });
    }
    if !unplaced.is_empty() {
        bail!(
            "{} pods ended without a record: {}. Pass --manifest FILE (the manifest their Jobs were made from) so each gets its cell's row",
            unplaced.len(),
            unplaced.join(", ")
        );
    }
    entries.sort_by(|a, b| a.order.cmp(&b.order));
    let mut runs: BTreeMap<(String, String), u32> = BTreeMap::new();
    let rows = entries
        .into_iter()
        .map(|mut e| {
            let n = runs
                .entry((e.row.scenario.clone(), e.row.cell.clone()))
                .or_default();
            *n += 1;
            e.row.repeat = *n;
            (e.row, e.record)
        })
        .collect();
    Ok(Collected { rows, notes })
}

/// How the pod ended, read from the API alone (for a pod that left no record); None while
/// it has not ended.
fn ending(pod: &PodStatus) -> Option<(Status, String)> {
    let said = |m: &Option<String>| m.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
    if pod.reason.as_deref() == Some("Evicted") {
        return Some((
            Status::Evicted,
            format!("evicted by the kubelet{}", said(&pod.message)),
        ));
    }
    if let Some(t) = &pod.terminated {
        if t.reason.as_deref() == Some("OOMKilled") {
            return Some((
                Status::Oom,
                format!(
                    "OOMKilled (exit {}): the pod's memory limit, which its /dev/shm pages count against",
                    t.exit_code
                ),
            ));
        }
        if t.exit_code != 0 {
            let why = t.reason.clone().unwrap_or_else(|| "Error".into());
            return Some((
                Status::Error,
                format!(
                    "the pod's container ended {why} with exit {} and left no record",
                    t.exit_code
                ),
            ));
        }
    }
    // A pod that Succeeded ran its cell to the end and printed its record: without the record
    // (a rotated or uncollected log) there is nothing to say of it, certainly not a failure.
    match pod.phase.as_str() {
        "Failed" => Some((
            Status::Error,
            format!("the pod failed{}{}", said(&pod.reason), said(&pod.message)),
        )),
        _ => None,
    }
}

/// Names the row's node and pod, with what the API says about the node and the manifest about
/// the pod's /dev/shm.
fn place(row: &mut Row, node: Option<String>, pod: &str, fleet: &Fleet) {
    let known = node
        .as_ref()
        .and_then(|n| fleet.nodes.iter().find(|i| &i.name == n));
    if let Some(info) = known {
        if !info.container_runtime.is_empty() {
            row.container_runtime = Some(info.container_runtime.clone());
        }
        row.kubelet_version = Some(info.kubelet.clone()).filter(|k| !k.is_empty());
    }
    row.node = node;
    row.pod = Some(pod.to_string()).filter(|p| !p.is_empty());
    row.shm_bytes = fleet.jobs.as_ref().and_then(|j| j.shm_of(&row.cell));
}

/// The machine a silent pod ran on, as far as the API knows it.
fn node_fingerprint(node: Option<&str>, nodes: &[NodeInfo]) -> Fingerprint {
    let info = nodes.iter().find(|i| Some(i.name.as_str()) == node);
    Fingerprint {
        kernel: info.map(|i| i.kernel.clone()).unwrap_or_default(),
        os: info.map(|i| i.os_image.clone()).unwrap_or_default(),
        host: node.unwrap_or_default().to_string(),
        ..Fingerprint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pod::tests::pods;

    #[test]
    fn a_silent_pod_ends_as_its_status_says() {
        let endings: Vec<Option<Status>> = pods().iter().map(|p| ending(p).map(|e| e.0)).collect();
        assert_eq!(
            endings,
            [
                None, // completed: its record is what tells, and it is not here
                None,
                Some(Status::Oom),
                Some(Status::Evicted),
                Some(Status::Error),
                None, // running
                None,
            ]
        );
        let evicted = ending(&pods()[3]).unwrap().1;
        assert!(evicted.contains("low on resource: memory"), "{evicted}");
    }

    #[test]
    fn quantities_in_binary_units() {
        assert_eq!(quantity_bytes("2048Mi"), Some(2 << 30));
        assert_eq!(quantity_bytes("1Gi"), Some(1 << 30));
        assert_eq!(quantity_bytes("65536"), Some(65536));
        assert_eq!(quantity_bytes("2G"), None);
    }

    #[test]
    fn prefixed_and_bare_log_lines_are_read() {
        let text = "starting\n[pod/p-1/cell] {\"config\": 1}\nprogress 1 2\n";
        let (found, bad) = records_in(text);
        assert!(found.is_empty());
        assert_eq!(
            bad.len(),
            1,
            "a record-shaped line that is not one is named"
        );
        assert!(bad[0].starts_with("line 2"), "{bad:?}");
    }
}
