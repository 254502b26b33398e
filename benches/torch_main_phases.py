"""Per-batch phases of real torch's main: the seed loader (8 workers, batch 128, prefetch 2,
file_descriptor, a consumer that reads one element), each phase timed on the main's thread.

Prints one JSON line: for each phase [median, p90, mean] in ms of wall and of thread CPU, over
steps 6 to STEPS. docs/TORCH.md ("The main's costs per batch") has what it measured. Run it in a
private /dev/shm big enough for the window (about 1.3 GiB):

    unshare -m sh -c 'mount -t tmpfs -o size=2g tmpfs /dev/shm && PYTHON benches/torch_main_phases.py'

Environment: STEPS (60), WORKERS (8), BATCH (128); SWITCH sets the workers' GIL switch
interval in seconds (sys.setswitchinterval), to see whether the sharer's wait is the GIL's.
"""
import functools, json, os, statistics, sys, time
import torch
import torch.multiprocessing.reductions as red
from multiprocessing import resource_sharer
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl

STEPS = int(os.environ.get("STEPS", "60"))
SKIP = 5
WORKERS = int(os.environ.get("WORKERS", "8"))
BATCH = int(os.environ.get("BATCH", "128"))
torch.multiprocessing.set_sharing_strategy("file_descriptor")
acc = {}
cur = {}

def timed(name, f):
    @functools.wraps(f)
    def g(*a, **k):
        w = time.perf_counter(); c = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            cur.setdefault(name, [0.0, 0.0])
            cur[name][0] += time.perf_counter() - w
            cur[name][1] += time.thread_time() - c
    return g

red.rebuild_storage_fd = timed("rebuild_storage_fd", red.rebuild_storage_fd)
resource_sharer.DupFd.detach = timed("sharer_detach", resource_sharer.DupFd.detach)
It = dl._MultiProcessingDataLoaderIter
It._get_data = timed("get_data", It._get_data)
It._process_data = timed("process_data", It._process_data)
It._try_put_index = timed("try_put_index", It._try_put_index)

class Synthetic(Dataset):
    def __init__(self, n): self.n = n; self.base = None
    def __len__(self): return self.n
    def __getitem__(self, i):
        if self.base is None:
            g = torch.Generator().manual_seed(0x5EED)
            self.base = (torch.rand([3, 224, 224], generator=g) * 255).to(torch.float32)
        s = self.base.clone(); s.view(-1)[0] = i % 251; return s

loader = DataLoader(Synthetic(STEPS * BATCH), batch_size=BATCH, num_workers=WORKERS,
                    prefetch_factor=2, persistent_workers=True, worker_init_fn=(lambda _w: sys.setswitchinterval(float(os.environ["SWITCH"]))) if os.environ.get("SWITCH") else None)
rows = []
it = iter(loader)
prev = None
t0 = time.perf_counter(); c0 = time.process_time()
for step in range(1, STEPS + 1):
    cur.clear()
    w = time.perf_counter(); c = time.thread_time()
    batch = next(it)
    cur["next"] = [time.perf_counter() - w, time.thread_time() - c]
    w = time.perf_counter(); c = time.thread_time()
    float(batch.view(-1)[0])
    cur["touch"] = [time.perf_counter() - w, time.thread_time() - c]
    w = time.perf_counter(); c = time.thread_time()
    del prev
    cur["drop"] = [time.perf_counter() - w, time.thread_time() - c]
    prev = batch
    del batch
    cur["proc_cpu"] = [0.0, time.process_time()]
    if step > SKIP:
        rows.append(dict(cur))
elapsed = time.perf_counter() - t0
cpu = time.process_time() - c0
out = {"torch": torch.__version__, "steps": STEPS, "img_s": STEPS * BATCH / elapsed,
       "main_proc_cpu_ms_per_step": cpu * 1000 / STEPS}
for name in sorted({k for r in rows for k in r if k != "proc_cpu"}):
    for i, kind in ((0, "wall"), (1, "cpu")):
        v = sorted(r.get(name, [0, 0])[i] * 1000 for r in rows)
        out[f"{name}_{kind}_ms"] = [round(statistics.median(v), 2), round(v[int(len(v) * 0.9)], 2), round(sum(v) / len(v), 2)]
print(json.dumps(out))
