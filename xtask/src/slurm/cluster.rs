//! A throw-away Slurm cluster on this machine, described by a [`Layout`]: Debian's `slurm-wlm`
//! and `munge` (installed when missing), a munged, slurmctld and one slurmd per node of its own
//! under a scratch directory (its own key, socket, state, spool and ports, so a site's Slurm on
//! the machine is not touched), stopped after the tests: jobs cancelled, daemons ended, cgroups
//! and directory removed. What each node is (its /dev/shm, a leftover in it, its CPUs) is
//! `super`'s; this file only makes it so.
//!
//! Each slurmd starts in a private mount namespace with a tmpfs of the node's size on /dev/shm,
//! so its jobs share that tmpfs as a real node's jobs share its /dev/shm, and no test fills this
//! machine's. Several nodes on one machine (Debian's Slurm 22.05 needs no multiple-slurmd
//! build for it, measured): each slurmd also gets a UTS namespace with the node's hostname, its
//! own port on the loopback address (`NodeAddr=127.0.0.1 Port=...`), and its own spool, pid
//! file, log and health check, by binding the node's directory over the one path slurm.conf
//! names for them (`node/`). Tasks run under `task/cgroup` with ConstrainRAMSpace where the
//! memory cgroup is there (tmpfs pages charged to the job), and slurmstepd is kept from the OOM
//! killer (SLURMSTEPD_OOM_ADJ=-1000), as sites run it.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::apt;
use crate::host::{on_path, run};

/// The cluster's HealthCheckProgram (in a node's directory), and the program it runs when a
/// test has put one there.
pub const HEALTH_CHECK: &str = "health-check";
pub const HEALTH_CHECK_RUN: &str = "health-check.run";
/// How often slurmd runs it: short, so a test sees a drain and a resume within seconds.
const HEALTH_CHECK_INTERVAL_S: u32 = 5;

/// A cluster: where it lives (one per machine and layout: the xtask that starts it stops it),
/// its ports and its nodes.
pub struct Layout {
    pub dir: &'static str,
    pub name: &'static str,
    /// slurmctld's port and the default slurmd port, away from Slurm's defaults (6817/6818) so
    /// a site's daemons are not met.
    pub ports: (u16, u16),
    pub nodes: Vec<Node>,
}

/// A node of a cluster.
pub struct Node {
    pub name: String,
    /// Its /dev/shm, as tmpfs's size= takes it.
    pub shm: &'static str,
    /// A file of this size left in its /dev/shm that no process holds (a dead job's).
    pub leftover: Option<&'static str>,
    /// The CPUs its slurmd and so its jobs may use (taskset's list), else all.
    pub cpus: Option<&'static str>,
    /// Its own hostname (a UTS namespace), port and directory; else the machine's hostname,
    /// the default port and the cluster's directory (the one-node cluster's way).
    pub own_host: Option<u16>,
}

impl Layout {
    pub fn dir(&self) -> PathBuf {
        PathBuf::from(self.dir)
    }

    pub fn conf(&self) -> PathBuf {
        self.dir().join("slurm.conf")
    }

    /// Where a node's spool, pid file, log and health check are, as the host sees them.
    pub fn node_dir(&self, node: &Node) -> PathBuf {
        match node.own_host {
            Some(_) => self.dir().join("nodes").join(&node.name),
            None => self.dir(),
        }
    }

