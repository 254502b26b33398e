//! A live node, as a hostile user found it (issue 57), each in a private tmpfs on /dev/shm of
//! the test's own mount namespace: a dead run's segment that a process outside the sweep's pid
//! namespace still maps, a run's owner record kept while a file it proves is held, files that a
//! mount of another mount namespace covers, an unmounted /dev/shm, and dead owners' files that
//! no sweep can remove (a second name, a loop device, an fd in flight over a Unix socket).

use super::common::*;

/// Holds `$1` mapped (opened read-write, mapped, the fd closed) until `$OUT/stop` appears.
const MAPPER: &str = r#"
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 4096)
os.close(fd)
open(os.environ['OUT'] + '/mapped', 'w').close()
while not os.path.exists(os.environ['OUT'] + '/stop'):
    time.sleep(0.05)
"#;

/// A dead run's segment (its record unlocked) mapped by a holder, swept from a pid namespace
/// that cannot see the holder, and by `shm --sweep-stale`; then the holder lets go.
const MAPPED_DEAD_RUN: &str = r#"
set -u
mount -t tmpfs -o size=16m tmpfs /dev/shm
T=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
for f in shmbench_${T}_0_0 shmbench_$T; do head -c 8192 /dev/zero > /dev/shm/$f; done
python3 -c "$MAPPER" /dev/shm/shmbench_${T}_0_0 & H=$!
while [ ! -e "$OUT/mapped" ]; do sleep 0.05; done
unshare -p -f --mount-proc "$SHMBENCH" sweep > "$OUT/sweep_pidns.out" 2>&1
"$SHMBENCH" sweep > "$OUT/sweep.out" 2>&1
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/stale.out" 2>&1
grep -c "shmbench_${T}_0_0 (deleted)" /proc/$H/maps > "$OUT/deleted_maps"
ls /dev/shm > "$OUT/while_held"
touch "$OUT/stop"; wait $H
"$SHMBENCH" sweep > "$OUT/after.out" 2>&1
ls /dev/shm > "$OUT/after_release"
"#;

#[test]
fn a_dead_runs_segment_that_a_live_process_maps_is_kept_by_every_sweep_and_its_record_with_it() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let _guard = serial();
    let script = format!(
        "MAPPER='{}'\n{MAPPED_DEAD_RUN}",
        MAPPER.replace('\'', "'\\''")
    );
    let run = ScriptRun::of("live-mapped", &script);
    let read = |name: &str| run.read(name);
    assert_eq!(
        read("deleted_maps").trim(),
        "0",
        "the holder's mapping was unlinked: {}{}{}",
        read("sweep_pidns.out"),
        read("sweep.out"),
        read("stale.out")
    );
    let held = read("while_held");
    assert_eq!(
        held.lines().count(),
        2,
        "segment and record both kept while held: {held}"
    );
    assert!(
        read("sweep_pidns.out").contains("kept "),
        "{}",
        read("sweep_pidns.out")
    );
    // Once nobody holds it, the dead run's segment and then its record go.
    assert_eq!(read("after_release").trim(), "", "{}", read("after.out"));
}

/// Files of dead owners that a mount of another mount namespace covers: a dead pid's torch file
/// and a dead run's segment, each with a file bind-mounted on it there.
const COVERED: &str = r#"
set -u
mount -t tmpfs -o size=16m tmpfs /dev/shm
sleep 0 & gone=$!; wait $gone
T=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
: > /dev/shm/torch_${gone}_mp
: > /dev/shm/shmbench_${T}_0_0
: > /dev/shm/shmbench_$T
echo config > "$OUT/source"
unshare -m sh -c "mount --bind '$OUT/source' /dev/shm/torch_${gone}_mp && mount --bind '$OUT/source' /dev/shm/shmbench_${T}_0_0 && touch '$OUT/mounted' && exec sleep 60" & M=$!
while [ ! -e "$OUT/mounted" ]; do sleep 0.05; done
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/stale.out" 2>&1
"$SHMBENCH" sweep > "$OUT/sweep.out" 2>&1
"$SHMBENCH" node --dead-older-than 0s > "$OUT/node.out" 2>&1; echo $? > "$OUT/node.rc"
grep -c " /dev/shm/" /proc/$M/mountinfo > "$OUT/mounts"
ls /dev/shm > "$OUT/left"
kill $M; wait $M 2>/dev/null || true
"#;

