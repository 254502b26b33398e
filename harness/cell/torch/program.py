# The real-torch loader of a shmbench cell: a torch.utils.data.DataLoader built from the cell's
# knobs, run as the training loop would run it. shmbench ships this file inside its binary and
# runs it from the environment (`python -c <bootstrap> <cell config JSON>`, this text in
# SHMBENCH_TORCH_PROGRAM, so process listings stay short); the cell process around it meters
# /dev/shm, classifies how it ended and prints the cell's record.
#
# Protocol: one JSON object per line on stdout.
#   {"event": "start", "torch": "2.15.0", "accelerator": false}
#   {"event": "step", "step": 7, "t": 0.31, "in_flight": 16}
#   {"event": "end", "cpu_s": 1.9, "setup_cpu_s": 1.4, "setup_faults": 52000}   every step ran
#   {"event": "error", "type": "RuntimeError", "message": "...", "completed": 6,
#    "workers": [{"pid": 123, "exitcode": -7}], "cpu_s": ..., "setup_cpu_s": ..., "setup_faults": ...}
# (`cpu_s`: this main process's CPU in the loop, all its threads; `setup_*`: its CPU and page
# faults before the loop, which the cell subtracts from what it accounts to the loader.)
# (`completed`: steps whose body finished; the failure belongs to the next one. `workers`: how
# each worker process ended, when it has: torch often reports a worker killed by SIGBUS only as
# "exited unexpectedly", or as a broken connection of its resource sharer.)
# Anything torch prints goes to stderr, which the cell keeps for its message.

import json
import resource
import sys
import time


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


# This program runs from the environment, not from a file, so a process that forkserver or
# spawn starts cannot import what it defines by name, as pickle would. What a worker needs
# (the Dataset, the worker_init_fn) pickles instead as a call of eval that runs this program
# once more in that process, as the module `shmbench_torch_cell`, and rebuilds the object there;
# its arguments (the Dataset's tensors) pickle as torch pickles them, through shared memory.
AS_MODULE = (
    "(lambda sys, types, os: sys.modules.get('shmbench_torch_cell') or (lambda m: ("
    "sys.modules.__setitem__('shmbench_torch_cell', m), exec(compile("
    "os.environ['SHMBENCH_TORCH_PROGRAM'], 'shmbench-torch-cell', 'exec'), m.__dict__), m)[2])("
    "types.ModuleType('shmbench_torch_cell')))(__import__('sys'), __import__('types'), __import__('os'))"
)


class Portable:
    """An object a forkserver or spawn worker rebuilds from `args()` (see AS_MODULE)."""

    def args(self):
        raise NotImplementedError

    def __reduce__(self):
        rebuild = "getattr(" + AS_MODULE + ", name)(*args)"
        return (eval, (rebuild, {"name": type(self).__name__, "args": self.args()}))


class WorkerInit(Portable):
    """DataLoader worker_init_fn: the worker dies at once with the main (PR_SET_PDEATHSIG), as
    every process of a shmbench cell does, instead of after torch's 5 s watchdog; and it shares
    batches by the cell's strategy, as a script that sets it at its top does in its workers."""

    def __init__(self, strategy):
        self.strategy = strategy

    def args(self):
        return (self.strategy,)

    def __call__(self, _worker_id):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
        except Exception:  # noqa: BLE001 - torch's own watchdog still ends it
            pass
        import torch

        torch.multiprocessing.set_sharing_strategy(self.strategy)


class Synthetic(Portable):
    """One random image per worker, stamped per sample; decode_us of CPU time per sample. It
    holds `held` (dataset_bytes of tensors, a Dataset's cache) and never reads it."""

    def __init__(self, length, shape, dtype, decode_s, held):
        self.length, self.shape, self.dtype = length, shape, dtype
        self.decode_s, self.held = decode_s, held
        self.base = None

    def args(self):
        return (self.length, self.shape, self.dtype, self.decode_s, self.held)

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        import torch

        if self.base is None:
            generator = torch.Generator().manual_seed(0x5EED)
            self.base = (torch.rand(self.shape, generator=generator) * 255).to(self.dtype)
        if self.decode_s > 0:
            until = time.thread_time() + self.decode_s
            while time.thread_time() < until:
                pass
        sample = self.base.clone()
        sample.view(-1)[0] = index % 251
        return sample


class Cycled:
    """A sampler of `total` indices cycling through a Dataset of `length`: a user's small Dataset
    serves as many steps as the cell asks for."""

    def __init__(self, length, total):
        self.length, self.total = length, total

    def __len__(self):
        return self.total

    def __iter__(self):
        return (i % self.length for i in range(self.total))


