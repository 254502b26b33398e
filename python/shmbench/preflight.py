"""The pre-flight check: will this DataLoader's shared memory fit in this node's /dev/shm?

Called with a live `torch.utils.data.DataLoader` before iterating it, it reads the loader's
settings (workers, prefetch, batch size, pin_memory, persistent workers, start method, sharing
strategy), measures one sample's tensors in this process (the sample at the loader's own first
index: no worker is started, and every random number generator is left as it was found),
counts the tensors the Dataset holds, through any Subset or ConcatDataset around it, when its
start method pickles it to the workers (forkserver, Python 3.14's default, or spawn), and asks
the shmbench binary's doctor for the peak and for what this process's /dev/shm, memory cgroup
and RLIMIT_NOFILE give. It warns, or raises `PreflightError` with the fix for the platform it
detects, when the loader cannot fit.
"""

import contextlib
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import warnings

from ._binary import binary

# Collate turns a Python number into one 8-byte element per sample (int64, float64).
NUMBER_BYTES = 8
# The doctor's batch counts are 32-bit.
U32_MAX = (1 << 32) - 1
# Lists, tuples and dicts are followed this deep inside a Dataset's attributes for tensors.
CONTAINER_DEPTH = 2


class PreflightError(RuntimeError):
    """The loader's peak does not fit in this node's /dev/shm; the message carries the fix."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


class Preflight:
    """What the check found: the need, what this node has, the verdict and the fixes. When the
    check could not run (`raise_on=None`), `fits` is None and `error` says why."""

    def __init__(self, need_bytes, have_bytes, fits, verdict, fixes, platform, doctor, error=None):
        self.need_bytes = need_bytes
        self.have_bytes = have_bytes
        self.fits = fits
        self.verdict = verdict
        self.fixes = fixes
        self.platform = platform
        self.doctor = doctor
        self.error = error

    @classmethod
    def unchecked(cls, error):
        return cls(0, 0, None, f"not checked: {error}", [], "unknown", {}, error=error)

    def __bool__(self):
        return self.fits is True

    def __repr__(self):
        if self.error is not None:
            return f"Preflight(fits=None, error={self.error!r})"
        return (
            f"Preflight(fits={self.fits}, need={_size(self.need_bytes)}, "
            f"have={_size(self.have_bytes)}, platform={self.platform!r})"
        )

    def message(self):
        """The need against what this node has and, when it does not fit, the first fix."""
        if self.error is not None:
            return f"shmbench pre-flight could not check the loaders: {self.error}"
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


def _wraps_datasets(value, torch):
    """Whether `value` is a Dataset, or holds datasets as torch's wrappers do (`Subset` and what
    `random_split` returns: `.dataset`; `ConcatDataset`, `ChainDataset`: `.datasets`)."""
    if isinstance(value, torch.utils.data.Dataset):
        return True
    held = getattr(value, "__dict__", None)
    return isinstance(held, dict) and ("dataset" in held or "datasets" in held)


def _held_tensor_bytes(dataset, torch):
    """Bytes of the CPU tensors a Dataset object holds (its attributes, and lists, tuples and
    dicts of tensors among them), following the datasets it wraps, each storage once: what
    forkserver and spawn pickle to the workers through shared memory. A `Subset` holds nothing
    itself; its `.dataset` does, and is pickled whole with it."""
    seen_storages = set()
    seen_objects = set()
    total = 0

    def add_tensor(tensor):
        nonlocal total
        if tensor.device.type != "cpu":
            return  # CUDA tensors go to the workers through CUDA IPC, not /dev/shm.
        try:
            storage = tensor.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
            key, nbytes = id(tensor), tensor.element_size() * tensor.nelement()
        if key and key not in seen_storages:
            seen_storages.add(key)
            total += nbytes

    def add(value, depth):
        if isinstance(value, torch.Tensor):
            add_tensor(value)
        elif isinstance(value, (list, tuple)) and depth < CONTAINER_DEPTH:
            for v in value:
                add(v, depth + 1)
        elif isinstance(value, dict) and depth < CONTAINER_DEPTH:
            for v in value.values():
                add(v, depth + 1)
        elif not isinstance(value, type) and _wraps_datasets(value, torch):
            add_dataset(value)

    def add_dataset(obj):
        if id(obj) in seen_objects:
            return
        seen_objects.add(id(obj))
        for value in list(getattr(obj, "__dict__", {}).values()):
            add(value, 0)

    add_dataset(dataset)
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


def _generators(loader, torch):
    """The torch.Generators the loader's sampling draws from: its own, its samplers'."""
    found = {}
    holders = [loader, loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None)]
    for holder in holders:
        generator = getattr(holder, "generator", None)
        if isinstance(generator, torch.Generator):
            found[id(generator)] = generator
    return list(found.values())


@contextlib.contextmanager
def _rng_kept(loader, torch):
    """Every random number generator the check's sampling can draw from, as it was found:
    Python's `random`, NumPy's global one (when NumPy is imported), torch's CPU one, CUDA's
    (when CUDA is initialized; asking would initialize it) and the loader's own generators. A
    seeded run sees the same first batch with the check as without it."""
    python_state = random.getstate()
    numpy_random = sys.modules.get("numpy.random")
    numpy_state = numpy_random.get_state() if numpy_random is not None else None
    cpu_state = torch.get_rng_state()
    cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    generators = [(g, g.get_state()) for g in _generators(loader, torch)]
    try:
        yield
    finally:
        random.setstate(python_state)
        if numpy_state is not None:
            numpy_random.set_state(numpy_state)
        torch.set_rng_state(cpu_state)
        if cuda_states is not None:
            torch.cuda.set_rng_state_all(cuda_states)
        for generator, state in generators:
            generator.set_state(state)


def _first_indices(loader, torch):
    """The indices of the loader's first batch (one index when it does not batch), as its own
    sampler gives them, from a fresh iterator of it (the loader makes its own each epoch). A
    torch RandomSampler's indices are 0..len-1 whatever its permutation: 0, without drawing one
    (its permutation of a large Dataset is a list as long as the Dataset)."""
    sampler = loader.sampler
    if loader.batch_sampler is None:
        if type(sampler) is torch.utils.data.RandomSampler and len(sampler.data_source) > 0:
            return [0]
        first = next(iter(sampler), None)
        return None if first is None else [first]
    inner = getattr(loader.batch_sampler, "sampler", None)
    if (
        type(loader.batch_sampler) is torch.utils.data.BatchSampler
        and type(inner) is torch.utils.data.RandomSampler
        and len(inner.data_source) > 0
    ):
        return [0] * min(loader.batch_sampler.batch_size, len(inner))
    first = next(iter(loader.batch_sampler), None)
    return list(first) if first is not None else None


def _batch_and_sample(loader, sample, torch):
    """The loader's batch size (samples per batch) and one sample as its workers fetch it."""
    dataset = loader.dataset
    iterable = isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__getitem__")
    if iterable:
        if sample is None:
            raise ValueError(
                "shmbench.preflight: this loader's dataset is iterable-style, so no sample can be "
                "read without iterating it; pass one: preflight(loader, sample=next(iter(dataset)))"
            )
        return (loader.batch_size or 1), sample
    if loader.batch_size is not None and sample is not None:
        return loader.batch_size, sample
    with _rng_kept(loader, torch):
        indices = _first_indices(loader, torch)
        if not indices:
            raise ValueError(
                "shmbench.preflight: this loader's sampler yields no index, so no sample can be "
                "read; pass one: preflight(loader, sample=...)"
            )
        # batch_size=None with no batch sampler: each sample goes through /dev/shm on its own.
        batch = loader.batch_size or (len(indices) if loader.batch_sampler is not None else 1)
        if sample is None:
            sample = _fetch(dataset, indices[0], loader.batch_sampler is not None)
    return batch, sample


