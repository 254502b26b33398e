//! Criterion benches of the data path's pieces: sample production (batch fill), a fresh segment
//! per strategy and profile (create, allocate, map, copy in, release), an fd round trip over the
//! worker socket, and a small end-to-end host cell. Ratios between them, measured in one run,
//! say where a cell's time goes; `shmbench bench` checks the targets on whole cells.

use std::os::fd::AsFd;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use shmbench::cell::loader::synth::Pattern;
use shmbench::cell::loader::{segment, wire};
use shmbench::model::knobs::{Knobs, RuntimeKind, Strategy, TorchProfile};
use shmbench::plan::resolve::{Identity, Platform, Resolve};

/// 8 ImageNet-sized f32 images: the small batch the tests use (4.6 MiB).
const IMAGE: usize = 3 * 224 * 224 * 4;
const BATCH: usize = 8 * IMAGE;

fn batch_fill(c: &mut Criterion) {
    let pattern = Pattern::new(IMAGE, 1);
    let mut private = vec![0u8; BATCH];
    let mut group = c.benchmark_group("batch_fill");
    group.throughput(Throughput::Bytes(BATCH as u64));
    group.bench_function("8 images", |b| {
        let mut idx = 0u64;
        b.iter(|| {
            for (i, image) in private.chunks_mut(IMAGE).enumerate() {
                pattern.fill(image, idx, i as u64);
            }
            idx += 1;
        })
    });
    group.finish();
}

fn fresh_segment(c: &mut Criterion) {
    let private = vec![7u8; BATCH];
    let mut group = c.benchmark_group("fresh_segment");
    group.throughput(Throughput::Bytes(BATCH as u64));
    let owner = segment::new_owner().expect("an owner record in /dev/shm");
    for strategy in [
        Strategy::FileDescriptor,
        Strategy::FileSystem,
        Strategy::Memfd,
        Strategy::Disk,
    ] {
        for torch in [TorchProfile::Legacy, TorchProfile::Modern] {
            let id = BenchmarkId::new(strategy.to_string(), torch.to_string());
            group.bench_with_input(id, &(strategy, torch), |b, &(strategy, torch)| {
                let mut seq = 0u64;
                b.iter(|| {
                    let name = segment::segment_name(owner.token(), 0, seq);
                    seq += 1;
                    let mut seg =
                        segment::create(strategy, torch, BATCH as u64, &name).expect("segment");
                    seg.map.as_mut_slice().copy_from_slice(&private);
                    drop(seg.map);
                    if let Some(n) = &seg.name {
                        segment::unlink_named(n);
                    }
                })
            });
        }
    }
    group.finish();
    drop(owner); // removes what an interrupted iteration left
}

fn fd_round_trip(c: &mut Criterion) {
    let (a, b) = wire::pair().expect("socket pair");
    let file = std::fs::File::open("/proc/self/exe").expect("an fd to pass");
    c.bench_function("fd_round_trip", |bench| {
        bench.iter(|| {
            let msg = wire::FromWorker::Batch {
                idx: 1,
                bytes: 1,
                name: None,
            };
            wire::send(a.as_fd(), &msg, Some(file.as_fd())).expect("send");
            let got = match wire::recv::<wire::FromWorker>(b.as_fd()) {
                Ok(got) => got,
                Err(e) => panic!("recv: {e:?}"),
            };
            assert!(got.fd.is_some());
        })
    });
}

fn end_to_end(c: &mut Criterion) {
    // A host cell of 2 workers, batch 8, 20 steps, through the real `shmbench cell` process.
    let knobs = Knobs {
        runtime: Some(RuntimeKind::Host),
        workers: Some(2),
        batch: Some(8),
        steps: Some(20),
        ..Knobs::default()
    };
    let config = knobs
        .resolve(Identity::default(), &Platform::fixed(1 << 34, false))
        .expect("config");
    let json = serde_json::to_string(&config).expect("json");
    let bin = env!("CARGO_BIN_EXE_shmbench");
    let mut group = c.benchmark_group("end_to_end");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(8 * 20));
    group.bench_function("host cell 2x8x20", |b| {
        b.iter(|| {
            let out = std::process::Command::new(bin)
                .args(["cell", &json])
                .output()
                .expect("cell");
            assert!(out.status.success());
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    batch_fill,
    fresh_segment,
    fd_round_trip,
    end_to_end
);
criterion_main!(benches);
