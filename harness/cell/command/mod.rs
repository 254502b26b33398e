//! A watched command (`shmbench watch -- CMD`) as a cell: the cell starts the command in its own
//! isolation (the runtime's sized tmpfs, memory cgroup or container), relays its output lines to
//! the harness, counts steps by `--step-regex`, samples /dev/shm and who holds it
//! ([`sampler`]), lists what it left in /dev/shm, and classifies its end ([`ending`]) into the
//! same record every cell prints.
//!
//! The cell is the job's subreaper: processes the command orphans are re-parented to it, so
//! their ends are evidence too, and none outlives the cell.

pub mod ending;
pub mod lines;
pub mod sampler;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;

use super::metrics::Usage;
use super::protocol::{Output, Progress, Stream};
use explain::tracer::{self, Traced};
use explain::Exit;
use model::config::CellConfig;
use model::knobs::RuntimeKind;
use model::record::{CellRecord, Failure, Metrics, Status};
use model::watch::{Leftover, WatchFindings, WatchSettings};
use sys::holders::FileId;
use sys::lease_removal;
use sys::lease_removal::Whose;
use sys::{cgroup, proc_tree, process, shm};

/// Output lines kept as evidence of how the job failed.
const EVIDENCE_LINES: usize = 20;

/// Bytes read from the command at a time: the most one relayed chunk holds.
const CHUNK: usize = 64 * 1024;

/// Relays one of the command's streams as it writes it, chunk by chunk and byte for byte,
/// counting steps and keeping evidence on the lines it completes ([`lines`]).
fn relay(
    mut stream: impl Read + Send + 'static,
    which: Stream,
    steps: Option<Regex>,
    shared: &Arc<sampler::Shared>,
    evidence: &Arc<Mutex<Vec<String>>>,
) -> std::thread::JoinHandle<()> {
    let (shared, evidence) = (shared.clone(), evidence.clone());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        let mut lines = lines::Lines::default();
        let see = |text: &str| {
            if let Some(found) = steps.as_ref().and_then(|re| re.captures(text)) {
                let numbered = found.get(1).and_then(|m| m.as_str().parse::<u64>().ok());
                let step = match numbered {
                    Some(n) => {
                        shared.step.fetch_max(n, Ordering::Relaxed);
                        n
                    }
                    None => shared.step.fetch_add(1, Ordering::Relaxed) + 1,
                };
                eprintln!("{}", Progress { step, total: 0 }.line());
            }
            if ending::is_evidence(text) {
                let mut evidence = evidence.lock().unwrap_or_else(|e| e.into_inner());
                if evidence.len() < EVIDENCE_LINES {
                    evidence.push(text.to_string());
                }
            }
        };
        loop {
            let n = match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let chunk = &buf[..n];
            lines.push(chunk).iter().for_each(|l| see(l));
            let output = Output {
                stream: which,
                bytes: chunk.to_vec(),
            };
            eprintln!("{}", output.line());
        }
        if let Some(last) = lines.finish() {
            see(&last);
        }
    })
}

/// Follows the command (`explain::tracer`: every fault caught at its delivery, unless `trace` is
/// off or refused) and reaps every child of the cell, the orphans the command leaves included,
/// until none is left: the command's own end goes on `done`, every other process's end (a
/// traced grandchild's too) into the list returned.
fn follow(tracer: tracer::Tracer, trace: bool, done: mpsc::Sender<Exit>) -> Following {
    std::thread::spawn(move || {
        let mut others = Vec::new();
        let traced = tracer.follow(trace, |pid, exit, command| {
            if command {
                let _ = done.send(exit);
            } else {
                others.push((pid, exit));
            }
        });
        (others, traced)
    })
}

/// Samples /dev/shm and the job's tree (below this process) until `shared.stop`.
fn sample(
    settings: &WatchSettings,
    shared: &Arc<sampler::Shared>,
    base_bytes: u64,
) -> std::thread::JoinHandle<sampler::Sampled> {
    let (shared, root) = (shared.clone(), std::process::id());
    let interval = Duration::from_millis(settings.interval_ms);
    std::thread::spawn(move || sampler::run(root, interval, shared, base_bytes))
}

