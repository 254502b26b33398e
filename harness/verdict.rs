//! Measurement against the how-to's claim for the same row: does it agree, and if not, why (from
//! the measured numbers, never from the claim).

use crate::config::{CellConfig, Strategy};
use crate::record::{CellRecord, Status};
use crate::size::ByteSize;

/// The status as the how-to's table writes it: `PASS (Stable)`, `CRASH (SIGBUS Step 2)`.
pub fn status_label(record: &CellRecord) -> String {
    let step = record.failure.as_ref().map(|f| f.crash_step).unwrap_or(0);
    match record.status {
        Status::Pass => "PASS (Stable)".to_string(),
        Status::Timeout => format!("TIMEOUT (Step {step})"),
        Status::Error if record.metrics.steps_done == 0 && record.failure.is_none() => {
            "ERROR (did not run)".to_string()
        }
        other => format!("CRASH ({} Step {step})", other.to_string().to_uppercase()),
    }
}

/// The claim, written the same way.
pub fn claim_label(config: &CellConfig) -> Option<String> {
    let claim = config.claim.as_ref()?;
    Some(match (claim.status.as_str(), claim.crash_step) {
        ("pass", _) => "PASS (Stable)".to_string(),
        (_, Some(step)) => format!("CRASH (SIGBUS Step {step})"),
        (other, None) => other.to_uppercase(),
    })
}

/// `agrees`, `differs`, `inconclusive` (the cell ended in an error or timeout, which measures
/// nothing about the claim) or empty when there is no claim. Outcomes are compared (pass vs crash
/// and the crash step); throughput is hardware-specific and never makes a row disagree.
pub fn verdict(record: &CellRecord) -> &'static str {
    let Some(claim) = &record.config.claim else {
        return "";
    };
    if matches!(record.status, Status::Error | Status::Timeout) {
        return "inconclusive";
    }
    let measured_pass = record.status.is_pass();
    let claimed_pass = claim.status == "pass";
    let same_step = match (&record.failure, claim.crash_step) {
        (Some(f), Some(step)) => f.crash_step == step,
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
pub fn explanation(record: &CellRecord) -> String {
    let c = &record.config;
    let batch = c.batch_bytes();
    let in_flight = c.max_outstanding() + 1;
    let mut parts = vec![format!(
        "one batch is {}; the loader keeps up to {} x {} = {} batches outstanding plus the one the step holds ({} in all, {})",
        ByteSize(batch),
        c.workers,
        c.prefetch,
        c.max_outstanding(),
        in_flight,
        ByteSize(batch.saturating_mul(in_flight))
    )];
    let uses_shm = matches!(c.strategy, Strategy::FileDescriptor | Strategy::FileSystem);
    if record.shm_seen_bytes > 0 && uses_shm {
        parts.push(format!(
            "/dev/shm of {} holds {} whole batches",
            ByteSize(record.shm_seen_bytes),
            record.shm_seen_bytes / batch.max(1)
        ));
    }
    if c.strategy == Strategy::FileSystem {
        parts.push("file_system segments are named shm_open objects in /dev/shm too: it does not move batches to disk".to_string());
    }
    if !uses_shm {
        parts.push(format!("{} segments are not in /dev/shm", c.strategy));
    }
    if record.status.is_pass() {
        parts.push(format!(
            "peak /dev/shm use measured {} ({:.1} batches)",
            ByteSize(record.metrics.peak_shm_bytes),
            record.metrics.peak_shm_bytes as f64 / batch.max(1) as f64
        ));
    } else if let Some(f) = &record.failure {
        parts.push(format!(
            "it failed at step {} with {} of /dev/shm in use",
            f.crash_step,
            ByteSize(f.shm_used_bytes)
        ));
    }
    parts.join("; ")
}
