"""A real NVTX client for the flinch-nvtx tests: forks CHILDREN children (default 50), each runs
RANGES ranges (default 20) through the `nvtx` package and ends with os._exit, which skips every
exit handler (as Python multiprocessing workers end). The parent waits for them and ends normally.
"""
import os
import sys

import nvtx


def main():
    children = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    ranges = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with nvtx.annotate("parent"):
        pids = []
        for c in range(children):
            pid = os.fork()
            if pid == 0:
                for _ in range(ranges):
                    with nvtx.annotate(f"child{c}"):
                        pass
                os._exit(0)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
