// For every fixture (trace.csv, .json, .json.gz under tests/), the page's #result-json deep-equals
// what the native CLI prints with --json for the same file. The native command runs in the
// fixture's folder with the bare file name, so `source` is the file name on both sides (the page
// sets `source` to File.name). Both file input and synthetic drop are exercised.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  ROOT, native, waitFinished, chooseFile, dropFile, resultJson, artifactPath, browserSession,
} from './harness.mjs';

/// The fixtures: trace.csv files under tests/analyze/, and traces (.json, .json.gz) in any
/// `traces/` folder under tests/ (tests/traces/ and the summarize runs' trace folders).
function fixtures() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      const rel = path.relative(ROOT, p);
      if (/^tests\/(browser|artifacts)/.test(rel)) continue;
      if (statSync(p).isDirectory()) walk(p);
      else if (/^tests\/analyze\/[^/]+\.csv$/.test(rel) ||
        (/(^|\/)traces\/.*\.(json|gz)$/.test(rel) && !/\.expected\.json$/.test(rel))) out.push(p);
    }
  };
  walk(path.join(ROOT, 'tests'));
  return out.sort();
}

function nativeArgs(file) {
  const name = path.basename(file);
  return name.endsWith('.csv') ? ['analyze', '--csv', name, '--json'] : ['trace', name, '--json'];
}

let server;
let browser;
let page;

browserSession((s) => ({ server, browser, page } = s), { page: true });

const files = fixtures();

test('there are fixtures of every kind', () => {
  const kinds = new Set(files.map((f) => (f.endsWith('.csv') ? 'csv' : f.endsWith('.json.gz') ? 'gz' : f.endsWith('.json') ? 'json' : 'other')));
  assert.deepEqual([...kinds].sort(), ['csv', 'gz', 'json', 'other'], `fixtures found: ${files.join(', ')}`);
});

for (const [i, file] of files.entries()) {
  const rel = path.relative(ROOT, file);
  test(`#result-json equals native --json: ${rel}`, async () => {
    const nat = native(nativeArgs(file), path.dirname(file));
    if (statSync(file).size === 0) {
      // The page cannot tell what an empty file was meant to be (native is told: `analyze --csv`):
      // it says so instead of showing an empty analysis.
      await chooseFile(page, file);
      assert.equal(await waitFinished(page), 'error');
      assert.equal(await page.textContent('#error'), `${path.basename(file)}: empty input: no bytes to analyze`);
      return;
    }
    // Alternate the two ways in: file input and a synthetic drop.
    if (i % 2) await dropFile(page, file);
    else await chooseFile(page, file);
    // The page sets data-state=working synchronously in the change/drop handler.
    assert.equal(await page.textContent('#job-name'), path.basename(file));
    const state = await waitFinished(page);
    if (nat.status !== 0) {
      // Both fail, with the same message (native prefixes the command name).
      assert.equal(state, 'error', `native failed (${nat.stderr.trim()}) but the page did not`);
      assert.equal(await page.textContent('#error'), nat.stderr.trim().replace(/^flinch-trace \w+: /, ''));
      return;
    }
    assert.equal(state, 'done', `page error: ${await page.textContent('#error')}`);
    assert.deepEqual(await resultJson(page), JSON.parse(nat.stdout));
  });
}

test('mark pickers analyze a window: equal to native --start/--end --json, shaded on the plot', async () => {
  const file = path.join(ROOT, 'tests/analyze/record_1gpu.csv');
  await chooseFile(page, file);
  assert.equal(await waitFinished(page), 'done');
  await page.selectOption('#start-mark', 'wait_start');
  await page.selectOption('#end-mark', 'wait_end');
  await page.click('#analyze-window');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const nat = native(['analyze', '--csv', 'record_1gpu.csv', '--start', 'wait_start', '--end', 'wait_end', '--json'],
    path.dirname(file));
  assert.equal(nat.status, 0, nat.stderr);
  const got = await resultJson(page);
  assert.deepEqual(got, JSON.parse(nat.stdout));
  assert.equal(got.window.start_label, 'wait_start');
  const table = await page.textContent('#window-table');
  assert.match(table, /duration/);
  assert.match(table, new RegExp(`verdict${got.window.verdict.verdict}`));
  await page.screenshot({ path: artifactPath('page-csv-window.png'), fullPage: true });

  // A reversed pair: the page shows the reference's error text, as native prints it.
  await page.selectOption('#start-mark', 'wait_end');
  await page.selectOption('#end-mark', 'wait_start');
  await page.click('#analyze-window');
  assert.equal(await waitFinished(page), 'error');
  assert.equal(await page.textContent('#error'), 'record_1gpu.csv: End MARK must be after start MARK');
});

test('a Kineto trace shows category bars and the top ops table', async () => {
  const file = path.join(ROOT, 'tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz');
  await chooseFile(page, file);
  assert.equal(await waitFinished(page), 'done');
  const result = await resultJson(page);
  assert.equal(await page.locator('#category-bars .bar-row').count(), Object.keys(result.categories).length);
  assert.equal(await page.locator('#top-ops tbody tr').count(), result.largest_ops_by_duration_sum.length);
  assert.equal(await page.isVisible('#csv-result'), false);
  await page.screenshot({ path: artifactPath('page-trace.png'), fullPage: true });

  // "Download JSON" saves exactly the result JSON.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
  assert.equal(download.suggestedFilename(), `${path.basename(file)}.summary.json`);
  const saved = artifactPath('downloaded.summary.json');
  await download.saveAs(saved);
  assert.equal(readFileSync(saved, 'utf8'), await page.textContent('#result-json'));
});
