// The compare view (docs/diff.md, "On the page"): two runs chosen or dropped as A and B, each a trace
// (plain or .json.gz) or a summary, optionally with its trace.csv (and that recording's sidecar),
// then Compare: #result-json is, byte for byte, what `flinch-trace diff A B [--telemetry-a CSV]
// [--telemetry-b CSV] --json` prints; the verdict, the tables and the pauses show the pair's known
// changes; each file is read once (a trace whose annotation spans overflow the join's copy twice,
// whole); bad inputs fail with the native message. The pair is generated with known truth:
// 6 steps of 100 ms; B's gemm 2x slower, a new kernel in B, no kernel in B's step 3 (one GPU pause of
// 139.010 ms), power 100 W in A's recording and 150 W in B's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { native, waitFinished, resultJson, browserSession } from './harness.mjs';

const BASE_NS = 1_700_000_000_000_000_000n;
const STEPS = 6;
const STEP_US = 100_000;

/// A run: step k's annotation at 1000 + k * 100 ms (100 ms), a cpu op, gemm (20 ms x `gemmFactor`)
/// and relu (3 ms) on device 0, `newKernel` (1 ms) in each step if set, and no kernel at all in
/// step `idleStep` (null: none).
function runTrace({ gemmFactor = 1, newKernel = null, idleStep = null }) {
  const evs = [];
  for (let k = 0; k < STEPS; k++) {
    const ts = 1000 + k * STEP_US;
    evs.push(`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#${k}","pid":100,"tid":1,"ts":${ts},"dur":${STEP_US}}`);
    evs.push(`{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":100,"tid":1,"ts":${ts},"dur":5000.5}`);
    if (k === idleStep) continue;
    evs.push(`{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":${ts + 10},"dur":${20_000 * gemmFactor}}`);
    evs.push(`{"ph":"X","cat":"kernel","name":"relu","pid":0,"tid":7,"ts":${ts + 50_000},"dur":3000}`);
    if (newKernel) evs.push(`{"ph":"X","cat":"kernel","name":"${newKernel}","pid":0,"tid":7,"ts":${ts + 60_000},"dur":1000}`);
  }
  return `{"schemaVersion":1,"baseTimeNanoseconds":${BASE_NS},"traceEvents":[\n${evs.join(',\n')}\n]}\n`;
}

/// A recording at 10 ms of constant `powerW` over the run, on the trace's clock.
function recording(powerW) {
  let csv = 't_mono_ns,t_wall_ns,row_type,label,gpu_power_W\n';
  const endNs = BigInt(1000 + STEPS * STEP_US + 50_000) * 1000n;
  for (let ns = 0n; ns <= endNs; ns += 10_000_000n) csv += `${ns},${BASE_NS + ns},SAMPLE,,${powerW}\n`;
  return csv;
}

const dir = mkdtempSync(path.join(tmpdir(), 'flinch-diff-page-'));
const file = (name, text) => {
  writeFileSync(path.join(dir, name), text);
  return path.join(dir, name);
};
const A_TEXT = runTrace({});
const B_TEXT = runTrace({ gemmFactor: 2, newKernel: 'new_kernel', idleStep: 3 });
const F = {
  a: file('a.json', A_TEXT),
  b: file('b.json', B_TEXT),
  aGz: file('a.json.gz', gzipSync(A_TEXT)),
  bGz: file('b.json.gz', gzipSync(B_TEXT)),
  aCsv: file('a.csv', recording(100)),
  bCsv: file('b.csv', recording(150)),
  // B's sidecar: native reads it beside b.csv; the page when it is given with b.csv.
  bSidecar: file('b.csv.meta.json', JSON.stringify({ gpus: [{ gpu_power_w_source: 'average' }] })),
  notJson: file('notes.json', 'hello, not a trace\n'),
  cutGz: file('cut.json.gz', gzipSync(B_TEXT).subarray(0, 300)),
};
const names = (...files) => files.map((f) => path.basename(f));

