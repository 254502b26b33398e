//! `report.html`: one self-contained file (inline SVG plots, inline CSS, no external assets) to
//! attach to an issue.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::block::Block;
use super::document;
use super::{Format, ReportContent};
use crate::terminal::shown;

pub struct Html;

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Markdown-style `code` spans become <code>; control characters are shown escaped.
fn inline(text: &str) -> String {
    let escaped = esc(&shown(text));
    let mut out = String::new();
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{part}</code>"));
        } else {
            out.push_str(part);
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#111}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:4px 8px;text-align:left;vertical-align:top}\
th{background:#eee}pre{background:#f4f4f4;padding:8px;overflow-x:auto}figure{margin:1em 0}svg{max-width:100%;height:auto}\
td.differs{background:#fde0cc}td.agrees{background:#d9f0e3}";

impl Format for Html {
    fn write(&self, report: &ReportContent, dir: &Path) -> Result<PathBuf> {
        let mut body = String::new();
        let mut title = String::from("shmbench report");
        for block in document::build(report) {
            match block {
                Block::Heading(level, text) => {
                    if level == 1 {
                        title = text.clone();
                    }
                    body.push_str(&format!("<h{level}>{}</h{level}>\n", inline(&text)));
                }
                Block::Paragraph(text) => body.push_str(&format!("<p>{}</p>\n", inline(&text))),
                Block::Table(headers, rows) => {
                    body.push_str("<table><tr>");
                    for h in &headers {
                        body.push_str(&format!("<th>{}</th>", inline(h)));
                    }
                    body.push_str("</tr>\n");
                    for row in rows {
                        body.push_str("<tr>");
                        for c in row {
                            let class = match c.as_str() {
                                "differs" | "agrees" => format!(" class=\"{c}\""),
                                _ => String::new(),
                            };
                            body.push_str(&format!("<td{class}>{}</td>", inline(&c)));
                        }
                        body.push_str("</tr>\n");
                    }
                    body.push_str("</table>\n");
                }
                Block::List(items) => {
                    body.push_str("<ul>\n");
                    for item in items {
                        body.push_str(&format!("<li>{}</li>\n", inline(&item)));
                    }
                    body.push_str("</ul>\n");
                }
                Block::Code(lines) => {
                    let lines: Vec<String> = lines.iter().map(|l| esc(&shown(l))).collect();
                    body.push_str(&format!("<pre><code>{}</code></pre>\n", lines.join("\n")))
                }
                Block::Plot(i) => {
                    let plot = &report.plots[i];
                    body.push_str(&format!(
                        "<figure>{}<figcaption>{}</figcaption></figure>\n",
                        plot.svg,
                        esc(&shown(&plot.title))
                    ));
                }
            }
        }
        let html = format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body></html>\n",
            esc(&shown(&title))
        );
        let path = dir.join("report.html");
        std::fs::write(&path, html)?;
        Ok(path)
    }
}
