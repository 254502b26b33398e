"""shmbench for Python: will this DataLoader fit in this node's /dev/shm?

    import shmbench
    shmbench.preflight(loader)          # warns, or raises with the fix, before the first batch
    shmbench.explain.follow()           # a worker's Bus error explained by its cause
    shmbench.tune(loader)               # the fastest settings that fit, by real trials (minutes)

The wheel also installs the `shmbench` command (the harness: `shmbench doctor`, `watch`, ...);
`python -m shmbench ...` runs it too.
"""

from . import explain
from ._binary import binary
from .preflight import Preflight, PreflightError, preflight
from .tune import Tuned, TuneError, tune

__all__ = ["Preflight", "PreflightError", "TuneError", "Tuned", "binary", "explain", "preflight", "tune"]
