//! Runtime `namespace`: a fresh mount namespace whose /dev/shm is a tmpfs of the cell's size.
//!
//! The child unshares its mount namespace (through a user namespace when not root), makes every
//! mount private so nothing propagates back, and mounts the sized tmpfs on /dev/shm before it
//! execs `shmbench cell`. The host's /dev/shm is never touched, and the tmpfs disappears with the
//! last process of the cell: there is nothing to unmount or clean afterwards. With `shm-remount`
//! the tmpfs is then resized by a remount, as the bare-host fix resizes a live /dev/shm.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::child::{self, PreExec};
use super::launch::{CellMessage, Runtime};
use super::privileges::{check, drop_privileges};
use model::config::CellConfig;
use model::record::{CellRecord, Status};
use sys::shm::SHM_DIR;

pub struct Namespace;

impl Runtime for Namespace {
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord {
        let Some(size) = config.knobs.shm_size else {
            return CellRecord::failed_to_run(
                config.clone(),
                Status::Error,
                "runtime namespace needs shm-size".to_string(),
            );
        };
        let mut plan = NamespacePlan::new(size.bytes());
        if let Some(new_size) = config.knobs.shm_remount {
            plan = plan.remounted_to(new_size.bytes());
        }
        child::run(config, Some(Box::new(plan)), progress)
    }
}

/// Everything the namespace set-up needs, prepared before fork: after fork only raw syscalls run.
pub struct NamespacePlan {
    root: CString,
    target: CString,
    fstype: CString,
    options: CString,
    /// `mount -o remount,size=...` options applied after the mount (`shm-remount`).
    remount: Option<CString>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    rootless: bool,
}

impl NamespacePlan {
    pub fn new(bytes: u64) -> NamespacePlan {
        let uid = nix::unistd::geteuid().as_raw();
        let gid = nix::unistd::getegid().as_raw();
        NamespacePlan {
            root: CString::new("/").expect("no NUL"),
            target: CString::new(SHM_DIR).expect("no NUL"),
            fstype: CString::new("tmpfs").expect("no NUL"),
            options: CString::new(format!("size={bytes},mode=1777")).expect("no NUL"),
            remount: None,
            uid_map: format!("0 {uid} 1\n").into_bytes(),
            gid_map: format!("0 {gid} 1\n").into_bytes(),
            rootless: uid != 0,
        }
    }

    /// The tmpfs is resized once mounted, as `mount -o remount,size=BYTES /dev/shm` resizes a
    /// live one (the bare-host fix).
    pub fn remounted_to(mut self, bytes: u64) -> NamespacePlan {
        self.remount = Some(CString::new(format!("size={bytes}")).expect("no NUL"));
        self
    }

    /// Runs in the forked child. Only async-signal-safe calls.
    fn enter_namespace(&self) -> std::io::Result<()> {
        // SAFETY: raw syscalls on buffers prepared before fork.
        unsafe {
            if self.rootless {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
                write_file(c"/proc/self/setgroups", b"deny")?;
                write_file(c"/proc/self/uid_map", &self.uid_map)?;
                write_file(c"/proc/self/gid_map", &self.gid_map)?;
            } else {
                check(libc::unshare(libc::CLONE_NEWNS))?;
            }
            check(libc::mount(
                std::ptr::null(),
                self.root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                self.fstype.as_ptr(),
                self.target.as_ptr(),
                self.fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                self.options.as_ptr() as *const libc::c_void,
            ))?;
            if let Some(remount) = &self.remount {
                check(libc::mount(
                    self.fstype.as_ptr(),
                    self.target.as_ptr(),
                    self.fstype.as_ptr(),
                    libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV,
                    remount.as_ptr() as *const libc::c_void,
                ))?;
            }
        }
        Ok(())
    }
}

impl PreExec for NamespacePlan {
    fn enter(&self) -> std::io::Result<()> {
        self.enter_namespace()
    }

    fn hint(&self) -> &'static str {
        PERMISSION_HINT
    }

    fn makes_mount_namespace(&self) -> bool {
        true
    }
}

/// open + write + close with raw syscalls (async-signal-safe).
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = libc::write(fd, data.as_ptr() as *const libc::c_void, data.len());
    let err = std::io::Error::last_os_error();
    libc::close(fd);
    if n != data.len() as isize {
        return Err(err);
    }
    Ok(())
}

/// Checks that this process may make the namespace a sized cell needs, by doing it once for a
/// child that only prints its version (a 4 KiB tmpfs, gone when it exits).
fn probe_namespace() -> std::io::Result<()> {
    let plan = NamespacePlan::new(4096);
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure only makes raw syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            plan.enter_namespace()
        });
    }
    let status = cmd.status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the probe child ended with {status}"
        )))
    }
}

/// Runs this binary with `args` in a private mount namespace whose /dev/shm is a tmpfs of
/// `shm_bytes`, without capabilities, and returns its output (for helpers such as calibration
/// that must not touch the host's /dev/shm).
pub fn output_in_namespace(
    args: &[String],
    shm_bytes: u64,
) -> std::io::Result<std::process::Output> {
    let plan = NamespacePlan::new(shm_bytes);
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: the closure only makes raw syscalls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            plan.enter_namespace()?;
            drop_privileges()
        });
    }
    cmd.output()
}

/// What the user should do when the namespace cannot be made.
pub const PERMISSION_HINT: &str = "could not create a private mount namespace with a tmpfs on /dev/shm. Run as root, or allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, and kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or use --runtime host to measure this machine's own /dev/shm";

/// Fails with what to do when this process cannot make the namespace: checked once before a run
/// so a matrix is refused up front instead of every cell failing.
pub fn check_permission() -> anyhow::Result<()> {
    probe_namespace()
        .map_err(|e| anyhow::anyhow!("runtime namespace: {PERMISSION_HINT} (the kernel said: {e})"))
}