#[test]
fn a_file_that_another_mount_namespace_mounts_on_is_never_removed_nor_counted_dead() {
    let _guard = serial();
    let run = ScriptRun::of("live-covered", COVERED);
    let read = |name: &str| run.read(name);
    let stale = read("stale.out");
    assert_eq!(
        read("mounts").trim(),
        "2",
        "a mount was detached: {stale}{}",
        read("sweep.out")
    );
    assert_eq!(
        read("left").lines().count(),
        3,
        "{stale}{}",
        read("sweep.out")
    );
    assert!(stale.contains("a mount covers it"), "{stale}");
    // Not a dead leftover either: the node stays ok.
    assert_eq!(read("node.rc").trim(), "0", "{}", read("node.out"));
}

/// Mounts in namespaces whose mountinfo no unchrooted process shows: one whose only process is
/// chrooted (its mountinfo lists only what lies below its root), and one no process is in, held
/// by an fd.
const HIDDEN_NAMESPACES: &str = r#"
set -u
mount -t tmpfs -o size=16m tmpfs /dev/shm
sleep 0 & gone=$!; wait $gone
: > /dev/shm/torch_${gone}_chroot
: > /dev/shm/torch_${gone}_fd
echo config > "$OUT/source"
unshare -m sh -c "mount --bind '$OUT/source' /dev/shm/torch_${gone}_chroot && touch '$OUT/m1' && exec chroot /usr bin/sleep 60" & C=$!
unshare -m sh -c "mount --bind '$OUT/source' /dev/shm/torch_${gone}_fd && touch '$OUT/m2' && exec sleep 3" & U=$!
while [ ! -e "$OUT/m1" ] || [ ! -e "$OUT/m2" ]; do sleep 0.05; done
python3 -c "
import os, sys, time
fd = os.open('/proc/$U/ns/mnt', os.O_RDONLY)
open(sys.argv[1], 'w').close()
time.sleep(30)
" "$OUT/pinned" & P=$!
while [ ! -e "$OUT/pinned" ]; do sleep 0.05; done
wait $U
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/stale.out" 2>&1
ls /dev/shm > "$OUT/left"
nsenter -t $C -m cat /proc/self/mountinfo | grep -c torch_ > "$OUT/chroot_mounts"
nsenter --mount=/proc/$P/fd/3 cat /proc/self/mountinfo | grep -c torch_ > "$OUT/fd_mounts"
kill $C $P; wait $C $P 2>/dev/null || true
"#;

#[test]
fn a_mount_in_a_namespace_only_a_chroot_or_an_fd_holds_is_never_detached() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let _guard = serial();
    let run = ScriptRun::of("live-hidden-ns", HIDDEN_NAMESPACES);
    let read = |name: &str| run.read(name);
    let stale = read("stale.out");
    assert_eq!(read("left").lines().count(), 2, "{stale}");
    assert_eq!(read("chroot_mounts").trim(), "1", "{stale}");
    assert_eq!(read("fd_mounts").trim(), "1", "{stale}");
    // Both namespaces were read (entered, as root), so each file is kept for its mount, not
    // for want of a view.
    assert_eq!(stale.matches("a mount covers it").count(), 2, "{stale}");
}

