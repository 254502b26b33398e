//! The Dataset's tensors under forkserver and spawn: the DataLoader pickles its Dataset to each
//! worker it starts, and torch's reductions move a tensor's storage into shared memory to pickle
//! it (`share_memory_` by the sharing strategy), in the main, as the first worker starts. The
//! storage stays there, now the main's own, while the Dataset lives; later workers, and workers
//! re-created at each epoch (`persistent_workers = false`), are sent the same segment.
//!
//! The emulation makes that segment once, before its first worker, by the cell's strategy and
//! allocation profile, and copies the tensors in: under the modern profile a full /dev/shm is
//! torch's ENOSPC RuntimeError, raised in the main; under the legacy one the copy itself meets
//! the full tmpfs and the process copying is killed by SIGBUS. A forked child does the copy, so
//! that signal is real and the cell still prints its record.

use super::ending::Stop;
use super::segment::{self, NewSegment};
use model::config::CellConfig;
use model::record::Status;
use sys::owner::Token;
use sys::process::{self, Exit};

/// The worker number in the name of the Dataset's segment (workers count from 0).
const DATASET_SEGMENT: u32 = 99_999;

/// The Dataset's tensors in shared memory, held while the loader lives.
pub(super) struct SharedDataset {
    _segment: NewSegment,
}

/// Moves the Dataset's tensors into shared memory, as starting the first worker does; None
/// when the cell's workers inherit them (fork) or it holds none.
pub(super) fn share(config: &CellConfig, token: &Token) -> Result<Option<SharedDataset>, Stop> {
    let bytes = config.dataset_shm_bytes();
    if bytes == 0 {
        return Ok(None);
    }
    let name = segment::segment_name(token, DATASET_SEGMENT, 0);
    let k = &config.knobs;
    let mut seg = segment::create(k.strategy, k.torch, bytes, &name).map_err(|e| {
        Stop::new(
            e.kind.status(),
            format!(
                "RuntimeError: {} (sharing the Dataset's {bytes} bytes of tensors to start a {} worker)",
                e.message, k.start_method
            ),
        )
    })?;
    match process::fill_in_child(seg.map.as_mut_slice(), 0x5e) {
        Ok(Exit::Code(0)) => Ok(Some(SharedDataset { _segment: seg })),
        Ok(Exit::Signal(sig)) if sig == libc::SIGBUS => Err(Stop {
            status: Status::Sigbus,
            message: format!(
                "the main process was killed by signal: Bus error while it copied the Dataset's {bytes} bytes of tensors into shared memory to start a {} worker (torch <= 2.9 sizes the segment without reserving it; /dev/shm is full)",
                k.start_method
            ),
            signal: Some(sig),
            pid: Some(std::process::id()),
        }),
        Ok(exit) => Err(Stop::new(
            Status::Error,
            format!("harness error: copying the Dataset into shared memory ended with {exit:?}"),
        )),
        Err(e) => Err(Stop::new(
            Status::Error,
            format!("harness error: cannot copy the Dataset into shared memory: {e}"),
        )),
    }
}
