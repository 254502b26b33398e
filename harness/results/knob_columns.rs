//! The knob columns added after schema 5 ([`AddedKnobs`]): written after a row's schema columns
//! and read back by name, so a file written before a knob existed reads as its default and one
//! written after it by an older shmbench still reads. serde writes a row's schema columns; these
//! are cells of text, written and parsed as the csv crate writes and parses one field.

use anyhow::{anyhow, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use model::knobs::{AddedKnobs, ColumnReader, ColumnWriter};

/// The added columns' names, in the order they follow the schema's.
pub fn header() -> &'static [&'static str] {
    AddedKnobs::COLUMNS
}

/// The cells of `added`, in the header's order.
pub fn cells(added: &AddedKnobs) -> Result<Vec<String>> {
    struct Cells(Vec<String>, Option<anyhow::Error>);
    impl ColumnWriter for Cells {
        fn column<T: Serialize>(&mut self, name: &'static str, value: &T) {
            match text(value) {
                Ok(cell) => self.0.push(cell),
                Err(e) => {
                    self.1.get_or_insert(anyhow!("column {name}: {e}"));
                }
            }
        }
    }
    let mut cells = Cells(Vec::with_capacity(header().len()), None);
    added.write(&mut cells);
    match cells.1 {
        Some(e) => Err(e),
        None => Ok(cells.0),
    }
}

/// Sets each added knob `record` has a column for (by `headers`); the others keep their
/// defaults. Names the column whose cell is not a value of its knob.
pub fn read(
    record: &csv::StringRecord,
    headers: &csv::StringRecord,
    added: &mut AddedKnobs,
) -> Result<()> {
    struct Cells<'a> {
        record: &'a csv::StringRecord,
        headers: &'a csv::StringRecord,
        error: Option<anyhow::Error>,
    }
    impl ColumnReader for Cells<'_> {
        fn column<T: DeserializeOwned>(&mut self, name: &'static str, value: &mut T) {
            // Added columns come last: looked for from the end.
            let headers = self.headers;
            let Some(at) = (0..headers.len())
                .rev()
                .find(|&i| headers.get(i) == Some(name))
            else {
                return;
            };
            let cell = self.record.get(at).unwrap_or_default();
            match csv::StringRecord::from(vec![cell]).deserialize::<(T,)>(None) {
                Ok((parsed,)) => *value = parsed,
                Err(e) => {
                    self.error
                        .get_or_insert(anyhow!("column {name}: {cell:?} is not its value: {e}"));
                }
            }
        }
    }
    let mut cells = Cells {
        record,
        headers,
        error: None,
    };
    added.read(&mut cells);
    cells.error.map_or(Ok(()), Err)
}

/// One value as the csv crate writes it in a cell (an absent value is empty).
fn text<T: Serialize>(value: &T) -> Result<String> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    writer.serialize([value])?;
    let bytes = writer.into_inner().map_err(|e| anyhow!("{e}"))?;
    let mut cell = String::new();
    crate::atomic::split(&bytes, |cells| {
        cell = cells.first().copied().unwrap_or_default().to_string();
        Ok(())
    })?;
    Ok(cell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::knobs::{EngineKind, Inject, StartMethod};

    fn record(cells: &[&str]) -> csv::StringRecord {
        cells.iter().copied().collect()
    }

    #[test]
    fn cells_read_back_by_name_and_a_missing_column_is_the_default() {
        let added = AddedKnobs {
            start_method: StartMethod::Spawn,
            dataset_bytes: 256 << 20,
            engine: EngineKind::Podman,
            inject: Inject::KillBus,
            oci_runtime: "runsc".parse().unwrap(),
        };
        let cells = cells(&added).unwrap();
        assert_eq!(cells, ["spawn", "268435456", "podman", "kill-bus", "runsc"]);
        // In another order, after other columns.
        let headers = record(&[
            "workers",
            "dataset_bytes",
            "oci_runtime",
            "start_method",
            "engine",
            "inject",
        ]);
        let row = record(&["8", &cells[1], &cells[4], &cells[0], &cells[2], &cells[3]]);
        let mut read_back = AddedKnobs::default();
        read(&row, &headers, &mut read_back).unwrap();
        assert_eq!(read_back, added);
        // A file from before the knobs.
        let mut old = AddedKnobs::default();
        read(&record(&["8"]), &record(&["workers"]), &mut old).unwrap();
        assert_eq!(old.start_method, StartMethod::Fork);
        assert_eq!(old.dataset_bytes, 0);
    }

    #[test]
    fn a_cell_that_is_not_its_knob_s_value_names_the_column() {
        let mut added = AddedKnobs::default();
        let e = read(
            &record(&["threads"]),
            &record(&["start_method"]),
            &mut added,
        )
        .unwrap_err();
        assert!(e.to_string().contains("start_method"), "{e}");
    }
}
