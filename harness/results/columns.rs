//! A results file's header line made a plan once, and every record of the file filled into a
//! [`Row`] by it, in place: a row's text overwrites the last row's strings (their capacity
//! kept), so a reader that reuses its rows allocates nothing per row once warm. A fleet's year
//! is a million rows of 120 columns; matching each cell's column name to a field (serde's way
//! through the csv crate) and allocating each string anew cost more than reading the bytes.
//!
//! The row's own `Deserialize` (derived, with its defaults for columns older files lack) still
//! decides what each cell means: the plan hands it the field's index instead of its name, and
//! each cell is parsed as the csv crate parses one (numbers, `0x` integers, `true`/`false`,
//! empty for none, an enum by its name), after [`spreadsheet::unguard`].

use std::sync::OnceLock;

use serde::de::value::U64Deserializer;
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::Deserialize;

use model::knobs::{AddedKnobs, ColumnReader};

use super::{spreadsheet, Row};

/// What each column of a file's header line fills.
pub struct Columns {
    /// The header's names, for messages.
    names: Vec<String>,
    /// Per column, the index of the row's field it fills (as the row's `Deserialize` counts
    /// them), if any: the added knobs' columns and unknown ones fill none.
    fields: Vec<Option<u64>>,
    /// Each added knob's column, in `AddedKnobs::COLUMNS` order (the last of that name, as the
    /// added columns come last).
    added: Vec<Option<usize>>,
}

impl Columns {
    /// The plan for a file whose header line is `headers`.
    pub fn new(headers: &csv::ByteRecord) -> Columns {
        let names: Vec<String> = headers
            .iter()
            .map(|h| String::from_utf8_lossy(h).into_owned())
            .collect();
        let row_fields = row_fields();
        let fields = names
            .iter()
            .map(|name| {
                let at = row_fields.iter().position(|f| f == name)?;
                u64::try_from(at).ok()
            })
            .collect();
        let added = AddedKnobs::COLUMNS
            .iter()
            .map(|column| names.iter().rposition(|name| name == column))
            .collect();
        Columns {
            names,
            fields,
            added,
        }
    }

    /// Fills `row` from `record`, every field it had before replaced: a column the file lacks
    /// takes the row's default for it. The error names the column and quotes its cell.
    pub fn fill(&self, record: &csv::ByteRecord, row: &mut Row) -> Result<(), String> {
        let mut access = Access {
            columns: self,
            record,
            at: 0,
            in_value: false,
        };
        // Past the last value (a missing field), no cell is the error's.
        Row::deserialize_in_place(&mut access, row)
            .map_err(|e| self.said(record, if access.in_value { access.at } else { 0 }, e))?;
        row.added = AddedKnobs::default();
        let mut knobs = Knobs {
            columns: self,
            record,
            at: 0,
            error: None,
        };
        row.added.read(&mut knobs);
        match knobs.error {
            Some(e) => Err(self.said(record, knobs.at, e)),
            None => Ok(()),
        }
    }

    /// An error of the cell at `at` (one past the column the error is of; 0: none) with its
    /// column's name and text.
    fn said(&self, record: &csv::ByteRecord, at: usize, e: Error) -> String {
        let Some(column) = at.checked_sub(1) else {
            return e.0;
        };
        let cell = String::from_utf8_lossy(record.get(column).unwrap_or_default());
        let name = self.names.get(column).map_or("?", String::as_str);
        // The cell first: what is said is cut short after 120 characters.
        format!("column {name} holds `{cell}`: {}", e.0)
    }
}

/// The names of the row's fields in the order its `Deserialize` counts them (its skipped
/// field, the added knobs, not among them): asked of the derived code once.
fn row_fields() -> &'static [&'static str] {
    static FIELDS: OnceLock<&'static [&'static str]> = OnceLock::new();
    FIELDS.get_or_init(|| {
        /// A deserializer that only learns the struct's field names.
        struct Probe;
        impl<'de> Deserializer<'de> for Probe {
            type Error = Error;
            fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
                Err(Error(String::new()))
            }
            fn deserialize_struct<V: Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Error> {
                PROBED.with(|p| p.set(Some(fields)));
                Err(Error(String::new()))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        thread_local! {
            static PROBED: std::cell::Cell<Option<&'static [&'static str]>> =
                const { std::cell::Cell::new(None) };
        }
        let _ = Row::deserialize(Probe);
        PROBED.with(std::cell::Cell::take).unwrap_or_default()
    })
}

/// Why a cell is not its field's value.
#[derive(Debug)]
struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Error {
        Error(msg.to_string())
    }
}

