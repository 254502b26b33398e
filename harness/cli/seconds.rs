//! A flag's value in seconds (`min-shm --budget`, `tune --max-time`): a positive number, as
//! a duration.

use std::time::Duration;

/// Parses `text` as a positive number of seconds.
pub(crate) fn positive(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text}: give a positive number of seconds"))
}
