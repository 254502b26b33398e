//! A throw-away one-node Slurm cluster for the Slurm tests: Debian's `slurm-wlm` and `munge`
//! (installed when missing), a munged, slurmctld and slurmd of its own under a scratch
//! directory (its own key, socket, state, spool and ports, so a site's Slurm on the machine is
//! not touched), and stopped after the tests: jobs cancelled, daemons ended, directory removed.
//!
//! The node's /dev/shm is a tmpfs of its own (`NODE_SHM`): slurmd starts in a private mount
//! namespace, so its jobs share that tmpfs as a real node's jobs share its /dev/shm, and no test
//! fills this machine's. Tasks run under `task/cgroup` with ConstrainRAMSpace where the memory
//! cgroup is there (tmpfs pages charged to the job), and slurmstepd is kept from the OOM killer
//! (SLURMSTEPD_OOM_ADJ=-1000), as sites run it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::apt;
use crate::host::{on_path, run};
use crate::requirement::Requirement;

/// Where the cluster lives (one per machine: the xtask that starts it stops it).
const DIR: &str = "/tmp/shmbench-slurm-cluster";
/// The node's /dev/shm.
pub const NODE_SHM: &str = "512m";
/// The node's name in the cluster.
const NODE: &str = "shmbench-node";
/// The cluster's HealthCheckProgram, and the program it runs when a test has put one there.
const HEALTH_CHECK: &str = "health-check";
const HEALTH_CHECK_RUN: &str = "health-check.run";
/// How often slurmd runs it: short, so a test sees a drain and a resume within seconds.
const HEALTH_CHECK_INTERVAL_S: u32 = 5;
/// Ports away from Slurm's defaults (6817/6818), so a site's daemons are not met.
const PORTS: (u16, u16) = (16817, 16818);

pub struct Cluster;

fn dir() -> PathBuf {
    PathBuf::from(DIR)
}

fn conf() -> PathBuf {
    dir().join("slurm.conf")
}

/// The task and process-tracking plugins the machine's cgroups allow, and the cgroup.conf.
fn cgroup_setup() -> (&'static str, &'static str, Option<String>, &'static str) {
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let v1 = Path::new("/sys/fs/cgroup/memory").is_dir();
    match (v2, v1) {
        (true, _) => (
            "task/cgroup",
            "proctrack/cgroup",
            Some("cgroup/v2".into()),
            "cgroup v2, ConstrainRAMSpace",
        ),
        (false, true) => (
            "task/cgroup",
            "proctrack/cgroup",
            Some("cgroup/v1".into()),
            "cgroup v1, ConstrainRAMSpace",
        ),
        _ => (
            "task/none",
            "proctrack/linuxproc",
            None,
            "no memory cgroup here: task/none, so --mem is not enforced",
        ),
    }
}

/// Writes the cluster's configuration. Its timeouts are long: a 2-core machine running the
/// suite beside the jobs can take longer than Slurm's defaults (10 s) to launch a batch step,
/// and a launch past `BatchStartTimeout` ends the task FAILED before it wrote anything.
fn write_config() -> anyhow::Result<&'static str> {
    let d = dir();
    let mem_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib / 1024 - 1024)
        .unwrap_or(2048);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (task, proctrack, cgroup, said) = cgroup_setup();
    let p = |name: &str| d.join(name).display().to_string();
    let text = format!(
        "ClusterName=shmbench-test\nSlurmctldHost=localhost\nSlurmUser=root\nSlurmdUser=root\n\
SlurmctldPort={}\nSlurmdPort={}\nAuthType=auth/munge\nAuthInfo=socket={}\nCredType=cred/munge\n\
StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\n\
SlurmctldLogFile={}\nSlurmdLogFile={}\nProctrackType={proctrack}\nTaskPlugin={task}\n\
JobCompType=jobcomp/filetxt\nJobCompLoc={}\nJobAcctGatherType=jobacct_gather/none\n\
SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nMinJobAge=3600\n\
ReturnToService=2\nKillWait=5\nMpiDefault=none\nMessageTimeout=60\nBatchStartTimeout=120\n\
HealthCheckProgram={}\nHealthCheckInterval={HEALTH_CHECK_INTERVAL_S}\nHealthCheckNodeState=ANY\n\
NodeName={NODE} NodeHostname=localhost CPUs={cpus} RealMemory={mem_mib} State=UNKNOWN\n\
PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP\n",
        PORTS.0,
        PORTS.1,
        p("munge.sock"),
        p("state"),
        p("spool"),
        p("slurmctld.pid"),
        p("slurmd.pid"),
        p("slurmctld.log"),
        p("slurmd.log"),
        p("jobcomp.log"),
        p(HEALTH_CHECK),
    );
    let write = |name: &str, text: &str| {
        std::fs::write(d.join(name), text).map_err(|e| anyhow::anyhow!("cannot write {name}: {e}"))
    };
    write("slurm.conf", &text)?;
    // The health check runs a test's program only while one is there, so no other test's jobs
    // (a full /dev/shm, a crash's leftovers) can drain the node under it.
    write(
        HEALTH_CHECK,
        &format!(
            "#!/bin/sh\n# The test cluster's HealthCheckProgram: runs {HEALTH_CHECK_RUN} while a test\n\
# (tests/slurm_health.rs) has put one there, nothing otherwise.\n\
[ -x {run} ] || exit 0\nexec {run}\n",
            run = p(HEALTH_CHECK_RUN)
        ),
    )?;
    run(&["chmod", "755", &p(HEALTH_CHECK)])?;
    if let Some(plugin) = cgroup {
        write(
            "cgroup.conf",
            &format!("CgroupPlugin={plugin}\nCgroupAutomount=yes\nConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"),
        )?;
    }
    Ok(said)
}

