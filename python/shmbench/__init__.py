"""shmbench for Python: will this DataLoader fit in this node's /dev/shm?

    import shmbench
    shmbench.preflight(loader)          # warns, or raises with the fix, before the first batch

The wheel also installs the `shmbench` command (the harness: `shmbench doctor`, `watch`, ...);
`python -m shmbench ...` runs it too.
"""

from ._binary import binary
from .preflight import Preflight, PreflightError, preflight

__all__ = ["Preflight", "PreflightError", "binary", "preflight"]
