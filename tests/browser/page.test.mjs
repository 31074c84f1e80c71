// The page itself: loading, serving, privacy (CSP + request interception), errors, screenshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  openPage, waitFinished, chooseFile, dropFile, artifactPath, native, resultJson, ROOT, browserSession,
} from './harness.mjs';

let server;
let browser;
const scratch = mkdtempSync(path.join(tmpdir(), 'flinch-page-'));

browserSession((s) => ({ server, browser } = s));

test('the page loads its analyzer and serves wasm as application/wasm', async () => {
  const page = await browser.context.newPage();
  const wasmResponse = page.waitForResponse((r) => r.url().endsWith('.wasm'));
  const workerResponse = page.waitForResponse((r) => r.url().endsWith('/worker.js'));
  await page.goto(server.url);
  const response = await wasmResponse;
  assert.equal(response.headers()['content-type'], 'application/wasm');
  // The worker does not inherit the page's meta CSP: the server sends the same policy as a header.
  assert.match((await workerResponse).headers()['content-security-policy'], /connect-src 'self';/);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 30_000 });
  const memory = Number(await page.getAttribute('body', 'data-wasm-memory-bytes'));
  assert.ok(memory > 0, `WebAssembly memory size reported: ${memory}`);
  await page.close();
});

test('an analyzer that cannot load is one clear error, not a loop of new workers', async () => {
  // This browser runs WebAssembly SIMD, so the probe must say so (a broken probe would blame it).
  const probe = await openPage(browser.context, server.url);
  assert.equal(await probe.evaluate(async () => (await import('./simd.js')).hasSimd()), true);
  await probe.close();

  let fetches = 0;
  const corrupt = (route) => {
    fetches += 1;
    return route.fulfill({ status: 200, contentType: 'application/wasm', body: 'not wasm' });
  };
  await browser.context.route('**/flinch_wasm_bg.wasm', corrupt);
  try {
    const page = await browser.context.newPage();
    await page.goto(server.url);
    await page.waitForSelector('body[data-state="error"]', { timeout: 30_000 });
    const error = await page.textContent('#error');
    assert.match(error, /^could not load the analyzer: /);
    assert.doesNotMatch(error, /SIMD/);
    // Both workers fetch the module once; a restart loop would fetch it again and again.
    await page.waitForTimeout(2000);
    assert.ok(fetches <= 2, `the wasm was fetched ${fetches} times`);
    assert.equal(await page.getAttribute('body', 'data-state'), 'error');
    await page.close();
  } finally {
    await browser.context.unroute('**/flinch_wasm_bg.wasm', corrupt);
  }
});

test('an empty file and a whitespace-only file are clear errors', async () => {
  const page = await openPage(browser.context, server.url);
  const empty = path.join(scratch, 'empty.json');
  writeFileSync(empty, '');
  await chooseFile(page, empty);
  assert.equal(await waitFinished(page), 'error');
  assert.match(await page.textContent('#error'), /^empty\.json: empty input: no bytes to analyze$/);

  const blank = path.join(scratch, 'blank.csv');
  writeFileSync(blank, ' \n\n  \n');
  await dropFile(page, blank);
  await page.waitForFunction(() => document.querySelector('#error').textContent.includes('blank.csv'));
  assert.equal(await page.getAttribute('body', 'data-state'), 'error');
  assert.match(await page.textContent('#error'), /^blank\.csv: only whitespace up to byte 6/);
  assert.deepEqual(page.errors ?? [], []);
  await page.close();
});

test('a corrupt .json.gz is an error naming the byte offset', async () => {
  const page = await openPage(browser.context, server.url);
  const gz = gzipSync(Buffer.from(' '.repeat(100_000)));
  gz[gz.length - 8] ^= 0xff; // the member's CRC32
  const file = path.join(scratch, 'corrupt.json.gz');
  writeFileSync(file, gz);
  await chooseFile(page, file);
  assert.equal(await waitFinished(page), 'error');
  assert.equal(
    await page.textContent('#error'),
    `corrupt.json.gz: crc32 mismatch in gzip member ending at byte ${gz.length}`,
  );
  assert.equal(await page.isVisible('#error'), true);
  await page.close();
});

