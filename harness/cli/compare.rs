//! `shmbench compare`: two results files cell by cell, beyond noise; exit 1 on a regression, 3
//! on a cell the repeats could not judge (unless `--allow-undecided`).

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::Write;

use anyhow::{bail, Context, Result};

use crate::analysis::compare;
use crate::analysis::summary::{CellSummary, Summaries};
use crate::present::compare_tables as table;
use crate::results::{stream, Row};

/// What `--format` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    #[value(alias = "md")]
    Markdown,
    Github,
    Json,
}

/// What `shmbench compare --help` shows after the flags.
const AFTER_HELP: &str = "\
Examples:
  shmbench compare results/base.csv results/new.csv
  shmbench compare base.csv new.csv --threshold 3% --cpu-threshold 2% --out compare.md
  shmbench compare before.csv after.csv --match name    # a knob changed on purpose

Verdicts: outcome-changed (worse: fewer runs pass, or the crashes come earlier, beyond chance at
p < 0.05 by Fisher's exact test of the shares or a rank test of the crash steps; one run a side
is not judged: a flip needs 4 runs a side), regressed / improved (the 95% bootstrap interval of
the change of img/s, or of CPU time per image, lies wholly beyond its threshold), undecided (the
sides differ, or may, and the repeats are too few to judge it: one passing run a side gives no
interval, 3 passes against 3 crashes cannot reach p < 0.05; never called unchanged), unchanged,
new, missing.
Exit status: 1 when any cell regressed or its outcome got worse; else 3 when any cell is
undecided (0 with --allow-undecided); else 0; 2 on bad input (a measure that is NaN, infinite
or negative included).";

#[derive(clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The results file compared against (the earlier run, main's)
    pub(crate) baseline: PathBuf,
    /// The results file judged against it (the new run, the change's)
    pub(crate) candidate: PathBuf,
    /// Smallest img/s change that counts (5%, 0.05)
    #[arg(long, default_value = "5%", value_parser = parse_threshold)]
    pub(crate) threshold: f64,
    /// Smallest change of CPU time per image that counts (CPU time is work, not wall time: far
    /// less noisy on a shared machine, so a tighter threshold holds)
    #[arg(long, default_value = "3%", value_parser = parse_threshold)]
    pub(crate) cpu_threshold: f64,
    /// Smallest change of instructions per image that counts (where hardware counters measured
    /// them: a count of work, quieter still)
    #[arg(long, default_value = "2%", value_parser = parse_threshold)]
    pub(crate) instructions_threshold: f64,
    /// How cells are paired: config (same scenario, name and knobs) or name (same scenario and
    /// name; for a knob changed on purpose, which the note names)
    #[arg(long = "match", value_parser = super::choice::choice::<compare::Match>(), default_value = "config")]
    pub(crate) matching: compare::Match,
    /// markdown (a table), github (a one-line verdict first, then the table: for a pull-request
    /// comment or $GITHUB_STEP_SUMMARY) or json (every comparison with its intervals)
    #[arg(long, value_enum, default_value = "markdown")]
    pub(crate) format: Format,
    /// Also write the comparison here, in the same format
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Exit 0 even when a cell is undecided (its sides differ, or may, and the repeats are too
    /// few to judge it); without it, an undecided cell exits 3
    #[arg(long)]
    pub(crate) allow_undecided: bool,
}

