//! Comparisons and repeated-run summaries as Markdown tables (rustc-perf's summary shape:
//! regressions and improvements first).

use super::compare_note::{note, verdict_label};
use super::outcomes::{described, flip_needs, METHOD};
use super::{compare_json, table};
use analysis::compare::{Comparison, Thresholds, Verdict};
use analysis::outcomes::{Shares, ALPHA};
use analysis::summary::CellSummary;

fn rate_text(s: &Option<CellSummary>) -> String {
    match s {
        None => "-".into(),
        Some(s) => match (s.median, s.ci) {
            (Some(m), Some((lo, hi))) => format!("{m:.0} [{lo:.0}, {hi:.0}] n={}", s.rates.len()),
            (Some(m), None) => format!("{m:.0} n={}", s.rates.len()),
            _ => s.outcome.to_string(),
        },
    }
}

fn cpu_text(s: &Option<CellSummary>) -> String {
    match s
        .as_ref()
        .and_then(|s| s.cpu_median.map(|m| (m, s.cpu_ci, s.cpu.len())))
    {
        Some((m, Some((lo, hi)), n)) => format!("{m:.3} [{lo:.3}, {hi:.3}] n={n}"),
        Some((m, None, n)) => format!("{m:.3} n={n}"),
        None => "-".into(),
    }
}

/// A relative change and its interval, in percent.
pub(crate) fn change_text(change: Option<f64>, ci: Option<(f64, f64)>) -> String {
    match (change, ci) {
        (Some(x), Some((lo, hi))) => format!(
            "{:+.1}% [{:+.1}%, {:+.1}%]",
            x * 100.0,
            lo * 100.0,
            hi * 100.0
        ),
        (Some(x), None) => format!("{:+.1}%", x * 100.0),
        _ => "-".into(),
    }
}

/// Both thresholds, as every rendering states them.
pub(crate) fn thresholds_text(t: Thresholds) -> String {
    format!(
        "thresholds +-{:.0}% img/s, +-{:.0}% CPU per image",
        t.rate * 100.0,
        t.cpu * 100.0
    )
}

/// The smallest changes the baseline's own spread lets `compare` see, over its passing cells.
fn detectable_line(comparisons: &[Comparison], thresholds: Thresholds) -> String {
    let bases: Vec<&CellSummary> = comparisons
        .iter()
        .filter_map(|c| c.baseline.as_ref())
        .collect();
    let range = |values: Vec<f64>| -> Option<String> {
        let lo = values.iter().copied().reduce(f64::min)?;
        let hi = values.iter().copied().reduce(f64::max)?;
        Some(if (hi - lo) < 0.0005 {
            format!("{:.1}%", lo * 100.0)
        } else {
            format!("{:.1}-{:.1}%", lo * 100.0, hi * 100.0)
        })
    };
    let cpu = range(
        bases
            .iter()
            .filter_map(|b| analysis::compare::detectable(&b.cpu, thresholds.cpu))
            .collect(),
    );
    let rate = range(
        bases
            .iter()
            .filter_map(|b| analysis::compare::detectable(&b.rates, thresholds.rate))
            .collect(),
    );
    let runs = bases.iter().map(|b| b.rates.len()).max().unwrap_or(0);
    match (cpu, rate) {
        (None, None) => "detectable here: nothing (fewer than two passing runs per cell: use --repeat)".into(),
        (cpu, rate) => format!(
            "detectable here with the baseline's spread and up to {runs} runs per side: CPU per image changes beyond {}, img/s changes beyond {}",
            cpu.unwrap_or_else(|| "-".into()),
            rate.unwrap_or_else(|| "-".into())
        ),
    }
}

/// How outcomes were judged, and the smallest change of them these runs could show.
fn outcomes_line(comparisons: &[Comparison]) -> String {
    let judgements: Vec<_> = comparisons
        .iter()
        .filter_map(|c| c.outcomes.as_ref())
        .collect();
    let unjudged = judgements.iter().filter(|j| !j.judged).count();
    let share = judgements
        .iter()
        .filter_map(|j| j.detectable_share)
        .reduce(f64::max);
    let shift = judgements.iter().filter_map(|j| j.detectable_shift).max();
    let mut line = format!("outcomes judged over the repeats at p < {ALPHA} ({METHOD})");
    if let Some(share) = share {
        line.push_str(&format!(
            "; detectable here: a change of pass share of {:.0}% or more",
            share * 100.0
        ));
        if let Some(shift) = shift {
            line.push_str(&format!(
                ", a shift of the crash steps of {shift} step(s) or more"
            ));
        }
    }
    if unjudged > 0 {
        line.push_str(&format!(
            "; {unjudged} cell(s) with too few runs to judge their outcomes ({})",
            flip_needs()
        ));
    }
    line
}

