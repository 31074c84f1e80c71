// A generated >= 200 MB .json.gz goes through the page, and WebAssembly memory stays flat:
// measured after a small file, after the large file, and after the large file again. The figures
// are printed and written to tests/artifacts/browser-memory.json.
// FLINCH_LARGE_MB sets the minimum .json.gz size in MB (default 200).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { openPage, waitFinished, chooseFile, resultJson, artifactPath, browserSession } from './harness.mjs';
import { cachedTrace } from './gen.mjs';

const LARGE_MB = Number(process.env.FLINCH_LARGE_MB || 200);
let server;
let browser;

browserSession((s) => ({ server, browser } = s));

/// Runs `file` through the page; returns what the page reports about the run.
async function runFile(page, file) {
  await chooseFile(page, file);
  await page.waitForSelector('body[data-state="working"], body[data-state="done"], body[data-state="error"]');
  const state = await waitFinished(page, 15 * 60_000);
  assert.equal(state, 'done', await page.textContent('#error'));
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  const result = await resultJson(page);
  const events = Object.values(result.categories).reduce((s, c) => s + c.events, 0);
  return {
    file: path.basename(file),
    bytes: Number(d.bytes),
    seconds: Number(d.seconds),
    mb_per_s: Number(d.bytes) / 1e6 / Number(d.seconds),
    wasm_memory_before_bytes: Number(d.wasmMemoryBeforeBytes),
    wasm_memory_after_bytes: Number(d.wasmMemoryBytes),
    events,
  };
}

test(`a >= ${LARGE_MB} MB .json.gz completes with flat WebAssembly memory`, { timeout: 30 * 60_000 }, async () => {
  const small = artifactPath('small-generated.json.gz');
  const large = artifactPath(`large-generated-${LARGE_MB}mb.json.gz`);
  const smallMeta = await cachedTrace(small, 1e6);
  const largeMeta = await cachedTrace(large, LARGE_MB * 1e6);
  assert.ok(largeMeta.gzBytes >= LARGE_MB * 1e6);

  const page = await openPage(browser.context, server.url);
  const atLoad = Number(await page.getAttribute('body', 'data-wasm-memory-bytes'));
  const runs = [];
  runs.push(await runFile(page, small));
  runs.push(await runFile(page, large));
  runs.push(await runFile(page, large));
  const report = { wasm_memory_at_load_bytes: atLoad, runs, generated: { small: smallMeta, large: largeMeta } };
  writeFileSync(artifactPath('browser-memory.json'), JSON.stringify(report, null, 2));
  console.log(JSON.stringify(report, null, 2));

  // Every event was read, in both large runs.
  assert.equal(runs[0].events, smallMeta.events);
  assert.equal(runs[1].events, largeMeta.events);
  assert.equal(runs[2].events, largeMeta.events);
  // Flat: the large file (hundreds of times the small one) ends with the memory the small one
  // needed plus at most the bounded analysis state (Limits::BOUNDED: a few MiB of ops/values/
  // intervals); a second large run grows at most 1 MiB (allocator slack, not per-event growth:
  // 1.6 M events would need far more); and the total is far below the file's size.
  const afterSmall = runs[0].wasm_memory_after_bytes;
  const afterLarge = runs[1].wasm_memory_after_bytes;
  assert.ok(afterLarge - afterSmall <= 32 << 20, `memory grew by ${afterLarge - afterSmall} bytes`);
  const regrowth = runs[2].wasm_memory_after_bytes - afterLarge;
  assert.ok(regrowth <= 1 << 20, `a second large run grew memory by ${regrowth} bytes`);
  assert.ok(afterLarge < largeMeta.gzBytes / 4, `memory ${afterLarge} vs file ${largeMeta.gzBytes}`);

  // Cancel mid-way: the page goes back to ready with a fresh worker, and analyzes again.
  await chooseFile(page, large);
  await page.waitForFunction(() => Number(document.querySelector('#progress').value) > 0.05, null, { timeout: 60_000 });
  await page.click('#cancel');
  assert.equal(await page.getAttribute('body', 'data-state'), 'ready');
  assert.match(await page.textContent('#status'), /^Cancelled large-generated/);
  await chooseFile(page, small);
  assert.equal(await waitFinished(page), 'done');
  assert.equal((await resultJson(page)).totals.duration_events, smallMeta.events);
  await page.close();
});
