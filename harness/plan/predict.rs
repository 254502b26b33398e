//! What the torch facts predict for a loader under a /dev/shm of a given size: how many batches
//! fit, how many the loader keeps alive, and the step at which it must crash.
//!
//! The model is the one the loader emulates. At most `workers * prefetch` batches are
//! outstanding; the step being trained holds one more; with `retain-every N`, every Nth batch
//! stays alive for good. When step `s` begins, the loader refills one index, whose batch is
//! allocated while these are alive: the `floor((s-1)/N)` retained batches, step `s`'s batch, the
//! `workers * prefetch - 1` other outstanding ones, and itself. It assumes the consumer is the
//! slower side (outstanding batches are finished and waiting, as with real training); with a
//! consumer faster than the workers fewer batches are in /dev/shm at once and a crash comes later
//! or not at all. pin_memory releases batches on arrival, so the model does not apply to it.
//! Real torch refills inside `__next__`, while the loop variable still holds the last step's
//! batch, and freeing a batch's tmpfs pages takes milliseconds: with a quick Dataset the refill's
//! batch can be allocated before the old one is gone, so a sampled peak can lie up to one batch
//! above the model's (a `watch` of real torch 2.15 on a busy CI machine saw 5.5 batches where the
//! model says 5). The doctor's margin covers it when the peak is four batches or more.
//!
//! The profile decides which step sees the failure. legacy: the allocating worker dies by SIGBUS
//! and the loop fails at once, at step `s`. modern: the worker reports ENOSPC as that batch's
//! result, raised when the loop reaches that batch: the failed index `s-1+outstanding`, i.e. step
//! `s+outstanding`. When the first round of prefetch cannot fit, modern fails at step
//! `capacity+1` at the latest (which concurrent allocation loses the race varies).
//!
//! Under forkserver and spawn the Dataset's tensors (`dataset-bytes`) move into /dev/shm as the
//! first worker starts and stay there (measured with torch 2.15: once per loader, not per worker
//! or per epoch, held until the Dataset is freed): they take their pages before any batch, and
//! when they cannot fit the loader fails at start-up, step 1, whatever the profile.

use model::config::CellConfig;
use model::knobs::{Strategy, TorchProfile};

pub const PAGE: u64 = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// Whole batches that fit in the tmpfs.
    pub capacity_batches: u64,
    /// Batches alive at the peak without retention: outstanding plus the held one.
    pub peak_batches: u64,
    /// The 1-based step at which an allocation cannot fit (None: never within the run, or the
    /// strategy does not use /dev/shm).
    pub crash_step: Option<u64>,
}

fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE)
}

/// Predicts `config` under a /dev/shm of `shm_bytes`.
pub fn predict(config: &CellConfig, shm_bytes: u64) -> Prediction {
    let uses_shm = uses_shm(config);
    let dataset_pages = pages(dataset_bytes(config));
    let capacity =
        pages(shm_bytes).saturating_sub(dataset_pages) / pages(config.batch_bytes()).max(1);
    let outstanding = config.max_outstanding();
    let peak = outstanding + 1;
    let total = config.total_steps();
    let modern = config.knobs.torch == TorchProfile::Modern;
    // The step at which the refill of step `s` (allocating index s-1+outstanding) is seen to fail.
    let seen_at = |s: u64| if modern { s + outstanding } else { s };
    let crash_step = if dataset_pages > pages(shm_bytes) {
        Some(1)
    } else if !uses_shm || config.knobs.pin_memory {
        None
    } else if outstanding.min(total) > capacity {
        // The first round of prefetch cannot all fit.
        Some(if modern { capacity + 1 } else { 1 })
    } else {
        // First s with floor((s-1)/N) + outstanding + 1 > capacity (no retention: s = 1 or never).
        let headroom = capacity.saturating_sub(outstanding);
        let first = match config.knobs.retain_every {
            0 if peak > capacity => Some(1),
            0 => None,
            n => Some(n.saturating_mul(headroom).saturating_add(1)),
        };
        // The index allocated at step s must be part of the run.
        first.filter(|s| s - 1 + outstanding < total).map(seen_at)
    };
    Prediction {
        capacity_batches: capacity,
        peak_batches: peak,
        crash_step,
    }
}

