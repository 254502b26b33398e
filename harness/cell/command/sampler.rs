//! The watched job's sampler: every interval, /dev/shm in use (one fstatvfs) and, when the job
//! has a memory limit, its cgroup's use (one pread: an unlimited cgroup's use is the machine's,
//! and costly to read); when a new peak rises above the last one attributed by more
//! than [`RISE`], who holds it (a walk of the job's processes in /proc). The cheap part runs at
//! the interval and the walk only while the peak rises, so a job at its working level costs the
//! cheap part alone (`benches/watch_sampler.rs` measures both).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use model::watch::{Hold, Holder, Segment, ShmSample};
use sys::holders::FileId;
use sys::{cgroup, proc_tree, shm};

/// How far a new peak must rise above the last attributed one to be attributed again: a page
/// or two of noise does not cost a walk of every process's fds and maps. A peak that settles
/// less than this above the last walk is walked once more when it settles (two samples alike),
/// so the holders at the peak are the peak's, not those of a write still under way.
const RISE: u64 = 256 << 10;

/// A census of the tree (process and fd counts) at least this often.
const CENSUS_EVERY: Duration = Duration::from_millis(250);

/// Samples kept at most; beyond it neighbours are merged (keeping the larger /dev/shm use), so a
/// day-long job's record stays small and its peaks stay in it.
const MAX_SAMPLES: usize = 8192;

/// What the sampler and the cell share while the job runs.
#[derive(Default)]
pub struct Shared {
    pub step: AtomicU64,
    pub stop: AtomicBool,
}

/// What the sampler saw.
#[derive(Default)]
pub struct Sampled {
    pub samples: Vec<ShmSample>,
    pub peak_bytes: u64,
    pub peak_t_s: f64,
    pub holders: Vec<Holder>,
    pub holders_t_s: f64,
    /// /dev/shm in use (above the base) when `holders` were walked, and the shared memory the
    /// memory cgroup was charged then (when the job has a limit).
    pub holders_shm_bytes: u64,
    pub holders_walk_s: f64,
    pub holders_cgroup_shmem: Option<u64>,
    /// Every file (device, inode) a process of the job was seen holding.
    pub seen: std::collections::BTreeSet<FileId>,
    pub max_processes: u32,
    pub max_fds: u64,
    pub cpu_s: f64,
    pub count: u64,
    /// /dev/shm in use when the sampler started (the level samples are measured above).
    pub base_bytes: u64,
}

