//! Reports made from results files only (never by running cells): the matrix in the how-to's
//! shape, the how-to's claims beside the measurements and those several cells measure together
//! (`checked`), watched jobs, plots, and the environment, as Markdown, self-contained HTML and
//! JSON. One file per output format behind [`Format`], chosen by [`FormatName`]; the plots are
//! written once as PNG and SVG and shared by the formats.

mod block;
pub mod claims_checked;
mod document;
pub mod font;
mod html;
mod json;
mod markdown;
pub mod plots;
pub mod watched_jobs;

use std::path::{Path, PathBuf};

use std::collections::HashSet;

use anyhow::{bail, Result};

use analysis::cell_key::CellKey;
use analysis::summary::{CellSummary, Summaries};
use model::knobs::Loader;

use model::statement::Statement;
use model::watch::WatchFindings;
use results::claims_file;
use results::steps::{self, StepRow};
use results::stream;
use results::watch_file;
use results::Row;

/// One results file and what could be read of it.
pub struct Source {
    pub path: PathBuf,
    /// How the report names this source (its file stem; with the host when there are several).
    pub label: String,
    /// The rows it shows: each cell's first run per host and environment (a fleet's year is a
    /// million rows, and a report speaks of cells; [`Source::cells`] summarises every run).
    pub rows: Vec<Row>,
    /// Every row of the cells its statements name (they are judged over all their runs).
    pub statement_rows: Vec<Row>,
    /// Every loader cell over all its runs, in order of first appearance.
    pub cells: Vec<CellSummary>,
    /// How many rows the file holds.
    pub total_rows: usize,
    /// Per row (same order): the time series; where it is missing, the problems say why.
    pub series: Vec<Option<Vec<StepRow>>>,
    /// Per row (same order): what watching it saw, for a watched command's row.
    pub watches: Vec<Option<WatchFindings>>,
    /// The sentences its scenario's cells measure together (`[[claims]]`), kept beside it.
    pub statements: Vec<Statement>,
}

/// Everything a report shows.
pub struct ReportContent {
    pub sources: Vec<Source>,
    /// What could not be read, said in the report rather than failing it.
    pub problems: Vec<String>,
    /// Plot files written for it (PNG and SVG), relative to the report directory.
    pub plots: Vec<plots::Plot>,
}

/// An output format.
pub trait Format {
    /// Writes the report into `dir`; returns the file written.
    fn write(&self, report: &ReportContent, dir: &Path) -> Result<PathBuf>;
}

model::choice! {
    /// The formats `--format` names, in the order they are written (Markdown, the report, first).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FormatName {
        Markdown = "markdown" | "md": "`report.md`, GitHub-flavoured Markdown",
        Html = "html": "`report.html`, self-contained (inline SVG plots and CSS)",
        Json = "json": "`report.json`, the rows and verdicts for programs",
    }
}

impl FormatName {
    /// Every format, in the order they are written.
    pub const ALL: [FormatName; 3] = [FormatName::Markdown, FormatName::Html, FormatName::Json];

    /// The writer of this format.
    pub fn writer(self) -> Box<dyn Format> {
        match self {
            FormatName::Markdown => Box::new(markdown::Markdown),
            FormatName::Html => Box::new(html::Html),
            FormatName::Json => Box::new(json::Json),
        }
    }
}

impl ReportContent {
    /// Reads results files; an unreadable file or time series becomes a problem the report
    /// states, and only no readable rows at all is an error.
    pub fn load(paths: &[PathBuf]) -> Result<ReportContent> {
        let mut sources = Vec::new();
        let mut problems = Problems::default();
        for path in paths {
            match Source::load(path, &mut problems) {
                Ok(Some(source)) => sources.push(source),
                Ok(None) => problems.push(format!("{}: no rows (an empty run)", path.display())),
                Err(e) => problems.push(format!("{e:#}")),
            }
        }
        if sources.is_empty() {
            bail!("nothing to report: {}", problems.finish().join("; "));
        }
        if sources.len() > 1 {
            for s in &mut sources {
                let host = s.rows.first().map(|r| r.host.clone()).unwrap_or_default();
                s.label = format!("{host}: {}", s.label);
            }
        }
        Ok(ReportContent {
            sources,
            problems: problems.finish(),
            plots: Vec::new(),
        })
    }

