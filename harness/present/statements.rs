//! Statements judged against the rows (the how-to's claims that several cells measure together),
//! as text: what was measured in each cell, in numbers, the verdict, and the command that
//! measures it again.

use analysis::statements::{Judged, Label, Measured};
use model::record::Status;
use model::size::ByteSize;
use model::statement::{Quantity, StatementKind};

/// The knobs whose values are byte sizes.
const SIZE_KNOBS: [&str; 3] = ["shm-size", "memory", "shm-remount"];

/// What tells a statement's cells apart: `prefetch=8`, sizes as people write them
/// (`shm-size=1.4 GiB`, not in bytes), or the cell's name.
pub fn label(label: &Label) -> String {
    match label {
        Label::Knob { name, value } => match (SIZE_KNOBS.contains(name), value.parse::<u64>()) {
            (true, Ok(bytes)) => format!("{name}={}", ByteSize(bytes)),
            _ => format!("{name}={value}"),
        },
        Label::Cell(cell) => cell.clone(),
    }
}

/// One measured value, in its unit.
fn value_text(q: Quantity, v: f64) -> String {
    match q {
        Quantity::PeakShm => ByteSize(v as u64).to_string(),
        Quantity::PeakFds => format!("{v:.0} fds"),
        Quantity::ImgPerS => format!("{v:.0} img/s"),
    }
}

fn outcome_text(m: &Measured) -> String {
    match m.status {
        None => "no row".into(),
        Some(s) => s.to_string(),
    }
}

/// Each cell's measurement: `prefetch=8: 1.2 GiB`, with its outcome where it did not pass.
fn cells_text(j: &Judged) -> String {
    let q = j.statement.quantity;
    j.measured
        .iter()
        .map(|m| {
            let shown = match (j.statement.kind, m.value) {
                (StatementKind::Status, _) => outcome_text(m),
                (StatementKind::SmallestPass, _) => {
                    return format!("{} {}", ByteSize(m.shm_bytes), outcome_text(m));
                }
                (_, Some(v)) if m.status == Some(Status::Pass) => value_text(q, v),
                (_, Some(v)) => format!("{} ({})", value_text(q, v), outcome_text(m)),
                (_, None) => outcome_text(m),
            };
            format!("{}: {shown}", label(&m.label))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What was measured, in words and numbers.
pub fn finding(j: &Judged) -> String {
    let s = &j.statement;
    let mut text = match s.kind {
        StatementKind::Status => format!(
            "expected {} in every cell; measured {}",
            s.expect.map(|e| e.to_string()).unwrap_or_default(),
            cells_text(j)
        ),
        StatementKind::SmallestPass => format!(
            "smallest /dev/shm that passed: {} (the sentence says {}); {}",
            j.smallest_pass
                .map(|b| ByteSize(b).to_string())
                .unwrap_or_else(|| "none of them".into()),
            s.size.map(|b| b.to_string()).unwrap_or_default(),
            cells_text(j)
        ),
        _ => format!("{}: {}", s.quantity.name(), cells_text(j)),
    };
    if let Some(r) = j.ratio {
        text.push_str(&format!(
            "; {} / {} = {r:.2}",
            label(&j.measured[0].label),
            label(&j.measured[1].label)
        ));
    }
    if s.quantity == Quantity::PeakShm && matches!(s.kind, StatementKind::Grows) {
        let bounds: Vec<String> = j
            .measured
            .iter()
            .map(|m| ByteSize(m.bound_bytes as u64).to_string())
            .collect();
        text.push_str(&format!(
            " (the model's bound, (workers x prefetch + 1) batches: {})",
            bounds.join(", ")
        ));
    }
    text
}

/// The command that measures the statement again.
pub fn command(j: &Judged, scenario: &str) -> String {
    format!(
        "shmbench matrix {scenario} --cells {}",
        j.statement.cells.join(",")
    )
}

/// The table: quote, section, measured, verdict, command.
pub fn table(judged: &[Judged], scenario: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let headers = ["Claim", "Section", "Measured", "Verdict", "Reproduce"]
        .map(String::from)
        .to_vec();
    let rows = judged
        .iter()
        .map(|j| {
            vec![
                format!("\"{}\"", j.statement.quote),
                j.statement.section.clone(),
                finding(j),
                j.verdict.to_string(),
                format!("`{}`", command(j, scenario)),
            ]
        })
        .collect();
    (headers, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_labelled_by_its_knob_with_sizes_in_units() {
        let knob = |name, value: &str| Label::Knob {
            name,
            value: value.into(),
        };
        assert_eq!(label(&knob("prefetch", "8")), "prefetch=8");
        assert_eq!(
            label(&knob("shm-size", "1073741824")),
            format!("shm-size={}", ByteSize(1 << 30))
        );
        assert_eq!(label(&knob("shm-size", "default")), "shm-size=default");
        assert_eq!(label(&Label::Cell("tuned".into())), "tuned");
    }
}
