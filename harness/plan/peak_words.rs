//! A loader's /dev/shm peak in words: what makes it up (batches outstanding, held and retained,
//! the Dataset's tensors under forkserver and spawn), a job's loaders times its ranks, and what
//! a change of start method (Python 3.14's forkserver default) would add.

use super::job::{self, JobPeak};
use super::predict;
use model::config::CellConfig;
use model::knobs::{StartMethod, Strategy};
use model::size::ByteSize;

/// One loader's peak, in words: what makes it up.
pub(super) fn loader_reason(config: &CellConfig, peak_batches: u64) -> String {
    let uses_shm = matches!(
        config.knobs.strategy,
        Strategy::FileDescriptor | Strategy::FileSystem
    );
    let peak_reason = if !uses_shm {
        format!("{} segments are not in /dev/shm", config.knobs.strategy)
    } else if config.knobs.pin_memory {
        format!(
            "pin_memory copies each batch out on arrival: {} (one per worker, when the pin copy keeps up) to {peak_batches} (all outstanding, when it falls behind); sized for the upper bound",
            predict::pin_memory_lower_bound(config)
        )
    } else {
        let outstanding = config.max_outstanding().min(config.total_steps());
        let retained = peak_batches.saturating_sub(outstanding + 1);
        let mut text = format!(
            "{} workers x prefetch {} = {outstanding} outstanding + 1 held by the training step",
            config.knobs.workers, config.knobs.prefetch
        );
        if outstanding < config.max_outstanding() {
            text.push_str(&format!(
                " (the run has only {} steps)",
                config.total_steps()
            ));
        }
        if retained > 0 {
            text.push_str(&format!(
                " + {retained} kept alive by retaining every {}th batch",
                config.knobs.retain_every
            ));
        }
        text
    };
    match predict::dataset_bytes(config) {
        0 => peak_reason,
        held => format!(
            "{peak_reason}, + {} of the Dataset's tensors, in /dev/shm from the first {} worker's start (fork workers would inherit them)",
            ByteSize(held),
            config.knobs.start_method
        ),
    }
}

/// The job's peak, in words: each loader's, times the ranks.
pub(super) fn job_reason(config: &CellConfig, job: &JobPeak) -> String {
    let parts: Vec<String> = job
        .loaders
        .iter()
        .map(|l| {
            format!(
                "{}: {} = {} batches of {} = {}",
                l.spec.name,
                loader_reason(&job::loader_config(config, &l.spec), l.peak_batches),
                l.peak_batches,
                ByteSize(l.batch_bytes),
                ByteSize(l.peak_bytes)
            )
        })
        .collect();
    let beside: Vec<String> = job
        .consumers
        .iter()
        .map(|c| {
            let kind = if c.measured {
                "measured with"
            } else {
                "a prediction from"
            };
            format!(
                " + {}: {} ({}; {kind} {})",
                c.name,
                ByteSize(c.bytes),
                c.basis,
                c.source
            )
        })
        .collect();
    format!(
        "{} rank(s) x ({}){} = {}; every rank's loaders at once on one node's /dev/shm",
        job.ranks,
        parts.join("; "),
        beside.concat(),
        ByteSize(job.node_bytes)
    )
}

/// For a loader whose workers inherit a Dataset holding tensors (fork): what forkserver (Python
/// 3.14's default on Linux) or spawn would add to its peak.
pub(super) fn start_method_note(config: &CellConfig) -> Option<String> {
    if config.knobs.start_method != StartMethod::Fork || config.knobs.dataset_bytes == 0 {
        return None;
    }
    let mut pickled = config.clone();
    pickled.knobs.start_method = StartMethod::Forkserver;
    let held = predict::dataset_bytes(&pickled);
    (held > 0).then(|| {
        format!(
            "on Python 3.14 (forkserver is the default start method on Linux) or with multiprocessing_context='forkserver' or 'spawn', the Dataset's {} of tensors move into /dev/shm as the first worker starts: the peak becomes {}. Size for that, or keep fork: DataLoader(..., multiprocessing_context='fork').",
            ByteSize(held),
            ByteSize(predict::peak_bytes(&pickled))
        )
    })
}
