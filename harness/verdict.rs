//! Measurement against the how-to's claim for the same row: does it agree, and if not, why (from
//! the measured numbers, never from the claim). Works on results rows, so the terminal table and
//! reports made later from CSV files say the same thing.

use crate::record::csv::Row;
use crate::size::ByteSize;

/// The status as the how-to's table writes it: `PASS (Stable)`, `CRASH (SIGBUS Step 2)`.
pub fn status_label(row: &Row) -> String {
    match (row.status.as_str(), row.crash_step) {
        ("pass", _) => "PASS (Stable)".to_string(),
        ("error", None) => "ERROR (did not run)".to_string(),
        ("timeout", step) => format!("TIMEOUT (Step {})", step.unwrap_or(0)),
        (other, step) => format!(
            "CRASH ({} Step {})",
            other.to_uppercase(),
            step.unwrap_or(0)
        ),
    }
}

/// The claim, written the same way.
pub fn claim_label(row: &Row) -> Option<String> {
    let status = row.claim_status.as_deref()?;
    Some(match (status, row.claim_crash_step) {
        ("pass", _) => "PASS (Stable)".to_string(),
        (_, Some(step)) => format!("CRASH (SIGBUS Step {step})"),
        (other, None) => other.to_uppercase(),
    })
}

/// `agrees`, `differs`, `inconclusive` (the cell ended in an error or timeout, which measures
/// nothing about the claim) or empty when there is no claim. Outcomes are compared (pass vs crash
/// and the crash step); throughput is hardware-specific and never makes a row disagree.
pub fn verdict(row: &Row) -> &'static str {
    let Some(claim) = row.claim_status.as_deref() else {
        return "";
    };
    if matches!(row.status.as_str(), "error" | "timeout") {
        return "inconclusive";
    }
    let measured_pass = row.status == "pass";
    let claimed_pass = claim == "pass";
    let same_step = match (row.crash_step, row.claim_crash_step) {
        (Some(measured), Some(claimed)) => measured == claimed,
        _ => true,
    };
    if measured_pass == claimed_pass && same_step {
        "agrees"
    } else {
        "differs"
    }
}

/// Why the measurement came out as it did, in numbers: batch size, what the /dev/shm holds, how
/// many batches torch keeps alive, the peak seen.
pub fn explanation(row: &Row) -> String {
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
    let uses_shm = matches!(row.strategy.as_str(), "file_descriptor" | "file_system");
    if row.shm_seen_bytes > 0 && uses_shm {
        parts.push(format!(
            "/dev/shm of {} holds {} whole batches",
            ByteSize(row.shm_seen_bytes),
            row.shm_seen_bytes / batch
        ));
    }
    if row.strategy == "file_system" {
        parts.push("file_system segments are named shm_open objects in /dev/shm too: it does not move batches to disk".to_string());
    }
    if !uses_shm {
        parts.push(format!("{} segments are not in /dev/shm", row.strategy));
    }
    match (row.status.as_str(), row.crash_step) {
        ("pass", _) => parts.push(format!(
            "peak /dev/shm use measured {} ({:.1} batches)",
            ByteSize(row.peak_shm_bytes),
            row.peak_shm_bytes as f64 / batch as f64
        )),
        (_, Some(step)) => parts.push(format!(
            "it failed at step {step} with {} of /dev/shm in use",
            ByteSize(row.shm_used_at_failure_bytes.unwrap_or(0))
        )),
        _ => {}
    }
    parts.join("; ")
}
