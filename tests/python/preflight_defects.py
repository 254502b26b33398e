"""The pre-flight check's cases from issue 40, each checked here against what is known without
running the loader, printed as one JSON object: `failures` (empty when every case held) and the
seconds the check of a loader that does not fit took.

- A Dataset's tensors reached through wrappers (Subset, random_split, ConcatDataset, a
  ChainDataset's datasets, one tensor shared by two of them) count under forkserver at their
  real bytes, each storage once.
- raise_on=None never raises: LOCAL_WORLD_SIZE=garbage, and a Python with no shmbench binary
  beside it or on PATH, warn and return.
- A map-style Dataset keyed by strings, with a sampler (and a batch sampler) of its keys, is
  sampled through the loader's own first index.
- A seeded run's first batch and every RNG's state are the same with the check as without it.
- A loader that does not fit is offered a batch_size in samples, below its own, that fits.
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

import torch
from torch.utils.data import (
    BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, Sampler,
    Subset, random_split,
)

import shmbench

try:
    import numpy
except ImportError:  # numpy is optional beside torch; its case is then skipped
    numpy = None

failures = []
out = {}


def expect(name, ok, detail):
    if not ok:
        failures.append(f"{name}: {detail}")


class Holding(Dataset):
    """Samples of 3x64x64 float32 from a Dataset holding `held_bytes` of tensors."""

    def __init__(self, held_bytes):
        self.cache = torch.zeros(held_bytes // 4)

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        return torch.zeros(3, 64, 64)


class Stream(IterableDataset):
    def __init__(self, held_bytes):
        self.cache = torch.zeros(held_bytes // 4)

    def __iter__(self):
        while True:
            yield torch.zeros(3, 64, 64)


def need(dataset, method, **kw):
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context=method)
    return shmbench.preflight(loader, ranks=1, raise_on=None, **kw).need_bytes


# 1. Wrapped datasets under forkserver: their tensors at their real bytes, each storage once.
big, small = 64 << 20, 16 << 20
base, other = Holding(big), Holding(small)
shared = Holding(4096)
shared.cache = base.cache[: 1 << 20]  # a view of base's storage: pickled with it, once
wrapped = {
    "subset": (Subset(base, range(100)), big),
    "random_split": (random_split(base, [0.5, 0.5])[0], big),
    "concat": (ConcatDataset([base, other]), big + small),
    "concat_of_subsets": (ConcatDataset([Subset(base, [1, 2]), Subset(base, [3]), other]), big + small),
    "shared_storage": (ConcatDataset([base, shared]), big),
}
if hasattr(torch.utils.data, "StackDataset"):  # torch 2.2 and later
    wrapped["stack"] = (torch.utils.data.StackDataset(base, other), big + small)
for name, (dataset, held) in wrapped.items():
    grown = need(dataset, "forkserver") - need(dataset, "fork")
    out[f"held_{name}"] = grown
    expect(name, grown == held, f"forkserver adds {grown} bytes over fork, the Dataset holds {held}")
chain = ChainDataset([Stream(big), Stream(small)])
sample = torch.zeros(3, 64, 64)
grown = need(chain, "forkserver", sample=sample) - need(chain, "fork", sample=sample)
expect("chain", grown == big + small, f"forkserver adds {grown} bytes, the datasets hold {big + small}")


# 2. raise_on=None never raises: it warns, and says why.
def quietly(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in seen if w.category is RuntimeWarning]


plain = DataLoader(Holding(4096), batch_size=8, num_workers=2)
one_rank = shmbench.preflight(plain, ranks=1).need_bytes
os.environ["LOCAL_WORLD_SIZE"] = "garbage"
try:
    result, warned = quietly(lambda: shmbench.preflight(plain, raise_on=None))
    expect("garbage_ranks", result.fits is None and "LOCAL_WORLD_SIZE" in (result.error or ""), repr(result))
    expect("garbage_ranks_warned", any("LOCAL_WORLD_SIZE='garbage'" in w for w in warned), warned)
    try:
        shmbench.preflight(plain)
        failures.append("garbage_ranks_fail: raise_on='fail' did not raise")
    except ValueError as e:
        expect("garbage_ranks_fail", "LOCAL_WORLD_SIZE" in str(e), str(e))
except Exception as e:  # noqa: BLE001 - the defect: raise_on=None raised
    failures.append(f"garbage_ranks: raise_on=None raised {type(e).__name__}: {e}")
finally:
    del os.environ["LOCAL_WORLD_SIZE"]

# A Python that has the package and torch but no binary: a venv of its own, whose only paths
# are the package's and torch's, run with an empty PATH.
NO_BINARY = """
import json, warnings, torch, shmbench
from torch.utils.data import DataLoader
loader = DataLoader(torch.zeros(64, 3, 8, 8), batch_size=8, num_workers=2)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    result = shmbench.preflight(loader, raise_on=None)
try:
    shmbench.preflight(loader)
    raised = ""
except RuntimeError as e:
    raised = str(e)
print(json.dumps({"fits": result.fits, "error": result.error, "raised": raised,
                  "warned": [str(w.message) for w in seen]}))
