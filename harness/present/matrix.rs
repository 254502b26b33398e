//! The matrix as a table in the how-to's shape, and the notes that explain each disagreement with
//! the how-to, each failure and each runtime that stood in for another.

use super::labels::{claim_label, explanation, status_label, verdict_label};
use super::table::{markdown, thousands};
use model::claim::{Claim, ClaimVerdict};
use model::knobs::{EngineKind, IpcMode, RuntimeKind};
use model::size::ByteSize;
use model::vm::Accel;
use results::Row;

/// The cell's /dev/shm as measured inside it.
pub fn shm_label(row: &Row) -> String {
    let seen = ByteSize(row.shm_seen_bytes);
    if row.pod.is_some() {
        // A pod's: what it saw, else its emptyDir's sizeLimit, else the runtime's default.
        return match (row.shm_seen_bytes, row.shm_bytes) {
            (0, Some(limit)) => format!("pod ({})", ByteSize(limit)),
            (0, None) => "pod (no emptyDir)".into(),
            _ => format!("pod ({seen})"),
        };
    }
    if row.runtime == RuntimeKind::Host || row.ipc == IpcMode::Host {
        format!("host ({seen})")
    } else if row.shm_seen_bytes == 0 {
        row.shm_bytes
            .map(|s| ByteSize(s).to_string())
            .unwrap_or_else(|| "engine default".into())
    } else {
        seen.to_string()
    }
}

/// img/s as the how-to writes it: a number, or `0.0 (Failed)`; under software emulation (a TCG
/// VM) marked as such, since it says nothing of the data path's speed.
pub fn throughput(row: &Row) -> String {
    let speed = rate(row);
    match row.vm_accel {
        Some(Accel::Tcg) if row.img_per_s.is_some() => format!("{speed} (TCG, emulated)"),
        _ => speed,
    }
}

fn rate(row: &Row) -> String {
    match (row.status.is_pass(), row.img_per_s) {
        (true, Some(r)) => thousands(r),
        (true, None) => "n/a".into(),
        (false, Some(r)) if row.steps_done >= 2 => format!("{} until crash", thousands(r)),
        (false, _) => "0.0 (Failed)".into(),
    }
}

/// The matrix table as Markdown.
pub fn matrix(rows: &[Row]) -> String {
    let (headers, cells) = matrix_cells(rows);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    markdown(&headers, &cells)
}

/// "<source> says" when every claim has one source, else "Claim says".
pub fn claims_header(rows: &[Row]) -> String {
    let mut sources: Vec<&str> = rows
        .iter()
        .filter(|r| r.claim_status.is_some())
        .map(|r| r.claim_source.as_deref().unwrap_or(Claim::DEFAULT_SOURCE))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    match sources.as_slice() {
        [one] => format!("{one} says"),
        _ => "Claim says".into(),
    }
}

/// The matrix table's headers and cells, for any output format, with the claims' columns when
/// rows carry claims.
pub fn matrix_cells(rows: &[Row]) -> (Vec<String>, Vec<Vec<String>>) {
    measured_cells(rows, rows.iter().any(|r| r.claim_status.is_some()))
}

/// The matrix table, with the claims' columns only when `has_claims` (a report shows the claims
/// in a table of their own, with why, and does not repeat them here).
pub fn measured_cells(rows: &[Row], has_claims: bool) -> (Vec<String>, Vec<Vec<String>>) {
    let steps = rows.first().map(|r| r.steps * r.epochs as u64).unwrap_or(0);
    let status_header = format!("Status After {steps} Steps");
    let kernels_vary = rows.iter().any(|r| r.vm_kernel.is_some());
    let mut headers: Vec<String> = [
        "Environment",
        "/dev/shm",
        "IPC Strategy",
        "Runtime",
        status_header.as_str(),
        "Throughput (img/s)",
        "Peak /dev/shm",
    ]
    .map(String::from)
    .to_vec();
    if has_claims {
        headers.extend([claims_header(rows), "Verdict".to_string()]);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.environment.clone(),
                shm_label(r),
                r.strategy.to_string(),
                match (&r.torch_version, kernels_vary) {
                    (Some(v), _) => format!("{} (torch {v})", runtime_label(r)),
                    // Rows on several kernels (VMs among them): each row's kernel.
                    (None, true) => format!("{} ({})", runtime_label(r), r.kernel),
                    (None, false) => runtime_label(r),
                },
                status_label(r),
                throughput(r),
                ByteSize(r.peak_shm_bytes).to_string(),
            ];
            if has_claims {
                cells.push(claim_label(r).unwrap_or_default());
                cells.push(verdict_label(r));
            }
            cells
        })
        .collect();
    (headers, cells)
}

/// The runtime, with the engine and OCI runtime of a container row that names them (`podman
/// runsc`, `podman rootless runc`; `docker` alone for the engine's default).
fn runtime_label(r: &Row) -> String {
    let (engine, oci) = (r.added.engine, &r.added.oci_runtime);
    let rootless = r.docker_rootless == Some(true);
    match r.runtime == RuntimeKind::Docker
        && (engine != EngineKind::Docker || oci.named().is_some() || rootless)
    {
        true if rootless => format!("{engine} rootless {oci}"),
        true => format!("{engine} {oci}"),
        false => r.runtime.to_string(),
    }
}

/// One note per row that disagrees with its claim, one per failed row's message, and one per
/// distinct reason rows ran in another runtime than their setup names.
pub fn notes(rows: &[Row]) -> Vec<String> {
    notes_with(rows, true)
}

/// The notes, with why each row disagrees with its claim only when `explain_claims` (a report's
/// claims table says it in its own column).
pub fn notes_with(rows: &[Row], explain_claims: bool) -> Vec<String> {
    let mut notes = Vec::new();
    for r in rows {
        let env = &r.environment;
        if explain_claims && analysis::claims::verdict(r) == Some(ClaimVerdict::Differs) {
            notes.push(format!(
                "{env}: the how-to says {}, measured {}: {}.",
                claim_label(r).unwrap_or_default(),
                status_label(r),
                explanation(r)
            ));
        }
        if !r.status.is_pass() && !r.message.is_empty() {
            // The message is the loader's words (torch's guess of shared memory, for any SIGBUS);
            // the cause is what the fault says (docs/EXPLAIN.md).
            let cause = r
                .cause
                .as_ref()
                .map(|c| format!(" (cause: {c})"))
                .unwrap_or_default();
            notes.push(format!("{env}: {}{cause}", r.message));
        }
    }
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in rows {
        if let Some(note) = &r.runtime_note {
            match reasons.iter_mut().find(|(n, _)| n == note) {
                Some((_, envs)) => envs.push(&r.environment),
                None => reasons.push((note, vec![&r.environment])),
            }
        }
    }
    for (note, envs) in reasons {
        notes.push(format!("{}: {note}.", envs.join(", ")));
    }
    notes
}
