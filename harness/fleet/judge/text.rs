//! The fleet's verdict in words: each finding and each reason a node was not judged, a node's
//! reason in one line, the table of nodes (as text for a terminal and as Markdown that pastes
//! into an issue) and how the verdict was reached. Node and cell names come from results files
//! anyone may have written: in text they are made inert (`terminal::shown`), in Markdown they
//! are code spans (no link, mention or HTML can come of them).

use crate::judge::rows::Measure;
use crate::judge::verdict::{
    Against, Comparison, Evidence, NodeJudgement, NotJudged, Status, Unjudged, Verdict,
};
use model::size::ByteSize;

use present::table;
use present::terminal::{no_workflow_commands, shown};

/// A measure as the words say it.
pub(crate) fn measure_words(measure: Measure) -> &'static str {
    match measure {
        Measure::Outcome => "pass share",
        Measure::ImgPerS => "img/s",
        Measure::CpuMsPerImg => "CPU per image",
        Measure::PeakShmBytes => "peak /dev/shm",
    }
}

/// A value of a measure with its unit.
fn value(measure: Measure, x: f64) -> String {
    match measure {
        Measure::Outcome => format!("{:.0}%", 100.0 * x),
        Measure::ImgPerS => format!("{x:.1}"),
        Measure::CpuMsPerImg => format!("{x:.2} ms"),
        Measure::PeakShmBytes => ByteSize(x.max(0.0).round() as u64).to_string(),
    }
}

/// A verdict as a word.
pub(crate) fn status_words(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Flagged => "flagged",
        Status::NotJudged => "not judged",
    }
}

/// How names from the rows are written: made inert for a terminal ([`shown`]) or as code
/// spans for Markdown ([`code`]).
pub(crate) type Namer = fn(&str) -> String;

/// A cell as the table names it, `scenario/cell` (JSON carries the whole key), written by `name`.
pub(crate) fn cell_name(v: &Verdict, cell: usize, name: Namer) -> String {
    let key = &v.cells[cell];
    name(&format!("{}/{}", key.scenario, key.cell))
}

/// Who the node is measured against.
fn others(v: &Verdict) -> &'static str {
    match v.against {
        Against::Fleet => "the other nodes",
        Against::Baseline => "the baseline",
    }
}

/// The size of a difference: percent of a median, points of a pass share.
fn difference(f: &Comparison) -> String {
    match f.measure {
        Measure::Outcome => format!("{:+.0} points", 100.0 * f.difference),
        _ => format!("{:+.0}%", 100.0 * f.difference),
    }
}

/// A finding in words: the cell, the measure, the node's value, the fleet's, the difference
/// and the test beyond its threshold.
pub(crate) fn finding_words(v: &Verdict, f: &Comparison, name: Namer) -> String {
    let cell = cell_name(v, f.cell, name);
    let size = difference(f);
    match f.evidence {
        Evidence::Fisher {
            p,
            runs,
            passes,
            other_runs,
            other_passes,
        } => format!(
            "{cell}: passes {passes} of {runs} against {other_passes} of {other_runs} {} ({size}; Fisher p = {p:.1e}, below {:.1e})",
            match v.against {
                Against::Fleet => "on the other nodes",
                Against::Baseline => "in the baseline",
            },
            v.p_threshold
        ),
        Evidence::Median { z, p, every_run, .. } => {
            let mut tests = vec![match z {
                Some(z) if z.abs() >= v.z_threshold => {
                    format!("robust z {z:+.1}, beyond {:.1}", v.z_threshold)
                }
                Some(z) => format!("robust z {z:+.1}, within {:.1}", v.z_threshold),
                None if every_run => {
                    "the other nodes' medians agree exactly and every run of it is beyond"
                        .to_string()
                }
                None => "the other nodes' medians agree exactly".to_string(),
            }];
            if let Some(p) = p {
                let side = if p <= v.p_threshold { "below" } else { "above" };
                tests.push(format!("rank test p = {p:.1e}, {side} {:.1e}", v.p_threshold));
            }
            format!(
                "{cell}: {} {} against {} ({size}; {})",
                measure_words(f.measure),
                value(f.measure, f.node),
                value(f.measure, f.fleet),
                tests.join("; ")
            )
        }
    }
}

/// A finding in a few words, for a drain's reason: `img/s -40% vs fleet in seed/tiny`.
pub(crate) fn short_words(v: &Verdict, f: &Comparison) -> String {
    let against = match v.against {
        Against::Fleet => "fleet",
        Against::Baseline => "baseline",
    };
    format!(
        "{} {} vs {against} in {}",
        measure_words(f.measure),
        difference(f),
        cell_name(v, f.cell, shown)
    )
}