/// Batches in /dev/shm at the run's peak, under the same model (slow consumer): outstanding plus
/// held plus what retention has kept by then. Strategies outside /dev/shm need none.
///
/// With pin_memory the held batch and every pinned one are in private memory. How many
/// outstanding batches wait in /dev/shm depends on whether the pin copy keeps up with the workers:
/// one per worker when it does, all `workers * prefetch` when it falls behind (it competes with
/// the workers for CPU). The upper bound is returned; on the 2-core development machine the
/// measured minimum lay between the two (see `pin_memory_lower_bound`).
pub fn peak_batches(config: &CellConfig) -> u64 {
    let uses_shm = uses_shm(config);
    let total = config.total_steps();
    let outstanding = config.max_outstanding().min(total);
    if !uses_shm {
        return 0;
    }
    if config.knobs.pin_memory {
        return outstanding;
    }
    let retained = |s: u64| match config.knobs.retain_every {
        0 => 0,
        n => (s - 1) / n,
    };
    // Alive when step s's refill allocates: retained + held + outstanding (incl. the new one);
    // refills stop once the run's last index is out.
    let alive = |s: u64| {
        retained(s)
            + 1
            + outstanding
                .min(total - s + 1)
                .saturating_sub(if s - 1 + outstanding < total { 0 } else { 1 })
    };
    let candidates = [1, total.saturating_sub(outstanding).max(1), total];
    candidates
        .iter()
        .map(|&s| alive(s))
        .max()
        .unwrap_or(0)
        .max(outstanding)
}

/// With pin_memory, the batches in /dev/shm when the pin copy keeps up: one per worker.
pub fn pin_memory_lower_bound(config: &CellConfig) -> u64 {
    (config.knobs.workers as u64).min(config.max_outstanding().min(config.total_steps()))
}

/// Whether the cell's strategy puts its segments in /dev/shm (torch's two do).
fn uses_shm(config: &CellConfig) -> bool {
    matches!(
        config.knobs.strategy,
        Strategy::FileDescriptor | Strategy::FileSystem
    )
}

/// Bytes of tmpfs the Dataset's tensors hold from the first worker's start (whole pages).
pub fn dataset_bytes(config: &CellConfig) -> u64 {
    match uses_shm(config) {
        true => pages(config.dataset_shm_bytes()) * PAGE,
        false => 0,
    }
}

/// Bytes of tmpfs at the run's peak: its batches and the Dataset's tensors.
pub fn peak_bytes(config: &CellConfig) -> u64 {
    batches_bytes(config, peak_batches(config)) + dataset_bytes(config)
}

/// Bytes of tmpfs the loader holds when training stalls in a long run (a checkpoint, an
/// evaluation): every outstanding batch made and waiting, the two the loop holds as the stall
/// ends (`for batch in loader` keeps the last batch until the next one is returned, and the
/// index sent for the refill may be made meanwhile; unless pinned: pinned batches live in
/// private memory), and the Dataset's tensors. Unlike [`peak_bytes`], the run's own length
/// does not cap it: a short trial is not the job. Measured: with one held, a one-worker
/// prefetch-1 loader (two batches) got a SIGBUS in three batches' room on a busy machine, and
/// real torch's two workers at prefetch 2 ran out of 16 MiB (5.3 of its 3 MiB batches).
pub fn stalled_bytes(config: &CellConfig) -> u64 {
    if !uses_shm(config) {
        return 0;
    }
    let held = 2 * u64::from(!config.knobs.pin_memory);
    batches_bytes(config, config.max_outstanding() + held) + dataset_bytes(config)
}

/// Memory the loader holds at least when training stalls: its /dev/shm ([`stalled_bytes`]:
/// tmpfs pages are charged to the memory cgroup of the process that wrote them) and, with
/// pin_memory, the batches in private memory: every outstanding batch pinned, the two the loop
/// holds and the one being copied (in both places while it is). The processes' own memory
/// (the interpreter, torch, the Dataset's copies) comes on top; a memfd strategy's batches are
/// memory too, a disk strategy's page cache is not counted (it can be written back).
pub fn stalled_memory_bytes(config: &CellConfig) -> u64 {
    let pinned = match (config.knobs.pin_memory, config.knobs.strategy) {
        (_, Strategy::Disk) => 0,
        (true, _) => batches_bytes(config, config.max_outstanding() + 3),
        (false, Strategy::Memfd) => batches_bytes(config, config.max_outstanding() + 2),
        (false, _) => 0,
    };
    stalled_bytes(config) + pinned
}

