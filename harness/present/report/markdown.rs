//! `report.md`: GitHub-flavoured Markdown, with the plots as PNG files beside it.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::block::Block;
use super::document;
use super::{Format, ReportContent};

pub struct Markdown;

/// Escapes a table cell (pipes would end it).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

impl Format for Markdown {
    fn write(&self, report: &ReportContent, dir: &Path) -> Result<PathBuf> {
        let mut out = String::new();
        for block in document::build(report) {
            match block {
                Block::Heading(level, text) => {
                    out.push_str(&format!("{} {text}\n\n", "#".repeat(level as usize)))
                }
                Block::Paragraph(text) => out.push_str(&format!("{text}\n\n")),
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
                        out.push_str(&format!("- {item}\n"));
                    }
                    out.push('\n');
                }
                Block::Code(text) => out.push_str(&format!("```sh\n{text}\n```\n\n")),
                Block::Plot(i) => {
                    let plot = &report.plots[i];
                    if i == 0 {
                        // Markdown links files; pasted alone, the images are lost.
                        out.push_str("The plots are files beside this report.md: attach them with it when you paste it into an issue (the HTML report, `--format html`, holds them inline).\n\n");
                    }
                    out.push_str(&format!(
                        "![{}]({}) ([SVG]({}))\n\n",
                        plot.title, plot.png, plot.svg_file
                    ));
                }
            }
        }
        let path = dir.join("report.md");
        std::fs::write(&path, out)?;
        Ok(path)
    }
}
