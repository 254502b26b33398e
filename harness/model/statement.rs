//! A sentence of a source being checked (the how-to) that a set of cells measures together, as
//! data in a scenario's `[[claims]]`: its words (a short quote and the section it is in), the
//! cells, the quantity measured, and what the sentence says of it. `analysis::statements` judges
//! it against the rows; the report's "claims, checked" section shows both.
//!
//! ```toml
//! [[claims]]
//! id = "prefetch-grows-shm"
//! section = "Optimizing DataLoader Flags"
//! quote = "each prefetched batch sits in shared memory"
//! kind = "grows"
//! quantity = "peak-shm"
//! cells = ["prefetch-1", "prefetch-2", "prefetch-4"]
//! ```

use serde::{Deserialize, Serialize};

use super::record::Status;
use super::size::ByteSize;

/// What the sentence says of the measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatementKind {
    /// Every cell ends as `expect` says (`pass`, `sigbus`, `oom`, `emfile`, ...).
    Status,
    /// The quantity is (about) zero in every cell.
    Zero,
    /// The quantity rises along the cells, in their order.
    Grows,
    /// The quantity stays level along the cells.
    Flat,
    /// The first cell's quantity is clearly above the second's.
    Greater,
    /// `size` of /dev/shm is what it takes: no smaller cell of the list passes, and it does.
    SmallestPass,
}

/// The quantity a statement is about, read from each cell's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quantity {
    /// Peak /dev/shm in use.
    #[default]
    PeakShm,
    /// The most file descriptors the loader's main held.
    PeakFds,
    /// Throughput.
    ImgPerS,
}

impl Quantity {
    pub fn name(self) -> &'static str {
        match self {
            Quantity::PeakShm => "peak /dev/shm",
            Quantity::PeakFds => "open fds in the main",
            Quantity::ImgPerS => "img/s",
        }
    }
}

/// One sentence and how it is measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Statement {
    pub id: String,
    /// The section of the source it is in.
    pub section: String,
    /// Its words, quoted short.
    pub quote: String,
    pub kind: StatementKind,
    #[serde(default)]
    pub quantity: Quantity,
    /// The cells that measure it, by name (in order, for `grows`, `flat` and `greater`).
    pub cells: Vec<String>,
    /// For `status`: how the sentence says every cell ends.
    #[serde(default)]
    pub expect: Option<Status>,
    /// For `smallest-pass`: the /dev/shm size the sentence says is needed.
    #[serde(default)]
    pub size: Option<ByteSize>,
}

impl Statement {
    /// What is wrong with it as written (before any cell runs), naming the key.
    pub fn problem(&self, known_cells: &[&str]) -> Option<String> {
        let needs = |n: usize| self.cells.len() < n;
        if let Some(cell) = self
            .cells
            .iter()
            .find(|c| !known_cells.contains(&c.as_str()))
        {
            return Some(format!("cells: no cell is named '{cell}'"));
        }
        match self.kind {
            StatementKind::Status if self.expect.is_none() => {
                Some("kind status needs expect (pass, sigbus, enospc, oom, emfile)".into())
            }
            StatementKind::SmallestPass if self.size.is_none() => {
                Some("kind smallest-pass needs size (the /dev/shm size it says is needed)".into())
            }
            StatementKind::Grows | StatementKind::Flat if needs(2) => {
                Some("a trend needs at least two cells".into())
            }
            StatementKind::Greater if self.cells.len() != 2 => {
                Some("kind greater compares exactly two cells: the larger first".into())
            }
            _ if self.cells.is_empty() => Some("cells: name the cells that measure it".into()),
            _ => None,
        }
    }
}
