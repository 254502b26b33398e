//! The throughput plot: img/s per cell; crashed cells have no bar but their crash kind and step.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{categorical, crash_text, label, legend, pe, Item, CRASH};
use crate::report::ReportContent;

pub(super) fn draw_throughput<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    report: &ReportContent,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    legend(root, report)?;
    let top = items
        .iter()
        .filter_map(|i| i.row.img_per_s)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.2;
    let mut chart = categorical(
        root,
        items,
        "Throughput per cell (steady state)",
        "images per second",
        top,
    )?;
    for (i, item) in items.iter().enumerate() {
        let i = i as i32;
        match (item.row.status.is_pass(), item.row.img_per_s) {
            (true, Some(rate)) => {
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), rate),
                    ],
                    item.colour.filled(),
                );
                bar.set_margin(0, 0, 14, 14);
                chart.draw_series(std::iter::once(bar)).map_err(pe)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        format!("{rate:.0}"),
                        (SegmentValue::CenterOf(i), rate + top * 0.01),
                        label(14, &BLACK),
                    )))
                    .map_err(pe)?;
            }
            _ => {
                chart
                    .draw_series(std::iter::once(Cross::new(
                        (SegmentValue::CenterOf(i), top * 0.04),
                        8,
                        CRASH.stroke_width(3),
                    )))
                    .map_err(pe)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        crash_text(item.row),
                        (SegmentValue::CenterOf(i), top * 0.09),
                        label(14, &CRASH),
                    )))
                    .map_err(pe)?;
            }
        }
    }
    Ok(())
}
