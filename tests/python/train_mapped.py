"""A training loop over a real torch DataLoader whose Dataset reads a memory-mapped file (as
LMDB, HDF5 or a numpy memmap do), for `shmbench watch`'s explanations (tests/explain.rs).

    train_mapped.py DATA BATCH WORKERS [truncate]

With `truncate`, the main process (another process than the workers) cuts the file to 4 KiB
after step 3, as a job that rewrites its dataset in place does: the workers' next reads beyond
its end are SIGBUS.
"""
import mmap
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLE = 3 * 224 * 224 * 4  # one ImageNet-sized f32 image
SAMPLES = 16

path, batch, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
truncate = sys.argv[4:5] == ["truncate"]
with open(path, "wb") as f:
    f.truncate(SAMPLES * SAMPLE)


class Mapped(Dataset):
    def __init__(self):
        self.view = None

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        if self.view is None:  # mapped in the worker, as a reader opens its file lazily
            with open(path, "rb") as f:
                self.view = mmap.mmap(f.fileno(), SAMPLES * SAMPLE, access=mmap.ACCESS_READ)
        at = (i % SAMPLES) * SAMPLE
        return torch.frombuffer(bytearray(self.view[at : at + SAMPLE]), dtype=torch.float32)


loader = DataLoader(Mapped(), batch_size=batch, num_workers=workers)
for step, images in enumerate(loader, 1):
    print(f"step {step}", flush=True)
    if truncate and step == 3:
        os.truncate(path, 4096)
    if step == 20:
        break
print("done", flush=True)
