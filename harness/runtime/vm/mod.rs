//! Runtime `vm`: the cell under another kernel. QEMU boots the chosen kernel (`kernel`) with
//! shmbench's own initramfs (`initramfs`: this binary as `/init`, plus a small archive with the
//! cell's config), the guest init mounts a tmpfs of the cell's size on /dev/shm and runs the
//! cell (`cell::guest`), and its record comes back on the serial console. Everything that can go
//! wrong in a VM is a record, not a hang: a kernel that does not boot, a panic (`panic=-1` makes
//! it power off at once), no record in time: `error` with the console's last lines. QEMU dies
//! with this process (PR_SET_PDEATHSIG), is killed when the cell ends, and its temporary initrd
//! is removed.

mod cpio;
mod initramfs;
pub mod kernel;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::launch::{CellMessage, Runtime};
use cell::protocol::{Progress, READY_MARK, RECORD_MARK};
use model::config::CellConfig;
use model::record::{CellRecord, Status};
use model::vm::{Accel, VmInfo};
use sys::{process, signals};

/// Extra kernel command-line arguments (for debugging a kernel, and for the tests' panic).
pub const APPEND_ENV: &str = "SHMBENCH_VM_APPEND";
/// How long the KVM probe may take before `accel auto` takes TCG.
const KVM_PROBE: Duration = Duration::from_secs(20);
/// Console lines kept for an error's message.
const TAIL: usize = 12;

pub struct Vm {
    /// `accel auto`'s answer, probed once per run.
    auto: OnceLock<(Accel, String)>,
    /// The base initramfs, found (or built) once per run: finding it hashes the binary.
    base: OnceLock<Result<PathBuf, std::sync::Arc<anyhow::Error>>>,
}

impl Vm {
    pub fn new() -> Vm {
        Vm {
            auto: OnceLock::new(),
            base: OnceLock::new(),
        }
    }
}

impl Default for Vm {
    fn default() -> Self {
        Vm::new()
    }
}

/// What a boot printed, and how it ended.
struct Boot {
    record: Option<String>,
    ready: bool,
    tail: Vec<String>,
    /// The kernel's panic line, kept when it scrolls out of the tail.
    panic: Option<String>,
    ended: &'static str,
}

/// The QEMU command for `kernel` with `initrd`.
fn qemu(kernel: &Path, initrd: &Path, accel: Accel, memory: u64, cpus: u32) -> Command {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(format!(
            // no_timer_check: under TCG on a busy host the kernel's early check of the IO-APIC
            // timer can see too few ticks and panic ("IO-APIC + timer doesn't work!"), as
            // virtualized kernels commonly are told not to check.
            "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check {} {}",
            cell::protocol::GUEST_ARG,
            std::env::var(APPEND_ENV).unwrap_or_default()
        ))
        .args(["-m", &format!("{}M", memory >> 20)])
        .args(["-smp", &cpus.to_string()])
        .args(["-accel", &accel.to_string()])
        .args([
            "-nodefaults",
            "-nographic",
            "-no-reboot",
            "-serial",
            "stdio",
        ])
        .args(["-monitor", "none"]);
    if accel == Accel::Tcg {
        // One host thread per vCPU where QEMU supports it.
        cmd.args(["-accel", "tcg,thread=multi"]);
    }
    process::piped_and_tied(&mut cmd);
    cmd
}

