"""`shmbench.tune(loader)`: the fastest settings of this DataLoader, over its own Dataset, that fit
this node's /dev/shm, found by real trials (the `shmbench tune --loader torch` of docs/TUNE.md).

    import shmbench
    loader = DataLoader(dataset, batch_size=32, num_workers=8)
    if __name__ == "__main__":
        tuned = shmbench.tune(loader, steps=40)        # minutes: real trials in child processes
        loader = DataLoader(dataset, batch_size=32, **tuned.kwargs)

The Dataset is pickled to a private temporary folder and each trial is a child process of the
shmbench binary: a DataLoader of this interpreter's torch over that Dataset, in a /dev/shm of
exactly the budget (a mount namespace of its own: nothing of it lands in this node's /dev/shm).
The pickle is a full copy of the Dataset (its tensors included) on disk while the tune runs.
A Dataset whose class this script defines is found as multiprocessing finds it in a spawned
worker, by running the script's top level (or its module, under `python -m`) once more in the
trial: keep the training under `if __name__ == "__main__":`; a script with no file (`python -c`,
stdin, a notebook) must define the class in a module. The loader's own `collate_fn` goes with
the Dataset. Ctrl-C or SIGTERM stops the trials and removes the temporary folder (exit 130 or
143); this process's death stops the binary, which ends its trials (a SIGKILL leaves the folder).
"""

import collections
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from ._binary import binary

# Set in the trials' environment: a script that calls tune() at its top level would otherwise
# tune again inside its own trial.
IN_TRIAL = "SHMBENCH_TUNE_TRIAL"


class TuneError(RuntimeError):
    """The tune could not run (bad input, a Dataset that does not load, no binary); the message
    says what to do."""


class Tuned:
    """What the tune found: `kwargs`, the pick's DataLoader arguments (None without a pick),
    `pick` its name (`w2-p1-fork`), `img_per_s` its median, `report` the whole JSON of
    `shmbench tune --format json`."""

    def __init__(self, report, kwargs, pick, img_per_s):
        self.report = report
        self.kwargs = kwargs
        self.pick = pick
        self.img_per_s = img_per_s

    def __bool__(self):
        return self.kwargs is not None

    def __repr__(self):
        if self.kwargs is None:
            return "Tuned(pick=None)"
        return f"Tuned(pick={self.pick!r}, img_per_s={self.img_per_s:.0f}, kwargs={self.kwargs!r})"