def _fetch(dataset, index, batched):
    """The sample at `index`, as torch's map-style fetcher asks for it: through the Dataset's
    `__getitems__` when the loader batches and the Dataset has one, else `dataset[index]`."""
    getitems = getattr(dataset, "__getitems__", None)
    if batched and callable(getitems):
        return getitems([index])[0]
    return dataset[index]


def _loader_args(loader, sample, torch):
    """One loader as the doctor is told about it: its batch size and one sample's bytes, its
    settings, and the tensors the Dataset holds when the start method pickles it."""
    if loader.num_workers == 0:
        # The main process loads every batch itself: nothing of it goes through /dev/shm.
        return {"workers": 0}
    batch, one = _batch_and_sample(loader, sample, torch)
    method = _start_method(loader)
    held = 0 if method == "fork" else _held_tensor_bytes(loader.dataset, torch)
    return {
        "workers": loader.num_workers,
        "prefetch": loader.prefetch_factor or 2,
        "batch": batch,
        "sample_bytes": max(1, _tensor_bytes(one, torch)),
        "start_method": method,
        "dataset_bytes": held,
        "pin_memory": bool(loader.pin_memory),
        "persistent_workers": bool(loader.persistent_workers),
    }


def _units(specs):
    """The element the doctor is told samples are made of (it takes one sample shape for every
    loader), and each loader's batch counted in it. One loader: its own sample, so the batch is
    the loader's and the doctor's loader changes (batch_size=N) are in samples. Several: the
    greatest common divisor of their sample sizes, every batch exact; where a count would pass
    32 bits, an element of the largest batch / 2^32, each batch rounded up to it."""
    unit = math.gcd(*[s["sample_bytes"] for s in specs])
    counts = [s["batch"] * s["sample_bytes"] // unit for s in specs]
    if max(counts) > U32_MAX:
        largest = max(s["batch"] * s["sample_bytes"] for s in specs)
        unit = -(-largest // U32_MAX)
        counts = [-(-(s["batch"] * s["sample_bytes"]) // unit) for s in specs]
    return unit, counts


def _ranks(ranks):
    if ranks is not None:
        return ranks
    raw = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    if not raw:
        return 1
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(
            f"LOCAL_WORLD_SIZE={raw!r} is not a count of processes per node; "
            "pass ranks= to preflight, or set it as torchrun does"
        )
    return count


def _doctor_args(specs, ranks, torch):
    main = specs[0]
    unit, counts = _units(specs)
    strategy = torch.multiprocessing.get_sharing_strategy()
    profile = "modern" if _torch_minor(torch.__version__) >= (2, 10) else "legacy"
    args = [
        binary(), "doctor", "--format", "json",
        "--ranks", str(ranks),
        "--shape", str(unit), "--dtype", "u8",
        "--workers", str(main["workers"]),
        "--prefetch", str(main["prefetch"]),
        "--batch", str(counts[0]),
        "--strategy", strategy,
        "--torch", profile,
        "--pin-memory", "true" if main["pin_memory"] else "false",
        "--persistent-workers", "true" if main["persistent_workers"] else "false",
        "--start-method", main["start_method"],
        "--dataset-bytes", str(main["dataset_bytes"]),
    ]
    if len(specs) > 1:
        # Each loader with its own Dataset's tensors: its start method pickles them to its own
        # workers, once per loader.
        args += ["--loaders", ",".join(
            f"loader{i}:{s['workers']}x{s['prefetch']}x{count}+{s['dataset_bytes']}"
            for i, (s, count) in enumerate(zip(specs, counts))
        )]
    return args


def _check(loader, ranks, other_loaders, sample, timeout):
    import torch

    ranks = _ranks(ranks)
    loaders = [(loader, sample)] + [(other, None) for other in other_loaders]
    specs = [_loader_args(l, s, torch) for l, s in loaders]
    with_workers = [s for s in specs if s["workers"] > 0]
    if not with_workers:
        # The main process loads every batch itself: nothing goes through /dev/shm.
        return Preflight(0, 0, True, "no worker processes (num_workers=0): no batch goes through /dev/shm", [], "any", {})
    args = _doctor_args(with_workers, ranks, torch)
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"shmbench doctor failed ({done.returncode}): {done.stderr.strip()}")
    doctor = json.loads(done.stdout)
    return Preflight(
        need_bytes=doctor["job"]["node_bytes"],
        have_bytes=doctor["environment"]["shm_free_bytes"],
        fits=doctor["fits"],
        verdict=doctor["verdict"],
        fixes=doctor["fixes"],
        platform=doctor["target"],
        doctor=doctor,
    )


def preflight(loader, *, ranks=None, other_loaders=(), sample=None, raise_on="fail", timeout=30):
    """Checks `loader` (and `other_loaders`, which the same process runs at once) against this
    node's /dev/shm before the first batch. `ranks`: processes per node running the same loaders
    (default: LOCAL_WORLD_SIZE, as torchrun sets it, else 1). `sample`: one sample, for an
    iterable-style dataset. `raise_on="fail"` raises PreflightError when the loaders cannot fit,
    and the error when the check cannot run; `raise_on=None` never raises: it warns, and returns
    a Preflight whose `fits` is None and `error` says why when the check could not run. Returns
    a Preflight."""
    if raise_on not in ("fail", None):
        raise ValueError(f"raise_on={raise_on!r}: give 'fail' or None")
    try:
        result = _check(loader, ranks, other_loaders, sample, timeout)
    except Exception as error:  # noqa: BLE001 - raise_on=None promises a warning, not a raise
        if raise_on == "fail":
            raise
        result = Preflight.unchecked(f"{type(error).__name__}: {error}")
        warnings.warn(result.message(), RuntimeWarning, stacklevel=2)
        return result
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
