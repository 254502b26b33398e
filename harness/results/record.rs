//! One record of a results file as a typed row: the file opened, its header line read, a record
//! unguarded (spreadsheet formulas) and checked against the schemas this shmbench reads, and a bad
//! line named by its number.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::knob_columns;
use super::row::{Row, READS, SCHEMA};
use super::spreadsheet;

/// The header line of `path`'s reader, or why it has none.
pub fn headers(reader: &mut csv::Reader<std::fs::File>, path: &Path) -> Result<csv::StringRecord> {
    Ok(reader
        .headers()
        .with_context(|| format!("{}: no header line", path.display()))?
        .clone())
}

/// Opens a results file for reading.
pub fn open(path: &Path) -> Result<csv::Reader<std::fs::File>> {
    csv::Reader::from_path(path)
        .with_context(|| format!("cannot open results file {}", path.display()))
}

/// Why a line of `path` is not a row.
pub fn bad_line(path: &Path, line: u64, e: &dyn std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: line {line}: not a valid shmbench results row: {e}",
        path.display()
    )
}

/// The first measure of `row` that no run can have measured (NaN, infinite or negative), if
/// any: shmbench never writes one, and `compare` would judge on it (a NaN side is "unchanged").
fn bad_measure(row: &Row) -> Option<(&'static str, f64)> {
    [
        ("img_per_s", row.img_per_s),
        ("img_per_s_p50", row.img_per_s_p50),
        ("cpu_ms_per_img", row.cpu_ms_per_img),
        ("main_cpu_ms_per_step", row.main_cpu_ms_per_step),
        ("instructions_per_img", row.instructions_per_img),
    ]
    .into_iter()
    .find_map(|(column, value)| {
        value
            .filter(|v| !v.is_finite() || *v < 0.0)
            .map(|v| (column, v))
    })
}

/// One record of `path` as a row of this schema, refusing another schema version and naming
/// the line of a bad row.
pub fn parse(record: &csv::StringRecord, headers: &csv::StringRecord, path: &Path) -> Result<Row> {
    let line = record.position().map_or(0, |p| p.line());
    // Most rows hold no guarded cell: copy the record only for one that does.
    let guarded = record
        .iter()
        .any(|c| spreadsheet::unguard(c).len() != c.len());
    let unguarded: csv::StringRecord;
    let record = match guarded {
        true => {
            unguarded = record.iter().map(spreadsheet::unguard).collect();
            &unguarded
        }
        false => record,
    };
    let mut row = record
        .deserialize::<Row>(Some(headers))
        .map_err(|e| bad_line(path, line, &e))?;
    knob_columns::read(record, headers, &mut row.added).map_err(|e| bad_line(path, line, &e))?;
    if !READS.contains(&row.schema) {
        let reads: Vec<String> = READS.iter().map(u32::to_string).collect();
        bail!(
            "{}: schema {} but this shmbench reads schemas {}; use the shmbench version that wrote it",
            path.display(),
            row.schema,
            reads.join(", ")
        );
    }
    if let Some((column, value)) = bad_measure(&row) {
        let why = format!("{column} is {value}: a measure is a finite number, 0 or more");
        return Err(bad_line(path, line, &why));
    }
    // An older row, read with its missing columns at their defaults, is a row of this schema.
    Ok(Row {
        schema: SCHEMA,
        ..row
    })
}
