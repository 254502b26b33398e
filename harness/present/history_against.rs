//! A runtime history's judgement against the reference OCI runtime in words: each cell of each
//! column with `compare`'s verdict, the change of its img/s and CPU per image with their
//! intervals, and why; "not judged" where the repeats cannot tell.

use super::compare_note::{note, verdict_label};
use super::compare_tables::{change_text, thresholds_text};
use super::history_columns::column_name;
use super::outcomes::METHOD;
use super::terminal::shown as inert;
use analysis::compare::{Comparison, Thresholds, Verdict};
use analysis::history::History;
use analysis::history_against::AgainstReference;
use analysis::outcomes::ALPHA;

/// Whether the repeats could tell: an interval of the speeds (two passing runs a side), or
/// outcomes judged by their tests.
fn judged(c: &Comparison) -> bool {
    let outcomes_judged = c.outcomes.as_ref().is_some_and(|j| j.judged);
    match c.verdict {
        Verdict::Undecided => false,
        _ if c.change_ci.is_some() || c.cpu_change_ci.is_some() => true,
        _ => outcomes_judged,
    }
}

/// One cell's line: its verdict (or "not judged"), the changes with intervals, and why.
fn line(h: &History, column: usize, reference: usize, c: &Comparison) -> String {
    let verdict = match judged(c) {
        true => verdict_label(c.verdict),
        false => "not judged",
    };
    let mut changes = Vec::new();
    if c.change.is_some() {
        changes.push(format!("img/s {}", change_text(c.change, c.change_ci)));
    }
    if c.cpu_change.is_some() {
        changes.push(format!(
            "CPU per image {}",
            change_text(c.cpu_change, c.cpu_change_ci)
        ));
    }
    let changes = match changes.is_empty() {
        true => String::new(),
        false => format!(" {};", changes.join(", ")),
    };
    format!(
        "- {}: {} against {}: {verdict}:{changes} {}\n",
        inert(&c.cell),
        inert(&column_name(h, column)),
        inert(&column_name(h, reference)),
        note(c)
    )
}

/// The section a runtime history ends with.
pub fn render(h: &History, a: &AgainstReference) -> String {
    let thresholds = Thresholds {
        rate: a.thresholds_rate,
        ..Thresholds::default()
    };
    let mut out = format!(
        "Runtimes have no order, so no column is judged against its neighbour: each against {} under the same engine on the same host, with compare's tests (outcomes over the repeats at p < {ALPHA}: {METHOD}; img/s and CPU per image: the 95% bootstrap interval of the change of medians, {}):\n",
        inert(&a.reference),
        thresholds_text(thresholds)
    );
    for against in &a.cells {
        out.push_str(&line(
            h,
            against.column,
            against.reference,
            &against.comparison,
        ));
    }
    for column in &a.without_reference {
        out.push_str(&format!(
            "- {}: no {} column under the same engine on that host: judged against nothing\n",
            inert(&column_name(h, *column)),
            inert(&a.reference)
        ));
    }
    if a.cells.is_empty() && a.without_reference.is_empty() {
        out.push_str("- no column of these runs ran under another OCI runtime of a container engine: nothing to judge\n");
    }
    out
}