/// Why a measure of a cell was not judged.
pub(crate) fn not_judged_words(measure: Measure, why: &NotJudged) -> String {
    match *why {
        NotJudged::TooFewRuns { runs, need } if measure == Measure::Outcome => {
            format!("{runs} run(s) of a cell ({need} needed: --repeat {need})")
        }
        NotJudged::TooFewRuns { runs, need } => format!(
            "{} measured by {runs} passing run(s) of a cell ({need} needed)",
            measure_words(measure)
        ),
        NotJudged::TooFewNodes { nodes, need } => {
            format!("{nodes} node(s) ran a cell often enough ({need} needed for the fleet's norm)")
        }
        NotJudged::TooFewOtherRuns { runs, need } => {
            format!("{runs} run(s) of a cell on the others ({need} needed)")
        }
        NotJudged::NotInBaseline => "a cell not in the baseline".to_string(),
        NotJudged::CannotTell {
            runs,
            need,
            percent,
        } => format!(
            "{}; {}",
            untold_words(measure, runs, percent, "a cell"),
            more_runs(need)
        ),
        NotJudged::FleetZero => format!(
            "{} of a cell is 0 across the fleet (nothing to compare)",
            measure_words(measure)
        ),
    }
}

/// What a node's runs of `cells` could not tell.
fn untold_words(measure: Measure, runs: usize, percent: u32, cells: &str) -> String {
    let what = match measure {
        Measure::Outcome => "even a node failing every run".to_string(),
        _ => format!("a {percent}% change of {}", measure_words(measure)),
    };
    format!("{runs} run(s) of {cells} cannot tell {what}")
}

/// The runs that would tell (None: more runs would not).
fn more_runs(need: Option<usize>) -> String {
    match need {
        Some(need) => format!("give {need} (--repeat {need})"),
        None => "more runs would not: the nodes differ too much".to_string(),
    }
}

/// Whether an unjudged measure is worth saying: a value a node never measured because none of
/// its runs of the cell passed is said by its pass share, judged or not.
fn worth_saying(u: &Unjudged) -> bool {
    !matches!(u.why, NotJudged::TooFewRuns { runs: 0, .. }) || u.measure == Measure::Outcome
}

/// The distinct reasons a node was not judged on what it was not judged on: those of its pass
/// shares where there are any (every run counts there, so they say why its values were not
/// judged either) with the values its runs could not tell, else those of its values worth
/// saying.
fn unjudged_summary(v: &Verdict, n: &NodeJudgement, name: Namer) -> String {
    let outcomes = n.not_judged.iter().any(|u| u.measure == Measure::Outcome);
    let said = (n.not_judged.iter()).filter(|u| match outcomes {
        true => u.measure == Measure::Outcome || matches!(u.why, NotJudged::CannotTell { .. }),
        false => worth_saying(u),
    });
    // Each reason once (a cannot-tell's need is said once, below), with the cells it is of.
    let reason = |u: &Unjudged| match u.why {
        NotJudged::CannotTell { runs, percent, .. } => (u.measure, runs, percent, None),
        why => (u.measure, 0, 0, Some(why)),
    };
    let mut cells: Vec<(&Unjudged, Vec<String>)> = Vec::new();
    for u in said {
        let cell = cell_name(v, u.cell, name);
        match cells
            .iter_mut()
            .find(|(first, _)| reason(first) == reason(u))
        {
            Some((_, list)) if !list.contains(&cell) => list.push(cell),
            Some(_) => {}
            None => cells.push((u, vec![cell])),
        }
    }
    let mut words: Vec<String> = (cells.into_iter())
        .map(|(u, list)| match u.why {
            NotJudged::CannotTell { runs, percent, .. } => {
                untold_words(u.measure, runs, percent, &list.join(", "))
            }
            why => format!(
                "{} ({})",
                not_judged_words(u.measure, &why),
                list.join(", ")
            ),
        })
        .collect();
    words.sort();
    let needs = (n.not_judged.iter()).filter_map(|u| match u.why {
        NotJudged::CannotTell { need, .. } => Some(need),
        _ => None,
    });
    // Said once, with the most runs any of its cells needs; None (more runs would not)
    // outranks any number.
    if let Some(need) = needs.max_by_key(|need| need.map_or(usize::MAX, |n| n)) {
        words.push(more_runs(need));
    }
    words.join("; ")
}

/// A node's reason: its findings (one line each), or what it was judged on, or why not.
pub(crate) fn reasons(v: &Verdict, n: &NodeJudgement, name: Namer) -> Vec<String> {
    match n.status {
        Status::Flagged => n
            .findings
            .iter()
            .map(|f| finding_words(v, f, name))
            .collect(),
        Status::NotJudged => {
            let mut line = unjudged_summary(v, n, name);
            // What was judged is said too: not judged is not "nothing seen".
            if n.judged > 0 {
                line += &format!(
                    "; within the thresholds on {} other measure(s) of {} cell(s)",
                    n.judged, n.judged_cells
                );
            }
            vec![line]
        }
        Status::Ok => {
            let mut line = format!(
                "within the thresholds on {} measure(s) of {} cell(s)",
                n.judged, n.judged_cells
            );
            let unsaid = n.not_judged.iter().filter(|u| worth_saying(u)).count();
            if unsaid > 0 {
                let why = unjudged_summary(v, n, name);
                line += &format!("; {unsaid} measure(s) not judged: {why}");
            }
            vec![line]
        }
    }
}

