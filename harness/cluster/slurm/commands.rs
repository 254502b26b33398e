//! Slurm's commands, asked: `sbatch` (a script handed over, its job id back), `sacct` and
//! `scontrol` (how jobs ended), the cluster's configuration, and the version on this node.
//! What they print is returned as text for `model::slurm_task` to read; nothing here decides.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};

/// `slurm 22.05.8`, as `scontrol --version` prints it on this node; None without Slurm.
pub(crate) fn version() -> Option<String> {
    let out = Command::new("scontrol")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Whether `sbatch` is on PATH and the controller answers (`scontrol ping`).
pub fn answers() -> bool {
    Command::new("scontrol")
        .arg("ping")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("UP"))
}

/// Hands `script` to `sbatch --parsable` with `args` before it; returns the job id.
pub fn sbatch(script: &str, args: &[String]) -> Result<String> {
    let mut child = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow!("cannot run sbatch ({e}): is Slurm installed here, and on PATH?"))?;
    child
        .stdin
        .take()
        .context("sbatch's stdin")?
        .write_all(script.as_bytes())
        .context("cannot hand the script to sbatch")?;
    let out = child.wait_with_output().context("sbatch")?;
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    // `--parsable` prints `JOBID` or `JOBID;CLUSTER`; with `--wait` the status is then the
    // job's (non-zero when a task failed), not a refusal.
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        bail!("sbatch refused the script ({}): {said}", out.status);
    }
    Ok(id)
}

/// The output of a Slurm command, or None when it failed (no accounting, unknown job).
fn ask(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `sacct`'s lines for the jobs (`JobID|JobIDRaw|State|ExitCode|NodeList|Reason`), or None
/// where the cluster keeps no accounting.
pub(crate) fn sacct(jobs: &[String]) -> Option<String> {
    let list = jobs.join(",");
    let text = ask(
        "sacct",
        &[
            "-X",
            "-n",
            "-P",
            "--format=JobID,JobIDRaw,State,ExitCode,NodeList,Reason",
            "-j",
            &list,
        ],
    )?;
    (!text.trim().is_empty()).then_some(text)
}

/// `scontrol -o show job JOB`: one line per task while the controller still holds the job.
pub(crate) fn show_job(job: &str) -> Option<String> {
    ask("scontrol", &["-o", "show", "job", job])
}

/// A value of `scontrol show config` (`JobCompType`, `JobCompLoc`), None when unset.
pub(crate) fn config_value(key: &str) -> Option<String> {
    let text = ask("scontrol", &["show", "config"])?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        let v = v.trim();
        (k.trim() == key && !v.is_empty() && v != "(null)").then(|| v.to_string())
    })
}

/// `scontrol ARGS`: its output, or an error naming the command and what scontrol said.
fn scontrol(args: &[String]) -> Result<String> {
    let out = Command::new("scontrol")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow!("cannot run scontrol ({e}): is Slurm installed here, and on PATH?"))?;
    if !out.status.success() {
        bail!(
            "scontrol {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `scontrol -o show node NAME`: the node's one line, for `fleet::node::drain` to read.
pub fn show_node(name: &str) -> Result<String> {
    scontrol(&["-o", "show", "node", name].map(String::from))
}

/// `scontrol update NodeName=NAME State=DRAIN Reason=REASON` (reason Some) or `State=UNDRAIN`
/// (which, unlike RESUME, leaves the node's base state alone: a DOWN stays down).
/// Slurm lets root and its SlurmUser do this (a HealthCheckProgram runs as root).
pub fn update_node(name: &str, drain_reason: Option<&str>) -> Result<()> {
    let mut args = vec!["update".to_string(), format!("NodeName={name}")];
    match drain_reason {
        Some(reason) => {
            args.push("State=DRAIN".into());
            args.push(format!("Reason={reason}"));
        }
        None => args.push("State=UNDRAIN".into()),
    }
    scontrol(&args).map(drop)
}
