//! A tune in words: the pick with its img/s and interval, the runner-up, the usual guess beside
//! them, why faster settings were rejected, the frontier of img/s against /dev/shm needed, and
//! the lines to paste.

use std::fmt::Write;

use model::config::CellConfig;
use model::knobs::Strategy;
use model::record::Status;
use model::size::ByteSize;

use super::candidate::{Candidate, Rejection};
use super::screen;
use super::search::Tuned;
use super::setting::Setting;

/// What a tune's loader loads, for its words: `batch 32 of 3x224x224 f32`, or a user's Dataset
/// by its name and first sample.
pub fn loader_words(base: &CellConfig, sample: Option<&str>) -> String {
    let k = &base.knobs;
    match (&k.dataset, sample) {
        (Some(dataset), Some(sample)) => format!(
            "batch {} of {dataset} ({sample}: {} a sample), real torch",
            k.batch,
            ByteSize(base.batch_bytes() / u64::from(k.batch.max(1)))
        ),
        _ => format!(
            "batch {} of {} {}{}",
            k.batch,
            k.shape,
            k.dtype,
            match k.loader {
                model::knobs::Loader::Torch => ", real torch",
                _ => "",
            }
        ),
    }
}

/// Where the budgets came from, when not given (`--shm-size`, `--memory`).
#[derive(Clone, Copy, Default)]
pub struct From<'a> {
    pub shm: Option<&'a str>,
    pub memory: Option<&'a str>,
}

/// The whole text; `loader`: [`loader_words`].
pub fn render(tuned: &Tuned, base: &CellConfig, loader: &str, from: From) -> String {
    let mut out = String::new();
    let width = name_width(&tuned.candidates);
    let _ = writeln!(
        out,
        "tune: the fastest DataLoader settings for {loader} in a /dev/shm of {}{} (a pick must also pass in {})",
        ByteSize(tuned.shm_bytes),
        from.shm.map(|f| format!(", {f}")).unwrap_or_default(),
        ByteSize(tuned.margin_bytes)
    );
    if let (Some(memory), Some(margin)) = (tuned.memory_bytes, tuned.margin_memory_bytes) {
        let how = match from.memory {
            Some(f) => format!(", {f}"),
            None => format!(", each trial's limit ({} at the margin)", ByteSize(margin)),
        };
        let _ = writeln!(
            out,
            "memory:     {}{how}; a setting whose /dev/shm and pinned batches need over {} when training stalls is left out",
            ByteSize(memory),
            ByteSize(margin)
        );
    }
    match tuned.pick.map(|i| &tuned.candidates[i]) {
        Some(pick) => {
            let _ = writeln!(
                out,
                "pick:       {:<width$} {}, needs {} when training stalls",
                pick.setting.name(),
                rate_words(pick),
                ByteSize(pick.needs_bytes)
            );
        }
        None => {
            let _ = writeln!(out, "pick:       none: {}", why_none(tuned));
        }
    }
    if let Some(runner) = tuned.runner_up.map(|i| &tuned.candidates[i]) {
        // Faster by its median only on fewer runs: the race dropped it, the margin reached it.
        let pick = tuned.pick.map(|p| &tuned.candidates[p]);
        let more_runs = pick.is_some_and(|p| p.rates().len() > runner.rates().len());
        // The pick's file_system twin, faster by its median but not surely (the tie rule).
        let named_twin = pick.is_some_and(|p| runner.setting.named_twin_of(&p.setting));
        let fewer = match (runner.median(), pick.and_then(|p| p.median())) {
            (Some(r), Some(p)) if r > p && named_twin => {
                "; above the pick's median, not surely faster: on a tie torch's default strategy is kept"
            }
            (Some(r), Some(p)) if r > p && more_runs => {
                "; above the pick's median on fewer runs: the race ranked it lower when it halved the field"
            }
            _ => "",
        };
        let _ = writeln!(
            out,
            "runner-up:  {:<width$} {}{fewer}",
            runner.setting.name(),
            rate_words(runner)
        );
    }
    if let Some(usual) = tuned.usual {
        let _ = writeln!(out, "{}", usual_words(tuned, &tuned.candidates[usual]));
    }
    rejections(&mut out, tuned);
    frontier(&mut out, tuned);
    if let Some(pick) = tuned.pick.map(|i| &tuned.candidates[i]) {
        paste(&mut out, &pick.setting, base, tuned);
    }
    let _ = write!(
        out,
        "{} trial(s) for {} setting(s){}",
        tuned.trials,
        tuned.candidates.len() - usize::from(tuned.usual_outside_grid),
        if tuned.spent {
            " (--max-time ran out while screening or racing: the pick is the best of what ran)"
        } else {
            ""
        }
    );
    out
}

