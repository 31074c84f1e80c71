// The compare view with the step view (docs/diff.md, "On the page") on a real PyTorch pair
// (tests/fixtures/torch: diff_a and diff_b_stall, the same CPU training loop, B's data loader
// stalled 250 ms in the steps its truth names): "Steps" ticked (or a step name given) and Compare
// give, byte for byte, what `flinch-trace diff A B --steps [--step-name P] --json` prints; the
// median step of A and B is drawn side by side on one scale, and the part that moved (the data
// loader, in the stalled steps) is shown as the result says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, native, waitFinished, artifactPath, browserSession } from './harness.mjs';

const FIX = path.join(ROOT, 'tests/fixtures/torch');
const dir = mkdtempSync(path.join(tmpdir(), 'flinch-diff-steps-page-'));
const A = path.join(dir, 'diff_a.json.gz');
const B = path.join(dir, 'diff_b_stall.json.gz');
copyFileSync(path.join(FIX, 'diff_a.json.gz'), A);
copyFileSync(path.join(FIX, 'diff_b_stall.json.gz'), B);
const truth = JSON.parse(readFileSync(path.join(FIX, 'diff_b_stall.truth.json'), 'utf8'));

let page;
browserSession((s) => ({ page } = s), { page: true });

/// `flinch-trace diff A B --json` and `extra`, in the files' folder (so `source` is the bare name).
function nativeDiff(extra) {
  const nat = native(['diff', path.basename(A), path.basename(B), ...extra, '--json'], dir);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

async function compare() {
  await page.setInputFiles('#compare-a', A);
  await page.setInputFiles('#compare-b', B);
  await page.click('#compare-run');
  return waitFinished(page);
}

/// A figure as the page prints it (dom.js `num`).
const num = (x) => (Number.isInteger(x) ? x.toLocaleString('en-US') : x.toLocaleString('en-US', { maximumFractionDigits: 3 }));

/// The step section against the result's `steps`: the two bars (each segment a median part, on
/// the scale of the longer bar), the median steps, and a row per part in the result's order.
async function checkStepSection(s) {
  assert.equal(await page.isVisible('#diff-steps'), true);
  const bars = await page.$$eval('.diff-step-row', (rows) => rows.map((row) => ({
    label: row.querySelector('.bar-label').textContent,
    figures: row.querySelector('.bar-figures').textContent,
    segs: [...row.querySelectorAll('.seg')].map((e) => [e.className.replace('seg part-', ''), parseFloat(e.style.width), e.title]),
  })));
  assert.deepEqual(bars.map((b) => b.label), ['A', 'B']);
  assert.deepEqual(bars.map((b) => b.figures), [s.median_ms_a, s.median_ms_b].map((m) => `median step ${num(m)} ms`));
  const sides = [s.breakdown_ms_median_a, s.breakdown_ms_median_b];
  const parts = Object.keys(sides[0]);
  const longest = Math.max(...sides.map((x) => parts.reduce((t, p) => t + x[p], 0)));
  sides.forEach((x, i) => {
    const want = parts.filter((p) => x[p] > 0);
    assert.deepEqual(bars[i].segs.map(([p]) => p), want);
    bars[i].segs.forEach(([p, w, title]) => {
      // The browser keeps a CSS width to about six digits.
      assert.ok(Math.abs(w - (100 * x[p]) / longest) < 1e-3, `${bars[i].label} ${p}: ${w}`);
      assert.equal(title, `${p} ${num(x[p])} ms`);
    });
  });
  // The legend names the parts drawn; the table has a row per part that is not zero in every
  // step of both runs, in the result's order, and the note names the others.
  const legend = await page.$$eval('#diff-step-legend .key', (keys) => keys.map((k) => k.className.replace('key part-', '')));
  assert.deepEqual(legend, parts.filter((p) => sides.some((x) => x[p] > 0)));
  const shown = s.parts.filter((p) => p.total_ms_a > 0 || p.total_ms_b > 0);
  const absent = s.parts.filter((p) => !shown.includes(p)).map((p) => p.part);
  const note = await page.textContent('#diff-step-note');
  assert.ok(note.endsWith(absent.length ? `; zero in every step of both runs: ${absent.join(', ')}.` : 'most moved first.'), note);
  const rows = await page.$$eval('#diff-step-parts tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.deepEqual(rows.map((r) => r[0]), shown.map((p) => p.part));
  shown.forEach((p, k) => {
    const moved = `${p.steps_moved} of ${p.of_steps} ${p.moved_in.toUpperCase()} steps`;
    const listed = p.moved_steps.map((i) => `#${i}`).join(', ') + (p.steps_moved > p.moved_steps.length ? ', …' : '');
    assert.equal(rows[k][5], p.moved_steps.length ? `${moved}: ${listed}` : moved);
  });
  return rows;
}

test('the real PyTorch pair with Steps ticked: diff --steps --json byte for byte; the median steps side by side, the stalled steps named', async () => {
  await page.check('#steps-toggle');
  assert.equal(await compare(), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeDiff(['--steps']));
  const r = JSON.parse(text);
  const s = r.steps;
  assert.deepEqual([s.n_a, s.n_b], [truth.steps.length, truth.steps.length]);
  // The known change: B's data loader, in the stalled steps and only there, the part that moved most.
  const loader = s.parts[0];
  assert.deepEqual([loader.part, loader.moved_in, loader.moved_steps], ['dataloader', 'b', truth.stall_steps]);
  assert.ok(loader.delta_total_ms > 0.9 * truth.stall_steps.length * truth.stall_ms, JSON.stringify(loader));
  assert.equal(await page.textContent('#diff-verdict'), r.verdict);
  assert.match(r.verdict, new RegExp(`dataloader \\+[\\d.]+ ms in 2 of ${s.n_b} steps \\(${truth.stall_steps.map((i) => `#${i}`).join(', ')}\\)$`));
  const rows = await checkStepSection(s);
  assert.deepEqual(rows[0], ['dataloader', `${num(loader.median_ms_a)} ms`, `${num(loader.median_ms_b)} ms`,
    `${loader.delta_median_ms > 0 ? '+' : ''}${num(loader.delta_median_ms)} ms`, `+${num(loader.delta_mean_ms)} ms`,
    `2 of ${s.n_b} B steps: ${truth.stall_steps.map((i) => `#${i}`).join(', ')}`]);
  // The median step's line: the result's figures and words.
  const line = await page.textContent('#diff-step-line');
  assert.ok(line.startsWith(`Median step ${num(s.median_ms_b)} ms in B vs ${num(s.median_ms_a)} ms in A (${s.n_b} and ${s.n_a} steps; `), line);
  assert.ok(line.endsWith(s.significant ? ': a significant change.' : ': no significant change.'), line);
  // A CPU trace: no GPU part in any step, so neither bar nor the table has one.
  assert.deepEqual(rows.map((row) => row[0]).sort(), ['cpu_exec', 'dataloader', 'other']);
  assert.equal(await page.locator('#diff-step-bars .seg.part-kernel').count(), 0);
  assert.equal(await page.locator('#diff-step-bars .seg.part-dataloader').count(), 2);
  // No GPU device in either run: no pause table, and the note says why.
  assert.deepEqual(r.pauses.devices, []);
  assert.equal(await page.locator('#diff-pauses tbody tr').count(), 0);
  assert.equal(await page.isVisible('#diff-pauses-wrap'), false);
  assert.equal(await page.textContent('#diff-pauses-note'), 'No busy GPU event in the traces compared: no pauses.');
  await page.locator('#diff-result').screenshot({ path: artifactPath('page-diff-steps.png') });
  assert.deepEqual(page.errors, []);
});

test('a step name given on the page is diff --step-name; unticked and no name, no step section', async () => {
  await page.fill('#step-name', 'ProfilerStep#1*');
  assert.equal(await compare(), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeDiff(['--step-name', 'ProfilerStep#1*']));
  const s = JSON.parse(text).steps;
  const named = truth.steps.filter((i) => String(i).startsWith('1'));
  assert.deepEqual([s.pattern, s.n_a, s.n_b], ['ProfilerStep#1*', named.length, named.length]);
  // Of the stalled steps, those the pattern takes.
  const loader = s.parts.find((p) => p.part === 'dataloader');
  assert.deepEqual(loader.moved_steps, truth.stall_steps.filter((i) => named.includes(i)));
  await checkStepSection(s);
  await page.fill('#step-name', '');
  await page.uncheck('#steps-toggle');
  assert.equal(await compare(), 'done', await page.textContent('#error'));
  const plain = await page.textContent('#result-json');
  assert.equal(`${plain}\n`, nativeDiff([]));
  assert.equal('steps' in JSON.parse(plain), false);
  assert.equal(await page.isVisible('#diff-steps'), false);
  assert.deepEqual(page.errors, []);
});
