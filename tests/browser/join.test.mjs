// A trace and its recording dropped (or chosen) together: the page's #result-json is, byte for
// byte, what `flinch-trace trace TRACE --telemetry CSV --json` prints (plain and .json.gz traces,
// the join options of the form), the pauses table and the timeline show the known pauses, and a
// join that cannot run fails with the native message. The pair is generated with known truth,
// as native/tests/join_cli.rs does: pauses of 724 ms and 300 ms on device 0, power 100 W inside
// them and 300 W elsewhere, sampled every 10 ms.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, native, waitFinished, resultJson, artifactPath, browserSession } from './harness.mjs';

const BASE = 1_764_000_000_000_000_000n;
const MONO_SKEW = 1_763_999_000_000_000_000n;
const GRID0_NS = 1_000_000_500n;
const STEP_NS = 10_000_000n;

function trace(base) {
  const evs = [
    '{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":1000000.5,"dur":200000}',
    '{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":8,"ts":1500000.5,"dur":200000}',
    '{"ph":"X","cat":"gpu_memset","name":"Memset","pid":0,"tid":8,"ts":2424000.5,"dur":76000}',
    '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":9,"tid":9,"ts":900000,"dur":2000000}',
    '{"ph":"X","cat":"cpu_op","name":"aten::item","pid":9,"tid":9,"ts":1250000.5,"dur":200000}',
    '{"ph":"X","cat":"python_function","name":"dataloader next","pid":9,"tid":10,"ts":1750000.5,"dur":600000}',
  ];
  const b = base === null ? '' : `,"baseTimeNanoseconds":${base}`;
  return `{"traceEvents":[\n${evs.join(',\n')}\n],"traceName":"t"${b}}\n`;
}

function recording() {
  const rows = [];
  for (let k = 0n; k < 151n; k++) {
    const t = GRID0_NS + k * STEP_NS;
    const idle = (t >= 1_200_000_500n && t <= 1_500_000_500n) || (t >= 1_700_000_500n && t <= 2_424_000_500n);
    const [p, u] = idle ? [100, 0] : [300, 90];
    rows.push(`${BASE + t - MONO_SKEW},${BASE + t},SAMPLE,,${p},${u},,,,,0\n`);
  }
  return 't_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n' +
    rows.join('');
}

/// A training loop of `steps` steps (a kernel every 2 ms, a cpu_op and a runtime call each, a
/// step annotation every 100), with a pause of 150 + k ms before every 700th step k: many byte
/// ranges, of which the second read scans only those around the listed pauses.
function loopTrace(steps) {
  const evs = [];
  let t = 1_000_000;
  for (let k = 0; k < steps; k++) {
    if (k > 0 && k % 700 === 0) t += 150_000 + k;
    evs.push(`{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":${t},"dur":1000}`);
    evs.push(`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":9,"tid":9,"ts":${t - 500},"dur":${400 + (k % 7)}}`);
    evs.push(`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":9,"ts":${t - 50},"dur":5}`);
    if (k % 100 === 0) {
      evs.push(`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#${k / 100}","pid":9,"tid":9,"ts":${t - 600},"dur":150000}`);
    }
    t += 2000;
  }
  return `{"traceEvents":[\n${evs.join(',\n')}\n],"baseTimeNanoseconds":${BASE}}\n`;
}

/// `trace(BASE)` with the recording's samples also written into it as PyTorch's profiler writes
/// power counters (`"GPU 0 Counters"`, the value under `""`, µs on the trace clock), 1.5 times the
/// recording's power, so that the two disagree (docs/join.md, "Power from the trace's counters").
function traceWithCounters() {
  const evs = [];
  for (let k = 0n; k < 151n; k++) {
    const t = GRID0_NS + k * STEP_NS;
    const idle = (t >= 1_200_000_500n && t <= 1_500_000_500n) || (t >= 1_700_000_500n && t <= 2_424_000_500n);
    const [p, u] = idle ? [150, 0] : [450, 90];
    const ts = `${t / 1000n}.${String(t % 1000n).padStart(3, '0')}`;
    evs.push(`{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","tid":0,"ts":${ts},"args":{"":${p}}}`);
    evs.push(`{"ph":"C","name":"SM Active (%)","pid":"GPU 0 Counters","tid":0,"ts":${ts},"args":{"":${u}}}`);
  }
  evs.push('{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","tid":0,"ts":1100000,"args":{"":NaN}}');
  return trace(BASE).replace('"traceEvents":[\n', `"traceEvents":[\n${evs.join(',\n')},\n`);
}

