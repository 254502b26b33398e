//! One record of a results file as a typed row: the file opened, its header line read, a record
//! filled into a row ([`Columns`]) and checked against the schemas this shmbench reads, and a
//! bad line named by its number.

use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::columns::Columns;
use super::row::{Row, READS, SCHEMA};

/// The longest record a results file may hold. A row is a few hundred bytes (a long note a few
/// KB); the csv reader keeps a whole record in memory, so a file with no record end (/dev/zero,
/// a quoted field left open over a file of lines, a disk image named by mistake) would
/// otherwise take the machine's memory before any error.
pub const MAX_RECORD_BYTES: usize = 1 << 20;

/// A file read through a limit on its records' length (see [`MAX_RECORD_BYTES`]): it follows
/// the CSV quoting (a `"` opens or closes a quoted field; an escaped `""` does both) so that a
/// line end inside a quoted field does not end the record, and takes `\n` or `\r` outside
/// quotes as a record's end, as the csv reader does.
pub struct RecordBounded {
    file: std::fs::File,
    /// Bytes read since the last record's end.
    in_record: usize,
    in_quotes: bool,
    /// Line ends seen, and the line the current record began on (for the error).
    lines: u64,
    record_line: u64,
}

impl Read for RecordBounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        for b in &buf[..n] {
            self.in_record += 1;
            match b {
                b'"' => self.in_quotes = !self.in_quotes,
                b'\n' | b'\r' => {
                    self.lines += u64::from(*b == b'\n');
                    if !self.in_quotes {
                        self.in_record = 0;
                        self.record_line = self.lines + 1;
                    }
                }
                _ => {}
            }
            if self.in_record > MAX_RECORD_BYTES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "line {}: a record longer than {MAX_RECORD_BYTES} bytes: not a results file",
                        self.record_line
                    ),
                ));
            }
        }
        Ok(n)
    }
}

/// A results file's reader.
pub type Reader = csv::Reader<RecordBounded>;

/// The header line of `path`'s reader, or why it has none.
pub fn headers(reader: &mut Reader, path: &Path) -> Result<csv::ByteRecord> {
    let headers = reader
        .byte_headers()
        .with_context(|| format!("{}: no header line", path.display()))?
        .clone();
    // A column's name is matched as text: one that is not UTF-8 (a Latin-1 byte a spreadsheet
    // saved) would be no column at all, its values silently dropped.
    if let Some(field) = headers.iter().position(|h| std::str::from_utf8(h).is_err()) {
        bail!(
            "{}: no header line: invalid UTF-8 in the name of column {} (save the file as UTF-8)",
            path.display(),
            field + 1
        );
    }
    Ok(headers)
}

/// Opens a results file for reading.
pub fn open(path: &Path) -> Result<Reader> {
    if path.as_os_str() == "-" {
        bail!("'-': results are read from files, not standard input: give the file's path (save the input to one first)");
    }
    // Checked before the open: opening a FIFO with no writer would wait for one forever.
    let meta = std::fs::metadata(path)
        .with_context(|| format!("cannot open results file {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "{}: not a regular file, so not a results file (a FIFO or a device is never read)",
            path.display()
        );
    }
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open results file {}", path.display()))?;
    Ok(csv::Reader::from_reader(RecordBounded {
        file,
        in_record: 0,
        in_quotes: false,
        lines: 0,
        record_line: 1,
    }))
}

/// Why a line of `path` is not a row (line 0: the error knows no line, or names its own). What
/// is said of it quotes the file's cells, untrusted data: escaped and cut short, never raw.
pub fn bad_line(path: &Path, line: u64, e: &dyn std::fmt::Display) -> anyhow::Error {
    let e = crate::log_lines::excerpt(&e.to_string());
    match line {
        0 => anyhow::anyhow!("{}: not a valid shmbench results file: {e}", path.display()),
        _ => anyhow::anyhow!(
            "{}: line {line}: not a valid shmbench results row: {e}",
            path.display()
        ),
    }
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

/// Fills `row` with one record of `path` as a row of this schema (by the file's `columns`),
/// refusing another schema version and naming the line of a bad row.
pub fn fill(record: &csv::ByteRecord, columns: &Columns, path: &Path, row: &mut Row) -> Result<()> {
    let line = record.position().map_or(0, |p| p.line());
    columns
        .fill(record, row)
        .map_err(|e| bad_line(path, line, &e))?;
    if !READS.contains(&row.schema) {
        let reads: Vec<String> = READS.iter().map(u32::to_string).collect();
        bail!(
            "{}: schema {} but this shmbench reads schemas {}; use the shmbench version that wrote it",
            path.display(),
            row.schema,
            reads.join(", ")
        );
    }
    if let Some((column, value)) = bad_measure(row) {
        let why = format!("{column} is {value}: a measure is a finite number, 0 or more");
        return Err(bad_line(path, line, &why));
    }
    // An older row, read with its missing columns at their defaults, is a row of this schema.
    row.schema = SCHEMA;
    Ok(())
}

/// One record of `path` as a new row (see [`fill`]; a reader of many rows reuses one).
pub fn parse(record: &csv::ByteRecord, columns: &Columns, path: &Path) -> Result<Row> {
    let mut row = Row::default();
    fill(record, columns, path, &mut row)?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text` read through [`open`], or the error.
    fn read_all(text: &[u8]) -> Result<usize> {
        let file = tempfile::NamedTempFile::new()?;
        std::fs::write(file.path(), text)?;
        let mut reader = open(file.path())?;
        headers(&mut reader, file.path())?;
        Ok(reader.byte_records().collect::<Result<Vec<_>, _>>()?.len())
    }

    #[test]
    fn a_file_longer_than_the_record_limit_is_read_when_its_records_are_short() {
        // Three limits' worth of short records, some ending in `\r` alone, some with a quoted
        // line end and an escaped quote: the count starts again at each record's end.
        let records = "a,b\n\"x\ny\",\"say \"\"hi\"\"\"\r1,2\r\n";
        let text = records.repeat(3 * MAX_RECORD_BYTES / records.len());
        assert_eq!(
            read_all(text.as_bytes()).unwrap(),
            3 * text.len() / records.len() - 1
        );
    }

    #[test]
    fn a_record_over_the_limit_is_refused_with_its_line() {
        let mut text = b"a,b\n1,".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_RECORD_BYTES + 1));
        let e = format!("{:#}", read_all(&text).unwrap_err());
        assert!(e.contains("line 2: a record longer than"), "{e}");
        // With no line end at all, the header line itself.
        let e = format!(
            "{:#}",
            read_all(&vec![0u8; 2 * MAX_RECORD_BYTES]).unwrap_err()
        );
        assert!(e.contains("not a results file"), "{e}");
        // A quoted field left open over short lines: one record, however many lines.
        let mut text = b"a,b\n1,\"".to_vec();
        text.extend("y\n".repeat(MAX_RECORD_BYTES).bytes());
        let e = format!("{:#}", read_all(&text).unwrap_err());
        assert!(e.contains("line 2: a record longer than"), "{e}");
    }
}
