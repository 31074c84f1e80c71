// The page: file input / drop zone -> analysis worker -> tables, plot, result JSON. A dropped or
// chosen folder is summarized as a runs folder (`flinch-trace summarize`): the page lists its
// files, and the worker hands the core the bytes of those it asks for.
// Automation hooks (docs/cli.md, "The page"): <body data-state="loading|ready|working|done|error">, #result-json, #error.
// Measurements for tests and users: body data-wasm-memory-before-bytes / data-wasm-memory-bytes
// (WebAssembly memory size before and after a run), data-bytes, data-seconds.

import { el, num, stepOptions } from './dom.js';
import { initCompare, offerCompare, renderDiff } from './compare.js';

const $ = (sel) => document.querySelector(sel);
const body = document.body;

let worker = null;
let workerReady = false;
let pending = null; // {file, options, sidecar} waiting for the worker
let current = null; // {file, options, t0, sidecar}
let recording = null; // the last recording-level trace.csv result (for the plot and pickers)
let lastJson = '';
let lastName = 'result';

function setState(state) {
  body.dataset.state = state;
}

function showError(message) {
  const el = $('#error');
  el.textContent = message;
  el.hidden = !message;
}

function status(text) {
  $('#status').textContent = text;
}

/// Two workers: `inflate` reads the file and inflates gzip, `analysis` runs the Analyzer; decoded
/// buffers go from one to the other over a MessageChannel (see inflate-worker.js).
function startWorker() {
  workerReady = false;
  const ready = new Set();
  const spawn = (name, script) => {
    const w = new Worker(new URL(script, import.meta.url), { type: 'module' });
    w.onmessage = (ev) => {
      if (ev.data.type === 'ready') {
        ready.add(name);
        if (ready.size === 2) onWorkerMessage(ev.data);
      } else {
        onWorkerMessage(ev.data);
      }
    };
    w.onerror = (ev) => {
      ev.preventDefault();
      fail(`the ${name} worker failed: ${ev.message || 'unknown error'}`);
    };
    return w;
  };
  worker = { analysis: spawn('analysis', './worker.js'), inflate: spawn('inflate', './inflate-worker.js') };
}

function stopWorker() {
  worker.analysis.terminate();
  worker.inflate.terminate();
}

function onWorkerMessage(msg) {
  switch (msg.type) {
    case 'ready':
      workerReady = true;
      body.dataset.wasmMemoryBytes = msg.memoryBytes;
      if (pending) {
        const p = pending;
        pending = null;
        run(p.file, p.options, p.sidecar);
      } else if (body.dataset.state === 'loading') {
        setState('ready');
        status('Ready. Choose or drop a file.');
      }
      break;
    case 'progress':
      showProgress(msg.bytes, msg.total);
      break;
    case 'done':
      finish(msg);
      break;
    case 'error':
      fail(msg.message, msg.bytes);
      // A failed run leaves the other worker waiting: start both afresh. Not when the analyzer
      // could not load at all (`fatal`): new workers would fail again, in a loop.
      stopWorker();
      if (!msg.fatal) startWorker();
      break;
  }
}

