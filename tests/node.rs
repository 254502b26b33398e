//! `shmbench node`: a node's /dev/shm judged for the fleet's health machinery, in a private
//! tmpfs of the test's own (a mount namespace; the node's /dev/shm is never touched): ok, then a
//! dead leftover is a problem with its bytes in the first line and the metrics, a file whose
//! name says its owner is gone but that a live process holds is not, and after the sweep the
//! node is ok again; a size below the need, a disk's filesystem and a missing path each get
//! their verdict and exit status.

use super::common::*;
use serde_json::Value;

/// Runs in the private /dev/shm; each step's exit status and output land in $OUT.
const SCRIPT: &str = r#"
set -u
mount -t tmpfs -o size=64m tmpfs /dev/shm
step() { name=$1; shift; "$SHMBENCH" node "$@" > "$OUT/$name.out" 2>&1; echo $? > "$OUT/$name.rc"; }
sleep 0 & gone=$!; wait $gone
sleep 0 & gone2=$!; wait $gone2
"$SHMBENCH" node --dead-older-than 0s --emit nhc --format json > "$OUT/shmbench.nhc"
# NHC's die, as a stand-in (NHC itself is not packaged here): it records what it was told.
nhc() {
  local name=$1
  ( die() { echo "$name|$1|$2" > "$OUT/$name.died"; }
    source "$OUT/shmbench.nhc"; check_shmbench_shm; echo $? > "$OUT/$name.rc" )
}
nhc nhc_clean
sed "s#$SHMBENCH#/nonexistent/shmbench#" "$OUT/shmbench.nhc" > "$OUT/gone.nhc"
( die() { echo "$1|$2" > "$OUT/nhc_gone.died"; }; source "$OUT/gone.nhc"; check_shmbench_shm; echo $? > "$OUT/nhc_gone.rc" )
step clean --dead-older-than 0s --format json --textfile "$OUT"
cp "$OUT/shmbench-node.prom" "$OUT/clean.prom"
head -c 8388608 /dev/zero > /dev/shm/torch_${gone}_1_0
head -c 1048576 /dev/zero > /dev/shm/torch_${gone2}_2_0
sleep 120 3< /dev/shm/torch_${gone2}_2_0 & holder=$!
step dirty --dead-older-than 0s --format json --textfile "$OUT"
cp "$OUT/shmbench-node.prom" "$OUT/dirty.prom"
step dirty_text --dead-older-than 0s
step young --dead-older-than 1h
setpriv --reuid 65534 --regid 65534 --clear-groups "$SHMBENCH" node --dead-older-than 0s > "$OUT/nobody.out" 2>&1
echo $? > "$OUT/nobody.rc"
nhc nhc_dirty
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/sweep.out" 2>&1
step swept --dead-older-than 0s --format json --textfile "$OUT"
nhc nhc_swept
cp "$OUT/shmbench-node.prom" "$OUT/swept.prom"
step small --need 128m
step job --ranks 2 --loaders train:8x2x128 --format json
step disk /proc
step missing /nonexistent/shm --textfile "$OUT"
ln -s /dev/shm "$OUT/link"
step link "$OUT/link" --format line
# A read-only mount of the tmpfs is a problem (jobs cannot create segments through it), unless
# it is a health check's read-only view (the DaemonSet's pod mounts the host's so); a tmpfs
# that is itself read-only is a problem either way.
mkdir "$OUT/view" "$OUT/rofs"
mount --bind /dev/shm "$OUT/view" && mount -o remount,bind,ro "$OUT/view"
step view "$OUT/view" --format json --read-only-view
step ro_mount "$OUT/view" --format json
mount -t tmpfs -o size=8m,ro tmpfs "$OUT/rofs"
step rofs "$OUT/rofs" --format json --read-only-view
kill $holder
"#;

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// The exit status a step of the script recorded.
fn rc(dir: &std::path::Path, step: &str) -> String {
    read(dir, &format!("{step}.rc")).trim().to_string()
}

