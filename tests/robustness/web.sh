#!/usr/bin/env bash
# `flinch-trace web` under hostile clients, on loopback: hundreds of idle connections must not keep a
# new client waiting, an endless header line gets 431, a body is refused, and the cap answers 503.
set -euo pipefail
BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
TMP="$(mktemp -d)"
SERVER=""
cleanup() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/www/pkg"
echo '<p>hi</p>' >"$TMP/www/index.html"
passed=0
failed=0
check() { # name, then the command; it must succeed
  local name="$1"; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name" >&2; fi
}
start() { # extra args
  "$BIN" web --port 0 --dir "$TMP/www" "$@" >"$TMP/url" 2>"$TMP/err" &
  SERVER=$!
  for _ in $(seq 100); do grep -q http "$TMP/url" && break; sleep 0.05; done
  ADDR=$(sed -n 's#.*http://\([0-9.:]*\)/.*#\1#p' "$TMP/url")
  [ -n "$ADDR" ]
}
stop() { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; }

client() { # python scenario name
  timeout 30 python3 - "$ADDR" "$1" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
addr = (host, int(port))
def get(req, wait=1.0):
    c = socket.create_connection(addr)
    c.settimeout(wait)
    c.sendall(req)
    got = b""
    t = time.time()
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            got += d
    except socket.timeout:
        return None, time.time() - t
    except ConnectionResetError:
        pass
    c.close()
    return got, time.time() - t
case = sys.argv[2]
if case == "idle":
    held = [socket.create_connection(addr) for _ in range(500)]
    time.sleep(0.3)
    for _ in range(5):
        got, took = get(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert got and got.startswith(b"HTTP/1.1 200 OK\r\n") and took < 1.0, (got, took)
    held[250].sendall(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
    held[250].settimeout(1.0)
    assert held[250].recv(64).startswith(b"HTTP/1.1 200 OK"), "held connection not served"
elif case == "longhead":
    c = socket.create_connection(addr)
    c.settimeout(10)
    c.sendall(b"GET / HTTP/1.1\r\nX-Long: ")
    try:
        for _ in range(64):
            c.sendall(b"a" * 65536)
    except OSError:
        pass
    got = c.recv(4096)
    assert got.startswith(b"HTTP/1.1 431 "), got
elif case == "body":
    got, _ = get(b"GET / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", 3.0)
    assert got and got.startswith(b"HTTP/1.1 400 "), got
    got, _ = get(b"POST / HTTP/1.1\r\nConnection: close\r\n\r\n", 3.0)
    assert got and got.startswith(b"HTTP/1.1 405 "), got
elif case == "cap":
    # 8 clients that began a request fill the cap: the next one gets 503 at once.
    held = [socket.create_connection(addr) for _ in range(8)]
    for h in held:
        h.sendall(b"GET / HTTP/1.1\r\n")
    time.sleep(0.3)
    got, _ = get(b"", 3.0)
    assert got and got.startswith(b"HTTP/1.1 503 "), got
    del held
elif case == "silent":
    # 3x the cap of silent connections: each newcomer closes the oldest silent one.
    held = [socket.create_connection(addr) for _ in range(24)]
    time.sleep(0.3)
    got, took = get(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert got and got.startswith(b"HTTP/1.1 200 OK\r\n") and took < 1.0, (got, took)
PY
}

start
check "500 idle connections, new clients answered within 1 s" client idle
check "an endless header line gets 431" client longhead
check "a body is refused, other methods 405" client body
stop
start --max-connections 8
check "past the cap, 503 at once" client cap
check "silent connections past the cap make room" client silent
stop

echo "robustness web: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
