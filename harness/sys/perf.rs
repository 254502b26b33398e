//! Counters through perf_event_open(2), opened in the cell before it starts its workers so they
//! inherit them: the instructions every process of the cell executed, where the kernel allows it.
//! Many VMs have no PMU (ENOENT: no hardware counters), and perf_event_paranoid > 1 without
//! CAP_PERFMON forbids counting in the kernel (then the count is the user-space part, said by
//! [`Scope::User`]). Counts of exited children are folded into the counter read here.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Retired instructions (hardware).
    Instructions,
    /// Page faults (software: every kernel has it; the tests check inheritance with it).
    #[cfg_attr(not(test), allow(dead_code))]
    PageFaults,
}

/// Where the count was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// User and kernel space.
    All,
    /// User space only (the kernel's part was not allowed).
    User,
}

/// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64 bytes): all a counting
/// event needs.
#[repr(C)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const INHERIT: u64 = 1 << 1;
/// The descriptor is close-on-exec (so workers exec'ing do not keep it open).
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;

/// An open counter of this process and the processes it starts from now on.
pub struct Counter {
    fd: OwnedFd,
    pub scope: Scope,
}

fn open(event: Event, flags: u64) -> std::io::Result<OwnedFd> {
    let (kind, config) = match event {
        Event::Instructions => (0, 1), // PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS
        Event::PageFaults => (1, 2),   // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS
    };
    let attr = Attr {
        kind,
        size: std::mem::size_of::<Attr>() as u32,
        config,
        sample_period: 0,
        sample_type: 0,
        read_format: 0,
        flags: INHERIT | flags,
        wakeup_events: 0,
        bp_type: 0,
        config1: 0,
    };
    // SAFETY: perf_event_open with a valid attr for this process (pid 0), any CPU (-1), no group.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor the kernel just returned, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Why there is no counter.
#[derive(Debug, thiserror::Error)]
pub enum NoCounter {
    #[error("perf_event_open is not allowed here ({0}): lower kernel.perf_event_paranoid")]
    NotAllowed(std::io::Error),
    #[error("no hardware counters here (perf_event_open: ENOENT; many VMs have no PMU)")]
    NoPmu,
    #[error("perf_event_open: {0}")]
    Failed(std::io::Error),
}

impl Counter {
    /// Opens a counter of `event`, in user and kernel space where allowed, else in user space;
    /// the error says why there is none.
    pub fn open(event: Event) -> Result<Counter, NoCounter> {
        match open(event, 0) {
            Ok(fd) => Ok(Counter {
                fd,
                scope: Scope::All,
            }),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
                open(event, EXCLUDE_KERNEL | EXCLUDE_HV)
                    .map(|fd| Counter {
                        fd,
                        scope: Scope::User,
                    })
                    .map_err(NoCounter::NotAllowed)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(NoCounter::NoPmu),
            Err(e) => Err(NoCounter::Failed(e)),
        }
    }

    /// The count so far: this process's and that of its children that have exited.
    pub fn read(&self) -> Option<u64> {
        let mut value = [0u8; 8];
        // SAFETY: reading 8 bytes into a buffer of 8 from a counter's descriptor.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), value.as_mut_ptr().cast(), 8) };
        (n == 8).then(|| u64::from_ne_bytes(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_folds_in_the_children_started_after_it() {
        let counter = Counter::open(Event::PageFaults).expect("software counters exist everywhere");
        let before = counter.read().unwrap();
        // dd's 32 MiB buffer is 8192 pages it faults in, in a child of ours.
        let status = std::process::Command::new("dd")
            .args([
                "if=/dev/zero",
                "of=/dev/null",
                "bs=32M",
                "count=1",
                "status=none",
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let after = counter.read().unwrap();
        assert!(after - before >= 8192, "{before} -> {after}");
    }

    #[test]
    fn instructions_are_counted_or_the_reason_is_given() {
        match Counter::open(Event::Instructions) {
            Ok(c) => {
                let a = c.read().unwrap();
                let mut x = 0u64;
                for i in 0..1_000_000u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                assert!(c.read().unwrap() - a > 1_000_000, "{x}");
            }
            Err(why) => assert!(why.to_string().contains("perf_event_open"), "{why}"),
        }
    }
}
