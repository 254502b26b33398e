//! Criterion benches of `watch`'s sampler, part by part, over a real tree of 9 processes (a main
//! and 8 "workers", each holding a 1 MiB /dev/shm segment through an fd): the sample taken every
//! interval (fstatvfs of /dev/shm, the cgroup's memory use when the job has a limit), the census of the tree taken every
//! 250 ms, and the attribution walk taken only when the peak rises. Their ratios to the 10 ms
//! interval are the sampler's share of one core; `shmbench bench` measures it on a whole watch.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use shmbench::cell::command::sampler;
use shmbench::sys::{cgroup, proc_tree, shm};

/// A process tree that holds shared memory: `python3` when there is one, else `sh`.
struct Tree(Child);

impl Tree {
    fn start() -> Tree {
        let script = "for i in 1 2 3 4 5 6 7 8; do (exec 3<>/dev/shm/shmbench-bench-$$-$i; head -c 1048576 /dev/zero >&3; sleep 600) & done; wait";
        let child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .spawn()
            .expect("sh starts");
        std::thread::sleep(Duration::from_millis(300));
        Tree(child)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let pid = self.0.id();
        for p in proc_tree::descendants(pid) {
            // SAFETY: plain syscall on our own descendants.
            unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        for i in 1..=8 {
            let _ = std::fs::remove_file(format!("/dev/shm/shmbench-bench-{pid}-{i}"));
        }
    }
}

fn sampler_parts(c: &mut Criterion) {
    let tree = Tree::start();
    let root = tree.0.id();
    let shm_dir = shm::OpenShm::open().expect("/dev/shm opens");
    let cgroup_use = cgroup::UsageFile::open();
    let mut group = c.benchmark_group("watch_sampler");
    group.bench_function("sample (fstatvfs + cgroup use)", |b| {
        b.iter(|| {
            let used = shm_dir.usage().1;
            let cgroup = cgroup_use.as_ref().and_then(cgroup::UsageFile::bytes);
            (used, cgroup)
        })
    });
    group.bench_function("census (9 processes)", |b| {
        b.iter(|| sampler::census(root, &[], false))
    });
    group.bench_function("attribution (9 processes, 8 segments)", |b| {
        b.iter(|| {
            let (holders, _ids) = sampler::attribute(root);
            assert!(holders.iter().any(|h| !h.segments.is_empty()));
            holders
        })
    });
    group.finish();
    drop(tree);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = sampler_parts
}
criterion_main!(benches);
