//! The tune's frontier plot: each setting that ran at the budget as a point, img/s (median of
//! its passing runs) against the /dev/shm the model says it needs when training stalls; the
//! frontier (no other setting both faster and needing less) joined by a line, the pick ringed,
//! a setting that failed a run a cross at its need, and the budget and its margin as dashed
//! vertical lines.

use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{label, pe, whole, CRASH, FONT, GRID, LIMIT, MIB, PALETTE};

/// A setting as the frontier plot draws it.
#[derive(Clone, Debug)]
pub struct Setting {
    pub name: String,
    /// /dev/shm it needs when training stalls, as the model says.
    pub needs_bytes: u64,
    /// The median img/s of its passing runs at the budget (None: it failed one, or never ran).
    pub img_per_s: Option<f64>,
    /// It failed a run.
    pub failed: bool,
    pub on_frontier: bool,
    pub pick: bool,
}

/// What the plot shows: the settings and the budget.
pub struct Frontier<'a> {
    pub settings: &'a [Setting],
    pub shm_bytes: u64,
    pub margin_bytes: u64,
}

pub(super) fn draw_frontier<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    f: &Frontier,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    let ran: Vec<&Setting> = (f.settings.iter())
        .filter(|s| s.img_per_s.is_some() || s.failed)
        .collect();
    let top = (ran.iter().filter_map(|s| s.img_per_s))
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.2;
    let right = (ran.iter().map(|s| s.needs_bytes))
        .chain([f.shm_bytes])
        .max()
        .unwrap_or(1) as f64
        / MIB
        * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption(
            "img/s against the /dev/shm each setting needs when training stalls",
            (FONT, 22),
        )
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..right, 0.0..top)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .light_line_style(GRID)
        .y_label_formatter(&whole)
        .x_desc("/dev/shm needed when training stalls (MiB)")
        .y_desc("images per second (median at the budget)")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(pe)?;
    limits(&mut chart, f, top)?;
    let point = |s: &Setting| s.img_per_s.map(|r| (s.needs_bytes as f64 / MIB, r));
    let mut line: Vec<(f64, f64)> = (ran.iter())
        .filter(|s| s.on_frontier)
        .filter_map(|s| point(s))
        .collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    let colour = PALETTE[0];
    chart
        .draw_series(LineSeries::new(line, colour.stroke_width(2)))
        .map_err(pe)?;
    for s in &ran {
        match point(s) {
            Some(p) => {
                let fill = if s.on_frontier {
                    colour.filled()
                } else {
                    colour.mix(0.35).filled()
                };
                chart
                    .draw_series(std::iter::once(Circle::new(p, 5, fill)))
                    .map_err(pe)?;
                if s.pick {
                    chart
                        .draw_series(std::iter::once(Circle::new(p, 10, CRASH.stroke_width(2))))
                        .map_err(pe)?;
                }
                if s.on_frontier || s.pick {
                    let words = match s.pick {
                        true => format!("{} (pick)", s.name),
                        false => s.name.clone(),
                    };
                    chart
                        .draw_series(std::iter::once(Text::new(
                            words,
                            (p.0, p.1 + top * 0.025),
                            label(13, &BLACK),
                        )))
                        .map_err(pe)?;
                }
            }
            None => {
                let p = (s.needs_bytes as f64 / MIB, top * 0.04);
                chart
                    .draw_series(std::iter::once(Cross::new(p, 6, CRASH.stroke_width(2))))
                    .map_err(pe)?;
            }
        }
    }
    Ok(())
}

/// The budget and its margin, dashed and named.
fn limits<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    f: &Frontier,
    top: f64,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    for (bytes, words) in [(f.shm_bytes, "budget"), (f.margin_bytes, "margin")] {
        let x = bytes as f64 / MIB;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, top * 0.92)],
                6,
                4,
                LIMIT.stroke_width(2),
            ))
            .map_err(pe)?;
        let y = if words == "budget" { 0.97 } else { 0.93 };
        chart
            .draw_series(std::iter::once(Text::new(
                words,
                (x, top * y),
                label(13, &LIMIT),
            )))
            .map_err(pe)?;
    }
    Ok(())
}