const dir = mkdtempSync(path.join(tmpdir(), 'flinch-join-page-'));
const file = (name, data) => {
  writeFileSync(path.join(dir, name), data);
  return path.join(dir, name);
};
const files = {
  json: file('step.pt.trace.json', trace(BASE)),
  gz: file('step.pt.trace.json.gz', gzipSync(trace(BASE))),
  nobase: file('nobase.pt.trace.json', trace(null)),
  loop: file('loop.pt.trace.json', loopTrace(6000)),
  counters: file('counters.pt.trace.json', traceWithCounters()),
  // ~14 MB decoded: a restart point every MiB of it on the first read.
  loopGz: file('loopgz.pt.trace.json.gz', gzipSync(loopTrace(42000))),
  csv: file('trace.csv', recording()),
  // A real Kineto trace (HTA's, 1.1 MB gzip, no baseTimeNanoseconds): real pauses, host events
  // and annotations, on a recording from another time (the join says they do not overlap).
  hta: file('rank-0.pt.trace.json.gz',
    readFileSync(path.join(ROOT, 'tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz'))),
};

let server;
let browser;
let page;

browserSession((s) => ({ server, browser, page } = s), { page: true });

/// Drops several files at once on the drop zone, as a user would.
async function dropFiles(paths) {
  const items = paths.map((p) => ({ name: path.basename(p), bytes: readFileSync(p).toString('base64') }));
  await page.evaluate((items) => {
    const dt = new DataTransfer();
    for (const { name, bytes } of items) dt.items.add(new File([Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0))], name));
    const zone = document.querySelector('#drop-zone');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, items);
}

// A folder where the recording has its sidecar (instantaneous power), as `record` writes it.
const sideDir = path.join(dir, 'with-sidecar');
mkdirSync(sideDir);
const sideFile = (name, data) => {
  writeFileSync(path.join(sideDir, name), data);
  return path.join(sideDir, name);
};
const withSidecar = {
  json: sideFile('step.pt.trace.json', trace(BASE)),
  csv: sideFile('trace.csv', recording()),
  sidecar: sideFile('trace.csv.meta.json', `${JSON.stringify({
    tool: 'flinch-trace', csv: 'trace.csv', gpus: [{ index: 0, name: 'NVIDIA H200', gpu_power_w_source: 'instant' }],
  }, null, 2)}\n`),
};

/// Native stdout for the join, run in the files' folder with bare names (as the page's `source`).
function nativeJoin(trace, extra = [], cwd = dir) {
  const nat = native(['trace', path.basename(trace), '--telemetry', 'trace.csv', ...extra, '--json'], cwd);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

test('a plain trace and its recording, chosen together: #result-json is native --json byte for byte', async () => {
  await page.setInputFiles('#file-input', [files.json, files.csv]);
  assert.equal(await page.textContent('#job-name'), 'step.pt.trace.json + trace.csv');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.json));
  const r = JSON.parse(text);
  // The known truth: 724 ms then 300 ms, the first costing 72.56 J and waiting.
  assert.deepEqual(r.pauses.map((p) => p.duration_ms), [724, 300]);
  assert.ok(Math.abs(r.pauses[0].telemetry.gpu_energy_j - 72.56) < 1e-9);
  assert.equal(r.pauses[0].telemetry.verdict.verdict, 'waiting');
  // The table: one row per pause, in the JSON's order, with the host and the enclosing step.
  const rows = await page.locator('#pauses-table tbody tr').allTextContents();
  assert.equal(rows.length, 2);
  assert.match(rows[0], /724 ms.*72\.56 J.*100\.2 W.*waiting.*dataloader next 600 ms.*ProfilerStep#1/);
  assert.match(rows[1], /300 ms.*aten::item/);
  assert.equal(await page.locator('#annotation-table tbody tr').count(), r.annotation_energy.length);
  assert.equal(await page.isVisible('#trace-result'), true);
  // The timeline is drawn: pause shading (orange) inside the 724 ms pause, the busy lane (blue)
  // before it, the power line (red) in the plot.
  const px = await page.evaluate(() => {
    const c = document.querySelector('#timeline');
    const g = c.getContext('2d');
    const dpr = c.width / c.clientWidth;
    // Axis 0.8 s..3.0 s of ts over [78, width - 16] CSS px.
    const W = c.clientWidth - 78 - 16;
    const x = (s) => Math.round((78 + ((s - 0.8) / 2.2) * W) * dpr);
    const at = (s, y) => [...g.getImageData(x(s), Math.round(y * dpr), 1, 1).data];
    return { pauseLane: at(2.0, 19), busyLane: at(1.1, 19), pausePlot: at(2.0, 60) };
  });
  assert.deepEqual(px.busyLane.slice(0, 3), [0x2e, 0x86, 0xab], `busy lane ${px.busyLane}`);
  assert.ok(px.pauseLane[0] > 200 && px.pauseLane[2] < 200, `pause shading ${px.pauseLane}`);
  assert.ok(px.pausePlot[0] > 200 && px.pausePlot[2] < 200, `pause shading over the plot ${px.pausePlot}`);
  await page.screenshot({ path: artifactPath('page-join.png'), fullPage: true });
});

