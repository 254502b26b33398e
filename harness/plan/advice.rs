//! The doctor's advice: how much /dev/shm a loader needs, whether this environment has it, and the
//! fixes that fit what was detected, with concrete numbers (commands to run, never run here).
//! `orchestrate::verify` proves a recommendation by running the loader under it.

use serde::Serialize;

use super::fixes::{size_fixes, Fix, Target};
use super::job::{self, JobPeak};
use super::loader_fixes;
use super::peak_words::{job_reason, loader_reason, start_method_note};
use super::predict;
use model::config::CellConfig;
use model::knobs::{EngineKind, RuntimeKind, Strategy, TorchProfile};
use model::size::ByteSize;
use sys::detect::Environment;

/// Headroom added to the predicted peak in recommendations.
const MARGIN: f64 = 1.25;
/// Recommended sizes are rounded up to this.
const ROUND: u64 = 64 << 20;

#[derive(Clone, Debug, Serialize)]
pub struct Diagnosis {
    pub environment: Environment,
    /// Where the fixes are for (detected, or `--platform`).
    pub target: Target,
    /// The ranks and loaders the peak is for.
    pub job: JobPeak,
    /// The other limits the job meets: the memory cgroup's, RLIMIT_NOFILE.
    pub limits: Vec<String>,
    pub loader: String,
    pub batch_bytes: u64,
    pub peak_batches: u64,
    pub peak_bytes: u64,
    /// How the peak is made up, in words.
    pub peak_reason: String,
    pub fits: bool,
    /// When it does not fit: the step it crashes at (about) and how.
    pub verdict: String,
    pub recommended_bytes: u64,
    pub fixes: Vec<Fix>,
    pub warnings: Vec<String>,
}

/// The size to give a /dev/shm whose peak is `peak_bytes`: 25% above, rounded up to 64 MiB.
pub fn recommend(peak_bytes: u64) -> u64 {
    round_up((peak_bytes as f64 * MARGIN) as u64)
}

/// `bytes` rounded up to a whole [`ROUND`], at least one.
fn round_up(bytes: u64) -> u64 {
    bytes.div_ceil(ROUND).max(1) * ROUND
}

/// Where a recommendation made from a peak comes from, for its fix's title.
fn peak_basis(peak_bytes: u64) -> String {
    format!("the peak {} + 25%", ByteSize(peak_bytes))
}

/// The size to give a predicted job, and where it comes from: the peak + 25%, or the peak + one
/// batch per loader and rank where that is more (a small prefetch window, where a refill's batch
/// allocated before the last step's is freed is more than a quarter of the peak).
pub fn recommend_job(job: &JobPeak, pin_memory: bool) -> (u64, String) {
    let peak = job.node_bytes;
    let handover = job.handover_bytes(pin_memory);
    if peak.saturating_add(handover) as f64 > peak as f64 * MARGIN {
        let size = round_up(peak.saturating_add(handover));
        let basis = format!(
            "the peak {} + {} for the batches a refill can overlap",
            ByteSize(peak),
            ByteSize(handover)
        );
        (size, basis)
    } else {
        (recommend(peak), peak_basis(peak))
    }
}

/// What a watched job needs: its measured peak with the margin, and the ways to give it that
/// where it runs (in Docker when it ran there, else where shmbench runs).
#[derive(Clone, Debug, Serialize)]
pub struct Sizing {
    pub peak_bytes: u64,
    /// The job died of a full /dev/shm of this size: its need is above it, unmeasured, and the
    /// recommendation is the next size to try (twice it, with the margin).
    pub filled: Option<u64>,
    pub recommended_bytes: u64,
    pub fixes: Vec<Fix>,
}

pub fn for_watched(
    peak_bytes: u64,
    filled: Option<u64>,
    (runtime, engine): (RuntimeKind, EngineKind),
    cgroup_limit: Option<u64>,
) -> Sizing {
    // A container's fix in its own engine's words (`podman run --shm-size=...`).
    let target = match (runtime, engine) {
        (RuntimeKind::Docker, EngineKind::Podman) => Target::Podman,
        (RuntimeKind::Docker, EngineKind::Docker) => Target::Docker,
        _ => Target::from(Environment::read().place),
    };
    let (recommended, basis) = match filled {
        Some(capacity) => (
            recommend(capacity * 2),
            format!("twice the {} it filled + 25%", ByteSize(capacity)),
        ),
        None => (recommend(peak_bytes), peak_basis(peak_bytes)),
    };
    Sizing {
        peak_bytes,
        filled,
        recommended_bytes: recommended,
        fixes: size_fixes(target, recommended, &basis, cgroup_limit),
    }
}

