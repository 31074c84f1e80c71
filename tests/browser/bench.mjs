// Browser benchmark: throughput of the page (Chromium, wasm in a worker) vs the native CLI on the
// same file, side by side. Prints a Markdown table row set for BENCHMARKS.md.
// Usage: node tests/browser/bench.mjs FILE [RUNS]   (FLINCH_TRACE=path/to/release/flinch-trace)
// The native figure is `flinch-trace trace FILE --json` (or `analyze --csv FILE --json`) wall time.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { nativeBinary, startServer, startBrowser, openPage, waitFinished, chooseFile, resultJson } from './harness.mjs';
import { isDeepStrictEqual } from 'node:util';

const [file, runsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node tests/browser/bench.mjs FILE [RUNS]');
  process.exit(2);
}
const runs = Number(runsArg || 3);
const bytes = statSync(file).size;
const args = file.endsWith('.csv') ? ['analyze', '--csv', file, '--json'] : ['trace', file, '--json'];

/// CPU seconds (user + system) of every Chromium Web Worker thread on the machine, by thread id,
/// from /proc (Linux): the page's two workers' busy time, which load on the machine does not
/// inflate the way it inflates wall time. On an idle machine with two free cores the page's wall
/// time is about the larger of the two.
function workerCpuSeconds() {
  const out = new Map();
  const hz = 100; // USER_HZ
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let tids = [];
    try { tids = readdirSync(`/proc/${pid}/task`); } catch { continue; }
    for (const tid of tids) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (!comm.startsWith('DedicatedWorker')) continue;
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(`${pid}/${tid}`, (Number(f[11]) + Number(f[12])) / hz);
      } catch { /* thread ended */ }
    }
  }
  return out;
}

const nativeSeconds = [];
let nativeJson = null;
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  const out = execFileSync(nativeBinary(), args, { stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 256 << 20 });
  nativeSeconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
  nativeJson = JSON.parse(out);
}

const server = await startServer();
const browser = await startBrowser(server.url.replace(/\/$/, ''));
const page = await openPage(browser.context, server.url);
const pageSeconds = [];
const workerCpu = [];
let memory = '';
let pageJson = null;
for (let i = 0; i < runs; i++) {
  const cpu0 = workerCpuSeconds();
  await chooseFile(page, file);
  const state = await waitFinished(page, 30 * 60_000);
  if (state !== 'done') throw new Error(await page.textContent('#error'));
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  pageSeconds.push(Number(d.seconds));
  pageJson = await resultJson(page);
  const cpu1 = workerCpuSeconds();
  const busy = [...cpu1].map(([t, s]) => s - (cpu0.get(t) || 0)).filter((s) => s > 0.05).sort((a, b) => b - a);
  workerCpu.push(busy);
  memory = `${(d.wasmMemoryBeforeBytes / 2 ** 20).toFixed(1)} -> ${(d.wasmMemoryBytes / 2 ** 20).toFixed(1)} MiB`;
}
await browser.close();
server.stop();

const best = (xs) => Math.min(...xs);
const mbps = (s) => (bytes / 1e6 / s).toFixed(0);
console.log(`file: ${path.basename(file)} (${(bytes / 1e6).toFixed(1)} MB), best of ${runs}`);
console.log('| run | seconds | MB/s of file | note |');
console.log('|---|---|---|---|');
console.log(`| native \`${args.join(' ')}\` | ${best(nativeSeconds).toFixed(2)} | ${mbps(best(nativeSeconds))} | ${nativeBinary()} |`);
console.log(`| page (Chromium, wasm worker) | ${best(pageSeconds).toFixed(2)} | ${mbps(best(pageSeconds))} | wasm memory ${memory} |`);
console.log(`ratio page/native throughput: ${(best(nativeSeconds) / best(pageSeconds)).toFixed(2)}`);
// One answer: the page's #result-json is the native --json (the source names aside: a path there, the
// file name on the page).
const { source: _n, ...nativeRest } = nativeJson;
const { source: _p, ...pageRest } = pageJson;
console.log(`page #result-json equals native --json: ${isDeepStrictEqual(nativeRest, pageRest) ? 'yes' : 'NO'}`);
console.log(`page worker threads, CPU s per run (busiest first): ${workerCpu.map((b) => b.map((s) => s.toFixed(2)).join(' + ')).join('; ')}`);
