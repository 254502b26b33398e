//! `shmbench shm`, against real holders in a private tmpfs on /dev/shm (a mount namespace of
//! the test's own): a segment held by fd, an unlinked one held by fd, one only mapped, one held
//! by another user, a dead process's leftover named with its pid, a live one's, Podman's lock,
//! files of unknown owner and a symlink. The audit names each holder and each file's state;
//! `--sweep-stale` removes only the dead owner's files. With torch: the leftovers of a real DataLoader killed by SIGKILL are stale, with their
//! sizes, and go. With Docker: segments held from inside a container (`--ipc host`, the node's
//! own /dev/shm) are named with that container.

use crate::common;

use std::process::Command;

use common::*;
use serde_json::Value;

/// Holders started in the private /dev/shm; each says `ready` on fd 9 once it holds its file.
const HOLDERS: &str = r#"
set -e
trap 'kill $(jobs -p) 2>/dev/null' EXIT
mount -t tmpfs -o size=64m tmpfs /dev/shm
cd /dev/shm
head -c 1048576 /dev/zero > held_named
head -c 1048576 /dev/zero > mapped
head -c 1048576 /dev/zero > others && chmod 644 others
# Each holder is waited for until /proc shows it holding its file: a loaded machine starts
# them late, and the audit must not see one before it holds.
(exec 3<held_named; exec sleep 60) &
for _ in $(seq 600); do [ "$(readlink /proc/$!/fd/3)" = /dev/shm/held_named ] && break; sleep 0.05; done
(exec 3<>gone; head -c 2097152 /dev/zero >&3; rm gone; exec sleep 60) &
GONE=$!
python3 -c "
import ctypes, os, time
libc = ctypes.CDLL(None); libc.mmap.restype = ctypes.c_void_p
fd = os.open('/dev/shm/mapped', os.O_RDWR)
p = libc.mmap(None, 1 << 20, 3, 1, fd, 0); os.close(fd); ctypes.memset(p, 1, 1 << 20)
open(os.environ['OUT'] + '/mapped', 'w').close()
time.sleep(60)" &
setpriv --reuid 65534 --regid 65534 --clear-groups sh -c 'exec 3</dev/shm/others; exec sleep 60' &
OTHERS=$!
for _ in $(seq 600); do [ "$(readlink /proc/$OTHERS/fd/3)" = /dev/shm/others ] && [ -e "$OUT/mapped" ] && [ "$(readlink /proc/$GONE/fd/3)" = "/dev/shm/gone (deleted)" ] && break; sleep 0.05; done
# A dead process's leftover, its pid in its name as torch names its segments.
sh -c 'echo $$ > "$OUT/dead_pid"; head -c 3145728 /dev/zero > /dev/shm/torch_$$_1_0; kill -9 $$' || true
DEAD=$(cat "$OUT/dead_pid")
# This script's own: its owner lives. Podman's lock memory: unheld by design. Data staged by
# copying with its old times kept: unknown owner.
head -c 4096 /dev/zero > torch_$$_live
head -c 4096 /dev/zero > libpod_lock
head -c 4096 /dev/zero > staged
head -c 4096 /dev/zero > young_unheld
ln -s /etc/hostname link
# A name that is not UTF-8, in a directory: shown lossily, swept by its real bytes.
mkdir sub && head -c 8192 /dev/zero > sub/torch_${DEAD}_$'\xff'
touch -d '2 hours ago' held_named mapped others torch_${DEAD}_1_0 sub/torch_${DEAD}_$'\xff' torch_$$_live libpod_lock staged
touch -h -d '2 hours ago' link
"$SHMBENCH" shm --format json > "$OUT/audit.json"
# Nothing here is an hour unchanged (touch sets the mtime back, never the ctime): nothing goes,
# not even under the opt-in.
"$SHMBENCH" shm --format json --sweep-stale --older-than 1h --unowned /dev/shm > "$OUT/hour.json"
"$SHMBENCH" shm --format json --sweep-stale --older-than 0s > "$OUT/swept.json"
ls -A /dev/shm > "$OUT/left.txt"
ls -A /dev/shm/sub > "$OUT/left_sub.txt"
"#;

fn entry<'a>(audit: &'a Value, name: &str) -> &'a Value {
    audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no entry {name}: {audit}"))
}

