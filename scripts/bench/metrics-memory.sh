#!/usr/bin/env bash
# Memory of `record --metrics` without --out (the daemon): RSS over SECONDS of scripted sampling
# (8 GPUs, 10 ms) with a new window name every 10 ms (`step N_start`/`step N_end` over the FIFO) and a
# scrape every second, beside `record --out FILE` (no metrics) fed the same marks.
# Usage: scripts/bench/metrics-memory.sh [SECONDS]   (FLINCH_BIN: default target/release/flinch-trace)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${FLINCH_BIN:-target/release/flinch-trace}"
SECS="${1:-180}"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
{ echo "gpus 8"; for _ in 1 2 3 4 5 6 7; do printf '250.5,90,0,1900,60,123456,100,0 ; '; done
  echo "250.5,90,0,1900,60,123456,100,0"; } >"$work/gpu.script"
common=(record --scripted-gpu "$work/gpu.script" --no-rapl --no-host --interval-ms 10 --seconds inf)
"$BIN" "${common[@]}" --marks-fifo "$work/m1" --metrics 127.0.0.1:0 2>"$work/daemon.log" &
daemon=$!
"$BIN" "${common[@]}" --marks-fifo "$work/m2" --out "$work/t.csv" 2>/dev/null &
file=$!
for _ in $(seq 100); do grep -q 'metrics at' "$work/daemon.log" 2>/dev/null && [[ -p "$work/m2" ]] && break; sleep 0.1; done
url=$(sed -n 's/.*metrics at \(http:[^ ]*\).*/\1/p' "$work/daemon.log")
python3 - "$daemon" "$file" "$work/m1" "$work/m2" "$url" "$SECS" <<'PY'
import sys, time, urllib.request
daemon, file, f1, f2, url, secs = sys.argv[1:7]
def rss_kib(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])
m1, m2 = open(f1, "w", buffering=1), open(f2, "w", buffering=1)
start = time.time(); i = 0; next_scrape = start; next_report = start + 10
base = None
print(f"{'t_s':>5} {'marks':>8} {'daemon_rss_kib':>15} {'ratio':>6} {'out_rss_kib':>12} {'ratio':>6} {'scrape_bytes':>12}")
size = 0
while time.time() - start < int(secs):
    for f in (m1, m2):
        f.write(f"step {i}_start\n")
    time.sleep(0.004)
    for f in (m1, m2):
        f.write(f"step {i}_end\n")
    time.sleep(0.004)
    i += 1
    now = time.time()
    if now >= next_scrape:
        size = len(urllib.request.urlopen(url, timeout=5).read())
        next_scrape += 1
    if now >= next_report:
        d, o = rss_kib(daemon), rss_kib(file)
        base = base or (d, o)
        print(f"{now - start:5.0f} {2 * i:8d} {d:15d} {d / base[0]:6.3f} {o:12d} {o / base[1]:6.3f} {size:12d}", flush=True)
        next_report += 10
PY
