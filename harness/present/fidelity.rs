//! A fidelity run as a Markdown table: each cell's outcome with each loader, crash steps, the
//! peak and throughput ratios, and whether they agree.

use super::table;
use analysis::fidelity::{Pair, Verdict};
use analysis::summary::CellSummary;

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

pub fn render(pairs: &[Pair]) -> String {
    let headers = [
        "cell",
        "torch",
        "emulated",
        "real torch",
        "crash steps (emulated / torch)",
        "peak /dev/shm (torch / emulated)",
        "img/s (torch / emulated)",
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
                times(p.peak_ratio),
                times(p.rate_ratio),
                format!("{}; {}", times(p.cpu_ratio), times(p.main_cpu_ratio)),
                p.verdict.name().into(),
            ]
        })
        .collect();
    let agreeing = pairs
        .iter()
        .filter(|p| p.verdict == Verdict::Agrees)
        .count();
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
    format!(
        "{agreeing} of {} cell(s) agree (same outcome; emulated crash steps within torch's range +-1){inconclusive}{}{}\n\n{}",
        pairs.len(),
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
    let tested: Vec<bool> = pairs.iter().filter_map(|p| p.torch_self_agrees).collect();
    if tested.is_empty() {
        return String::new();
    }
    format!(
        "\nreal torch against itself: {} of {} cell(s) agree (its later runs against its earlier half, by the same test; --repeat 6 compares halves of 3 runs)",
        tested.iter().filter(|a| **a).count(),
        tested.len()
    )
}
