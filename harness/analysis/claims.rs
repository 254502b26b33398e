//! Measurement against the source's claim for the same cell: does it agree? Decided from results
//! rows, so the terminal table and reports made later from CSV files say the same thing. (Why it
//! came out so, in words, is `present::labels::explanation`.)

use model::claim::ClaimVerdict;
use model::record;
use results::Row;

/// None when there is no claim; otherwise the model's verdict (`model::record::claim_verdict`) on the
/// row's own columns.
pub fn verdict(row: &Row) -> Option<ClaimVerdict> {
    let claimed = row.claim_status?;
    Some(record::claim_verdict(
        claimed,
        row.claim_crash_step,
        row.claim_cause.as_deref(),
        row.status,
        row.crash_step,
        row.cause.as_deref(),
    ))
}
