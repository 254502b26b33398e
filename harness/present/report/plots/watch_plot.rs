//! The watched jobs' plot: per job, /dev/shm in use over time with its size (dashed) and, when
//! the job had a memory limit, its cgroup's use (dotted) against that limit, the end marked when
//! it failed; beside it, who held /dev/shm at the peak, one bar per process.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{pe, whole, CRASH, FONT, GRID, LIMIT, MIB, PALETTE};
use crate::watch_text::pid_label;
use model::size::ByteSize;
use model::watch::WatchFindings;
use results::Row;

/// Processes drawn per job.
const BARS: usize = 6;

pub(super) fn draw_watch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    jobs: &[(&Row, Option<&WatchFindings>)],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(pe)?;
    let (heading, body) = root.split_vertically(44);
    heading
        .titled(
            "Watched jobs: /dev/shm over time (dashed: its size; dotted: memory cgroup use) and who held it at the peak",
            (FONT, 18),
        )
        .map_err(pe)?;
    let panels = body.split_evenly((jobs.len().max(1), 1));
    for ((row, report), panel) in jobs.iter().zip(panels.iter()) {
        let (left, right) = panel.split_horizontally(panel.dim_in_pixel().0 * 64 / 100);
        let empty = WatchFindings::default();
        let report = report.unwrap_or(&empty);
        over_time(&left, row, report)?;
        holders(&right, report)?;
    }
    Ok(())
}

fn over_time<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    row: &Row,
    report: &WatchFindings,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let limit = row.shm_seen_bytes as f64 / MIB;
    let cgroup_limit = report.cgroup_limit.map(|l| l as f64 / MIB);
    let peak = row.peak_shm_bytes as f64 / MIB;
    let cgroup_peak = report
        .samples
        .iter()
        .filter_map(|s| s.cgroup_bytes)
        .max()
        .map(|b| b as f64 / MIB);
    // The size is drawn when it is near the use; a host's /dev/shm of half the RAM would flatten
    // the curve to nothing.
    let show_limit = limit <= peak.max(1.0) * 4.0;
    let mut y_top = peak.max(cgroup_peak.unwrap_or(0.0)).max(1.0);
    if show_limit {
        y_top = y_top.max(limit);
    }
    if let Some(l) = cgroup_limit.filter(|l| *l <= y_top * 4.0) {
        y_top = y_top.max(l);
    }
    let end = report.samples.last().map_or(row.wall_s, |s| s.t_s).max(0.1);
    let command = row.watched_command.clone().unwrap_or_default();
    let caption: String = format!("{} ({})", command, row.status)
        .chars()
        .take(90)
        .collect();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 14))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(62)
        .build_cartesian_2d(0.0..end * 1.02, 0.0..y_top * 1.12)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("MiB")
        .x_labels(8)
        .y_labels(5)
        .y_label_formatter(&whole)
        .light_line_style(GRID)
        .label_style((FONT, 11))
        .axis_desc_style((FONT, 12))
        .draw()
        .map_err(pe)?;
    if show_limit {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, limit), (end * 1.02, limit)],
                8,
                5,
                LIMIT.stroke_width(2),
            ))
            .map_err(pe)?;
    }
    chart
        .draw_series(LineSeries::new(
            report
                .samples
                .iter()
                .map(|s| (s.t_s, s.shm_used_bytes as f64 / MIB)),
            PALETTE[0].stroke_width(2),
        ))
        .map_err(pe)?;
    let cgroup: Vec<(f64, f64)> = report
        .samples
        .iter()
        .filter_map(|s| Some((s.t_s, s.cgroup_bytes? as f64 / MIB)))
        .collect();
    if !cgroup.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                cgroup,
                2,
                4,
                PALETTE[2].stroke_width(2),
            ))
            .map_err(pe)?;
    }
    if !row.status.is_pass() {
        let used = report
            .samples
            .last()
            .map_or(0.0, |s| s.shm_used_bytes as f64 / MIB);
        chart
            .draw_series(std::iter::once(Cross::new(
                (end, used),
                7,
                CRASH.stroke_width(3),
            )))
            .map_err(pe)?;
    }
    Ok(())
}

fn holders<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, report: &WatchFindings) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let mut held = report.holders_by_bytes();
    held.retain(|h| h.bytes() > 0);
    held.truncate(BARS);
    let top = held
        .first()
        .map_or(1.0, |h| h.bytes() as f64 / MIB)
        .max(1.0);
    let n = held.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "held at {:.2} s ({} in use)",
                report.holders_t_s,
                ByteSize(report.holders_shm_bytes)
            ),
            (FONT, 14),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..top * 1.6, 0.0..n)
        .map_err(pe)?;
    let decimals = |v: &f64| {
        if top < 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.0}")
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("MiB")
        .x_labels(5)
        .x_label_formatter(&decimals)
        .light_line_style(GRID)
        .label_style((FONT, 11))
        .axis_desc_style((FONT, 12))
        .draw()
        .map_err(pe)?;
    // Largest at the top, each bar named by its process.
    for (i, h) in held.iter().enumerate() {
        let y = n - 1.0 - i as f64;
        let mib = h.bytes() as f64 / MIB;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y + 0.15), (mib, y + 0.85)],
                PALETTE[1].mix(0.85).filled(),
            )))
            .map_err(pe)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{}: {}", pid_label(report, h), ByteSize(h.bytes())),
                (mib + top * 0.03, y + 0.62),
                (FONT, 11).into_font(),
            )))
            .map_err(pe)?;
    }
    Ok(())
}
