//! The model's peak for a whole job: every rank runs every loader at once, and one node's
//! /dev/shm holds them all (DDP's ranks share the node's tmpfs; a validation loader whose
//! workers start while the training loader's persistent workers still hold their prefetched
//! batches adds to them). Per loader the peak is `predict`'s; the job's is their sum times the
//! ranks. The file descriptors the file_descriptor strategy keeps are counted per rank (each rank
//! is a process with its own RLIMIT_NOFILE).

use serde::Serialize;

use super::consumers::{Consumer, ConsumerNeed};
use super::predict;
use model::config::CellConfig;
use model::job::LoaderSpec;
use model::knobs::Strategy;

/// One loader of the job, as predicted.
#[derive(Clone, Debug, Serialize)]
pub struct LoaderPeak {
    pub spec: LoaderSpec,
    pub batch_bytes: u64,
    pub peak_batches: u64,
    pub peak_bytes: u64,
}

/// The job's predicted peak.
#[derive(Clone, Debug, Serialize)]
pub struct JobPeak {
    pub ranks: u32,
    pub loaders: Vec<LoaderPeak>,
    /// One rank's loaders together, and the node's (every rank, and the consumers beside them).
    pub rank_bytes: u64,
    pub node_bytes: u64,
    /// What else fills the node's /dev/shm (`--with`): NCCL, Ray.
    pub consumers: Vec<ConsumerNeed>,
    /// File descriptors one rank's main holds at the peak (file_descriptor keeps one per batch
    /// alive; file_system none), with the few every process has.
    pub rank_fds: u64,
    /// Memory mappings one rank's main holds at the peak: one per batch alive under either
    /// strategy, beside its own.
    pub rank_maps: u64,
}

impl JobPeak {
    /// What the refills can add for a moment above the peak: one batch per loader and rank, where
    /// torch allocates a refilled slot's batch while the last step's is still being freed (see
    /// `predict`'s model). Pinned loaders hand batches over on arrival and add none.
    pub fn handover_bytes(&self, pin_memory: bool) -> u64 {
        let per_rank: u64 = match pin_memory {
            true => 0,
            false => self
                .loaders
                .iter()
                .filter(|l| l.peak_bytes > 0)
                .map(|l| l.batch_bytes)
                .sum(),
        };
        per_rank * self.ranks as u64
    }
}

/// `base` with one loader's shape (its other knobs: strategy, images, steps, are the job's).
pub fn loader_config(base: &CellConfig, spec: &LoaderSpec) -> CellConfig {
    let mut c = base.clone();
    c.cell = spec.name.clone();
    c.knobs.workers = spec.workers;
    c.knobs.prefetch = spec.prefetch;
    c.knobs.batch = spec.batch;
    if let Some(bytes) = spec.dataset_bytes {
        c.knobs.dataset_bytes = bytes;
    }
    c
}

/// The loaders of a job given as `specs`; none given: the one `base` describes.
pub fn loaders_of(base: &CellConfig, specs: &[LoaderSpec]) -> Vec<LoaderSpec> {
    if specs.is_empty() {
        vec![LoaderSpec {
            name: "loader".into(),
            workers: base.knobs.workers,
            prefetch: base.knobs.prefetch,
            batch: base.knobs.batch,
            dataset_bytes: None,
        }]
    } else {
        specs.to_vec()
    }
}

/// Mappings a torch main holds besides batches: 504 after `import torch`, about 530 once its
/// DataLoader's first batch is in (torch 2.15, Python 3.11; each batch held adds one, under
/// file_descriptor and file_system alike).
const BASE_MAPS: u64 = 530;

/// Descriptors a process holds besides batches: stdio, its sockets and pidfds to each worker, a
/// few libraries' own.
const BASE_FDS: u64 = 64;
const FDS_PER_WORKER: u64 = 4;

