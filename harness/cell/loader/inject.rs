//! The causes of a Bus error the `inject` knob makes happen for real, mid-run, for the causes
//! scenario (docs/EXPLAIN.md): the kernel raises (or a process sends) the signal, nothing is
//! simulated. The main's side acts at [`Inject::step`]; the workers' side on each task.
//!
//! - truncated-file: the workers read their samples from a mapped dataset file; the main (another
//!   process) truncates it to nothing, and the next read beyond its end faults. The file is
//!   unlinked from its making (O_TMPFILE): nothing is left behind, whatever ends the cell; the
//!   workers open it through /proc/<main>/fd/N, named in their environment ([`Main::worker_env`]).
//! - kill-bus: the main sends SIGBUS to worker 0.
//! - huge-pages: the worker given the injection step's task writes a hugetlb mapping made with
//!   MAP_NORESERVE; with no huge page free the kernel can back it with none. Where huge pages are
//!   free it is skipped: it would take one of the node's.
//! - segment-removed (file_system only): once the injection step's batch arrives, another
//!   process (a child of the main's) removes its segment from /dev/shm before the main opens it
//!   by name, as systemd-logind's RemoveIPC or a cleaner does under a job: ENOENT.
//! - memory-error: the worker given the injection step's task poisons a page of its own with
//!   madvise(MADV_HWPOISON) and reads it, as a memory error found by the kernel poisons one
//!   (BUS_MCEERR_AR on the read). The page is lost to the kernel until it reboots, so this runs
//!   only in shmbench's VM guests (the kernel command line shmbench boots them with says so:
//!   `protocol::GUEST_ARG`), where the cell keeps the capability it needs; anywhere else the
//!   cell is refused before its workers start.

use std::os::fd::AsRawFd;

use model::config::CellConfig;
use model::knobs::Inject;
use sys::owner::Token;

/// The workers' environment variable naming the dataset file: /proc/<main>/fd/<fd>.
const DATASET_ENV: &str = "SHMBENCH_INJECT_DATASET";

/// Bytes of the dataset file, and the stride of a task's read in it.
const DATASET_BYTES: usize = 1 << 20;
const PAGE: usize = 4096;

/// A huge page of the default size (x86-64).
const HUGE_PAGE: usize = 2 << 20;

/// The main's side.
pub struct Main {
    inject: Inject,
    at: u64,
    dataset: Option<std::fs::File>,
    /// The loader's token: segment-removed removes only a segment named with it.
    token: Token,
    done: bool,
}

impl Main {
    /// Before the workers start, for the loader whose segments carry `token`: the dataset file,
    /// for truncated-file.
    pub fn prepare(config: &CellConfig, token: &Token) -> std::io::Result<Main> {
        let inject = config.knobs.inject;
        if inject == Inject::MemoryError {
            memory_error_possible()?;
        }
        let dataset = match inject {
            Inject::TruncatedFile => {
                let file = tempfile::tempfile()?;
                file.set_len(DATASET_BYTES as u64)?;
                Some(file)
            }
            _ => None,
        };
        Ok(Main {
            inject,
            at: Inject::step(config.knobs.steps),
            dataset,
            token: token.clone(),
            done: false,
        })
    }

    /// What the workers' environment carries for the injection: the dataset file's path.
    pub fn worker_env(&self) -> Vec<(&'static str, String)> {
        let path =
            |file: &std::fs::File| format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd());
        self.dataset
            .iter()
            .map(|f| (DATASET_ENV, path(f)))
            .collect()
    }

    /// After step `step` was obtained: the injection, once, at its step.
    pub fn at_step(&mut self, step: u64, worker0: u32) {
        if self.done || step < self.at {
            return;
        }
        self.done = true;
        match self.inject {
            Inject::TruncatedFile => {
                if let Some(file) = &self.dataset {
                    let _ = file.set_len(0);
                }
            }
            // SAFETY: plain syscall to our own worker.
            Inject::KillBus => unsafe {
                libc::kill(worker0 as libc::pid_t, libc::SIGBUS);
            },
            Inject::HugePages | Inject::MemoryError | Inject::SegmentRemoved | Inject::None => {}
        }
    }

    /// Before the main opens the file_system segment `name` of task `idx`: for segment-removed,
    /// once, from the injection step on, the segment removed by another process (only one of
    /// this loader's own, named with its token).
    pub fn before_open(&mut self, name: &str, idx: u64) {
        if self.inject != Inject::SegmentRemoved || self.done || idx + 1 < self.at {
            return;
        }
        self.done = true;
        super::segment::remove_own_in_child(name, &self.token);
    }
}

