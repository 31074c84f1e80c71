"""A real NVTX client for the flinch-nvtx tests: forks CHILDREN children (default 50), each runs
RANGES ranges (default 20) through the `nvtx` package and ends with EXIT (default `_exit`):
`_exit` is os._exit, which skips every exit handler (as Python multiprocessing workers end);
`exit` is sys.exit, a normal exit that runs them. The parent waits for them and ends normally.
"""
import os
import sys

import nvtx


def main():
    children = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    ranges = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    how = sys.argv[3] if len(sys.argv) > 3 else "_exit"
    if how not in ("exit", "_exit"):
        sys.exit(f"nvtx_fork_exit.py: EXIT must be exit or _exit, not {how!r}")
    # A mark, not a range around the forks: sys.exit in a child unwinds through enclosing `with`
    # blocks, and would end the parent's range there too.
    nvtx.mark("parent_forks")
    pids = []
    for c in range(children):
        pid = os.fork()
        if pid == 0:
            for _ in range(ranges):
                with nvtx.annotate(f"child{c}"):
                    pass
            if how == "exit":
                sys.exit(0)
            os._exit(0)
        pids.append(pid)
    with nvtx.annotate("parent"):
        for pid in pids:
            os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
