//! The results CSV: one row per cell, a versioned public contract (documented column by column
//! in `results/README.md`). The file is rewritten whole after every cell through a temporary file
//! and a rename, so a crash of the harness at any moment leaves either the previous complete file
//! or the new complete file, never a torn row.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::fingerprint::Fingerprint;
use super::CellRecord;
use crate::verdict;

/// Bump on any change to the columns' names, order or meaning.
pub const SCHEMA: u32 = 1;

/// One CSV row. Field order is column order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub schema: u32,
    pub run_id: String,
    /// 1-based repetition of this cell within the run (`--repeat`).
    pub repeat: u32,
    /// Hash of the environment fields that make runs comparable (see `Fingerprint::env_id`).
    pub env_id: String,
    pub started_at: String,
    pub scenario: String,
    pub cell: String,
    pub environment: String,
    pub runtime: String,
    pub runtime_note: Option<String>,
    pub container: String,
    pub ipc: String,
    pub memory_bytes: Option<u64>,
    pub shm_tmpfs: bool,
    pub shm_bytes: Option<u64>,
    pub shm_seen_bytes: u64,
    pub strategy: String,
    pub torch: String,
    pub workers: u32,
    pub prefetch: u32,
    pub batch: u32,
    pub shape: String,
    pub dtype: String,
    pub batch_bytes: u64,
    pub steps: u64,
    pub epochs: u32,
    pub persistent_workers: bool,
    pub pin_memory: bool,
    pub touch: String,
    pub compute_ms: f64,
    pub decode_us: u64,
    pub retain_every: u64,
    pub status: String,
    pub crash_step: Option<u64>,
    pub signal: Option<i32>,
    pub pid: Option<u32>,
    pub steps_done: u64,
    pub img_per_s: Option<f64>,
    /// This machine's calibrated all-cores fresh-segment rate for the cell's strategy and
    /// profile, in images per second (the data path's physical limit).
    pub limit_img_per_s: Option<f64>,
    /// img_per_s / limit_img_per_s.
    pub efficiency: Option<f64>,
    pub warmup_steps: u64,
    pub step_p50_ms: Option<f64>,
    pub step_p99_ms: Option<f64>,
    pub first_batch_ms: Option<f64>,
    pub peak_shm_bytes: u64,
    pub shm_used_at_failure_bytes: Option<u64>,
    pub peak_rss_bytes: u64,
    pub main_private_rss_bytes: u64,
    pub worker_private_rss_bytes: u64,
    pub accel_util: Option<f64>,
    pub wall_s: f64,
    pub message: String,
    /// The per-step series, relative to this CSV's directory.
    pub steps_file: Option<String>,
    /// The shmbench command line that produced this row.
    pub command: String,
    pub claim_status: Option<String>,
    pub claim_crash_step: Option<u64>,
    pub claim_img_per_s: Option<f64>,
    pub claim_verdict: String,
    pub kernel: String,
    pub os: String,
    pub cpu: String,
    pub cores: u32,
    pub mem_bytes: u64,
    pub host_shm_bytes: u64,
    pub cgroup_version: String,
    pub cgroup_memory_limit: Option<u64>,
    pub host: String,
    pub harness_version: String,
    pub thp_shmem: String,
    pub gpu_driver: Option<String>,
    pub docker_version: Option<String>,
    pub docker_api_version: Option<String>,
    pub docker_cgroup_version: Option<String>,
    pub docker_cgroup_driver: Option<String>,
    pub docker_storage_driver: Option<String>,
}

/// This invocation as a command a user can paste (`shmbench matrix --steps 20`).
fn command_line() -> String {
    let quote = |a: String| {
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
            format!("'{}'", a.replace('\'', "'\\''"))
        } else {
            a
        }
    };
    std::iter::once("shmbench".to_string())
        .chain(std::env::args().skip(1).map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}

fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

impl Row {
    /// Fills the limit and efficiency columns from a calibration of this machine.
    pub fn judge(
        &mut self,
        calibration: &crate::calibrate::Calibration,
        config: &crate::config::CellConfig,
    ) {
        let Some(bytes_per_s) = calibration.limit_bytes_per_s(config.strategy, config.torch) else {
            return;
        };
        let limit = bytes_per_s / config.image_bytes().max(1) as f64;
        self.limit_img_per_s = Some(round(limit, 1));
        self.efficiency = self.img_per_s.map(|r| round(r / limit, 4));
    }

