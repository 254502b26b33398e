//! The knob columns added after schema 5 ([`AddedKnobs`]): written after a row's schema columns
//! and read back by name ([`super::columns`]), so a file written before a knob existed reads as
//! its default and one written after it by an older shmbench still reads. serde writes a row's
//! schema columns; these are cells of text, written as the csv crate writes one field.

use anyhow::{anyhow, Result};
use serde::Serialize;

use model::knobs::{AddedKnobs, ColumnWriter};

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
