"""The pre-flight check on loaders whose answer is known without running them, printed as one
JSON object: no workers (nothing in /dev/shm), a forkserver loader whose Dataset holds a tensor
(its bytes are in the need), the same under fork (they are not), two such loaders (each one's
own tensor, once), LOCAL_WORLD_SIZE ranks, and an iterable-style dataset (refused without a
sample, checked with one)."""

import json
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset

import shmbench


class Holding(Dataset):
    def __init__(self, held_bytes):
        self.cache = torch.zeros(held_bytes // 4)

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        return torch.zeros(3, 64, 64)


out = {}
started = time.perf_counter()
none = shmbench.preflight(DataLoader(Holding(4096), batch_size=8, num_workers=0))
out["no_workers"] = {"fits": none.fits, "need": none.need_bytes}
held = 64 << 20
for method in ("fork", "forkserver"):
    loader = DataLoader(Holding(held), batch_size=8, num_workers=2, multiprocessing_context=method)
    out[method] = shmbench.preflight(loader, raise_on=None).need_bytes
# Two forkserver loaders, each with its own Dataset: each one's tensor once, not the sum twice.
small = 16 << 20
pair = [DataLoader(Holding(size), batch_size=8, num_workers=2, multiprocessing_context="forkserver") for size in (held, small)]
out["two_forkserver"] = shmbench.preflight(pair[0], other_loaders=[pair[1]], raise_on=None).need_bytes
out["two_fork"] = shmbench.preflight(
    DataLoader(Holding(held), batch_size=8, num_workers=2, multiprocessing_context="fork"),
    other_loaders=[DataLoader(Holding(small), batch_size=8, num_workers=2, multiprocessing_context="fork")],
    raise_on=None,
).need_bytes
out["small"] = small
os.environ["LOCAL_WORLD_SIZE"] = "4"
out["four_ranks"] = shmbench.preflight(DataLoader(Holding(4096), batch_size=8, num_workers=2)).need_bytes
del os.environ["LOCAL_WORLD_SIZE"]
out["one_rank"] = shmbench.preflight(DataLoader(Holding(4096), batch_size=8, num_workers=2)).need_bytes
class Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        while True:
            yield torch.zeros(3, 64, 64)


stream = DataLoader(Stream(), batch_size=8, num_workers=2)
try:
    shmbench.preflight(stream)
    out["iterable_refused"] = ""
except ValueError as e:
    out["iterable_refused"] = str(e)
out["iterable_with_sample"] = shmbench.preflight(stream, sample=torch.zeros(3, 64, 64)).need_bytes
# batch_size=None: every sample is its own "batch"; a batch sampler: its first batch's size.
out["unbatched"] = shmbench.preflight(DataLoader(Holding(4096), batch_size=None, num_workers=2)).need_bytes
sampler = torch.utils.data.BatchSampler(range(1000), batch_size=8, drop_last=False)
out["batch_sampler"] = shmbench.preflight(DataLoader(Holding(4096), batch_sampler=sampler, num_workers=2)).need_bytes
out["seconds"] = time.perf_counter() - started
out["held"] = held
print(json.dumps(out))
