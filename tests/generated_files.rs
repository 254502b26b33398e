//! The files shmbench writes for other programs to run or read carry a user's values as data:
//! a Slurm batch script is run by bash and read by sbatch, and a Kubernetes manifest is read by
//! YAML 1.1 readers as well as 1.2 ones. Each hostile value is either refused, naming its flag,
//! or written so that the script run for real creates nothing and sbatch reads the value whole,
//! and the manifest read by a YAML 1.1 reader gives it back as the string it was.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

/// The words sbatch takes from an `#SBATCH` line (its `_get_argument`): split at blanks, `"`
/// and `'` quote, `\` escapes the next character, an unquoted `#` ends the line.
fn sbatch_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let (mut word, mut quote, mut escaped, mut any) = (String::new(), None, false, false);
        while let Some(&c) = chars.peek() {
            if quote.is_none() && c.is_whitespace() {
                break;
            }
            chars.next();
            any = true;
            match (escaped, quote, c) {
                (true, _, c) => {
                    escaped = false;
                    word.push(c);
                }
                (false, _, '\\') => escaped = true,
                (false, Some(q), c) if c == q => quote = None,
                (false, None, '"' | '\'') => quote = Some(c),
                (false, None, '#') => {
                    any = !word.is_empty();
                    chars.by_ref().for_each(drop);
                    break;
                }
                (false, _, c) => word.push(c),
            }
        }
        assert!(quote.is_none(), "sbatch refuses an unmatched quote: {line}");
        if !any {
            return words;
        }
        words.push(word);
    }
}

/// A stand-in for the shmbench the script execs: reads the cells and ends.
fn stub(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("stub-shmbench");
    std::fs::write(&path, "#!/bin/sh\ncat >/dev/null\nexit 0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn slurm_script_values_are_refused_or_quoted_and_never_run() {
    let dir = temp_dir("sbatch-values");
    let dir = std::fs::canonicalize(&*dir).unwrap();
    let binary = stub(&dir);
    let out_dir = |name: &str| dir.join(name).display().to_string();
    let refused: Vec<(&str, String)> = vec![
        ("--partition", "gpu\ntouch PWNED".into()),
        ("--output-dir", out_dir("out\ntouch PWNED")),
        ("--mem", "4G\ntouch PWNED".into()),
        ("--mem", "4G;touch PWNED".into()),
        ("--time", "30\ntouch PWNED".into()),
        ("--time", "$(touch PWNED)".into()),
        ("--constraint", "a100\ntouch PWNED".into()),
        ("--nodelist", "n1;touch PWNED".into()),
    ];
    // Values sbatch can hold: written quoted, read back whole (flag, value, sbatch option).
    let quoted: Vec<(&str, String, String)> = vec![
        (
            "--partition",
            "gpu\"; touch PWNED; \"".into(),
            "--partition".into(),
        ),
        (
            "--constraint",
            "a100 $(touch PWNED) #x".into(),
            "--constraint".into(),
        ),
        ("--time", "1-02:03:04".into(), "--time".into()),
        ("--mem", "16G".into(), "--mem".into()),
        (
            "--output-dir",
            out_dir("out dir $(touch PWNED) 50%"),
            "--output".into(),
        ),
    ];
    let script = dir.join("job.sbatch");
    let run = |flag: &str, value: &str| {
        let _ = std::fs::remove_file(&script);
        let mut args = vec!["slurm", "script", "--batch", "8", "--steps", "2"];
        args.extend(["--binary", binary.to_str().unwrap()]);
        args.extend(["--out", script.to_str().unwrap(), flag, value]);
        command_in(&dir).args(&args).output().unwrap()
    };
    for (flag, value) in &refused {
        let o = run(flag, value);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value:?}: {err}");
        assert!(err.contains(flag), "{flag} {value:?} named: {err}");
        assert!(!script.exists(), "{flag} {value:?}: no script");
        assert!(!dir.join("PWNED").exists());
    }
    for (flag, value, option) in &quoted {
        let o = run(flag, value);
        assert!(
            o.status.success(),
            "{flag} {value:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = std::fs::read_to_string(&script).unwrap();
        let checked = Command::new("bash")
            .arg("-n")
            .arg(&script)
            .status()
            .unwrap();
        assert!(checked.success(), "{text}");
        let ran = Command::new("bash")
            .arg(&script)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}: {text}",
            String::from_utf8_lossy(&ran.stderr)
        );
        assert!(!dir.join("PWNED").exists(), "{flag} {value:?} ran: {text}");
        // Every #SBATCH line is one option to sbatch, this one with the value whole.
        let mut seen = false;
        for line in text.lines().filter_map(|l| l.strip_prefix("#SBATCH ")) {
            let words = sbatch_words(line);
            assert_eq!(words.len(), 1, "{line}");
            let Some(got) = words[0].strip_prefix(&format!("{option}=")) else {
                continue;
            };
            let want = match *flag {
                // Slurm's output pattern: `%%` is a '%'.
                "--output-dir" => format!("{}/shmbench-%A_%a.out", value.replace('%', "%%")),
                _ => value.clone(),
            };
            assert_eq!(got, want, "{line}");
            seen = true;
        }
        assert!(seen, "{option} in {text}");
    }
}