/// Bytes of tmpfs that `batches` batches occupy (whole pages).
pub fn batches_bytes(config: &CellConfig, batches: u64) -> u64 {
    batches * pages(config.batch_bytes()) * PAGE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::{Identity, Platform, Resolve};
    use model::knobs::{Knobs, StartMethod};
    use model::size::ByteSize;

    fn small(retain: u64, steps: u64) -> CellConfig {
        Knobs {
            workers: Some(2),
            prefetch: Some(2),
            batch: Some(8),
            retain_every: Some(retain),
            steps: Some(steps),
            ..Knobs::default()
        }
        .resolve(Identity::default(), &Platform::fixed(1 << 34, false))
        .unwrap()
    }

    #[test]
    fn retention_crash_step_follows_from_sizes() {
        // 64 MiB = 16384 pages; a batch of 8 images is 1176 pages: 13 fit. 4 outstanding + 1
        // held leave room for 8 retained batches; the 9th is retained after step 18.
        let p = predict(&small(2, 100), 64 << 20);
        assert_eq!(p.capacity_batches, 13);
        assert_eq!(p.crash_step, Some(19));
        assert_eq!(predict(&small(2, 10), 64 << 20).crash_step, None);
        assert_eq!(predict(&small(0, 100), 64 << 20).crash_step, None);
        let mut modern = small(2, 100);
        modern.knobs.torch = TorchProfile::Modern;
        assert_eq!(predict(&modern, 64 << 20).crash_step, Some(23));
    }

    #[test]
    fn a_pickled_dataset_takes_its_pages_before_the_batches() {
        let mut c = small(2, 100);
        c.knobs.dataset_bytes = 16 << 20;
        // fork: the workers inherit it; nothing changes.
        assert_eq!(dataset_bytes(&c), 0);
        assert_eq!(predict(&c, 64 << 20).crash_step, Some(19));
        // forkserver: 4096 of 16384 pages go first and 10 batches fit: 4 outstanding + 1 held
        // leave room for 5 retained; the 6th is retained after step 12.
        c.knobs.start_method = StartMethod::Forkserver;
        assert_eq!(dataset_bytes(&c), 16 << 20);
        assert_eq!(
            peak_bytes(&c),
            batches_bytes(&c, peak_batches(&c)) + (16 << 20)
        );
        let p = predict(&c, 64 << 20);
        assert_eq!(p.capacity_batches, 10);
        assert_eq!(p.crash_step, Some(13));
        // Larger than the tmpfs: start-up, whatever the profile.
        c.knobs.dataset_bytes = 65 << 20;
        assert_eq!(predict(&c, 64 << 20).crash_step, Some(1));
        // A loader without workers starts none to pickle it to.
        c.knobs.workers = 0;
        assert_eq!(dataset_bytes(&c), 0);
    }

    #[test]
    fn peaks() {
        assert_eq!(peak_batches(&small(0, 100)), 5);
        let mut pinned = small(0, 100);
        pinned.knobs.pin_memory = true;
        assert_eq!(peak_batches(&pinned), 4);
        assert_eq!(pin_memory_lower_bound(&pinned), 2);
        // Retention: by step 96 (the last refill) 47 batches are kept, plus 4 + 1 in flight.
        assert_eq!(peak_batches(&small(2, 100)), 52);
        let mut disk = small(0, 100);
        disk.knobs.strategy = Strategy::Disk;
        assert_eq!(peak_batches(&disk), 0);
    }

    #[test]
    fn seed_setup() {
        let seed = Knobs::default()
            .resolve(Identity::default(), &Platform::fixed(1 << 35, false))
            .unwrap();
        assert_eq!(predict(&seed, 64 << 20).crash_step, Some(1));
        assert_eq!(
            predict(&seed, ByteSize::parse("2g").unwrap().bytes()).crash_step,
            None
        );
        assert_eq!(predict(&seed, 2 << 30).capacity_batches, 27);
        assert_eq!(predict(&seed, 2 << 30).peak_batches, 17);
    }
}