let page;
browserSession((s) => ({ page } = s), { page: true });

/// `flinch-trace diff ... --json` in the files' folder (so `source` is the bare file name).
function nativeDiff(args) {
  const nat = native(['diff', ...args, '--json'], dir);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

/// Chooses each side's files through its file input, then Compare.
async function compare(aFiles, bFiles) {
  await page.setInputFiles('#compare-a', aFiles);
  await page.setInputFiles('#compare-b', bFiles);
  assert.equal(await page.textContent('#compare-a-files'), names(...aFiles).join(' + '));
  assert.equal(await page.textContent('#compare-b-files'), names(...bFiles).join(' + '));
  await page.click('#compare-run');
  return waitFinished(page);
}

/// Drops `files` on `selector` as a user would (a DataTransfer in a drop event).
async function drop(selector, files) {
  const payload = files.map((f) => ({ name: path.basename(f), bytes: readFileSync(f).toString('base64') }));
  await page.evaluate(({ selector, payload }) => {
    const dt = new DataTransfer();
    for (const { name, bytes } of payload) dt.items.add(new File([Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0))], name));
    const zone = document.querySelector(selector);
    for (const type of ['dragenter', 'dragover', 'drop']) {
      zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, { selector, payload });
}

const rows = (sel) => page.locator(`${sel} tbody tr`).count();

test('two plain traces: #result-json is diff --json; the verdict, tables and pauses show the known changes', async () => {
  assert.equal(await compare([F.a], [F.b]), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeDiff(names(F.a, F.b)));
  const r = JSON.parse(text);
  assert.equal(await page.textContent('#diff-verdict'), r.verdict);
  assert.match(r.verdict, /^B vs A: kernel busy /);
  // Known truth: gemm 6 x 20 ms in A, 5 x 40 ms in B; relu one fewer; the new kernel only in B.
  const op = (name) => r.ops.find((o) => o.name === name);
  assert.equal(op('gemm').delta_sum_ms, 80);
  assert.deepEqual([op('gemm').a.n, op('gemm').b.n], [6, 5]);
  assert.equal(op('relu').delta_sum_ms, -3);
  assert.equal(op('new_kernel').status, 'only_b');
  assert.equal(op('new_kernel').a, null);
  assert.equal(op('new_kernel').b.sum_ms, 5);
  // The tables: every category and the totals; every listed op, largest change first.
  assert.equal(await rows('#diff-categories'), r.categories.length + 1);
  assert.equal(await rows('#diff-ops'), r.ops.length);
  assert.deepEqual(await page.locator('#diff-ops tbody tr td:nth-child(4)').allTextContents(), r.ops.map((o) => o.name));
  assert.equal(await page.textContent('#diff-ops tbody tr:first-child td:first-child'), '+80 ms');
  // Pauses per device: none in A, one of 139.010 ms in B (step 2's last kernel to step 4's first).
  const dev = r.pauses.devices.find((d) => d.device === 0);
  assert.deepEqual([dev.a.n, dev.b.n, dev.b.total_ms], [0, 1, 139.01]);
  assert.equal(await rows('#diff-pauses'), r.pauses.devices.length);
  assert.deepEqual(await page.locator('#diff-pauses tbody tr:first-child td').allTextContents(), ['0', '0', '0 ms', '1', '139.01 ms']);
  // No recordings: no energy table; no steps in the result: no step chart.
  assert.equal(r.energy, undefined);
  assert.equal(await page.isVisible('#diff-energy-wrap'), false);
  assert.equal('steps' in r, false);
  assert.equal(await page.isVisible('#diff-steps'), false);
  assert.equal(await page.locator('.diff-step-row').count(), 0);
  assert.equal(await page.isVisible('#trace-result'), false);
  assert.deepEqual(page.errors, []);
});

test('.json.gz traces, each with its trace.csv (B with its sidecar): diff --telemetry-a --telemetry-b --json', async () => {
  assert.equal(await compare([F.aGz, F.aCsv], [F.bGz, F.bCsv, F.bSidecar]), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeDiff([...names(F.aGz, F.bGz), '--telemetry-a', 'a.csv', '--telemetry-b', 'b.csv']));
  const r = JSON.parse(text);
  // Six spans of 100 ms at 100 W and 150 W.
  const steps = r.energy.find((e) => e.name === 'ProfilerStep#*');
  assert.deepEqual([steps.n_a, steps.n_b], [STEPS, STEPS]);
  assert.ok(Math.abs(steps.gpu_energy_j_a - 60) < 1e-9 && Math.abs(steps.gpu_energy_j_b - 90) < 1e-9, JSON.stringify(steps));
  assert.equal(await page.isVisible('#diff-energy-wrap'), true);
  assert.equal(await rows('#diff-energy'), r.energy.length);
  assert.match(await page.textContent('#run-stats'), /power source from the sidecar: B average/);
  // The same pair without recordings is the plain diff of the .gz files.
  assert.equal(await compare([F.aGz], [F.bGz]), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeDiff(names(F.aGz, F.bGz)));
});

test('plain traces, each with its recording and a GPU pause: diff --telemetry-a --telemetry-b --json, each file read once', async () => {
  // The diff's join counts the pauses per device and lists none, so it needs no host events
  // around them: no second read, ranged or whole, while the annotation spans fit the first
  // pass's copy (docs/diff.md).
  const pa = file('pa.json', runTrace({ idleStep: 1 }));
  const pb = file('pb.json', runTrace({ gemmFactor: 2, idleStep: 4 }));
  const paCsv = file('pa.csv', recording(100));
  const pbCsv = file('pb.csv', recording(150));
  assert.equal(await compare([pa, paCsv], [pb, pbCsv]), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeDiff(['pa.json', 'pb.json', '--telemetry-a', 'pa.csv', '--telemetry-b', 'pb.csv']));
  const r = JSON.parse(text);
  const dev = r.pauses.devices.find((d) => d.device === 0);
  assert.deepEqual([dev.a.n, dev.b.n], [1, 1]);
  assert.deepEqual(await page.locator('#diff-pauses tbody tr:first-child td').allTextContents(),
    ['0', '1', `${dev.a.total_ms.toLocaleString('en-US', { maximumFractionDigits: 3 })} ms`,
      '1', `${dev.b.total_ms.toLocaleString('en-US', { maximumFractionDigits: 3 })} ms`]);
  assert.ok(r.energy.length > 0);
  const read = Number(await page.evaluate(() => document.body.dataset.bytes));
  assert.equal(read, [pa, paCsv, pb, pbCsv].reduce((n, f) => n + statSync(f).size, 0));
});

test('more annotation spans than the first pass copies: that trace is read a second time, whole, and the result is still native', async () => {
  // B: the run and 135,000 one-µs annotations (past MAX_KEPT_SPANS, 2^17): its energy per
  // annotation needs the spans again, so B's trace is read twice; A's once.
  const evs = [];
  for (let k = 0; k < 135_000; k++) evs.push(`{"ph":"X","cat":"user_annotation","name":"tick","pid":100,"tid":2,"ts":${1000 + 4 * k},"dur":1}`);
  const text = runTrace({ idleStep: 4 }).replace('"traceEvents":[\n', `"traceEvents":[\n${evs.join(',\n')},\n`);
  // A .json.gz is inflated again from its start.
  for (const many of [file('many.json', text), file('many.json.gz', gzipSync(text))]) {
    assert.equal(await compare([F.a, F.aCsv], [many, F.bCsv]), 'done', await page.textContent('#error'));
    const json = await page.textContent('#result-json');
    assert.equal(`${json}\n`, nativeDiff(['a.json', path.basename(many), '--telemetry-a', 'a.csv', '--telemetry-b', 'b.csv']));
    const tick = JSON.parse(json).energy.find((e) => e.name === 'tick');
    assert.deepEqual([tick.n_a, tick.n_b], [0, 135_000]);
    const read = Number(await page.evaluate(() => document.body.dataset.bytes));
    const size = (f) => statSync(f).size;
    assert.equal(read, size(F.a) + size(F.aCsv) + 2 * size(many) + size(F.bCsv), path.basename(many));
  }
});

test('dropped on the two zones: a plain trace with its recording against a .json.gz without', async () => {
  await drop('#compare-a-zone', [F.a, F.aCsv]);
  await drop('#compare-b-zone', [F.bGz]);
  assert.equal(await page.textContent('#compare-a-files'), 'a.json + a.csv');
  assert.equal(await page.textContent('#compare-b-files'), 'b.json.gz');
  await page.click('#compare-run');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeDiff(['a.json', 'b.json.gz', '--telemetry-a', 'a.csv']));
  // One recording only: no energy comparison.
  assert.equal((await resultJson(page)).energy, undefined);
});

