//! How rows are spoken of: statuses and claims as the how-to's table writes them, and why a
//! measurement came out as it did, in numbers.

use model::claim::ClaimStatus;
use model::knobs::Strategy;
use model::record::Status;
use model::size::ByteSize;
use results::Row;

/// The status as the how-to's table writes it: `PASS (Stable)`, `CRASH (SIGBUS Step 2)`, with
/// the cause shmbench named after it when the row has one (`CRASH (SIGBUS Step 11, mapped-file)`).
pub fn status_label(row: &Row) -> String {
    let label = plain_status_label(row);
    match (&row.cause, label.strip_suffix(')')) {
        (Some(cause), Some(open)) if !row.status.is_pass() => format!("{open}, {cause})"),
        _ => label,
    }
}

fn plain_status_label(row: &Row) -> String {
    match (row.status, row.crash_step) {
        (Status::Pass, _) => "PASS (Stable)".to_string(),
        // A pod's container that failed without a record did run; a cell's that has none did not.
        (Status::Error, None) if row.pod.is_some() => "ERROR (no record)".to_string(),
        (Status::Error, None) => "ERROR (did not run)".to_string(),
        (Status::Timeout, step) => format!("TIMEOUT (Step {})", step.unwrap_or(0)),
        (other, Some(step)) => format!("CRASH ({} Step {step})", other.to_string().to_uppercase()),
        // Ended from outside with no step known (a pod OOMKilled or evicted).
        (other, None) => format!("CRASH ({})", other.to_string().to_uppercase()),
    }
}

/// The claim, written the same way.
pub fn claim_label(row: &Row) -> Option<String> {
    let status = row.claim_status?;
    let cause = row.claim_cause.as_deref();
    Some(match (status, row.claim_crash_step, cause) {
        (ClaimStatus::Pass, _, _) => "PASS (Stable)".to_string(),
        (ClaimStatus::Crash, Some(step), None) => format!("CRASH (SIGBUS Step {step})"),
        (ClaimStatus::Crash, Some(step), Some(c)) => format!("CRASH (SIGBUS Step {step}, {c})"),
        (ClaimStatus::Crash, None, Some(c)) => format!("CRASH ({c})"),
        (ClaimStatus::Crash, None, None) => "CRASH".to_string(),
    })
}

/// The claim's verdict as a word (empty without a claim).
pub fn verdict_label(row: &Row) -> String {
    analysis::claims::verdict(row)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// Why the measurement came out as it did, in numbers: batch size, what the /dev/shm holds, how
/// many batches torch keeps alive, the peak seen.
pub fn explanation(row: &Row) -> String {
    explanation_parts(row).join("; ")
}

/// The explanation's parts, in order (the loader's arithmetic first), for a report that says
/// what every row shares once.
pub fn explanation_parts(row: &Row) -> Vec<String> {
    let batch = row.batch_bytes.max(1);
    let outstanding = row.workers as u64 * row.prefetch as u64;
    let in_flight = outstanding + 1;
    let mut parts = vec![format!(
        "one batch is {}; the loader keeps up to {} x {} = {} batches outstanding plus the one the step holds ({} in all, {})",
        ByteSize(batch),
        row.workers,
        row.prefetch,
        outstanding,
        in_flight,
        ByteSize(batch.saturating_mul(in_flight))
    )];
    let uses_shm = matches!(
        row.strategy,
        Strategy::FileDescriptor | Strategy::FileSystem
    );
    if row.shm_seen_bytes > 0 && uses_shm {
        parts.push(format!(
            "/dev/shm of {} holds {} whole batches",
            ByteSize(row.shm_seen_bytes),
            row.shm_seen_bytes / batch
        ));
    }
    if row.strategy == Strategy::FileSystem {
        parts.push("file_system segments are named shm_open objects in /dev/shm too: it does not move batches to disk".to_string());
    }
    if !uses_shm {
        parts.push(format!("{} segments are not in /dev/shm", row.strategy));
    }
    match (row.status, row.crash_step) {
        (Status::Pass, _) => parts.push(format!(
            "peak /dev/shm use measured {} ({:.1} batches)",
            ByteSize(row.peak_shm_bytes),
            row.peak_shm_bytes as f64 / batch as f64
        )),
        (_, Some(step)) => parts.push(failed_at(row, step)),
        _ => {}
    }
    parts
}

/// How a crashed row ended in /dev/shm: the peak (the Peak column) and, when less, what was
/// still in use once the failure was seen (a killed worker's segment is gone by then), so the
/// two numbers a reader sees never seem to disagree. A row that does not say what was in use
/// (an older file) says the peak only; one whose in-use figure is above its sampled peak (not a
/// cell's own record) says so.
fn failed_at(row: &Row, step: u64) -> String {
    let peak = ByteSize(row.peak_shm_bytes);
    match row.shm_used_at_failure_bytes {
        None => format!("it failed at step {step}; /dev/shm use peaked at {peak}"),
        Some(used) if used < row.peak_shm_bytes => format!(
            "it failed at step {step} after /dev/shm use peaked at {peak} ({} still in use when the failure was seen)",
            ByteSize(used)
        ),
        Some(used) if used == row.peak_shm_bytes => {
            format!("it failed at step {step} with {peak} of /dev/shm in use")
        }
        Some(used) => format!(
            "it failed at step {step} with {} of /dev/shm in use (above the sampled peak, {peak})",
            ByteSize(used)
        ),
    }
}
