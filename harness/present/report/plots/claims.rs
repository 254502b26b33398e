//! The claims plot: one panel per claim whose words are a trend or a comparison (peak /dev/shm
//! against prefetch_factor, open fds against workers, ...): the measured quantity per cell as a
//! line with points, and for /dev/shm the loader model's bound, (workers x prefetch + 1) batches,
//! dashed. A cell that crashed is a cross at its value; the verdict is in the panel's title.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{label, label_at, pe, FONT, GRID, LIMIT, MIB, PALETTE};
use crate::statements::label as cell_label;
use analysis::statements::Judged;
use model::statement::Quantity;

/// A value in the panel's unit (MiB for /dev/shm).
fn scaled(q: Quantity, v: f64) -> f64 {
    match q {
        Quantity::PeakShm => v / MIB,
        _ => v,
    }
}

fn unit(q: Quantity) -> &'static str {
    match q {
        Quantity::PeakShm => "peak /dev/shm (MiB)",
        Quantity::PeakFds => "open fds in the main",
        Quantity::ImgPerS => "images per second",
    }
}

pub(super) fn draw_claims<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    judged: &[&Judged],
    cols: usize,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    let rows = judged.len().div_ceil(cols);
    for (j, area) in judged.iter().zip(root.split_evenly((rows, cols))) {
        draw_one(&area, j)?;
    }
    Ok(())
}

fn draw_one<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, j: &Judged) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let q = j.statement.quantity;
    let n = j.measured.len();
    let points: Vec<(f64, f64, bool)> = j
        .measured
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let passed = m.status.is_some_and(|s| s.is_pass());
            m.value.map(|v| (i as f64, scaled(q, v), passed))
        })
        .collect();
    let bounds: Vec<(f64, f64)> = match q {
        Quantity::PeakShm => j
            .measured
            .iter()
            .enumerate()
            .map(|(i, m)| (i as f64, scaled(q, m.bound_bytes)))
            .collect(),
        _ => Vec::new(),
    };
    let top = points
        .iter()
        .map(|p| p.1)
        .chain(bounds.iter().map(|b| b.1))
        .fold(0.0f64, f64::max)
        .max(1.0)
        // Headroom for the key in the upper left and the values' labels.
        * 1.45;
    let labels: Vec<String> = j.measured.iter().map(|m| cell_label(&m.label)).collect();
    let formatter = |x: &f64| label_at(&labels, *x);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{} ({})", j.statement.id, j.verdict), (FONT, 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_labels(n.max(2))
        .x_label_formatter(&formatter)
        .y_label_formatter(&|v: &f64| format!("{v:.0}"))
        .light_line_style(GRID)
        .y_desc(unit(q))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .draw()
        .map_err(pe)?;
    let colour = PALETTE[0];
    if !bounds.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(bounds, 6, 4, LIMIT.stroke_width(2)))
            .map_err(pe)?
            .label("bound: (workers x prefetch + 1) batches")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], LIMIT.stroke_width(2)));
    }
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.0, p.1)),
            colour.stroke_width(2),
        ))
        .map_err(pe)?
        .label("measured")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3)));
    for &(x, y, passed) in &points {
        match passed {
            true => chart
                .draw_series(std::iter::once(Circle::new((x, y), 4, colour.filled())))
                .map_err(pe)?,
            false => chart
                .draw_series(std::iter::once(Cross::new(
                    (x, y),
                    7,
                    BLACK.stroke_width(3),
                )))
                .map_err(pe)?,
        };
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{y:.0}"),
                (x, y + top * 0.03),
                label(12, &BLACK),
            )))
            .map_err(pe)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()
        .map_err(pe)?;
    Ok(())
}
