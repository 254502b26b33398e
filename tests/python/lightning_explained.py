"""A Lightning fit with ShmPreflight(explain=True) whose Dataset reads a memory-mapped file
that the trainer's process truncates after step 3 (as a job rewriting its data in place does):
a worker dies of SIGBUS, the fit dies of torch's RuntimeError, and the callback prints the
cause (tests/explain.rs).

    lightning_explained.py DATA
"""

import mmap
import os
import sys

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from shmbench.lightning import ShmPreflight

PATH = sys.argv[1]
SAMPLE = 3 * 224 * 224 * 4
SAMPLES = 16
with open(PATH, "wb") as f:
    f.truncate(SAMPLES * SAMPLE)


class Mapped(Dataset):
    view = None

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        if self.view is None:
            with open(PATH, "rb") as f:
                self.view = mmap.mmap(f.fileno(), SAMPLES * SAMPLE, access=mmap.ACCESS_READ)
        at = (i % SAMPLES) * SAMPLE
        return torch.frombuffer(bytearray(self.view[at : at + SAMPLE]), dtype=torch.float32)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3 * 224 * 224, 1)

    def training_step(self, batch, index):
        if index == 3:
            os.truncate(PATH, 4096)
        return self.layer(batch).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return DataLoader(Mapped(), batch_size=8, num_workers=2)


trainer = L.Trainer(
    max_steps=20, accelerator="cpu", devices=1, logger=False,
    callbacks=[ShmPreflight(raise_on=None, explain=True)],
    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
)
trainer.fit(Model())