/// The manifest's documents as a YAML 1.1 reader (PyYAML) reads them, as JSON; None where
/// python3 has no yaml module.
fn read_as_yaml_1_1(text: &str) -> Option<Vec<Value>> {
    let program = "import json, sys, yaml\nprint(json.dumps(list(yaml.safe_load_all(sys.stdin)), default=repr))";
    let mut child = Command::new("python3")
        .args(["-c", program])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    std::io::Write::write_all(&mut child.stdin.take()?, text.as_bytes()).ok()?;
    let o = child.wait_with_output().ok()?;
    o.status
        .success()
        .then(|| serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn node_selector_values_are_quoted_strings_that_yaml_1_1_reads_as_strings() {
    let values = [
        "0b1",
        "1_000",
        "on",
        "1e3",
        "0o17",
        "2024-01-01",
        "007",
        "a100",
    ];
    let mut args = vec!["k8s", "manifest", "--image", "i:1", "--namespace", "0b1"];
    let pairs: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("k{i}={v}"))
        .collect();
    for pair in &pairs {
        args.extend(["--node-selector", pair]);
    }
    let o = shmbench(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    for (i, v) in values.iter().enumerate() {
        assert!(
            text.contains(&format!("k{i}: \"{v}\"\n")),
            "k{i}={v} quoted: {text}"
        );
    }
    let readers = [
        Some(shmbench::cluster::k8s::yaml::from_yaml(&text).unwrap()),
        read_as_yaml_1_1(&text),
    ];
    if readers[1].is_none() {
        eprintln!("python3 has no yaml module: checked with yaml-rust2 and the text only");
    }
    for docs in readers.into_iter().flatten() {
        let jobs: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
        assert!(!jobs.is_empty());
        for job in jobs {
            let selector = &job["spec"]["template"]["spec"]["nodeSelector"];
            for (i, v) in values.iter().enumerate() {
                assert_eq!(selector[format!("k{i}")], Value::from(*v), "{selector}");
            }
            assert_eq!(job["metadata"]["namespace"], "0b1", "{job}");
        }
    }
    // A value Kubernetes refuses is refused here, naming the flag.
    for bad in ["k=a\nb: c", "k=x y", "=v", "k/=v", "k=-a"] {
        let o = shmbench(&["k8s", "manifest", "--image", "i:1", "--node-selector", bad]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("--node-selector"), "{bad:?}: {err}");
        assert!(o.stdout.is_empty(), "{bad:?}");
    }
}

/// `--nodelist` takes a Slurm host list, expanded as `scontrol show hostnames` does, and a
/// script printed for a person to submit creates nothing: the output directory it names is
/// made by a submission, or said to be needed.
#[test]
fn a_host_list_expands_to_its_nodes_and_printing_a_script_makes_no_directory() {
    let dir = temp_dir("sbatch-hostlist");
    let dir = std::fs::canonicalize(&*dir).unwrap();
    let binary = stub(&dir);
    let wanted = dir.join("shared/out");
    let o = command_in(&dir)
        .args(["slurm", "script", "--batch", "8", "--steps", "2"])
        .args(["--binary", binary.to_str().unwrap()])
        .args(["--nodelist", "gpu[01-03,7],cpu1", "--output-dir"])
        .arg(&wanted)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("for n in gpu01 gpu02 gpu03 gpu7 cpu1; do sbatch --nodelist=$n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("# Make {} on a file system", wanted.display())),
        "{text}"
    );
    assert!(!dir.join("shared").exists(), "printing made a directory");
    let refused = command_in(&dir)
        .args(["slurm", "script", "--nodelist", "gpu[3-1]"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a Slurm host list (a range runs from low to high)"),
        "{err}"
    );
}
