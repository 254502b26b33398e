//! Statements (sentences of a source that several cells measure together) judged against the
//! rows: each cell's outcome and measured quantity, and a verdict.
//!
//! The tolerances follow from what the quantities are, not from a quiet machine: a peak of
//! /dev/shm or of open fds is a count of what the loader holds (a step's worth of slack is
//! noise: 1 MiB, 2 fds), so "zero", "grows" and "level" are read against those; a rise must be at
//! least 20% from the first cell to the last, and "greater" means 10% above, well beyond the
//! run-to-run spread of a peak. Cells that ended in an error or a timeout measure nothing and make
//! a statement inconclusive only when nothing else was measured.

use crate::cell_key;
use crate::runs::Runs;
use model::claim::ClaimVerdict;
use model::estimate::median;
use model::record::Status;
use model::statement::{Quantity, Statement, StatementKind};
use results::Row;

/// What tells a statement's cells apart (`present::statements` words it: `prefetch=8`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Label {
    /// The one knob that varies along the statement's cells, by flag name, and its value as a
    /// row records it.
    Knob { name: &'static str, value: String },
    /// The cell's name, where several knobs vary (or none).
    Cell(String),
}

/// One cell of a statement, as measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub label: Label,
    /// None when the results hold no row of this cell.
    pub status: Option<Status>,
    /// The quantity (median over repeats); None where it was not measured.
    pub value: Option<f64>,
    /// The cell's /dev/shm size: the remounted size, the requested one, or the one it saw.
    pub shm_bytes: u64,
    /// The loader model's bound on /dev/shm: (workers x prefetch + 1) batches.
    pub bound_bytes: f64,
}

/// A statement with its verdict.
#[derive(Clone, Debug)]
pub struct Judged {
    pub statement: Statement,
    pub verdict: ClaimVerdict,
    pub measured: Vec<Measured>,
    /// For `greater`: the first cell's quantity over the second's.
    pub ratio: Option<f64>,
    /// For `smallest-pass`: the smallest /dev/shm among the cells that passed.
    pub smallest_pass: Option<u64>,
}

fn value_of(q: Quantity, r: &Row) -> Option<f64> {
    match q {
        Quantity::PeakShm => Some(r.peak_shm_bytes as f64),
        Quantity::PeakFds => r.peak_fds.map(|f| f as f64),
        Quantity::ImgPerS => r.img_per_s.filter(|_| r.status.is_pass()),
    }
}

/// What a step's worth of slack is for the quantity.
fn slack(q: Quantity) -> f64 {
    match q {
        Quantity::PeakShm => (1u64 << 20) as f64,
        Quantity::PeakFds => 2.0,
        Quantity::ImgPerS => 0.0,
    }
}