test('a trace, its recording and the recording\'s sidecar: native --json (which reads the sidecar) byte for byte', async () => {
  await dropFiles([withSidecar.sidecar, withSidecar.json, withSidecar.csv]);
  assert.equal(await page.textContent('#job-name'), 'step.pt.trace.json + trace.csv + trace.csv.meta.json');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  const nat = nativeJoin(withSidecar.json, [], sideDir);
  assert.equal(`${text}\n`, nat);
  // The sidecar matters: its instantaneous power is the verdict's evidence, not the default.
  assert.notEqual(nat, nativeJoin(files.json));
  assert.match(JSON.stringify(JSON.parse(text).pauses[0].telemetry.verdict), /instantaneous power \(NVML field 186\)/);
  assert.match(await page.textContent('#run-stats'), /power source from the sidecar: instant/);
  // "Join again" keeps the sidecar.
  await page.fill('#min-gap-ms', '300.001');
  await page.click('#join-again');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeJoin(withSidecar.json, ['--min-gap-ms', '300.001'], sideDir));
  await page.fill('#min-gap-ms', '100');
});

test('pauses in a long plain trace: the second read takes only the byte ranges around them, native --json byte for byte', async () => {
  await page.setInputFiles('#file-input', [files.loop, files.csv]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.loop));
  const r = JSON.parse(text);
  // Before step 700 m: 150 ms + 700 m µs + the 1 ms the step's 2 ms leave idle, longest first.
  assert.deepEqual(r.pauses.map((p) => p.duration_ms), [8, 7, 6, 5, 4, 3, 2, 1].map((m) => (151_000 + 700 * m) / 1000));
  assert.ok(r.pauses.every((p) => p.host.some((h) => h.name === 'aten::mm')) && r.annotation_energy.length > 0);
  // The recording read once, the trace once whole and then only in part.
  const read = Number(await page.evaluate(() => document.body.dataset.bytes));
  const [csvBytes, traceBytes] = [statSync(files.csv).size, statSync(files.loop).size];
  assert.ok(read > csvBytes + traceBytes && read < csvBytes + 1.5 * traceBytes, `${read} bytes read`);
});

test('pauses late in a long .json.gz trace: the second read restarts inflating at the point before them, native --json byte for byte', async () => {
  await page.setInputFiles('#file-input', [files.loopGz, files.csv]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeJoin(files.loopGz));
  // Only the pauses of the last tenth of the trace listed (150 + 0.7 m + 1 ms >= 190 ms): the second read
  // starts at the restart point before them (one per MiB of the 14 MB decoded).
  await page.fill('#min-gap-ms', '190');
  await page.click('#join-again');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.loopGz, ['--min-gap-ms', '190']));
  assert.ok(JSON.parse(text).pauses.length > 0);
  const read = Number(await page.evaluate(() => document.body.dataset.bytes));
  const [csvBytes, gzBytes] = [statSync(files.csv).size, statSync(files.loopGz).size];
  assert.ok(read > csvBytes + gzBytes && read < csvBytes + 1.2 * gzBytes, `${read} bytes read of ${csvBytes} + ${gzBytes}`);
  await page.fill('#min-gap-ms', '100');
});

test('a trace and its recording with Steps ticked: native --telemetry --steps --json byte for byte', async () => {
  await page.check('#steps-toggle');
  await page.setInputFiles('#file-input', [files.json, files.csv]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.json, ['--steps']));
  const r = JSON.parse(text);
  assert.equal(r.steps.length, 1);
  assert.ok(r.steps[0].gpu_energy_j > 0);
  assert.equal(await page.locator('.step-row').count(), 1);
  assert.match(await page.textContent('.step-row .bar-figures'), / J$/);
  await page.uncheck('#steps-toggle');
});

