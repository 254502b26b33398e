"""Why a DataLoader worker died: `shmbench explain` follows this training process and the
workers it starts from now on, catches each Bus error at its delivery and names its cause (a
full /dev/shm, a memory limit, a dataset file truncated under its mapping, a kill, ...) with
the fix for that cause. torch only says "killed by signal: Bus error" and guesses shared memory.

    import shmbench
    shmbench.explain.follow()      # before the first epoch: a worker's Bus error is explained

When the script then dies of an exception (torch's RuntimeError for a dead worker), the causes
are printed after its traceback. `Follower.explanations()` gives them as dicts, `render()` as
text. docs/EXPLAIN.md has the causes.
"""

import atexit
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading

from ._binary import binary

# prctl(PR_SET_PTRACER, pid): where kernel.yama.ptrace_scope is 1, lets the helper trace us.
_PR_SET_PTRACER = 0x59616D61


class Follower:
    """A running `shmbench explain --pid` for this process."""

    def __init__(self, process, path, said):
        self.process = process
        self.path = path
        self._said = said

    def explanations(self):
        """The causes found so far, each a dict: cause, facts, fix, pid, caught."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def render(self):
        """The causes found so far, as the lines `shmbench watch` prints; "" when none."""
        def shown(text):
            # The facts hold the job's own names (a mapped file's path): data, never a control.
            return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)

        lines = []
        for e in self.explanations():
            # A handler re-raising the fault it caught (torch's worker handler) is that fault's.
            if e["cause"] == "sent" and any("raised it itself" in f for f in e["facts"]):
                continue
            lines.append(f"shmbench: cause: {e['cause']}")
            lines.extend(f"  {shown(fact)}" for fact in e["facts"])
            lines.append(f"  fix: {e['fix']}")
        return "\n".join(lines) + "\n" if lines else ""

    def stop(self):
        """Stops following (the process goes on untraced) and removes the helper's file."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def follow(pid=None, hook=True):
    """Starts `shmbench explain` on `pid` (this process by default) and waits until it follows
    it; with `hook`, the causes are printed after an uncaught exception's traceback. Raises
    RuntimeError with the helper's words when it cannot follow (another tracer, a sandbox
    without ptrace)."""
    pid = pid or os.getpid()
    fd, path = tempfile.mkstemp(prefix="shmbench-explain-", suffix=".jsonl")
    os.close(fd)
    process = subprocess.Popen(
        [binary(), "explain", "--pid", str(pid), "--out", path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PTRACER, process.pid, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl (not Linux): the helper says whether it could follow
    first = process.stdout.readline()
    # The helper's live words are the file's; its stderr is drained so it never blocks.
    draining = threading.Thread(target=lambda: said.extend(process.stderr), daemon=True)
    draining.start()
    if not first.startswith("following"):
        process.wait()
        draining.join(timeout=5)
        os.unlink(path)
        raise RuntimeError("shmbench explain could not follow this process: " + "".join(said).strip())
    follower = Follower(process, path, said)
    atexit.register(follower.stop)
    if hook:
        previous = sys.excepthook

        def explained(kind, value, traceback):
            previous(kind, value, traceback)
            sys.stderr.write(follower.render())

        sys.excepthook = explained
    return follower