function fmtBytes(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} B`;
}

function showProgress(bytes, total) {
  const seconds = (performance.now() - current.t0) / 1000;
  $('#progress').value = total ? bytes / total : 0;
  const rate = seconds > 0 ? `${(bytes / 1e6 / seconds).toFixed(0)} MB/s` : '';
  $('#job-stats').textContent = `${fmtBytes(bytes)} of ${fmtBytes(total)} · ${rate}`;
}

/// Starts an analysis of `file`; `window` = {start, end} mark labels for a trace.csv window;
/// `sidecar`: the trace.csv's `.meta.json` (its power source is used, as `analyze` does).
function analyze(file, window, sidecar) {
  const options = { kind: 'auto', limits: 'page', source: file.name };
  if (window) Object.assign(options, window);
  if (!window && !/\.csv(\.gz)?$/i.test(file.name)) Object.assign(options, stepOptions());
  if (!window) recording = null;
  showJob(file, options, sidecar);
  if (workerReady) run(file, options, sidecar);
  else pending = { file, options, sidecar };
}

/// Shows the job at once (data-state=working), even while the workers are still starting.
function showJob(file, options, sidecar) {
  current = { file, options, t0: performance.now(), sidecar };
  lastName = file.name;
  setState('working');
  showError('');
  status(`Analyzing ${file.name}…`);
  $('#job').hidden = false;
  $('#job-name').textContent = sidecar && options.kind !== 'join' ? `${file.name} + ${sidecar.name}` : file.name;
  $('#progress').value = 0;
  $('#job-stats').textContent = '';
  $('#cancel').disabled = false;
  if (!options.start) {
    $('#csv-result').hidden = true;
    $('#trace-result').hidden = true;
    $('#runs-result').hidden = true;
    $('#join-result').hidden = true;
    $('#steps-result').hidden = true;
    $('#diff-result').hidden = true;
    $('#output').hidden = true;
  }
}


/// Joins a trace with its recording (`flinch-trace trace TRACE --telemetry CSV --json`), with
/// the join options of the form; `sidecar`: the recording's `.meta.json`, if given.
function analyzeJoin(trace, recordingFile, sidecar) {
  const join = { source: trace.name, limits: 'page' };
  const minGap = Number($('#min-gap-ms').value);
  if ($('#min-gap-ms').value !== '' && minGap !== 100) join.min_gap_ms = minGap;
  if ($('#clock-offset-ms').value.trim()) join.clock_offset_ms = $('#clock-offset-ms').value.trim();
  if ($('#gpu-map').value.trim()) join.gpu_map = $('#gpu-map').value.trim();
  Object.assign(join, stepOptions());
  if (!recordingFile) join.trace_alone = true;
  const names = [trace, recordingFile, sidecar].filter(Boolean).map((f) => f.name);
  const job = { name: names.join(' + '), trace, recording: recordingFile };
  const options = { kind: 'join', source: trace.name, join };
  recording = null;
  showJob(job, options, sidecar);
  lastName = trace.name;
  if (workerReady) run(job, options, sidecar);
  else pending = { file: job, options, sidecar };
}

/// A trace dropped alone that carries GPU power counters, joined with them as with a recording
/// (`flinch-trace trace TRACE --pauses --json`), with the join options of the form.
function analyzeTraceAlone(trace) {
  analyzeJoin(trace, null, null);
}

/// Summarizes a runs folder named `runs`; `files`: [{path, file}], paths starting with `runs/`.
function analyzeRuns(runs, files) {
  const job = { name: runs, files };
  const options = { kind: 'runs', source: runs };
  recording = null;
  showJob(job, options);
  if (workerReady) run(job, options);
  else pending = { file: job, options };
}

/// Compares two runs (`flinch-trace diff A B --json`): `job` and `options` from compare.js.
function analyzeDiff(job, options) {
  recording = null;
  showJob(job, options);
  if (workerReady) run(job, options);
  else pending = { file: job, options };
}

function run(file, options, sidecar) {
  current = { file, options, t0: performance.now(), sidecar };
  if (options.kind === 'runs') {
    worker.analysis.postMessage({ type: 'summarize', runs: options.source, files: file.files });
    return;
  }
  if (options.kind === 'diff') {
    worker.analysis.postMessage({ type: 'diff', options: options.diff, files: file.files, sidecars: file.sidecars });
    return;
  }
  if (options.kind === 'join') {
    worker.analysis.postMessage({ type: 'join', options: options.join, recording: file.recording, trace: file.trace, sidecar });
    return;
  }
  const channel = new MessageChannel();
  worker.analysis.postMessage({ type: 'analyze', options, port: channel.port1, sidecar }, [channel.port1]);
  worker.inflate.postMessage({ type: 'start', file, port: channel.port2 }, [channel.port2]);
}

function finish(msg) {
  if (msg.powerCounters && current.options.kind !== 'join' && !current.options.start) {
    // A trace alone that carries its GPU power: joined with it (`trace FILE --pauses --json`).
    analyzeTraceAlone(current.file);
    return;
  }
  let result;
  try {
    result = JSON.parse(msg.json);
  } catch (e) {
    fail(`the analyzer returned invalid JSON: ${e.message}`);
    return;
  }
  lastJson = msg.json;
  $('#result-json').textContent = msg.json;
  Object.assign(body.dataset, {
    wasmMemoryBeforeBytes: msg.memoryBeforeBytes,
    wasmMemoryBytes: msg.memoryBytes,
    bytes: msg.bytes,
    seconds: msg.seconds,
  });
  $('#progress').value = 1;
  $('#cancel').disabled = true;
  const rate = msg.seconds > 0 ? msg.bytes / 1e6 / msg.seconds : 0;
  const stats = `${fmtBytes(msg.bytes)} in ${msg.seconds.toFixed(2)} s (${rate.toFixed(0)} MB/s); ` +
    `WebAssembly memory ${fmtBytes(msg.memoryBeforeBytes)} before, ${fmtBytes(msg.memoryBytes)} after` +
    (msg.powerSource ? `; power source from the sidecar: ${msg.powerSource}` : '');
  $('#job-stats').textContent = stats;
  $('#run-stats').textContent = stats;
  try {
    render(result, current.options, msg);
  } catch (e) {
    // The JSON is still shown and downloadable; only the drawing failed.
    console.error(e);
    showError(`could not draw the result: ${e.message}`);
  }
  $('#output').hidden = false;
  status(`Done: ${current.file.name}.`);
  setState('done');
}

function fail(message, bytes) {
  // A comparison's errors name their file themselves (the core's message).
  const where = current && current.options.kind !== 'diff' ? `${current.file.name}: ` : '';
  showError(`${where}${message}`);
  status('The analysis failed.');
  if ($('#cancel')) $('#cancel').disabled = true;
  if (bytes !== undefined) body.dataset.bytes = bytes;
  setState('error');
}

function cancel() {
  stopWorker();
  startWorker();
  pending = null;
  $('#cancel').disabled = true;
  status(`Cancelled ${current ? current.file.name : ''}. Ready.`);
  setState('ready');
}

// ---------------------------------------------------------------------------------------------
// Rendering. The result shapes are those of core (TraceSummary / trace.csv analysis); the page
// only draws what is there and never recomputes a figure.

function render(result, options, msg) {
  if (options.kind === 'diff') return renderDiff(result);
  if (options.kind === 'runs') renderRuns(result, msg.message);
  else if (options.kind === 'join' && 'pause_devices' in result) renderJoin(result, msg.timeline ? JSON.parse(msg.timeline) : null);
  else if (isTraceSummary(result)) renderTrace(result);
  else if (options.start) renderWindow(result);
  else renderRecording(result);
  if (result && Array.isArray(result.steps)) renderSteps(result);
}

/// The step parts, in the breakdown's priority order (docs/steps.md).
const STEP_PARTS = ['kernel', 'memcpy', 'memset', 'communication', 'runtime', 'dataloader', 'cpu_exec', 'other'];

/// The step view: the summary line, one stacked bar per step (its breakdown, to the scale of the
/// longest step), outliers marked; a click on a step shows its parts against the median step.
function renderSteps(r) {
  $('#steps-result').hidden = false;
  const steps = r.steps;
  const s = r.step_summary || {};
  const d = s.duration_ms || {};
  const outliers = s.outliers || [];
  $('#steps-overview').textContent = steps.length === 0
    ? (s.note || 'No step matched.')
    : `${steps.length} steps (${s.pattern || ''}): median ${num(d.median)} ms, p90 ${num(d.p90)} ms, ` +
      `max ${num(d.max)} ms; ${outliers.length} outlier${outliers.length === 1 ? '' : 's'}` +
      (outliers.length ? `: ${outliers.map((o) => `#${o.index} ${o.largest_part} +${num(o.largest_part_excess_ms)} ms`).join(', ')}` : '') +
      '.';
  $('#steps-legend').replaceChildren(...STEP_PARTS.flatMap((p) => [el('span', { class: `key part-${p}` }), `${p} `]));
  const longest = Math.max(1e-9, ...steps.map((st) => st.duration_ms));
  const byIndex = new Map(outliers.map((o) => [o.index, o]));
  $('#step-bars').replaceChildren(...steps.map((st, k) => {
    const parts = st.breakdown_ms || {};
    const segs = STEP_PARTS.filter((p) => parts[p] > 0).map((p) =>
      el('div', { class: `seg part-${p}`, style: `width:${(100 * parts[p]) / longest}%`, title: `${p} ${num(parts[p])} ms` }));
    const row = el('div', { class: `bar-row step-row${st.outlier ? ' outlier' : ''}`, 'data-k': String(k), tabindex: '0' },
      el('div', { class: 'bar-label', title: st.name }, st.outlier ? `#${st.index} (outlier)` : `#${st.index}`),
      el('div', { class: 'bar-track stacked' }, ...segs),
      el('div', { class: 'bar-figures' }, `${num(st.duration_ms)} ms` +
        (st.gpu_energy_j != null ? ` · ${num(st.gpu_energy_j)} J` : '')));
    const show = () => showStep(st, s, byIndex.get(st.index));
    row.addEventListener('click', show);
    row.addEventListener('keydown', (e) => { if (e.key === 'Enter') show(); });
    return row;
  }));
  $('#step-detail').hidden = true;
}

