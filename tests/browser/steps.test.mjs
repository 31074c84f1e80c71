// The step view on the page (docs/steps.md): a real PyTorch CPU trace (tests/fixtures/torch: its data
// loader stalls in steps 8 and 16, a bare sleep in 5 and 12) dropped with "Steps" ticked gives, byte for
// byte, what `flinch-trace trace TRACE --steps --json` prints; one stacked bar per step, the outliers
// marked, and a click on a step shows its parts against the median step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, native, waitFinished, browserSession } from './harness.mjs';

const dir = mkdtempSync(path.join(tmpdir(), 'flinch-steps-page-'));
const FIX = path.join(ROOT, 'tests/fixtures/torch');
const trace = path.join(dir, 'steps_cpu.json.gz');
copyFileSync(path.join(FIX, 'steps_cpu.json.gz'), trace);
const truth = JSON.parse(readFileSync(path.join(FIX, 'steps_cpu.truth.json'), 'utf8'));

let page;
browserSession((s) => ({ page } = s), { page: true });

function nativeSteps(extra = []) {
  const nat = native(['trace', path.basename(trace), '--steps', ...extra, '--json'], dir);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

test('a real PyTorch trace with Steps ticked: native trace --steps --json byte for byte, the slow steps marked', async () => {
  await page.check('#steps-toggle');
  await page.setInputFiles('#file-input', trace);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeSteps());
  const r = JSON.parse(text);
  assert.equal(await page.locator('.step-row').count(), r.steps.length);
  assert.equal(r.steps.length, truth.steps.length);
  const marked = await page.locator('.step-row.outlier .bar-label').allTextContents();
  const slow = [...truth.stall_steps, ...truth.sleep_steps].sort((a, b) => a - b);
  assert.deepEqual(marked, slow.map((i) => `#${i} (outlier)`));
  assert.match(await page.textContent('#steps-overview'), new RegExp(`^${r.steps.length} steps`));
  // A click on a stalled step: its parts against the median step, the data loader the largest.
  const k = r.steps.findIndex((s) => s.index === truth.stall_steps[0]);
  await page.click(`.step-row[data-k="${k}"]`);
  assert.equal(await page.isVisible('#step-detail'), true);
  const detail = await page.textContent('#step-detail');
  assert.match(detail, /Largest part: dataloader, \+\d+/);
  assert.match(detail, new RegExp(`ProfilerStep#${truth.stall_steps[0]}`));
  // Each bar's segments are the step's parts, to the scale of the longest step.
  const widths = await page.$$eval(`.step-row[data-k="${k}"] .seg`, (segs) => segs.map((s) => parseFloat(s.style.width)));
  const longest = Math.max(...r.steps.map((s) => s.duration_ms));
  const sum = widths.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - (100 * r.steps[k].duration_ms) / longest) < 1e-3, `${sum} of ${(100 * r.steps[k].duration_ms) / longest}`);
});

test('a step name given on the page is --step-name; unticked, the summary alone', async () => {
  await page.fill('#step-name', 'ProfilerStep#1*');
  await page.setInputFiles('#file-input', trace);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeSteps(['--step-name', 'ProfilerStep#1*']));
  await page.fill('#step-name', '');
  await page.uncheck('#steps-toggle');
  await page.setInputFiles('#file-input', trace);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const nat = native(['trace', path.basename(trace), '--json'], dir);
  assert.equal(`${await page.textContent('#result-json')}\n`, nat.stdout);
  assert.equal(await page.isVisible('#steps-result'), false);
});