#[test]
fn the_audit_names_every_holder_and_the_sweep_takes_only_a_dead_owner_s_files() {
    let present = || which("python3") && which("setpriv") && which("unshare");
    if !require("python3", present, "python3, setpriv and unshare") {
        return;
    }
    let _guard = serial();
    let dir = temp_dir("shm-audit");
    let run = in_private_shm(HOLDERS, dir.as_ref());
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let audit = &json_file(&dir.as_ref().join("audit.json"))["audit"];
    let holds = |name: &str| entry(audit, name)["holders"].as_array().unwrap().clone();
    assert_eq!(holds("held_named").len(), 1);
    assert_eq!(holds("held_named")[0]["by_fd"], true);
    let mapped = &holds("mapped")[0];
    assert_eq!(
        (mapped["by_fd"].as_bool(), mapped["by_map"].as_bool()),
        (Some(false), Some(true))
    );
    // Another user's holder is read (the test runs as root) and named with its uid.
    let other_pid = &holds("others")[0]["pid"];
    let other = audit["holders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| &h["pid"] == other_pid)
        .unwrap();
    assert_eq!(other["uid"], 65534, "{other}");
    // The unlinked segment still counts, with its bytes and its holder.
    let gone = audit["unlinked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "/dev/shm/gone");
    let gone = gone.unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(gone["allocated_bytes"], 2 << 20);
    assert_eq!(gone["holders"][0]["by_fd"], true);
    // The dead process's file is stale, with its size; a symlink is listed, never stale; the
    // live owner's, Podman's lock and the staged file are not.
    let dead = std::fs::read_to_string(dir.as_ref().join("dead_pid")).unwrap();
    let dead_name = format!("torch_{}_1_0", dead.trim());
    let state = |name: &str| entry(audit, name)["staleness"]["state"].clone();
    assert_eq!(state(&dead_name), "dead_owner");
    assert_eq!(entry(audit, &dead_name)["allocated_bytes"], 3 << 20);
    assert_eq!(state("libpod_lock"), "by_design");
    assert_eq!(state("staged"), "unowned");
    assert_eq!(state("held_named"), "held");
    assert_eq!(entry(audit, "link")["kind"], "symlink");
    let live = audit["entries"].as_array().unwrap().iter();
    let live: Vec<_> = live
        .filter(|e| e["name"].as_str().unwrap().ends_with("_live"))
        .collect();
    assert_eq!(live[0]["staleness"]["state"], "live_owner", "{audit}");
    // An hour's age: nothing qualifies, the opt-in included.
    let (events, hour) = sweep_lines(&dir.as_ref().join("hour.json"));
    assert!(
        events.is_empty() && hour["removed"] == serde_json::json!([]),
        "{hour}"
    );
    // The sweep: only the dead owner's files go (one by a name that is not UTF-8), each
    // reported as it went; the files of unknown owner are counted, not touched.
    let (events, swept) = sweep_lines(&dir.as_ref().join("swept.json"));
    let mut removed: Vec<(&str, u64)> = swept["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_str().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    removed.sort_unstable();
    let sub_name = format!("sub/torch_{}_\u{fffd}", dead.trim());
    assert_eq!(
        removed,
        [(sub_name.as_str(), 8192), (dead_name.as_str(), 3 << 20)],
        "{swept}"
    );
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e["event"] == "removed"), "{events:?}");
    assert_eq!(swept["unowned_left"], 2, "{swept}");
    let left_sub = std::fs::read(dir.as_ref().join("left_sub.txt")).unwrap();
    assert!(left_sub.is_empty(), "{left_sub:?}");
    let left = std::fs::read_to_string(dir.as_ref().join("left.txt")).unwrap();
    let mut left: Vec<&str> = left.lines().filter(|l| !l.ends_with("_live")).collect();
    left.sort_unstable();
    assert_eq!(
        left,
        [
            "held_named",
            "libpod_lock",
            "link",
            "mapped",
            "others",
            "staged",
            "sub",
            "young_unheld"
        ]
    );
}

#[test]
fn a_path_that_is_not_a_tmpfs_is_refused_and_a_sweep_needs_an_age() {
    let out = shmbench(&["shm", "/proc"]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("is not a directory on a tmpfs"), "{text}");
    let out = shmbench(&["shm", "--sweep-stale"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--older-than"));
}

/// A real DataLoader under `file_system` in its own pid namespace, killed by SIGKILL as a
/// container's end kills it (torch_shm_manager too), leaves its named batches behind.
const TORCH_LEFTOVERS: &str = r#"
set -e
mount -t tmpfs -o size=128m tmpfs /dev/shm
unshare -p -f --kill-child "$PYTHON" -c "
import os, time, torch
from torch.utils.data import DataLoader
torch.multiprocessing.set_sharing_strategy('file_system')
loader = DataLoader(torch.zeros(64, 3, 224, 224), batch_size=8, num_workers=2)
batch = next(iter(loader))
open(os.environ['OUT'] + '/go', 'w').close()
time.sleep(60)" 2>/dev/null &
for _ in $(seq 300); do [ -e "$OUT/go" ] && break; sleep 0.1; done
kill -9 $!; wait $! || true
sleep 0.5
"$SHMBENCH" shm --format json > "$OUT/audit.json"
"$SHMBENCH" shm --format json --sweep-stale --older-than 0s > "$OUT/swept.json"
ls -A /dev/shm > "$OUT/left.txt"
"#;

#[test]
fn a_killed_real_dataloader_s_leftovers_are_stale_and_swept() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = serial();
    let dir = temp_dir("shm-torch");
    let run = Command::new("unshare")
        .args(["-m", "bash", "-c", TORCH_LEFTOVERS])
        .env("SHMBENCH", BIN)
        .env("OUT", dir.as_ref())
        .env("PYTHON", &python)
        .output()
        .expect("unshare runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let audit = &json_file(&dir.as_ref().join("audit.json"))["audit"];
    let leftovers: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("torch_"))
        .collect();
    // Batches of 8 images (4.6 MiB each, and torch's refcount after them) the workers had
    // made, no one holding them now, their size in whole pages.
    assert!(!leftovers.is_empty(), "{audit}");
    for e in &leftovers {
        assert!(e["holders"].as_array().unwrap().is_empty(), "{e}");
        assert!(e["made_by"].as_str().unwrap().starts_with("torch"), "{e}");
        let apparent = e["apparent_bytes"].as_u64().unwrap();
        assert!(apparent >= 8 * 602_112, "{e}");
        assert_eq!(e["allocated_bytes"], apparent.div_ceil(4096) * 4096, "{e}");
    }
    // Their owners' pids were the pid namespace's own: each is gone unless a process that
    // calls itself by that pid, in some other pid namespace (another user's container), started
    // before it; those are kept, the rest go.
    let dead = leftovers
        .iter()
        .filter(|e| e["staleness"]["state"] == "dead_owner")
        .count();
    for e in &leftovers {
        let state = &e["staleness"]["state"];
        assert!(state == "dead_owner" || state == "live_owner", "{e}");
    }
    let (_, swept) = sweep_lines(&dir.as_ref().join("swept.json"));
    assert_eq!(swept["removed"].as_array().unwrap().len(), dead, "{swept}");
    let left = std::fs::read_to_string(dir.as_ref().join("left.txt")).unwrap();
    assert_eq!(left.lines().count(), leftovers.len() - dead, "{left}");
}

#[test]
fn a_segment_held_from_inside_a_container_names_that_container() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    // A Docker cell on the node's /dev/shm, its batches kept by name for 100 ms a step.
    let mut run = spawn_run(
        "--runtime docker --ipc host --strategy file_system --batch 1 --workers 1 --steps 600 --compute-ms 100",
    );
    // The held shmbench segments whose holder the audit places in one of this test's own
    // containers (another user's run may hold segments too): none when attribution is wrong.
    let ours = |audit: &Value, containers: &[String]| -> Vec<Value> {
        let holders = audit["audit"]["holders"].as_array().unwrap();
        let in_ours = |hold: &Value| {
            let holder = holders.iter().find(|h| h["pid"] == hold["pid"]);
            let workload = holder.map(|h| &h["workload"]);
            let id = workload.and_then(|w| w["container"].as_str()).unwrap_or("");
            let runtime = workload.map(|w| w["runtime"].clone());
            id.len() >= 12
                && runtime == Some(Value::from("docker"))
                && containers.iter().any(|full| full.starts_with(id))
        };
        audit["audit"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"].as_str().unwrap().starts_with("shmbench_"))
            .filter(|e| e["holders"].as_array().unwrap().iter().any(in_ours))
            .cloned()
            .collect()
    };
    let audit_now = || -> Value {
        let o = shmbench(&["shm", "--format", "json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // The image is built and the container started first: wait for held segments (a loaded
    // machine is slow to start it).
    let mut held = Vec::new();
    let mut audit = Value::Null;
    for _ in 0..600 {
        let containers = our_containers();
        audit = audit_now();
        held = ours(&audit, &containers);
        if !held.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    send_signal(run.id(), "INT");
    run.wait().unwrap();
    assert!(
        !held.is_empty(),
        "no segment held in this test's container seen: {audit}"
    );
    assert_clean(&before);
}
