"""shmbench for Python: will this DataLoader fit in this node's /dev/shm?

    import shmbench
    shmbench.preflight(loader)          # warns, or raises with the fix, before the first batch
    shmbench.explain.follow()           # a worker's Bus error explained by its cause

The wheel also installs the `shmbench` command (the harness: `shmbench doctor`, `watch`, ...);
`python -m shmbench ...` runs it too.
"""

from . import explain
from ._binary import binary
from .preflight import Preflight, PreflightError, preflight

__all__ = ["Preflight", "PreflightError", "binary", "explain", "preflight"]