def tune(loader, shm_size=None, steps=40, compute_ms=None, max_time=None, args=()):
    """Runs `shmbench tune --loader torch` over `loader`'s Dataset and batch size. `shm_size`:
    the budget (`"1g"`; default: this node's /dev/shm); `steps`: batches a trial consumes;
    `compute_ms`: the training step's time, if the loop should wait as training would; `max_time`:
    seconds for the race; `args`: more flags of `shmbench tune`. Progress goes to stderr.
    Raises TuneError when it cannot run, KeyboardInterrupt when interrupted (nothing left)."""
    if os.environ.get(IN_TRIAL):
        raise TuneError(
            "shmbench.tune ran inside its own trial: the training script's top level runs again in "
            "each trial (as in every spawn or forkserver worker) to find its Dataset's class; put "
            "the training under `if __name__ == \"__main__\":`"
        )
    batch = getattr(loader, "batch_size", None)
    if not batch:
        raise TuneError(
            "the loader has no batch_size (batch_size=None, or a batch_sampler of its own): tune "
            "needs a DataLoader built with batch_size=N"
        )
    dataset = loader.dataset
    cmd = [binary(), "tune", "--loader", "torch", "--python", sys.executable, "--batch", str(batch)]
    persistent = bool(getattr(loader, "persistent_workers", False))
    cmd += ["--steps", str(steps), "--persistent-workers", str(persistent).lower(), "--format", "json"]
    # The sharing strategy is this process's, for every tensor it shares, not the loader's: kept.
    import torch.multiprocessing

    cmd += ["--strategy", torch.multiprocessing.get_sharing_strategy()]
    if shm_size is not None:
        cmd += ["--shm-size", str(shm_size)]
    if compute_ms is not None:
        cmd += ["--compute-ms", str(compute_ms)]
    if max_time is not None:
        cmd += ["--max-time", str(max_time)]
    cmd += [str(a) for a in args]
    folder = tempfile.mkdtemp(prefix="shmbench-tune-")
    try:
        path = os.path.join(folder, "dataset.pkl")
        _write_dataset(dataset, _own_collate(loader), path)
        cmd += ["--dataset", path]
        out = _run(cmd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _result(out)


def _own_collate(loader):
    """The loader's collate_fn when it is not torch's default one (None: the default)."""
    collate = getattr(loader, "collate_fn", None)
    try:
        from torch.utils.data._utils.collate import default_collate
    except ImportError:  # an older or newer torch: sent whatever it is
        return collate
    return None if collate is default_collate else collate


def _write_dataset(dataset, collate, path):
    """What the trial prepares (the import path; the script or module, where the Dataset's class
    is in its `__main__`), then the Dataset, then the loader's own collate_fn when it has one."""
    try:
        body = pickle.dumps((dataset, collate))
    except Exception as e:  # noqa: BLE001 - said with the fix
        raise TuneError(
            f"the Dataset or its collate_fn cannot be pickled ({type(e).__name__}: {e}): tune "
            "runs them in child processes, as forkserver and spawn workers do; make them picklable"
        ) from e
    # The script's folder, or the current one under `python -m` (an empty entry).
    prepare = {"sys_path": [p or os.getcwd() for p in sys.path]}
    if b"__main__" in body:
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name and spec.name != "__main__":
            prepare["main_name"] = spec.name
        elif getattr(main, "__file__", None) and os.path.isfile(main.__file__):
            prepare["main"] = os.path.abspath(main.__file__)
        else:
            raise TuneError(
                "the Dataset's class (or its collate_fn) is defined in __main__ of a session with "
                "no file (python -c, stdin, a notebook): a trial cannot find it there; define it "
                "in a module and import it"
            )
    with open(path, "wb") as f:
        pickle.dump(prepare, f)
        f.write(body)


def _run(cmd):
    """Runs the binary until it answers; on Ctrl-C or SIGTERM, stops it (it ends its trials and
    removes their cells) and waits for it. The binary dies with this process (PR_SET_PDEATHSIG)."""
    env = dict(os.environ, **{IN_TRIAL: "1"})
    process = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_die_with_parent,
    )
    # Its progress and errors relayed through this process's sys.stderr (a notebook shows that,
    # not fd 2), the last lines kept for the error.
    tail = collections.deque(maxlen=12)
    relay = threading.Thread(target=_relay, args=(process.stderr, tail), daemon=True)
    relay.start()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        out = process.stdout.read()
        process.wait()
        relay.join()
    except BaseException:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if process.returncode not in (0, 1):
        said = "".join(tail).strip()
        raise TuneError(f"shmbench tune failed (exit {process.returncode}): {said}")
    return out


def _relay(pipe, tail):
    for raw in pipe:
        line = raw.decode(errors="replace")
        tail.append(line)
        sys.stderr.write(line)
        sys.stderr.flush()


def _terminated(signum, _frame):
    raise SystemExit(128 + signum)


def _die_with_parent():
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - the signal handlers still stop it
        pass


def _result(out):
    whole = json.loads(out)
    # Under --validate the search's result sits beside the grid's.
    report = whole.get("search", whole)
    pick = report.get("pick")
    if pick is None:
        return Tuned(whole, None, None, None)
    chosen = report["candidates"][pick]
    setting = chosen["setting"]
    kwargs = {
        "num_workers": setting["workers"],
        "prefetch_factor": setting["prefetch"],
        "pin_memory": setting["pin_memory"],
        "persistent_workers": setting["persistent_workers"],
        "multiprocessing_context": setting["start_method"],
    }
    return Tuned(whole, kwargs, chosen["name"], chosen.get("img_per_s"))
