"""The pre-flight check: will this DataLoader's shared memory fit in this node's /dev/shm?

Called with a live `torch.utils.data.DataLoader` before iterating it, it reads the loader's
settings (workers, prefetch, batch size, pin_memory, persistent workers, start method, sharing
strategy), measures one sample's tensors in this process (`dataset[0]`: no worker is started),
counts the tensors the Dataset holds when its start method pickles it to the workers
(forkserver, Python 3.14's default, or spawn), and asks the shmbench binary's doctor for the
peak and for what this process's /dev/shm, memory cgroup and RLIMIT_NOFILE give. It warns, or
raises `PreflightError` with the fix for the platform it detects, when the loader cannot fit.
"""

import json
import multiprocessing
import os
import subprocess
import sys
import warnings

from ._binary import binary

# Collate turns a Python number into one 8-byte element per sample (int64, float64).
NUMBER_BYTES = 8


class PreflightError(RuntimeError):
    """The loader's peak does not fit in this node's /dev/shm; the message carries the fix."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class Preflight:
    """What the check found: the need, what this node has, the verdict and the fixes."""

    def __init__(self, need_bytes, have_bytes, fits, verdict, fixes, platform, doctor):
        self.need_bytes = need_bytes
        self.have_bytes = have_bytes
        self.fits = fits
        self.verdict = verdict
        self.fixes = fixes
        self.platform = platform
        self.doctor = doctor

    def __bool__(self):
        return self.fits

    def __repr__(self):
        return (
            f"Preflight(fits={self.fits}, need={_size(self.need_bytes)}, "
            f"have={_size(self.have_bytes)}, platform={self.platform!r})"
        )

    def message(self):
        """The need against what this node has and, when it does not fit, the first fix."""
        need, have = _size(self.need_bytes), _size(self.have_bytes)
        if self.fits:
            return f"shmbench pre-flight: the loaders' peak {need} of /dev/shm fits in the {have} free here"
        text = (
            f"shmbench pre-flight: the loaders need about {need} of /dev/shm at their peak, "
            f"but only {have} is free here ({self.platform}): training would fail within its first batches"
        )
        if self.fixes:
            fix = self.fixes[0]
            text += f". Fix: {fix['title']}: {fix['commands'][0].splitlines()[0]}"
        return text


def _size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _tensor_bytes(value, torch):
    """Bytes one sample puts in a batch: tensors and arrays by their size, numbers as collate
    makes them (8 bytes each), containers summed, anything else nothing."""
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and hasattr(value, "dtype"):
        return nbytes
    if isinstance(value, (bool, int, float)):
        return NUMBER_BYTES
    if isinstance(value, dict):
        return sum(_tensor_bytes(v, torch) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v, torch) for v in value)
    return 0


def _held_tensor_bytes(dataset, torch):
    """Bytes of the tensors a Dataset object holds (its attributes, and lists, tuples and dicts
    of tensors among them), each storage once: what forkserver and spawn pickle to the workers
    through shared memory."""
    seen = set()
    total = 0

    def add(value, depth):
        nonlocal total
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            key = storage.data_ptr()
            if key not in seen:
                seen.add(key)
                total += storage.nbytes()
        elif depth < 2 and isinstance(value, (list, tuple)):
            for v in value:
                add(v, depth + 1)
        elif depth < 2 and isinstance(value, dict):
            for v in value.values():
                add(v, depth + 1)

    for value in getattr(dataset, "__dict__", {}).values():
        add(value, 0)
    return total


def _start_method(loader):
    """The start method the loader's workers will use, without fixing the process's default."""
    context = loader.multiprocessing_context
    if isinstance(context, str):
        return context
    if context is not None:
        return context.get_start_method()
    chosen = multiprocessing.get_start_method(allow_none=True)
    if chosen:
        return chosen
    default = getattr(getattr(multiprocessing.context, "_default_context", None), "_default_context", None)
    name = getattr(default, "_name", None)
    if name:
        return name
    return "forkserver" if sys.version_info >= (3, 14) else "fork"


def _batch_size(loader):
    if loader.batch_size is not None:
        return loader.batch_size
    if loader.batch_sampler is None:
        # batch_size=None: no batching, each sample goes through /dev/shm on its own.
        return 1
    # A batch_sampler of its own: its first batch's length (the sampler runs here, not a worker).
    first = next(iter(loader.batch_sampler), None)
    return len(first) if first is not None else 1


def _sample(loader, sample, torch):
    if sample is not None:
        return sample
    dataset = loader.dataset
    if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__getitem__"):
        raise ValueError(
            "shmbench.preflight: this loader's dataset is iterable-style, so no sample can be "
            "read without iterating it; pass one: preflight(loader, sample=next(iter(dataset)))"
        )
    return dataset[0]


def _loader_args(loader, sample, torch):
    """The doctor's flags for one loader: its batch in bytes (a batch of 1-byte samples keeps
    every size exact whatever the sample's shape), its settings, and the tensors the Dataset
    holds when the start method pickles it."""
    sample_bytes = max(1, _tensor_bytes(_sample(loader, sample, torch), torch))
    batch_bytes = _batch_size(loader) * sample_bytes
    method = _start_method(loader)
    held = 0 if method == "fork" else _held_tensor_bytes(loader.dataset, torch)
    return {
        "workers": loader.num_workers,
        "prefetch": loader.prefetch_factor or 2,
        "batch_bytes": batch_bytes,
        "start_method": method,
        "dataset_bytes": held,
        "pin_memory": bool(loader.pin_memory),
        "persistent_workers": bool(loader.persistent_workers),
    }


def preflight(loader, *, ranks=None, other_loaders=(), sample=None, raise_on="fail", timeout=30):
    """Checks `loader` (and `other_loaders`, which the same process runs at once) against this
    node's /dev/shm before the first batch. `ranks`: processes per node running the same loaders
    (default: LOCAL_WORLD_SIZE, as torchrun sets it, else 1). `sample`: one sample, for an
    iterable-style dataset. `raise_on="fail"` raises PreflightError when the loaders cannot fit;
    `raise_on=None` only warns. Returns a Preflight."""
    import torch

    if raise_on not in ("fail", None):
        raise ValueError(f"raise_on={raise_on!r}: give 'fail' or None")
    if ranks is None:
        ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    loaders = [(loader, sample)] + [(other, None) for other in other_loaders]
    specs = [_loader_args(l, s, torch) for l, s in loaders]
    with_workers = [s for s in specs if s["workers"] > 0]
    if not with_workers:
        # The main process loads every batch itself: nothing goes through /dev/shm.
        return Preflight(0, 0, True, "no worker processes (num_workers=0): no batch goes through /dev/shm", [], "any", {})
    main = with_workers[0]
    strategy = torch.multiprocessing.get_sharing_strategy()
    profile = "modern" if _torch_minor(torch.__version__) >= (2, 10) else "legacy"
    args = [
        binary(), "doctor", "--format", "json",
        "--ranks", str(ranks),
        "--shape", "1", "--dtype", "u8",
        "--workers", str(main["workers"]),
        "--prefetch", str(main["prefetch"]),
        "--batch", str(main["batch_bytes"]),
        "--strategy", strategy,
        "--torch", profile,
        "--pin-memory", "true" if main["pin_memory"] else "false",
        "--persistent-workers", "true" if main["persistent_workers"] else "false",
        "--start-method", main["start_method"],
        "--dataset-bytes", str(main["dataset_bytes"]),
    ]
    if len(with_workers) > 1:
        # Each loader with its own Dataset's tensors: its start method pickles them to its own
        # workers, once per loader.
        args += ["--loaders", ",".join(
            f"loader{i}:{s['workers']}x{s['prefetch']}x{s['batch_bytes']}+{s['dataset_bytes']}"
            for i, s in enumerate(with_workers)
        )]
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"shmbench doctor failed ({done.returncode}): {done.stderr.strip()}")
    doctor = json.loads(done.stdout)
    result = Preflight(
        need_bytes=doctor["job"]["node_bytes"],
        have_bytes=doctor["environment"]["shm_free_bytes"],
        fits=doctor["fits"],
        verdict=doctor["verdict"],
        fixes=doctor["fixes"],
        platform=doctor["target"],
        doctor=doctor,
    )
    if not result.fits:
        if raise_on == "fail":
            raise PreflightError(result.message(), result)
        warnings.warn(result.message(), RuntimeWarning, stacklevel=2)
    return result


def _torch_minor(version):
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)
