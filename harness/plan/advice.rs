//! The doctor's advice: how much /dev/shm a loader needs, whether this environment has it, and the
//! fixes that fit what was detected, with concrete numbers (commands to run, never run here).
//! `orchestrate::verify` proves a recommendation by running the loader under it.

use serde::Serialize;

use super::predict;
use crate::model::config::CellConfig;
use crate::model::knobs::{RuntimeKind, Strategy, TorchProfile};
use crate::model::size::ByteSize;
use crate::sys::detect::{Environment, Place};

/// Headroom added to the predicted peak in recommendations.
const MARGIN: f64 = 1.25;
/// Recommended sizes are rounded up to this.
const ROUND: u64 = 64 << 20;

#[derive(Clone, Debug, Serialize)]
pub struct Diagnosis {
    pub environment: Environment,
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

#[derive(Clone, Debug, Serialize)]
pub struct Fix {
    pub title: String,
    pub commands: Vec<String>,
}

fn docker_size(bytes: u64) -> String {
    format!("{}m", bytes.div_ceil(1 << 20))
}

fn k8s_size(bytes: u64) -> String {
    format!("{}Mi", bytes.div_ceil(1 << 20))
}

/// The largest value in `1..=current` for which `fits(value)`, if any below `current`.
fn largest_below(current: u64, fits: impl Fn(u64) -> bool) -> Option<u64> {
    (1..current).rev().find(|&v| fits(v))
}

/// The size to give a /dev/shm whose peak is `peak_bytes`: 25% above, rounded up to 64 MiB.
pub fn recommend(peak_bytes: u64) -> u64 {
    ((peak_bytes as f64 * MARGIN) as u64).div_ceil(ROUND).max(1) * ROUND
}

/// Where a recommendation made from a peak comes from, for its fix's title.
fn peak_basis(peak_bytes: u64) -> String {
    format!("the peak {} + 25%", ByteSize(peak_bytes))
}

/// The ways to give a job `recommended` bytes of /dev/shm where it runs (`place`), as
/// ready-to-paste snippets; `basis` says where the number comes from ("the peak 60 MiB + 25%"),
/// `cgroup_limit` is the memory limit the tmpfs pages count against.
pub fn size_fixes(
    place: Place,
    recommended: u64,
    basis: &str,
    cgroup_limit: Option<u64>,
) -> Vec<Fix> {
    let mut fixes = Vec::new();
    let size = docker_size(recommended);
    match place {
        Place::Docker => {
            fixes.push(Fix {
                title: format!("Give the container {} of /dev/shm ({basis})", ByteSize(recommended)),
                commands: vec![
                    format!("docker run --shm-size={size} ..."),
                    format!("# docker-compose.yml, under the service:\nshm_size: \"{size}\""),
                ],
            });
            fixes.push(Fix {
                title: "Or share the host's /dev/shm (single-tenant hosts only)".into(),
                commands: vec!["docker run --ipc=host ...".into(), "# docker-compose.yml: ipc: host".into()],
            });
        }
        Place::Kubernetes => {
            let limit_needed = cgroup_limit
                .map(|l| format!(" The pod's memory limit ({}) must also cover it: tmpfs pages count against it.", ByteSize(l)))
                .unwrap_or_default();
            fixes.push(Fix {
                title: format!("Mount a memory-backed emptyDir of {} on /dev/shm.{limit_needed}", ByteSize(recommended)),
                commands: vec![format!(
                    "volumes:\n- name: dshm\n  emptyDir:\n    medium: Memory\n    sizeLimit: {}\n# in the container:\nvolumeMounts:\n- name: dshm\n  mountPath: /dev/shm\n# and resources.limits.memory of at least your usual use + {}",
                    k8s_size(recommended),
                    k8s_size(recommended)
                )],
            });
        }
        Place::OtherContainer => fixes.push(Fix {
            title: format!("Give the container {} of /dev/shm", ByteSize(recommended)),
            commands: vec![format!("podman run --shm-size={size} ...")],
        }),
        Place::Host => fixes.push(Fix {
            title: format!("Resize this host's /dev/shm to {} (now, and at every boot)", ByteSize(recommended)),
            commands: vec![
                format!("sudo mount -o remount,size={size} /dev/shm"),
                format!("echo \"tmpfs /dev/shm tmpfs defaults,size={size} 0 0\" | sudo tee -a /etc/fstab"),
            ],
        }),
    }
    fixes
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
    runtime: RuntimeKind,
    cgroup_limit: Option<u64>,
) -> Sizing {
    let place = match runtime {
        RuntimeKind::Docker => Place::Docker,
        _ => Environment::read().place,
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
        fixes: size_fixes(place, recommended, &basis, cgroup_limit),
    }
}

pub fn diagnose(config: &CellConfig, env: Environment) -> Diagnosis {
    let batch = config.batch_bytes();
    let peak_batches = predict::peak_batches(config);
    let peak_bytes = predict::batches_bytes(config, peak_batches);
    let uses_shm = matches!(
        config.strategy,
        Strategy::FileDescriptor | Strategy::FileSystem
    );
    let peak_reason = if !uses_shm {
        format!("{} segments are not in /dev/shm", config.strategy)
    } else if config.pin_memory {
        format!(
            "pin_memory copies each batch out on arrival: {} (one per worker, when the pin copy keeps up) to {peak_batches} (all outstanding, when it falls behind); sized for the upper bound",
            predict::pin_memory_lower_bound(config)
        )
    } else {
        let outstanding = config.max_outstanding().min(config.total_steps());
        let retained = peak_batches.saturating_sub(outstanding + 1);
        let mut text = format!(
            "{} workers x prefetch {} = {outstanding} outstanding + 1 held by the training step",
            config.workers, config.prefetch
        );
        if outstanding < config.max_outstanding() {
            text.push_str(&format!(
                " (the run has only {} steps)",
                config.total_steps()
            ));
        }
        if retained > 0 {
            text.push_str(&format!(
                " + {retained} kept alive by retaining every {}th batch",
                config.retain_every
            ));
        }
        text
    };
    let capacity = env.shm_free_bytes;
    let fits = peak_bytes <= capacity;
    let prediction = predict::predict(config, capacity);
    let how = match config.torch {
        TorchProfile::Legacy => "SIGBUS (\"DataLoader worker (pid N) is killed by signal: Bus error\")",
        TorchProfile::Modern => "ENOSPC (\"unable to allocate shared memory(shm) for file ...: No space left on device (28)\")",
    };
    let verdict = if fits {
        format!(
            "safe: the peak {} is {:.0}% of the {} free in /dev/shm",
            ByteSize(peak_bytes),
            100.0 * peak_bytes as f64 / capacity.max(1) as f64,
            ByteSize(capacity)
        )
    } else {
        let step = prediction
            .crash_step
            .map(|s| format!("at about step {s}"))
            .unwrap_or_else(|| "late in the run".into());
        format!(
            "crashes {step} with {how}: the peak {} does not fit in the {} free in /dev/shm ({} whole batches of {})",
            ByteSize(peak_bytes),
            ByteSize(capacity),
            capacity / batch.max(1),
            ByteSize(batch)
        )
    };
    let recommended = recommend(peak_bytes);
    let basis = peak_basis(peak_bytes);
    let mut fixes = size_fixes(env.place, recommended, &basis, env.cgroup_memory_limit);
    // Loader changes that fit the /dev/shm there is, without touching the environment.
    if uses_shm && !fits {
        let peak_of = |c: &CellConfig| predict::batches_bytes(c, predict::peak_batches(c));
        let changed = |change: &dyn Fn(&mut CellConfig)| {
            let mut c = config.clone();
            change(&mut c);
            c
        };
        let mut changes = Vec::new();
        let mut try_knob = |name: &str, current: u64, set: &dyn Fn(&mut CellConfig, u64)| {
            let fitting = largest_below(current, |v| peak_of(&changed(&|c| set(c, v))) <= capacity);
            if let Some(v) = fitting {
                let peak = peak_of(&changed(&|c| set(c, v)));
                changes.push(format!("{name}={v} (peak {})", ByteSize(peak)));
            }
        };
        try_knob("prefetch_factor", config.prefetch as u64, &|c, v| {
            c.prefetch = v as u32
        });
        try_knob("num_workers", config.workers as u64, &|c, v| {
            c.workers = v as u32
        });
        try_knob("batch_size", config.batch as u64, &|c, v| {
            c.batch = v as u32
        });
        let pinned = changed(&|c| c.pin_memory = true);
        if !config.pin_memory && peak_of(&pinned) <= capacity {
            changes.push(format!(
                "pin_memory=True (peak about {}: waiting batches move to pinned memory)",
                ByteSize(peak_of(&pinned))
            ));
        }
        if changes.is_empty() {
            changes.push("none fits alone: no smaller prefetch_factor, num_workers or batch_size makes the peak fit; the environment must change".into());
        }
        fixes.push(Fix {
            title: format!(
                "Or change the loader to fit the {} there is (each alone)",
                ByteSize(capacity)
            ),
            commands: changes,
        });
    }
    let mut warnings = Vec::new();
    if env.mem_total_bytes > 0 && peak_bytes > env.mem_total_bytes {
        warnings.push(format!(
            "the peak {} is more than this machine's memory ({}): no /dev/shm size can hold it here (tmpfs pages are RAM); shrink the loader",
            ByteSize(peak_bytes),
            ByteSize(env.mem_total_bytes)
        ));
    }
    warnings.extend([
        "torch.multiprocessing.set_sharing_strategy('file_system') does not help: its segments are named files in /dev/shm, bounded exactly like file_descriptor's.".to_string(),
    ]);
    if let Some(limit) = env.cgroup_memory_limit {
        if peak_bytes > limit / 2 {
            warnings.push(format!(
                "the memory cgroup limit is {}: /dev/shm pages count against it, so the peak {} leaves {} for everything else; a kill by the OOM killer would replace the SIGBUS",
                ByteSize(limit),
                ByteSize(peak_bytes),
                ByteSize(limit.saturating_sub(peak_bytes))
            ));
        }
    }
    if config.strategy == Strategy::FileDescriptor {
        let fds = peak_batches + config.workers as u64 * 4 + 64;
        if fds > env.nofile_soft {
            warnings.push(format!(
                "file_descriptor keeps one fd per batch alive (about {fds} at the peak) but RLIMIT_NOFILE is {}: expect \"Too many open files\"; raise `ulimit -n` or use file_system",
                env.nofile_soft
            ));
        }
    }
    Diagnosis {
        loader: format!(
            "{} workers x prefetch {}, batch {} of {} {} ({}), {}, torch {}{}{}",
            config.workers,
            config.prefetch,
            config.batch,
            config.shape,
            config.dtype,
            ByteSize(batch),
            config.strategy,
            config.torch,
            if config.pin_memory {
                ", pin_memory"
            } else {
                ""
            },
            if config.retain_every > 0 {
                format!(", retains every {}th batch", config.retain_every)
            } else {
                String::new()
            },
        ),
        environment: env,
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
