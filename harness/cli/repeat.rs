//! The measuring flags `run` and `matrix` share: `--repeat N|auto` and auto's stopping rule,
//! and `--no-calibrate`.

use crate::model::repeat::Repeat;
use crate::orchestrate::runner::Calibrate;

#[derive(clap::Args, Debug)]
pub(crate) struct RepeatArgs {
    /// Run every cell this many times, interleaved (for statistics and `compare`); `auto` adds
    /// interleaved rounds until every passing cell's 95% interval of CPU per image is narrower
    /// than --until-ci (at least 3 rounds, at most --max-repeat)
    #[arg(long, default_value = "1", value_name = "N|auto")]
    pub(crate) repeat: Repeat,
    /// `--repeat auto`: the interval width to reach, relative to the median (3%, 0.03)
    #[arg(long, default_value = "3%", value_parser = super::compare::parse_threshold)]
    pub(crate) until_ci: f64,
    /// `--repeat auto`: the most rounds any cell runs (default 10). `matrix --baseline` with a
    /// fixed --repeat: runs are added to a cell the comparison leaves undecided, until it is
    /// decided or has this many
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) max_repeat: Option<u32>,
}

/// The most rounds of `--repeat auto` when `--max-repeat` is not given.
const AUTO_MAX_REPEAT: u32 = 10;

impl RepeatArgs {
    pub(crate) fn repeat(&self) -> Repeat {
        let max = self.max_repeat.unwrap_or(AUTO_MAX_REPEAT);
        self.repeat.with_rule(self.until_ci, max)
    }

    /// The cap on runs added to undecided cells: `--max-repeat` given with a fixed `--repeat`.
    pub(crate) fn more_runs_cap(&self) -> Option<u32> {
        match self.repeat {
            Repeat::Fixed(_) => self.max_repeat,
            Repeat::Auto(_) => None,
        }
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct CalibrateArgs {
    /// Skip measuring this machine's data path first (about a second with every core busy):
    /// the rows' efficiency columns (img/s against this machine's limit) stay empty. For a
    /// check repeated on many nodes, judged by img/s against each other (`shmbench fleet`)
    #[arg(long)]
    pub(crate) no_calibrate: bool,
}

impl CalibrateArgs {
    pub(crate) fn calibrate(&self) -> Calibrate {
        match self.no_calibrate {
            true => Calibrate::Skip,
            false => Calibrate::First,
        }
    }
}