/// Spawns `cmd` seized by its tracer (`follow`), which sends the command's end on `done`.
fn spawn_followed(
    cmd: &mut Command,
    trace: bool,
    done: mpsc::Sender<Exit>,
) -> std::io::Result<(std::process::Child, Following)> {
    let (tracer, child_ends) = tracer::prepare(cmd)?;
    let (returned, spawn_returned) = mpsc::channel();
    let following = follow(tracer.reap_after(spawn_returned), trace, done);
    let spawned = cmd.spawn();
    // The tracer waits on the command's pid until these close (a spawn that failed), and
    // reaps only once the spawn has returned (a failed exec's child is the spawn's to reap).
    drop(child_ends);
    drop(returned);
    spawned.map(|child| (child, following))
}

/// The thread following the job: the ends of its processes other than the command, and what
/// tracing saw.
type Following = std::thread::JoinHandle<(Vec<(u32, Exit)>, Traced)>;

/// How long the processes the command leaves may take to end by themselves (Python's resource
/// tracker removes the segments its program leaked once it sees the program gone).
const GRACE: Duration = Duration::from_secs(2);

/// Lets the processes left below the cell end within [`GRACE`], then SIGKILLs them until none
/// is left (a job's daemons included).
fn end_tree() {
    let me = std::process::id();
    let waited = Instant::now();
    while waited.elapsed() < GRACE && !proc_tree::descendants(me).is_empty() {
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..50 {
        let left = proc_tree::descendants(me);
        if left.is_empty() {
            return;
        }
        for pid in left {
            // SAFETY: plain syscall; these are our descendants, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Relays the command's stdout and stderr, byte for byte, counting steps in both.
fn relay_both(
    child: &mut std::process::Child,
    steps: Option<Regex>,
    shared: &Arc<sampler::Shared>,
    evidence: &Arc<Mutex<Vec<String>>>,
) -> [std::thread::JoinHandle<()>; 2] {
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    [
        relay(stdout, Stream::Stdout, steps.clone(), shared, evidence),
        relay(stderr, Stream::Stderr, steps, shared, evidence),
    ]
}

/// Runs the watched command of `config` and returns its record.
pub fn run_cell(config: &CellConfig) -> CellRecord {
    let fail = |message: String| CellRecord::failed_to_run(config.clone(), Status::Error, message);
    let Some(settings) = &config.watch else {
        return fail("a command cell without a command".into());
    };
    let steps = match settings.step_regex.as_deref().map(Regex::new).transpose() {
        Ok(re) => re,
        Err(e) => return fail(format!("--step-regex: {e}")),
    };
    // /dev/shm before the job: what it adds is measured from here.
    let (capacity, base_bytes) = shm::usage();
    let files_at_start = proc_tree::shm_files();
    let oom_kills_at_start = cgroup::oom_kills();
    // SAFETY: plain prctl on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let program = &settings.command[0];
    let mut cmd = Command::new(program);
    cmd.args(&settings.command[1..]);
    process::piped_and_tied(&mut cmd);
    let shared = Arc::new(sampler::Shared::default());
    let sampling = sample(settings, &shared, base_bytes);
    let start = Instant::now();
    let (done_tx, done_rx) = mpsc::channel();
    let following = spawn_followed(&mut cmd, config.knobs.trace, done_tx);
    let (mut child, following) = match following {
        Ok(c) => c,
        Err(e) => {
            shared.stop.store(true, Ordering::Release);
            let _ = sampling.join();
            return fail(format!("cannot start '{program}': {e}"));
        }
    };
    let pid = child.id();
    let evidence = Arc::new(Mutex::new(Vec::new()));
    let relays = relay_both(&mut child, steps, &shared, &evidence);
    let exit = done_rx
        .recv_timeout(Duration::from_secs_f64(config.knobs.timeout_s))
        .ok();
    let wall_s = start.elapsed().as_secs_f64();
    shared.stop.store(true, Ordering::Release);
    let sampled = sampling.join().unwrap_or_default();
    end_tree();
    let (orphans, traced) = following.join().unwrap_or_default();
    for r in relays {
        let _ = r.join();
    }
    // Only runtime host shares this machine's /dev/shm; a namespace or a container has its own.
    let private_shm = config.knobs.runtime != RuntimeKind::Host;
    let leftovers = leftovers(&files_at_start, &sampled.seen, private_shm, settings);
    let evidence = std::mem::take(&mut *evidence.lock().unwrap_or_else(|e| e.into_inner()));
    let verdict = ending::classify(&ending::Ending {
        exit,
        pid,
        orphans: &orphans,
        evidence: &evidence,
        timeout_s: config.knobs.timeout_s,
        oom_kills: (oom_kills_at_start, cgroup::oom_kills()),
        traced: traced.untraced.is_none(),
    });
    let steps_done = shared.step.load(Ordering::Relaxed);
    let usage = Usage::now();
    let last_used = sampled.samples.last().map_or(0, |s| s.shm_used_bytes);
    let failure = (!verdict.status.is_pass()).then(|| Failure {
        crash_step: steps_done + 1,
        signal: verdict.signal,
        pid: verdict.pid,
        shm_used_bytes: last_used,
    });
    let peak_shm_bytes = sampled.peak_bytes;
    let explanation = ending::explain(
        &verdict,
        exit.map(|x| (pid, x)),
        &orphans,
        &evidence,
        &traced,
        (oom_kills_at_start, cgroup::oom_kills()),
        (capacity, peak_shm_bytes),
    );
    let report = watch_report(sampled, pid, leftovers, private_shm, traced);
    CellRecord {
        config: config.clone(),
        status: verdict.status,
        message: verdict.message,
        failure,
        metrics: Metrics {
            steps_done,
            peak_shm_bytes,
            peak_rss_bytes: usage.peak_rss_bytes,
            wall_s,
            cpu_s: Some(usage.children_s),
            page_faults: Some(usage.faults),
            ..Metrics::default()
        },
        shm_seen_bytes: capacity,
        series: Vec::new(),
        torch_version: None,
        exit_code: exit.map(Exit::code),
        watch: Some(report),
        explanation,
        pod: None,
        vm: None,
        slurm: None,
    }
}

/// What watching saw, from the sampler's findings and the command's leftovers.
fn watch_report(
    sampled: sampler::Sampled,
    pid: u32,
    leftovers: Vec<Leftover>,
    private_shm: bool,
    traced: Traced,
) -> WatchFindings {
    WatchFindings {
        command_pid: pid,
        peak_t_s: sampled.peak_t_s,
        holders_at_peak: sampled.holders,
        holders_t_s: sampled.holders_t_s,
        holders_shm_bytes: sampled.holders_shm_bytes,
        holders_walk_s: sampled.holders_walk_s,
        cgroup_shmem_bytes: sampled.holders_cgroup_shmem,
        max_processes: sampled.max_processes,
        max_fds: sampled.max_fds,
        cgroup_limit: cgroup::memory_limit(),
        leftovers,
        private_shm,
        traced,
        sampler_cpu_s: sampled.cpu_s,
        sample_count: sampled.count,
        base_bytes: sampled.base_bytes,
        samples: sampled.samples,
    }
}

/// Files in /dev/shm now that were not there at the start, by identity (device, inode), not by
/// name. `--sweep` removes those proven unheld now (`sys::lease_removal`: a process outside the
/// job that still holds one keeps it, whatever its pid namespace): all such files of a private
/// /dev/shm, and from a shared one only those a process of the job was seen holding (another
/// program may have made the others meanwhile).
fn leftovers(
    at_start: &BTreeMap<FileId, proc_tree::ShmFile>,
    seen: &BTreeSet<FileId>,
    private_shm: bool,
    settings: &WatchSettings,
) -> Vec<Leftover> {
    let new: Vec<proc_tree::ShmFile> = proc_tree::shm_files()
        .into_values()
        .filter(|f| !at_start.contains_key(&f.id))
        .collect();
    let doomed: Vec<_> = new
        .iter()
        .filter(|f| settings.sweep && (private_shm || seen.contains(&f.id)))
        .map(|f| (f.path.clone(), f.id))
        .collect();
    // The cell is the init of its own pid namespace, so its /proc cannot show a process outside
    // the job that holds one of these: the kernel's lease can, in any namespace.
    let removed = lease_removal::remove_proven_unheld(&doomed, Whose::OwnRun).removed;
    new.into_iter()
        .map(|f| Leftover {
            name: f.path.to_string_lossy().into_owned(),
            bytes: f.bytes,
            seen_held: seen.contains(&f.id),
            removed: removed.contains(&f.path),
        })
        .collect()
}
