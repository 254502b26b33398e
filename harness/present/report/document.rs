//! The report's content, once, as blocks that each output format renders its own way.

use super::block::Block;
use super::{claims_checked, watched_jobs, ReportContent};
use crate::compare_tables::summary_cells;
use crate::labels::{claim_label, explanation_parts, status_label, verdict_label};
use crate::matrix;
use model::knobs::Loader;
use model::size::ByteSize;
use results::Row;

/// How many parts of the rows' explanations every row shares, in order from the first: the
/// loader's arithmetic, said once above the table instead of in every row. Each row keeps at
/// least one part of its own.
fn shared_parts(explanations: &[Vec<String>]) -> usize {
    let Some(first) = explanations.first() else {
        return 0;
    };
    let common = (0..first.len())
        .take_while(|&i| {
            explanations
                .iter()
                .all(|parts| parts.get(i) == first.get(i))
        })
        .count();
    let own_one = explanations.iter().map(|p| p.len().saturating_sub(1)).min();
    common.min(own_one.unwrap_or(0))
}

/// The claims beside the measurements: what every row shares first, then a table with each
/// row's own reason.
fn claims_table(rows: &[Row]) -> Vec<Block> {
    let claimed: Vec<&Row> = rows.iter().filter(|r| r.claim_status.is_some()).collect();
    if claimed.is_empty() {
        return Vec::new();
    }
    let explanations: Vec<Vec<String>> = claimed.iter().map(|r| explanation_parts(r)).collect();
    let shared = shared_parts(&explanations);
    let mut blocks = Vec::new();
    if shared > 0 {
        blocks.push(Block::Paragraph(format!(
            "In every row: {}.",
            explanations[0][..shared].join("; ")
        )));
    }
    let headers = [
        "Environment".to_string(),
        matrix::claims_header(rows),
        "Measured".into(),
        "Verdict".into(),
        "Why (from the measurement)".into(),
    ]
    .to_vec();
    let cells = claimed
        .iter()
        .zip(&explanations)
        .map(|(r, why)| {
            let own = &why[shared..];
            vec![
                r.environment.clone(),
                claim_label(r).unwrap_or_default(),
                status_label(r),
                verdict_label(r),
                own.join("; "),
            ]
        })
        .collect();
    blocks.push(Block::Table(headers, cells));
    blocks
}

fn side_by_side(report: &ReportContent) -> Block {
    let mut headers = vec!["Cell".to_string()];
    headers.extend(report.sources.iter().map(|s| s.label.clone()));
    let mut cells: Vec<String> = Vec::new();
    for s in &report.sources {
        for r in &s.rows {
            if !cells.contains(&r.cell) {
                cells.push(r.cell.clone());
            }
        }
    }
    let rows = cells
        .iter()
        .map(|cell| {
            let mut line = vec![cell.clone()];
            for s in &report.sources {
                line.push(match s.rows.iter().find(|r| &r.cell == cell) {
                    Some(r) => format!("{}, {} img/s", status_label(r), matrix::throughput(r)),
                    None => "(not run)".to_string(),
                });
            }
            line
        })
        .collect();
    Block::Table(headers, rows)
}

