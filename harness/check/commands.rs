//! Command lines in any text file (shell scripts, CI workflows, Makefiles, READMEs' code):
//! `docker run`, `podman run`, `nerdctl run` of an ML image without `--shm-size` or `--ipc`;
//! and Slurm batch scripts, whose `#SBATCH --mem` is held to the /dev/shm the job's loaders
//! need. A line continued with `\` is read whole; `shmbench-ignore: RULE` in a comment on the
//! line or the one before silences it.

use regex::Regex;
use std::sync::OnceLock;

use super::need::{in_process_framework, looks_ml, Loaders};
use super::rules::{self, Finding, Rule};
use crate::model::size::ByteSize;
use crate::plan::fixes::{size_fixes, Target};

/// The marker of an ignore comment.
pub(crate) const IGNORE_MARK: &str = "shmbench-ignore:";

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

pub(crate) fn check(text: &str, file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let raw: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (line, command) in logical_lines(text) {
        let Some(at) = docker_run().find(&command) else {
            continue;
        };
        let rest = &command[at.start()..];
        // The run's own words, up to the end of its command (a pipe or `&&` ends it).
        let rest = rest.split(['|', ';', '&']).next().unwrap_or(rest);
        let words: Vec<&str> = rest
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']))
            .collect();
        let ml = (looks_ml(rest) || flag(&words, "--gpus").is_some() || loaders.given)
            && !in_process_framework(rest);
        let need = loaders.need(rest);
        let fix = need.fix(Target::Docker, None);
        let ignored = ignored_near(&raw, line);
        let mut push = |rule: &'static Rule, message: String, fix: Option<String>| {
            if !ignored.iter().any(|r| r.id == rule.id) {
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
                });
            }
        };
        let ipc = flag(&words, "--ipc");
        let shm = flag(&words, "--shm-size");
        if ipc == Some("host") {
            push(&rules::HOST_IPC, "--ipc=host: the host's /dev/shm, shared with every process that does the same; --shm-size no longer applies".into(), None);
        } else if ml && !need.nothing() && ipc.is_none() && shm.is_none() {
            push(
                &rules::DOCKER_RUN_NO_SHM,
                format!(
                    "no --shm-size or --ipc: the engine's 64 MiB; it needs {}",
                    need.words()
                ),
                fix.clone(),
            );
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
    check_sbatch(text, &raw, file, loaders, &mut found);
    out.extend(found);
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

/// A Slurm batch script's `--mem`, held to its loaders' /dev/shm.
fn check_sbatch(text: &str, raw: &[&str], file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let directives: Vec<(usize, &str)> = raw
        .iter()
        .enumerate()
        .filter_map(|(n, l)| {
            l.trim_start()
                .strip_prefix("#SBATCH")
                .map(|d| (n + 1, d.trim()))
        })
        .collect();
    let Some((line, mem)) = directives.iter().find_map(|(n, d)| {
        let words: Vec<&str> = d.split_whitespace().collect();
        flag(&words, "--mem").map(|m| (*n, m.to_string()))
    }) else {
        return;
    };
    let need = loaders.need(text);
    let Some(bytes) = slurm_size(&mem) else {
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
    }
}