/// The comparison as a Markdown table, regressions and improvements first (rustc-perf style).
pub fn render(comparisons: &[Comparison], thresholds: Thresholds) -> String {
    let mut sorted: Vec<&Comparison> = comparisons.iter().collect();
    sorted.sort_by_key(|c| match c.verdict {
        Verdict::OutcomeWorse => 0,
        Verdict::Regressed => 1,
        Verdict::Undecided => 2,
        Verdict::OutcomeChanged => 3,
        Verdict::Improved => 4,
        Verdict::New | Verdict::Missing => 5,
        Verdict::Unchanged => 6,
    });
    // Instructions only where hardware counters measured them.
    let counted = comparisons.iter().any(|c| c.instructions_change.is_some());
    let mut headers = vec![
        "cell",
        "verdict",
        "baseline img/s (median [95% CI])",
        "candidate img/s",
        "change [95% CI]",
        "baseline CPU ms/img",
        "candidate CPU ms/img",
        "CPU change [95% CI]",
    ];
    if counted {
        headers.push("instructions/img change [95% CI]");
    }
    headers.push("note");
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|c| {
            let mut row = vec![
                c.cell.clone(),
                verdict_label(c.verdict).into(),
                rate_text(&c.baseline),
                rate_text(&c.candidate),
                change_text(c.change, c.change_ci),
                cpu_text(&c.baseline),
                cpu_text(&c.candidate),
                change_text(c.cpu_change, c.cpu_change_ci),
            ];
            if counted {
                row.push(change_text(c.instructions_change, c.instructions_change_ci));
            }
            row.push(note(c));
            row
        })
        .collect();
    let regressions = comparisons
        .iter()
        .filter(|c| c.verdict.is_regression())
        .count();
    let improved = comparisons
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Improved | Verdict::OutcomeChanged))
        .count();
    let undecided = match undecided(comparisons).len() {
        0 => String::new(),
        n => format!("{n} undecided (too few runs to judge them: see their notes), "),
    };
    format!(
        "{} regression(s), {undecided}{} improvement(s) or other outcome change(s), {}\n{}\n{}\n\n{}",
        regressions,
        improved,
        thresholds_text(thresholds),
        detectable_line(comparisons, thresholds),
        outcomes_line(comparisons),
        table::markdown(&headers, &rows)
    )
}

/// The cells the repeats could not judge.
fn undecided(comparisons: &[Comparison]) -> Vec<&str> {
    comparisons
        .iter()
        .filter(|c| c.verdict.is_undecided())
        .map(|c| c.cell.as_str())
        .collect()
}

/// The comparison for a pull-request comment or `$GITHUB_STEP_SUMMARY`: a one-line verdict
/// first, then the table.
pub fn render_github(comparisons: &[Comparison], thresholds: Thresholds) -> String {
    let regressions: Vec<&str> = comparisons
        .iter()
        .filter(|c| c.verdict.is_regression())
        .map(|c| c.cell.as_str())
        .collect();
    let open = undecided(comparisons);
    let verdict = if regressions.is_empty() && !open.is_empty() {
        format!(
            "**shmbench: {} cell(s) undecided**, too few runs to judge a change: {}",
            open.len(),
            open.join(", ")
        )
    } else if regressions.is_empty() {
        format!(
            "**shmbench: no regression** in {} cell(s) ({})",
            comparisons.len(),
            thresholds_text(thresholds)
        )
    } else {
        format!(
            "**shmbench: {} regression(s)**: {}",
            regressions.len(),
            regressions.join(", ")
        )
    };
    format!(
        "{verdict}\n\n<details><summary>every cell</summary>\n\n{}\n\n</details>",
        render(comparisons, thresholds)
    )
}

/// The comparison as JSON: the thresholds and every cell's verdict, changes and intervals.
pub fn render_json(
    comparisons: &[Comparison],
    thresholds: Thresholds,
) -> serde_json::Result<String> {
    let mut text = Vec::new();
    write_json(comparisons, thresholds, &mut text)?;
    Ok(String::from_utf8(text).expect("serde_json writes UTF-8"))
}

