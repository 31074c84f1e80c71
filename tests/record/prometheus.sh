#!/usr/bin/env bash
# A real Prometheus server scrapes `flinch-trace record --metrics` fed by the scripted GPU with known
# energy, and its HTTP API is checked against what was injected (docs/metrics.md, "How it is tested"):
#   - counter values at the scrape instants (exact): GPU 0's energy counter = the joules injected by
#     the script; per window name, flinch_windows_total / flinch_window_seconds_total = the marks'
#     count and summed durations in the trace.csv written alongside; window energy = analyze --spans'
#     figures for those spans, and on the constant-power GPU = power x seconds;
#   - increase() over a range from the series' first scrape (at 0) to its last, whose edges are scrape
#     instants, so Prometheus extrapolates nothing: it must equal the final values too;
#   - promtool check metrics accepts the text format the endpoint serves.
# Needs prometheus and promtool (Debian's `prometheus` package; scripts/setup.sh installs it). Where they
# are absent the test is skipped with a loud message, except under CI=true, where that is a failure.
# Usage: tests/record/prometheus.sh   (FLINCH_BIN: the binary, default target/debug/flinch-trace)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${FLINCH_BIN:-target/debug/flinch-trace}"

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  if [[ "${CI:-}" == "true" ]]; then
    echo "prometheus.sh: FAIL: prometheus/promtool not installed (run scripts/setup.sh) and CI=true" >&2
    exit 1
  fi
  echo "################################################################################" >&2
  echo "prometheus.sh: SKIPPED: prometheus/promtool not installed (run scripts/setup.sh)" >&2
  echo "################################################################################" >&2
  exit 0
fi
[[ -x "$BIN" ]] || { echo "prometheus.sh: $BIN not built (cargo build -p flinch-trace)" >&2; exit 1; }