def user_dataset(ref):
    """The user's own Dataset (the knob `dataset`) and its loader's collate_fn (None: the
    default): FILE.py:NAME, a Dataset or a function returning one, imported by the file's name
    with its folder on the import path (a spawn or forkserver worker is given the same path, and
    finds it there); or a pickle file, the wheel's `shmbench.tune(loader)`: first what to prepare
    (the import path, and the training script or module whose top level defines the Dataset's
    class, run as multiprocessing runs it in a spawned worker), then the Dataset and the
    collate_fn."""
    import importlib
    import os
    import pickle

    import torch

    path, _, name = ref.rpartition(":")
    if path.endswith(".py"):
        folder, file = os.path.split(os.path.abspath(path))
        sys.path.insert(0, folder)
        found = getattr(importlib.import_module(file[: -len(".py")]), name)
        if isinstance(found, torch.utils.data.Dataset) or not callable(found):
            return found, None
        return found(), None
    # A plain pickle of a Dataset: its classes found beside it, as a FILE.py's are.
    sys.path.insert(0, os.path.dirname(os.path.abspath(ref)))
    with open(ref, "rb") as f:
        prepare = pickle.load(f)
        if not (isinstance(prepare, dict) and "sys_path" in prepare):
            return prepare, None
        for folder in reversed(prepare.get("sys_path", [])):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        import multiprocessing.spawn

        if prepare.get("main_name"):
            multiprocessing.spawn.prepare({"init_main_from_name": prepare["main_name"]})
        elif prepare.get("main"):
            multiprocessing.spawn.prepare({"init_main_from_path": prepare["main"]})
        return pickle.load(f)


def tensors_in(value, depth=0):
    """The tensors in a batch or a sample: nested tuples, lists and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 4 and isinstance(value, (tuple, list)):
        for v in value:
            yield from tensors_in(v, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v, depth + 1)


def held_bytes(dataset):
    """Bytes of the tensors a Dataset holds in its attributes (and its inner Datasets', through
    Subset and ConcatDataset): what forkserver and spawn pickle through /dev/shm."""
    import torch

    seen, total, todo = set(), 0, [(dataset, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 3:
            continue
        seen.add(id(obj))
        for value in getattr(obj, "__dict__", {}).values():
            if isinstance(value, torch.utils.data.Dataset):
                todo.append((value, depth + 1))
            elif isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.utils.data.Dataset):
                todo.extend((v, depth + 1) for v in value)
            else:
                for t in tensors_in(value, 2):
                    if t.untyped_storage().data_ptr() not in seen:
                        seen.add(t.untyped_storage().data_ptr())
                        total += t.untyped_storage().nbytes()
    return total


def sample_facts(dataset, collate):
    """One sample as the loader's collate (None: the default) makes it: its bytes and the shapes
    of its tensors; the samples, and the tensor bytes the Dataset holds."""
    from torch.utils.data import default_collate

    tensors = list(tensors_in((collate or default_collate)([dataset[0]])))
    shapes = ", ".join(
        ("x".join(str(d) for d in t.shape[1:]) or "scalar") + " " + str(t.dtype).replace("torch.", "")
        for t in tensors
    )
    return {
        "sample_bytes": sum(t.nbytes for t in tensors),
        "length": len(dataset),
        "held_bytes": held_bytes(dataset),
        "shapes": shapes,
    }


def mappings_note(released):
    """After a MemoryError: how many memory mappings this process held against vm.max_map_count.
    A main that keeps its batches alive holds one mapping per batch, and at the limit any mmap
    fails, the allocator's own included, so the `released` batches it kept are let go first
    (reading /proc needs memory too) and added back to the count."""
    try:
        import os

        fd = os.open("/proc/self/maps", os.O_RDONLY)
        held = 0
        try:
            while True:
                chunk = os.read(fd, 16384)
                if not chunk:
                    break
                held += chunk.count(b"\n")
        finally:
            os.close(fd)
        with open("/proc/sys/vm/max_map_count") as f:
            limit = f.read().strip()
        return f"this process held about {held + released} memory mappings, {released} of them batches it kept; vm.max_map_count is {limit}"
    except Exception:  # noqa: BLE001 - best effort: the error is still reported
        return "its memory mappings could not be counted"


def worker_exits(iterator):
    """(pid, exitcode) of the iterator's worker processes that have ended (exitcode -N: signal N)."""
    exits = []
    for worker in getattr(iterator, "_workers", None) or []:
        try:
            worker.join(timeout=0.5)
            if worker.exitcode is not None:
                exits.append({"pid": worker.pid, "exitcode": worker.exitcode})
        except Exception:  # noqa: BLE001 - best effort: the message still classifies
            pass
    return exits