/// Thread CPU time of the caller, seconds.
fn thread_cpu_s() -> f64 {
    use nix::time::{clock_gettime, ClockId};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map_or(0.0, |t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
}

/// The processes below `root` (the cell itself: the job and the orphans it adopted), each with
/// the shared memory it holds, and the identities of the files they hold.
pub fn attribute(root: u32) -> (Vec<Holder>, Vec<FileId>) {
    let views: Vec<_> = proc_tree::descendants(root)
        .into_iter()
        .filter_map(proc_tree::view)
        .collect();
    let ids = views
        .iter()
        .flat_map(|v| v.held.iter().map(|h| h.id))
        .collect();
    let holders = views
        .into_iter()
        .map(|v| Holder {
            pid: v.pid,
            command: v.command,
            fds: v.fds,
            fd_limit: v.fd_limit,
            segments: v
                .held
                .into_iter()
                .map(|h| Segment {
                    name: h.name,
                    bytes: h.bytes,
                    deleted: h.deleted,
                    hold: if h.by_fd { Hold::Fd } else { Hold::Map },
                })
                .collect(),
        })
        .collect();
    (holders, ids)
}

impl Sampled {
    fn push(&mut self, sample: ShmSample, stride: &mut usize, pending: &mut Option<ShmSample>) {
        // Within a stride, keep the sample with the most /dev/shm in use.
        let keep = match pending.take() {
            Some(p) if p.shm_used_bytes >= sample.shm_used_bytes => p,
            _ => sample,
        };
        self.count += 1;
        if !self.count.is_multiple_of(*stride as u64) {
            *pending = Some(keep);
            return;
        }
        self.samples.push(keep);
        if self.samples.len() >= MAX_SAMPLES {
            let merged = self
                .samples
                .chunks(2)
                .filter_map(|pair| pair.iter().max_by_key(|s| s.shm_used_bytes).cloned())
                .collect();
            self.samples = merged;
            *stride *= 2;
        }
    }
}

/// Samples until `shared.stop`, one last time after it. `base_bytes` is /dev/shm's use before
/// the job started, taken by the caller: on a loaded machine this thread may first run after the
/// job has already written, and a base taken here would hide that.
pub fn run(root: u32, interval: Duration, shared: Arc<Shared>, base_bytes: u64) -> Sampled {
    let cpu_at_start = thread_cpu_s();
    let start = Instant::now();
    let shm_dir = shm::OpenShm::open();
    let used_now = || {
        shm_dir
            .as_ref()
            .map_or_else(shm::usage, shm::OpenShm::usage)
            .1
    };
    let cgroup_use = cgroup::memory_limit().and_then(|_| cgroup::UsageFile::open());
    let mut out = Sampled {
        base_bytes,
        ..Sampled::default()
    };
    let (mut stride, mut pending) = (1usize, None);
    let mut attributed: Option<u64> = None;
    let mut last_used = 0u64;
    let mut census_at: Option<Instant> = None;
    // What the job's use is counted from. On a /dev/shm other jobs share (the host runtime),
    // what they free is not this job's: the floor follows the machine's use down, so the job's
    // own rises still show, and are attributed. A fall may hide a rise of the job's within
    // the same interval, so a fall of more than RISE is attributed too. Counted from the base
    // alone, a neighbour's 20 MiB freed while a job leaked 4 MiB an epoch hid the job's first 5
    // of 14 segments from the attribution, and `--sweep` could not prove them the job's.
    let mut floor = out.base_bytes;
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        let tick = Instant::now();
        let raw = used_now();
        let mut fell_below = false;
        if raw < floor {
            let fell = floor - raw;
            floor = raw;
            attributed = attributed.map(|bytes| bytes.saturating_sub(fell));
            fell_below = fell > RISE;
        }
        let used = raw - floor;
        let t_s = start.elapsed().as_secs_f64();
        if used > out.peak_bytes {
            out.peak_bytes = used;
            out.peak_t_s = t_s;
        }
        let settled_above =
            |bytes: u64| used > bytes && used == last_used && used >= out.peak_bytes;
        let rose =
            used > 0 && attributed.is_none_or(|bytes| used > bytes + RISE || settled_above(bytes));
        last_used = used;
        if rose {
            let walk = Instant::now();
            let (holders, ids) = attribute(root);
            out.holders_walk_s = walk.elapsed().as_secs_f64();
            out.holders = holders;
            out.seen.extend(ids);
            out.holders_t_s = t_s;
            out.holders_shm_bytes = used;
            out.holders_cgroup_shmem = cgroup_use.as_ref().and_then(|_| cgroup::shmem_bytes());
            attributed = Some(used);
        } else if fell_below {
            // Only what the job holds now, for the sweep's proof: the holders at the peak stay.
            out.seen.extend(attribute(root).1);
        }
        if rose || census_at.is_none_or(|at| at.elapsed() >= CENSUS_EVERY) {
            let (processes, fds) = census(root, &out.holders, rose);
            out.max_processes = out.max_processes.max(processes);
            out.max_fds = out.max_fds.max(fds);
            census_at = Some(Instant::now());
        }
        let sample = ShmSample {
            t_s,
            shm_used_bytes: used,
            cgroup_bytes: cgroup_use.as_ref().and_then(cgroup::UsageFile::bytes),
            step: shared.step.load(Ordering::Relaxed),
        };
        out.push(sample, &mut stride, &mut pending);
        if stopping {
            break;
        }
        std::thread::sleep(interval.saturating_sub(tick.elapsed()));
    }
    if let Some(last) = pending {
        out.samples.push(last);
    }
    out.cpu_s = thread_cpu_s() - cpu_at_start;
    out
}

/// Processes in the tree and the most fds one holds; from a fresh attribution when there is one.
pub fn census(root: u32, holders: &[Holder], fresh: bool) -> (u32, u64) {
    if fresh {
        let fds = holders.iter().map(|h| h.fds).max().unwrap_or(0);
        return (holders.len() as u32, fds);
    }
    let pids = proc_tree::descendants(root);
    let fds = pids
        .iter()
        .filter_map(|p| std::fs::read_dir(format!("/proc/{p}/fd")).ok())
        .map(|d| d.count() as u64)
        .max()
        .unwrap_or(0);
    (pids.len() as u32, fds)
}
