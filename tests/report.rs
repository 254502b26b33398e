//! Reports from fixed results files (a real seed-matrix run committed under tests/fixtures):
//! the Markdown table, the side-by-side verdicts, valid non-trivial images, and the messages for
//! input that is partly or wholly unusable.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn report(args: &[&str]) -> (std::process::Output, PathBuf) {
    let dir = temp_dir("report").keep();
    let out = dir.join("out");
    let mut full = vec!["report"];
    full.extend_from_slice(args);
    full.extend(["--out", out.to_str().unwrap()]);
    (shmbench(&full), out)
}

/// Plots need a TrueType font (shmbench draws text without fontconfig).
fn font_or_skip() -> bool {
    require(
        "font",
        || Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").is_file(),
        "a TrueType font for plots (fonts-dejavu-core)",
    )
}

fn assert_images(dir: &Path) {
    if !font_or_skip() {
        return;
    }
    for name in ["throughput", "shm", "latency"] {
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}.png is not a PNG");
        assert!(png.len() > 20_000, "{name}.png is only {} bytes", png.len());
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{name}.svg is not an SVG"
        );
        assert!(
            svg.len() > 5_000 && svg.contains("<text"),
            "{name}.svg has no content"
        );
    }
}

#[test]
fn markdown_table_and_verdicts_for_a_fixed_csv() {
    let seed = fixture("seed.csv");
    let (o, out) = report(&[seed.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for line in [
        // The matrix shows the measurements; the claims have their own table, with why.
        "| Docker Default       | 64 MiB          | file_descriptor | docker  | CRASH (SIGBUS Step 1)  | 0.0 (Failed)       | 64 MiB        |\n",
        "| Docker Tuned         | CRASH (SIGBUS Step 18) | PASS (Stable)         | differs |",
        "| Docker Standard      | PASS (Stable)          | PASS (Stable)         | agrees  |",
        "| Restricted Container | PASS (Stable)          | CRASH (SIGBUS Step 1) | differs |",
    ] {
        assert!(md.contains(line), "missing:\n{line}\nin:\n{md}");
    }
    // Each reason once: a reviewer reads the report top to bottom.
    assert_eq!(
        md.matches("file_system segments are named shm_open objects in /dev/shm too")
            .count(),
        1,
        "{md}"
    );
    assert!(md.contains("attach them with it when you paste it into an issue"));
    assert!(md.contains("/dev/shm of 2 GiB holds 27 whole batches"));
    assert!(md.contains("![/dev/shm in use over the steps](shm.png)"));
    assert!(md.contains("Docker engine") && md.contains("20.10.24"));
    assert!(
        md.contains("```sh\nshmbench matrix"),
        "the reproducing command is missing"
    );
    assert_images(&out);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3, "three inline plots");
    assert!(
        !html.contains("src=") && !html.contains("href=\"http"),
        "report.html must be self-contained"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["sources"][0]["cells"][1]["verdict"], "differs");
}

#[test]
fn several_results_files_are_shown_side_by_side() {
    let seed = fixture("seed.csv");
    let (o, out) = report(&[seed.to_str().unwrap(), seed.to_str().unwrap()]);
    assert!(o.status.success());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Side by side"));
    assert!(
        md.contains("| docker-tuned           | PASS (Stable), 2,765.7 img/s"),
        "{md}"
    );
    assert_images(&out);
}

#[test]
fn unusable_input_is_named_and_the_rest_still_renders() {
    let dir = temp_dir("report-bad");
    // Another schema version.
    let text = std::fs::read_to_string(fixture("seed.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let other: String = std::iter::once(header.to_string())
        .chain(lines.map(|l| l.replacen("1,", "99,", 1)))
        .collect::<Vec<_>>()
        .join("\n");
    let other_path = dir.join("other.csv");
    std::fs::write(&other_path, other).unwrap();
    // A file whose time series is missing.
    let lonely = dir.join("lonely.csv");
    std::fs::copy(fixture("seed.csv"), &lonely).unwrap();
    let (o, out) = report(&[lonely.to_str().unwrap(), other_path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("schema 99 but this shmbench reads schemas 1, 2, 3"),
        "{stderr}"
    );
    assert!(
        stderr.contains("time series") && stderr.contains("is missing"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Missing from this report") && md.contains("schema 99"),
        "{md}"
    );
    assert!(
        md.contains("| Docker Tuned "),
        "the readable rows still render"
    );
    // Nothing readable at all: a clear error.
    let empty = dir.join("empty.csv");
    std::fs::write(&empty, format!("{header}\n")).unwrap();
    let (o, _) = report(&[empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing to report")
            && String::from_utf8_lossy(&o.stderr).contains("no rows")
    );
}

#[test]
fn no_font_is_a_clear_message_and_the_text_report_still_renders() {
    let seed = fixture("seed.csv");
    let dir = temp_dir("nofont");
    let o = std::process::Command::new(BIN)
        .args([
            "report",
            seed.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .env("SHMBENCH_FONT", "/nonexistent.ttf")
        .output()
        .unwrap();
    assert!(o.status.success());
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("plots were not drawn") && md.contains("fonts-dejavu-core"),
        "{md}"
    );
}

#[test]
fn repeated_runs_are_summarised_per_cell() {
    let dir = temp_dir("report-repeat");
    let rows = shmbench::results::csv::read(&fixture("seed.csv")).unwrap();
    let mut repeated = Vec::new();
    for rep in 1..=3u32 {
        for row in &rows {
            let mut r = row.clone();
            r.repeat = rep;
            r.steps_file = None;
            repeated.push(r);
        }
    }
    let path = dir.join("rep.csv");
    shmbench::results::csv::ResultsFile::create(&path)
        .unwrap()
        .replace(repeated)
        .unwrap();
    let (o, out) = report(&[path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Every run, per cell"), "{md}");
    assert!(
        md.contains("| Docker Tuned         | 3    | pass             | passes 3 of 3"),
        "{md}"
    );
    // The how-to's table and the claims appear once per cell, not once per repeat.
    assert_eq!(
        md.matches("| Docker Tuned         | 2 GiB").count(),
        1,
        "{md}"
    );
    assert_eq!(
        md.matches("| Docker Tuned         | CRASH (SIGBUS Step 18)")
            .count(),
        1,
        "{md}"
    );
}