/// What a step run with `--format json` printed.
fn json(dir: &std::path::Path, step: &str) -> Value {
    let text = read(dir, &format!("{step}.out"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{step}: {e}: {text}"))
}

#[test]
fn a_dead_leftover_makes_the_node_a_problem_until_swept_and_each_verdict_has_its_exit_status() {
    if !require("unshare", || which("unshare"), "unshare (util-linux)") {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("node");
    let run = in_private_shm(SCRIPT, dir.as_ref());
    let dir = dir.as_ref();
    let rc = |step: &str| rc(dir, step);
    let json = |step: &str| json(dir, step);
    // A fresh tmpfs: ok.
    assert_eq!(rc("clean"), "0", "{} {run:?}", read(dir, "clean.out"));
    assert_eq!(json("clean")["status"], "ok");
    assert!(read(dir, "clean.prom").contains("shmbench_node_shm_dead_bytes{path=\"/dev/shm\"} 0\n"));
    // The dead leftover: a problem, exit 1, its bytes in the reason and the metrics; the held
    // file (its name's pid gone too) is not dead.
    assert_eq!(rc("dirty"), "1", "{}", read(dir, "dirty.out"));
    let dirty = json("dirty");
    let first = dirty["first_line"].as_str().unwrap();
    assert!(
        first.starts_with("shmbench: 8 MiB of dead leftovers in /dev/shm (1 file"),
        "{first}"
    );
    assert!(first.chars().count() <= 80, "{first}");
    assert_eq!(dirty["verdict"]["problems"][0]["bytes"], 8 << 20, "{dirty}");
    let dead = dirty["facts"]["dead"].as_array().unwrap();
    assert_eq!(dead.len(), 1, "{dirty}");
    assert!(dead[0]["name"].as_str().unwrap().ends_with("_1_0"));
    let prom = read(dir, "dirty.prom");
    assert!(
        prom.contains("shmbench_node_shm_dead_bytes{path=\"/dev/shm\"} 8388608\n"),
        "{prom}"
    );
    assert!(
        prom.contains("shmbench_node_problem{path=\"/dev/shm\",problem=\"dead_leftovers\"} 1\n"),
        "{prom}"
    );
    let text = read(dir, "dirty_text.out");
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("shmbench: 8 MiB of dead leftovers"),
        "{text}"
    );
    assert!(text.contains("problem: 8 MiB of dead leftovers"), "{text}");
    // Not root: other users' processes cannot be read, so nothing is proven dead or fine.
    assert_eq!(rc("nobody"), "2", "{}", read(dir, "nobody.out"));
    assert!(
        read(dir, "nobody.out").starts_with("shmbench: unknown: leftovers unproven: run as root")
    );
    // Younger than the policy's age: not counted yet.
    assert_eq!(rc("young"), "0", "{}", read(dir, "young.out"));
    // Swept: ok again, and the metrics say so.
    assert!(
        read(dir, "sweep.out").contains("torch_"),
        "{}",
        read(dir, "sweep.out")
    );
    assert_eq!(rc("swept"), "0", "{}", read(dir, "swept.out"));
    assert_eq!(json("swept")["facts"]["dead"].as_array().unwrap().len(), 0);
    let prom = read(dir, "swept.prom");
    assert!(
        prom.contains("shmbench_node_status{path=\"/dev/shm\"} 0\n"),
        "{prom}"
    );
    assert!(
        prom.contains("shmbench_node_shm_size_bytes{path=\"/dev/shm\"} 67108864\n"),
        "{prom}"
    );
    assert!(
        prom.contains(
            "shmbench_node_shm_producer_bytes{path=\"/dev/shm\",producer=\"torch\"} 1048576\n"
        ),
        "the held file is still there, by its name torch's: {prom}"
    );
    assert_nhc(dir);
    assert_other_verdicts(dir);
    assert_clean(&before);
}

/// The NHC check file: the check passes on a clean tmpfs and after the sweep, and fails with
/// shmbench's first line through NHC's die on the dead leftover.
fn assert_nhc(dir: &std::path::Path) {
    let rc = |step: &str| rc(dir, step);
    assert_eq!(rc("nhc_clean"), "0", "{}", read(dir, "shmbench.nhc"));
    assert_eq!(rc("nhc_swept"), "0");
    assert!(!dir.join("nhc_clean.died").exists() && !dir.join("nhc_swept.died").exists());
    assert_eq!(rc("nhc_dirty"), "1");
    let died = read(dir, "nhc_dirty.died");
    assert!(
        died.starts_with("nhc_dirty|1|check_shmbench_shm:  shmbench: 8 MiB of dead leftovers"),
        "{died}"
    );
    assert!(
        !read(dir, "shmbench.nhc").contains("--format"),
        "the check reads text"
    );
    // A check that cannot run fails, never passes every node.
    assert_eq!(rc("nhc_gone"), "1");
    assert!(read(dir, "nhc_gone.died").contains("could not check (exit status 127)"));
}

/// The verdicts beside the leftovers': a size below the need (given, or a job's by the
/// doctor's model), a disk's filesystem, a missing path, a symlink to the tmpfs.
fn assert_other_verdicts(dir: &std::path::Path) {
    let rc = |step: &str| rc(dir, step);
    let json = |step: &str| json(dir, step);
    // Below the need given, or the need of a job by the doctor's model.
    assert_eq!(rc("small"), "1");
    assert!(read(dir, "small.out").starts_with("shmbench: /dev/shm is 64 MiB, jobs need 128 MiB"));
    assert_eq!(rc("job"), "1", "{}", read(dir, "job.out"));
    let job = json("job");
    assert_eq!(
        job["verdict"]["problems"][0]["problem"], "too_small",
        "{job}"
    );
    assert!(
        job["policy"]["need_bytes"].as_u64().unwrap() > 1 << 30,
        "{job}"
    );
    // Not a tmpfs, or not there at all: a problem, with its metrics.
    assert_eq!(rc("disk"), "1", "{}", read(dir, "disk.out"));
    assert!(read(dir, "disk.out").starts_with("shmbench: /proc is proc, not a tmpfs"));
    assert_eq!(rc("missing"), "1", "{}", read(dir, "missing.out"));
    assert!(read(dir, "missing.out").starts_with("shmbench: /nonexistent/shm does not exist"));
    let prom = read(dir, "shmbench-node.prom");
    assert!(
        prom.contains("shmbench_node_problem{path=\"/nonexistent/shm\",problem=\"missing\"} 1\n"),
        "{prom}"
    );
    // Not measured, so no size or type: a series of 0 would fire the size and type alerts.
    assert!(
        !prom.contains("shmbench_node_shm_is_tmpfs{")
            && !prom.contains("shmbench_node_shm_size_bytes{"),
        "{prom}"
    );
    // A read-only view is not a read-only tmpfs; a read-only mount jobs write through is.
    assert_eq!(rc("view"), "0", "{}", read(dir, "view.out"));
    assert_eq!(rc("ro_mount"), "1", "{}", read(dir, "ro_mount.out"));
    assert_eq!(
        json("ro_mount")["verdict"]["problems"][0]["problem"],
        "read_only"
    );
    assert_eq!(rc("rofs"), "1", "{}", read(dir, "rofs.out"));
    assert_eq!(
        json("rofs")["verdict"]["problems"][0]["problem"],
        "read_only",
        "{}",
        read(dir, "rofs.out")
    );
    // A symlink to the tmpfs (/dev/shm -> /run/shm) is followed; `line` is the first line alone.
    assert_eq!(rc("link"), "0", "{}", read(dir, "link.out"));
    assert_eq!(
        read(dir, "link.out").lines().count(),
        1,
        "{}",
        read(dir, "link.out")
    );
}