fn measure(statement: &Statement, rows: &[Row]) -> Vec<Measured> {
    // Each cell's runs, and the knobs of its first run.
    let runs: Vec<Vec<Row>> = statement
        .cells
        .iter()
        .map(|c| rows.iter().filter(|r| &r.cell == c).cloned().collect())
        .collect();
    let knobs: Vec<Option<Vec<(&'static str, String)>>> = runs
        .iter()
        .map(|mine| mine.first().map(cell_key::knobs))
        .collect();
    // The knob that differs between the cells' rows, when exactly one does.
    let present: Vec<&Vec<(&'static str, String)>> = knobs.iter().flatten().collect();
    let differing: Vec<&'static str> = present
        .first()
        .map(|first| {
            first
                .iter()
                .enumerate()
                .filter(|(i, (_, v))| present.iter().any(|k| &k[*i].1 != v))
                .map(|(_, (name, _))| *name)
                .collect()
        })
        .unwrap_or_default();
    let varying = (differing.len() == 1).then(|| differing[0]);
    statement
        .cells
        .iter()
        .zip(runs.iter().zip(&knobs))
        .map(|(cell, (mine, knobs))| {
            // The most common outcome, as every summary of repeated runs takes it.
            let status = mine.first().map(|_| {
                let mut runs = Runs::default();
                mine.iter().for_each(|r| runs.add(r));
                runs.outcome().status
            });
            let value = |name| knobs.iter().flatten().find(|(n, _)| *n == name);
            let label = match varying.and_then(value) {
                Some((name, v)) => Label::Knob {
                    name,
                    value: v.clone(),
                },
                None => Label::Cell(cell.clone()),
            };
            let values: Vec<f64> = mine
                .iter()
                .filter_map(|r| value_of(statement.quantity, r))
                .collect();
            let first = mine.first();
            Measured {
                label,
                status,
                value: median(&values),
                shm_bytes: first
                    .map(|r| {
                        r.shm_remount_bytes
                            .or(r.shm_bytes)
                            .unwrap_or(r.shm_seen_bytes)
                    })
                    .unwrap_or(0),
                bound_bytes: first
                    .map(|r| ((r.workers as u64 * r.prefetch as u64 + 1) * r.batch_bytes) as f64)
                    .unwrap_or(0.0),
            }
        })
        .collect()
}

/// Agrees when every part holds, differs when none does, partly in between; inconclusive when
/// nothing was measured.
fn tally(holds: impl IntoIterator<Item = Option<bool>>) -> ClaimVerdict {
    let parts: Vec<bool> = holds.into_iter().flatten().collect();
    match (parts.iter().filter(|h| **h).count(), parts.len()) {
        (_, 0) => ClaimVerdict::Inconclusive,
        (yes, n) if yes == n => ClaimVerdict::Agrees,
        (0, _) => ClaimVerdict::Differs,
        _ => ClaimVerdict::Partly,
    }
}

fn measured_status(m: &Measured) -> Option<Status> {
    m.status
        .filter(|s| !matches!(s, Status::Error | Status::Timeout))
}

/// Judges one statement.
pub fn judge(statement: &Statement, rows: &[Row]) -> Judged {
    let measured = measure(statement, rows);
    let q = statement.quantity;
    let values: Option<Vec<f64>> = measured.iter().map(|m| m.value).collect();
    let mut ratio = None;
    let mut smallest_pass = None;
    let verdict = match statement.kind {
        StatementKind::Status => tally(
            measured
                .iter()
                .map(|m| measured_status(m).map(|s| Some(s) == statement.expect)),
        ),
        StatementKind::Zero => tally(measured.iter().map(|m| m.value.map(|v| v <= slack(q)))),
        StatementKind::Grows => match values {
            Some(v) => {
                let (first, last) = (v[0], v[v.len() - 1]);
                let rises = last >= first * 1.2 && last - first > slack(q);
                let steady = v.windows(2).all(|w| w[1] >= w[0] * 0.95 - slack(q));
                match (rises, steady) {
                    (true, true) => ClaimVerdict::Agrees,
                    (true, false) => ClaimVerdict::Partly,
                    _ => ClaimVerdict::Differs,
                }
            }
            None => ClaimVerdict::Inconclusive,
        },
        StatementKind::Flat => match values {
            Some(v) => {
                let (lo, hi) = v
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
                match hi <= lo * 1.2 || hi - lo <= slack(q) {
                    true => ClaimVerdict::Agrees,
                    false => ClaimVerdict::Differs,
                }
            }
            None => ClaimVerdict::Inconclusive,
        },
        StatementKind::Greater => match values {
            Some(v) if v[1] > 0.0 => {
                ratio = Some(v[0] / v[1]);
                match v[0] > v[1] * 1.1 && v[0] - v[1] > slack(q) {
                    true => ClaimVerdict::Agrees,
                    false => ClaimVerdict::Differs,
                }
            }
            _ => ClaimVerdict::Inconclusive,
        },
        StatementKind::SmallestPass => {
            let claimed = statement.size.map(|s| s.bytes()).unwrap_or(0);
            smallest_pass = measured
                .iter()
                .filter(|m| m.status.is_some_and(Status::is_pass))
                .map(|m| m.shm_bytes)
                .min();
            let claimed_passes = measured
                .iter()
                .any(|m| m.shm_bytes >= claimed && m.status.is_some_and(Status::is_pass));
            match smallest_pass {
                None if measured.iter().all(|m| measured_status(m).is_none()) => {
                    ClaimVerdict::Inconclusive
                }
                // Within 10%: the size named is what it takes.
                Some(s) if s as f64 >= claimed as f64 * 0.9 => ClaimVerdict::Agrees,
                // It works, but far less already does.
                Some(_) if claimed_passes => ClaimVerdict::Partly,
                _ => ClaimVerdict::Differs,
            }
        }
    };
    Judged {
        statement: statement.clone(),
        verdict,
        measured,
        ratio,
        smallest_pass,
    }
}

/// Judges every statement against the rows.
pub fn judge_all(statements: &[Statement], rows: &[Row]) -> Vec<Judged> {
    statements.iter().map(|s| judge(s, rows)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::statement::Quantity;

    /// A row of the seed fixture, renamed and measured as the case needs.
    fn row(cell: &str, status: Status, peak_mib: u64, fds: u64) -> Row {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let mut r = results::csv::read(std::path::Path::new(path)).unwrap()[0].clone();
        r.cell = cell.into();
        r.status = status;
        r.peak_shm_bytes = peak_mib << 20;
        r.peak_fds = Some(fds);
        r.prefetch = peak_mib as u32; // one knob varies along a trend's cells
        r
    }

    fn statement(kind: StatementKind, quantity: Quantity, cells: &[&str]) -> Statement {
        Statement {
            id: "s".into(),
            section: "S".into(),
            quote: "q".into(),
            kind,
            quantity,
            cells: cells.iter().map(|c| c.to_string()).collect(),
            expect: Some(Status::Pass),
            size: None,
        }
    }

    #[test]
    fn trends_are_read_against_a_steps_worth_of_slack() {
        let rows = [
            row("a", Status::Pass, 100, 9),
            row("b", Status::Pass, 200, 9),
            row("c", Status::Pass, 400, 10),
        ];
        let cells = ["a", "b", "c"];
        let grows = judge(
            &statement(StatementKind::Grows, Quantity::PeakShm, &cells),
            &rows,
        );
        assert_eq!(grows.verdict, ClaimVerdict::Agrees);
        assert_eq!(
            grows.measured[2].label,
            Label::Knob {
                name: "prefetch",
                value: "400".into()
            }
        );
        // 9, 9, 10 fds: within two of each other, level.
        let flat = judge(
            &statement(StatementKind::Flat, Quantity::PeakFds, &cells),
            &rows,
        );
        assert_eq!(flat.verdict, ClaimVerdict::Agrees);
        let fds_grow = judge(
            &statement(StatementKind::Grows, Quantity::PeakFds, &cells),
            &rows,
        );
        assert_eq!(fds_grow.verdict, ClaimVerdict::Differs);
        let rises_unevenly = [
            row("a", Status::Pass, 100, 9),
            row("b", Status::Pass, 50, 9),
            row("c", Status::Pass, 400, 9),
        ];
        let s = statement(StatementKind::Grows, Quantity::PeakShm, &cells);
        assert_eq!(judge(&s, &rises_unevenly).verdict, ClaimVerdict::Partly);
    }

    #[test]
    fn a_sentence_of_several_parts_can_hold_partly() {
        let rows = [row("a", Status::Pass, 1, 1), row("b", Status::Sigbus, 1, 1)];
        let s = statement(StatementKind::Status, Quantity::PeakShm, &["a", "b"]);
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Partly);
        let s = statement(StatementKind::Status, Quantity::PeakShm, &["b"]);
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Differs);
        // An error measures nothing; a missing cell neither.
        let rows = [row("a", Status::Error, 0, 0)];
        let s = statement(StatementKind::Status, Quantity::PeakShm, &["a", "gone"]);
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Inconclusive);
    }

    #[test]
    fn greater_and_zero_need_a_clear_difference() {
        let rows = [
            row("a", Status::Pass, 110, 30),
            row("b", Status::Pass, 100, 9),
        ];
        let s = statement(StatementKind::Greater, Quantity::PeakShm, &["a", "b"]);
        let j = judge(&s, &rows);
        assert_eq!(j.verdict, ClaimVerdict::Differs, "10% is not clearly above");
        assert!((j.ratio.unwrap() - 1.1).abs() < 1e-9);
        let s = statement(StatementKind::Greater, Quantity::PeakFds, &["a", "b"]);
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Agrees);
        let s = statement(StatementKind::Zero, Quantity::PeakShm, &["a"]);
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Differs);
        let rows = [row("a", Status::Pass, 0, 9)];
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Agrees);
    }

    #[test]
    fn the_smallest_size_that_passed_against_the_size_named() {
        let sized = |cell: &str, status, gib: u64| {
            let mut r = row(cell, status, 1, 1);
            r.shm_bytes = Some(gib << 30);
            r
        };
        let mut s = statement(
            StatementKind::SmallestPass,
            Quantity::PeakShm,
            &["a", "b", "c"],
        );
        s.size = Some(model::size::ByteSize(16 << 30));
        let rows = [
            sized("a", Status::Sigbus, 1),
            sized("b", Status::Pass, 2),
            sized("c", Status::Pass, 16),
        ];
        let j = judge(&s, &rows);
        assert_eq!(
            (j.verdict, j.smallest_pass),
            (ClaimVerdict::Partly, Some(2 << 30))
        );
        let rows = [
            sized("a", Status::Sigbus, 1),
            sized("b", Status::Sigbus, 2),
            sized("c", Status::Pass, 16),
        ];
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Agrees);
        let rows = [
            sized("a", Status::Sigbus, 1),
            sized("b", Status::Sigbus, 2),
            sized("c", Status::Sigbus, 16),
        ];
        assert_eq!(judge(&s, &rows).verdict, ClaimVerdict::Differs);
    }
}