/// One step's details: each part against the median step's, its energy, and for an outlier its
/// top host ops and the pauses inside it.
function showStep(st, summary, outlier) {
  const median = summary.breakdown_ms_median || {};
  const rows = STEP_PARTS.map((p) => el('tr', {}, el('td', {}, p),
    el('td', { class: 'n' }, num((st.breakdown_ms || {})[p])), el('td', { class: 'n' }, num(median[p]))));
  const detail = $('#step-detail');
  const parts = [
    el('h3', {}, `${st.name}: ${num(st.duration_ms)} ms from ${st.start_ts_us} µs${st.outlier ? ' (outlier)' : ''}`),
    el('table', { class: 'step-parts' },
      el('thead', {}, el('tr', {}, el('th', {}, 'part'), el('th', {}, 'ms'), el('th', {}, 'median step, ms'))),
      el('tbody', {}, ...rows)),
  ];
  if (st.gpu_energy_j != null) {
    parts.push(el('p', {}, `GPU energy ${num(st.gpu_energy_j)} J (± ${num(st.energy_bound_j)} J), ` +
      `${num(st.avg_power_w)} W average, verdict ${typeof st.verdict === 'string' ? st.verdict : verdictText(st.verdict)}` + (st.resolvable === false ? ' (shorter than the counter\'s update period)' : '')));
  }
  if (outlier) {
    parts.push(el('p', {}, `Largest part: ${outlier.largest_part}, +${num(outlier.largest_part_excess_ms)} ms against the median step.`));
    const ops = outlier.top_host_ops || [];
    if (ops.length) {
      parts.push(el('table', { class: 'step-ops' },
        el('thead', {}, el('tr', {}, el('th', {}, 'top host ops'), el('th', {}, 'ms'), el('th', {}, 'n'))),
        el('tbody', {}, ...ops.map((o) => el('tr', {}, el('td', { class: 'op-name', title: o.name }, o.name),
          el('td', { class: 'n' }, num(o.time_ms)), el('td', { class: 'n' }, num(o.n)))))));
    }
    for (const p of outlier.pauses || []) {
      parts.push(el('p', {}, `GPU pause on device ${p.device}: ${num(p.duration_ms)} ms`));
    }
  }
  detail.replaceChildren(...parts);
  detail.hidden = false;
}

function isTraceSummary(r) {
  return r && typeof r === 'object' && 'largest_ops_by_duration_sum' in r;
}