test('a summary (trace --json --mergeable) against a trace, and two traces dropped on the main zone', async () => {
  const summary = native(['trace', 'a.json', '--json', '--mergeable'], dir);
  assert.equal(summary.status, 0, summary.stderr);
  const aSummary = file('a.summary.json', summary.stdout);
  assert.equal(await compare([aSummary], [F.b]), 'done', await page.textContent('#error'));
  const r = await resultJson(page);
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeDiff(['a.summary.json', 'b.json']));
  assert.deepEqual([r.a.kind, r.b.kind], ['summary', 'trace']);
  // Two traces on the main drop zone become A and B (in the order given); Swap turns them round.
  await drop('#drop-zone', [F.b, F.a]);
  assert.equal(await page.textContent('#compare-a-files'), 'b.json');
  await page.click('#compare-swap');
  assert.equal(await page.textContent('#compare-a-files'), 'a.json');
  assert.equal(await page.textContent('#compare-b-files'), 'b.json');
  await page.click('#compare-run');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeDiff(['a.json', 'b.json']));
});

test('bad inputs fail with the native message, and the page goes on working', async () => {
  for (const [a, b] of [[F.a, F.notJson], [F.a, F.cutGz], [F.notJson, F.b]]) {
    const nat = native(['diff', ...names(a, b), '--json'], dir);
    assert.equal(nat.status, 1, nat.stdout);
    assert.equal(await compare([a], [b]), 'error');
    const shown = await page.textContent('#error');
    assert.equal(`flinch-trace diff: ${shown}\n`, nat.stderr);
    assert.equal(await page.isVisible('#diff-result'), false);
  }
  assert.match(await page.textContent('#error'), /^notes\.json: expected `\{` or `\[` at the start of a trace at byte 0$/);
  // A recording given with a summary: refused by the core (a summary has no clock).
  const nat = native(['diff', 'a.summary.json', 'b.json', '--telemetry-a', 'a.csv', '--json'], dir);
  assert.equal(nat.status, 1);
  assert.equal(await compare([path.join(dir, 'a.summary.json'), F.aCsv], [F.b]), 'error');
  assert.equal(`flinch-trace diff: ${await page.textContent('#error')}\n`, nat.stderr);
  // A side of two traces, or a sidecar without its trace.csv: said before anything is read.
  await page.setInputFiles('#compare-b', [F.a, F.b]);
  assert.equal(await page.textContent('#error'), 'B: give one trace (or summary) a side, with at most one trace.csv and its sidecar');
  await page.setInputFiles('#compare-b', [F.b, F.bSidecar]);
  assert.equal(await page.textContent('#error'), 'B: b.csv.meta.json: a sidecar comes with its trace.csv');
  // The last good choice of B is kept, and a comparison still runs.
  assert.equal(await page.textContent('#compare-b-files'), 'b.json');
  await page.setInputFiles('#compare-a', [F.a]);
  await page.click('#compare-run');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeDiff(['a.json', 'b.json']));
  // The page's other modes still work after a comparison: one trace on the main zone.
  await page.setInputFiles('#file-input', F.a);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, native(['trace', 'a.json', '--json'], dir).stdout);
  assert.equal(await page.isVisible('#diff-result'), false);
  assert.equal(await page.isVisible('#trace-result'), true);
});