def main():
    cfg = json.loads(sys.argv[1])
    try:
        import torch
        from torch.utils.data import DataLoader
    except ImportError as e:
        emit(event="error", type="ImportError", message=str(e), completed=0)
        return

    dtypes = {
        "f32": torch.float32,
        "f16": torch.float16,
        "bf16": torch.bfloat16,
        "u8": torch.uint8,
    }
    dtype = dtypes[cfg["dtype"]]
    shape = [int(d) for d in cfg["shape"].split("x")]
    # The Dataset's own tensors: inherited by fork workers, pickled through shared memory to
    # forkserver and spawn ones (once, as the first starts; see the knob start-method).
    total = cfg["steps"] * cfg["batch"]
    sampler, sample, collate = None, None, None
    if cfg.get("dataset"):
        try:
            dataset, collate = user_dataset(cfg["dataset"])
            if isinstance(dataset, torch.utils.data.IterableDataset):
                raise TypeError("an IterableDataset has no indices to cycle: give a map-style Dataset")
            if len(dataset) == 0:
                raise ValueError("the Dataset is empty")
            sample = sample_facts(dataset, collate)
            if cfg.get("probe"):
                emit(event="probe", **sample)
                return
        except Exception as e:  # noqa: BLE001 - the user's code: said as it is, no cell ran
            message = f"the Dataset {cfg['dataset']} could not be loaded: {type(e).__name__}: {e}"
            emit(event="error", type="DatasetError", message=message, completed=0)
            return
        sampler = Cycled(len(dataset), total)
    else:
        held = torch.ones(cfg["dataset_bytes"], dtype=torch.uint8)
        dataset = Synthetic(total, shape, dtype, cfg["decode_us"] / 1e6, held)

    torch.multiprocessing.set_sharing_strategy(cfg["strategy"])
    accelerator = torch.cuda.is_available()
    emit(event="start", torch=torch.__version__.split("+")[0], accelerator=accelerator, sample=sample)

    workers = cfg["workers"]
    loader = DataLoader(
        dataset,
        batch_size=cfg["batch"],
        shuffle=False,
        sampler=sampler,
        collate_fn=collate,
        num_workers=workers,
        prefetch_factor=cfg["prefetch"],
        persistent_workers=cfg["persistent_workers"],
        pin_memory=cfg["pin_memory"],
        timeout=cfg["timeout_s"],
        worker_init_fn=WorkerInit(cfg["strategy"]),
        multiprocessing_context=cfg["start_method"] if workers > 0 else None,
    )
    touch = cfg["touch"]
    retain_every = cfg["retain_every"]
    compute_s = cfg["compute_ms"] / 1000.0
    retained = []
    checksum = 0.0
    step = 0
    completed = 0
    started = time.perf_counter()
    # CPU spent before the loop (starting Python, importing torch) is not the loader's.
    setup_cpu_s = time.process_time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    setup_faults = usage.ru_minflt + usage.ru_majflt
    iterator = None
    try:
        for _epoch in range(cfg["epochs"]):
            iterator = iter(loader)
            while True:
                try:
                    batch = next(iterator)
                except StopIteration:
                    break
                step += 1
                # Batches requested and not yet yielded (torch's own bookkeeping).
                in_flight = getattr(iterator, "_tasks_outstanding", 0)
                emit(
                    event="step",
                    step=step,
                    t=time.perf_counter() - started,
                    in_flight=in_flight,
                )
                # A user's batch may be a tuple or a dict: its tensors are read.
                for tensor in tensors_in(batch):
                    if touch == "all":
                        # Reads every element at memory speed, as the emulated consumer does (a
                        # float64 accumulation would cost the step several times more).
                        checksum += float(tensor.sum())
                    elif touch == "first" and tensor.numel() > 0:
                        checksum += float(tensor.view(-1)[0])
                if retain_every and step % retain_every == 0:
                    retained.append(batch)
                if compute_s > 0:
                    time.sleep(compute_s)
                completed = step
                # The loop drops its batch when the name is rebound by the next one, as a
                # training loop does; `del` here would release it earlier than torch's users do.
            iterator = None
    except Exception as e:  # noqa: BLE001 - every failure is a result to classify
        message = str(e)
        if isinstance(e, MemoryError):
            kept = len(retained)
            retained.clear()
            message = f"{message} ({mappings_note(kept)})".lstrip()
        emit(
            event="error",
            type=type(e).__name__,
            message=message,
            completed=completed,
            workers=worker_exits(iterator),
            cpu_s=time.process_time() - setup_cpu_s,
            setup_cpu_s=setup_cpu_s,
            setup_faults=setup_faults,
        )
        return
    # The main process's own CPU (all its threads: intra-op pools, the pin thread).
    emit(
        event="end",
        checksum=checksum,
        cpu_s=time.process_time() - setup_cpu_s,
        setup_cpu_s=setup_cpu_s,
        setup_faults=setup_faults,
    )


if __name__ == "__main__":
    main()
