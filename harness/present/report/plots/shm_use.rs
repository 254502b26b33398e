//! The /dev/shm plot: use over the steps, one panel per cell, with the cell's limit drawn and
//! the crash point marked.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{crash_text, legend, pe, whole, Item, CRASH, FONT, GRID, LIMIT, MIB};
use crate::matrix::shm_label;
use crate::report::ReportContent;

pub(super) fn draw_shm<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    cols: usize,
    report: &ReportContent,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    let (title, body) = root.split_vertically(if report.sources.len() > 1 { 70 } else { 44 });
    let (key, heading) = title.split_vertically(if report.sources.len() > 1 { 30 } else { 0 });
    legend(&key, report)?;
    heading
        .titled(
            "/dev/shm in use over the steps (dashed: the cell's /dev/shm size; x: crash)",
            (FONT, 22),
        )
        .map_err(pe)?;
    let rows = items.len().div_ceil(cols);
    let panels = body.split_evenly((rows, cols));
    for (item, panel) in items.iter().zip(panels.iter()) {
        let row = item.row;
        let series = item.series.unwrap_or(&[]);
        let limit = row.shm_seen_bytes as f64 / MIB;
        let peak = series
            .iter()
            .map(|s| s.shm_used_bytes as f64 / MIB)
            .fold(0.0f64, f64::max);
        let failed_at = row.shm_used_at_failure_bytes.map(|b| b as f64 / MIB);
        let y_top = limit.max(peak).max(failed_at.unwrap_or(0.0)).max(1.0) * 1.12;
        let last_step = series
            .last()
            .map(|s| s.step)
            .unwrap_or(0)
            .max(row.crash_step.unwrap_or(0))
            .max(2) as f64;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{}: {}", item.label, shm_label(row)), (FONT, 15))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(62)
            .build_cartesian_2d(0.0..last_step + 1.0, 0.0..y_top)
            .map_err(pe)?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("MiB in use")
            .x_labels(6)
            .y_labels(5)
            .x_label_formatter(&whole)
            .y_label_formatter(&whole)
            .light_line_style(GRID)
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 12))
            .draw()
            .map_err(pe)?;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, limit), (last_step + 1.0, limit)],
                8,
                5,
                LIMIT.stroke_width(2),
            ))
            .map_err(pe)?;
        chart
            .draw_series(LineSeries::new(
                series
                    .iter()
                    .map(|s| (s.step as f64, s.shm_used_bytes as f64 / MIB)),
                item.colour.stroke_width(2),
            ))
            .map_err(pe)?;
        if let (Some(step), Some(used)) = (row.crash_step, failed_at) {
            chart
                .draw_series(std::iter::once(Cross::new(
                    (step as f64, used),
                    7,
                    CRASH.stroke_width(3),
                )))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    crash_text(row),
                    (step as f64 + last_step * 0.04, used * 0.8),
                    (FONT, 12).into_font().color(&CRASH),
                )))
                .map_err(pe)?;
        }
    }
    Ok(())
}
