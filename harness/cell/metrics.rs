//! A cell's metrics from the times its training loop obtained each batch, the same for every
//! loader: steady-state img/s after the warm-up, step-latency quantiles, the first batch, the
//! accelerator's share of the time.

use model::config::CellConfig;
use model::estimate;
use model::record::{Metrics, StepSample};

/// What a loop saw, step by step.
#[derive(Default)]
pub struct Steps {
    /// Seconds since the loader started when each step's batch was obtained.
    pub obtained_s: Vec<f64>,
    /// Seconds of accelerator time each step spent (compute-ms, as measured).
    pub compute_s: Vec<f64>,
    pub series: Vec<StepSample>,
}

/// The step-derived metrics of a loop that completed `done` steps; the caller adds what it
/// metered (peak /dev/shm, memory, wall time).
pub fn from_steps(config: &CellConfig, steps: &Steps, done: u64) -> Metrics {
    let warmup = estimate::warmup_used(config.knobs.warmup_steps, done);
    let steady_latencies_ms: Vec<f64> = steps
        .series
        .iter()
        .skip(warmup as usize)
        .map(|s| s.latency_s * 1000.0)
        .collect();
    let steady_span = match (warmup as usize, steps.obtained_s.last()) {
        (_, None) => 0.0,
        (0, Some(last)) => *last,
        (w, Some(last)) => last - steps.obtained_s[w - 1],
    };
    let accel_util = (config.knobs.compute_ms > 0.0 && steady_span > 0.0).then(|| {
        let busy: f64 = steps.compute_s.iter().skip(warmup as usize).sum();
        (busy / steady_span).min(1.0)
    });
    Metrics {
        steps_done: done,
        img_per_s: estimate::steady_rate(&steps.obtained_s, warmup, config.knobs.batch as u64),
        warmup_steps_used: warmup,
        step_p50_ms: estimate::quantile(&steady_latencies_ms, 0.5),
        step_p99_ms: estimate::quantile(&steady_latencies_ms, 0.99),
        first_batch_ms: steps.obtained_s.first().map(|t| t * 1000.0),
        accel_util,
        ..Metrics::default()
    }
}

/// What the kernel accounted to the cell at its end: CPU time (user + system) and page faults
/// (minor + major) of the cell process and of its reaped children (its workers, or its Python and
/// the workers that Python reaped), and the cell process's own peak resident set.
pub struct Usage {
    pub own_s: f64,
    pub children_s: f64,
    pub faults: u64,
    /// Peak resident set of this process (VmHWM), in bytes.
    pub peak_rss_bytes: u64,
}

impl Usage {
    pub fn now() -> Usage {
        use nix::sys::resource::{getrusage, UsageWho};
        let seconds = |u: &nix::sys::resource::Usage| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        };
        let faults =
            |u: &nix::sys::resource::Usage| (u.minor_page_faults() + u.major_page_faults()) as u64;
        let own = getrusage(UsageWho::RUSAGE_SELF).ok();
        let children = getrusage(UsageWho::RUSAGE_CHILDREN).ok();
        Usage {
            own_s: own.as_ref().map_or(0.0, seconds),
            children_s: children.as_ref().map_or(0.0, seconds),
            faults: own.as_ref().map_or(0, faults) + children.as_ref().map_or(0, faults),
            peak_rss_bytes: own.as_ref().map_or(0, |u| u.max_rss() as u64 * 1024),
        }
    }

    /// CPU seconds of the cell process and its reaped children.
    pub fn cpu_s(&self) -> f64 {
        self.own_s + self.children_s
    }
}