/// The exit status when no cell regressed but one is undecided (1 is a regression, 2 bad input).
pub(crate) const EXIT_UNDECIDED: u8 = 3;

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    // Each side summarised as it is read, both at once: two 500k-row files are a few seconds.
    let summarized = |path: &PathBuf| -> Result<Vec<CellSummary>> {
        let mut cells = Summaries::new();
        let key = |r: &Row| args.matching.key(r, None);
        stream::each_prepared(std::slice::from_ref(path), key, |key, row| {
            cells.add(key, row);
            Ok(())
        })?;
        Ok(cells.finish())
    };
    let (base, cand) = std::thread::scope(|scope| {
        let base = scope.spawn(|| summarized(&args.baseline));
        let cand = summarized(&args.candidate);
        let base = base.join().expect("reading the baseline panicked");
        (base, cand)
    });
    let (base, cand) = (base?, cand?);
    let thresholds = compare::Thresholds {
        rate: args.threshold,
        cpu: args.cpu_threshold,
        instructions: args.instructions_threshold,
    };
    let comparisons = compare::compare_summaries(&base, &cand, thresholds);
    if !comparisons
        .iter()
        .any(|c| c.baseline.is_some() && c.candidate.is_some())
    {
        bail!(
            "no cell in common between {} and {}: compare results of the same scenario (cells match by scenario, name and configuration; --match name pairs them by name alone)",
            args.baseline.display(),
            args.candidate.display()
        );
    }
    if args.format == Format::Json {
        // Written as it is made, to each place (a fleet's year is a 110 MB document).
        let write = |out: &mut dyn std::io::Write| -> Result<()> {
            let mut out = std::io::BufWriter::new(out);
            table::write_json(&comparisons, thresholds, &mut out)?;
            writeln!(out)?;
            Ok(out.flush()?)
        };
        // The file first: a reader of stdout that stops early (`| head`) ends this process.
        if let Some(path) = &args.out {
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            write(&mut file).with_context(|| format!("cannot write {}", path.display()))?;
        }
        write(&mut std::io::stdout().lock())?;
        return Ok(verdict_exit(&comparisons, args.allow_undecided));
    }
    let text = match args.format {
        Format::Github => table::render_github(&comparisons, thresholds),
        _ => table::render(&comparisons, thresholds),
    };
    println!("{text}");
    if let Some(path) = args.out {
        let body = match args.format {
            Format::Markdown => format!(
                "# shmbench compare\n\n`{}` -> `{}`\n\n{text}\n",
                args.baseline.display(),
                args.candidate.display()
            ),
            _ => format!("{text}\n"),
        };
        std::fs::write(&path, body)?;
    }
    Ok(verdict_exit(&comparisons, args.allow_undecided))
}

/// The exit status a comparison gives (`compare`, and `matrix --baseline`): 1 on a regression,
/// else `EXIT_UNDECIDED` when a cell is undecided (unless allowed), else 0.
pub(crate) fn verdict_exit(comparisons: &[compare::Comparison], allow_undecided: bool) -> ExitCode {
    let regressed = comparisons.iter().any(|c| c.verdict.is_regression());
    let undecided = comparisons.iter().any(|c| c.verdict.is_undecided());
    if regressed {
        ExitCode::from(1)
    } else if undecided && !allow_undecided {
        eprintln!(
            "shmbench: undecided cell(s): too few runs to tell a change from chance (see their notes); rerun with more --repeat, or pass --allow-undecided to accept"
        );
        ExitCode::from(EXIT_UNDECIDED)
    } else {
        ExitCode::SUCCESS
    }
}

/// Parses a threshold: `5%`, `5` (a whole number: percent) or `0.05` (a fraction below 1). A
/// decimal of 1 or more (`1.0`, `2.5`) is refused: as a fraction it would be 100% or more, as
/// a percent it reads like one, so it must say which with `%`.
pub(crate) fn parse_threshold(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a threshold: write e.g. 5% or 0.05"))?;
    let whole = number.bytes().all(|b| b.is_ascii_digit());
    let fraction = if percent || whole {
        value / 100.0
    } else if value < 1.0 {
        value
    } else {
        return Err(format!(
            "'{text}' is ambiguous: write {value}% for a percent, or a fraction below 1 (0.05 is 5%)"
        ));
    };
    if !(fraction.is_finite() && (0.0..1.0).contains(&fraction)) {
        return Err(format!(
            "'{text}' is out of range: a threshold lies between 0% and 100%"
        ));
    }
    Ok(fraction)
}

#[cfg(test)]
mod tests {
    use super::parse_threshold;

    #[test]
    fn thresholds_are_percents_or_fractions_and_never_both() {
        assert_eq!(parse_threshold("5%"), Ok(0.05));
        assert_eq!(parse_threshold("5"), Ok(0.05));
        assert_eq!(parse_threshold("1"), Ok(0.01));
        assert_eq!(parse_threshold("0.9"), Ok(0.9));
        assert_eq!(parse_threshold("1.5%"), Ok(0.015));
        // 1.0 read as 1% and 0.9 as 90% was the trap: a decimal of 1 or more must say which.
        for ambiguous in ["1.0", "2.5"] {
            assert!(parse_threshold(ambiguous)
                .unwrap_err()
                .contains("ambiguous"));
        }
        assert!(parse_threshold("100%").is_err());
    }
}
