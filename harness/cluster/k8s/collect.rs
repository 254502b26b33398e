//! Rows from a fleet's pods (`shmbench k8s collect`): the records the pods printed, found in
//! their logs, keyed by pod and node; and for a pod ended from outside (OOMKilled, evicted), which
//! prints nothing, a row whose status is read from the API's pod status and whose cell is the one
//! its Job's completion index picks in the manifest that made it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};

use super::jobs::JobCells;
use model::fingerprint::Fingerprint;
use model::pod::{NodeInfo, PodStatus};
use model::record::{CellRecord, Status};
use results::log_lines::{each_line, looks_like_record, read_line, too_long, Line};
use results::row::Row;
use results::row_build::{command_line, Placement, RowContext};

/// A record found in a log, with the pod a `kubectl logs --prefix` line named.
pub struct Logged {
    pub(crate) pod: Option<String>,
    pub(crate) record: CellRecord,
}

/// The records in a log: every line that is a cell record, bare or behind the prefix
/// `kubectl logs --prefix` writes (`[pod/NAME/CONTAINER] `). Lines that look like a record but
/// are not one of this shmbench's are named in the second list.
#[cfg(test)]
pub(crate) fn records_in(text: &str) -> (Vec<Logged>, Vec<String>) {
    // Reading from memory cannot fail.
    records_from(text.as_bytes()).unwrap_or_default()
}

/// The records in a log read a line at a time, each line up to `log_lines::MAX_LINE` (a longer
/// one is named by its number and length, never held whole).
pub fn records_from(reader: impl std::io::BufRead) -> std::io::Result<(Vec<Logged>, Vec<String>)> {
    let mut found = Vec::new();
    let mut bad = Vec::new();
    each_line(reader, |n, line| {
        let line = match line {
            Line::TooLong(length) => return bad.push(too_long(n, length)),
            Line::Text(line) => line,
        };
        let (pod, body) = match line.strip_prefix("[pod/").and_then(|r| r.split_once("] ")) {
            Some((who, body)) => (who.split('/').next().map(str::to_string), body),
            None => (None, line),
        };
        let body = body.trim();
        if !looks_like_record(body) {
            return;
        }
        match read_line::<CellRecord>(body, n, |r| &r.config) {
            Ok(record) => found.push(Logged { pod, record }),
            Err(e) => bad.push(e.to_string()),
        }
    })?;
    Ok((found, bad))
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

/// One pod's result before it is numbered among the cell's repeats: what its row is built from.
struct Entry {
    order: (String, u64, String),
    record: CellRecord,
    fingerprint: Fingerprint,
    placement: Placement,
    /// Whether the record is the pod's own (printed in its log), not one made from its status.
    logged: bool,
}

/// The entries of the pods whose records the logs hold (each pod once), and their names.
fn logged_entries(
    logged: Vec<Logged>,
    fleet: &Fleet,
    notes: &mut Vec<String>,
) -> (Vec<Entry>, BTreeSet<String>) {
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
        let placement = placement(node, &name, &record.config.cell, fleet);
        let index = info
            .map(|p| p.completion_index)
            .or_else(|| status.and_then(|s| s.completion_index))
            .unwrap_or(0);
        let job = status.and_then(|s| s.job.clone()).unwrap_or_default();
        entries.push(Entry {
            order: (job, index, name),
            record,
            fingerprint: fp,
            placement,
            logged: true,
        });
    }
    (entries, seen)
}

/// The rows of a fleet run: one per pod record, one per pod ended from outside.
pub fn collect(
    logged: Vec<Logged>,
    fleet: &Fleet,
    run_id: &str,
    started_at: &str,
) -> Result<Collected> {
    let mut notes = Vec::new();
    let (mut entries, seen) = logged_entries(logged, fleet, &mut notes);
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
        let placement = placement(node, &status.name, &record.config.cell, fleet);
        notes.push(format!(
            "pod {}: {outcome} from its status ({})",
            status.name, record.message
        ));
        entries.push(Entry {
            order: (job, index, status.name.clone()),
            record,
            fingerprint: fp,
            placement,
            logged: false,
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
        .map(|e| {
            let config = &e.record.config;
            let n = runs
                .entry((config.scenario.clone(), config.cell.clone()))
                .or_default();
            *n += 1;
            let context = RowContext {
                run_id,
                started_at,
                repeat: *n,
                command: command_line(),
                placement: Some(e.placement),
                ..RowContext::default()
            };
            let row = Row::new(&e.record, &e.fingerprint, context);
            (row, e.logged.then_some(e.record))
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

/// Where a pod ran: its node (and the node's versions, from `--nodes`), its name, and its
/// /dev/shm as its Job's manifest sized it.
fn placement(node: Option<String>, pod: &str, cell: &str, fleet: &Fleet) -> Placement {
    let known = node
        .as_ref()
        .and_then(|n| fleet.nodes.iter().find(|i| &i.name == n));
    Placement {
        container_runtime: known
            .map(|i| i.container_runtime.clone())
            .filter(|r| !r.is_empty()),
        kubelet_version: known.map(|i| i.kubelet.clone()).filter(|k| !k.is_empty()),
        node,
        pod: Some(pod.to_string()).filter(|p| !p.is_empty()),
        shm_bytes: fleet.jobs.as_ref().and_then(|j| j.shm_of(cell)),
        slurm_state: None,
    }
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

    /// The pods of `tests/fixtures/k8s/pods.json`, in the API's shape (the fixture
    /// `model::pod`'s own tests read).
    fn pods() -> Vec<PodStatus> {
        let doc = include_str!("../../../tests/fixtures/k8s/pods.json");
        PodStatus::all_in(&serde_json::from_str(doc).unwrap())
    }

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
