//! Command lines in any text file (shell scripts, CI workflows, Makefiles, READMEs' code):
//! `docker run`, `podman run`, `nerdctl run` of an ML image without `--shm-size` or
//! `--ipc=host` (`--ipc=private` and `shareable` keep 64 MiB, `none` has no /dev/shm); and
//! Slurm batch scripts, whose `#SBATCH --mem` (but `--mem=0`, the whole node) is held to the
//! /dev/shm the job's loaders need on every rank it runs. A line continued with `\` is read
//! whole; `shmbench-ignore: RULE` in a comment on the line or the one before silences it.

use regex::Regex;
use std::sync::OnceLock;

use super::demand::{in_process_framework, looks_ml, ranks_in, Loaders, Ranks};
use super::rules::{self, Finding, Rule};
use model::size::ByteSize;
use plan::fixes::{size_fixes, Target};

/// The marker of an ignore comment.
pub const IGNORE_MARK: &str = "shmbench-ignore:";

/// Logical lines: continued lines joined, each with the line it starts on (1-based).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let (start, mut joined) = open.take().unwrap_or((n + 1, String::new()));
        let trimmed = line.trim_end();
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                joined.push_str(part);
                joined.push(' ');
                open = Some((start, joined));
            }
            None => {
                joined.push_str(trimmed);
                out.push((start, joined));
            }
        }
    }
    out.extend(open);
    out
}

/// The rules an ignore comment names on `line` or the line before it.
fn ignored_near(lines: &[&str], line: usize) -> Vec<&'static Rule> {
    [line.checked_sub(2), line.checked_sub(1)]
        .into_iter()
        .flatten()
        .filter_map(|i| lines.get(i))
        .filter_map(|l| l.split_once(IGNORE_MARK).map(|(_, list)| list))
        .flat_map(|list| rules::ignored(list.split_whitespace().next().unwrap_or_default()).0)
        .collect()
}

fn docker_run() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\b(docker|podman|nerdctl)\s+(container\s+)?run\b").expect("valid")
    })
}

/// A Docker size (`--shm-size=2g`, `--shm-size 512m`) in bytes: `ByteSize` reads Docker's units.
fn docker_size(text: &str) -> Option<u64> {
    ByteSize::parse(text).ok().map(ByteSize::bytes)
}

/// The value of `--flag VALUE` or `--flag=VALUE` in a command's words.
fn flag<'a>(words: &[&'a str], name: &str) -> Option<&'a str> {
    words.iter().enumerate().find_map(|(i, w)| {
        if let Some(v) = w.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return Some(v);
        }
        (*w == name).then(|| words.get(i + 1).copied()).flatten()
    })
}

pub fn check(text: &str, file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let raw: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (line, command) in logical_lines(text) {
        let Some(at) = docker_run().find(&command) else {
            continue;
        };
        let rest = &command[at.start()..];
        // The run's own words, up to the end of its command (a pipe or `&&` ends it).
        let rest = rest.split(['|', ';', '&']).next().unwrap_or(rest);
        let ignored = ignored_near(&raw, line);
        let mut run = Vec::new();
        check_run(rest, file, line, loaders, &mut run);
        found.extend(
            run.into_iter()
                .filter(|f| !ignored.iter().any(|r| r.id == f.rule.id)),
        );
    }
    check_sbatch(text, &raw, file, loaders, &mut found);
    out.extend(found);
}

/// The ranks a `docker run` starts: its launcher's, else one per GPU of `--gpus N`.
fn run_ranks(words: &[&str], rest: &str) -> Option<Ranks> {
    ranks_in(rest).or_else(|| {
        let count = flag(words, "--gpus")?.parse::<u64>().ok()?;
        Ranks::new(count, format!("--gpus {count}"))
    })
}