function usToText(us) {
  if (us === null || us === undefined) return 'n/a';
  if (us >= 1e6) return `${(us / 1e6).toFixed(3)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(3)} ms`;
  return `${Number(us).toFixed(3)} µs`;
}

function renderTrace(r) {
  $('#trace-result').hidden = false;
  const cats = Object.entries(r.categories || {});
  const events = r.totals && r.totals.duration_events != null
    ? r.totals.duration_events
    : cats.reduce((s, [, c]) => s + (c.events || 0), 0);
  const notes = [];
  if (r.truncated) notes.push('truncated input: summarized from what was read');
  for (const w of r.warnings || []) notes.push(typeof w === 'string' ? w : JSON.stringify(w));
  $('#trace-overview').textContent =
    `${r.source}: ${num(events)} duration events in ${cats.length} categories.` +
    (notes.length ? ` Warnings: ${notes.join('; ')}` : '');

  const bars = $('#category-bars');
  bars.replaceChildren();
  const max = Math.max(1, ...cats.map(([, c]) => Number(c.duration_sum_us) || 0));
  cats.sort((a, b) => (b[1].duration_sum_us || 0) - (a[1].duration_sum_us || 0));
  for (const [name, c] of cats) {
    const sumPct = (100 * (Number(c.duration_sum_us) || 0)) / max;
    const busyPct = (100 * (Number(c.busy_union_us) || 0)) / max;
    bars.append(
      el('div', { class: 'bar-row' },
        el('div', { class: 'bar-label', title: name }, name),
        el('div', { class: 'bar-track' },
          el('div', { class: 'bar sum', style: `width:${sumPct}%` }),
          el('div', { class: 'bar busy', style: `width:${busyPct}%` })),
        el('div', { class: 'bar-figures' },
          `busy ${usToText(c.busy_union_us)} · sum ${usToText(c.duration_sum_us)} · ${num(c.events)} events`)),
    );
  }
  bars.append(el('p', { class: 'legend' }, el('span', { class: 'key busy' }), 'busy (union of intervals) ',
    el('span', { class: 'key sum' }), 'sum of durations (overlaps counted each time)'));

  const ops = r.largest_ops_by_duration_sum || [];
  $('#top-ops thead').replaceChildren(
    el('tr', {}, ...['category', 'name', 'sum', 'n', 'mean µs', 'p50 µs', 'p99 µs', 'max µs'].map((h) => el('th', {}, h))),
  );
  $('#top-ops tbody').replaceChildren(
    ...ops.map((op) => {
      const s = op.duration_us || {};
      return el('tr', {},
        el('td', {}, op.category), el('td', { class: 'op-name', title: op.name }, op.name),
        el('td', { class: 'n' }, usToText(op.duration_sum_us)), el('td', { class: 'n' }, num(s.n)),
        el('td', { class: 'n' }, num(s.mean)), el('td', { class: 'n' }, num(s.p50)),
        el('td', { class: 'n' }, num(s.p99)), el('td', { class: 'n' }, num(s.max)));
    }),
  );
}

/// A runs folder's summary: one row per run (its whole-run telemetry) and per trace.
function renderRuns(r, message) {
  $('#runs-result').hidden = false;
  $('#runs-overview').textContent = `${message} (traces ${r.trace_analysis}).`;
  const head = (sel, names) => $(sel).replaceChildren(el('tr', {}, ...names.map((h) => el('th', {}, h))));
  const warnings = (...lists) => lists.reduce((n, l) => n + (l || []).length, 0);
  $('#runs-table').hidden = !Object.keys(r.telemetry || {}).length;
  $('#runs-traces').hidden = !(r.traces || []).length;
  head('#runs-table thead', ['run', 'samples', 'span', 'GPU energy', 'sustained', 'warnings']);
  $('#runs-table tbody').replaceChildren(
    ...Object.entries(r.telemetry || {}).map(([name, run]) => {
      const w = run.whole_run || {};
      const energy = w.whole_gpu_energy_j_over_observed_intervals;
      return el('tr', {},
        el('td', {}, name), el('td', { class: 'n' }, num(w.samples)),
        el('td', { class: 'n' }, w.span_s == null ? 'n/a' : `${num(w.span_s)} s`),
        el('td', { class: 'n' }, energy == null ? 'n/a' : `${num(energy)} J`),
        el('td', {}, run.sustained ? `${num(run.sustained.samples)} samples` : 'none'),
        el('td', { class: 'n' }, num(warnings(run.warnings, w.warnings))));
    }),
  );
  head('#runs-traces thead', ['trace', 'status', 'warnings']);
  $('#runs-traces tbody').replaceChildren(
    ...(r.traces || []).map((t) => el('tr', {},
      el('td', { class: 'op-name', title: t.source }, t.source),
      el('td', {}, t.error ? `error: ${t.error}` : t.status === 'not_analyzed' ? `not analyzed: ${t.reason}`
        : `${Object.keys(t.categories || {}).length} categories, ${(t.largest_ops_by_duration_sum || []).length} ops`),
      el('td', { class: 'n' }, num(warnings(t.warnings))))),
  );
}

// trace.csv: the recording-level result (marks, spans, series) and the window result (selection
// + window). Field names follow core/src/window/; anything missing is simply not drawn.

