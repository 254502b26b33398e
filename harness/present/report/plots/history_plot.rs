//! The history plot: each cell's median (img/s or CPU per image) along the runs, ordered by the
//! history's field; a step found by the change-point search is a dashed vertical line at the run
//! where it starts, an outcome change a cross, and a run where the cell crashed has no point.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{label, label_at, pe, FONT, GRID, PALETTE};
use crate::history_table::{run_label, unit};
use analysis::history::{History, Trend};

pub(super) fn draw_history<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    history: &History,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    let n = history.runs.len();
    let top = history
        .trends
        .iter()
        .flat_map(|t| t.points.iter().flatten().filter_map(|p| p.median))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.2;
    let labels: Vec<String> = history.runs.iter().map(|r| run_label(history, r)).collect();
    let formatter = |x: &f64| label_at(&labels, *x);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{} along the runs", unit(history.metric)),
            (FONT, 22),
        )
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_labels(n.max(2))
        .x_label_formatter(&formatter)
        .y_label_formatter(&|v: &f64| format!("{v:.3}"))
        .light_line_style(GRID)
        .y_desc(unit(history.metric))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(pe)?;
    for (c, trend) in history.trends.iter().enumerate() {
        let colour = PALETTE[c % PALETTE.len()];
        let points = passing_points(trend);
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(pe)?
            .label(trend.cell.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
            .map_err(pe)?;
        for (i, step) in &trend.rate_steps {
            let x = *i as f64 - 0.5;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, 0.0), (x, top * 0.95)],
                    6,
                    4,
                    colour.stroke_width(2),
                ))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{}: {:+.1}%", trend.cell, step * 100.0),
                    // Steps of several cells at one run are stacked, not overprinted.
                    (x, top * (0.97 - 0.045 * c as f64)),
                    label(13, &colour),
                )))
                .map_err(pe)?;
        }
        for step in &trend.outcome_steps {
            let (i, after) = (&step.at, &step.after);
            chart
                .draw_series(std::iter::once(Cross::new(
                    (*i as f64, top * 0.05),
                    8,
                    colour.stroke_width(3),
                )))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    after.to_string(),
                    (*i as f64, top * 0.09),
                    label(12, &colour),
                )))
                .map_err(pe)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .draw()
        .map_err(pe)?;
    Ok(())
}

/// The runs where a cell passed, as (run, median) points: a crash has no rate to draw.
fn passing_points(trend: &Trend) -> Vec<(f64, f64)> {
    trend
        .points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let p = p.as_ref()?;
            p.outcome
                .status
                .is_pass()
                .then_some(p.median)
                .flatten()
                .map(|m| (i as f64, m))
        })
        .collect()
}