/// A record as the map of the row's fields (by index) to cells.
struct Access<'a> {
    columns: &'a Columns,
    record: &'a csv::ByteRecord,
    /// The next column to look at.
    at: usize,
    /// Whether a value (of the column before `at`) is being read.
    in_value: bool,
}

impl<'de> Deserializer<'de> for &mut Access<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for Access<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        while self.at < self.record.len() {
            self.at += 1;
            if let Some(Some(field)) = self.columns.fields.get(self.at - 1) {
                let key: U64Deserializer<Error> = field.into_deserializer();
                return seed.deserialize(key).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        self.in_value = true;
        let value =
            seed.deserialize(Cell::of(self.record.get(self.at - 1).unwrap_or_default())?)?;
        self.in_value = false;
        Ok(value)
    }
}

/// The added knobs' cells, read by name.
struct Knobs<'a> {
    columns: &'a Columns,
    record: &'a csv::ByteRecord,
    /// One past the column of the first error.
    at: usize,
    error: Option<Error>,
}

impl ColumnReader for Knobs<'_> {
    fn column<T: serde::de::DeserializeOwned>(&mut self, name: &'static str, value: &mut T) {
        let Some(knob) = AddedKnobs::COLUMNS.iter().position(|c| *c == name) else {
            return;
        };
        let Some(Some(at)) = self.columns.added.get(knob) else {
            return;
        };
        let parsed = Cell::of(self.record.get(*at).unwrap_or_default())
            .and_then(|cell| T::deserialize(cell));
        match parsed {
            Ok(parsed) => *value = parsed,
            Err(e) if self.error.is_none() => (self.at, self.error) = (at + 1, Some(e)),
            Err(_) => {}
        }
    }
}

/// One cell's text, parsed as the csv crate parses a field.
struct Cell<'a>(&'a str);

impl<'a> Cell<'a> {
    fn of(bytes: &'a [u8]) -> Result<Cell<'a>, Error> {
        let text = std::str::from_utf8(bytes).map_err(|e| Error(format!("not UTF-8: {e}")))?;
        Ok(Cell(spreadsheet::unguard(text)))
    }

    fn parse<T: std::str::FromStr>(&self) -> Result<T, Error>
    where
        T::Err: std::fmt::Display,
    {
        self.0.parse().map_err(|e| Error(format!("{e}")))
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $int:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let n = match self.0.strip_prefix("0x") {
                Some(digits) => {
                    <$int>::from_str_radix(digits, 16).map_err(|e| Error(e.to_string()))
                }
                None => self.parse(),
            };
            visitor.$visit(n?)
        }
    };
}