/// A dead pid's files that no sweep can remove, with room for them under the policy: a second
/// name, a loop device backing onto one, and one whose only reference is an fd in flight.
const PINNED: &str = r#"
set -u
mount -t tmpfs -o size=64m tmpfs /dev/shm
sleep 0 & gone=$!; wait $gone
head -c 1048576 /dev/zero > /dev/shm/torch_${gone}_linked
ln /dev/shm/torch_${gone}_linked /dev/shm/torch_${gone}_second
head -c 1048576 /dev/zero > /dev/shm/torch_${gone}_flight
python3 -c "
import os, socket, time
a, b = socket.socketpair(socket.AF_UNIX)
fd = os.open('/dev/shm/torch_${gone}_flight', os.O_RDONLY)
socket.send_fds(a, [b'x'], [fd])
os.close(fd)
open(os.environ['OUT'] + '/sent', 'w').close()
while not os.path.exists(os.environ['OUT'] + '/stop'):
    time.sleep(0.05)
" & F=$!
while [ ! -e "$OUT/sent" ]; do sleep 0.05; done
LOOP=
if [ "${USE_LOOP:-1}" = 1 ]; then
  head -c 8388608 /dev/zero > /dev/shm/torch_${gone}_img
  LOOP=$(losetup -f --show /dev/shm/torch_${gone}_img 2>/dev/null) || LOOP=
fi
echo "$LOOP" > "$OUT/loop"
"$SHMBENCH" node --dead-older-than 0s --max-dead 64m > "$OUT/roomy.out" 2>&1; echo $? > "$OUT/roomy.rc"
"$SHMBENCH" node --dead-older-than 0s --format json > "$OUT/node.json" 2>&1; echo $? > "$OUT/node.rc"
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/stale.out" 2>&1
ls /dev/shm > "$OUT/left"
[ -n "$LOOP" ] && losetup -d "$LOOP"
touch "$OUT/stop"; wait $F
"#;

#[test]
fn dead_owners_files_no_sweep_can_remove_are_neither_dead_leftovers_nor_unknown() {
    if !require("python3", || which("python3"), "python3") {
        return;
    }
    let _guard = serial();
    let run = ScriptRun::of("live-pinned", PINNED);
    let read = |name: &str| run.read(name);
    // With room under --max-dead the verdict is the rest of the policy's (ok), not unknown.
    assert_eq!(read("roomy.rc").trim(), "0", "{}", read("roomy.out"));
    // With none tolerated, only what a sweep could remove counts: nothing here; the pinned
    // files are counted apart.
    let node = read("node.json");
    assert_eq!(read("node.rc").trim(), "0", "{node}");
    assert!(node.contains("\"pinned_files\": "), "{node}");
    assert!(!node.contains("\"pinned_files\": 0"), "{node}");
    let stale = read("stale.out");
    let left = read("left");
    for name in ["_linked", "_second", "_flight"] {
        assert!(left.contains(name), "{name} was removed: {stale}");
    }
    if !read("loop").trim().is_empty() {
        assert!(
            left.contains("_img"),
            "the loop device's file was removed: {stale}"
        );
    }
}

/// /dev/shm unmounted in the test's namespace: the directory below it (on /dev) is judged.
const UNMOUNTED: &str = r#"
set -u
while mountpoint -q /dev/shm; do umount /dev/shm || break; done
"$SHMBENCH" node --format json > "$OUT/node.json" 2>&1; echo $? > "$OUT/node.rc"
mkdir "$OUT/closed"; mount -t tmpfs -o size=8m,mode=0755 tmpfs "$OUT/closed"
"$SHMBENCH" node "$OUT/closed" > "$OUT/closed.out" 2>&1; echo $? > "$OUT/closed.rc"
"#;

#[test]
fn an_unmounted_or_closed_dev_shm_is_a_problem_with_its_reason() {
    let _guard = serial();
    let run = ScriptRun::of("live-unmounted", UNMOUNTED);
    let read = |name: &str| run.read(name);
    let node = read("node.json");
    assert_eq!(read("node.rc").trim(), "1", "{node}");
    assert!(node.contains("\"not_own_mount\""), "{node}");
    let closed = read("closed.out");
    assert_eq!(read("closed.rc").trim(), "1", "{closed}");
    assert!(closed.contains("mode 0755"), "{closed}");
}

