// Browser benchmark of the join: the page's summary of a trace alone, then the trace joined with
// a recording (`trace TRACE --telemetry CSV --json`), with the default 100 ms minimum gap and with
// a minimum gap that lists pauses (the case in which the join reads the trace again), in turn,
// each as a ratio to the summary alone of the same round. Prints a Markdown table.
// Usage: node tests/browser/join-bench.mjs TRACE CSV [RUNS] [MIN_GAP_MS]   (FLINCH_TRACE: the
// native binary that serves the page; FLINCH_WWW: a copy of www/ to serve instead, e.g. an older
// build, to compare side by side)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT, startServer, startBrowser, openPage, waitFinished } from './harness.mjs';

const [trace, csv, runsArg, listArg] = process.argv.slice(2);
if (!trace || !csv) {
  console.error('usage: node tests/browser/join-bench.mjs TRACE CSV [RUNS] [MIN_GAP_MS]');
  process.exit(2);
}
const runs = Number(runsArg || 3);
const listGap = listArg || '0.001';
const www = process.env.FLINCH_WWW || path.join(ROOT, 'www');

const server = await startServer(www);
const browser = await startBrowser(server.url.replace(/\/$/, ''));
const page = await openPage(browser.context, server.url);

/// CPU seconds (user + system) of every Chromium Web Worker thread, by thread id, from /proc
/// (Linux), as bench.mjs reads them: the page's workers' busy time, which load on the machine
/// inflates less than wall time.
function workerCpuSeconds() {
  const out = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let tids = [];
    try { tids = readdirSync(`/proc/${pid}/task`); } catch { continue; }
    for (const tid of tids) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        if (!stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('DedicatedWorker')) continue;
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(`${pid}/${tid}`, (Number(f[11]) + Number(f[12])) / 100);
      } catch { /* thread ended */ }
    }
  }
  return out;
}

/// One run on the page: seconds (the page's own figure), the workers' CPU seconds, and the
/// result's pause count.
async function once(files, minGap) {
  const cpu0 = workerCpuSeconds();
  // The form is hidden until a join has been shown.
  await page.evaluate((v) => { document.querySelector('#min-gap-ms').value = v; }, minGap);
  await page.setInputFiles('#file-input', files);
  const state = await waitFinished(page, 30 * 60_000);
  if (state !== 'done') throw new Error(await page.textContent('#error'));
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  const r = JSON.parse(await page.textContent('#result-json'));
  const cpu = [...workerCpuSeconds()].reduce((sum, [t, s]) => sum + s - (cpu0.get(t) || 0), 0);
  return { seconds: Number(d.seconds), cpu, pauses: r.pauses ? r.pauses.length : null };
}

const cases = [
  ['summary alone (`trace TRACE --json`)', [trace], '100'],
  ['join, min gap 100 ms', [trace, csv], '100'],
  [`join, min gap ${listGap} ms (pauses listed)`, [trace, csv], listGap],
];
const rows = cases.map(() => ({ seconds: [], cpu: [], ratio: [], cpuRatio: [], pauses: null }));
try {
  for (let round = 0; round < runs; round++) {
    for (const [i, [, files, gap]] of cases.entries()) {
      const r = await once(files, gap);
      rows[i].seconds.push(r.seconds);
      rows[i].cpu.push(r.cpu);
      rows[i].ratio.push(r.seconds / rows[0].seconds[round]);
      rows[i].cpuRatio.push(r.cpu / rows[0].cpu[round]);
      rows[i].pauses = r.pauses;
    }
  }
} finally {
  await browser.close();
  server.stop();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`trace: ${path.basename(trace)} (${(statSync(trace).size / 1e6).toFixed(1)} MB), ` +
  `recording: ${path.basename(csv)} (${(statSync(csv).size / 1e6).toFixed(1)} MB), page: ${www}, ${runs} rounds`);
console.log('| run | wall s (rounds) | wall vs summary alone (median of rounds) | workers CPU s (rounds) | CPU vs summary alone | pauses listed |');
console.log('|---|---|---:|---|---:|---:|');
const list = (xs) => xs.map((s) => s.toFixed(2)).join(', ');
for (const [i, [name]] of cases.entries()) {
  const r = rows[i];
  console.log(`| ${name} | ${list(r.seconds)} | ${median(r.ratio).toFixed(2)}x | ${list(r.cpu)} | ` +
    `${median(r.cpuRatio).toFixed(2)}x | ${r.pauses ?? '-'} |`);
}