    pub fn new(
        record: &CellRecord,
        runtime: &str,
        fp: &Fingerprint,
        run_id: &str,
        started_at: &str,
    ) -> Row {
        let c = &record.config;
        let m = &record.metrics;
        let claim = c.claim.as_ref();
        let mut row = Row {
            schema: SCHEMA,
            run_id: run_id.to_string(),
            repeat: 1,
            env_id: fp.env_id(),
            started_at: started_at.to_string(),
            scenario: c.scenario.clone(),
            cell: c.cell.clone(),
            environment: c.environment.clone(),
            runtime: runtime.to_string(),
            runtime_note: c.runtime_note.clone(),
            container: c.container.to_string(),
            ipc: c.ipc.to_string(),
            memory_bytes: c.memory.map(|m| m.bytes()),
            shm_tmpfs: c.shm_tmpfs,
            shm_bytes: c.shm_size.map(|s| s.bytes()),
            shm_seen_bytes: record.shm_seen_bytes,
            strategy: c.strategy.to_string(),
            torch: c.torch.to_string(),
            workers: c.workers,
            prefetch: c.prefetch,
            batch: c.batch,
            shape: c.shape.to_string(),
            dtype: c.dtype.to_string(),
            batch_bytes: c.batch_bytes(),
            steps: c.steps,
            epochs: c.epochs,
            persistent_workers: c.persistent_workers,
            pin_memory: c.pin_memory,
            touch: c.touch.to_string(),
            compute_ms: c.compute_ms,
            decode_us: c.decode_us,
            retain_every: c.retain_every,
            status: record.status.to_string(),
            crash_step: record.failure.as_ref().map(|f| f.crash_step),
            signal: record.failure.as_ref().and_then(|f| f.signal),
            pid: record.failure.as_ref().and_then(|f| f.pid),
            steps_done: m.steps_done,
            img_per_s: m.img_per_s.map(|x| round(x, 1)),
            limit_img_per_s: None,
            efficiency: None,
            warmup_steps: m.warmup_steps_used,
            step_p50_ms: m.step_p50_ms.map(|x| round(x, 3)),
            step_p99_ms: m.step_p99_ms.map(|x| round(x, 3)),
            first_batch_ms: m.first_batch_ms.map(|x| round(x, 3)),
            peak_shm_bytes: m.peak_shm_bytes,
            shm_used_at_failure_bytes: record.failure.as_ref().map(|f| f.shm_used_bytes),
            peak_rss_bytes: m.peak_rss_bytes,
            main_private_rss_bytes: m.main_private_rss_bytes,
            worker_private_rss_bytes: m.worker_private_rss_bytes,
            accel_util: m.accel_util.map(|x| round(x, 4)),
            wall_s: round(m.wall_s, 3),
            message: record.message.clone(),
            steps_file: None,
            command: command_line(),
            claim_status: claim.map(|c| c.status.clone()),
            claim_crash_step: claim.and_then(|c| c.crash_step),
            claim_img_per_s: claim.and_then(|c| c.img_per_s),
            claim_verdict: String::new(),
            kernel: fp.kernel.clone(),
            os: fp.os.clone(),
            cpu: fp.cpu.clone(),
            cores: fp.cores,
            mem_bytes: fp.mem_bytes,
            host_shm_bytes: fp.host_shm_bytes,
            cgroup_version: fp.cgroup_version.clone(),
            cgroup_memory_limit: fp.cgroup_memory_limit,
            host: fp.host.clone(),
            harness_version: fp.harness_version.clone(),
            thp_shmem: fp.thp_shmem.clone(),
            gpu_driver: fp.gpu_driver.clone(),
            docker_version: fp.docker.as_ref().map(|d| d.version.clone()),
            docker_api_version: fp.docker.as_ref().map(|d| d.api_version.clone()),
            docker_cgroup_version: fp.docker.as_ref().map(|d| d.cgroup_version.clone()),
            docker_cgroup_driver: fp.docker.as_ref().map(|d| d.cgroup_driver.clone()),
            docker_storage_driver: fp.docker.as_ref().map(|d| d.storage_driver.clone()),
        };
        row.claim_verdict = verdict::verdict(&row).to_string();
        row
    }
}

/// A results file being written, one complete rewrite per added row.
pub struct ResultsFile {
    path: PathBuf,
    rows: Vec<Row>,
}

impl ResultsFile {
    /// Prepares `path` (creating its directory); nothing is written until the first row.
    pub fn create(path: &Path) -> Result<ResultsFile> {
        // The file is replaced by rename: never let that replace a device, a directory or what a
        // symbolic link points at.
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_file() {
                bail!(
                    "{} exists and is not a regular file: results are written (and replaced atomically) as a regular file; choose another --out",
                    path.display()
                );
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the results directory {}", dir.display())
            })?;
        }
        Ok(ResultsFile {
            path: path.to_path_buf(),
            rows: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Adds a row and atomically replaces the file with all rows so far.
    pub fn push(&mut self, row: Row) -> Result<()> {
        self.rows.push(row);
        self.write()
    }

    /// Replaces every row and writes the file.
    pub fn replace(&mut self, rows: Vec<Row>) -> Result<()> {
        self.rows = rows;
        self.write()
    }

    fn write(&self) -> Result<()> {
        let tmp = self.path.with_extension("csv.tmp");
        let write = || -> Result<()> {
            let file = std::fs::File::create(&tmp)?;
            let mut writer = csv::Writer::from_writer(std::io::BufWriter::new(file));
            for row in &self.rows {
                writer.serialize(row)?;
            }
            let mut inner = writer.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
            inner.flush()?;
            inner.get_ref().sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            Ok(())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            e.context(format!("cannot write results to {}", self.path.display()))
        })
    }
}

/// Reads a results file, refusing another schema version and naming the line of a bad row.
pub fn read(path: &Path) -> Result<Vec<Row>> {
    let mut reader = csv::Reader::from_path(path)
        .with_context(|| format!("cannot open results file {}", path.display()))?;
    let mut rows = Vec::new();
    for result in reader.deserialize::<Row>() {
        let row = match result {
            Ok(row) => row,
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                bail!(
                    "{}: line {line}: not a valid shmbench results row: {e}",
                    path.display()
                );
            }
        };
        if row.schema != SCHEMA {
            bail!(
                "{}: schema {} but this shmbench reads schema {SCHEMA}; use the shmbench version that wrote it",
                path.display(),
                row.schema
            );
        }
        rows.push(row);
    }
    Ok(rows)
}
