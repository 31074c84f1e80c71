// A trace.csv chosen or dropped with its sidecar (`trace.csv.meta.json`): the page reads the power
// source as `flinch-trace analyze` does (the core's rule), so #result-json is, byte for byte,
// what `analyze --csv trace.csv --json` prints beside that sidecar, for the recording and for a
// window picked from its marks. The recording is the bundled H200 one (examples/h200), whose
// sidecar names instantaneous power; without the sidecar the verdicts' evidence differs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, native, waitFinished, browserSession } from './harness.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'flinch-sidecar-page-'));
const withSidecar = path.join(dir, 'with');
const without = path.join(dir, 'without');
const average = path.join(dir, 'average');
for (const d of [withSidecar, without, average]) {
  mkdirSync(d);
  copyFileSync(path.join(ROOT, 'examples/h200/trace.csv'), path.join(d, 'trace.csv'));
}
copyFileSync(path.join(ROOT, 'examples/h200/trace.csv.meta.json'), path.join(withSidecar, 'trace.csv.meta.json'));
// Another recorder's sidecar: other keys, the second GPU naming the average.
writeFileSync(path.join(average, 'trace.csv.meta.json'),
  JSON.stringify({ gpus: [{ gpu_power_w_source: 'unknown' }, { gpu_power_w_source: 'average' }] }));

let server;
let browser;
let page;

browserSession((s) => ({ server, browser, page } = s), { page: true });

function nativeAnalyze(cwd, extra = []) {
  const nat = native(['analyze', '--csv', 'trace.csv', ...extra, '--json'], cwd);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

const pageJson = async () => `${await page.textContent('#result-json')}\n`;

test('a trace.csv with its sidecar: native analyze --json beside the sidecar, byte for byte', async () => {
  await page.setInputFiles('#file-input', [path.join(withSidecar, 'trace.csv'), path.join(withSidecar, 'trace.csv.meta.json')]);
  assert.equal(await page.textContent('#job-name'), 'trace.csv + trace.csv.meta.json');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const got = await pageJson();
  const nat = nativeAnalyze(withSidecar);
  assert.equal(got, nat);
  assert.match(got, /instantaneous power \(NVML field 186\)/);
  assert.match(await page.textContent('#run-stats'), /power source from the sidecar: instant/);
  // The sidecar matters: without it native and the page agree on another result.
  const bare = nativeAnalyze(without);
  assert.notEqual(nat, bare);
  await page.setInputFiles('#file-input', path.join(without, 'trace.csv'));
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(await pageJson(), bare);
  assert.doesNotMatch(await page.textContent('#run-stats'), /sidecar/);
});

test('a window picked from the marks keeps the sidecar: native --start/--end --json', async () => {
  await page.setInputFiles('#file-input', [path.join(withSidecar, 'trace.csv.meta.json'), path.join(withSidecar, 'trace.csv')]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  await page.selectOption('#start-mark', 'pause_start');
  await page.selectOption('#end-mark', 'pause_end');
  await page.click('#analyze-window');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const got = await pageJson();
  assert.equal(got, nativeAnalyze(withSidecar, ['--start', 'pause_start', '--end', 'pause_end']));
  assert.notEqual(got, nativeAnalyze(without, ['--start', 'pause_start', '--end', 'pause_end']));
});

test('another sidecar naming the average power (second GPU): the same rule as native', async () => {
  await page.setInputFiles('#file-input', [path.join(average, 'trace.csv'), path.join(average, 'trace.csv.meta.json')]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const got = await pageJson();
  assert.equal(got, nativeAnalyze(average));
  assert.equal(got, nativeAnalyze(without, ['--power-source', 'average']));
  assert.notEqual(got, nativeAnalyze(without));
  assert.match(await page.textContent('#run-stats'), /power source from the sidecar: average/);
});

test('a sidecar of another file, or two sidecars: a clear error', async () => {
  const other = path.join(dir, 'other.csv.meta.json');
  copyFileSync(path.join(withSidecar, 'trace.csv.meta.json'), other);
  await page.setInputFiles('#file-input', [path.join(withSidecar, 'trace.csv'), other]);
  assert.equal(await waitFinished(page), 'error');
  assert.equal(await page.textContent('#error'),
    'other.csv.meta.json is not the sidecar of trace.csv: it would be named trace.csv.meta.json');
  await page.setInputFiles('#file-input', [path.join(withSidecar, 'trace.csv'), other, path.join(withSidecar, 'trace.csv.meta.json')]);
  assert.equal(await waitFinished(page), 'error');
  assert.match(await page.textContent('#error'), /may come with its sidecar/);
});
