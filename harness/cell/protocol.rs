//! What a cell process and the runtime that launched it agree on, beyond the JSON record on
//! stdout: the environment variables a runtime sets and the progress lines a cell writes on
//! stderr. Both sides use these definitions, so they cannot drift apart.

/// Set (to anything) by a runtime that wants progress lines on stderr.
pub const PROGRESS_ENV: &str = "SHMBENCH_PROGRESS";

/// Set to `stdin` by the Docker runtime: end the cell when stdin closes (the harness died).
pub const LIFELINE_ENV: &str = "SHMBENCH_LIFELINE";

/// Progress of a running cell, as its stderr reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub step: u64,
    pub total: u64,
}

impl Progress {
    /// The stderr line for this progress: `progress <step> <total>`.
    pub fn line(self) -> String {
        format!("progress {} {}", self.step, self.total)
    }

    /// Reads a line written by [`Progress::line`]; None for any other line.
    pub fn parse(line: &str) -> Option<Progress> {
        let mut parts = line.strip_prefix("progress ")?.split(' ');
        let step = parts.next()?.parse().ok()?;
        let total = parts.next()?.parse().ok()?;
        Some(Progress { step, total })
    }
}

#[cfg(test)]
mod tests {
    use super::Progress;

    #[test]
    fn progress_lines_round_trip() {
        let p = Progress {
            step: 7,
            total: 100,
        };
        assert_eq!(Progress::parse(&p.line()), Some(p));
        assert_eq!(Progress::parse("warning: progress 1 2"), None);
    }
}