function renderRecording(r) {
  recording = r;
  $('#csv-result').hidden = false;
  const marks = r.marks || [];
  const gpus = r.gpus || [];
  const rows = r.rows || {};
  const warn = (r.warnings || []).length ? ` Warnings: ${r.warnings.join('; ')}` : '';
  $('#csv-overview').textContent =
    `${num(rows.samples)} samples, ${num(rows.marks)} marks, ${gpus.length} GPU(s)` +
    (gpus.length ? `; idle floor ${gpus.map((g) => `${num(g.idle_floor_w, 1)} W`).join(', ')}` : '') + `.${warn}` +
    (r.gpu_energy_note ? ` Note: ${r.gpu_energy_note}.` : '');
  fillPickers(marks);
  drawPlot(r, null);
  $('#window-table').hidden = true;
  renderSpans(r.spans || []);
}

function fillPickers(marks) {
  const labels = [...new Set(marks.map((m) => m.label))];
  for (const [sel, idx] of [[$('#start-mark'), 0], [$('#end-mark'), labels.length - 1]]) {
    sel.replaceChildren(...labels.map((l) => el('option', { value: l }, l)));
    if (labels.length) sel.value = labels[Math.max(0, idx)];
  }
  $('#analyze-window').disabled = labels.length < 2;
}

function verdictText(v) {
  if (!v || !v.verdict) return 'none';
  return `${v.verdict}${v.confident ? '' : ' (indicative)'}`;
}

function renderSpans(spans) {
  const box = $('#spans');
  box.replaceChildren();
  if (!spans.length) return;
  const head = ['span', 'start', 'end', 'duration', 'energy (edge)', 'energy (reference)', 'verdict'];
  box.append(el('h3', {}, 'Spans'), el('table', { id: 'spans-table' },
    el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...spans.map((w) => el('tr', {},
      el('td', {}, w.kind), el('td', {}, w.start_label), el('td', {}, w.end_label),
      el('td', { class: 'n' }, `${num(w.duration_s, 6)} s`),
      el('td', { class: 'n' }, w.total && w.total.energy_edge_j != null ? `${num(w.total.energy_edge_j)} J` : 'n/a'),
      el('td', { class: 'n' }, w.reference && w.reference.energy_j != null ? `${num(w.reference.energy_j)} J` : 'n/a'),
      el('td', {}, verdictText(w.verdict)))))));
}

function renderWindow(r) {
  if (recording) drawPlot(recording, r.window || null);
  const w = r.window;
  const rows = [];
  if (!w) {
    rows.push(['window', 'not found (see the error above)']);
  } else {
    const gpuUtil = (w.gpus || []).map((g) => g.util_time_weighted_pct).filter((x) => x != null);
    rows.push(
      ['window', `${w.start_label} → ${w.end_label} (occurrence ${w.occurrence})`],
      ['duration', `${num(w.duration_s, 6)} s`],
      ['GPU energy, edge-interpolated', w.total.energy_edge_j != null ? `${num(w.total.energy_edge_j)} J` : 'n/a'],
      ['GPU energy, counter', w.total.energy_counter_j != null ? `${num(w.total.energy_counter_j)} J` : 'n/a'],
      ['GPU energy, reference (samples only)',
        w.reference.energy_j != null ? `${num(w.reference.energy_j)} J over ${w.reference.samples} samples` : 'n/a'],
      ['utilization, time-weighted', gpuUtil.length ? gpuUtil.map((u) => `${num(u, 2)} %`).join(', ') : 'n/a'],
      ['utilization, reference', w.reference.avg_util_pct != null ? `${num(w.reference.avg_util_pct, 2)} %` : 'n/a'],
      ['CPU package energy (RAPL)', w.rapl ? `${num(w.rapl.energy_j)} J` : 'n/a'],
      ['verdict', verdictText(w.verdict)],
      ['signals used', (w.verdict.used || []).join(', ') || 'none'],
    );
    for (const s of w.verdict.signals || []) {
      rows.push([`signal: ${s.name}`, `busy ${s.busy_share != null ? num(100 * s.busy_share, 1) + ' %' : 'n/a'}; ${s.resolution}; ${s.note}`]);
    }
    for (const x of w.verdict.warnings || []) rows.push(['warning', x]);
  }
  const tbody = $('#window-table tbody');
  tbody.replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v))));
  $('#window-table').hidden = false;
}

