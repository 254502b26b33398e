//! A scenario as a Slurm batch script (`shmbench slurm script`): one job array whose task `i`
//! runs cell `i mod n` (so every cell's first run comes before any cell's second), each task
//! `shmbench slurm task` reading the cells from the script itself. A task prints which cell it
//! runs, then the cell's record, into its own output file, for `slurm collect`.
//!
//! The script says, per cell, which /dev/shm it runs in: a private tmpfs of the cell's size in
//! a mount namespace (a node's own /dev/shm is one size, shared by every job on it), or the
//! node's own /dev/shm for the cells that ask for the host's.

use std::fmt::Write as _;
use std::path::Path;

use super::directive::{self, shell_word, BadScriptValue};
use crate::slurm::output;
use model::config::CellConfig;
use model::knobs::RuntimeKind;
use model::size::ByteSize;
use plan::memory;

/// The heredoc's end: never a line of JSON, which is written on one line.
const CELLS_END: &str = "SHMBENCH_CELLS";

/// Where and how the array runs.
pub struct Target<'a> {
    pub binary: &'a Path,
    /// Where the tasks write their output files (absolute: tasks start elsewhere).
    pub output_dir: &'a Path,
    pub partition: Option<&'a str>,
    pub constraint: Option<&'a str>,
    /// `--mem` as Slurm takes it (`4G`); None: what the cells need, in MiB.
    pub mem: Option<&'a str>,
    pub time: Option<&'a str>,
    pub repeat: u32,
    /// At most this many tasks at once (`--array=0-N%K`): one node each.
    pub max_parallel: Option<u32>,
    /// Tasks may share a node (for a measurement of jobs side by side); else each takes its
    /// node whole, since a neighbour's /dev/shm and CPU disturb what a cell measures.
    pub shared: bool,
}

/// Where a cell's /dev/shm is, in words, for the script's table.
fn where_it_runs(cell: &CellConfig) -> String {
    match cell.knobs.runtime {
        RuntimeKind::Namespace => {
            let size = cell.knobs.shm_size.map(|s| s.bytes()).unwrap_or_default();
            format!("a private tmpfs of {} (mount namespace)", ByteSize(size))
        }
        _ => "the node's own /dev/shm, shared with every job on the node".into(),
    }
}

/// The config a task runs: the cell as planned without Docker, its note saying where it ran.
fn in_task(cell: &CellConfig) -> CellConfig {
    let mut c = cell.clone();
    c.runtime_note = Some(format!("a Slurm array task, in {}", where_it_runs(cell)));
    c
}

/// The `--mem` the cells need when the user names none: the largest of their needs, in MiB.
fn mem_needed(cells: &[CellConfig]) -> String {
    let most = cells.iter().map(memory::job_bytes).max().unwrap_or(0);
    format!("{}M", most.div_ceil(1 << 20))
}

/// The `#SBATCH` lines, each value checked and quoted as sbatch reads it.
fn directives(
    scenario: &str,
    cells: &[CellConfig],
    target: &Target,
) -> Result<String, BadScriptValue> {
    let tasks = cells.len() as u64 * target.repeat.max(1) as u64;
    let mut array = format!("0-{}", tasks.saturating_sub(1));
    if let Some(k) = target.max_parallel {
        let _ = write!(array, "%{k}");
    }
    let mem = match target.mem {
        Some(mem) => {
            directive::mem(mem)?;
            mem.to_string()
        }
        None => mem_needed(cells),
    };
    let dir = directive::output_dir(&target.output_dir.display().to_string())?;
    // The name's own `%A_%a` left as Slurm's: only the directory's `%` are escaped.
    let output = directive::directive("--output-dir", &format!("{dir}/{}", output::pattern()))?;
    let mut lines = vec![
        format!(
            "--job-name={}",
            directive::directive("scenario name", &format!("shmbench-{scenario}"))?
        ),
        format!("--array={array}"),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!("--mem={mem}"),
        format!("--output={output}"),
    ];
    if !target.shared {
        lines.push("--exclusive".into());
    }
    if let Some(time) = target.time {
        directive::time(time)?;
    }
    let optional = [
        ("--partition", target.partition),
        ("--constraint", target.constraint),
        ("--time", target.time),
    ];
    for (flag, value) in optional {
        if let Some(v) = value {
            lines.push(format!("{flag}={}", directive::directive(flag, v)?));
        }
    }
    Ok(lines.iter().map(|l| format!("#SBATCH {l}\n")).collect())
}

/// The batch script for `cells` of `scenario`; Err: a value it cannot hold (a control
/// character, or not in the syntax Slurm gives the flag), named with its flag.
pub fn render(
    scenario: &str,
    cells: &[CellConfig],
    target: &Target,
) -> Result<String, BadScriptValue> {
    let mut out = String::from("#!/bin/bash\n");
    out.push_str(&directives(scenario, cells, target)?);
    // The comments below hold names: none may end its comment line.
    for cell in cells {
        directive::no_control("cell name", &cell.cell)?;
    }
    let runs = target.repeat.max(1);
    let _ = writeln!(
        out,
        "#\n# Written by `shmbench slurm script` (shmbench {}): scenario {scenario}, {} cells x {runs} run(s),\n# one array task per run. Submit it with `sbatch` (or `shmbench slurm submit`); the rows come\n# back with `shmbench slurm collect JOBID --dir {}`.\n#\n# task  cell                          /dev/shm",
        env!("CARGO_PKG_VERSION"),
        cells.len(),
        shell_word(&target.output_dir.display().to_string())
    );
    for (i, cell) in cells.iter().enumerate() {
        let _ = writeln!(out, "# {i:<5} {:<29} {}", cell.cell, where_it_runs(cell));
    }
    if runs > 1 {
        let _ = writeln!(
            out,
            "# (task i runs cell i mod {}: each cell's runs are interleaved with the others')",
            cells.len()
        );
    }
    out.push_str("#\n# A node's /dev/shm is one tmpfs for every job on it (unless the cluster gives each job its\n# own, job_container/tmpfs), and with ConstrainRAMSpace its pages count against the job's\n# --mem: a job short of memory ends OUT_OF_MEMORY, not with a Bus error.\n");
    let task_cells: Vec<CellConfig> = cells.iter().map(in_task).collect();
    let cells_json = serde_json::to_string(&task_cells).unwrap_or_default();
    let _ = write!(
        out,
        "set -eu\nexec {} slurm task <<'{CELLS_END}'\n{cells_json}\n{CELLS_END}\n",
        shell_word(&target.binary.display().to_string()),
    );
    Ok(out)
}