    /// The path slurm.conf names for what is each node's: the node's directory is bound over
    /// it in the node's mount namespace.
    fn per_node(&self) -> PathBuf {
        match self.nodes.iter().any(|n| n.own_host.is_some()) {
            true => self.dir().join("node"),
            false => self.dir(),
        }
    }
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
/// and a launch past `BatchStartTimeout` ends the task FAILED before it wrote anything. Batch
/// jobs are scheduled at once (`batch_sched_delay=0`; Slurm's default waits up to 3 s): a
/// chain of jobs each after the last (`slurm submit --in-turn`) took 3 s a job, now 1.
fn write_config(layout: &Layout) -> anyhow::Result<&'static str> {
    let d = layout.dir();
    let per_node = layout.per_node();
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
    let n = |name: &str| per_node.join(name).display().to_string();
    let nodes: Vec<String> = (layout.nodes.iter())
        .map(|node| {
            let place = match node.own_host {
                Some(port) => format!("NodeAddr=127.0.0.1 NodeHostname={} Port={port}", node.name),
                None => "NodeHostname=localhost".into(),
            };
            let cpus = node.cpus.map_or(cpus, |list| list.split(',').count());
            format!(
                "NodeName={} {place} CPUs={cpus} RealMemory={mem_mib} State=UNKNOWN\n",
                node.name
            )
        })
        .collect();
    let names: Vec<&str> = layout.nodes.iter().map(|n| n.name.as_str()).collect();
    let text = format!(
        "ClusterName={}\nSlurmctldHost=localhost\nSlurmUser=root\nSlurmdUser=root\n\
SlurmctldPort={}\nSlurmdPort={}\nAuthType=auth/munge\nAuthInfo=socket={}\nCredType=cred/munge\n\
StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\n\
SlurmctldLogFile={}\nSlurmdLogFile={}\nProctrackType={proctrack}\nTaskPlugin={task}\n\
JobCompType=jobcomp/filetxt\nJobCompLoc={}\nJobAcctGatherType=jobacct_gather/none\n\
SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nMinJobAge=3600\n\
ReturnToService=2\nKillWait=5\nMpiDefault=none\nMessageTimeout=60\nBatchStartTimeout=120\n\
SchedulerParameters=batch_sched_delay=0\n\
HealthCheckProgram={}\nHealthCheckInterval={HEALTH_CHECK_INTERVAL_S}\nHealthCheckNodeState=ANY\n\
{}PartitionName=debug Nodes={} Default=YES MaxTime=INFINITE State=UP\n",
        layout.name,
        layout.ports.0,
        layout.ports.1,
        p("munge.sock"),
        p("state"),
        n("spool"),
        p("slurmctld.pid"),
        n("slurmd.pid"),
        p("slurmctld.log"),
        n("slurmd.log"),
        p("jobcomp.log"),
        n(HEALTH_CHECK),
        nodes.concat(),
        names.join(","),
    );
    let write = |path: PathBuf, text: &str| {
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
    };
    write(d.join("slurm.conf"), &text)?;
    // The health check runs a test's program only while one is there, so no other test's jobs
    // (a full /dev/shm, a crash's leftovers) can drain a node under it.
    for node in &layout.nodes {
        let here = layout.node_dir(node);
        let check = here.join(HEALTH_CHECK).display().to_string();
        write(
            here.join(HEALTH_CHECK),
            &format!(
                "#!/bin/sh\n# The test cluster's HealthCheckProgram: runs {HEALTH_CHECK_RUN} while a test\n\
# (tests/slurm_health.rs) has put one there, nothing otherwise.\n\
[ -x {run} ] || exit 0\nexec {run}\n",
                run = n(HEALTH_CHECK_RUN)
            ),
        )?;
        run(&["chmod", "755", &check])?;
    }
    if let Some(plugin) = cgroup {
        write(
            d.join("cgroup.conf"),
            &format!("CgroupPlugin={plugin}\nCgroupAutomount=yes\nConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"),
        )?;
    }
    Ok(said)
}

/// The pid in a pid file, when that process is alive and runs `program` with this cluster's
/// files.
fn our_pid(layout: &Layout, pid_file: &Path, program: &str) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // The program itself (not a `tail` of its log, whose command line names both; Debian's
    // `slurmd` is a link to `slurmd-wlm`), run with this cluster's files.
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    (program_path(program).is_some_and(|p| p == exe) && cmdline.contains(layout.dir)).then_some(pid)
}

