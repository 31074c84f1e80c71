#!/usr/bin/env python3
"""Memory and threads of `flinch-trace web` under misbehaving clients, on loopback.

Usage: scripts/bench/web.py BINARY [BINARY...]   (e.g. a build of main and one of a branch)

For each binary, on a fresh server each time: opens 1,500 idle connections (sending nothing) and
reports the server's threads and RSS from /proc, and how long a new client then waits for the
page; then sends one request header line of up to 256 MiB without a newline and reports the RSS
it reached; then measures requests/s: 4 client threads, each on one kept-alive connection,
sending `GET /` back to back for 3 s (a Python client: the figure compares servers, it is not the
server's ceiling). Needs `ulimit -n` above 1,600.
"""
import re
import socket
import subprocess
import sys
import tempfile
import threading
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
    # A new client while they are all open.
    t1 = time.time()
    c = socket.create_connection(addr)
    c.settimeout(15)
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    got = b""
    try:
        while True:
            d = c.recv(4096)
            if not d:
                break
            got += d
    except OSError:
        pass
    c.close()
    new_ms = (time.time() - t1) * 1000
    new_status = got.split(b"\r\n", 1)[0].decode(errors="replace")
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
          f"answered 503: {refused}; a new client then got \"{new_status}\" in {new_ms:.1f} ms")


def throughput(binary, www, threads=4, seconds=3.0):
    p, addr = start(binary, www)
    counts = [0] * threads
    stop = time.time() + seconds

    def client(i):
        s = socket.create_connection(addr)
        req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        buf = b""
        while time.time() < stop:
            s.sendall(req)
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            head, buf = buf.split(b"\r\n\r\n", 1)
            n = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
            while len(buf) < n:
                buf += s.recv(65536)
            buf = buf[n:]
            counts[i] += 1
        s.close()

    ts = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    st = status(p.pid)
    p.kill()
    p.wait()
    print(f"{binary}: {sum(counts) / seconds:.0f} requests/s ({threads} kept-alive connections, "
          f"{seconds:.0f} s), server threads {st['Threads']}, RSS {st['VmRSS']}")


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
            throughput(b, www)


if __name__ == "__main__":
    main()
