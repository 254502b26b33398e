//! Measurement against the source's claim for the same cell: does it agree? Decided from results
//! rows, so the terminal table and reports made later from CSV files say the same thing. (Why it
//! came out so, in words, is `present::labels::explanation`.)

use crate::model::claim::{ClaimStatus, ClaimVerdict};
use crate::model::record::Status;
use crate::results::Row;

/// None when there is no claim. Outcomes are compared (pass vs crash and the crash step);
/// throughput is hardware-specific and never makes a row disagree.
pub fn verdict(row: &Row) -> Option<ClaimVerdict> {
    let claim = row.claim_status?;
    if matches!(row.status, Status::Error | Status::Timeout) {
        return Some(ClaimVerdict::Inconclusive);
    }
    let measured_pass = row.status.is_pass();
    let claimed_pass = claim == ClaimStatus::Pass;
    let same_step = match (row.crash_step, row.claim_crash_step) {
        (Some(measured), Some(claimed)) => measured == claimed,
        _ => true,
    };
    Some(if measured_pass == claimed_pass && same_step {
        ClaimVerdict::Agrees
    } else {
        ClaimVerdict::Differs
    })
}
