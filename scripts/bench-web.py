#!/usr/bin/env python3
"""Memory and threads of `flinch-trace web` under misbehaving clients, on loopback.

Usage: scripts/bench-web.py BINARY [BINARY...]   (e.g. a build of main and one of a branch)

For each binary, on a fresh server each time: opens 1,500 idle connections (sending nothing) and
reports the server's threads and RSS from /proc; then sends one request header line of up to
256 MiB without a newline and reports the RSS it reached. Needs `ulimit -n` above 1,600.
"""
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def status(pid):
    d = {}
    for line in open(f"/proc/{pid}/status"):
        k, v = line.split(":", 1)
        d[k] = v.strip()
    return d


def start(binary, www):
    p = subprocess.Popen([binary, "web", "--port", "0", "--dir", www],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"http://([\d.]+):(\d+)/", p.stdout.readline())
    time.sleep(0.3)
    return p, (m.group(1), int(m.group(2)))


def idle(binary, www, n=1500):
    p, addr = start(binary, www)
    base = status(p.pid)
    socks, peak, t0 = [], 0, time.time()
    for i in range(n):
        socks.append(socket.create_connection(addr))
        if i % 100 == 99:
            peak = max(peak, int(status(p.pid)["Threads"]))
    took = time.time() - t0
    time.sleep(0.5)
    st = status(p.pid)
    refused = 0
    for s in socks:
        s.setblocking(False)
        try:
            refused += s.recv(64).startswith(b"HTTP/1.1 503")
        except BlockingIOError:
            pass
        s.close()
    p.kill()
    p.wait()
    print(f"{binary}: {n} idle connections (opened in {took:.1f} s): threads {base['Threads']} -> "
          f"{st['Threads']} (most seen {peak}), RSS {base['VmRSS']} -> {st['VmRSS']}, "
          f"answered 503: {refused}")


def long_line(binary, www, mib=256):
    p, addr = start(binary, www)
    s = socket.create_connection(addr)
    s.sendall(b"GET / HTTP/1.1\r\nX: ")
    chunk, sent = b"a" * (1 << 20), 0
    try:
        for _ in range(mib):
            s.sendall(chunk)
            sent += 1
    except OSError:
        pass
    time.sleep(1.0)
    st = status(p.pid)
    s.close()
    p.kill()
    p.wait()
    print(f"{binary}: one {mib} MiB header line: {sent} of {mib} MiB sent before the server closed or the test stopped, "
          f"peak RSS {st['VmHWM']}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as www:
        Path(www, "index.html").write_text("<p>hi</p>\n")
        Path(www, "pkg").mkdir()
        for b in sys.argv[1:]:
            idle(b, www)
            long_line(b, www)


if __name__ == "__main__":
    main()
