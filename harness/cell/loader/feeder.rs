//! torch's index-queue feeder, as a thread of the emulated main.
//!
//! torch's `_try_put_index` only appends an index to a worker's `multiprocessing.Queue`; the
//! queue's feeder thread pickles and sends it once it holds the GIL. The main thread gives the
//! GIL up right after the put (leaving `next()`, whose profiler scope is a torch op that drops
//! it), sleeps until the feeder has sent, and must then be scheduled again before its loop
//! rebinds the batch variable and frees the previous batch. On a busy machine that wake-up can
//! come after the woken worker has built its samples and allocated the next segment: torch's
//! peak is then `workers x prefetch + 2` batches, not `+ 1`. Which happens is the kernel
//! scheduler's call, so the emulation makes the same handoff instead of fixing an order: the
//! main hands the indices to this thread and sleeps until they are sent, then frees its batch.
//!
//! Measured on the development machine (2 cores, Linux 6.18): torch 2.15 allocated 1-4 of 30
//! batches of a 4-worker batch-32 loader while the batch before was still alive, and its cells
//! peaked at 10.0 batches in 6 of 6 runs (18.0 for the seed loader in most), where an emulation
//! that sent after the release peaked at 9.0 every time; in an earlier session, on another
//! kernel, torch's seed loader peaked at 17.0 in all three 1400m runs.
//!
//! Each of torch's index queues starts its own feeder thread at its first put, so the first
//! round of indices reaches the workers one after another, not at once: worker i begins its
//! first batch about i x 3.5 ms after worker 0 (torch 2.15 and 2.9.1 here: 8.5-12.4 ms from
//! worker 0 to worker 3, 19-34 ms to worker 7). That order decides which allocations of a
//! first round too big for /dev/shm fail, and so the step a modern loader raises at: torch's
//! 4 workers of batch 32 in 64m raised at step 3 in 6 of 6 runs, an emulation that reached all
//! workers at once at step 1 in 2 of 3. The feeder spaces each worker's first send the same way.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::wire::{self, ToWorker};

/// Indices to send: (worker, index).
type Tasks = Vec<(u32, u64)>;

/// How much later each worker's queue sends its first index than the queue before it (torch's
/// per-queue feeder threads starting in turn; see the module notes).
pub const QUEUE_START_GAP: Duration = Duration::from_micros(3500);

pub struct Feeder {
    tasks: Option<SyncSender<Tasks>>,
    sent: Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Feeder {
    /// Starts the thread over the workers' task sockets (the main's ends, duplicated).
    pub fn start(sockets: Vec<OwnedFd>) -> std::io::Result<Feeder> {
        let (tasks, inbox) = sync_channel::<Tasks>(1);
        let (done, sent) = sync_channel::<()>(1);
        let thread = std::thread::Builder::new()
            .name("index-feeder".into())
            .spawn(move || {
                let mut started = vec![false; sockets.len()];
                let mut first_send: Option<Instant> = None;
                let mut queues_started = 0u32;
                for batch in inbox {
                    for (worker, idx) in batch {
                        if !started[worker as usize] {
                            let first = *first_send.get_or_insert_with(Instant::now);
                            let due = first + QUEUE_START_GAP * queues_started;
                            std::thread::sleep(due.saturating_duration_since(Instant::now()));
                            started[worker as usize] = true;
                            queues_started += 1;
                        }
                        // A dead worker's send error is ignored: its death arrives as an event.
                        let sock = sockets[worker as usize].as_fd();
                        let _ = wire::send(sock, &ToWorker::Task { idx }, None);
                    }
                    if done.send(()).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Feeder {
            tasks: Some(tasks),
            sent,
            thread: Some(thread),
        })
    }

    /// Hands `batch` to the feeder and sleeps until every index in it is sent.
    pub fn send(&self, batch: Tasks) {
        if batch.is_empty() {
            return;
        }
        let handed = self.tasks.as_ref().is_some_and(|t| t.send(batch).is_ok());
        if handed {
            let _ = self.sent.recv();
        }
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which closes its duplicated sockets.
        self.tasks.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