/// The diagnosis of `config`'s job (`job`: its ranks and loaders, from `plan::job`) in `env`,
/// with the fixes for `target` (None: where this runs).
pub fn diagnose(
    config: &CellConfig,
    job: &JobPeak,
    env: Environment,
    target: Option<Target>,
) -> Diagnosis {
    let single = job.ranks == 1 && job.loaders.len() == 1 && job.consumers.is_empty();
    // One loader alone: the knobs' own cell (the model's crash step is for it alone).
    let config = &match single {
        true => job::loader_config(config, &job.loaders[0].spec),
        false => config.clone(),
    };
    let batch = config.batch_bytes();
    let peak_batches: u64 =
        job.loaders.iter().map(|l| l.peak_batches).sum::<u64>() * job.ranks as u64;
    let peak_bytes = job.node_bytes;
    let uses_shm = matches!(
        config.knobs.strategy,
        Strategy::FileDescriptor | Strategy::FileSystem
    );
    let peak_reason = if single {
        loader_reason(config, peak_batches)
    } else {
        job_reason(config, job)
    };
    let capacity = env.shm_free_bytes;
    let fits = peak_bytes <= capacity;
    let prediction = predict::predict(config, capacity);
    let verdict = verdict(config, single, peak_bytes, capacity, prediction.crash_step);
    let (recommended, basis) = recommend_job(job, config.knobs.pin_memory);
    let target = target.unwrap_or(Target::from(env.place));
    let mut fixes = size_fixes(target, recommended, &basis, env.cgroup_memory_limit);
    // Loader changes that fit the /dev/shm there is, without touching the environment (for one
    // loader; a job's loaders share the room, and which to shrink is the user's call).
    if uses_shm && !fits && single {
        fixes.push(loader_fixes::loader_changes(config, capacity));
    }
    let mut warnings = Vec::new();
    if env.mem_total_bytes > 0 && peak_bytes > env.mem_total_bytes {
        warnings.push(format!(
            "the peak {} is more than this machine's memory ({}): no /dev/shm size can hold it here (tmpfs pages are RAM); shrink the loader",
            ByteSize(peak_bytes),
            ByteSize(env.mem_total_bytes)
        ));
    }
    warnings.extend(start_method_note(config));
    warnings.extend(super::runtime_notes::notes(&env));
    warnings.extend([
        "torch.multiprocessing.set_sharing_strategy('file_system') does not help: its segments are named files in /dev/shm, bounded exactly like file_descriptor's.".to_string(),
    ]);
    let limits = limits(config, job, &env, peak_bytes);
    let loader = describe_loader(config, job, single);
    Diagnosis {
        loader,
        environment: env,
        target,
        job: job.clone(),
        limits,
        batch_bytes: batch,
        peak_batches,
        peak_bytes,
        peak_reason,
        fits,
        verdict,
        recommended_bytes: recommended,
        fixes,
        warnings,
    }
}

/// The diagnosis's one line: safe with its share of /dev/shm, or how and when it crashes.
fn verdict(
    config: &CellConfig,
    single: bool,
    peak_bytes: u64,
    capacity: u64,
    crash_step: Option<u64>,
) -> String {
    let batch = config.batch_bytes();
    let how = match config.knobs.torch {
        TorchProfile::Legacy => "SIGBUS (\"DataLoader worker (pid N) is killed by signal: Bus error\")",
        TorchProfile::Modern => "ENOSPC (\"unable to allocate shared memory(shm) for file ...: No space left on device (28)\")",
    };
    if peak_bytes <= capacity {
        format!(
            "safe: the peak {} is {:.0}% of the {} free in /dev/shm",
            ByteSize(peak_bytes),
            100.0 * peak_bytes as f64 / capacity.max(1) as f64,
            ByteSize(capacity)
        )
    } else {
        let step = match (single, crash_step) {
            (true, Some(s)) => format!("at about step {s}"),
            (true, None) => "late in the run".into(),
            (false, _) => "as soon as the loaders' outstanding batches meet".into(),
        };
        format!(
            "crashes {step} with {how}: the peak {} does not fit in the {} free in /dev/shm ({} whole batches of {})",
            ByteSize(peak_bytes),
            ByteSize(capacity),
            capacity / batch.max(1),
            ByteSize(batch)
        )
    }
}