/// The counts of each verdict: flagged, ok, not judged.
pub(crate) fn counts(v: &Verdict) -> (usize, usize, usize) {
    let count = |s: Status| v.nodes.iter().filter(|n| n.status == s).count();
    (
        count(Status::Flagged),
        count(Status::Ok),
        count(Status::NotJudged),
    )
}

/// One line: how many nodes got which verdict, from what.
pub(crate) fn summary(v: &Verdict) -> String {
    let (flagged, ok, not_judged) = counts(v);
    let mut line = format!(
        "{} node(s): {flagged} flagged, {ok} ok, {not_judged} not judged; {} row(s) of {} cell(s), against {}",
        v.nodes.len(),
        v.rows - v.nameless_rows - v.duplicate_rows,
        v.cells.len(),
        others(v)
    );
    if v.nameless_rows > 0 {
        line += &format!(
            "; {} row(s) name no node (node and host empty): left out",
            v.nameless_rows
        );
    }
    if v.duplicate_rows > 0 {
        line += &format!(
            "; {} row(s) repeat a run already read (same run_id, repeat, node and cell): left out",
            v.duplicate_rows
        );
    }
    line
}

/// How the verdict was reached, with this fleet's thresholds.
pub(crate) fn method(v: &Verdict) -> String {
    let (t, p) = (&v.thresholds, v.p_threshold);
    // Against a baseline there are no other nodes' runs at hand: the robust z alone.
    let (rank, cell_nodes) = match v.against {
        Against::Fleet => (
            format!(", or its runs against the other nodes' by the rank test at p below {p:.1e} (against the fleet's own rows)"),
            "a cell with at least",
        ),
        Against::Baseline => (String::new(), "a cell the baseline holds from at least"),
    };
    let tests = match v.tests {
        0 => "the tests (none made: nothing was judged)".to_string(),
        n => format!("{n} tests"),
    };
    format!(
        "Flagged only beyond both a statistical threshold and a practical one. Statistical: a node's median of a cell's img/s, CPU per image or peak /dev/shm at a robust z beyond {:.2} ({} or the normal quantile of alpha {} / {tests}, whichever is further; z in spreads of 1.4826 x the median absolute deviation of the node medians, so the bad nodes do not widen it){rank}; its pass share by Fisher's exact test against {} at p below {p:.1e}. Practical: a median {:.0}% worse (only the worse side: fewer img/s, more CPU per image, more /dev/shm), a pass share {:.0} points lower. A node is judged on a cell with at least {} runs, and {cell_nodes} {} nodes.",
        v.z_threshold,
        t.z,
        t.alpha,
        others(v),
        100.0 * t.relative,
        100.0 * t.share,
        t.min_runs,
        t.min_nodes,
    )
}

/// The table's rows: a node's first reason beside it, its other reasons on rows below.
fn rows(v: &Verdict, name: Namer) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for n in &v.nodes {
        for (i, reason) in reasons(v, n, name).into_iter().enumerate() {
            let (node, status) = match i {
                0 => (name(&n.node), status_words(n.status).to_string()),
                _ => (String::new(), String::new()),
            };
            rows.push(vec![node, status, reason]);
        }
    }
    rows
}

/// The table for a terminal, then the summary and the method.
pub fn render_text(v: &Verdict) -> String {
    let rows = rows(v, shown);
    let mut widths = [4, 7];
    for r in &rows {
        widths[0] = widths[0].max(r[0].chars().count());
        widths[1] = widths[1].max(r[1].chars().count());
    }
    let line = |a: &str, b: &str, c: &str| {
        format!("{a:<w0$}  {b:<w1$}  {c}", w0 = widths[0], w1 = widths[1])
            .trim_end()
            .to_string()
    };
    let mut out = vec![line("node", "verdict", "reason")];
    out.extend(rows.iter().map(|r| line(&r[0], &r[1], &r[2])));
    out.push(String::new());
    out.push(summary(v));
    out.push(method(v));
    if v.flagged() {
        out.push("Drain or cordon them: the same command with --format slurm or --format kubernetes prints the commands (it runs nothing).".into());
    }
    no_workflow_commands(&out.join("\n"))
}

/// `text` as a Markdown code span: literal whatever it holds (a fence longer than any run of
/// backticks in it), control characters made visible first.
pub(crate) fn code(text: &str) -> String {
    let text = shown(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Markdown for an issue: a heading, the table, the summary and the method. Names from the
/// rows are code spans.
pub fn render_markdown(v: &Verdict) -> String {
    format!(
        "## shmbench fleet\n\n{}\n\n{}\n\n{}\n",
        table::markdown(&["node", "verdict", "reason"], &rows(v, code)),
        summary(v),
        method(v)
    )
}
