//! A history as Markdown: one column per run, one row per cell, then the steps found.

pub use super::history_columns::{column_name, run_label};
use super::outcomes::{evidence, flip_needs, METHOD};
use super::table;
use super::terminal::shown as inert;
use analysis::history::{History, Metric, Run};
use analysis::outcomes::ALPHA;

/// A metric's unit as tables and plots write it.
pub fn unit(metric: Metric) -> &'static str {
    match metric {
        Metric::ImgPerS => "img/s",
        Metric::CpuPerImage => "CPU ms/img",
        Metric::InstructionsPerImage => "instructions/img",
    }
}

/// The most runs the table shows as columns: a fleet's year is thousands of runs, and a table
/// that wide is read by nobody (the steps below it cover every run).
pub const MAX_COLUMNS: usize = 12;

/// The runs the table shows, in order: all of them when few; else the runs where a cell
/// stepped (up to half the columns), then the latest.
pub fn shown_runs(h: &History) -> Vec<usize> {
    let n = h.runs.len();
    if n <= MAX_COLUMNS {
        return (0..n).collect();
    }
    let mut shown: Vec<usize> = h
        .trends
        .iter()
        .flat_map(|t| {
            let rate = t.rate_steps.iter().map(|(i, _)| *i);
            rate.chain(t.outcome_steps.iter().map(|step| step.at))
        })
        .collect();
    shown.sort_unstable();
    shown.dedup();
    shown.truncate(MAX_COLUMNS / 2);
    for i in (0..n).rev() {
        if shown.len() >= MAX_COLUMNS {
            break;
        }
        if !shown.contains(&i) {
            shown.push(i);
        }
    }
    shown.sort_unstable();
    shown
}

/// Markdown: the trend table and the steps found.
pub fn render(h: &History) -> String {
    let mut headers = vec!["cell".to_string()];
    let label = |r: &Run| run_label(h, r);
    let shown = shown_runs(h);
    headers.extend(shown.iter().map(|i| column_name(h, *i)));
    let rows: Vec<Vec<String>> = h
        .trends
        .iter()
        .map(|t| {
            let mut row = vec![t.cell.clone()];
            row.extend(shown.iter().map(|i| match &t.points[*i] {
                None => "-".into(),
                Some(p) => match (p.outcome.status.is_pass(), p.median) {
                    (true, Some(m)) => match h.metric {
                        Metric::ImgPerS => format!("{m:.0} img/s"),
                        Metric::CpuPerImage => format!("{m:.3} CPU ms/img"),
                        Metric::InstructionsPerImage => format!("{m:.0} instructions/img"),
                    },
                    _ => match &p.cause {
                        Some(cause) => format!("{} ({cause})", p.outcome),
                        None => p.outcome.to_string(),
                    },
                },
            }));
            row
        })
        .collect();
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let window = match shown.len() < h.runs.len() {
        true => format!(
            "; the table shows {} of them: those where a cell stepped, then the latest",
            shown.len()
        ),
        false => String::new(),
    };
    let mut out = format!(
        "History by {} ({} runs, oldest first within equal values{window})\n\n{}\n\n",
        h.by,
        h.runs.len(),
        table::markdown(&header_refs, &rows)
    );
    let mut any = false;
    for t in &h.trends {
        for (i, step) in &t.rate_steps {
            any = true;
            out.push_str(&format!(
                "- {}: {} stepped {:+.1}% at {} = {} (run {})\n",
                inert(&t.cell),
                unit(h.metric),
                step * 100.0,
                h.by,
                inert(&label(&h.runs[*i])),
                inert(&h.runs[*i].run_id)
            ));
        }
        for (at, before, after) in &t.cause_changes {
            any = true;
            let run = &h.runs[*at];
            out.push_str(&format!(
                "- {}: cause changed from {} to {} at {} = {} (run {}; docs/EXPLAIN.md)\n",
                inert(&t.cell),
                inert(before),
                inert(after),
                h.by,
                inert(&label(run)),
                inert(&run.run_id)
            ));
        }
        for step in &t.outcome_steps {
            any = true;
            let run = &h.runs[step.at];
            out.push_str(&format!(
                "- {}: outcome changed from {} to {} at {} = {} (run {}; {})\n",
                inert(&t.cell),
                step.before,
                step.after,
                h.by,
                inert(&label(run)),
                inert(&run.run_id),
                evidence(step.share_p, step.step_p)
            ));
        }
    }
    match &h.against {
        // Runtimes have no order: no steps between neighbours, each judged against the reference.
        Some(against) => out.push_str(&super::history_against::render(h, against)),
        None if !any => out.push_str("- no cell stepped beyond the noise and the threshold\n"),
        None => {}
    }
    out.push_str(&unjudged_outcomes(h));
    out
}

/// What was not claimed about outcomes, and why: too few runs per point, or within chance.
fn unjudged_outcomes(h: &History) -> String {
    let unjudged: usize = h.trends.iter().map(|t| t.outcomes_unjudged).sum();
    let differ: usize = h.trends.iter().map(|t| t.outcomes_unjudged_differ).sum();
    let chance: usize = h.trends.iter().map(|t| t.outcomes_within_chance).sum();
    let mut out = String::new();
    if unjudged > 0 {
        out.push_str(&format!(
            "- outcomes not judged between {unjudged} pair(s) of neighbouring runs, {differ} of them with different outcomes: too few runs per {} ({})\n",
            h.by,
            flip_needs()
        ));
    }
    if chance > 0 {
        out.push_str(&format!(
            "- {chance} difference(s) of outcome between neighbouring runs within chance at p < {ALPHA} ({METHOD})\n"
        ));
    }
    out
}
