//! Results in Bencher's metric format (BMF JSON), so runs can be pushed to an existing tracker
//! (`bencher run --adapter json --file FILE`): one benchmark per cell, named `scenario/cell`
//! (with the torch version for real-torch cells), whose measures are the medians over its runs
//! with their 95% bootstrap intervals as lower and upper values. Every cell reports its share of
//! passing runs with its 95% (Wilson) interval, and crashed cells the step they crashed at, so a
//! change of outcome is visible in the tracker too.

use serde_json::{json, Map, Value};

use analysis::outcomes::Shares;
use analysis::summary::CellSummary;
use model::knobs::Loader;
use results::Row;

/// One measure: a value and, when there is an interval, its bounds.
fn measure(value: f64, interval: Option<(f64, f64)>) -> Value {
    match interval {
        Some((lo, hi)) => json!({ "value": value, "lower_value": lo, "upper_value": hi }),
        None => json!({ "value": value }),
    }
}

/// The BMF document of cells, each with its first row (which names it).
pub fn render(cells: Vec<(Row, CellSummary)>) -> Value {
    let mut out = Map::new();
    for (first, summary) in cells {
        let mut name = format!("{}/{}", first.scenario, first.cell);
        if first.loader == Loader::Torch {
            let version = first.torch_version.as_deref().unwrap_or("unknown");
            name = format!("{name} (torch {version})");
        }
        // Cells that share a name (the same cell with other knobs) stay apart.
        let base = name.clone();
        let mut n = 2;
        while out.contains_key(&name) {
            name = format!("{base} #{n}");
            n += 1;
        }
        let mut measures = Map::new();
        if let Some(m) = summary.median {
            measures.insert("throughput".into(), measure(m, summary.ci));
        }
        if let Some(m) = summary.cpu_median {
            measures.insert("cpu-ms-per-image".into(), measure(m, summary.cpu_ci));
        }
        if let Some(m) = summary.instructions_median {
            measures.insert("instructions-per-image".into(), measure(m, None));
        }
        if let Some(m) = summary.peak_shm_median {
            measures.insert("peak-shm-bytes".into(), measure(m, None));
        }
        let shares = Shares::of(&summary.outcomes);
        if let Some(interval) = shares.pass_share_interval() {
            measures.insert(
                "pass-share".into(),
                measure(shares.pass_share(), Some(interval)),
            );
        }
        if let (false, Some(step)) = (summary.outcome.status.is_pass(), summary.outcome.crash_step)
        {
            measures.insert("crash-step".into(), measure(step as f64, None));
        }
        out.insert(name, Value::Object(measures));
    }
    Value::Object(out)
}
