"""A Lightning training run with shmbench's callback: the same images and loader as
train_with_preflight.py, in a LightningDataModule, on the CPU. The callback checks the loaders
in on_fit_start, before any loader starts a worker."""

import sys

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from shmbench.lightning import ShmPreflight


class Images(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        return torch.full((3, 224, 224), float(i % 7)), i % 10


class Data(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(Images(), batch_size=int(sys.argv[1]), num_workers=2, prefetch_factor=2)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3 * 224 * 224, 10)

    def training_step(self, batch, _):
        images, labels = batch
        return torch.nn.functional.cross_entropy(self.layer(images.flatten(1)), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


check = ShmPreflight()
trainer = L.Trainer(
    max_steps=10, accelerator="cpu", devices=1, callbacks=[check], logger=False,
    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
)
trainer.fit(Model(), datamodule=Data())
print(f"trained; preflight need_bytes={check.result.need_bytes}", flush=True)
