//! The report's section "The how-to's claims, checked": the statements a source's scenario keeps
//! beside its results (sentences several cells measure together), each judged against its rows,
//! with the plot of those whose words are a trend or a comparison.

use super::block::Block;
use super::{ReportContent, Source};
use crate::statements;
use analysis::statements::{judge_all, Judged};
use model::statement::StatementKind;

/// The source's statements, judged.
pub fn judged(source: &Source) -> Vec<Judged> {
    judge_all(&source.statements, &source.statement_rows)
}

/// Those drawn: a trend or a comparison of a quantity.
pub fn drawn(judged: &[Judged]) -> Vec<&Judged> {
    judged
        .iter()
        .filter(|j| {
            matches!(
                j.statement.kind,
                StatementKind::Grows | StatementKind::Flat | StatementKind::Greater
            )
        })
        .collect()
}

pub fn blocks(source: &Source, report: &ReportContent) -> Vec<Block> {
    let judged = judged(source);
    if judged.is_empty() {
        return Vec::new();
    }
    let scenario = source
        .rows
        .first()
        .map(|r| r.scenario.clone())
        .unwrap_or_default();
    let mut doc = vec![
        Block::Heading(2, format!("The how-to's claims, checked: {}", source.label)),
        Block::Paragraph(
            "Each sentence below is measured by the cells named in its command: the quantity in each cell, the verdict (agrees, differs, partly: a sentence of several parts, some true; inconclusive: nothing measured), and how to measure it again.".into(),
        ),
    ];
    let (headers, cells) = statements::table(&judged, &scenario);
    doc.push(Block::Table(headers, cells));
    if let Some(i) = report.plots.iter().position(|p| p.name == "claims") {
        doc.push(Block::Plot(i));
    }
    doc
}
