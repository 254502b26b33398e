//! A report of many rows (a fleet's cells over many runs) finishes, speaking of cells: every run
//! summarised per cell, each cell's first run in the matrix, plots of a bounded size that say
//! they show the first cells of more.

use crate::common;

use common::*;

/// PNG width and height, from its IHDR chunk.
fn png_size(path: &std::path::Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn a_report_of_thousands_of_rows_has_bounded_plots() {
    let _guard = serial();
    let dir = temp_dir("report-scale");
    // The committed example's rows, as 120 cells over 25 runs (3,000 rows).
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/example-seed-matrix.csv");
    let mut reader = csv::Reader::from_path(&example).unwrap();
    let headers = reader.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (run, cell, steps) = (column("run_id"), column("cell"), column("steps_file"));
    let out = dir.join("many.csv");
    let mut writer = csv::Writer::from_path(&out).unwrap();
    writer.write_record(&headers).unwrap();
    for r in 0..25 {
        for c in 0..120 {
            let mut row: Vec<String> = rows[c % rows.len()].iter().map(String::from).collect();
            row[run] = format!("run-{r}");
            row[cell] = format!("cell-{c}");
            row[steps] = String::new();
            writer.write_record(&row).unwrap();
        }
    }
    writer.flush().unwrap();
    let report = dir.join("report");
    let o = shmbench(&[
        "report",
        out.to_str().unwrap(),
        "--out",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for plot in ["shm.png", "throughput.png", "latency.png"] {
        let (w, h) = png_size(&report.join(plot));
        assert!(w <= 2400 && h <= 4000, "{plot}: {w} x {h}");
    }
    let markdown = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        markdown.contains("(the first 36 of 120)"),
        "the plots say what they leave out"
    );
    assert!(
        markdown.contains("Every run, per cell (3000 rows"),
        "every run is summarised"
    );
    // The summary has each of the 120 cells once, with its 25 runs; the matrix has each cell's
    // first run once (24 cells are the example's Docker Tuned row), not once per run.
    let count = |wanted: &dyn Fn(&str) -> bool| markdown.lines().filter(|l| wanted(l)).count();
    assert_eq!(count(&|l| l.contains("| 25   | ")), 120);
    let tuned = |l: &str| l.starts_with("| Docker Tuned") && l.contains("| 2 GiB");
    assert_eq!(count(&tuned), 24);
}