"""
with tempfile.TemporaryDirectory() as scratch:
    venv = os.path.join(scratch, "v")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    purelib = subprocess.run(
        [os.path.join(venv, "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    roots = {os.path.dirname(os.path.dirname(m.__file__)) for m in (shmbench, torch)}
    if numpy is not None:
        roots.add(os.path.dirname(os.path.dirname(numpy.__file__)))
    with open(os.path.join(purelib, "beside.pth"), "w") as f:
        f.write("\n".join(sorted(roots)) + "\n")
    empty = os.path.join(scratch, "empty")
    os.mkdir(empty)
    done = subprocess.run(
        [os.path.join(venv, "bin/python"), "-c", NO_BINARY],
        capture_output=True, text=True, env={"PATH": empty, "HOME": scratch},
    )
    if done.returncode != 0:
        failures.append(f"no_binary: the script failed: {done.stderr.strip()[-800:]}")
    else:
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        out["no_binary"] = seen
        expect("no_binary", seen["fits"] is None and "binary" in (seen["error"] or ""), seen)
        expect("no_binary_warned", any("binary" in w for w in seen["warned"]), seen)
        expect("no_binary_fail", "binary" in seen["raised"], seen)


# 3. A Dataset keyed by strings, sampled through its own sampler's keys.
class Keyed(Dataset):
    def __init__(self):
        self.keys = [f"img{i:04}" for i in range(100)]

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, key):
        if not isinstance(key, str):
            raise KeyError(key)
        return torch.zeros(3, 64, 64)


class Keys(Sampler):
    def __init__(self, keys):
        self.keys = keys

    def __iter__(self):
        return iter(self.keys)

    def __len__(self):
        return len(self.keys)


keyed = Keyed()
for name, loader in {
    "keyed_sampler": DataLoader(keyed, sampler=Keys(keyed.keys), batch_size=8, num_workers=2),
    "keyed_batch_sampler": DataLoader(keyed, batch_sampler=BatchSampler(Keys(keyed.keys), 8, False), num_workers=2),
}.items():
    try:
        got = shmbench.preflight(loader, ranks=1).need_bytes
        expect(name, got == one_rank, f"need {got}, the same loader of integer indices {one_rank}")
    except Exception as e:  # noqa: BLE001 - the defect: dataset[0] on string keys
        failures.append(f"{name}: {type(e).__name__}: {e}")


# 4. A seeded run: the first batch and every RNG's state, with the check and without it.
class Augmented(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        drawn = [random.random(), torch.rand(1).item()]
        if numpy is not None:
            drawn.append(float(numpy.random.rand()))
        return torch.tensor([float(i)] + drawn)


class Shuffled(Sampler):
    """A sampler drawing its order from torch's global RNG, as a user's often does."""

    def __iter__(self):
        return iter(torch.randperm(64).tolist())

    def __len__(self):
        return 64


def seeded_run(check, sampler):
    random.seed(0)
    torch.manual_seed(0)
    if numpy is not None:
        numpy.random.seed(0)
    shuffle = sampler is None
    loader = DataLoader(Augmented(), batch_size=4, shuffle=shuffle, sampler=sampler, num_workers=2,
                        multiprocessing_context="fork")
    if check:
        shmbench.preflight(loader, ranks=1)
    states = [random.getstate(), torch.get_rng_state().tolist()]
    if numpy is not None:
        states.append(repr(numpy.random.get_state()))
    return states, next(iter(loader)).tolist()


for name, sampler in (("shuffle", None), ("own_sampler", Shuffled())):
    (states, batch), (checked_states, checked_batch) = seeded_run(False, sampler), seeded_run(True, sampler)
    expect(f"seeded_{name}_states", states == checked_states, "an RNG's state moved with the check")
    expect(f"seeded_{name}_batch", batch == checked_batch, f"first batch {checked_batch} with the check, {batch} without")


# 5. A loader that does not fit: sized in samples, at most its own batch, and the offer fits.
class Large(Dataset):
    """Samples of `size` bytes that take one byte each (an expanded view): sized, never filled."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        return torch.zeros(1, dtype=torch.uint8).expand(self.size)


stat = os.statvfs("/dev/shm")
free = stat.f_bavail * stat.f_frsize
# 2 workers x prefetch 2 + 1 held = 5 batches at the peak: a batch of 64 fits, one of 128 does not.
sample_bytes = max(4096, free // (5 * 64) // 4096 * 4096)
large = Large(sample_bytes)
loader = DataLoader(large, batch_size=128, num_workers=2, prefetch_factor=2, multiprocessing_context="fork")
started = time.perf_counter()
try:
    result, warned = quietly(lambda: shmbench.preflight(loader, ranks=1, raise_on=None))
except Exception as e:  # noqa: BLE001 - the defect: raise_on=None raised
    result = shmbench.Preflight.unchecked(str(e)) if hasattr(shmbench.Preflight, "unchecked") else None
    failures.append(f"nonfit: raise_on=None raised {type(e).__name__}: {e}")
out["nonfit_seconds"] = time.perf_counter() - started
out["nonfit_sample_bytes"] = sample_bytes
expect("nonfit", result is not None and result.fits is False, repr(result))
fixes = result.fixes if result is not None else []
offers = [c for f in fixes if f["title"].startswith("Or change the loader") for c in f["commands"]]
batches = [int(c.split("=")[1].split()[0]) for c in offers if c.startswith("batch_size=")]
out["nonfit_offers"] = offers
expect("nonfit_offer", len(batches) == 1 and 1 <= batches[0] < 128, offers)
if len(batches) == 1 and 1 <= batches[0] < 128:
    smaller = DataLoader(large, batch_size=batches[0], num_workers=2, prefetch_factor=2, multiprocessing_context="fork")
    again = shmbench.preflight(smaller, ranks=1, raise_on=None)
    expect("nonfit_offer_fits", again.fits is True, f"batch_size={batches[0]}: {again!r}")

out["failures"] = failures
print(json.dumps(out))
