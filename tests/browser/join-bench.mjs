// Browser benchmark of the join: the page's summary of a trace alone, then the trace joined with
// a recording (`trace TRACE --telemetry CSV --json`), with the default 100 ms minimum gap and with
// a minimum gap that lists pauses (the case in which the join reads the trace again), in turn,
// each as a ratio to the summary alone of the same round. Prints a Markdown table.
// Usage: node tests/browser/join-bench.mjs TRACE CSV [RUNS] [MIN_GAP_MS]   (FLINCH_TRACE: the
// native binary that serves the page; FLINCH_WWW: a copy of www/ to serve instead, e.g. an older
// build, to compare side by side)
import { statSync } from 'node:fs';
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

/// One run on the page: seconds (the page's own figure) and the result's pause count.
async function once(files, minGap) {
  await page.fill('#min-gap-ms', minGap);
  await page.setInputFiles('#file-input', files);
  const state = await waitFinished(page, 30 * 60_000);
  if (state !== 'done') throw new Error(await page.textContent('#error'));
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  const r = JSON.parse(await page.textContent('#result-json'));
  return { seconds: Number(d.seconds), pauses: r.pauses ? r.pauses.length : null };
}

const cases = [
  ['summary alone (`trace TRACE --json`)', [trace], '100'],
  ['join, min gap 100 ms', [trace, csv], '100'],
  [`join, min gap ${listGap} ms (pauses listed)`, [trace, csv], listGap],
];
const rows = cases.map(() => ({ seconds: [], pauses: null }));
for (let round = 0; round < runs; round++) {
  for (const [i, [, files, gap]] of cases.entries()) {
    const r = await once(files, gap);
    rows[i].seconds.push(r.seconds);
    rows[i].pauses = r.pauses;
  }
}
await browser.close();
server.stop();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(rows[0].seconds);
console.log(`trace: ${path.basename(trace)} (${(statSync(trace).size / 1e6).toFixed(1)} MB), ` +
  `recording: ${path.basename(csv)} (${(statSync(csv).size / 1e6).toFixed(1)} MB), page: ${www}, ${runs} rounds`);
console.log('| run | seconds (rounds) | median vs summary alone | pauses listed |');
console.log('|---|---|---:|---:|');
for (const [i, [name]] of cases.entries()) {
  const r = rows[i];
  console.log(`| ${name} | ${r.seconds.map((s) => s.toFixed(2)).join(', ')} | ${(median(r.seconds) / base).toFixed(2)}x | ` +
    `${r.pauses ?? '-'} |`);
}