/// Whether memory-error may and can run here: in a VM guest of shmbench's (a node's page must
/// never be poisoned), under a kernel built with CONFIG_MEMORY_FAILURE.
fn memory_error_possible() -> std::io::Result<()> {
    if !crate::protocol::in_guest() {
        return Err(std::io::Error::other(
            "inject memory-error poisons a page of the kernel's for good, so it runs only in a VM \
             guest shmbench boots: add --runtime vm --kernel debian:VERSION (or --kernels)",
        ));
    }
    // The sysctl exists exactly when the kernel handles memory failures.
    if !std::path::Path::new("/proc/sys/vm/memory_failure_recovery").exists() {
        return Err(std::io::Error::other(
            "inject memory-error: this kernel was built without CONFIG_MEMORY_FAILURE, so \
             MADV_HWPOISON cannot poison a page; boot one with it (Debian's generic flavor has it, \
             e.g. debian:6.1.0-57-amd64; its cloud flavor does not)",
        ));
    }
    Ok(())
}

/// A worker's side.
pub struct Worker {
    inject: Inject,
    at: u64,
    dataset: Option<*const u8>,
    /// memory-error may poison a page: checked again in the worker, which does it.
    in_guest: bool,
}

impl Worker {
    /// At the worker's start: the dataset file mapped, for truncated-file.
    pub fn open(config: &CellConfig) -> Worker {
        let dataset = match config.knobs.inject {
            Inject::TruncatedFile => std::env::var(DATASET_ENV).ok().and_then(|p| map(&p)),
            _ => None,
        };
        Worker {
            inject: config.knobs.inject,
            at: Inject::step(config.knobs.steps),
            dataset,
            in_guest: config.knobs.inject == Inject::MemoryError && crate::protocol::in_guest(),
        }
    }

    /// On the task of index `idx`: a sample read from the dataset file, or the huge page
    /// written by the task of the injection step.
    pub fn on_task(&self, idx: u64) {
        if let Some(base) = self.dataset {
            let offset = (idx as usize * PAGE) % DATASET_BYTES;
            // SAFETY: within the mapping of DATASET_BYTES; beyond the file's end once the main
            // truncated it, where the kernel raises SIGBUS: the cause this injects.
            unsafe { std::ptr::read_volatile(base.add(offset)) };
        }
        if self.inject == Inject::HugePages
            && idx + 1 == self.at
            && explain::mapping::huge_pages_free(HUGE_PAGE as u64) == Some(0)
        {
            write_unreserved_huge_page();
        }
        if self.inject == Inject::MemoryError && self.in_guest && idx + 1 == self.at {
            read_poisoned_page();
        }
    }
}

/// Poisons one page of a fresh private mapping and reads it: the kernel unmapped the page and
/// raises SIGBUS (BUS_MCEERR_AR) on the read, as on a page a memory error took. MADV_HWPOISON
/// needs CAP_SYS_ADMIN, which a guest's cell keeps; without it nothing happens and the cell passes.
fn read_poisoned_page() {
    with_written_page(PAGE, libc::MAP_PRIVATE, |ptr| {
        // SAFETY: `ptr` is a mapping of PAGE bytes that lives through this call.
        unsafe {
            if libc::madvise(ptr, PAGE, libc::MADV_HWPOISON) == 0 {
                std::ptr::read_volatile(ptr as *const u8);
            }
        }
    });
}

/// The file at `path` mapped shared and read-only, its whole DATASET_BYTES. The file stays open
/// for the process's life, as a dataset reader keeps it.
fn map(path: &str) -> Option<*const u8> {
    let file = Box::leak(Box::new(std::fs::File::open(path).ok()?));
    // SAFETY: a fresh shared read-only mapping of a file we opened; kept for the process's life.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            DATASET_BYTES,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    (ptr != libc::MAP_FAILED).then_some(ptr as *const u8)
}

/// Writes one huge page of a MAP_NORESERVE hugetlb mapping: with none free, SIGBUS.
fn write_unreserved_huge_page() {
    let flags = libc::MAP_SHARED | libc::MAP_HUGETLB | libc::MAP_NORESERVE;
    with_written_page(HUGE_PAGE, flags, |_| {});
}

/// Maps `len` bytes of anonymous memory with `flags`, writes its first byte (the write that
/// faults where no page can back it), runs `then` on it and unmaps it; nothing when mmap fails.
fn with_written_page(len: usize, flags: libc::c_int, then: impl FnOnce(*mut libc::c_void)) {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a fresh anonymous mapping, written within its length and unmapped after `then`.
    unsafe {
        let ptr = libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            flags | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if ptr == libc::MAP_FAILED {
            return;
        }
        std::ptr::write_volatile(ptr as *mut u8, 1);
        then(ptr);
        libc::munmap(ptr, len);
    }
}