/// Runs a VM until its record, its end, or `limit` without a line; the console read on a thread.
/// The initrd file is removed at the first console line: QEMU has loaded it before its firmware
/// prints anything, so even a run killed with SIGKILL leaves no file behind after that.
fn boot(
    mut child: Child,
    initrd: tempfile::NamedTempFile,
    limit: Duration,
    progress: &mut dyn FnMut(CellMessage),
) -> Boot {
    let mut initrd = Some(initrd);
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let mut boot = Boot {
        record: None,
        ready: false,
        tail: Vec::new(),
        panic: None,
        ended: "QEMU exited without a record",
    };
    let mut last = Instant::now();
    loop {
        // In slices, so a Ctrl-C or SIGTERM to the run ends the VM at once.
        if signals::received().is_some() {
            boot.ended = "stopped by a signal";
            break;
        }
        if last.elapsed() > limit {
            boot.ended = "no console output in time";
            break;
        }
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                last = Instant::now();
                drop(initrd.take());
                let line = line.trim_end_matches('\r').to_string();
                // The firmware's terminal codes can share a line with the guest's first words:
                // the marks are looked for anywhere in a line.
                let after = |mark: &str| line.find(mark).map(|i| &line[i..]);
                if let Some(rest) = after(RECORD_MARK) {
                    boot.record = Some(rest[RECORD_MARK.len()..].to_string());
                    break;
                }
                if after(READY_MARK).is_some() {
                    boot.ready = true;
                    break;
                }
                if let Some(p) = after("progress ").and_then(Progress::parse) {
                    progress(CellMessage::Progress(p));
                    continue;
                }
                if line.contains("Kernel panic") && boot.panic.is_none() {
                    boot.panic = Some(line.clone());
                    boot.ended = "the guest kernel panicked";
                }
                boot.tail.push(line);
                if boot.tail.len() > TAIL {
                    boot.tail.remove(0);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = child.kill();
    let status = child.wait();
    if boot.record.is_none() && !boot.ready {
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        boot.tail
            .extend(stderr.lines().map(|l| format!("qemu: {l}")));
        if let (Ok(s), "QEMU exited without a record") = (status, boot.ended) {
            if !s.success() {
                boot.ended = "QEMU failed";
            }
        }
    }
    boot
}

/// The initrd for one cell (or the probe): the base with the cell's archive appended.
fn initrd(base: &Path, config_json: Option<&str>) -> anyhow::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new()
        .prefix("shmbench-initrd-")
        .tempfile()?;
    // Streamed: the base is the binary's size, tens of MiB, for every cell.
    std::io::copy(&mut std::fs::File::open(base)?, &mut file)?;
    if let Some(json) = config_json {
        file.write_all(&initramfs::cell(json))?;
    }
    file.flush()?;
    Ok(file)
}

impl Vm {
    fn base(&self) -> anyhow::Result<PathBuf> {
        let found = self
            .base
            .get_or_init(|| initramfs::base().map_err(std::sync::Arc::new))
            .clone();
        match found {
            // Gone since (a cache cleaned by hand): found or built again.
            Ok(path) if !path.is_file() => initramfs::base(),
            found => found.map_err(|e| anyhow::anyhow!("{e:#}")),
        }
        .map_err(|e| anyhow::anyhow!("cannot build the initramfs: {e:#}"))
    }

    /// The accelerator for `asked` with kernel `kernel`: KVM or TCG as asked, or for `auto` KVM when
    /// a probe VM boots with it within [`KVM_PROBE`] (checked once), else TCG; with why.
    fn accel(&self, asked: Accel, kernel: &Path, config: &CellConfig) -> (Accel, String) {
        if asked != Accel::Auto {
            return (asked, format!("accel {asked} as asked"));
        }
        self.auto
            .get_or_init(|| {
                if std::fs::File::options().read(true).write(true).open("/dev/kvm").is_err() {
                    return (Accel::Tcg, "accel auto: /dev/kvm cannot be opened, so TCG (software emulation)".into());
                }
                let probe = self.base().and_then(|base| initrd(&base, None)).and_then(|file| {
                    let child = qemu(kernel, file.path(), Accel::Kvm, config.knobs.vm_memory.bytes(), 1)
                        .spawn()?;
                    Ok(boot(child, file, KVM_PROBE, &mut |_| {}).ready)
                });
                match probe {
                    Ok(true) => (Accel::Kvm, "accel auto: a KVM guest booted, so KVM".into()),
                    _ => (Accel::Tcg, format!("accel auto: a KVM guest did not boot within {} s, so TCG (software emulation: outcomes hold, speeds do not)", KVM_PROBE.as_secs())),
                }
            })
            .clone()
    }
}

/// Fails with what to do when QEMU is not installed: checked once before a run.
pub fn check_qemu() -> anyhow::Result<()> {
    match Command::new("qemu-system-x86_64").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => anyhow::bail!(
            "runtime vm needs qemu-system-x86_64: install it (apt-get install qemu-system-x86)"
        ),
    }
}

impl Runtime for Vm {
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord {
        let fail =
            |message: String| CellRecord::failed_to_run(config.clone(), Status::Error, message);
        let spec = config.knobs.kernel.clone().unwrap_or_default();
        let kernel: PathBuf = match kernel::resolve(&spec) {
            Ok(k) => k,
            Err(e) => return fail(format!("{e:#}")),
        };
        let (accel, why) = self.accel(config.knobs.accel, &kernel, config);
        let json = match serde_json::to_string(config) {
            Ok(j) => j,
            Err(e) => return fail(format!("cannot encode the cell config: {e}")),
        };
        let file = match self.base().and_then(|base| initrd(&base, Some(&json))) {
            Ok(f) => f,
            Err(e) => return fail(format!("{e:#}")),
        };
        let began = Instant::now();
        let child = match qemu(&kernel, file.path(), accel, config.knobs.vm_memory.bytes(), config.knobs.vm_cpus).spawn() {
            Ok(c) => c,
            Err(e) => return fail(format!("cannot start qemu-system-x86_64 ({e}): install it (apt-get install qemu-system-x86)")),
        };
        let limit = Duration::from_secs_f64(config.knobs.vm_boot_s + config.knobs.timeout_s);
        let boot = boot(child, file, limit, progress);
        let info = |fingerprint| VmInfo {
            kernel: spec.clone(),
            accel: Some(accel),
            memory_bytes: config.knobs.vm_memory.bytes(),
            cpus: config.knobs.vm_cpus,
            boot_and_run_s: began.elapsed().as_secs_f64(),
            fingerprint,
        };
        let parsed = boot
            .record
            .as_deref()
            .and_then(|r| serde_json::from_str::<CellRecord>(r).ok());
        let mut record = match parsed {
            Some(r) => r,
            None => {
                let said = boot
                    .record
                    .clone()
                    .map(|r| format!(" (it said: {r})"))
                    .unwrap_or_default();
                let panic = boot
                    .panic
                    .clone()
                    .map(|p| format!(" ({})", p.trim()))
                    .unwrap_or_default();
                let mut r = fail(format!(
                    "the VM ({spec}, {accel}) gave no record: {}{panic}{said}; {why}; last console lines: {}",
                    boot.ended,
                    boot.tail.join(" | ")
                ));
                r.vm = Some(info(Default::default()));
                return r;
            }
        };
        let guest = record.vm.take().map(|v| v.fingerprint).unwrap_or_default();
        record.vm = Some(info(guest));
        record
    }
}
