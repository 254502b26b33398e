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
use crate::model::config::CellConfig;
use crate::model::knobs::IpcMode;
use crate::model::record::{CellRecord, Status};
use crate::model::vm::VmInfo;
use crate::sys::fingerprint::Fingerprint;
use crate::sys::memory_cgroup::{self, MemoryCgroup};

/// Whether this process is a guest's init: pid 1, started as `/init`.
pub fn is_init() -> bool {
    std::process::id() == 1 && std::env::args().next().as_deref() == Some("/init")
}

fn mount(fstype: &str, target: &str, options: &str) -> Result<(), String> {
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
        _ => Err(format!(
            "mount {fstype} on {target}: {}",
            std::io::Error::last_os_error()
        )),
    }
}

/// Runs the guest and powers the VM off; never returns.
pub fn init() -> ! {
    let outcome = run();
    if let Err(e) = outcome {
        println!("{RECORD_MARK}{e}");
    }
    // SAFETY: sync and reboot(2) with the power-off command end the VM; QEMU exits with it.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    std::process::exit(0)
}

fn run() -> Result<(), String> {
    mount("proc", "/proc", "")?;
    mount("sysfs", "/sys", "")?;
    mount("devtmpfs", "/dev", "")?;
    mount("tmpfs", "/tmp", "mode=1777")?;
    let Ok(json) = std::fs::read_to_string(GUEST_CELL_FILE) else {
        println!("{READY_MARK}");
        return Ok(());
    };
    let config: CellConfig =
        serde_json::from_str(&json).map_err(|e| failed(&json, e.to_string()))?;
    // shm-size as asked; unset, Docker's 64 MiB, or for ipc host the kernel's own default (half
    // the VM's memory), as a machine's /dev/shm has.
    let size = match (config.knobs.shm_size, config.knobs.ipc) {
        (Some(size), _) => format!("size={},", size.bytes()),
        (None, IpcMode::Host) => String::new(),
        (None, _) => format!("size={},", 64u64 << 20),
    };
    mount("tmpfs", "/dev/shm", &format!("{size}mode=1777")).map_err(|e| failed(&json, e))?;
    // A memory limit: a cgroup v2 group the cell joins before it execs, so its tmpfs pages are
    // charged there, as in a namespace cell or a container on the host.
    let group = match config.knobs.memory {
        Some(limit) => Some(memory_group(limit.bytes()).map_err(|e| failed(&json, e))?),
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
        .args(["cell", &json])
        .env(PROGRESS_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| failed(&json, format!("cannot start the cell: {e}")))?;
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let status = child.wait().map_err(|e| e.to_string())?;
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
        fingerprint: Fingerprint::collect(),
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
fn memory_group(limit: u64) -> Result<MemoryCgroup, String> {
    mount("cgroup2", "/sys/fs/cgroup", "")?;
    std::fs::write("/sys/fs/cgroup/cgroup.subtree_control", "+memory")
        .map_err(|e| format!("cannot enable the memory controller: {e}"))?;
    MemoryCgroup::create(limit, "vm").map_err(|e| format!("{e:#}"))
}

/// A record saying why the cell could not run in the guest, as the line to print.
fn failed(json: &str, why: String) -> String {
    let record = serde_json::from_str::<CellConfig>(json)
        .map(|config| CellRecord::failed_to_run(config, Status::Error, format!("in the VM: {why}")))
        .map(|r| serde_json::to_string(&r).unwrap_or_default());
    record.unwrap_or(why)
}
