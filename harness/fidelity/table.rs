//! A fidelity run as a Markdown table: each cell's outcome with each loader, crash steps, the
//! peak and throughput ratios with their intervals, and the verdict with its evidence.

use crate::pairs::{Pair, Ratio, Verdict, Why, PEAK_TOLERANCE};
use analysis::outcomes::ALPHA;
use analysis::summary::CellSummary;
use present::outcomes::{evidence, flip_needs};
use present::table;

fn outcome(s: &CellSummary) -> String {
    if s.runs > 1 && s.outcomes.iter().any(|o| *o != s.outcome) {
        format!(
            "{} ({} of {} runs)",
            s.outcome,
            s.outcomes.iter().filter(|o| **o == s.outcome).count(),
            s.runs
        )
    } else {
        s.outcome.to_string()
    }
}

fn steps(s: &CellSummary) -> String {
    match s.crash_steps {
        Some((a, b)) if a == b => a.to_string(),
        Some((a, b)) => format!("{a}..{b}"),
        None => "-".into(),
    }
}

fn times(x: Option<f64>) -> String {
    x.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into())
}

/// "1.15x (1.12-1.19)": a ratio and its 95% interval where the runs give one.
fn ratio(r: Option<Ratio>) -> String {
    match r {
        Some(Ratio {
            value,
            interval: Some((lo, hi)),
        }) => format!("{value:.2}x ({lo:.2}-{hi:.2})"),
        Some(r) => times(Some(r.value)),
        None => "-".into(),
    }
}

/// The verdict with what decided it: the tests' p-values, or the peak against the goal.
fn verdict(p: &Pair) -> String {
    let name = p.verdict.name();
    let j = &p.outcomes;
    let detail = match (p.verdict, p.why) {
        (Verdict::Differs, Some(Why::Outcomes)) => evidence(j.share_p, j.step_p),
        (Verdict::NotJudged, Some(why @ (Why::Outcomes | Why::CrashSteps))) => {
            let what = if why == Why::CrashSteps {
                "crash steps"
            } else {
                "outcomes"
            };
            format!(
                "{what} differ; {} and {} run(s) cannot tell it from chance",
                j.baseline.runs, j.candidate.runs
            )
        }
        (_, Some(Why::PassingPeak)) => {
            let share = p.peak.map_or(0.0, |r| r.inverted().value);
            let beyond = if p.verdict == Verdict::Differs {
                "beyond its interval"
            } else {
                "too few passing runs to tell chance"
            };
            format!(
                "emulated passing peak {:.0}% of torch's, outside {:.0}%; {beyond}",
                share * 100.0,
                PEAK_TOLERANCE * 100.0
            )
        }
        _ => String::new(),
    };
    if detail.is_empty() {
        name.into()
    } else {
        format!("{name} ({detail})")
    }
}

pub fn render(pairs: &[Pair]) -> String {
    let headers = [
        "cell",
        "torch",
        "emulated",
        "real torch",
        "crash steps (emulated / torch)",
        "peak /dev/shm, passing (torch / emulated, 95% interval)",
        "img/s (torch / emulated, 95% interval)",
        "CPU per image; main's per step (torch / emulated)",
        "verdict",
    ];
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|p| {
            vec![
                p.cell.clone(),
                format!("{} ({})", p.torch_version, p.profile),
                outcome(&p.emulated),
                outcome(&p.torch),
                format!("{} / {}", steps(&p.emulated), steps(&p.torch)),
                ratio(p.peak),
                ratio(p.rate),
                format!("{}; {}", times(p.cpu_ratio), times(p.main_cpu_ratio)),
                verdict(p),
            ]
        })
        .collect();
    let count = |v: Verdict| pairs.iter().filter(|p| p.verdict == v).count();
    let inconclusive: Vec<&str> = pairs
        .iter()
        .filter(|p| p.verdict == Verdict::Inconclusive)
        .map(|p| p.cell.as_str())
        .collect();
    let inconclusive = match inconclusive.len() {
        0 => String::new(),
        n => format!(
            "; {n} inconclusive ({}: a loader ended in an error outside the loader, e.g. the cell's Python crashed)",
            inconclusive.join(", ")
        ),
    };
    let not_judged = match count(Verdict::NotJudged) {
        0 => String::new(),
        n => format!(
            "; {n} not judged (the runs cannot tell a difference from chance: {})",
            flip_needs()
        ),
    };
    format!(
        "{} of {} cell(s) agree, {} differ{not_judged}{inconclusive}\n\
         (outcomes by {}, at p < {ALPHA}; a passing peak within {:.0}% of torch's){}{}\n\n{}",
        count(Verdict::Agrees),
        pairs.len(),
        count(Verdict::Differs),
        present::outcomes::METHOD,
        PEAK_TOLERANCE * 100.0,
        torch_against_itself(pairs),
        median_distance(pairs),
        table::markdown(&headers, &rows)
    )
}

/// How far the emulation's median crash steps lie from torch's, over the cells where both
/// crashed the same way.
fn median_distance(pairs: &[Pair]) -> String {
    let distances: Vec<f64> = pairs
        .iter()
        .filter_map(|p| p.crash_step_medians)
        .map(|(emulated, torch)| emulated - torch)
        .collect();
    if distances.is_empty() {
        return String::new();
    }
    let n = distances.len() as f64;
    let within = distances.iter().filter(|d| d.abs() <= 1.0).count();
    format!(
        "\nmedian crash steps: within one step of torch's in {within} of {} crashed cell(s); {:.2} steps apart on average, emulated {:+.2} (negative: earlier)",
        distances.len(),
        distances.iter().map(|d| d.abs()).sum::<f64>() / n,
        distances.iter().sum::<f64>() / n,
    )
}

/// The same test between real torch's own runs: the ceiling the race leaves the emulation.
fn torch_against_itself(pairs: &[Pair]) -> String {
    let tested: Vec<Verdict> = pairs.iter().filter_map(|p| p.torch_self).collect();
    if tested.is_empty() {
        return String::new();
    }
    let count = |v: Verdict| tested.iter().filter(|t| **t == v).count();
    format!(
        "\nreal torch against itself: {} of {} cell(s) agree, {} differ, {} not judged (its later runs against its earlier half, by the same test; --repeat 8 compares halves of 4 runs)",
        count(Verdict::Agrees),
        tested.len(),
        count(Verdict::Differs),
        count(Verdict::NotJudged),
    )
}
