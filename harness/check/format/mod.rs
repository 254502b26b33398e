//! `shmbench check`'s report, one file per format behind [`CheckFormat`]: `text` for people,
//! `json`, `sarif` (SARIF 2.1.0, for code scanning) and `github` (workflow annotations). Each
//! keeps the untrusted names and values it writes from commanding a CI runner that reads the
//! log.

mod github;
mod json;
mod sarif;
mod text;

use crate::Report;

/// JSON with `##[` written `#\u0023[`: the same string to a JSON reader, while a CI runner
/// that reads the log takes `##[` anywhere in a line as one of its older commands
/// (`##[set-output name=x]`), and names and values come from untrusted files. No line of
/// pretty-printed JSON can begin with `::` (the newer commands): each starts with space, a
/// quote or a bracket.
pub fn json_for_logs(json: &str) -> String {
    json.replace("##[", "#\\u0023[")
}

/// A way to write a check's report.
pub trait CheckFormat {
    fn render(&self, report: &Report) -> String;
}

model::choice! {
    /// The format `--format` names.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FormatName {
        Text = "text",
        Json = "json",
        Sarif = "sarif",
        Github = "github",
    }
}

pub fn format(name: FormatName) -> Box<dyn CheckFormat> {
    match name {
        FormatName::Text => Box::new(text::Text),
        FormatName::Json => Box::new(json::Json),
        FormatName::Sarif => Box::new(sarif::Sarif),
        FormatName::Github => Box::new(github::Github),
    }
}
