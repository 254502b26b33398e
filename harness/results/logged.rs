//! Records read from other machines' logs (a pod's, a Slurm task's output file): untrusted data.
//! A line is taken only when it parses as the record it claims to be and its scenario and cell
//! names may name a file, since names become paths beside the results.

use serde::de::DeserializeOwned;

use crate::model::config::CellConfig;
use crate::model::name;

/// Why a record's scenario or cell name may not name a file, if it may not.
pub(crate) fn names_problem(config: &CellConfig) -> Option<String> {
    [("scenario", &config.scenario), ("cell", &config.cell)]
        .into_iter()
        .find_map(|(what, value)| {
            name::problem(value).map(|p| format!("{what} name {value:?} {p}"))
        })
}

/// Whether a log line's body looks like a cell record (a JSON object with a config), so that a
/// line that does but does not parse is named rather than skipped.
pub(crate) fn looks_like_record(body: &str) -> bool {
    body.starts_with('{') && body.contains("\"config\"")
}

/// `json`, the body of 1-based line `line`, read as a `T` whose config is `config_of` it; Err:
/// why not, naming the line.
pub(crate) fn read_line<T: DeserializeOwned>(
    json: &str,
    line: usize,
    config_of: impl Fn(&T) -> &CellConfig,
) -> Result<T, String> {
    let value = serde_json::from_str::<T>(json).map_err(|e| format!("line {line}: {e}"))?;
    match names_problem(config_of(&value)) {
        Some(problem) => Err(format!("line {line}: {problem}")),
        None => Ok(value),
    }
}
