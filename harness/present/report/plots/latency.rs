//! The latency plot: step-latency distribution per cell (box: p25–p75, line: median, whisker:
//! p5–p99).

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{categorical, crash_text, label, legend, pe, Item, CRASH};
use crate::report::ReportContent;
use model::estimate::quantile;

pub(super) fn draw_latency<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    report: &ReportContent,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    legend(root, report)?;
    let stats: Vec<Option<[f64; 5]>> = items
        .iter()
        .map(|item| {
            // Steady-state steps only, as the CSV's percentiles.
            let skip = item.row.warmup_steps as usize;
            let ms: Vec<f64> = item
                .series
                .unwrap_or(&[])
                .iter()
                .skip(skip)
                .map(|s| s.latency_ms)
                .collect();
            Some([
                quantile(&ms, 0.05)?,
                quantile(&ms, 0.25)?,
                quantile(&ms, 0.5)?,
                quantile(&ms, 0.75)?,
                quantile(&ms, 0.99)?,
            ])
        })
        .collect();
    let top = stats
        .iter()
        .flatten()
        .map(|s| s[4])
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.15;
    let mut chart = categorical(
        root,
        items,
        "Step latency (box: p25–p75, bar: median, whisker: p5–p99)",
        "milliseconds per step",
        top,
    )?;
    for (i, (item, st)) in items.iter().zip(&stats).enumerate() {
        let i = i as i32;
        let Some([p5, p25, p50, p75, p99]) = *st else {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("no steps ({})", crash_text(item.row)),
                    (SegmentValue::CenterOf(i), top * 0.1),
                    label(13, &CRASH),
                )))
                .map_err(pe)?;
            continue;
        };
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![
                    (SegmentValue::CenterOf(i), p5),
                    (SegmentValue::CenterOf(i), p99),
                ],
                BLACK.stroke_width(1),
            )))
            .map_err(pe)?;
        let mut boxed = Rectangle::new(
            [
                (SegmentValue::Exact(i), p25),
                (SegmentValue::Exact(i + 1), p75),
            ],
            item.colour.filled(),
        );
        boxed.set_margin(0, 0, 30, 30);
        chart.draw_series(std::iter::once(boxed)).map_err(pe)?;
        let mut median = Rectangle::new(
            [
                (SegmentValue::Exact(i), p50 - top * 0.004),
                (SegmentValue::Exact(i + 1), p50 + top * 0.004),
            ],
            BLACK.filled(),
        );
        median.set_margin(0, 0, 26, 26);
        chart.draw_series(std::iter::once(median)).map_err(pe)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("median {p50:.1} ms"),
                (SegmentValue::CenterOf(i), p99 + top * 0.01),
                label(13, &BLACK),
            )))
            .map_err(pe)?;
    }
    Ok(())
}