/// A row of the environment table: its name and how to read it from a results row.
type Field = (&'static str, fn(&Row) -> String);

fn environment(report: &ReportContent) -> Block {
    let mut headers = vec!["".to_string()];
    headers.extend(report.sources.iter().map(|s| s.label.clone()));
    let fields: [Field; 12] = [
        ("host", |r| r.host.clone()),
        ("kernel", |r| r.kernel.clone()),
        ("OS", |r| r.os.clone()),
        ("CPU", |r| format!("{} ({} cores)", r.cpu, r.cores)),
        ("memory", |r| ByteSize(r.mem_bytes).to_string()),
        ("host /dev/shm", |r| ByteSize(r.host_shm_bytes).to_string()),
        ("cgroup", |r| {
            let limit = r
                .cgroup_memory_limit
                .map(|l| ByteSize(l).to_string())
                .unwrap_or_else(|| "no memory limit".into());
            format!("{} ({limit})", r.cgroup_version)
        }),
        ("Docker engine", |r| match &r.docker_version {
            Some(v) => format!(
                "{v} (API {})",
                r.docker_api_version.clone().unwrap_or_default()
            ),
            None => "not used".into(),
        }),
        ("Docker cgroup / storage", |r| match &r.docker_version {
            Some(_) => format!(
                "{} {} / {}",
                r.docker_cgroup_version.clone().unwrap_or_default(),
                r.docker_cgroup_driver.clone().unwrap_or_default(),
                r.docker_storage_driver.clone().unwrap_or_default()
            ),
            None => "-".into(),
        }),
        ("torch profile", |r| r.torch.to_string()),
        ("shmbench", |r| r.harness_version.clone()),
        ("run", |r| {
            format!("{} (started {})", r.run_id, r.started_at)
        }),
    ];
    let rows = fields
        .iter()
        .map(|(name, get)| {
            let mut line = vec![name.to_string()];
            line.extend(
                report
                    .sources
                    .iter()
                    .map(|s| s.rows.first().map(get).unwrap_or_default()),
            );
            line
        })
        .collect();
    Block::Table(headers, rows)
}

/// The report, top to bottom.
/// A row's command, pasteable as one command however the file from elsewhere wrote it.
fn reproduce(row: &Row) -> String {
    results::row_build::pasteable(&row.command)
        .unwrap_or_else(|| format!("# not a command line: {}", row.command))
}

pub fn build(report: &ReportContent) -> Vec<Block> {
    let scenarios: Vec<String> = {
        let mut names: Vec<String> = report
            .sources
            .iter()
            .flat_map(|s| s.rows.iter().map(|r| r.scenario.clone()))
            .collect();
        names.dedup();
        names
    };
    let mut doc = vec![Block::Heading(
        1,
        format!("shmbench report: {}", scenarios.join(", ")),
    )];
    doc.push(Block::Paragraph(format!(
        "Made from {} by shmbench; every measured number below comes from running the cells, and only the column of the how-to's claims quotes the how-to.",
        report.sources.iter().map(|s| format!("`{}`", s.path.display())).collect::<Vec<_>>().join(", ")
    )));
    for source in &report.sources {
        doc.extend(watched_jobs::blocks(source));
        // The loaders' rows; a watched command is not a loader configuration.
        let loaders: Vec<Row> = source
            .rows
            .iter()
            .filter(|r| r.loader != Loader::Command)
            .cloned()
            .collect();
        if loaders.is_empty() {
            continue;
        }
        doc.push(Block::Heading(2, format!("Matrix: {}", source.label)));
        if source.cells.iter().any(|c| c.runs > 1) {
            // Statistics over every run first; the matrix below shows each cell's first run.
            let (headers, cells) = summary_cells(&source.cells);
            doc.push(Block::Paragraph(format!("Every run, per cell ({} rows; median img/s with its 95% bootstrap interval over the passing runs):", source.total_rows)));
            doc.push(Block::Table(headers, cells));
            doc.push(Block::Paragraph(
                "Each cell's first run, in the how-to's shape:".into(),
            ));
        }
        // The claims, with why each agrees or differs, have a table of their own below: the
        // matrix shows the measurements once, and its notes only what that table does not say.
        let first = loaders;
        let (headers, cells) = matrix::measured_cells(&first, false);
        doc.push(Block::Table(headers, cells));
        let notes = matrix::notes_with(&first, false);
        if !notes.is_empty() {
            doc.push(Block::List(notes));
        }
    }
    if report.sources.len() > 1 {
        doc.push(Block::Heading(2, "Side by side".into()));
        doc.push(side_by_side(report));
    }
    let claimed: Vec<Row> = report
        .sources
        .iter()
        .flat_map(|s| s.rows.iter().cloned())
        .collect();
    let claims = claims_table(&claimed);
    if !claims.is_empty() {
        doc.push(Block::Heading(
            2,
            "The how-to's claims beside the measurements".into(),
        ));
        doc.extend(claims);
    }
    for source in &report.sources {
        doc.extend(claims_checked::blocks(source, report));
    }
    if scenarios.iter().any(|s| s == "seed-matrix") {
        doc.push(Block::Paragraph("The how-to's other claims (where file_system's segments live, file descriptors against workers and `ulimit -n`, persistent_workers across epochs, prefetch_factor, pin_memory, the sizes and fixes that resolve the Bus error, SIGBUS or the OOM killer) are measured by `shmbench matrix seed-claims`: its report's section \"The how-to's claims, checked\" gives each sentence its verdict and numbers.".into()));
    }
    if !report.plots.is_empty() {
        doc.push(Block::Heading(2, "Plots".into()));
        for i in 0..report.plots.len() {
            doc.push(Block::Plot(i));
        }
    }
    doc.push(Block::Heading(2, "Environment".into()));
    doc.push(environment(report));
    doc.push(Block::Heading(2, "Reproduce".into()));
    let mut commands: Vec<String> = report
        .sources
        .iter()
        .filter_map(|s| s.rows.first())
        .map(reproduce)
        .collect();
    commands.dedup();
    doc.push(Block::Paragraph(format!(
        "Scenario {}; each run's command (from the results file):",
        scenarios
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )));
    doc.push(Block::Code(commands));
    if !report.problems.is_empty() {
        doc.push(Block::Heading(2, "Missing from this report".into()));
        doc.push(Block::List(report.problems.clone()));
    }
    doc
}
