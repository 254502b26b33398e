//! The main loop's state, split by concern: its settings, where it is in the epoch and which
//! batches are in flight (`Schedule`), what it owns and must tear down (`Owned`), and what the
//! record reports (`Measured`). `main_loop` holds what the loop does with it.

use std::collections::BTreeMap;
use std::time::Instant;

use super::consumer::{Batch, PinnedPool};
use super::dataset::SharedDataset;
use super::ending::Stop;
use super::pool::Pool;
use super::shm_meter::ShmMeter;
use model::config::CellConfig;
use model::record::StepSample;
use sys::owner::OwnerRecord;

pub(super) struct Loop<'a> {
    pub(super) config: &'a CellConfig,
    pub(super) start: Instant,
    /// How many threads read a batch (torch's intra-op threads).
    pub(super) touch_threads: usize,
    pub(super) progress: bool,
    /// Which index goes next, and the batches between the workers and the step.
    pub(super) schedule: Schedule,
    /// What the loop owns and tears down: the workers, the shared Dataset, the owner record.
    pub(super) owned: Owned,
    /// What the record reports.
    pub(super) measured: Measured,
}

/// The loop's place in the epoch and the batches in flight (torch's `_send_idx`, `_rcvd_idx`,
/// `_task_info`).
pub(super) struct Schedule {
    /// Results that arrived before their turn: a batch, or the error its worker raised.
    pub(super) reorder: BTreeMap<u64, Result<Batch, Stop>>,
    pub(super) held: Option<(u64, Batch)>,
    pub(super) retained: Vec<Batch>,
    pub(super) outstanding: u64,
    /// Indices put but not yet handed to their workers: (worker, index). See `send_queued`.
    pub(super) queued: Vec<(u32, u64)>,
    pub(super) next_idx: u64,
    pub(super) epoch_end_idx: u64,
    pub(super) steps_done: u64,
}

/// What the loop owns, torn down in `tear_down`'s order.
pub(super) struct Owned {
    pub(super) pool: Option<Pool>,
    /// The Dataset's tensors in shared memory, from the first worker's start (forkserver and
    /// spawn) until the loader ends.
    pub(super) dataset: Option<SharedDataset>,
    /// The owner record of this loader's segments, made with the first pool (dropped last: it
    /// removes what it proves once nothing holds it).
    pub(super) owner: Option<OwnerRecord>,
    pub(super) pinned: PinnedPool,
    pub(super) meter: ShmMeter,
    /// The cause the `inject` knob makes happen, made ready with the first pool.
    pub(super) inject: Option<super::inject::Main>,
}

/// What each step saw and the resources the loader used, for the record.
pub(super) struct Measured {
    pub(super) obtained_s: Vec<f64>,
    pub(super) compute_s: Vec<f64>,
    pub(super) series: Vec<StepSample>,
    pub(super) oom_kills_at_start: Option<u64>,
    pub(super) checksum: u64,
    pub(super) main_private_rss: u64,
    pub(super) worker_private_rss: u64,
    pub(super) peak_fds: Option<u64>,
}
