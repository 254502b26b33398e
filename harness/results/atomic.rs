//! Replacing a file atomically: rows are written to a temporary file in the same directory,
//! synced, and renamed over the target, so readers see the old file or the new one, never a torn
//! one; a failure leaves no temporary file behind (tempfile removes it when dropped).

use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{anyhow, Result};
use serde::Serialize;
use tempfile::NamedTempFile;

use super::spreadsheet;

/// A row of a CSV file: serde writes its columns; columns it cannot name in a struct's fields
/// (a row's added knobs) follow them.
pub trait CsvRow: Serialize {
    /// The names of the columns after the serialised ones.
    fn more_header() -> &'static [&'static str] {
        &[]
    }

    /// This row's cells of them.
    fn more_cells(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Writes `rows` as CSV to `path`, atomically. `empty_header` is written when there are no rows,
/// so an empty file still names its columns.
pub fn write_csv<T: CsvRow>(path: &Path, rows: &[T], empty_header: Option<&[&str]>) -> Result<()> {
    let mut file = CsvWriter::new(path)?;
    for row in rows {
        file.write(row)?;
    }
    file.finish(empty_header)
}

/// A CSV file written a row at a time into a temporary file beside its path and put in its place
/// by [`CsvWriter::finish`]: memory stays one row's whatever the rows' number (a merge of a
/// year's fleet rows held them all, 2.1 GB for 500k). Dropped unfinished, it leaves nothing.
pub struct CsvWriter<T> {
    path: std::path::PathBuf,
    out: BufWriter<NamedTempFile>,
    /// The header's writer: the first row's.
    encoder: Encoder,
    line: Vec<u8>,
    rows: usize,
    row: PhantomData<fn(&T)>,
}

impl<T: CsvRow> CsvWriter<T> {
    /// Starts the temporary file beside `path` (in its directory, so the rename is atomic).
    pub fn new(path: &Path) -> Result<CsvWriter<T>> {
        let tmp = tempfile::Builder::new()
            .prefix(".shmbench-")
            .suffix(".tmp")
            .tempfile_in(parent(path))?;
        Ok(CsvWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(tmp),
            encoder: Encoder::new(true),
            line: Vec::new(),
            rows: 0,
            row: PhantomData,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds a row (the header first, before the first row).
    pub fn write(&mut self, row: &T) -> Result<()> {
        self.line.clear();
        self.encoder.encode(row, &mut self.line, true)?;
        self.out.write_all(&self.line)?;
        self.rows += 1;
        Ok(())
    }

    /// Adds a row as `line`, what [`encode`] made of `row` (or of a row with the same columns)
    /// on another thread: a merge encodes on the threads that read.
    pub fn write_encoded(&mut self, row: &T, line: &[u8]) -> Result<()> {
        if self.rows == 0 {
            self.line.clear();
            self.encoder.encode(row, &mut self.line, false)?;
            self.out.write_all(&self.line)?;
        }
        self.out.write_all(line)?;
        self.rows += 1;
        Ok(())
    }

    /// Syncs the file and renames it over the path; `empty_header` is written when no row was.
    pub fn finish(mut self, empty_header: Option<&[&str]>) -> Result<()> {
        if self.rows == 0 {
            if let Some(header) = empty_header {
                let mut line = csv::Writer::from_writer(Vec::new());
                line.write_record(header)?;
                let line = line.into_inner().map_err(|e| anyhow!("{}", e.error()))?;
                self.out.write_all(&line)?;
            }
        }
        let tmp = self
            .out
            .into_inner()
            .map_err(|e| anyhow!("{}", e.error()))?;
        persist(tmp, &self.path)
    }
}

/// `row` as one line of a results file (no header), its cells guarded: made on this thread by
/// writers kept between rows. Rows only: the thread's writers hold one row type's columns.
pub fn encode(row: &super::Row) -> Result<Vec<u8>> {
    thread_local! {
        static ENCODER: std::cell::RefCell<Encoder> = std::cell::RefCell::new(Encoder::new(false));
    }
    let mut line = Vec::new();
    ENCODER.with(|encoder| encoder.borrow_mut().encode(row, &mut line, true))?;
    Ok(line)
}

/// Rows made lines of CSV: serde writes a row's cells, which are then guarded for spreadsheets
/// (serde writes the cells, not their text) and written again. Both writers are kept between
/// rows: one built per row was a tenth of a merge.
struct Encoder {
    plain: csv::Writer<Shared>,
    plain_text: Shared,
    guarded: csv::Writer<Shared>,
    guarded_text: Shared,
    /// Whether the header is written before the first row, and whether that row was.
    header: bool,
    first: bool,
}

impl Encoder {
    fn new(header: bool) -> Encoder {
        let (plain_text, guarded_text) = (Shared::default(), Shared::default());
        Encoder {
            plain: csv::WriterBuilder::new()
                .has_headers(header)
                .from_writer(plain_text.clone()),
            plain_text,
            guarded: csv::Writer::from_writer(guarded_text.clone()),
            guarded_text,
            header,
            first: true,
        }
    }

    /// Appends `row`'s line to `to` (unless not `with_row`), after the header's when it is the
    /// first row and this encoder writes one.
    fn encode<T: CsvRow>(&mut self, row: &T, to: &mut Vec<u8>, with_row: bool) -> Result<()> {
        // Nothing is left of a row whose writing failed.
        self.plain_text.0.borrow_mut().clear();
        self.plain.serialize(row)?;
        self.plain.flush()?;
        let plain = self.plain_text.0.take();
        let mut header = self.header && self.first;
        let (more_header, more_cells) = (T::more_header(), row.more_cells()?);
        let guarded = &mut self.guarded;
        split(&plain, |cells| {
            if !header && !with_row {
                return Ok(());
            }
            let more: Vec<&str> = match header {
                true => more_header.to_vec(),
                false => more_cells.iter().map(String::as_str).collect(),
            };
            let cells: Vec<_> = (cells.iter().chain(&more))
                .map(|c| spreadsheet::guard(c))
                .collect();
            guarded.write_record(cells.iter().map(|c| c.as_bytes()))?;
            header = false;
            Ok(())
        })?;
        self.guarded.flush()?;
        to.append(&mut self.guarded_text.0.borrow_mut());
        // The buffer back, emptied, its capacity kept.
        let mut plain = plain;
        plain.clear();
        self.plain_text.0.replace(plain);
        self.first = false;
        Ok(())
    }
}

/// A buffer a csv writer writes into, read by the one who holds its other end.
#[derive(Clone, Default)]
struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Calls `each` with every record of serde's CSV text `input`, its cells in order, split by this
/// thread's one reader: building the csv crate's reader for every row and added knob cost
/// 60 us each, most of a merge's time.
pub(crate) fn split(input: &[u8], each: impl FnMut(&[&str]) -> Result<()>) -> Result<()> {
    thread_local! {
        static CELLS: std::cell::RefCell<Cells> = std::cell::RefCell::new(Cells::default());
    }
    CELLS.with(|cells| cells.borrow_mut().each(input, each))
}

/// A CSV reader kept between records, and its buffers.
struct Cells {
    core: csv_core::Reader,
    /// A record's cells, end to end, and where each ends.
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Default for Cells {
    fn default() -> Cells {
        Cells {
            core: csv_core::Reader::new(),
            text: vec![0; 4096],
            ends: vec![0; 128],
        }
    }
}

impl Cells {
    /// Calls `each` with every record of `input`, its cells in order.
    fn each(
        &mut self,
        mut input: &[u8],
        mut each: impl FnMut(&[&str]) -> Result<()>,
    ) -> Result<()> {
        use csv_core::ReadRecordResult as Read;
        self.core.reset();
        let (mut length, mut count) = (0, 0);
        loop {
            let (read, taken, written, ended) =
                self.core
                    .read_record(input, &mut self.text[length..], &mut self.ends[count..]);
            input = &input[taken..];
            (length, count) = (length + written, count + ended);
            match read {
                // The input's end is said by an empty input, on the next turn.
                Read::InputEmpty => {}
                Read::OutputFull => self.text.resize(self.text.len() * 2, 0),
                Read::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                Read::Record => {
                    let mut start = 0;
                    let mut cells = Vec::with_capacity(count);
                    for end in &self.ends[..count] {
                        cells.push(std::str::from_utf8(&self.text[start..*end])?);
                        start = *end;
                    }
                    each(&cells)?;
                    (length, count) = (0, 0);
                }
                Read::End => return Ok(()),
            }
        }
    }
}

/// The directory a file is written in.
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `bytes` to `path`, atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".shmbench-")
        .suffix(".tmp")
        .tempfile_in(parent(path))?;
    tmp.write_all(bytes)?;
    persist(tmp, path)
}

/// Puts a written temporary file in `path`'s place: its mode set, synced, renamed.
fn persist(tmp: NamedTempFile, path: &Path) -> Result<()> {
    // A temporary file is 0600: the result keeps the permissions of the regular file it
    // replaces, or is readable by all as a new file is (results are shared: CI artifacts, a
    // team's folder). A symlink in its place is replaced, never followed for a mode, and no
    // set-id bit is carried.
    let mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0o644, |m| m.permissions().mode() & 0o777);
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
