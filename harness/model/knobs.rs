//! The loader and isolation knobs of one cell, declared once.
//!
//! [`Knobs`] is the partial form: every field optional, deserialised from scenario TOML and parsed
//! from `run`/`matrix` flags with the *same names* (`--shm-size` is `shm-size` in a scenario).
//! Layers of knobs (scenario defaults, a cell's own keys, CLI overrides) are overlaid in that order
//! and then resolved (`plan::resolve`) into a [`CellConfig`](super::config::CellConfig). The
//! defaults are the how-to's seed setup.

use super::knob_decl::knobs;
pub use super::knob_decl::{ColumnReader, ColumnWriter};
pub use super::knob_decl::{KnobSpec, Role};

use super::cpus::CpuList;
pub use super::knob_types::*;
use super::size::ByteSize;
use super::vm::Accel;

knobs! {
    #[value_name = "LOADER"]
    loader: Loader => Loader = Some(Loader::Emulated), identity, row loader,
        "What runs the loader: emulated (shmbench's emulation of torch's DataLoader) or torch (the real DataLoader, run by --python)";
    #[value_name = "PATH"]
    python: String => String = Some("python3".to_string()), setting("the interpreter's path; the torch version it runs is recorded beside the cell"), row none,
        "Python interpreter of torch cells: one with torch installed (python3 -m venv V && V/bin/pip install torch)";
    #[value_name = "DATASET"]
    dataset: String => Option<String> = None, setting("a path on this machine, which says nothing of the data it held then: the row records the samples' shape and dtype, read from it"), row none,
        "Torch loader: your own map-style Dataset in place of the synthetic one: FILE.py:NAME (NAME in FILE.py, a Dataset or a function returning one; FILE's folder goes on the import path, so workers find it under every start method) or FILE.pkl (a pickled Dataset, as the wheel's shmbench.tune(loader) writes). Its samples are cycled for steps x batch. Runs your code";
    #[value_name = "IMAGE"]
    image: String => Option<String> = None, identity, row image,
        "Docker: run the cell in this local image (e.g. your training image, whose python3 runs torch cells) instead of the one shmbench builds; shmbench mounts its own binary into it read-only. Implies runtime docker";
    #[value_name = "RUNTIME"]
    runtime: RuntimeKind => RuntimeKind = Some(RuntimeKind::Auto), identity, row runtime,
        "How to run it: auto (docker for container=docker when an engine answers, else namespace when shm-size is set, else host), host, namespace, docker, vm (a QEMU VM booting --kernel)";
    #[value_name = "CONTAINER"]
    container: ContainerKind => ContainerKind = Some(ContainerKind::None), identity, row container,
        "The setup the cell stands for: none, or docker (runs in Docker with runtime auto when an engine answers)";
    #[value_name = "IPC"]
    ipc: IpcMode => IpcMode = Some(IpcMode::Private), identity, row ipc,
        "Docker --ipc: private, shareable, host (host: the machine's /dev/shm)";
    #[value_name = "SIZE"]
    memory: ByteSize => Option<ByteSize> = None, identity, row memory_bytes,
        "Memory limit (Docker --memory, or a memory cgroup around a namespace cell or inside a VM guest); tmpfs pages count against it, so a cell can end OOM-killed";
    #[value_name = "BOOL"]
    shm_tmpfs: bool => bool = Some(false), identity, row shm_tmpfs,
        "Docker: mount /dev/shm as a tmpfs of shm-size (a Kubernetes emptyDir, medium: Memory) instead of --shm-size";
    #[value_name = "SIZE"]
    shm_size: ByteSize => Option<ByteSize> = None, identity, row shm_bytes,
        "Size of the cell's /dev/shm tmpfs, e.g. 64m, 2g (Docker units); unset = this machine's /dev/shm";
    #[value_name = "STRATEGY"]
    strategy: Strategy => Strategy = Some(Strategy::FileDescriptor), identity, row strategy,
        "Sharing strategy: file_descriptor, file_system, memfd, disk (disk is not a torch strategy)";
    #[value_name = "TORCH"]
    torch: TorchProfile => TorchProfile = Some(TorchProfile::Legacy), identity, row torch,
        "Allocation profile: legacy (torch <= 2.9, SIGBUS) or modern (torch >= 2.10, ENOSPC)";
    #[value_name = "WORKERS"]
    workers: u32 => u32 = Some(8), identity, row workers,
        "DataLoader num_workers (worker processes)";
    #[value_name = "PREFETCH"]
    prefetch: u32 => u32 = Some(2), identity, row prefetch,
        "DataLoader prefetch_factor (batches outstanding per worker)";
    #[value_name = "BATCH"]
    batch: u32 => u32 = Some(128), identity, row batch,
        "Images per batch";
    #[value_name = "DIMS"]
    shape: Shape => Shape = Some(Shape(vec![3, 224, 224])), identity, row shape,
        "One image's shape, e.g. 3x224x224";
    #[value_name = "DTYPE"]
    dtype: Dtype => Dtype = Some(Dtype::F32), identity, row dtype,
        "Element type: f32, f16, bf16, u8";
    #[value_name = "STEPS"]
    steps: u64 => u64 = Some(100), identity, row steps,
        "Training steps (batches consumed) per epoch";
    #[value_name = "EPOCHS"]
    epochs: u32 => u32 = Some(1), identity, row epochs,
        "Epochs";
    #[value_name = "BOOL"]
    persistent_workers: bool => bool = Some(true), identity, row persistent_workers,
        "Keep workers across epochs (false: respawn them every epoch)";
    #[value_name = "BOOL"]
    pin_memory: bool => bool = Some(false), identity, row pin_memory,
        "Copy each batch out of shared memory as it arrives and release the segment at once";
    #[value_name = "TOUCH"]
    touch: Touch => Touch = Some(Touch::All), identity, row touch,
        "How much of each batch the training loop reads: all, first, none";
    #[value_name = "MS"]
    compute_ms: f64 => f64 = Some(0.0), identity, row compute_ms,
        "Accelerator time per step in milliseconds (the main waits, CPU idle)";
    #[value_name = "US"]
    decode_us: u64 => u64 = Some(0), identity, row decode_us,
        "Worker CPU time per image in microseconds (decode/augment cost)";
    #[value_name = "US"]
    main_us: u64 => u64 = Some(0), identity, row main_us,
        "Emulated loader: main-loop CPU time per batch in microseconds beyond reading it (what real torch's main spends unpickling, receiving the fd, rebuilding and freeing storages, and in its intra-op threads; `fidelity` shows torch's main CPU per step against the emulation's); 0 = the bare data path";
    #[value_name = "N"]
    retain_every: u64 => u64 = Some(0), identity, row retain_every,
        "Keep every Nth batch alive forever (the leak that makes late crashes); 0 = off";
    #[value_name = "N"]
    nofile: u64 => Option<u64> = None, identity, row nofile,
        "RLIMIT_NOFILE soft limit of the cell's processes (`ulimit -n N`): where file_descriptor's one fd per live batch runs out; unset = the inherited limit";
    #[value_name = "SIZE"]
    shm_remount: ByteSize => Option<ByteSize> = None, identity, row shm_remount_bytes,
        "Namespace cell: once its /dev/shm is mounted at shm-size, resize it with `mount -o remount,size=SIZE`, the bare-host fix, before the loader starts; unset = no remount";
    #[value_name = "KERNEL"]
    kernel: String => Option<String> = None, identity, row vm_kernel,
        "runtime vm: the kernel to boot, a bzImage's path or debian:VERSION (Debian's linux-image-VERSION, fetched with apt-get download into the cache), e.g. debian:6.1.0-57-cloud-amd64";
    #[value_name = "SIZE"]
    vm_memory: ByteSize => ByteSize = Some(ByteSize(3 << 30)), identity, row vm_memory_bytes,
        "runtime vm: the VM's memory (its /dev/shm tmpfs pages live in it)";
    #[value_name = "N"]
    vm_cpus: u32 => u32 = Some(2), identity, row vm_cpus,
        "runtime vm: the VM's CPUs";
    #[value_name = "SECONDS"]
    vm_boot_s: f64 => f64 = Some(90.0), setting("the watchdog of a VM's boot"), row none,
        "runtime vm: seconds a guest may stay silent while it boots and starts its cell, beyond timeout-s (TCG on a busy machine boots slowly)";
    #[value_name = "ACCEL"]
    accel: Accel => Accel = Some(Accel::Auto), identity, row vm_accel,
        "runtime vm: kvm, tcg (QEMU's software emulation: outcomes hold, speeds do not), or auto (kvm when a probe VM boots with it, else tcg)";
    #[value_name = "LIST"]
    cpus: CpuList => Option<CpuList> = None, identity, row cpus,
        "CPUs the cell's processes may run on, as taskset writes them (0, 0-1, 0,2-3): the same cores run after run, recorded in the row (docker: --cpuset-cpus too); unset = any";
    #[value_name = "N"]
    warmup_steps: u64 => u64 = Some(5), setting("which steps img/s leaves out: a way of measuring, not the cell"), row warmup_steps,
        "Steps excluded from img/s (at most half the steps are ever excluded)";
    #[value_name = "BOOL"]
    trace: bool => bool = Some(true), setting("following the cell's processes with ptrace to catch a fault at its delivery: a way of observing, not the cell"), row none,
        "Follow the cell's processes with ptrace and catch each SIGBUS and SIGSEGV at its delivery, to name its cause (docs/EXPLAIN.md); false for a job that traces itself (gdb, py-spy)";
    #[value_name = "SECONDS"]
    timeout_s: f64 => f64 = Some(120.0), setting("the watchdog: a cell that ends by it has a timeout outcome"), row none,
        "Watchdog: a cell with no progress for this long ends as timeout";
    @added {
        #[value_name = "START_METHOD"]
        start_method: StartMethod => StartMethod = Some(StartMethod::Fork), identity,
            "How DataLoader workers start (multiprocessing_context): fork (Linux's default through Python 3.13), forkserver (Python 3.14's default) or spawn. Under forkserver and spawn the Dataset is pickled to the workers and the tensors it holds (dataset-bytes) move into shared memory as the first worker starts";
        #[value_name = "SIZE"]
        dataset_bytes: ByteSize => u64 = Some(ByteSize(0)), identity,
            "Bytes of tensors the Dataset object holds (a cache, a lookup table, preloaded labels): inherited by fork workers, in /dev/shm from the first forkserver or spawn worker's start; 0 = none";
        #[value_name = "ENGINE"]
        engine: EngineKind => EngineKind = Some(EngineKind::Docker), identity,
            "The container engine of runtime docker: docker, or podman (its Docker-compatible service; started on a socket of the run's own and stopped after when none answers). Podman's default /dev/shm is 64000k, not 64 MiB. podman implies runtime docker";
        #[value_name = "INJECT"]
        inject: Inject => Inject = Some(Inject::None), identity,
            "Emulated loader: make a cause of a Bus error happen mid-run (docs/EXPLAIN.md): truncated-file (the workers read a mapped dataset file the main truncates), kill-bus (the main sends a worker SIGBUS), huge-pages (a worker writes a hugetlb mapping with no huge page free; skipped, and the cell passes, where huge pages are free), segment-removed (strategy file_system: a batch's segment removed from /dev/shm by another process before the main opens it), memory-error (a worker's page poisoned with MADV_HWPOISON: only in a VM guest, `--runtime vm` or `--kernels`, whose kernel has CONFIG_MEMORY_FAILURE; elsewhere the cell is an error); none";
        #[value_name = "NAME"]
        oci_runtime: OciRuntime => OciRuntime = Some(OciRuntime::default()), identity,
            "The OCI runtime the engine starts the container with: default (the engine's), runc, crun, runsc (gVisor), or any runtime the engine has registered; the row records its version. Any value but default implies runtime docker";
    }
}