/// Why nothing was picked: no setting of the grid fits (the least need said, with the budget
/// that would hold it), or none that ran passed every run.
fn why_none(tuned: &Tuned) -> String {
    let grid = |c: &&Candidate| c.rejection != Some(Rejection::OutsideGrid);
    // By the model's needs: the usual guess runs even where they do not fit.
    let fits = |c: &&Candidate| {
        c.needs_bytes <= tuned.margin_bytes
            && (tuned.margin_memory_bytes).is_none_or(|m| c.needs_memory_bytes <= m)
    };
    if tuned.candidates.iter().filter(grid).any(|c| fits(&c)) {
        return "no setting passed every run at the budget and at the margin (see below)".into();
    }
    let in_shm: Vec<&Candidate> = (tuned.candidates.iter().filter(grid))
        .filter(|c| c.needs_bytes <= tuned.margin_bytes)
        .collect();
    if let Some(least) = in_shm.iter().min_by_key(|c| c.needs_memory_bytes) {
        return format!(
            "no setting of the grid fits in {} of memory when training stalls (the least, {}, needs {}): give the job more memory, or a smaller batch",
            ByteSize(tuned.margin_memory_bytes.unwrap_or(0)),
            least.name,
            ByteSize(least.needs_memory_bytes)
        );
    }
    let Some(least) = (tuned.candidates.iter().filter(grid)).min_by_key(|c| c.needs_bytes) else {
        return "the grid is empty".into();
    };
    let margin = tuned.margin_bytes as f64 / tuned.shm_bytes.max(1) as f64;
    let budget = (least.needs_bytes as f64 / margin).ceil() as u64;
    format!(
        "no setting of the grid fits in {} when training stalls (the least, {}, needs {}): a /dev/shm of {} or more would hold it with the margin, or a smaller batch",
        ByteSize(tuned.margin_bytes),
        least.name,
        ByteSize(least.needs_bytes),
        ByteSize(budget.div_ceil(1 << 20) << 20)
    )
}

/// `412 img/s [405, 418] (4 runs)`.
fn rate_words(c: &Candidate) -> String {
    let rates = c.rates();
    let Some(median) = c.median() else {
        return "no passing run".into();
    };
    let interval = analysis::stats::median_ci(&rates)
        .map(|(lo, hi)| format!(" [{lo:.0}, {hi:.0}]"))
        .unwrap_or_default();
    format!("{median:.0} img/s{interval} ({} run(s))", rates.len())
}

/// The usual guess against the pick.
fn usual_words(tuned: &Tuned, c: &Candidate) -> String {
    let name = &c.name;
    let outside = match tuned.usual_outside_grid {
        true => ", outside the grid: run to compare, never picked",
        false => "",
    };
    let fate = match &c.rejection {
        _ if c.runs.is_empty() => "not run: the time ran out first".to_string(),
        Some(failed @ Rejection::Failed { .. }) => ended(failed),
        Some(Rejection::WontFit { needs_bytes, .. }) => {
            let ran = match c.median() {
                Some(rate) => format!("; passed once, {rate:.0} img/s, with no room for a stall"),
                None => String::new(),
            };
            format!("needs {} when training stalls{ran}", ByteSize(*needs_bytes))
        }
        Some(Rejection::WontFitMemory { needs_bytes, .. }) => {
            let ran = match c.median() {
                Some(rate) => format!("; passed once, {rate:.0} img/s"),
                None => String::new(),
            };
            format!(
                "needs at least {} of memory when training stalls{ran}",
                ByteSize(*needs_bytes)
            )
        }
        _ => {
            let ratio = tuned
                .pick
                .and_then(|p| tuned.candidates[p].median())
                .zip(c.median())
                .map(|(pick, usual)| format!(", the pick {:.2}x its img/s", pick / usual))
                .unwrap_or_default();
            format!("{}{ratio}", rate_words(c))
        }
    };
    format!("usual guess {name} (num_workers = the cores{outside}): {fate}")
}

