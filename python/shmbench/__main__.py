"""`python -m shmbench ARGS...`: the shmbench command the wheel installed, with ARGS."""

import os
import sys

from ._binary import binary


def main():
    path = binary()
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
