"""A training script that follows itself with `shmbench.explain` before its first epoch, then
runs tests/python/train_mapped.py's loop (its mapped dataset truncated after step 3): the
worker's Bus error, which torch blames on shared memory, is printed with its cause after the
traceback (tests/explain.rs).

    train_explained.py DATA
"""
import os
import sys

import shmbench

shmbench.explain.follow()
sys.argv = [sys.argv[0], sys.argv[1], "8", "2", "truncate"]
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "train_mapped.py")) as f:
    exec(compile(f.read(), "train_mapped.py", "exec"))
