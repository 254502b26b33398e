//! /dev/shm as the cell sees it: capacity, use above the starting level, and the peak of that use
//! sampled by a background thread every millisecond (plus at every step by the main loop).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sys::shm::usage;

pub struct ShmMeter {
    baseline: u64,
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<()>>,
    pub capacity: u64,
}

impl ShmMeter {
    pub fn start() -> ShmMeter {
        let (capacity, baseline) = usage();
        let peak = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, stop) = (peak.clone(), stop.clone());
            std::thread::Builder::new()
                .name("shm-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let used = usage().1.saturating_sub(baseline);
                        peak.fetch_max(used, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
                .ok()
        };
        ShmMeter {
            baseline,
            peak,
            stop,
            sampler,
            capacity,
        }
    }

    /// Bytes in use above the level at start, now; also folded into the peak.
    pub fn used_now(&self) -> u64 {
        let used = usage().1.saturating_sub(self.baseline);
        self.peak.fetch_max(used, Ordering::Relaxed);
        used
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for ShmMeter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.sampler.take() {
            let _ = handle.join();
        }
    }
}
