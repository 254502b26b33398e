//! How many times each cell runs: a fixed count, or `auto`: interleaved rounds until every
//! passing cell's 95% interval of CPU per image is narrower than a target (the Phoronix Test
//! Suite's rule: add runs until the estimate is tight), within a minimum and a maximum.

use super::bad_value::BadValue;
use std::str::FromStr;

/// Repetitions of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Repeat {
    Fixed(u32),
    Auto(UntilStable),
}

/// The stopping rule of `--repeat auto`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UntilStable {
    /// Width of the 95% interval over the median, e.g. 0.03.
    pub target: f64,
    /// Rounds run before any cell may stop (an interval needs a few runs to mean anything).
    pub min: u32,
    /// Rounds after which a cell stops, converged or not.
    pub max: u32,
}

/// Rounds before `auto` may stop a cell: fewer give bootstrap intervals that are too optimistic.
pub const AUTO_MIN_ROUNDS: u32 = 3;

impl Repeat {
    /// The most rounds any cell can run.
    pub fn max_rounds(self) -> u32 {
        match self {
            Repeat::Fixed(n) => n.max(1),
            Repeat::Auto(rule) => rule.max,
        }
    }

    /// With the stopping rule's target and maximum filled in from their flags.
    pub fn with_rule(self, target: f64, max: u32) -> Repeat {
        match self {
            Repeat::Auto(_) => Repeat::Auto(UntilStable {
                target,
                min: AUTO_MIN_ROUNDS.min(max),
                max,
            }),
            fixed => fixed,
        }
    }
}

impl FromStr for Repeat {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Repeat, BadValue> {
        if s.trim() == "auto" {
            return Ok(Repeat::Auto(UntilStable {
                target: 0.03,
                min: AUTO_MIN_ROUNDS,
                max: 10,
            }));
        }
        match s.trim().parse::<u32>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(Repeat::Fixed(n)),
            _ => Err(BadValue::new(
                s,
                "a repeat count: write a number from 1 to 1000, or auto",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counts_and_auto() {
        assert_eq!("3".parse::<Repeat>(), Ok(Repeat::Fixed(3)));
        assert!(matches!("auto".parse::<Repeat>(), Ok(Repeat::Auto(_))));
        assert!("0".parse::<Repeat>().is_err());
        assert!("often".parse::<Repeat>().is_err());
        let rule = "auto".parse::<Repeat>().unwrap().with_rule(0.05, 2);
        assert_eq!(
            rule,
            Repeat::Auto(UntilStable {
                target: 0.05,
                min: 2,
                max: 2
            })
        );
        assert_eq!(rule.max_rounds(), 2);
    }
}
