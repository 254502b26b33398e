//! A comparison's cells as JSON: the numbers and codes `analysis::compare` serialises, and
//! beside them the words consumers have read since before the codes: each cell's `key` and
//! `note` (beside `note_code`), its sides' `key`, its outcomes' `note` (beside `note_code`) and
//! `evidence`.

use serde_json::Value;

use super::{cell_key, compare_note, outcomes};
use analysis::compare::Comparison;

/// Every cell, in order.
pub fn cells(comparisons: &[Comparison]) -> serde_json::Result<Value> {
    let cells = comparisons.iter().map(cell).collect::<Result<_, _>>()?;
    Ok(Value::Array(cells))
}

/// One cell with its words.
fn cell(c: &Comparison) -> serde_json::Result<Value> {
    let mut value = serde_json::to_value(c)?;
    value["key"] = cell_key::text(&c.key).into();
    value["note"] = compare_note::note(c).into();
    for (side, summary) in [("baseline", &c.baseline), ("candidate", &c.candidate)] {
        if let Some(summary) = summary {
            value[side]["key"] = cell_key::text(&summary.key).into();
        }
    }
    if let Some(j) = &c.outcomes {
        value["outcomes"]["note"] = outcomes::note(j).into();
        value["outcomes"]["evidence"] = outcomes::evidence(j.share_p, j.step_p).into();
    }
    Ok(value)
}