work=$(mktemp -d)
rec_pid=""
prom_pid=""
cleanup() {
  [[ -n "$rec_pid" ]] && kill "$rec_pid" 2>/dev/null || true
  [[ -n "$prom_pid" ]] && kill "$prom_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PROM_PORT=$(free_port)
METRICS_PORT=$(free_port)

# The scripted GPUs, one line per 20 ms tick: GPU 0 has the energy counter, GPU 1 power only. Windows
# sit inside stretches of constant power two ticks wider than them, so GPU 1's window energy is exactly
# power x duration; `step 2` and `step 3` go past --metrics-windows 3 into "(other)".
python3 - "$work/gpu.script" <<'PY'
import sys
out = open(sys.argv[1], "w")
out.write("gpus 2\n")
idle = 40                         # ticks of idle before the first window (Prometheus scrapes a 0 first)
plan = [("prefill", 300.0, 40), ("decode", 200.0, 60), ("prefill", 300.0, 30), ("decode", 200.0, 50),
        ("step 1", 250.0, 20), ("step 2", 250.0, 20), ("step 3", 250.0, 20)]
energy = 5_000_000               # mJ
injected = 0
def tick(p0, p1, de):
    global energy, injected
    energy += de
    injected += de
    out.write(f"{p0},90,0,1900,60,{energy},100,0 ; {p1},50,0,1900,60,,100,0\n")
for _ in range(idle):
    tick(60.0, 60.0, 1200)
for name, p, n in plan:
    for _ in range(2):
        tick(p, p, int(p * 20))
    out.write(f"mark {name}_start\n")
    for _ in range(n):
        tick(p, p, int(p * 20))
    out.write(f"mark {name}_end\n")
    for _ in range(2):
        tick(p, p, int(p * 20))
    for _ in range(10):
        tick(60.0, 60.0, 1200)
# Then flat: the counter stops and GPU 1 draws nothing, so every total is final.
out.write(f"0,0,0,1900,60,{energy},100,0 ; 0,0,0,1900,60,,100,0\n")
open(sys.argv[1] + ".injected_mj", "w").write(str(injected - 1200))  # the first reading has no predecessor
PY

cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: flinch
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
YML
promtool check config "$work/prometheus.yml" >/dev/null

prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$work/prometheus.log" 2>&1 &
prom_pid=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || { cat "$work/prometheus.log" >&2; exit 1; }
# Discovery hands targets to the scrape loop some seconds after start: the recorder starts once the
# target is listed, so the first scrapes see every series at 0.
for _ in $(seq 200); do
  curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/targets" 2>/dev/null | grep -q "127.0.0.1:$METRICS_PORT" && break
  sleep 0.1
done

"$BIN" record --scripted-gpu "$work/gpu.script" --no-rapl --no-host --interval-ms 20 --seconds inf \
  --out "$work/trace.csv" --metrics "127.0.0.1:$METRICS_PORT" --metrics-windows 3 2>"$work/record.log" &
rec_pid=$!

# The checks, in Python over the HTTP APIs (urllib only).
PROM="http://127.0.0.1:$PROM_PORT" METRICS="http://127.0.0.1:$METRICS_PORT" WORK="$work" BIN="$BIN" \
REC_PID="$rec_pid" python3 - <<'PY'
import json, os, signal, subprocess, time, urllib.parse, urllib.request

PROM, METRICS, WORK, BIN = (os.environ[k] for k in ("PROM", "METRICS", "WORK", "BIN"))
injected_j = int(open(f"{WORK}/gpu.script.injected_mj").read()) / 1000.0

def api(path, **q):
    url = f"{PROM}/api/v1/{path}?" + urllib.parse.urlencode(q)
    r = json.load(urllib.request.urlopen(url, timeout=10))
    assert r["status"] == "success", r
    return r["data"]["result"]

def raw(selector, at_s):
    """Every scraped sample of each matching series up to at_s: {labels: [(ms, value)]}."""
    out = {}
    for s in api("query", query=f"{selector}[10m]", time=f"{at_s:.3f}"):
        key = tuple(sorted((k, v) for k, v in s["metric"].items() if k not in ("__name__", "job", "instance")))
        out[key] = [(round(float(t) * 1000), float(v)) for t, v in s["values"]]
    return out

def fail(msg):
    raise SystemExit(f"prometheus.sh: FAIL: {msg}")

# Wait until Prometheus has scraped the final state twice (the script ends flat: nothing moves after).
want_windows = {"prefill": 2, "decode": 2, "step 1": 1, "(other)": 2}
deadline = time.time() + 45
while True:
    now = time.time()
    w = raw("flinch_windows_total", now)
    g = raw('flinch_gpu_energy_joules_total{source="counter"}', now)
    final = {dict(k)["window"]: v[-1][1] for k, v in w.items()}
    tail = [v[-2:] for v in w.values()] + [v[-2:] for v in g.values()]
    if final == want_windows and g and all(len(t) == 2 and t[0][1] == t[1][1] for t in tail) \
            and list(g.values())[0][-1][1] == injected_j:
        break
    if now > deadline:
        fail(f"Prometheus never saw the final state: windows {final}, gpu0 {[v[-1] for v in g.values()]}, "
             f"injected {injected_j} J")
    time.sleep(0.5)

os.kill(int(os.environ["REC_PID"]), signal.SIGTERM)
for _ in range(200):
    try:
        os.kill(int(os.environ["REC_PID"]), 0)
        time.sleep(0.05)
    except ProcessLookupError:
        break
at = time.time()

# Ground truth from the trace.csv written alongside: the marks and analyze --spans.
spans = json.loads(subprocess.run([BIN, "analyze", "--csv", f"{WORK}/trace.csv", "--spans", "--json"],
                                  check=True, capture_output=True).stdout)["spans"]
truth = {}
for s in spans:
    if s["kind"] != "pair" or not s["start_label"].endswith("_start"):
        continue
    stem = s["start_label"][: -len("_start")]
    # --metrics-windows 3: the first three names seen keep their own series.
    name = stem if stem in ("prefill", "decode", "step 1") else "(other)"
    t = truth.setdefault(name, {"n": 0, "ns": 0, "e0": 0.0, "e1": 0.0, "power": 0.0})
    t["n"] += 1
    t["ns"] += s["t1_mono_ns"] - s["t0_mono_ns"]
    t["e0"] += s["gpus"][0]["energy_counter_j"]
    t["e1"] += s["gpus"][1]["energy_edge_j"]
    t["power"] += {"prefill": 300.0, "decode": 200.0}.get(stem, 250.0) * (s["t1_mono_ns"] - s["t0_mono_ns"]) / 1e9

def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(b))

checked = 0
def check(what, got, want, rel=1e-9):
    global checked
    if not close(got, want, rel):
        fail(f"{what}: Prometheus has {got!r}, expected {want!r}")
    checked += 1
    print(f"  ok  {what}: {got!r} (expected {want!r})")