/// The column settings' names are padded to: the longest that ran (a strategy and respawned
/// workers lengthen them), at least 22.
pub(crate) fn name_width(candidates: &[Candidate]) -> usize {
    (candidates.iter())
        .filter(|c| !c.runs.is_empty())
        .map(|c| c.name.len())
        .fold(22, usize::max)
}

/// How a failed run ended: `sigbus at step 2 in 64 MiB`, with its memory limit where it had
/// one.
fn ended(failed: &Rejection) -> String {
    let Rejection::Failed {
        status,
        crash_step,
        shm_bytes,
        memory_bytes,
        ..
    } = failed
    else {
        return String::new();
    };
    let step = crash_step.map(|s| format!(" at step {s}"));
    let memory = memory_bytes.map(|m| format!(" with {} of memory", ByteSize(m)));
    format!(
        "{status}{} in {}{}",
        step.unwrap_or_default(),
        ByteSize(*shm_bytes),
        memory.unwrap_or_default()
    )
}

/// Each setting that failed a run, and a count of the rest by why.
fn rejections(out: &mut String, tuned: &Tuned) {
    let failed: Vec<&Candidate> = (tuned.candidates.iter())
        .filter(|c| matches!(c.rejection, Some(Rejection::Failed { .. })))
        .collect();
    if !failed.is_empty() {
        let width = name_width(&tuned.candidates);
        let _ = writeln!(out, "failed a run (never picked):");
        for c in failed {
            if let Some(failed @ Rejection::Failed { cause, status, .. }) = &c.rejection {
                let cause = cause
                    .as_ref()
                    .map(|c| format!(", cause: {c}"))
                    .unwrap_or_default();
                // An OOM kill is the memory's: what the model counts of it, the floor.
                let needs = match status {
                    Status::Oom => format!(
                        "the model says it needs at least {} of memory",
                        ByteSize(c.needs_memory_bytes)
                    ),
                    _ => format!("the model says it needs {}", ByteSize(c.needs_bytes)),
                };
                let _ = writeln!(
                    out,
                    "  {:<width$} {}{cause} ({needs})",
                    c.setting.name(),
                    ended(failed),
                );
            }
        }
    }
    let count = |f: fn(&Rejection) -> bool| {
        (tuned.candidates.iter())
            .filter(|c| c.rejection.as_ref().is_some_and(f))
            .count()
    };
    let mut parts = Vec::new();
    let shm_room = ByteSize(tuned.margin_bytes).to_string();
    let memory_room =
        (tuned.margin_memory_bytes).map_or(String::new(), |m| ByteSize(m).to_string());
    for (of, room, what) in [
        (false, shm_room, "every worker's prefetch full"),
        (true, memory_room, "their /dev/shm and pinned batches"),
    ] {
        let needs: Vec<u64> = (tuned.candidates.iter())
            .filter_map(|c| match (&c.rejection, of) {
                (Some(Rejection::WontFit { needs_bytes, .. }), false) => Some(*needs_bytes),
                (Some(Rejection::WontFitMemory { needs_bytes, .. }), true) => Some(*needs_bytes),
                _ => None,
            })
            .collect();
        if let (Some(lo), Some(hi)) = (needs.iter().min(), needs.iter().max()) {
            let range = match lo == hi {
                true => ByteSize(*lo).to_string(),
                false => format!("{} to {}", ByteSize(*lo), ByteSize(*hi)),
            };
            let room = if of {
                format!("{room} of memory")
            } else {
                room
            };
            parts.push(format!(
                "{} would not fit in {room} when training stalls ({what}: {range})",
                needs.len(),
            ));
        }
    }
    let screened = count(|r| matches!(r, Rejection::Screened { .. }));
    if screened > 0 {
        parts.push(format!(
            "{screened} screened once and not raced (over {:.0}% slower than the best, or behind {} closer)",
            screen::CLOSE * 100.0,
            screen::FIELD
        ));
    }
    let unexplored = count(|r| matches!(r, Rejection::Unexplored));
    if unexplored > 0 {
        parts.push(format!(
            "{unexplored} not run (one knob at a time from the best never led there)"
        ));
    }
    let slower = count(|r| matches!(r, Rejection::Slower { .. }));
    if slower > 0 {
        parts.push(format!("{slower} raced and slower"));
    }
    let unchecked = count(|r| matches!(r, Rejection::NotChecked));
    if unchecked > 0 {
        parts.push(format!(
            "{unchecked} not checked at the margin (two passed there first)"
        ));
    }
    let unreached = count(|r| matches!(r, Rejection::NotReached));
    if unreached > 0 {
        parts.push(format!("{unreached} not run (the time ran out)"));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "rejected: {}", parts.join("; "));
    }
}