/// The pid in a pid file, when that process is alive and runs `program` with our files.
fn our_pid(pid_file: &str, program: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(dir().join(pid_file))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    (cmdline.contains(program) && cmdline.contains(DIR)).then_some(pid)
}

/// Whether the node is idle (sinfo), within `wait`.
fn node_idle(wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        let out = Command::new("sinfo")
            .args(["-h", "-n", NODE, "-o", "%t"])
            .env("SLURM_CONF", conf())
            .stderr(Stdio::null())
            .output();
        if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    false
}

/// Ends what an earlier run left (jobs, then daemons), proven ours by their pid files and
/// command lines under `DIR`; removes the directory.
pub fn stop() -> String {
    if !dir().exists() {
        return "nothing to stop".into();
    }
    let slurm = |program: &str, args: &[&str]| {
        let _ = Command::new(program)
            .args(args)
            .env("SLURM_CONF", conf())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    if our_pid("slurmctld.pid", "slurmctld").is_some() {
        slurm("scancel", &["--full", "--partition=debug"]);
        // Each job's slurmstepd ends with its job; wait for the queue to empty.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let out = Command::new("squeue")
                .args(["-h", "-o", "%i"])
                .env("SLURM_CONF", conf())
                .output();
            if out.is_ok_and(|o| o.stdout.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let mut stopped = Vec::new();
    for (file, program) in [
        ("slurmd.pid", "slurmd"),
        ("slurmctld.pid", "slurmctld"),
        ("munged.pid", "munged"),
    ] {
        if let Some(pid) = our_pid(file, program) {
            terminate(pid);
            stopped.push(program);
        }
    }
    let errors = logged_errors();
    let _ = std::fs::remove_dir_all(dir());
    let left = remove_node_cgroups();
    let cgroups = match left {
        0 => String::new(),
        n => format!("; {n} cgroup tree(s) of the node still hold processes and were left"),
    };
    match stopped.is_empty() {
        true => format!("nothing was running{cgroups}{errors}"),
        false => format!("stopped {}{cgroups}{errors}", stopped.join(", ")),
    }
}

/// The last error lines about jobs in the daemons' logs, said before the directory goes: a
/// task that failed to start leaves its reason only there. (The daemons' own start-up errors,
/// such as an MPI plugin this cluster does not use, are left out.)
fn logged_errors() -> String {
    let mut out = String::new();
    for log in ["slurmctld.log", "slurmd.log"] {
        let text = std::fs::read_to_string(dir().join(log)).unwrap_or_default();
        let about_jobs = |l: &&str| {
            let lower = l.to_lowercase();
            lower.contains("error") && ["job", "step", "launch"].iter().any(|w| lower.contains(w))
        };
        let errors: Vec<&str> = text
            .lines()
            .filter(about_jobs)
            .filter(|l| !l.contains("state save file") && !l.contains("job_state"))
            .collect();
        for line in &errors[errors.len().saturating_sub(15)..] {
            out.push_str(&format!("\n   {log}: {line}"));
        }
    }
    out
}

/// Removes the cgroups slurmd made for this node (`slurm_<NODE>` under each cgroup v1
/// controller, or the v2 tree), deepest first: a job whose slurmstepd the OOM killer ended
/// leaves its cgroups behind, and a later cluster's job of the same id then fails to start
/// ("task_p_pre_setuid"), draining the node. Only empty cgroups can be removed (rmdir of one
/// with a process in it fails), so nothing running is touched. Says how many were left.
fn remove_node_cgroups() -> usize {
    fn remove(dir: &Path) -> bool {
        let children: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        // Every child is tried, even after one could not go.
        let mut all = true;
        for child in &children {
            all &= remove(child);
        }
        all && std::fs::remove_dir(dir).is_ok()
    }
    let name = format!("slurm_{NODE}");
    let roots = std::fs::read_dir("/sys/fs/cgroup")
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut left = 0;
    for root in roots
        .iter()
        .chain(std::iter::once(&PathBuf::from("/sys/fs/cgroup")))
    {
        let dir = root.join(&name);
        if dir.is_dir() && !remove(&dir) {
            left += 1;
        }
    }
    left
}

/// SIGTERM, then SIGKILL if it is still there after 10 s (never a signal to a pid that has
/// already gone, which the system may have given to another process).
fn terminate(pid: i32) {
    let alive = || Path::new(&format!("/proc/{pid}")).exists();
    let signal = |args: &[&str]| {
        let _ = Command::new("kill")
            .args(args)
            .arg(pid.to_string())
            .stderr(std::process::Stdio::null())
            .status();
    };
    if !alive() {
        return;
    }
    signal(&[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && alive() {
        std::thread::sleep(Duration::from_millis(100));
    }
    if alive() {
        signal(&["-9"]);
    }
}

impl Requirement for Cluster {
    fn name(&self) -> &'static str {
        "a one-node Slurm cluster"
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_SLURM")
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("SLURM_CONF".into(), conf().display().to_string()),
            ("SHMBENCH_TEST_SLURM_NODE_SHM".into(), NODE_SHM.into()),
        ]
    }

    fn stop(&self) -> Option<String> {
        Some(stop())
    }

    fn ensure(&self) -> anyhow::Result<String> {
        let mut done = Vec::new();
        if !["slurmctld", "slurmd", "sbatch", "munged"]
            .iter()
            .all(|p| on_path(p))
        {
            apt::install(&["slurm-wlm", "munge"])?;
            done.push("installed slurm-wlm and munge".to_string());
        }
        stop();
        remove_node_cgroups();
        let d = dir();
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(d.join(sub))
                .map_err(|e| anyhow::anyhow!("cannot create {DIR}: {e}"))?;
        }
        let key = d.join("munge.key");
        run(&[
            "dd",
            "if=/dev/urandom",
            &format!("of={}", key.display()),
            "bs=1024",
            "count=1",
            "status=none",
        ])?;
        run(&["chmod", "400", &key.display().to_string()])?;
        let said = write_config()?;
        let p = |name: &str| d.join(name).display().to_string();
        run(&[
            "munged",
            "--force",
            &format!("--socket={}", p("munge.sock")),
            &format!("--key-file={}", p("munge.key")),
            &format!("--log-file={}", p("munged.log")),
            &format!("--pid-file={}", p("munged.pid")),
            &format!("--seed-file={}", p("munged.seed")),
        ])?;
        run(&["slurmctld", "-f", &p("slurm.conf")])?;
        // slurmd in a mount namespace of its own, /dev/shm a tmpfs of the node's size there.
        let start = format!(
            "mount -t tmpfs -o size={NODE_SHM},mode=1777 shmbench-node-shm /dev/shm && exec slurmd -f {} -N {NODE}",
            p("slurm.conf")
        );
        run(&[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &start,
        ])?;
        if !node_idle(Duration::from_secs(30)) {
            let log = std::fs::read_to_string(d.join("slurmd.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            stop();
            return Err(anyhow::anyhow!(
                "the node did not come up idle within 30 s (set SHMBENCH_SKIP_SLURM=1 to skip the Slurm tests). slurmd's log ends:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        done.push(format!(
            "started munged, slurmctld and slurmd in {DIR} (node {NODE}, its /dev/shm a {NODE_SHM} tmpfs; {said})"
        ));
        Ok(done.join(", "))
    }
}
