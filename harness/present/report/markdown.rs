//! `report.md`: GitHub-flavoured Markdown, with the plots as PNG files beside it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::block::Block;
use super::document;
use super::{Format, ReportContent};
use crate::terminal::{no_workflow_commands, shown};

pub struct Markdown;

/// `text` as one line of Markdown data: control characters escaped, and `<` as an entity, so
/// no field becomes HTML that GitHub renders (an image that calls home, a link dressed as
/// advice).
fn data(text: &str) -> String {
    shown(text).replace('<', "&lt;")
}

/// Escapes a table cell (pipes would end it), as one line of data.
fn cell(text: &str) -> String {
    data(text).replace('|', "\\|")
}

/// A fence longer than any run of backticks in `lines` (a line of them would end it early).
fn fence(lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

impl Format for Markdown {
    fn write(&self, report: &ReportContent, dir: &Path) -> Result<PathBuf> {
        let mut out = String::new();
        for block in document::build(report) {
            match block {
                Block::Heading(level, text) => out.push_str(&format!(
                    "{} {}\n\n",
                    "#".repeat(level as usize),
                    data(&text)
                )),
                Block::Paragraph(text) => out.push_str(&format!("{}\n\n", data(&text))),
                Block::Table(headers, rows) => {
                    let headers: Vec<String> = headers.iter().map(|h| cell(h)).collect();
                    let rows: Vec<Vec<String>> = rows
                        .iter()
                        .map(|r| r.iter().map(|c| cell(c)).collect())
                        .collect();
                    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
                    out.push_str(&crate::table::markdown(&header_refs, &rows));
                    out.push_str("\n\n");
                }
                Block::List(items) => {
                    for item in items {
                        out.push_str(&format!("- {}\n", data(&item)));
                    }
                    out.push('\n');
                }
                Block::Code(lines) => {
                    let lines: Vec<String> = lines.iter().map(|l| shown(l)).collect();
                    let fence = fence(&lines);
                    out.push_str(&format!("{fence}sh\n{}\n{fence}\n\n", lines.join("\n")));
                }
                Block::Plot(i) => {
                    let plot = &report.plots[i];
                    if i == 0 {
                        // Markdown links files; pasted alone, the images are lost.
                        out.push_str("The plots are files beside this report.md: attach them with it when you paste it into an issue (the HTML report, `--format html`, holds them inline).\n\n");
                    }
                    out.push_str(&format!(
                        "![{}]({}) ([SVG]({}))\n\n",
                        data(&plot.title),
                        plot.png,
                        plot.svg_file
                    ));
                }
            }
        }
        let path = dir.join("report.md");
        // A line a field begins (a command in the code block) is never a workflow command.
        std::fs::write(&path, no_workflow_commands(&out))?;
        Ok(path)
    }
}
