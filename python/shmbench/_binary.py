"""Where the `shmbench` binary is: beside this interpreter's scripts, where pip put the wheel's
binary, or else on PATH (a shmbench built from source)."""

import os
import shutil
import sys
import sysconfig


def binary():
    """The path of the shmbench executable; RuntimeError with what to do when there is none."""
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), "shmbench"),
        os.path.join(os.path.dirname(sys.executable), "shmbench"),
    ]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which("shmbench")
    if found:
        return found
    raise RuntimeError(
        "the shmbench binary is not installed beside this Python: reinstall the wheel "
        "(pip install shmbench-*.whl), or put a built shmbench on PATH"
    )
