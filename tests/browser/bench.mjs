// Browser benchmark: throughput of the page (Chromium, wasm in a worker) vs the native CLI on the
// same file, side by side. Prints a Markdown table row set for BENCHMARKS.md.
// Usage: node tests/browser/bench.mjs FILE [RUNS]   (FLINCH_TRACE=path/to/release/flinch-trace)
// The native figure is `flinch-trace trace FILE --json` (or `analyze --csv FILE --json`) wall time.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';
import { nativeBinary, startServer, startBrowser, openPage, waitFinished, chooseFile } from './harness.mjs';

const [file, runsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node tests/browser/bench.mjs FILE [RUNS]');
  process.exit(2);
}
const runs = Number(runsArg || 3);
const bytes = statSync(file).size;
const args = file.endsWith('.csv') ? ['analyze', '--csv', file, '--json'] : ['trace', file, '--json'];

const nativeSeconds = [];
for (let i = 0; i < runs; i++) {
  const t0 = process.hrtime.bigint();
  execFileSync(nativeBinary(), args, { stdio: ['ignore', 'ignore', 'inherit'] });
  nativeSeconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
}

const server = await startServer();
const browser = await startBrowser(server.url.replace(/\/$/, ''));
const page = await openPage(browser.context, server.url);
const pageSeconds = [];
let memory = '';
for (let i = 0; i < runs; i++) {
  await chooseFile(page, file);
  const state = await waitFinished(page, 30 * 60_000);
  if (state !== 'done') throw new Error(await page.textContent('#error'));
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  pageSeconds.push(Number(d.seconds));
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
