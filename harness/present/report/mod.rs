//! Reports made from results files only (never by running cells): the matrix in the how-to's
//! shape, the how-to's claims beside the measurements and those several cells measure together
//! (`checked`), watched jobs, plots, and the environment, as Markdown,
//! self-contained HTML and JSON. One file per output format behind [`Format`]; the plots are
//! written once as PNG and SVG and shared by the formats.

mod block;
pub(crate) mod checked;
mod document;
pub mod font;
mod html;
mod json;
mod markdown;
pub mod plots;
pub(crate) mod watched;

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::model::statement::Statement;
use crate::model::watch::WatchReport;
use crate::results::csv;
use crate::results::statements;
use crate::results::steps::{self, StepRow};
use crate::results::watch;
use crate::results::Row;

/// One results file and what could be read of it.
pub struct Source {
    pub path: PathBuf,
    /// How the report names this source (its file stem; with the host when there are several).
    pub label: String,
    pub rows: Vec<Row>,
    /// Per row (same order): the time series, or why it is missing.
    pub series: Vec<Result<Vec<StepRow>, String>>,
    /// Per row (same order): what watching it saw, for a watched command's row.
    pub watches: Vec<Option<WatchReport>>,
    /// The sentences its scenario's cells measure together (`[[claims]]`), kept beside it.
    pub statements: Vec<Statement>,
}

/// Everything a report shows.
pub struct Report {
    pub sources: Vec<Source>,
    /// What could not be read, said in the report rather than failing it.
    pub problems: Vec<String>,
    /// Plot files written for it (PNG and SVG), relative to the report directory.
    pub plots: Vec<plots::Plot>,
}

/// An output format.
pub trait Format {
    /// The format's name on the command line (`md`, `html`, `json`).
    fn name(&self) -> &'static str;
    /// Writes the report into `dir`; returns the file written.
    fn write(&self, report: &Report, dir: &Path) -> Result<PathBuf>;
}

/// All formats, by name.
pub fn formats() -> Vec<Box<dyn Format>> {
    vec![
        Box::new(markdown::Markdown),
        Box::new(html::Html),
        Box::new(json::Json),
    ]
}

impl Report {
    /// Reads results files; an unreadable file or time series becomes a problem the report
    /// states, and only no readable rows at all is an error.
    pub fn load(paths: &[PathBuf]) -> Result<Report> {
        let mut sources = Vec::new();
        let mut problems = Vec::new();
        for path in paths {
            match csv::read(path) {
                Ok(rows) if rows.is_empty() => {
                    problems.push(format!("{}: no rows (an empty run)", path.display()))
                }
                Ok(rows) => {
                    let series = rows
                        .iter()
                        .map(|r| match &r.steps_file {
                            Some(rel) => steps::read(path, rel).map_err(|e| format!("{e:#}")),
                            None => Err(format!(
                                "{}: cell {} names no time series",
                                path.display(),
                                r.cell
                            )),
                        })
                        .collect::<Vec<_>>();
                    for e in series.iter().filter_map(|s| s.as_ref().err()) {
                        problems.push(e.clone());
                    }
                    let watches = rows
                        .iter()
                        .map(|r| {
                            let file = r.watch_file.as_deref()?;
                            watch::read(path, file)
                                .map_err(|e| problems.push(format!("{e:#}")))
                                .ok()
                        })
                        .collect();
                    let stem = path
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let statements = statements::read(path).unwrap_or_else(|e| {
                        problems.push(format!("{e:#}"));
                        Vec::new()
                    });
                    sources.push(Source {
                        path: path.clone(),
                        label: stem,
                        rows,
                        series,
                        watches,
                        statements,
                    });
                }
                Err(e) => problems.push(format!("{e:#}")),
            }
        }
        if sources.is_empty() {
            bail!("nothing to report: {}", problems.join("; "));
        }
        if sources.len() > 1 {
            for s in &mut sources {
                let host = s.rows.first().map(|r| r.host.clone()).unwrap_or_default();
                s.label = format!("{host}: {}", s.label);
            }
        }
        Ok(Report {
            sources,
            problems,
            plots: Vec::new(),
        })
    }

    /// Writes plots and the chosen formats into `dir`; returns the files written, report first.
    pub fn write(mut self, dir: &Path, chosen: &[String]) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        let all = formats();
        for name in chosen {
            if !all.iter().any(|f| f.name() == name) {
                let known: Vec<&str> = all.iter().map(|f| f.name()).collect();
                bail!(
                    "unknown report format '{name}': choose from {}",
                    known.join(", ")
                );
            }
        }
        match plots::write_all(&self, dir) {
            Ok(plots) => self.plots = plots,
            Err(e) => self.problems.push(format!("plots were not drawn: {e:#}")),
        }
        let mut written = Vec::new();
        for format in all.iter().filter(|f| chosen.iter().any(|c| c == f.name())) {
            written.push(format.write(&self, dir)?);
        }
        Ok(written)
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
