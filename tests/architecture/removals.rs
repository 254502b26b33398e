//! Removals: a file in a tmpfs a node shares (/dev/shm) is removed only through
//! `sys/lease_removal.rs`'s proof (issue 57: two deletion paths had held two standards); the
//! other files that remove something each say what and why.

use std::path::Path;

use crate::{fake, read_tree, scan, Tree};

/// The files that may remove a file, each with why; any other file that calls a removal is
/// named. A tmpfs a node shares (/dev/shm) is emptied only through `sys/lease_removal.rs`'s
/// proof (issue 57: two deletion paths had two standards).
const REMOVERS: [(&str, &str); 12] = [
    (
        "harness/sys/lease_removal.rs",
        "the one proven removal from a shared tmpfs",
    ),
    (
        "harness/sys/owner.rs",
        "a run's record in its private 0700 run directory",
    ),
    (
        "harness/cell/loader/segment.rs",
        "the loader unlinks the segments it made: the one it just mapped, as torch does, and (the segment-removed injection) one named with its own token",
    ),
    (
        "harness/cli/internal.rs",
        "its own temporary file beside an output",
    ),
    ("harness/results/csv.rs", "its own unfinished results file"),
    (
        "harness/results/merge.rs",
        "the folder it made for a merged file, while empty, when the merge did not finish",
    ),
    (
        "harness/runtime/docker/bundle.rs",
        "its own staging directory of an image bundle",
    ),
    (
        "harness/runtime/docker/podman.rs",
        "a dead run's Podman service directory, proven by its token",
    ),
    (
        "harness/runtime/scratch.rs",
        "a dead run's torch cell folder under /tmp, proven by its token, nothing of it held",
    ),
    (
        "harness/runtime/vm/initramfs.rs",
        "its own stale initramfs in the cache",
    ),
    ("harness/sys/image_use.rs", "its own image lock files"),
    (
        "harness/sys/memory_cgroup.rs",
        "a dead run's memory cgroup, proven by its token",
    ),
];

/// Harness files that call a file or directory removal but are not in [`REMOVERS`].
fn unlisted_removals(tree: &Tree) -> Vec<String> {
    const CALLS: [&str; 7] = [
        "remove_file(",
        "remove_dir(",
        "remove_dir_all(",
        "unlinkat(",
        "shm_unlink(",
        "unistd::unlink(",
        "libc::unlink(",
    ];
    tree.values()
        .filter(|(file, src)| {
            !REMOVERS.iter().any(|(allowed, _)| allowed == file)
                && CALLS.iter().any(|c| scan::code_only(src).contains(c))
        })
        .map(|(file, _)| {
            format!("{file}: removes a file; a file in /dev/shm goes only through sys/lease_removal.rs (list it in REMOVERS with why, if it is not in a shared tmpfs)")
        })
        .collect()
}

#[test]
fn only_the_proven_removal_removes_from_a_shared_tmpfs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = read_tree(root);
    let found = unlisted_removals(&tree);
    assert!(found.is_empty(), "\n{}\n", found.join("\n"));
    // And the check finds one.
    let planted = fake(&[(
        "sys::sweeper",
        "fn f() { let _ = std::fs::remove_file(\"/dev/shm/x\"); }",
    )]);
    assert_eq!(unlisted_removals(&planted).len(), 1);
}