/// The settings no other beats on both img/s and /dev/shm needed, least needed first.
fn frontier(out: &mut String, tuned: &Tuned) {
    let frontier = tuned.frontier();
    if frontier.is_empty() {
        return;
    }
    // The runs beside each median: a setting the screen ran once may top one the race ran
    // three times by chance.
    let _ = writeln!(out, "frontier (more img/s only for more /dev/shm):");
    let _ = writeln!(
        out,
        "  {:>10}  {:>8}  {:>4}  setting",
        "needs", "img/s", "runs"
    );
    for i in frontier {
        let c = &tuned.candidates[i];
        let _ = writeln!(
            out,
            "  {:>10}  {:>8.0}  {:>4}  {}",
            ByteSize(c.needs_bytes).to_string(),
            c.median().unwrap_or(0.0),
            c.rates().len(),
            c.setting.name()
        );
    }
}

/// The lines to paste: the sharing strategy, the DataLoader's arguments and the /dev/shm to
/// give it.
fn paste(out: &mut String, s: &Setting, base: &CellConfig, tuned: &Tuned) {
    let python = |b: bool| if b { "True" } else { "False" };
    let mib = tuned.shm_bytes.div_ceil(1 << 20);
    let _ = writeln!(out, "paste:");
    // Process-wide, and torch's default is file_descriptor: said only when it is not.
    if s.strategy != Strategy::FileDescriptor {
        let _ = writeln!(
            out,
            "  torch.multiprocessing.set_sharing_strategy(\"{}\")",
            s.strategy
        );
    }
    let _ = writeln!(
        out,
        "  DataLoader(dataset, batch_size={}, num_workers={}, prefetch_factor={}, pin_memory={}, persistent_workers={}, multiprocessing_context=\"{}\")",
        base.knobs.batch,
        s.workers,
        s.prefetch,
        python(s.pin_memory),
        python(s.persistent_workers),
        s.start_method
    );
    // The memory limit the trials had, when given: the job needs it too.
    let memory = (base.knobs.memory).map(|m| m.bytes().div_ceil(1 << 20));
    let (docker, k8s) = match memory {
        Some(m) => (
            format!(" --memory={m}m"),
            format!("; resources.limits.memory: {m}Mi"),
        ),
        None => (String::new(), String::new()),
    };
    let _ = writeln!(
        out,
        "  docker run --shm-size={mib}m{docker} ...   # Kubernetes: emptyDir {{medium: Memory, sizeLimit: {mib}Mi}} at /dev/shm{k8s}"
    );
}