test('the step section: the median step of A and B side by side when the result carries steps, nothing when null', async () => {
  assert.equal(await compare([F.a], [F.b]), 'done', await page.textContent('#error'));
  const r = await resultJson(page);
  // A `steps` section of the shape `diff --steps` gives (StepsDiff, core/src/diff/steps.rs), drawn
  // by the page's own renderer: each bar's segments are its side's median parts, on one scale.
  const parts = ['kernel', 'memcpy', 'memset', 'communication', 'runtime', 'dataloader', 'cpu_exec', 'other'];
  const a = Object.fromEntries(parts.map((p, i) => [p, [40, 0, 0, 0, 2, 5, 30, 23][i]]));
  const b = Object.fromEntries(parts.map((p, i) => [p, [80, 0, 0, 0, 2, 25, 30, 23][i]]));
  const steps = {
    pattern: 'ProfilerStep#<N>', n_a: 6, n_b: 6, median_ms_a: 100, median_ms_b: 160, shift_ms: 60, change_pct: 60,
    ci95_pct: [55, 65], ci95_ms: [55, 65], significant: true, method: 'exact',
    breakdown_ms_median_a: a, breakdown_ms_median_b: b,
    parts: parts.map((p) => ({ part: p, median_ms_a: a[p], median_ms_b: b[p], delta_median_ms: b[p] - a[p], total_ms_a: 6 * a[p],
      total_ms_b: 6 * b[p], delta_total_ms: 6 * (b[p] - a[p]), delta_mean_ms: b[p] - a[p], steps_moved: b[p] > a[p] ? 6 : 0,
      moved_in: 'b', of_steps: 6 })),
    energy: null,
  };
  const render = (result) => page.evaluate(async (x) => (await import('./compare.js')).renderDiff(x), result);
  await render({ ...r, steps });
  assert.equal(await page.isVisible('#diff-steps'), true);
  assert.match(await page.textContent('#diff-step-line'),
    /^Median step 160 ms in B vs 100 ms in A \(6 and 6 steps; \+60 %, 95 % CI \+55 % to \+65 %\): a significant change\.$/);
  assert.equal(await page.locator('.diff-step-row').count(), 2);
  const widths = await page.$$eval('.diff-step-row', (bars) => bars.map((row) =>
    [...row.querySelectorAll('.seg')].map((s) => [s.className.replace('seg part-', ''), parseFloat(s.style.width)])));
  const longest = Math.max(...[a, b].map((x) => parts.reduce((s, p) => s + x[p], 0)));
  [a, b].forEach((x, i) => {
    const want = parts.filter((p) => x[p] > 0).map((p) => [p, (100 * x[p]) / longest]);
    assert.equal(widths[i].length, want.length);
    widths[i].forEach(([p, w], k) => {
      assert.equal(p, want[k][0]);
      assert.ok(Math.abs(w - want[k][1]) < 1e-6, `${p}: ${w} of ${want[k][1]}`);
    });
  });
  // memcpy, memset and communication are zero in both: named in the note, not given a row.
  assert.equal(await rows('#diff-step-parts'), parts.length - 3);
  assert.match(await page.textContent('#diff-step-note'), /; zero in every step of both runs: memcpy, memset, communication\.$/);
  assert.deepEqual(await page.locator('#diff-step-parts tbody tr:first-child td').allTextContents(),
    ['kernel', '40 ms', '80 ms', '+40 ms', '+40 ms', '6 of 6 B steps']);
  // Steps asked for but missing on a side (null), or not asked for (absent): no step section.
  for (const s of [null, undefined]) {
    await render({ ...r, steps: s });
    assert.equal(await page.isVisible('#diff-steps'), false);
    assert.equal(await page.locator('.diff-step-row').count(), 0);
  }
  assert.deepEqual(page.errors, []);
});
