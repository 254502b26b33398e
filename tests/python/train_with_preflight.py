"""A training script as a user writes one: a map-style Dataset of ImageNet-sized images and
labels, a DataLoader with workers, and shmbench's pre-flight check before the first batch. It
prints the check's predicted need in bytes, then trains a few steps."""

import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import shmbench


class Images(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        return torch.full((3, 224, 224), float(i % 7)), i


loader = DataLoader(Images(), batch_size=int(sys.argv[1]), num_workers=2, prefetch_factor=2)
started = time.perf_counter()
result = shmbench.preflight(loader)
print(f"preflight need_bytes={result.need_bytes} in {time.perf_counter() - started:.3f} s", flush=True)
for step, (images, labels) in enumerate(loader):
    time.sleep(0.02)
    if step == 30:
        break
print("trained", flush=True)
