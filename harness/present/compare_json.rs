//! A comparison's cells as JSON: the numbers and codes `analysis::compare` serialises, and
//! beside them the words consumers have read since before the codes: each cell's `key` and
//! `note` (beside `note_code`), its sides' `key`, its outcomes' `note` (beside `note_code`) and
//! `evidence`.

use serde::ser::{Error, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::{cell_key, compare_note, outcomes};
use analysis::compare::Comparison;

/// Every cell, in order, each made into JSON only as it is written: a fleet's year of runs
/// (1,000 cells of 500 runs a side) is a 110 MB document, and as one tree of values it took
/// 1.7 GB.
pub struct Cells<'a>(pub &'a [Comparison]);

impl Serialize for Cells<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            seq.serialize_element(&cell(c).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
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