    /// Writes plots and the chosen formats into `dir`; returns the files written, report first.
    pub fn write(mut self, dir: &Path, chosen: &[FormatName]) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        match plots::write_all(&self, dir) {
            Ok(plots) => self.plots = plots,
            Err(e) => self.problems.push(format!("plots were not drawn: {e:#}")),
        }
        let mut written = Vec::new();
        for name in FormatName::ALL.into_iter().filter(|f| chosen.contains(f)) {
            written.push(name.writer().write(&self, dir)?);
        }
        Ok(written)
    }
}

/// What could not be read, said once each and at most [`Problems::SAID`] of them (a fleet's
/// files can miss a time series per row).
#[derive(Default)]
struct Problems {
    said: Vec<String>,
    seen: std::collections::HashSet<String>,
    more: usize,
}

impl Problems {
    const SAID: usize = 20;

    fn push(&mut self, problem: String) {
        if self.seen.contains(&problem) {
            return;
        }
        match self.said.len() < Self::SAID {
            true => {
                self.seen.insert(problem.clone());
                self.said.push(problem);
            }
            false => self.more += 1,
        }
    }

    fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.said
                .push(format!("and {} more problem(s) like these", self.more));
        }
        self.said
    }
}

impl Source {
    /// Reads one results file as it streams by, keeping what the report shows; `None` when it
    /// holds no rows.
    fn load(path: &Path, problems: &mut Problems) -> Result<Option<Source>> {
        let statements = claims_file::read(path).unwrap_or_else(|e| {
            problems.push(format!("{e:#}"));
            Vec::new()
        });
        let named: HashSet<&str> = statements
            .iter()
            .flat_map(|s| s.cells.iter().map(String::as_str))
            .collect();
        // A row is shown when it is the first of its cell on its host and environment.
        let keys = |r: &Row| {
            let key = CellKey::of(r);
            let shown = (r.host.clone(), r.environment.clone(), key.clone());
            (key, shown)
        };
        let mut shown = HashSet::new();
        let (mut rows, mut statement_rows) = (Vec::new(), Vec::new());
        let mut cells = Summaries::new();
        let mut total_rows = 0;
        stream::each_prepared(
            std::slice::from_ref(&path.to_path_buf()),
            keys,
            |(key, first), row| {
                total_rows += 1;
                if row.loader != Loader::Command {
                    cells.add(key, row);
                }
                if named.contains(row.cell.as_str()) {
                    statement_rows.push(row.clone());
                }
                if !shown.contains(first) {
                    shown.insert(first.clone());
                    rows.push(row.clone());
                }
                Ok(())
            },
        )?;
        if total_rows == 0 {
            return Ok(None);
        }
        let series = rows
            .iter()
            .map(|r| {
                let read = match &r.steps_file {
                    Some(rel) => steps::read(path, rel),
                    None => Err(anyhow::anyhow!(
                        "{}: cell {} names no time series",
                        path.display(),
                        r.cell
                    )),
                };
                read.map_err(|e| problems.push(format!("{e:#}"))).ok()
            })
            .collect::<Vec<_>>();
        let watches = rows
            .iter()
            .map(|r| {
                let file = r.watch_file.as_deref()?;
                watch_file::read(path, file)
                    .map_err(|e| problems.push(format!("{e:#}")))
                    .ok()
            })
            .collect();
        let label = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Some(Source {
            path: path.to_path_buf(),
            label,
            rows,
            statement_rows,
            cells: cells.finish(),
            total_rows,
            series,
            watches,
            statements,
        }))
    }
}

/// Default report directory for results file `csv`: `reports/<csv stem>/`.
pub fn default_dir(csv: &Path) -> PathBuf {
    let stem = csv
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    PathBuf::from("reports").join(stem)
}