pub fn predict(base: &CellConfig, ranks: u32, specs: &[LoaderSpec], with: &[Consumer]) -> JobPeak {
    let loaders: Vec<LoaderPeak> = loaders_of(base, specs)
        .into_iter()
        .map(|spec| {
            let c = loader_config(base, &spec);
            let peak_batches = predict::peak_batches(&c);
            LoaderPeak {
                batch_bytes: c.batch_bytes(),
                peak_bytes: predict::peak_bytes(&c),
                peak_batches,
                spec,
            }
        })
        .collect();
    let rank_bytes: u64 = loaders.iter().map(|l| l.peak_bytes).sum();
    let held_fds: u64 = match base.knobs.strategy {
        Strategy::FileDescriptor => loaders.iter().map(|l| l.peak_batches).sum(),
        _ => 0,
    };
    let worker_fds: u64 = loaders
        .iter()
        .map(|l| l.spec.workers as u64 * FDS_PER_WORKER)
        .sum();
    let consumers: Vec<ConsumerNeed> = with.iter().map(Consumer::need).collect();
    JobPeak {
        ranks,
        rank_bytes,
        node_bytes: rank_bytes * ranks as u64 + consumers.iter().map(|c| c.bytes).sum::<u64>(),
        consumers,
        rank_fds: held_fds + worker_fds + BASE_FDS,
        rank_maps: loaders.iter().map(|l| l.peak_batches).sum::<u64>() + BASE_MAPS,
        loaders,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{Identity, Platform, Resolve};
    use model::knobs::Knobs;

    #[test]
    fn a_job_is_its_loaders_summed_times_its_ranks() {
        let base = Knobs::default()
            .resolve(Identity::default(), &Platform::fixed(1 << 40, false))
            .unwrap();
        let specs: Vec<LoaderSpec> = vec![
            "train:8x2x128".parse().unwrap(),
            "val:4x2x256".parse().unwrap(),
        ];
        let job = predict(&base, 4, &specs, &[]);
        let image = 3 * 224 * 224 * 4u64;
        // train: 8 x 2 outstanding + 1 held = 17 batches of 128; val: 4 x 2 + 1 = 9 of 256.
        assert_eq!(job.loaders[0].peak_batches, 17);
        assert_eq!(job.loaders[1].peak_batches, 9);
        let rank = 17 * 128 * image + 9 * 256 * image;
        assert_eq!(job.rank_bytes, rank);
        assert_eq!(job.node_bytes, 4 * rank);
        assert_eq!(job.rank_fds, 17 + 9 + (8 + 4) * 4 + 64);
        // One mapping per batch alive, under either strategy, beside torch's own.
        assert_eq!(job.rank_maps, 17 + 9 + BASE_MAPS);
        // NCCL beside them adds its buffers to the node, not to a rank.
        let with = predict(&base, 4, &specs, &["nccl:4:2".parse().unwrap()]);
        assert_eq!(with.rank_bytes, rank);
        assert_eq!(with.node_bytes, 4 * rank + 4 * (2 * 9_637_888 + 10_486_112));
        // A refill's batch can be allocated while the last step's is freed: one per loader and rank.
        assert_eq!(job.handover_bytes(false), 4 * (128 + 256) * image);
        assert_eq!(job.handover_bytes(true), 0);
        // Each loader's own Dataset (forkserver pickles it to that loader's workers, once):
        // counted once per loader, not the job's total once per loader.
        let mut forkserver = base.clone();
        forkserver.knobs.start_method = model::knobs::StartMethod::Forkserver;
        let own: Vec<LoaderSpec> = vec![
            "train:8x2x128+64m".parse().unwrap(),
            "val:4x2x256+16m".parse().unwrap(),
        ];
        let held = predict(&forkserver, 1, &own, &[]);
        assert_eq!(held.rank_bytes, rank + (64 << 20) + (16 << 20));
        // No loaders given: the knobs' one.
        assert_eq!(
            predict(&base, 1, &[], &[]).loaders[0].spec.workers,
            base.knobs.workers
        );
    }
}
