"""A training script that tunes its own DataLoader before training: its Dataset's class is
defined here, in __main__, so each trial runs this file's top level again to find it (the
training stays under `if __name__ == "__main__":`). Prints the pick as JSON. Arguments: the
batch size, the /dev/shm budget, and the settings to try (shmbench tune's --tune-* flags)."""

import json
import sys

from torch.utils.data import DataLoader

import shmbench
import tune_dataset


class Images(tune_dataset.Images):
    """tune_dataset's images, as a class of this script's own (a class of __main__, as a
    training script's Dataset often is)."""


def main():
    batch, budget = int(sys.argv[1]), sys.argv[2]
    loader = DataLoader(Images(64), batch_size=batch, num_workers=8, persistent_workers=True)
    tuned = shmbench.tune(loader, shm_size=budget, steps=20, args=sys.argv[3:])
    print(json.dumps({"pick": tuned.pick, "kwargs": tuned.kwargs, "img_per_s": tuned.img_per_s}))
    if tuned:
        # Train with it: one pass.
        loader = DataLoader(Images(64), batch_size=batch, **tuned.kwargs)
        for _ in loader:
            pass


if __name__ == "__main__":
    main()