/// One `docker run` line: its /dev/shm (`--shm-size`, `--ipc`) against its need.
fn check_run(rest: &str, file: &str, line: usize, loaders: &Loaders, found: &mut Vec<Finding>) {
    let words: Vec<&str> = rest
        .split_whitespace()
        .map(|w| w.trim_matches(['"', '\'']))
        .collect();
    let ml = (looks_ml(rest) || flag(&words, "--gpus").is_some() || loaders.given)
        && !in_process_framework(rest);
    let need = loaders.demand(rest, run_ranks(&words, rest));
    // The fix in the line's own engine's words (its flags are Docker's).
    let engine = words.first().copied().unwrap_or("docker");
    let fix = need
        .fix(Target::Docker, None)
        .map(|f| f.replace("docker run", &format!("{engine} run")));
    let mut push = |rule: &'static Rule, message: String, fix: Option<String>| {
        found.push(Finding {
            rule,
            file: file.into(),
            line,
            object: words
                .first()
                .map(|w| format!("{w} run"))
                .unwrap_or_default(),
            container: None,
            message,
            fix,
        })
    };
    let ipc = flag(&words, "--ipc");
    let shm = flag(&words, "--shm-size");
    let wanting = ml && !need.nothing();
    match ipc {
        Some("host") => push(&rules::HOST_IPC, "--ipc=host: the host's /dev/shm, shared with every process that does the same; --shm-size no longer applies".into(), None),
        Some("none") if wanting => push(&rules::DOCKER_RUN_NO_SHM, format!("--ipc=none: no /dev/shm at all (--shm-size does not apply); it needs {}", need.words()), fix.clone()),
        // Another container's IPC namespace: its /dev/shm, judged where it is made.
        Some(other) if other.contains(':') => return,
        Some("none") => {}
        // Its own namespace (`private`, `shareable`, the default): --shm-size or 64 MiB.
        _ if wanting && shm.is_none() => {
            let has = match ipc {
                Some(ipc) => format!("--ipc={ipc} and no --shm-size"),
                None => "no --shm-size or --ipc".into(),
            };
            push(&rules::DOCKER_RUN_NO_SHM, format!("{has}: {}; it needs {}", default_shm(words.first().copied()), need.words()), fix.clone());
        }
        _ => {}
    }
    if matches!(ipc, Some("host" | "none")) {
        return;
    }
    if let Some(size) = shm
        .and_then(docker_size)
        .filter(|s| need.known && *s < need.peak)
    {
        push(
            &rules::BELOW_NEED,
            format!(
                "--shm-size {} is below the peak its loaders reach: it needs {}",
                ByteSize(size),
                need.words()
            ),
            fix,
        );
    }
}

/// The /dev/shm an engine gives a container of its own IPC namespace, as measured
/// (docs/RUNTIMES.md): Podman's `size=64000k`, rootless or not, is not Docker's 64 MiB.
fn default_shm(engine: Option<&str>) -> String {
    match engine {
        Some("podman") => format!(
            "Podman's {} (size=64000k, rootless too)",
            ByteSize(plan::runtime_notes::PODMAN_DEFAULT_SHM)
        ),
        _ => "the engine's 64 MiB".to_string(),
    }
}

/// A Slurm size (`--mem=64G`, `--mem=8000`: MiB when it has no unit) in bytes.
fn slurm_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let unitless = t.ends_with(|c: char| c.is_ascii_digit());
    docker_size(&if unitless {
        format!("{t}m")
    } else {
        t.to_string()
    })
}

/// A count at the end of a Slurm GPU request: `4`, `a100:4`; `gpu` alone in a `--gres` is one.
fn gpu_count(spec: &str) -> Option<u64> {
    spec.rsplit(':').next()?.parse().ok()
}

