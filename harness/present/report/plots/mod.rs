//! The report's plots, each drawn once per backend: PNG (bitmap) and SVG (inlined in the HTML).
//!
//! - `throughput`: img/s per cell; crashed cells have no bar but their crash kind and step.
//! - `shm`: /dev/shm in use over the steps, one panel per cell, with the cell's limit drawn and
//!   the crash point marked.
//! - `latency`: step-latency distribution per cell (box: p25–p75, line: median, whisker: p5–p99).
//! - `watch`: each watched job's /dev/shm over time with its limit (and its memory cgroup's use
//!   when it had a limit), the end marked, beside who held /dev/shm at the peak.
//! - `claims`: one panel per claim of the how-to whose words are a trend or a comparison, the
//!   quantity per cell with the model's bound for /dev/shm.
//! - `history` (for `shmbench history --plot`): each cell's median along the runs, with the
//!   change points found.
//! - `frontier` (for `shmbench tune --plot`): each setting's img/s against the /dev/shm it needs,
//!   the frontier joined, the pick ringed, the budget and its margin drawn.
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

mod claims;
pub mod frontier;
mod history_plot;
mod latency;
mod shm_use;
mod throughput;
mod watch_plot;

use claims::draw_claims;
use frontier::draw_frontier;
use history_plot::draw_history;
use latency::draw_latency;
use shm_use::draw_shm;
use throughput::draw_throughput;
use watch_plot::draw_watch;

use super::claims_checked;
use super::watched_jobs::watched;
use super::ReportContent;
use model::knobs::Loader;
use results::steps::StepRow;
use results::Row;

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

/// The label at integer `x` of an axis whose categories sit at 0, 1, 2... (runs, cells); none
/// between them.
fn label_at(labels: &[String], x: f64) -> String {
    let i = x.round();
    match (x - i).abs() < 1e-6 && i >= 0.0 {
        true => labels.get(i as usize).cloned().unwrap_or_default(),
        false => String::new(),
    }
}

fn whole(v: &f64) -> String {
    format!("{v:.0}")
}

/// A colour key for several sources, drawn across the top of `area`.
fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, report: &ReportContent) -> Result<()>
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
    series: Option<&'a [StepRow]>,
}

/// The most cells (or watched jobs) a plot draws: a plot's size grows with what it draws, and
/// past a few dozen panels nobody reads them (the tables keep every cell). The plots' titles say
/// when they show the first of more.
pub const MAX_PLOTTED: usize = 36;

/// ` (the first 36 of 200)` when `shown` is fewer than `of`.
fn first_of(shown: usize, of: usize) -> String {
    match shown < of {
        true => format!(" (the first {shown} of {of})"),
        false => String::new(),
    }
}

/// One item per cell of each source, in order, and how many cells there were in all.
fn items(report: &ReportContent) -> (Vec<Item<'_>>, usize) {
    let several = report.sources.len() > 1;
    let mut out = Vec::new();
    let mut cells = 0;
    for (s, source) in report.sources.iter().enumerate() {
        // One item per cell: with repeats or runs, its first row (the statistics are in the
        // tables). A watched command has its own plot.
        let mut seen = std::collections::HashSet::new();
        for (row, series) in source
            .rows
            .iter()
            .zip(&source.series)
            .filter(|(r, _)| r.loader != Loader::Command)
            .filter(|(r, _)| {
                seen.insert((&r.run_id, &r.kernel, &r.cell, r.loader, &r.torch_version))
            })
        {
            cells += 1;
            if out.len() >= MAX_PLOTTED {
                continue;
            }
            let label = if several {
                format!("{} [{}]", row.environment, s + 1)
            } else {
                row.environment.clone()
            };
            out.push(Item {
                label,
                colour: PALETTE[s % PALETTE.len()],
                row,
                series: series.as_deref(),
            });
        }
    }
    (out, cells)
}

fn crash_text(row: &Row) -> String {
    format!(
        "{} @ step {}",
        row.status.to_string().to_uppercase(),
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

/// Writes the plot of a history into `dir`.
pub fn write_history(history: &analysis::history::History, dir: &Path) -> Result<Vec<Plot>> {
    super::font::ensure()?;
    let width = (160 * history.runs.len() as u32).clamp(900, 2400);
    Ok(vec![both!(
        dir,
        "history",
        "Each cell along the runs",
        (width, 560),
        draw_history(history)
    )])
}

/// Writes the plot of a tune's frontier into `dir`.
pub fn write_frontier(frontier: &frontier::Frontier, dir: &Path) -> Result<Vec<Plot>> {
    super::font::ensure()?;
    Ok(vec![both!(
        dir,
        "frontier",
        "img/s against the /dev/shm each setting needs when training stalls",
        (1100, 620),
        draw_frontier(frontier)
    )])
}

/// Writes every plot of `report` into `dir`: the loaders' three when it has loader rows, the
/// watched jobs' one when it has watched rows.
pub fn write_all(report: &ReportContent, dir: &Path) -> Result<Vec<Plot>> {
    super::font::ensure()?;
    let mut plots = Vec::new();
    let mut jobs: Vec<_> = report.sources.iter().flat_map(watched).collect();
    let all_jobs = jobs.len();
    jobs.truncate(MAX_PLOTTED);
    if !jobs.is_empty() {
        let height = 60 + 320 * jobs.len() as u32;
        plots.push(both!(
            dir,
            "watch",
            format!(
                "/dev/shm of each watched job over time, and who held it at the peak{}",
                first_of(jobs.len(), all_jobs)
            ),
            (1200, height),
            draw_watch(&jobs)
        ));
    }
    let judged: Vec<_> = report
        .sources
        .iter()
        .flat_map(claims_checked::judged)
        .collect();
    let mut drawn = claims_checked::drawn(&judged);
    drawn.truncate(MAX_PLOTTED);
    if !drawn.is_empty() {
        let cols = drawn.len().clamp(1, 2);
        let height = 40 + 380 * drawn.len().div_ceil(cols) as u32;
        plots.push(both!(
            dir,
            "claims",
            "The how-to's claims where a trend or a comparison is the claim",
            (1300, height),
            draw_claims(&drawn, cols)
        ));
    }
    let (items, cells) = items(report);
    if items.is_empty() {
        return Ok(plots);
    }
    let shown = first_of(items.len(), cells);
    let width = (220 * items.len() as u32).clamp(900, 2400);
    let cols = items.len().clamp(1, 3);
    let shm_height = 70 + 300 * items.len().div_ceil(cols) as u32;
    plots.extend([
        both!(
            dir,
            "throughput",
            format!("Throughput per cell{shown}"),
            (width, 520),
            draw_throughput(&items, report)
        ),
        both!(
            dir,
            "shm",
            format!("/dev/shm in use over the steps{shown}"),
            (1200, shm_height),
            draw_shm(&items, cols, report)
        ),
        both!(
            dir,
            "latency",
            format!("Step latency distribution{shown}"),
            (width, 520),
            draw_latency(&items, report)
        ),
    ]);
    Ok(plots)
}
