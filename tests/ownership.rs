//! What shmbench may delete on a shared node: only what a dead run's owner record proves its
//! own, and never what a live process holds, in this pid namespace or another.

use crate::common;

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A process holding `files` open (read) until it is killed; `in_new_pid_namespace` puts it in
/// a pid namespace of its own (`unshare --pid --fork`), as a container's process would be.
struct Holder(Child);

impl Holder {
    fn start(files: &[PathBuf], in_new_pid_namespace: bool) -> Holder {
        let mut script = String::new();
        for (i, f) in files.iter().enumerate() {
            script.push_str(&format!("exec {}<'{}'; ", i + 3, f.display()));
        }
        script.push_str("echo ready; exec sleep 600");
        let mut cmd = match in_new_pid_namespace {
            true => {
                let mut c = Command::new("unshare");
                c.args(["--pid", "--fork", "--kill-child", "sh", "-c", &script]);
                c
            }
            false => {
                let mut c = Command::new("sh");
                c.args(["-c", &script]);
                c
            }
        };
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        wait_for_line(&mut out, "ready");
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn shm(name: &str) -> PathBuf {
    Path::new("/dev/shm").join(name)
}

/// An owner record as a SIGKILLed run leaves it: the file, with no lock on it.
fn dead_owner_with(token: &str, segments: &[&str]) -> Vec<PathBuf> {
    std::fs::write(shm(&format!("shmbench_{token}")), b"").unwrap();
    segments
        .iter()
        .map(|s| {
            let path = shm(&format!("shmbench_{token}_{s}"));
            std::fs::write(&path, b"batch").unwrap();
            path
        })
        .collect()
}

fn sweep_text() -> String {
    let o = shmbench(&["sweep"]);
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Files removed when dropped (a test's own, however it ends).
struct Removed(Vec<PathBuf>);

impl Drop for Removed {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[test]
fn sweep_removes_nothing_foreign_and_nothing_a_live_process_holds() {
    let _guard = serial();
    // Names shmbench used to sweep by pattern alone, held by a live process.
    let foreign: Vec<PathBuf> = [
        "shmbench_999999_0_0",
        "shmbench_9_0_0",
        "shmbench_12_important",
    ]
    .iter()
    .map(|n| shm(n))
    .collect();
    for f in &foreign {
        std::fs::write(f, b"not shmbench's").unwrap();
    }
    // Removed however this test ends: a failure here must not leave other tests these names.
    let _removed = Removed(foreign.clone());
    let foreign_holder = Holder::start(&foreign, false);
    // A dead run's segments: one held here, one held from another pid namespace, one free.
    let token = "00000000deadbeef";
    let segs = dead_owner_with(token, &["0_1", "0_2", "1_3"]);
    let here = Holder::start(&segs[0..1], false);
    let elsewhere = Holder::start(&segs[1..2], true);

    let text = sweep_text();
    for f in &foreign {
        assert!(f.exists(), "sweep removed foreign {}: {text}", f.display());
    }
    assert!(
        segs[0].exists() && segs[1].exists(),
        "removed a held segment: {text}"
    );
    assert!(!segs[2].exists(), "kept a dead run's free segment: {text}");
    assert!(
        text.contains("another process has it open or mapped"),
        "{text}"
    );
    assert!(
        shm(&format!("shmbench_{token}")).exists(),
        "record goes last"
    );

    // A run's start sweeps the same way.
    let o = shmbench(&[
        "run",
        "--runtime",
        "host",
        "--workers",
        "1",
        "--batch",
        "8",
        "--steps",
        "3",
        "--out",
        temp_dir("own-run").join("r.csv").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{o:?}");
    assert!(foreign.iter().all(|f| f.exists()) && segs[0].exists() && segs[1].exists());

    drop((here, elsewhere));
    // Gone at the next sweep, this one's or one of another shmbench run beside the test (which
    // may claim the record first and find a holder a moment from its end): bounded, not timed.
    let record = shm(&format!("shmbench_{token}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = sweep_text();
    while (segs[0].exists() || segs[1].exists() || record.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        text = sweep_text();
    }
    assert!(!segs[0].exists() && !segs[1].exists(), "{text}");
    assert!(!record.exists(), "the record goes with the last: {text}");
    drop(foreign_holder);
    for f in &foreign {
        assert!(f.exists(), "sweep removed foreign {}", f.display());
    }
}

#[test]
fn a_live_run_is_never_swept_even_from_another_pid_namespace() {
    let _guard = serial();
    // A live host run that keeps named segments in /dev/shm, started in its own pid namespace:
    // its pid means nothing here, only its owner record's lock.
    let out = temp_dir("own-live").keep().join("r.csv");
    let mut child = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child", BIN, "run", "--out"])
        .arg(&out)
        .args("--runtime host --strategy file_system --batch 8 --workers 2 --steps 100000 --compute-ms 20".split(' '))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // This run's segments, by the token of the record it holds (not another lane's dead run's).
    let live = || -> Vec<String> {
        entries_of(&lanes_live_tokens())
            .into_iter()
            .filter(|n| n.matches('_').count() == 3)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while live().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = live();
    assert!(!before.is_empty(), "the run made no named segment");
    let tokens = lanes_live_tokens();
    let text = sweep_text();
    assert!(
        !text.contains("removed /dev/shm"),
        "swept a live run: {text}"
    );
    let _ = child.kill();
    let _ = child.wait();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !machine_state().processes.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    sweep_text();
    assert_eq!(entries_of(&tokens), Vec::<String>::new());
}

#[test]
fn sigkill_of_a_matrix_with_memory_leaves_a_cgroup_the_next_run_removes() {
    let _guard = serial();
    let before = machine_state();
    let cgroups_before = shmbench_cgroups();
    let (mut child, _out) = spawn_matrix(
        "own-cgroup",
        "name = \"cg\"\n[defaults]\nbatch = 8\nworkers = 2\nshm-size = \"256m\"\nmemory = \"1g\"\n\
         [[cells]]\nname = \"slow\"\nsteps = 100000\ncompute-ms = 5\n",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[1/1] slow");
    let deadline = Instant::now() + Duration::from_secs(10);
    while shmbench_cgroups().len() == cgroups_before.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        shmbench_cgroups().len() > cgroups_before.len(),
        "no cgroup was made"
    );
    send_signal(child.id(), "KILL");
    child.wait().unwrap();
    // A foreign group named like shmbench's old ones is not provably anyone's: it stays.
    let foreign = Path::new("/sys/fs/cgroup/memory").join("shmbench-1-0-foreign");
    let made_foreign = std::fs::create_dir(&foreign).is_ok();
    let text = sweep_text();
    let mut left = shmbench_cgroups();
    if made_foreign {
        assert!(foreign.exists(), "swept a group it cannot prove its own");
        std::fs::remove_dir(&foreign).unwrap();
        left.retain(|n| n != "shmbench-1-0-foreign");
    }
    // Every run's start sweeps dead runs' groups too: another lane's run may have taken this
    // one first (then this sweep had nothing to say). Either way it is gone.
    assert_eq!(left, cgroups_before, "a dead run's cgroup stayed: {text}");
    if !text.contains("removed memory cgroup") {
        eprintln!("another run's sweep removed this run's cgroup before the test's own");
    }
    assert_clean(&before);
}