/// [`render_json`]'s document written to `out` as it is made: a fleet's year of runs is a
/// 110 MB document, never held.
pub fn write_json(
    comparisons: &[Comparison],
    thresholds: Thresholds,
    out: impl std::io::Write,
) -> serde_json::Result<()> {
    /// The document, its keys in the order a map of them is written (alphabetical).
    #[derive(serde::Serialize)]
    struct Document<'a> {
        cells: compare_json::Cells<'a>,
        regressions: usize,
        thresholds: serde_json::Value,
        undecided: usize,
    }
    serde_json::to_writer_pretty(
        out,
        &Document {
            cells: compare_json::Cells(comparisons),
            regressions: comparisons
                .iter()
                .filter(|c| c.verdict.is_regression())
                .count(),
            thresholds: serde_json::json!({ "img_per_s": thresholds.rate, "cpu_ms_per_img": thresholds.cpu, "instructions_per_img": thresholds.instructions }),
            undecided: undecided(comparisons).len(),
        },
    )
}

/// Per-cell summary of repeated runs as a Markdown table.
pub fn render_summary(summaries: &[CellSummary]) -> String {
    let (headers, rows) = summary_cells(summaries);
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    table::markdown(&headers, &rows)
}

/// Each summary's name, with the knobs that tell it from the others of the same name (a matrix
/// spread over OCI runtimes has a `batch-8` under each: `batch-8 (oci-runtime runsc)`).
fn distinct_names(summaries: &[CellSummary]) -> Vec<String> {
    summaries
        .iter()
        .map(|s| {
            let namesakes: Vec<&CellSummary> = (summaries.iter())
                .filter(|o| o.environment == s.environment && o.key != s.key)
                .collect();
            let differing: Vec<String> = (s.knobs.iter().enumerate())
                .filter(|(i, (_, value))| namesakes.iter().any(|o| o.knobs[*i].1 != *value))
                .map(|(_, (knob, value))| format!("{knob} {value}"))
                .collect();
            match differing.is_empty() {
                true => s.environment.clone(),
                false => format!("{} ({})", s.environment, differing.join(", ")),
            }
        })
        .collect()
}

/// The summary table's headers and cells, for any output format.
pub fn summary_cells(summaries: &[CellSummary]) -> (Vec<String>, Vec<Vec<String>>) {
    let headers = [
        "cell",
        "runs",
        "outcome",
        "outcomes",
        "median img/s [95% CI]",
        "min..max",
        "CPU ms/img [95% CI]",
        "outliers",
        "crash steps",
    ];
    let names = distinct_names(summaries);
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .zip(names)
        .map(|(s, name)| {
            let outcomes = described(&Shares::of(&s.outcomes));
            vec![
                name,
                s.runs.to_string(),
                s.outcome.to_string(),
                outcomes,
                match (s.median, s.ci) {
                    (Some(m), Some((lo, hi))) => format!("{m:.1} [{lo:.1}, {hi:.1}]"),
                    (Some(m), None) => format!("{m:.1} (one run: no interval)"),
                    _ => "-".into(),
                },
                match (s.min, s.max) {
                    (Some(a), Some(b)) => format!("{a:.0}..{b:.0}"),
                    _ => "-".into(),
                },
                match (s.cpu_median, s.cpu_ci) {
                    (Some(m), Some((lo, hi))) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
                    (Some(m), None) => format!("{m:.3}"),
                    _ => "-".into(),
                },
                if s.outliers.is_empty() {
                    "-".into()
                } else {
                    s.outliers
                        .iter()
                        .map(|r| format!("run {r}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                s.crash_steps
                    .map(|(a, b)| {
                        if a == b {
                            a.to_string()
                        } else {
                            format!("{a}..{b}")
                        }
                    })
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    (headers.map(String::from).to_vec(), rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::summary::summarize;
    use model::knob_types::OciRuntime;
    use results::Row;

    #[test]
    fn namesakes_in_the_summary_are_told_apart_by_the_knobs_they_differ_in() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let rows = results::csv::read(std::path::Path::new(path)).unwrap();
        let runc = rows[0].clone();
        let runsc = Row {
            added: model::knobs::AddedKnobs {
                oci_runtime: "runsc".parse::<OciRuntime>().unwrap(),
                ..runc.added.clone()
            },
            ..runc.clone()
        };
        let names = distinct_names(&summarize(&[runc.clone(), runsc, rows[1].clone()]));
        assert_eq!(
            names[0],
            format!("{} (oci-runtime default)", runc.environment)
        );
        assert_eq!(
            names[1],
            format!("{} (oci-runtime runsc)", runc.environment)
        );
        assert_eq!(names[2], rows[1].environment);
    }
}
