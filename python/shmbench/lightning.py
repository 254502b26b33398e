"""A PyTorch Lightning callback that runs the pre-flight check on the trainer's loaders.

    from shmbench.lightning import ShmPreflight
    trainer = Trainer(callbacks=[ShmPreflight()])

Importing this module imports Lightning (`lightning`, or the older `pytorch_lightning`);
`import shmbench` does not. The check runs in `on_fit_start`, before the sanity check and the
first training batch, so before any loader has started a worker: by then the fit loop has
already started the training loader's workers when `on_train_start` runs (measured: a 64 MiB
/dev/shm held 3 batches of 18.4 MiB there). The loaders are asked of the same source the fit
loop will ask (the datamodule's or the module's `train_dataloader()`, or the loaders given to
`fit`): building a DataLoader starts nothing. The validation loaders count as loaders the same
process runs at once.
"""

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the package's older name
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError as missing:
        raise ImportError(
            "shmbench.lightning needs PyTorch Lightning: pip install lightning"
        ) from missing

import sys

from . import explain as _explain
from .preflight import preflight


def _loaders(source):
    """The DataLoaders in what Lightning holds: one, a collection, or a CombinedLoader."""
    if source is None:
        return []
    flattened = getattr(source, "flattened", None)
    if flattened is not None:
        return [l for l in flattened if hasattr(l, "num_workers")]
    if hasattr(source, "num_workers"):
        return [source]
    if isinstance(source, dict):
        source = list(source.values())
    if isinstance(source, (list, tuple)):
        return [l for item in source for l in _loaders(item)]
    return []


def _asked(trainer, pl_module, loop, hook):
    """The loaders the `loop` (fit_loop, validate_loop) will use: from its data source, which
    calls the datamodule's or module's `hook` or holds the loaders given to `fit`; else from
    the datamodule's or module's hook directly."""
    source = getattr(getattr(trainer, loop, None), "_data_source", None)
    if source is not None and hasattr(source, "dataloader"):
        try:
            return _loaders(source.dataloader())
        except Exception:  # noqa: BLE001 - no such loaders (e.g. no validation): none
            return []
    for holder in (getattr(trainer, "datamodule", None), pl_module):
        method = getattr(holder, hook, None)
        if callable(method):
            try:
                return _loaders(method())
            except Exception:  # noqa: BLE001 - the hook is not implemented
                continue
    return []


class ShmPreflight(Callback):
    """Checks the training loaders (with the validation loaders beside them) against this
    node's /dev/shm before any of them starts; `raise_on=None` only warns. The result is kept
    as `self.result`. With `explain=True` the workers are followed from then on
    (`shmbench.explain`), and when the fit dies of an exception (a worker's Bus error) the
    cause of each fault is printed."""

    def __init__(self, raise_on="fail", explain=False):
        super().__init__()
        self.raise_on = raise_on
        self.explain = explain
        self.result = None
        self.follower = None

    def on_exception(self, trainer, pl_module, exception):
        if self.follower is not None:
            sys.stderr.write(self.follower.render())

    def on_fit_start(self, trainer, pl_module):
        if self.explain and self.follower is None:
            self.follower = _explain.follow(hook=False)
        train = _asked(trainer, pl_module, "fit_loop", "train_dataloader")
        if not train:
            return
        others = train[1:] + _asked(trainer, pl_module, "validate_loop", "val_dataloader")
        self.result = preflight(
            train[0],
            ranks=getattr(trainer, "num_devices", None),
            other_loaders=others,
            raise_on=self.raise_on,
        )
