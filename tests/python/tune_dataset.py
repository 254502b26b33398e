"""A small real Dataset for `shmbench tune --loader torch --dataset tune_dataset.py:images`:
images of 3x128x128 float32 with an int64 label each, and a 1 MiB table the Dataset holds."""

import torch
from torch.utils.data import Dataset


class Images(Dataset):
    def __init__(self, n):
        self.n = n
        self.table = torch.zeros(1 << 20, dtype=torch.uint8)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((3, 128, 128), float(i)), i % 10


def images():
    return Images(64)
