//! The report's plots, each drawn once per backend: PNG (bitmap) and SVG (inlined in the HTML).
//!
//! - `throughput`: img/s per cell; crashed cells have no bar but their crash kind and step.
//! - `shm`: /dev/shm in use over the steps, one panel per cell, with the cell's limit drawn and
//!   the crash point marked.
//! - `latency`: step-latency distribution per cell (box: p25–p75, line: median, whisker: p5–p99).
//!
//! Colours are the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies);
//! the limit is dashed and crashes are crosses, so nothing relies on colour alone.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::{SegmentValue, SegmentedCoord};
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Report;
use crate::record::csv::Row;
use crate::stats::quantile;

/// Okabe–Ito: blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];
const LIMIT: RGBColor = RGBColor(213, 94, 0);
const CRASH: RGBColor = RGBColor(0, 0, 0);
const FONT: &str = "sans-serif";
const GRID: RGBColor = RGBColor(238, 238, 238);

/// Text centred above its anchor.
fn label(size: u32, colour: &RGBColor) -> TextStyle<'static> {
    (FONT, size)
        .into_font()
        .color(colour)
        .pos(Pos::new(HPos::Center, VPos::Bottom))
}

fn whole(v: &f64) -> String {
    format!("{v:.0}")
}

/// A colour key for several sources, drawn across the top of `area`.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, report: &Report) -> Result<()>
where
    DB::ErrorType: 'static,
{
    if report.sources.len() < 2 {
        return Ok(());
    }
    let mut x = 20;
    for (s, source) in report.sources.iter().enumerate() {
        let colour = PALETTE[s % PALETTE.len()];
        area.draw(&Rectangle::new([(x, 8), (x + 14, 22)], colour.filled()))
            .map_err(pe)?;
        let text = format!("[{}] {}", s + 1, source.label);
        area.draw(&Text::new(
            text.clone(),
            (x + 20, 8),
            (FONT, 14).into_font(),
        ))
        .map_err(pe)?;
        x += 40 + 8 * text.chars().count() as i32;
    }
    Ok(())
}

/// A plot written for a report.
#[derive(Clone, Debug)]
pub struct Plot {
    pub name: &'static str,
    pub title: String,
    pub png: String,
    pub svg_file: String,
    /// The SVG text, for inlining.
    pub svg: String,
}

fn pe<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e:?}")
}

/// One cell of one source, as the plots see it.
struct Item<'a> {
    label: String,
    colour: RGBColor,
    row: &'a Row,
    series: Option<&'a [crate::record::steps::StepRow]>,
}

fn items(report: &Report) -> Vec<Item<'_>> {
    let several = report.sources.len() > 1;
    let mut out = Vec::new();
    for (s, source) in report.sources.iter().enumerate() {
        // One item per cell: with repeats, the first (the statistics are in the tables).
        for (row, series) in source
            .rows
            .iter()
            .zip(&source.series)
            .filter(|(r, _)| r.repeat <= 1)
        {
            let label = if several {
                format!("{} [{}]", row.environment, s + 1)
            } else {
                row.environment.clone()
            };
            out.push(Item {
                label,
                colour: PALETTE[s % PALETTE.len()],
                row,
                series: series.as_ref().ok().map(|v| v.as_slice()),
            });
        }
    }
    out
}

fn crash_text(row: &Row) -> String {
    format!(
        "{} @ step {}",
        row.status.to_uppercase(),
        row.crash_step.unwrap_or(0)
    )
}

const MIB: f64 = (1u64 << 20) as f64;

/// A chart with one category per item along x (labelled with the items' names) and 0..`top`
/// along y: the frame the throughput and latency plots share.
type CategoryChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordi32>, RangedCoordf64>>;

fn categorical<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    items: &[Item],
    caption: &str,
    y_desc: &str,
    top: f64,
) -> Result<CategoryChart<'a, DB>>
where
    DB::ErrorType: 'static,
{
    let n = items.len() as i32;
    let labels: Vec<String> = items.iter().map(|i| i.label.clone()).collect();
    let formatter = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(items.len() + 1)
        .x_label_formatter(&formatter)
        .x_label_style((FONT, 13))
        .y_label_formatter(&whole)
        .light_line_style(GRID)
        .y_desc(y_desc)
        .y_label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(pe)?;
    Ok(chart)
}

fn draw_throughput<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    report: &Report,
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
        match (item.row.status.as_str(), item.row.img_per_s) {
            ("pass", Some(rate)) => {
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

fn draw_shm<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    cols: usize,
    report: &Report,
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
            .caption(
                format!("{}: {}", item.label, crate::table::shm_label(row)),
                (FONT, 15),
            )
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

fn draw_latency<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    items: &[Item],
    report: &Report,
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

/// Draws `draw` to `<name>.svg` and `<name>.png` in `dir`.
macro_rules! both {
    ($dir:expr, $name:literal, $title:expr, $size:expr, $draw:ident ( $($arg:expr),* )) => {{
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, $size).into_drawing_area();
            $draw(&root, $($arg),*)?;
            root.present().map_err(pe)?;
        }
        let svg_file = concat!($name, ".svg");
        std::fs::write($dir.join(svg_file), &svg)?;
        let png = concat!($name, ".png");
        {
            let png_path = $dir.join(png);
            let root = BitMapBackend::new(&png_path, $size).into_drawing_area();
            $draw(&root, $($arg),*)?;
            root.present().map_err(pe)?;
        }
        Plot { name: $name, title: $title.to_string(), png: png.to_string(), svg_file: svg_file.to_string(), svg }
    }};
}

/// Writes every plot of `report` into `dir`.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<Plot>> {
    super::font::ensure()?;
    let items = items(report);
    let width = (220 * items.len() as u32).clamp(900, 2400);
    let cols = items.len().clamp(1, 3);
    let shm_height = 70 + 300 * items.len().div_ceil(cols) as u32;
    Ok(vec![
        both!(
            dir,
            "throughput",
            "Throughput per cell",
            (width, 520),
            draw_throughput(&items, report)
        ),
        both!(
            dir,
            "shm",
            "/dev/shm in use over the steps",
            (1200, shm_height),
            draw_shm(&items, cols, report)
        ),
        both!(
            dir,
            "latency",
            "Step latency distribution",
            (width, 520),
            draw_latency(&items, report)
        ),
    ])
}