print("prometheus.sh: values at the last scrape")
gpu0 = raw('flinch_gpu_energy_joules_total{source="counter"}', at)
check("GPU 0 energy counter, J (injected by the script)", list(gpu0.values())[0][-1][1], injected_j, 0)
# GPU 1 (no counter): its power integrated by the trapezoid over the CSV's samples (the naive oracle).
import csv
rows = [r for r in csv.DictReader(open(f"{WORK}/trace.csv"))
        if r["row_type"] == "SAMPLE" and r["gpu_index"] == "1" and r["gpu_power_W"]]
pts = sorted((int(r["t_mono_ns"]), float(r["gpu_power_W"])) for r in rows)
gpu1_j = sum(0.5 * (pa + pb) * (tb - ta) / 1e9 for (ta, pa), (tb, pb) in zip(pts, pts[1:]) if tb - ta <= 5e9)
gpu1 = raw('flinch_gpu_energy_joules_total{source="power"}', at)
check("GPU 1 energy from power, J (trapezoid over the CSV)", list(gpu1.values())[0][-1][1], gpu1_j)
series = {m: raw(m, at) for m in ("flinch_windows_total", "flinch_window_seconds_total",
                                  "flinch_window_energy_joules_total")}
for name, t in sorted(truth.items()):
    val = lambda m, **extra: next(v for k, v in series[m].items()
                                  if dict(k)["window"] == name and all(dict(k).get(a) == b for a, b in extra.items()))
    check(f"flinch_windows_total{{window={name!r}}} (marks)", val("flinch_windows_total")[-1][1], t["n"], 0)
    check(f"flinch_window_seconds_total{{window={name!r}}} (marks)", val("flinch_window_seconds_total")[-1][1],
          t["ns"] / 1e9, 1e-12)
    check(f"flinch_window_energy_joules_total{{window={name!r},gpu=0}} (analyze, counter)",
          val("flinch_window_energy_joules_total", gpu="0")[-1][1], t["e0"])
    e1 = val("flinch_window_energy_joules_total", gpu="1")[-1][1]
    check(f"flinch_window_energy_joules_total{{window={name!r},gpu=1}} (analyze, power)", e1, t["e1"])
    check(f"flinch_window_energy_joules_total{{window={name!r},gpu=1}} (power x seconds)", e1, t["power"])

print("prometheus.sh: increase() from each series' first scrape to its last (no extrapolation)")
for m, s in series.items():
    for k, samples in s.items():
        (t0, v0), (t1, v1) = samples[0], samples[-1]
        if v0 != 0:
            fail(f"{m}{dict(k)} first scraped at {v0}, not 0: the range would not start at its birth")
        sel = "{" + ",".join(f'{a}="{b}"' for a, b in k) + "}"
        r = api("query", query=f"increase({m}{sel}[{t1 - t0}ms])", time=f"{t1 / 1000:.3f}")
        check(f"increase({m}{sel}[{t1 - t0}ms]) over {len(samples)} scrapes", float(r[0]["value"][1]), v1, 1e-12)

# Control: the same increase() evaluated 500 ms after the last scrape is extrapolated to its end, so it
# must differ from the final value; otherwise the exact checks above could not have failed.
k, samples = next((k, v) for k, v in series["flinch_window_seconds_total"].items() if v[-1][1] > 0)
(t0, _), (t1, v1) = samples[0], samples[-1]
sel = "{" + ",".join(f'{a}="{b}"' for a, b in k) + "}"
r = float(api("query", query=f"increase(flinch_window_seconds_total{sel}[{t1 - t0 + 500}ms])",
              time=f"{(t1 + 500) / 1000:.3f}")[0]["value"][1])
if close(r, v1, 1e-6):
    fail(f"control: increase() over a range past the last scrape gave {r}, the final value {v1}")
print(f"  ok  control: a range ending 500 ms past the last scrape extrapolates: {r!r} vs {v1!r}")
print(f"prometheus.sh: {checked} checks passed")
PY
rec_pid=""

# promtool lints the text format (it reads the Prometheus text format, not OpenMetrics).
"$BIN" record --scripted-gpu "$work/gpu.script" --no-rapl --no-host --interval-ms 20 --seconds inf \
  --metrics "127.0.0.1:$METRICS_PORT" 2>/dev/null &
rec_pid=$!
for _ in $(seq 100); do
  curl -fsS -H 'Accept: text/plain' "http://127.0.0.1:$METRICS_PORT/metrics" -o "$work/metrics.txt" 2>/dev/null && break
  sleep 0.1
done
echo "prometheus.sh: promtool check metrics"
promtool check metrics <"$work/metrics.txt"
echo "prometheus.sh: passed"
