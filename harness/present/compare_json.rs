//! A comparison's cells as JSON: the numbers `analysis::compare` serialises, and beside them
//! each cell's `key` and its sides' `key` in words, as consumers have read them.

use serde_json::Value;

use super::cell_key;
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
    for (side, summary) in [("baseline", &c.baseline), ("candidate", &c.candidate)] {
        if let Some(summary) = summary {
            value[side]["key"] = cell_key::text(&summary.key).into();
        }
    }
    Ok(value)
}