/// The ranks a batch script runs per node: its launcher's (torchrun), else its
/// `--ntasks-per-node`, else the GPUs it asks per node (`--gpus-per-node`, `--gres=gpu:N`).
fn script_ranks(text: &str, directives: &[Vec<&str>]) -> Option<Ranks> {
    let from = |name: &str, count: &dyn Fn(&str) -> Option<u64>| {
        directives.iter().find_map(|words| {
            let value = flag(words, name)?;
            Ranks::new(count(value)?, format!("#SBATCH {name}={value}"))
        })
    };
    let gres = |value: &str| {
        let gpu = value.split(',').find(|g| g.starts_with("gpu"))?;
        if gpu == "gpu" {
            Some(1)
        } else {
            gpu_count(gpu)
        }
    };
    ranks_in(text)
        .or_else(|| from("--ntasks-per-node", &|v| v.parse().ok()))
        .or_else(|| from("--gpus-per-node", &gpu_count))
        .or_else(|| from("--gres", &gres))
}

/// A Slurm batch script's `--mem`, held to its loaders' /dev/shm.
fn check_sbatch(text: &str, raw: &[&str], file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let directives: Vec<(usize, Vec<&str>)> = raw
        .iter()
        .enumerate()
        .filter_map(|(n, l)| {
            l.trim_start()
                .strip_prefix("#SBATCH")
                .map(|d| (n + 1, d.split_whitespace().collect()))
        })
        .collect();
    let Some((line, mem)) = directives
        .iter()
        .find_map(|(n, words)| flag(words, "--mem").map(|m| (*n, m.to_string())))
    else {
        return;
    };
    let words: Vec<Vec<&str>> = directives.iter().map(|(_, w)| w.clone()).collect();
    let need = loaders.demand(text, script_ranks(text, &words));
    // `--mem=0` asks for all of the node's memory: nothing to hold it to.
    let Some(bytes) = slurm_size(&mem).filter(|b| *b > 0) else {
        return;
    };
    if !need.known
        || bytes >= need.peak
        || ignored_near(raw, line)
            .iter()
            .any(|r| r.id == rules::SLURM_MEM.id)
    {
        return;
    }
    let fix = size_fixes(Target::Slurm, need.bytes, &need.basis, None)
        .into_iter()
        .flat_map(|f| f.commands)
        .find(|c| c.starts_with("#SBATCH"));
    out.push(Finding {
        rule: &rules::SLURM_MEM,
        file: file.into(),
        line,
        object: "#SBATCH".into(),
        container: None,
        message: format!("--mem={mem} ({}) is below the /dev/shm its loaders need, {}, before the job's own memory; where the cluster charges tmpfs pages to the job (a cluster setting) it ends OUT_OF_MEMORY", ByteSize(bytes), need.words()),
        fix,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_lines_are_one_command() {
        let lines = logical_lines("a \\\n  b\nc\n");
        assert_eq!(lines, [(1, "a    b".to_string()), (3, "c".to_string())]);
    }

    #[test]
    fn sizes_read_as_each_tool_reads_them() {
        assert_eq!(docker_size("2g"), Some(2 << 30));
        assert_eq!(docker_size("512m"), Some(512 << 20));
        assert_eq!(slurm_size("64G"), Some(64 << 30));
        assert_eq!(slurm_size("8000"), Some(8000 << 20));
        assert_eq!(slurm_size("0"), Some(0));
    }

    #[test]
    fn slurm_scripts_say_their_ranks() {
        let ranks = |lines: &[&str]| {
            let words: Vec<Vec<&str>> = lines
                .iter()
                .map(|l| l.split_whitespace().collect())
                .collect();
            script_ranks("srun python train.py", &words).map(|r| r.count)
        };
        assert_eq!(ranks(&["--gres=gpu:4"]), Some(4));
        assert_eq!(ranks(&["--gres=gpu:a100:8,mps:100"]), Some(8));
        assert_eq!(ranks(&["--gpus-per-node=h100:2"]), Some(2));
        assert_eq!(ranks(&["--ntasks-per-node=1", "--gres=gpu:8"]), Some(1));
        assert_eq!(ranks(&["--gres=gpu"]), Some(1));
        assert_eq!(ranks(&["--mem=8G"]), None);
    }
}