/// A host run and a host watch, as root and as nobody, on a private /dev/shm: what Podman would
/// leave if it were started (its lock in /dev/shm, a pause process, a run directory).
const HOST_RUNS: &str = r#"
set -u
mount -t tmpfs -o size=64m tmpfs /dev/shm
chmod 0777 "$OUT"
"$SHMBENCH" run --runtime host --workers 1 --batch 8 --steps 2 --out "$OUT/root.csv" > "$OUT/root.out" 2>&1; echo $? > "$OUT/root.rc"
"$SHMBENCH" watch --runtime host -- true > "$OUT/watch.out" 2>&1
ls -a /dev/shm > "$OUT/root_shm"
had_run_dir=$([ -e /tmp/podman-run-65534 ] && echo yes || echo no)
# A copy of the binary and a results directory that nobody can reach (the build's may not be).
AS_NOBODY=$(mktemp -d /tmp/shmbench-live-node.XXXXXX); chmod 0755 "$AS_NOBODY"
cp "$SHMBENCH" "$AS_NOBODY/shmbench"; mkdir -m 1777 "$AS_NOBODY/out"
setpriv --reuid 65534 --regid 65534 --clear-groups env -u XDG_RUNTIME_DIR HOME=/nonexistent \
  "$AS_NOBODY/shmbench" run --runtime host --workers 1 --batch 8 --steps 2 --out "$AS_NOBODY/out/nobody.csv" > "$OUT/nobody.out" 2>&1
echo $? > "$OUT/nobody.rc"
# A run directory another user made first, with a planted record of a dead run that "used
# Podman", and a podman on PATH that logs its calls: nothing in that directory is trusted.
mkdir -m 0777 "$AS_NOBODY/xdg" "$AS_NOBODY/xdg/shmbench" "$AS_NOBODY/bin"; chmod 0777 "$AS_NOBODY"
echo podman > "$AS_NOBODY/xdg/shmbench/run-0123456789abcdef"
printf '#!/bin/sh\necho "$@" >> %s/podman.called\n' "$AS_NOBODY" > "$AS_NOBODY/bin/podman"
chmod 0755 "$AS_NOBODY/bin/podman"
setpriv --reuid 65534 --regid 65534 --clear-groups env XDG_RUNTIME_DIR="$AS_NOBODY/xdg" HOME=/nonexistent \
  PATH="$AS_NOBODY/bin:$PATH" "$AS_NOBODY/shmbench" sweep > "$OUT/planted.out" 2>&1
[ -e "$AS_NOBODY/podman.called" ] && cat "$AS_NOBODY/podman.called" > "$OUT/planted_called"
rm -rf "$AS_NOBODY"
ls -a /dev/shm > "$OUT/nobody_shm"
now_run_dir=$([ -e /tmp/podman-run-65534 ] && echo yes || echo no)
echo "$had_run_dir $now_run_dir" > "$OUT/run_dir"
(pgrep -u 65534 -a . || true) > "$OUT/nobody_procs"
"#;

#[test]
fn a_host_run_as_root_or_a_user_starts_no_container_engine() {
    if !require(
        "podman",
        || which("podman"),
        "podman (Debian: apt-get install podman)",
    ) {
        return;
    }
    let _guard = serial();
    let run = ScriptRun::of("live-host-run", HOST_RUNS);
    let read = |name: &str| run.read(name);
    assert_eq!(read("root.rc").trim(), "0", "{}", read("root.out"));
    assert_eq!(read("nobody.rc").trim(), "0", "{}", read("nobody.out"));
    for listing in ["root_shm", "nobody_shm"] {
        let names = read(listing);
        assert!(
            !names.contains("libpod"),
            "{listing}: Podman's lock appeared: {names}"
        );
    }
    assert_ne!(
        read("run_dir").trim(),
        "no yes",
        "Podman's run directory appeared"
    );
    assert_eq!(
        read("planted_called"),
        "",
        "a planted record started Podman: {}",
        read("planted.out")
    );
    let procs = read("nobody_procs");
    assert!(
        !procs.contains("podman") && !procs.contains("catatonit"),
        "{procs}"
    );
}