/// Where `program` found on PATH is, links resolved (as /proc/PID/exe names it).
fn program_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// The nodes not idle (sinfo) once `wait` is over; none when all came up.
fn not_idle(layout: &Layout, wait: Duration) -> Vec<String> {
    let deadline = Instant::now() + wait;
    loop {
        let out = Command::new("sinfo")
            .args(["-h", "-N", "-o", "%N %t"])
            .env("SLURM_CONF", layout.conf())
            .stderr(Stdio::null())
            .output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        let idle: Vec<String> = (text.unwrap_or_default().lines())
            .filter_map(|l| l.strip_suffix(" idle").map(str::to_string))
            .collect();
        let waiting: Vec<String> = (layout.nodes.iter())
            .filter(|n| !idle.contains(&n.name))
            .map(|n| n.name.clone())
            .collect();
        if waiting.is_empty() || Instant::now() > deadline {
            return waiting;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Ends what an earlier run left (jobs, then daemons), proven ours by their pid files and
/// command lines under the cluster's directory; removes the directory and the nodes' cgroups.
pub fn stop(layout: &Layout) -> String {
    if !layout.dir().exists() {
        return "nothing to stop".into();
    }
    let conf = layout.conf();
    let slurm = |program: &str, args: &[&str]| {
        let _ = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    let ctld_pid = layout.dir().join("slurmctld.pid");
    if our_pid(layout, &ctld_pid, "slurmctld").is_some() {
        slurm("scancel", &["--full", "--partition=debug"]);
        // Each job's slurmstepd ends with its job; wait for the queue to empty.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let out = Command::new("squeue")
                .args(["-h", "-o", "%i"])
                .env("SLURM_CONF", &conf)
                .output();
            if out.is_ok_and(|o| o.stdout.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    let mut stopped = Vec::new();
    for (file, program) in daemons(layout) {
        if let Some(pid) = our_pid(layout, &file, program) {
            terminate(pid);
            stopped.push(program);
        }
    }
    let errors = logged_errors(layout);
    // A pid file whose process lives on and names this cluster, yet was not proven ours, keeps
    // the directory (its pid files are how a later stop finds the daemons).
    let unproven: Vec<String> = (daemons(layout).into_iter())
        .filter_map(|(file, _)| {
            std::fs::read_to_string(file)
                .ok()?
                .trim()
                .parse::<i32>()
                .ok()
        })
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(layout.dir))
        })
        .map(|pid| pid.to_string())
        .collect();
    if !unproven.is_empty() {
        return format!(
            "stopped {}; left {} and its directory: process(es) {} name it but were not proven its daemons{errors}",
            said_once(&stopped),
            layout.dir,
            unproven.join(", ")
        );
    }
    let _ = std::fs::remove_dir_all(layout.dir());
    let left = remove_node_cgroups(layout);
    let cgroups = match left {
        0 => String::new(),
        n => format!("; {n} cgroup tree(s) of the nodes still hold processes and were left"),
    };
    match stopped.is_empty() {
        true => format!("nothing was running{cgroups}{errors}"),
        false => format!("stopped {}{cgroups}{errors}", said_once(&stopped)),
    }
}

/// Each daemon's pid file and program: the nodes' slurmd, slurmctld, munged.
fn daemons(layout: &Layout) -> Vec<(PathBuf, &'static str)> {
    (layout.nodes.iter())
        .map(|n| (layout.node_dir(n).join("slurmd.pid"), "slurmd"))
        .chain([
            (layout.dir().join("slurmctld.pid"), "slurmctld"),
            (layout.dir().join("munged.pid"), "munged"),
        ])
        .collect()
}

/// `slurmd x7, slurmctld, munged`.
fn said_once(programs: &[&str]) -> String {
    let mut said: Vec<String> = Vec::new();
    for p in programs {
        let n = programs.iter().filter(|q| *q == p).count();
        let word = match n {
            1 => p.to_string(),
            n => format!("{p} x{n}"),
        };
        if !said.contains(&word) {
            said.push(word);
        }
    }
    said.join(", ")
}

/// The last error lines about jobs in the daemons' logs, said before the directory goes: a
/// task that failed to start leaves its reason only there. (The daemons' own start-up errors,
/// such as an MPI plugin this cluster does not use, are left out.)
fn logged_errors(layout: &Layout) -> String {
    let mut out = String::new();
    let logs = std::iter::once(layout.dir().join("slurmctld.log")).chain(
        layout
            .nodes
            .iter()
            .map(|n| layout.node_dir(n).join("slurmd.log")),
    );
    for log in logs {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let about_jobs = |l: &&str| {
            let lower = l.to_lowercase();
            lower.contains("error") && ["job", "step", "launch"].iter().any(|w| lower.contains(w))
        };
        let errors: Vec<&str> = text
            .lines()
            .filter(about_jobs)
            .filter(|l| !l.contains("state save file") && !l.contains("job_state"))
            .collect();
        let name = log
            .strip_prefix(layout.dir())
            .unwrap_or(&log)
            .display()
            .to_string();
        for line in &errors[errors.len().saturating_sub(15)..] {
            out.push_str(&format!("\n   {name}: {line}"));
        }
    }
    out
}

/// Removes the cgroups slurmd made for the nodes (`slurm_<node>` under each cgroup v1
/// controller, or the v2 tree), deepest first: a job whose slurmstepd the OOM killer ended
/// leaves its cgroups behind, and a later cluster's job of the same id then fails to start
/// ("task_p_pre_setuid"), draining the node. Only empty cgroups can be removed (rmdir of one
/// with a process in it fails), so nothing running is touched. Says how many were left.
pub fn remove_node_cgroups(layout: &Layout) -> usize {
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
    let roots = std::fs::read_dir("/sys/fs/cgroup")
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut left = 0;
    for node in &layout.nodes {
        // The node's CPU group (`cpu_group`), empty once its slurmd ended.
        for group in [
            Path::new("/sys/fs/cgroup/cpu").join(format!("shmbench-slurm-{}", node.name)),
            Path::new("/sys/fs/cgroup").join(format!("shmbench-slurm-{}", node.name)),
        ] {
            if group.is_dir() && std::fs::remove_dir(&group).is_err() {
                left += 1;
            }
        }
        let name = format!("slurm_{}", node.name);
        for root in roots
            .iter()
            .chain(std::iter::once(&PathBuf::from("/sys/fs/cgroup")))
        {
            let dir = root.join(&name);
            if dir.is_dir() && !remove(&dir) {
                left += 1;
            }
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

/// Starts the cluster (after stopping what an earlier run left): munged, slurmctld, and each
/// node's slurmd in its namespaces; waits until every node is idle. Says what it did.
pub fn start(layout: &Layout) -> anyhow::Result<String> {
    let mut done = Vec::new();
    if !["slurmctld", "slurmd", "sbatch", "munged"]
        .iter()
        .all(|p| on_path(p))
    {
        apt::install(&["slurm-wlm", "munge"])?;
        done.push("installed slurm-wlm and munge".to_string());
    }
    stop(layout);
    remove_node_cgroups(layout);
    let d = layout.dir();
    let made = |path: PathBuf| {
        std::fs::create_dir_all(&path)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))
    };
    made(d.join("state"))?;
    made(layout.per_node())?;
    for node in &layout.nodes {
        made(layout.node_dir(node).join("spool"))?;
    }
    // The key is 0400 from its first byte: no one else reads it while it is written.
    let mut random = [0u8; 1024];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut random))
        .map_err(|e| anyhow::anyhow!("cannot read /dev/urandom: {e}"))?;
    let key = d.join("munge.key");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(&key)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &random))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", key.display()))?;
    let said = write_config(layout)?;
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
    // A daemon that does not start stops the ones that did.
    let started = run(&["slurmctld", "-f", &p("slurm.conf")]).and_then(|()| {
        layout
            .nodes
            .iter()
            .try_for_each(|n| start_slurmd(layout, n))
    });
    if let Err(e) = started {
        stop(layout);
        return Err(e);
    }
    let waiting = not_idle(layout, Duration::from_secs(30));
    if !waiting.is_empty() {
        let first = layout.nodes.iter().find(|n| waiting.contains(&n.name));
        let log = first.map(|n| layout.node_dir(n).join("slurmd.log"));
        let log = log
            .and_then(|l| std::fs::read_to_string(l).ok())
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(10).collect();
        stop(layout);
        return Err(anyhow::anyhow!(
            "node(s) {} did not come up idle within 30 s (set SHMBENCH_SKIP_SLURM=1 to skip the Slurm tests). The first one's slurmd log ends:\n{}",
            waiting.join(", "),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    let nodes: Vec<String> = layout.nodes.iter().map(describe).collect();
    done.push(format!(
        "started munged, slurmctld and {} slurmd in {} ({}; {said})",
        layout.nodes.len(),
        layout.dir,
        nodes.join(", ")
    ));
    Ok(done.join(", "))
}

/// A node's slurmd in a mount namespace of its own, /dev/shm a tmpfs of the node's size there
/// (with the node's leftover in it), and, for a node with a host of its own, a UTS namespace
/// with its hostname and its directory bound over the cluster's per-node path.
fn start_slurmd(layout: &Layout, node: &Node) -> anyhow::Result<()> {
    let conf = layout.conf().display().to_string();
    let mut steps = Vec::new();
    let mut namespaces = vec!["--mount"];
    if node.own_host.is_some() {
        namespaces.push("--uts");
        steps.push(format!("hostname {}", node.name));
        steps.push(format!(
            "mount --bind {} {}",
            layout.node_dir(node).display(),
            layout.per_node().display()
        ));
    }
    steps.push(format!(
        "mount -t tmpfs -o size={},mode=1777 shmbench-{}-shm /dev/shm",
        node.shm, node.name
    ));
    if let Some(size) = node.leftover {
        // A dead job's segment, named as torch names its own after a pid that is gone, that no
        // process holds: what `shmbench node` can prove dead.
        steps.push(format!(
            "sleep 0 & gone=$! && wait $gone && head -c {size} /dev/zero > /dev/shm/torch_${{gone}}_1_0"
        ));
    }
    // A node of fewer CPUs has them pinned and an eighth of the CPU weight: pinned alone, it
    // had as much as its neighbours whenever the machine's other work kept every core busy (its
    // img/s then no lower than theirs); with the weight it still gets less.
    if let Some(group) = node.cpus.and_then(|_| cpu_group(node)) {
        steps.insert(0, format!("echo $$ > {}/cgroup.procs", group.display()));
    }
    let pin = node
        .cpus
        .map_or(String::new(), |c| format!("taskset -c {c} "));
    steps.push(format!("exec {pin}slurmd -f {conf} -N {}", node.name));
    let mut args = vec!["unshare"];
    args.extend(namespaces);
    args.extend(["--propagation", "private", "sh", "-c"]);
    let script = steps.join(" && ");
    args.push(&script);
    run(&args)
}

/// The CPU cgroup of a node of fewer CPUs, made with an eighth of the default weight (cgroup
/// v1's cpu.shares 128 of 1024, v2's cpu.weight 12 of 100); None where it cannot be made.
fn cpu_group(node: &Node) -> Option<PathBuf> {
    let name = format!("shmbench-slurm-{}", node.name);
    let (group, file, weight) = match Path::new("/sys/fs/cgroup/cpu/cpu.shares").exists() {
        true => (
            Path::new("/sys/fs/cgroup/cpu").join(name),
            "cpu.shares",
            "128",
        ),
        false => (Path::new("/sys/fs/cgroup").join(name), "cpu.weight", "12"),
    };
    std::fs::create_dir_all(&group).ok()?;
    std::fs::write(group.join(file), weight).ok()?;
    Some(group)
}

/// A node in a few words: `fleet-5 (/dev/shm 8m, CPUs 0, a 62M leftover)`.
fn describe(node: &Node) -> String {
    let mut said = vec![format!("/dev/shm {}", node.shm)];
    if let Some(cpus) = node.cpus {
        said.push(format!("CPUs {cpus}, an eighth of the CPU weight"));
    }
    if let Some(size) = node.leftover {
        said.push(format!("a {size} leftover"));
    }
    format!("{} ({})", node.name, said.join(", "))
}