test('a .json.gz trace dropped with its recording: native --json byte for byte', async () => {
  await dropFiles([files.csv, files.gz]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeJoin(files.gz));
});

test('a trace that carries power counters, with its recording: the recording wins, the two compared, native --json byte for byte', async () => {
  await page.setInputFiles('#file-input', [files.counters, files.csv]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.counters));
  const r = JSON.parse(text);
  assert.equal(r.power_source, 'telemetry');
  assert.equal(r.trace_counters.devices[0].pid, 'GPU 0 Counters');
  assert.equal(r.trace_counters.non_finite_values, 1);
  assert.equal(r.trace_counters.comparison[0].disagree, true);
  assert.ok(r.join_warnings.some((w) => /differ by more than 10% or 5 W/.test(w)), r.join_warnings.join('\n'));
});

/// Native stdout for a trace alone, run in the files' folder with its bare name.
function nativeAlone(trace, extra = []) {
  const nat = native(['trace', path.basename(trace), ...extra, '--json'], dir);
  assert.equal(nat.status, 0, nat.stderr);
  return nat.stdout;
}

/// Whether the timeline's power plot holds the power line (red, #d1495b) somewhere in the column
/// at `s` seconds of ts (axis 0.8 s..3.0 s, as above).
async function powerLineAt(s) {
  return page.evaluate((s) => {
    const c = document.querySelector('#timeline');
    const g = c.getContext('2d');
    const dpr = c.width / c.clientWidth;
    const W = c.clientWidth - 78 - 16;
    const x = Math.round((78 + ((s - 0.8) / 2.2) * W) * dpr);
    const px = g.getImageData(x, 0, 1, c.height).data;
    for (let y = 0; y < c.height; y++) {
      const [r, gr, b] = [px[4 * y], px[4 * y + 1], px[4 * y + 2]];
      if (r > 180 && gr < 120 && b < 130) return true;
    }
    return false;
  }, s);
}