/// The limits beside /dev/shm's size: the memory cgroup its pages count against, and the file
/// descriptors file_descriptor keeps.
fn limits(config: &CellConfig, job: &JobPeak, env: &Environment, peak_bytes: u64) -> Vec<String> {
    let mut limits = Vec::new();
    match env.cgroup_memory_limit {
        Some(limit) if peak_bytes > limit / 2 => limits.push(format!(
            "memory: the cgroup limit is {}: /dev/shm pages count against it, so the peak {} leaves {} for everything else; a kill by the OOM killer would replace the SIGBUS: raise the limit by at least {}",
            ByteSize(limit),
            ByteSize(peak_bytes),
            ByteSize(limit.saturating_sub(peak_bytes)),
            ByteSize(peak_bytes)
        )),
        Some(limit) => limits.push(format!(
            "memory: the cgroup limit {} covers the peak {} of /dev/shm pages with {} to spare",
            ByteSize(limit),
            ByteSize(peak_bytes),
            ByteSize(limit - peak_bytes)
        )),
        None => limits.push(
            "memory: no cgroup limit here; where the job has one (a container, a pod), /dev/shm pages count against it".into(),
        ),
    }
    let fds = job.rank_fds;
    let nofile = env.nofile_soft;
    limits.push(match (config.knobs.strategy, fds > nofile) {
        (Strategy::FileDescriptor, true) => format!(
            "file descriptors: file_descriptor keeps one fd per batch alive: each rank's main holds about {fds} at the peak but RLIMIT_NOFILE is {nofile}: expect \"Too many open files\"; raise it to {} (`ulimit -n {}`, `docker run --ulimit nofile={}:{}`) or use file_system",
            fds * 2, fds * 2, fds * 2, fds * 2
        ),
        (Strategy::FileDescriptor, false) => format!(
            "file descriptors: each rank's main holds about {fds} at the peak (one per batch alive), within RLIMIT_NOFILE {nofile}"
        ),
        _ => format!(
            "file descriptors: {} keeps no fd per batch (about {fds} per rank), within RLIMIT_NOFILE {nofile}",
            config.knobs.strategy
        ),
    });
    if let Some(line) = map_limit(job.rank_maps, env.max_map_count) {
        limits.push(line);
    }
    limits
}

/// The mappings each rank's main holds at the peak against vm.max_map_count: past it, mapping
/// the next batch fails with torch's "unable to mmap ... Cannot allocate memory (12)".
fn map_limit(maps: u64, max: Option<u64>) -> Option<String> {
    let max = max?;
    Some(match maps > max {
        true => format!(
            "memory mappings: each rank's main maps one per batch alive, about {maps} at the peak, over vm.max_map_count {max}: expect \"unable to mmap ... Cannot allocate memory (12)\"; raise it (`sysctl -w vm.max_map_count={}`, a node setting) or keep fewer batches alive",
            maps.next_power_of_two().max(max * 2)
        ),
        false => format!(
            "memory mappings: each rank's main holds about {maps} at the peak (one per batch alive), within vm.max_map_count {max}"
        ),
    })
}

/// The loader (or the job's loaders) as the diagnosis names it.
fn describe_loader(config: &CellConfig, job: &JobPeak, single: bool) -> String {
    let batch = config.batch_bytes();
    let loaders = match single {
        true => String::new(),
        false => format!(
            "; job: {} rank(s) x {}",
            job.ranks,
            job.loaders
                .iter()
                .map(|l| l.spec.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    // A job's loaders name their own workers, prefetch and batch; the knobs' would mislead.
    let shape = match single {
        true => format!(
            "{} workers x prefetch {}, batch {} of {} {} ({})",
            config.knobs.workers,
            config.knobs.prefetch,
            config.knobs.batch,
            config.knobs.shape,
            config.knobs.dtype,
            ByteSize(batch)
        ),
        false => format!("samples of {} {}", config.knobs.shape, config.knobs.dtype),
    };
    format!(
        "{shape}, {}, torch {}{}{}",
        config.knobs.strategy,
        config.knobs.torch,
        if config.knobs.pin_memory {
            ", pin_memory"
        } else {
            ""
        },
        if config.knobs.retain_every > 0 {
            format!(", retains every {}th batch", config.knobs.retain_every)
        } else {
            String::new()
        },
    ) + &loaders
}

#[cfg(test)]
mod tests {
    use super::map_limit;

    #[test]
    fn mappings_past_the_limit_name_torch_s_error_and_the_sysctl() {
        let over = map_limit(70_530, Some(65_530)).unwrap();
        assert!(
            over.contains("Cannot allocate memory (12)")
                && over.contains("vm.max_map_count=131072"),
            "{over}"
        );
        assert!(map_limit(547, Some(65_530))
            .unwrap()
            .contains("within vm.max_map_count 65530"));
        assert_eq!(map_limit(547, None), None);
    }
}