function drawPlot(r, window) {
  const canvas = $('#plot');
  const dpr = window_dpr();
  const cssW = canvas.clientWidth || 1100;
  const cssH = 320;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, cssW, cssH);
  const pad = { l: 52, r: 48, t: 12, b: 28 };
  const W = cssW - pad.l - pad.r;
  const H = cssH - pad.t - pad.b;
  const series = r.series || [];
  const points = series.flatMap((s) => s.points || []);
  const marks = r.marks || [];
  const times = points.map((p) => p.t_mono_ns).concat(marks.map((m) => m.t_mono_ns)).filter(Number.isFinite);
  g.font = '11px system-ui, sans-serif';
  if (!times.length) {
    g.fillStyle = '#666';
    g.fillText('no samples to plot', pad.l + 8, pad.t + 20);
    return;
  }
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1);
  const maxW = Math.max(1, ...points.map((p) => p.power_max_w).filter(Number.isFinite)) * 1.05;
  const x = (t) => pad.l + ((t - t0) / (t1 - t0)) * W;
  const yW = (w) => pad.t + H - (w / maxW) * H;
  const yU = (u) => pad.t + H - (u / 100) * H;

  // The selected window, shaded.
  if (window) {
    g.fillStyle = 'rgba(255, 196, 0, 0.2)';
    g.fillRect(x(window.t0_mono_ns), pad.t, Math.max(1, x(window.t1_mono_ns) - x(window.t0_mono_ns)), H);
  }
  g.strokeStyle = '#bbb';
  g.lineWidth = 1;
  g.strokeRect(pad.l, pad.t, W, H);
  g.fillStyle = '#555';
  g.fillText(`${maxW.toFixed(0)} W`, 4, pad.t + 10);
  g.fillText('0 W', 4, pad.t + H);
  g.fillText('100 %', cssW - pad.r + 4, pad.t + 10);
  g.fillText('0 %', cssW - pad.r + 4, pad.t + H);
  g.fillText('0 s', pad.l, pad.t + H + 18);
  const span = `${((t1 - t0) / 1e9).toFixed(3)} s`;
  g.fillText(span, pad.l + W - g.measureText(span).width, pad.t + H + 18);

  // Each bucket holds a min and a max: draw the band between them, and the max as a line.
  const band = (pts, lo, hi, fy, color, fill) => {
    const ok = pts.filter((p) => Number.isFinite(p[lo]) && Number.isFinite(p[hi]));
    if (!ok.length) return;
    g.fillStyle = fill;
    g.beginPath();
    ok.forEach((p, i) => (i ? g.lineTo(x(p.t_mono_ns), fy(p[hi])) : g.moveTo(x(p.t_mono_ns), fy(p[hi]))));
    for (let i = ok.length - 1; i >= 0; i--) g.lineTo(x(ok[i].t_mono_ns), fy(ok[i][lo]));
    g.closePath();
    g.fill();
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    ok.forEach((p, i) => (i ? g.lineTo(x(p.t_mono_ns), fy(p[hi])) : g.moveTo(x(p.t_mono_ns), fy(p[hi]))));
    g.stroke();
  };
  for (const s of series) {
    const pts = s.points || [];
    band(pts, 'util_min_pct', 'util_max_pct', yU, '#2e86ab', 'rgba(46, 134, 171, 0.18)');
    band(pts, 'power_min_w', 'power_max_w', yW, '#d1495b', 'rgba(209, 73, 91, 0.18)');
  }
  // Marks.
  g.strokeStyle = '#333';
  g.fillStyle = '#333';
  g.lineWidth = 1;
  g.setLineDash([3, 3]);
  for (const m of marks) {
    if (!Number.isFinite(m.t_mono_ns)) continue;
    g.beginPath();
    g.moveTo(x(m.t_mono_ns), pad.t);
    g.lineTo(x(m.t_mono_ns), pad.t + H);
    g.stroke();
    g.save();
    g.translate(x(m.t_mono_ns) + 3, pad.t + 4);
    g.rotate(Math.PI / 2);
    g.fillText(m.label, 0, 0);
    g.restore();
  }
  g.setLineDash([]);
}

// The join (trace + recording): the summary's sections, then the pauses with what they cost
// and a timeline of the GPU's busy time (trace) and power (recording) on the trace's clock.

function renderJoin(r, timeline) {
  renderTrace(r);
  $('#join-result').hidden = false;
  const a = r.alignment;
  const notes = [];
  if (a) {
    notes.push(`Clock: ${a.source}, ts 0 = ${a.offset_ns} Unix ns`);
    if (a.trace_covered_share != null) notes.push(`the recording covers ${num(100 * a.trace_covered_share, 1)} % of the trace`);
  }
  if (r.power_source === 'trace_counters') notes.push('power from the trace\'s own counters (no recording)');
  for (const d of r.pause_devices || []) {
    notes.push(`device ${d.device}: ${num(d.pauses_found)} pauses of ≥ ${num(d.min_gap_ms_effective)} ms, ${num(d.pause_time_ms)} ms in all`);
  }
  const warn = (r.join_warnings || []).length ? ` Warnings: ${r.join_warnings.join('; ')}` : '';
  const note = r.gpu_energy_note ? ` Note: ${r.gpu_energy_note}.` : '';
  $('#join-overview').textContent = `${notes.join('; ')}.${warn}${note}`;
  drawTimeline(timeline);

  const pauses = r.pauses || [];
  const head = (sel, names) => $(sel).replaceChildren(el('tr', {}, ...names.map((h) => el('th', {}, h))));
  const cell = (v, unit, digits = 3) => el('td', { class: 'n' }, v == null ? 'n/a' : `${num(v, digits)}${unit}`);
  head('#pauses-table thead', ['device', 'start (ts)', 'duration', 'GPU energy', 'avg power', 'util', 'verdict', 'host (overlap)', 'within']);
  $('#pauses-table tbody').replaceChildren(
    ...pauses.map((p) => {
      const t = p.telemetry || {};
      const host = (p.host || []).slice(0, 3).map((h) => `${h.name} ${num(h.overlap_ms)} ms`).join(', ');
      return el('tr', {},
        el('td', { class: 'n' }, p.device), el('td', { class: 'n' }, usToText(p.start_ts_us)),
        cell(p.duration_ms, ' ms'), cell(t.gpu_energy_j, ' J'), cell(t.avg_power_w, ' W', 1), cell(t.avg_util_pct, ' %', 1),
        el('td', {}, p.telemetry ? verdictText(t.verdict) : 'n/a'),
        el('td', { class: 'op-name', title: host }, host || '—'),
        el('td', { class: 'op-name' }, (p.within || []).map((w) => w.name).join(' ⊂ ') || '—'));
    }),
  );
  const ae = (r.annotation_energy || []).slice(0, 20);
  $('#annotation-table').hidden = !ae.length;
  head('#annotation-table thead', ['category', 'name', 'n', 'duration', 'GPU energy', 'avg power', 'util', 'verdict']);
  $('#annotation-table tbody').replaceChildren(
    ...ae.map((x) => el('tr', {},
      el('td', {}, x.category), el('td', { class: 'op-name', title: x.name }, x.name), el('td', { class: 'n' }, num(x.n)),
      cell(x.duration_ms, ' ms'), cell(x.gpu_energy_j, ' J'), cell(x.avg_power_w, ' W', 1), cell(x.avg_util_pct, ' %', 1),
      el('td', {}, x.verdict || 'none'))),
  );
}

