//! The training loop's side of a batch: mapping what a worker sent, pinning, touching, releasing.
//!
//! A batch held in shared memory keeps its segment's tmpfs pages alive until it is dropped:
//! unmapping frees an unlinked segment (file_descriptor, memfd, disk), and a file_system segment
//! is unlinked by its last user, here the main on release.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{mpsc, Mutex, OnceLock};

use super::segment::{self, Mapping};
use model::knobs::Touch;

/// A batch the main holds.
pub enum Batch {
    /// Still in the worker's shared segment.
    Shared(SharedBatch),
    /// Copied into private memory by pin_memory; the segment is already released.
    Pinned(Vec<u8>),
}

pub struct SharedBatch {
    map: Mapping,
    name: Option<String>,
    /// torch keeps a received file_descriptor storage's fd open for the storage's life
    /// (which is why that strategy can run out of fds); file_system storages keep none.
    _fd: Option<OwnedFd>,
}

impl Drop for SharedBatch {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            segment::unlink_named(name);
        }
    }
}

impl Batch {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Batch::Shared(s) => s.map.as_slice(),
            Batch::Pinned(v) => v,
        }
    }
}

/// Maps the segment a worker sent: by fd, or by name for file_system.
pub fn map_received(
    fd: Option<OwnedFd>,
    name: Option<String>,
    bytes: u64,
) -> std::io::Result<SharedBatch> {
    let by_name = fd.is_none();
    let fd = match (fd, &name) {
        (Some(fd), _) => fd,
        (None, Some(n)) => segment::open_named(n)?,
        (None, None) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "batch message carried neither an fd nor a name",
            ))
        }
    };
    let map = match Mapping::new(fd.as_fd(), bytes, false) {
        Ok(map) => map,
        Err(e) => {
            if let Some(n) = &name {
                segment::unlink_named(n);
            }
            return Err(e.into());
        }
    };
    let kept = (!by_name).then_some(fd);
    Ok(SharedBatch {
        map,
        name,
        _fd: kept,
    })
}

/// Private buffers for pin_memory, reused so a long run does not churn the allocator.
#[derive(Default)]
pub struct PinnedPool {
    free: Vec<Vec<u8>>,
}

impl PinnedPool {
    /// A pool holding `count` buffers of `bytes`, their pages already touched: the steady state
    /// of torch's caching pinned-memory allocator, so pinning costs a copy, not page faults.
    pub fn warmed(count: u64, bytes: u64) -> PinnedPool {
        let free = (0..count).map(|_| vec![1u8; bytes as usize]).collect();
        PinnedPool { free }
    }

    /// Copies `shared` out and releases it at once.
    pub fn pin(&mut self, shared: SharedBatch) -> Batch {
        let src = shared.map.as_slice();
        let mut buf = self.free.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(src);
        drop(shared);
        Batch::Pinned(buf)
    }

    /// Drops a batch, keeping a pinned buffer for reuse.
    pub fn release(&mut self, batch: Batch) {
        if let Batch::Pinned(buf) = batch {
            self.free.push(buf);
        }
    }
}

/// Reads the batch as the training loop would; returns a checksum so the reads stay. The main's
/// training step runs on torch's intra-op threads (one per core by default; workers get one), so
/// a read of every byte is split over `threads`, as torch's `batch.sum()` is: that doubles the
/// main's share of 2 busy cores against 8 single-threaded workers, and so how fast it drains the
/// window they fill.
pub fn touch(batch: &Batch, mode: Touch, threads: usize) -> u64 {
    let bytes = batch.bytes();
    match mode {
        Touch::None => 0,
        Touch::First => bytes.first().copied().unwrap_or(0) as u64,
        Touch::All if threads > 1 && bytes.len() >= PARALLEL_MIN_BYTES => {
            intra_op_sum(bytes, threads)
        }
        Touch::All => sum_bytes(bytes),
    }
}

/// One part of a batch for a helper thread to sum: its address and length.
type Part = (usize, usize);

/// torch's intra-op pool: `threads - 1` helper threads started once and kept, as torch's are
/// (threads started for every step cost a step their start, and under `explain`'s tracer two
/// stops each).
struct IntraOp {
    parts: Vec<mpsc::Sender<Part>>,
    sums: mpsc::Receiver<u64>,
}

static INTRA_OP: OnceLock<Mutex<IntraOp>> = OnceLock::new();

/// The sum of `bytes` split over `threads`: this thread sums the first part, the pool the rest.
fn intra_op_sum(bytes: &[u8], threads: usize) -> u64 {
    let pool = INTRA_OP.get_or_init(|| {
        let (sum_tx, sums) = mpsc::channel();
        let parts = (1..threads)
            .map(|_| {
                let (tx, rx) = mpsc::channel::<Part>();
                let sum_tx = sum_tx.clone();
                std::thread::spawn(move || {
                    for (at, len) in rx {
                        // SAFETY: the caller waits for this sum before its batch can go.
                        let part = unsafe { std::slice::from_raw_parts(at as *const u8, len) };
                        if sum_tx.send(sum_bytes(part)).is_err() {
                            return;
                        }
                    }
                });
                tx
            })
            .collect();
        Mutex::new(IntraOp { parts, sums })
    });
    let pool = pool.lock().unwrap_or_else(|e| e.into_inner());
    let chunks: Vec<&[u8]> = bytes
        .chunks(bytes.len().div_ceil(pool.parts.len() + 1))
        .collect();
    let mut sent = 0;
    for (chunk, helper) in chunks[1..].iter().zip(&pool.parts) {
        if helper.send((chunk.as_ptr() as usize, chunk.len())).is_ok() {
            sent += 1;
        }
    }
    let mut total = sum_bytes(chunks[0]);
    // Every part sent is summed before this returns: the batch outlives every helper's read.
    for _ in 0..sent {
        total = total.wrapping_add(pool.sums.recv().unwrap_or(0));
    }
    total
}

/// Below this a batch is read on one thread: starting threads would cost more than the read
/// (torch's own parallel reductions have a grain of 32k elements).
const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// The intra-op threads the main reads a batch with: torch's default, one per core this process
/// may run on.
pub fn intra_op_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A wrapping sum of the bytes read as u64 words: every byte read at memory speed.
fn sum_bytes(bytes: &[u8]) -> u64 {
    // SAFETY: u64 has no invalid bit patterns; align_to only reinterprets.
    let (head, words, tail) = unsafe { bytes.align_to::<u64>() };
    let mut lanes = [0u64; 4];
    let chunks = words.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for (lane, w) in lanes.iter_mut().zip(c) {
            *lane = lane.wrapping_add(*w);
        }
    }
    let mut sum = lanes.iter().fold(0u64, |a, b| a.wrapping_add(*b));
    for w in rest {
        sum = sum.wrapping_add(*w);
    }
    for b in head.iter().chain(tail) {
        sum = sum.wrapping_add(*b as u64);
    }
    sum
}