test('a trace that carries power counters, dropped alone: joined with them, native --pauses --json byte for byte, the timeline plots their power', async () => {
  // A trace without counters, dropped alone, is summarized alone as before.
  await page.setInputFiles('#file-input', files.json);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeAlone(files.json));
  assert.equal(await page.isVisible('#join-result'), false);
  await page.setInputFiles('#file-input', files.counters);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeAlone(files.counters, ['--pauses']));
  const r = JSON.parse(text);
  assert.equal(r.power_source, 'trace_counters');
  assert.equal(r.trace_counters.used, true);
  // The counters' known truth: 150 W inside the pauses, 450 W elsewhere.
  assert.deepEqual(r.pauses.map((p) => p.duration_ms), [724, 300]);
  assert.ok(Math.abs(r.pauses[0].telemetry.avg_power_w - 150) < 1, JSON.stringify(r.pauses[0].telemetry));
  assert.ok(r.annotation_energy.length > 0);
  assert.equal(await page.isVisible('#join-result'), true);
  assert.match(await page.textContent('#join-overview'), /power from the trace's own counters/);
  assert.equal(await powerLineAt(1.1), true, 'a power line in the timeline');
  await page.screenshot({ path: artifactPath('page-join-counters.png'), fullPage: true });
  // With Steps ticked: the steps too, their energies from the counters (--pauses --steps).
  await page.check('#steps-toggle');
  await page.setInputFiles('#file-input', files.counters);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const withSteps = await page.textContent('#result-json');
  assert.equal(`${withSteps}\n`, nativeAlone(files.counters, ['--pauses', '--steps']));
  const st = JSON.parse(withSteps);
  assert.equal(st.step_summary.power_source, 'trace_counters');
  assert.ok(st.steps[0].gpu_energy_j > 0);
  // `--steps` alone gives each step the same energy, without the join.
  const alone = JSON.parse(nativeAlone(files.counters, ['--steps']));
  assert.deepEqual(alone.steps.map((x) => [x.gpu_energy_j, x.energy_bound_j, x.resolvable, x.avg_power_w, x.verdict]),
    st.steps.map((x) => [x.gpu_energy_j, x.energy_bound_j, x.resolvable, x.avg_power_w, x.verdict]));
  assert.equal(await page.isVisible('#steps-result'), true);
  await page.uncheck('#steps-toggle');
  // "Join again" joins the trace with its counters again, with the form's options (the later
  // tests start from this page, the join's form shown).
  await page.fill('#min-gap-ms', '300.001');
  await page.click('#join-again');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`, nativeAlone(files.counters, ['--min-gap-ms', '300.001']));
  await page.fill('#min-gap-ms', '100');
});

test('the form\'s options are the CLI\'s: --min-gap-ms, --clock-offset-ms, --gpu-map', async () => {
  await page.fill('#min-gap-ms', '300.001');
  await page.fill('#clock-offset-ms', '1764000000000');
  await page.setInputFiles('#file-input', [files.nobase, files.csv]);
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.nobase, ['--min-gap-ms', '300.001', '--clock-offset-ms', '1764000000000']));
  const r = JSON.parse(text);
  assert.equal(r.alignment.source, 'clock_offset');
  assert.equal(r.pauses.length, 1);
  // "Join again" with a GPU map that sends device 0 to a GPU the recording lacks.
  await page.fill('#gpu-map', '0=3');
  await page.click('#join-again');
  assert.equal(await waitFinished(page), 'done', await page.textContent('#error'));
  assert.equal(`${await page.textContent('#result-json')}\n`,
    nativeJoin(files.nobase, ['--min-gap-ms', '300.001', '--clock-offset-ms', '1764000000000', '--gpu-map', '0=3']));
  assert.match(await page.textContent('#join-overview'), /gpu_index 3, which the recording does not have/);
  await page.fill('#min-gap-ms', '100');
  await page.fill('#clock-offset-ms', '');
  await page.fill('#gpu-map', '');
});

test('a real Kineto trace with a recording of another time: native --json byte for byte', async () => {
  // Its GPU never idles 100 ms: 0.2 ms finds two pauses.
  await page.fill('#clock-offset-ms', '0');
  await page.fill('#min-gap-ms', '0.2');
  await page.setInputFiles('#file-input', [files.hta, files.csv]);
  assert.equal(await waitFinished(page, 120_000), 'done', await page.textContent('#error'));
  const text = await page.textContent('#result-json');
  assert.equal(`${text}\n`, nativeJoin(files.hta, ['--min-gap-ms', '0.2', '--clock-offset-ms', '0']));
  const r = JSON.parse(text);
  assert.equal(r.pauses.length, 2);
  // No power reading touches them: no energy.
  assert.ok(r.pauses.every((p) => p.host.length > 0 && p.telemetry.gpu_energy_j === null), 'real pauses with host events, no energy');
  assert.match(r.join_warnings.join('\n'), /do not overlap/);
  assert.equal(await page.locator('#pauses-table tbody tr').count(), r.pauses.length);
  await page.screenshot({ path: artifactPath('page-join-hta.png'), fullPage: true });
  // 0: every idle gap, as the CLI gives it.
  await page.fill('#min-gap-ms', '0');
  await page.setInputFiles('#file-input', [files.hta, files.csv]);
  assert.equal(await waitFinished(page, 120_000), 'done', await page.textContent('#error'));
  const every = await page.textContent('#result-json');
  assert.equal(`${every}\n`, nativeJoin(files.hta, ['--min-gap-ms', '0', '--clock-offset-ms', '0']));
  assert.ok(JSON.parse(every).pause_devices[0].pauses_found > r.pauses.length);
  await page.fill('#clock-offset-ms', '');
  await page.fill('#min-gap-ms', '100');
});

test('a trace without baseTimeNanoseconds and no offset: the native error; three files: a clear error', async () => {
  await page.fill('#clock-offset-ms', '');
  await page.fill('#min-gap-ms', '100');
  await page.setInputFiles('#file-input', [files.nobase, files.csv]);
  assert.equal(await waitFinished(page), 'error');
  const nat = native(['trace', 'nobase.pt.trace.json', '--telemetry', 'trace.csv', '--json'], dir);
  assert.equal(nat.status, 1);
  const msg = nat.stderr.trim().replace(/^flinch-trace trace: nobase\.pt\.trace\.json: /, '');
  assert.match(msg, /--clock-offset-ms/);
  assert.equal(await page.textContent('#error'), `nobase.pt.trace.json + trace.csv: ${msg}`);

  await dropFiles([files.json, files.gz, files.csv]);
  assert.equal(await waitFinished(page), 'error');
  assert.match(await page.textContent('#error'), /one trace with one trace\.csv/);

  // A sidecar must be the recording's: `<csv name>.meta.json`.
  const other = file('other.csv.meta.json', readFileSync(withSidecar.sidecar));
  await dropFiles([files.json, files.csv, other]);
  assert.equal(await waitFinished(page), 'error');
  assert.match(await page.textContent('#error'), /other\.csv\.meta\.json is not the sidecar of trace\.csv/);
});