impl Default for KnobValues {
    /// Every knob at its default.
    fn default() -> KnobValues {
        Knobs::default().settle()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_takes_the_top_layer() {
        let mut base = Knobs {
            workers: Some(2),
            batch: Some(8),
            ..Knobs::default()
        };
        base.overlay(&Knobs {
            workers: Some(4),
            ..Knobs::default()
        });
        assert_eq!(base.workers, Some(4));
        assert_eq!(base.batch, Some(8));
    }

    #[test]
    fn every_knob_settles_from_its_default_and_is_specified_once() {
        // `settle` panics on a knob that must have a value and has no default.
        let values = Knobs::default().settle();
        assert_eq!(values.workers, 8);
        assert_eq!(values.shm_size, None);
        let keys: Vec<&str> = Knobs::SPECS.iter().map(|s| s.key).collect();
        assert_eq!(keys, Knobs::KEYS);
    }

    #[test]
    fn the_added_knobs_default_as_the_resolved_defaults_do() {
        assert_eq!(
            AddedKnobs::default(),
            AddedKnobs::of(&KnobValues::default())
        );
    }

    #[test]
    fn a_record_without_a_knob_reads_as_its_default() {
        let values: KnobValues = serde_json::from_str(r#"{"workers": 3}"#).unwrap();
        assert_eq!(values.workers, 3);
        assert_eq!(
            values.persistent_workers,
            KnobValues::default().persistent_workers
        );
    }

    #[test]
    fn shapes_parse_and_reject() {
        assert_eq!(
            "3x224x224".parse::<Shape>().unwrap().elements(),
            Some(150_528)
        );
        assert!("3x0x2".parse::<Shape>().is_err());
        assert!("abc".parse::<Shape>().is_err());
    }
}