/// One lane per trace device (busy span, pauses cut out), then the power of each recorded GPU,
/// all on the trace's ts axis; pauses shaded across the whole height.
function drawTimeline(tl) {
  const canvas = $('#timeline');
  const dpr = window_dpr();
  const cssW = canvas.clientWidth || 1100;
  const lanes = tl ? tl.devices.length : 0;
  const laneH = 18;
  const powerH = 150;
  const pad = { l: 78, r: 16, t: 10, b: 26 };
  const cssH = pad.t + lanes * (laneH + 4) + 8 + powerH + pad.b;
  canvas.style.height = `${cssH}px`;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, cssW, cssH);
  g.font = '11px system-ui, sans-serif';
  if (!tl) {
    g.fillStyle = '#666';
    g.fillText('no timeline: the two files could not be put on one clock', pad.l, pad.t + 14);
    return;
  }
  const W = cssW - pad.l - pad.r;
  const x = (us) => pad.l + ((us - tl.t0_us) / (tl.t1_us - tl.t0_us)) * W;
  const plotBottom = cssH - pad.b;
  const powerTop = plotBottom - powerH;
  // Pauses, shaded over every lane and the power plot.
  g.fillStyle = 'rgba(240, 160, 40, 0.28)';
  for (const d of tl.devices) {
    for (const [s, e] of d.pauses_us) g.fillRect(x(s), pad.t, Math.max(1, x(e) - x(s)), plotBottom - pad.t);
  }
  tl.devices.forEach((d, i) => {
    const y = pad.t + i * (laneH + 4);
    g.fillStyle = '#555';
    g.fillText(`GPU ${d.device} busy`, 4, y + 13);
    g.fillStyle = '#2e86ab';
    // Busy from the first kernel to the last, with the listed pauses cut out.
    const cuts = [...d.pauses_us].sort((p, q) => p[0] - q[0]);
    let from = d.busy_us[0];
    for (const [s, e] of cuts.concat([[d.busy_us[1], d.busy_us[1]]])) {
      if (s > from) g.fillRect(x(from), y, Math.max(1, x(s) - x(from)), laneH);
      from = Math.max(from, e);
    }
  });
  // Power: min-max band and max line per GPU.
  const maxW = Math.max(1, ...tl.gpus.map((p) => p.max_w)) * 1.05;
  const yW = (w) => plotBottom - (w / maxW) * powerH;
  g.strokeStyle = '#bbb';
  g.lineWidth = 1;
  g.strokeRect(pad.l, powerTop, W, powerH);
  g.fillStyle = '#555';
  g.fillText(`${maxW.toFixed(0)} W`, 4, powerTop + 10);
  g.fillText('0 W', 4, plotBottom);
  const colors = ['#d1495b', '#8e44ad', '#e67e22', '#16a085'];
  tl.gpus.forEach((p, i) => {
    const color = colors[i % colors.length];
    g.fillStyle = color;
    g.fillText(powerLabel(tl, p), 4, powerTop + 26 + 13 * i);
    g.globalAlpha = 0.25;
    for (const [t, lo, hi] of p.power) g.fillRect(x(t) - 0.5, yW(hi), 1, Math.max(1, yW(lo) - yW(hi)));
    g.globalAlpha = 1;
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    p.power.forEach(([t, , hi], k) => (k ? g.lineTo(x(t), yW(hi)) : g.moveTo(x(t), yW(hi))));
    g.stroke();
  });
  if (!tl.gpus.some((p) => p.power.length)) {
    g.fillStyle = '#8a1c2b';
    g.fillText(`no ${tl.power_source === 'trace_counters' ? 'power from the trace\'s counters' : 'recorded power'} in the trace's time span (see the warnings above)`, pad.l + 8, powerTop + 16);
  }
  // The axis: seconds from its start, in the trace's ts.
  g.fillStyle = '#555';
  const span = (tl.t1_us - tl.t0_us) / 1e6;
  const step = niceStep(span / 8);
  for (let s = 0; s <= span + 1e-9; s += step) {
    const px = x(tl.t0_us + s * 1e6);
    g.fillRect(px, plotBottom, 1, 4);
    const label = `${+s.toFixed(6)} s`;
    g.fillText(label, Math.min(px - g.measureText(label).width / 2, cssW - pad.r - g.measureText(label).width), plotBottom + 16);
  }
}