impl<'de> Deserializer<'de> for Cell<'_> {
    type Error = Error;

    /// What the text looks like, as the csv crate infers it.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let text = self.0;
        if let Ok(b) = text.parse::<bool>() {
            visitor.visit_bool(b)
        } else if let Ok(n) = text.parse::<u64>() {
            visitor.visit_u64(n)
        } else if let Ok(n) = text.parse::<i64>() {
            visitor.visit_i64(n)
        } else if let Ok(x) = text.parse::<f64>() {
            visitor.visit_f64(x)
        } else {
            visitor.visit_str(text)
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_bool(self.parse()?)
    }

    integer!(deserialize_u8, visit_u8, u8);
    integer!(deserialize_u16, visit_u16, u16);
    integer!(deserialize_u32, visit_u32, u32);
    integer!(deserialize_u64, visit_u64, u64);
    integer!(deserialize_i8, visit_i8, i8);
    integer!(deserialize_i16, visit_i16, i16);
    integer!(deserialize_i32, visit_i32, i32);
    integer!(deserialize_i64, visit_i64, i64);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f32(self.parse()?)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f64(self.parse()?)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0.is_empty() {
            true => visitor.visit_none(),
            false => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit_struct seq tuple tuple_struct map struct identifier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed fixture's rows (schema 1, their later columns missing) and the same rows as
    /// this shmbench writes them (every column, optional ones set, a guarded cell), each read
    /// as the csv crate's serde reads a fresh row after unguarding its cells (how rows were
    /// read before the plan) and as the plan fills them into one reused row: the same rows.
    #[test]
    fn a_reused_row_is_filled_as_serde_reads_a_fresh_one() {
        use model::claim::ClaimStatus;
        use model::vm::Accel;
        let seed = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/seed.csv"
        ));
        let mut reader = csv::Reader::from_path(seed).unwrap();
        let columns = Columns::new(&reader.byte_headers().unwrap().clone());
        let old: Vec<Row> = (reader.byte_records())
            .map(|record| {
                let mut row = Row::default();
                columns.fill(&record.unwrap(), &mut row).unwrap();
                row
            })
            .collect();
        let new: Vec<Row> = (old.iter().enumerate())
            .map(|(i, r)| Row {
                runtime_note: Some(format!("note {i}, \"quoted\"\nsecond line")),
                memory_bytes: Some(1 << 30),
                crash_step: Some(i as u64),
                signal: Some(7),
                message: "=cmd|' /C calc'!A0".into(),
                claim_status: Some(ClaimStatus::Pass),
                node: Some(format!("gpu-{i}")),
                vm_accel: Some(Accel::Tcg),
                docker_rootless: Some(i % 2 == 0),
                cause: Some("tmpfs-full".into()),
                ..r.clone()
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join("new.csv");
        crate::atomic::write_csv(&written, &new, None).unwrap();
        let mut row = Row::default();
        let mut compared = 0;
        // Filled over each other's rows: old over new and new over old.
        for path in [seed, &written, seed] {
            let mut reader = csv::Reader::from_path(path).unwrap();
            let headers = reader.byte_headers().unwrap().clone();
            let names = csv::StringRecord::from_byte_record(headers.clone()).unwrap();
            let columns = Columns::new(&headers);
            for record in reader.byte_records() {
                let record = record.unwrap();
                let text = csv::StringRecord::from_byte_record(record.clone()).unwrap();
                let unguarded: csv::StringRecord = text.iter().map(spreadsheet::unguard).collect();
                let mut fresh: Row = unguarded.deserialize(Some(&names)).unwrap();
                columns.fill(&record, &mut row).unwrap();
                // The added knobs are not serde's (read by name: the test below).
                fresh.added = row.added.clone();
                assert_eq!(row, fresh, "{}", path.display());
                compared += 1;
            }
        }
        assert_eq!(compared, 3 * old.len());
    }

    #[test]
    fn added_knobs_are_written_and_read_back_by_name_and_a_missing_column_is_the_default() {
        use model::knobs::{EngineKind, Inject, StartMethod};
        let added = AddedKnobs {
            start_method: StartMethod::Spawn,
            dataset_bytes: 256 << 20,
            engine: EngineKind::Podman,
            inject: Inject::KillBus,
            oci_runtime: "runsc".parse().unwrap(),
        };
        // Written as the csv crate writes one field each.
        let cells = crate::knob_columns::cells(&added).unwrap();
        assert_eq!(cells, ["spawn", "268435456", "podman", "kill-bus", "runsc"]);
        let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let mut reader = csv::Reader::from_path(seed).unwrap();
        let mut headers = reader.byte_headers().unwrap().clone();
        let mut record = reader.byte_records().next().unwrap().unwrap();
        // In another order than written, after the schema's columns.
        for (name, cell) in [
            ("dataset_bytes", &cells[1]),
            ("oci_runtime", &cells[4]),
            ("start_method", &cells[0]),
            ("engine", &cells[2]),
            ("inject", &cells[3]),
        ] {
            headers.push_field(name.as_bytes());
            record.push_field(cell.as_bytes());
        }
        let mut row = Row::default();
        Columns::new(&headers).fill(&record, &mut row).unwrap();
        assert_eq!(row.added, added);
        // The same row object, filled from a file from before the knobs.
        let mut reader = csv::Reader::from_path(seed).unwrap();
        let headers = reader.byte_headers().unwrap().clone();
        let record = reader.byte_records().next().unwrap().unwrap();
        Columns::new(&headers).fill(&record, &mut row).unwrap();
        assert_eq!(row.added, AddedKnobs::default());
        // A cell that is not its knob's value.
        let (mut headers, mut record) = (headers, record);
        headers.push_field(b"start_method");
        record.push_field(b"threads");
        let e = Columns::new(&headers).fill(&record, &mut row).unwrap_err();
        assert!(e.starts_with("column start_method holds `threads`"), "{e}");
    }

    #[test]
    fn a_bad_cell_is_named_by_its_column() {
        let headers = csv::ByteRecord::from(vec!["schema", "workers"]);
        let record = csv::ByteRecord::from(vec!["9", "abc"]);
        let e = Columns::new(&headers)
            .fill(&record, &mut Row::default())
            .unwrap_err();
        assert!(e.starts_with("column workers holds `abc`: "), "{e}");
        // A column a row needs and the file lacks.
        let e = Columns::new(&csv::ByteRecord::from(vec!["schema"]))
            .fill(&csv::ByteRecord::from(vec!["9"]), &mut Row::default())
            .unwrap_err();
        assert_eq!(e, "missing field `run_id`");
    }
}
