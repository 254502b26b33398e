//! The init of a VM cell's guest (`--runtime vm`): this binary runs as `/init`, pid 1 of a
//! kernel booted with shmbench's initramfs. It mounts /proc, /sys, /dev and a tmpfs of the cell's
//! size on /dev/shm (and a memory cgroup for a `memory` limit), runs `shmbench cell` on
//! `/cell.json` as its child, prints the record on the
//! console behind [`RECORD_MARK`] with the guest's own fingerprint attached, and powers off.
//! Without a `/cell.json` it only says it is ready ([`READY_MARK`]): the accelerator probe.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::protocol::{GUEST_CELL_FILE, PROGRESS_ENV, READY_MARK, RECORD_MARK};
use model::config::CellConfig;
use model::knobs::IpcMode;
use model::record::{CellRecord, Status};
use model::vm::VmInfo;
use sys::memory_cgroup::{self, MemoryCgroup};

/// Whether this process is a guest's init: pid 1, started as `/init`.
pub fn is_init() -> bool {
    std::process::id() == 1 && std::env::args_os().next().is_some_and(|a| a == "/init")
}

/// Why the guest could not run its cell.
#[derive(Debug, thiserror::Error)]
enum GuestError {
    #[error("mount {fstype} on {target}: {why}")]
    Mount {
        fstype: String,
        target: String,
        why: std::io::Error,
    },
    #[error("the cell's config: {0}")]
    Config(#[from] serde_json::Error),
    #[error("cannot enable the memory controller: {0}")]
    MemoryController(std::io::Error),
    #[error("{0:#}")]
    MemoryGroup(anyhow::Error),
    #[error("cannot start the cell: {0}")]
    Start(std::io::Error),
    #[error("waiting for the cell: {0}")]
    Wait(std::io::Error),
}

fn mount(fstype: &str, target: &str, options: &str) -> Result<(), GuestError> {
    let _ = std::fs::create_dir_all(target);
    let c = |s: &str| CString::new(s).expect("no NUL");
    let (fs, dir, opts) = (c(fstype), c(target), c(options));
    // SAFETY: plain mount(2) on NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            fs.as_ptr(),
            dir.as_ptr(),
            fs.as_ptr(),
            libc::MS_NOSUID,
            opts.as_ptr() as *const libc::c_void,
        )
    };
    match rc {
        0 => Ok(()),
        _ => Err(GuestError::Mount {
            fstype: fstype.to_string(),
            target: target.to_string(),
            why: std::io::Error::last_os_error(),
        }),
    }
}

/// Runs the guest and powers the VM off; never returns.
pub fn init() -> ! {
    if let Err(e) = run() {
        println!("{RECORD_MARK}{e}");
    }
    // SAFETY: sync and reboot(2) with the power-off command end the VM; QEMU exits with it.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    std::process::exit(0)
}

/// The guest's own file systems, then its cell (or, without one, the probe's ready line).
fn run() -> Result<(), GuestError> {
    mount("proc", "/proc", "")?;
    mount("sysfs", "/sys", "")?;
    mount("devtmpfs", "/dev", "")?;
    mount("tmpfs", "/tmp", "mode=1777")?;
    let Ok(json) = std::fs::read_to_string(GUEST_CELL_FILE) else {
        println!("{READY_MARK}");
        return Ok(());
    };
    if let Err(e) = run_cell(&json) {
        println!("{RECORD_MARK}{}", failed(&json, e.to_string()));
    }
    Ok(())
}

/// Runs the cell of `json` and prints its record.
fn run_cell(json: &str) -> Result<(), GuestError> {
    let config: CellConfig = serde_json::from_str(json)?;
    // shm-size as asked; unset, Docker's 64 MiB, or for ipc host the kernel's own default (half
    // the VM's memory), as a machine's /dev/shm has.
    let size = match (config.knobs.shm_size, config.knobs.ipc) {
        (Some(size), _) => format!("size={},", size.bytes()),
        (None, IpcMode::Host) => String::new(),
        (None, _) => format!("size={},", 64u64 << 20),
    };
    mount("tmpfs", "/dev/shm", &format!("{size}mode=1777"))?;
    // A memory limit: a cgroup v2 group the cell joins before it execs, so its tmpfs pages are
    // charged there, as in a namespace cell or a container on the host.
    let group = match config.knobs.memory {
        Some(limit) => Some(memory_group(limit.bytes())?),
        None => None,
    };
    let mut command = Command::new("/proc/self/exe");
    if let Some(fd) = group.as_ref().map(MemoryCgroup::procs_fd) {
        // SAFETY: join only writes our pid to a descriptor opened above: async-signal-safe.
        unsafe {
            command.pre_exec(move || memory_cgroup::join(fd));
        }
    }
    let mut child = command
        .args(["cell", json])
        .env(PROGRESS_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(GuestError::Start)?;
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let status = child.wait().map_err(GuestError::Wait)?;
    let mut record: CellRecord = match serde_json::from_str(out.trim()) {
        Ok(record) => record,
        Err(_) => {
            let why = format!("in the VM: the cell ended ({status}) without a record");
            let mut record = CellRecord::failed_to_run(config, Status::Error, why);
            let what = format!("in the VM: the cell's main was OOM-killed ({status})");
            record.main_killed_by_oom(group.is_some_and(|g| g.oom_killed()), &what);
            record
        }
    };
    record.vm = Some(VmInfo {
        fingerprint: sys::fingerprint::collect(),
        ..VmInfo::default()
    });
    println!(
        "{RECORD_MARK}{}",
        serde_json::to_string(&record).unwrap_or_default()
    );
    Ok(())
}

/// The guest's memory cgroup for a cell limited to `limit` bytes: cgroup v2 mounted, its memory
/// controller handed down to child groups, and the same group a namespace cell gets on a host.
fn memory_group(limit: u64) -> Result<MemoryCgroup, GuestError> {
    mount("cgroup2", "/sys/fs/cgroup", "")?;
    std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+memory")
        .map_err(GuestError::MemoryController)?;
    MemoryCgroup::create(limit, "vm").map_err(GuestError::MemoryGroup)
}

/// A record saying why the cell could not run in the guest, as the line to print.
fn failed(json: &str, why: String) -> String {
    let record = serde_json::from_str::<CellConfig>(json)
        .map(|config| CellRecord::failed_to_run(config, Status::Error, format!("in the VM: {why}")))
        .map(|r| serde_json::to_string(&r).unwrap_or_default());
    record.unwrap_or(why)
}