/// A power series' label: a recorded GPU, or a trace device whose power the trace's own
/// counters carry (`"power_source": "trace_counters"`).
function powerLabel(tl, p) {
  return tl.power_source === 'trace_counters' ? `device ${p.gpu_index} power (trace)` : `GPU ${p.gpu_index} power`;
}

function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function window_dpr() {
  return Math.max(1, Math.min(3, globalThis.devicePixelRatio || 1));
}

function download() {
  const blob = new Blob([lastJson], { type: 'application/json' });
  const a = el('a', { href: URL.createObjectURL(blob), download: `${lastName}.summary.json` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---------------------------------------------------------------------------------------------
// Wiring.

/// One file is analyzed alone; a trace and a trace.csv (`.csv`, `.csv.gz`) together are joined.
/// A trace.csv may come with its sidecar (`<csv name>.meta.json`), whose power source is used.
function pick(files) {
  files = [...(files || [])];
  const isCsv = (f) => /\.csv(\.gz)?$/i.test(f.name);
  const isSidecar = (f) => /\.meta\.json$/i.test(f.name);
  const csv = files.filter(isCsv);
  const sidecars = files.filter(isSidecar);
  const traces = files.filter((f) => !isCsv(f) && !isSidecar(f));
  const sidecar = sidecars[0] || null;
  if (!files.length) return;
  current = null;
  if (files.length === 1) analyze(files[0], null);
  else if (traces.length === 2 && files.length === 2) {
    offerCompare(traces);
    status('Two traces: A and B of the comparison below. Swap them if needed, then Compare.');
  } else if (csv.length !== 1 || sidecars.length > 1 || traces.length > 1 || files.length < 2) {
    fail('drop one file, or one trace with one trace.csv (named .csv or .csv.gz) to join them; ' +
      'a trace.csv may come with its sidecar (trace.csv.meta.json)');
  } else if (sidecar && sidecar.name !== `${csv[0].name}.meta.json`) {
    fail(`${sidecar.name} is not the sidecar of ${csv[0].name}: it would be named ${csv[0].name}.meta.json`);
  } else if (traces.length) analyzeJoin(traces[0], csv[0], sidecar);
  else analyze(csv[0], null, sidecar);
}

$('#file-input').addEventListener('change', (ev) => {
  pick(ev.target.files);
  ev.target.value = '';
});
const zone = $('#drop-zone');
for (const type of ['dragenter', 'dragover']) {
  zone.addEventListener(type, (ev) => {
    ev.preventDefault();
    zone.classList.add('over');
  });
}
zone.addEventListener('dragleave', () => zone.classList.remove('over'));
zone.addEventListener('drop', (ev) => {
  ev.preventDefault();
  zone.classList.remove('over');
  const dir = droppedFolder(ev.dataTransfer);
  if (dir) {
    // Shown at once (data-state=working) while the folder is listed.
    showJob({ name: dir.name }, { kind: 'runs', source: dir.name });
    folderFiles(dir).then((files) => analyzeRuns(dir.name, files), (e) => {
      current = { file: { name: dir.name }, options: {} };
      fail(`cannot list the folder: ${e.message || e}`);
    });
  } else {
    pick(ev.dataTransfer && ev.dataTransfer.files);
  }
});
$('#runs-input').addEventListener('change', (ev) => {
  const files = [...ev.target.files].map((file) => ({ path: file.webkitRelativePath, file }));
  ev.target.value = '';
  if (files.length) analyzeRuns(files[0].path.split('/')[0], files);
});

/// The folder of a drop of exactly one folder, else null. Entries must be taken during the event.
function droppedFolder(dt) {
  const items = dt && dt.items ? [...dt.items] : [];
  const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null)).filter(Boolean);
  return entries.length === 1 && entries[0].isDirectory ? entries[0] : null;
}

/// Every file under a dropped folder entry, as [{path, file}] with paths starting with its name.
async function folderFiles(dir) {
  const out = [];
  const walk = async (d) => {
    const reader = d.createReader();
    // readEntries gives the entries in batches, then an empty one.
    for (let batch; (batch = await new Promise((ok, err) => reader.readEntries(ok, err))).length;) {
      for (const e of batch) {
        if (e.isDirectory) await walk(e);
        else out.push({ path: e.fullPath.replace(/^\//, ''), file: await new Promise((ok, err) => e.file(ok, err)) });
      }
    }
  };
  await walk(dir);
  return out;
}
// A file dropped anywhere else must not make the browser navigate away from the page.
window.addEventListener('dragover', (ev) => ev.preventDefault());
window.addEventListener('drop', (ev) => ev.preventDefault());
$('#cancel').addEventListener('click', cancel);
$('#download').addEventListener('click', download);
$('#join-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (current && current.options.kind === 'join') analyzeJoin(current.file.trace, current.file.recording, current.sidecar);
});
$('#window-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const start = $('#start-mark').value;
  const end = $('#end-mark').value;
  if (current && start && end) analyze(current.file, { start, end }, current.sidecar);
});

initCompare({
  start: analyzeDiff,
  fail: (message) => {
    current = null;
    fail(message);
  },
});

startWorker();
