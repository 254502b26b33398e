//! `shmbench check`'s report, one file per format behind [`CheckFormat`]: `text` for people,
//! `json`, `sarif` (SARIF 2.1.0, for code scanning) and `github` (workflow annotations).

mod github;
mod json;
mod sarif;
mod text;

use crate::check::Report;

/// A way to write a check's report.
pub(crate) trait CheckFormat {
    fn render(&self, report: &Report) -> String;
}

/// The format `--format` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum FormatName {
    Text,
    Json,
    Sarif,
    Github,
}

pub(crate) fn format(name: FormatName) -> Box<dyn CheckFormat> {
    match name {
        FormatName::Text => Box::new(text::Text),
        FormatName::Json => Box::new(json::Json),
        FormatName::Sarif => Box::new(sarif::Sarif),
        FormatName::Github => Box::new(github::Github),
    }
}