test('trailing garbage after a .json.gz is ignored with the warning native gives', async () => {
  const page = await openPage(browser.context, server.url);
  const doc = '{"traceEvents":[{"ph":"X","name":"k","cat":"kernel","ts":1,"dur":5,"pid":1,"tid":1}]}';
  const gz = gzipSync(Buffer.from(doc));
  const file = path.join(scratch, 'garbage.json.gz');
  writeFileSync(file, Buffer.concat([gz, Buffer.from('\nnot gzip\n')]));
  await chooseFile(page, file);
  assert.equal(await waitFinished(page), 'done');
  const got = await resultJson(page);
  // Native, run beside the file with its bare name, so `source` is the same on both sides.
  const nat = native(['trace', '--json', 'garbage.json.gz'], scratch);
  assert.equal(nat.status, 0, nat.stderr);
  assert.deepEqual(got, JSON.parse(nat.stdout));
  assert.ok(
    got.warnings.includes(`trailing garbage ignored: bytes from ${gz.length} on do not start a gzip member (the data before them was read, as gzip -d does)`),
    JSON.stringify(got.warnings),
  );
  await page.close();
});

test('no request leaves the page origin, and the CSP blocks any attempt', async () => {
  const page = await openPage(browser.context, server.url);
  // The page's own attempt to reach another origin must be refused by its CSP (connect-src 'self').
  const outcome = await page.evaluate(async () => {
    const violations = [];
    document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
    let fetched = 'not blocked';
    try {
      await fetch('http://example.invalid/upload', { method: 'POST', body: 'x' });
    } catch (e) {
      fetched = `blocked: ${e.name}`;
    }
    await new Promise((r) => setTimeout(r, 100));
    return { fetched, violations };
  });
  assert.equal(outcome.fetched, 'blocked: TypeError');
  // One report per policy that forbids it: the meta tag's and, when served by `flinch-trace web`, the header's.
  assert.ok(outcome.violations.length >= 1);
  assert.deepEqual([...new Set(outcome.violations)], ['connect-src']);
  const seen = browser.requests.map((u) => new URL(u).pathname);
  for (const p of ["/", "/app.js", "/worker.js", "/pkg/flinch_wasm.js", "/pkg/flinch_wasm_bg.wasm"]) {
    assert.ok(seen.includes(p), `request for ${p} was seen by the interception (seen: ${seen})`);
  }
  for (const url of browser.requests) assert.ok(url.startsWith(server.url), `request left the origin: ${url}`);
  assert.deepEqual(browser.foreign, []);
  await page.close();
});

test('once loaded, the page analyzes a file with the network off', async () => {
  const page = await openPage(browser.context, server.url);
  await browser.context.setOffline(true);
  try {
    const file = path.join(scratch, 'offline.json');
    writeFileSync(file, '{"traceEvents":[{"ph":"X","cat":"k","name":"a","ts":1,"dur":2.5}]}');
    await chooseFile(page, file);
    assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
    assert.equal(JSON.parse(await page.textContent('#result-json')).categories.k.duration_sum_us, 2.5);
  } finally {
    await browser.context.setOffline(false);
  }
  await page.close();
});

test('screenshot of the page', async () => {
  const page = await openPage(browser.context, server.url);
  await page.screenshot({ path: artifactPath('page-ready.png'), fullPage: true });
  await page.close();
});

// The progress and result lines give the file bytes read: a plain file's chunks are handed to the
// analysis worker (their buffers transferred), and were counted after that, as 0 B.
test('the job line gives the bytes read, for a plain file and a .gz', async () => {
  const page = await openPage(browser.context, server.url);
  const csv = path.join(ROOT, 'examples/h200/trace.csv');
  const gz = path.join(scratch, 'bytes.json.gz');
  writeFileSync(gz, gzipSync('{"traceEvents":[{"ph":"X","cat":"k","name":"a","ts":1,"dur":2.5}]}'));
  for (const [file, drop] of [[csv, true], [gz, false]]) {
    const size = statSync(file).size;
    if (drop) await dropFile(page, file);
    else await chooseFile(page, file);
    assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
    assert.equal(await page.evaluate(() => document.body.dataset.bytes), String(size), file);
    const stats = await page.textContent('#job-stats');
    const kb = `${(size / 1e3).toFixed(1)} kB in `;
    assert.ok(size >= 1e3 ? stats.startsWith(kb) : stats.startsWith(`${size} B in `), `${file}: ${stats}`);
    assert.ok(!stats.startsWith('0 B'), stats);
  }
  await page.close();
});

// A recording made without a GPU: the overview says why there are no GPU figures (the JSON's
// gpu_energy_note), and lists no GPU.
test('a recording without GPU readings says why on the page', async () => {
  const page = await openPage(browser.context, server.url);
  await dropFile(page, path.join(ROOT, 'examples/host-only/trace.csv'));
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const overview = await page.textContent('#csv-overview');
  assert.match(overview, /0 GPU\(s\)/);
  assert.match(overview, /Note: no GPU readings/);
  assert.match((await resultJson(page)).gpu_energy_note, /^no GPU readings/);
  await page.close();
});
