// The page: file input / drop zone -> analysis worker -> tables, plot, result JSON.
// Automation hooks (SPEC §7): <body data-state="loading|ready|working|done|error">, #result-json, #error.
// Measurements for tests and users: body data-wasm-memory-before-bytes / data-wasm-memory-bytes
// (WebAssembly memory size before and after a run), data-bytes, data-seconds.

const $ = (sel) => document.querySelector(sel);
const body = document.body;

let worker = null;
let workerReady = false;
let pending = null; // {file, options} waiting for the worker
let current = null; // {file, options, t0}
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

function startWorker() {
  workerReady = false;
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (ev) => onWorkerMessage(ev.data);
  worker.onerror = (ev) => {
    ev.preventDefault();
    fail(`the analysis worker failed: ${ev.message || 'unknown error'}`);
  };
}

function onWorkerMessage(msg) {
  switch (msg.type) {
    case 'ready':
      workerReady = true;
      body.dataset.wasmMemoryBytes = msg.memoryBytes;
      if (pending) {
        const p = pending;
        pending = null;
        run(p.file, p.options);
      } else if (body.dataset.state === 'loading') {
        setState('ready');
        status('Ready. Choose or drop a file.');
      }
      break;
    case 'progress':
      showProgress(msg.bytes, msg.total);
      body.dataset.wasmMemoryBytes = msg.memoryBytes;
      break;
    case 'done':
      finish(msg);
      break;
    case 'error':
      fail(msg.message, msg.bytes);
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

/// Starts an analysis of `file`; `window` = {start, end} mark labels for a trace.csv window.
function analyze(file, window) {
  const options = { kind: 'auto', limits: 'bounded', source: file.name };
  if (window) Object.assign(options, window);
  if (!window) recording = null;
  if (workerReady) run(file, options);
  else pending = { file, options };
}

function run(file, options) {
  current = { file, options, t0: performance.now() };
  lastName = file.name;
  setState('working');
  showError('');
  status(`Analyzing ${file.name}…`);
  $('#job').hidden = false;
  $('#job-name').textContent = file.name;
  $('#progress').value = 0;
  $('#job-stats').textContent = '';
  $('#cancel').disabled = false;
  if (!options.start) {
    $('#csv-result').hidden = true;
    $('#trace-result').hidden = true;
    $('#output').hidden = true;
  }
  worker.postMessage({ type: 'analyze', file, options });
}

function finish(msg) {
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
    `WebAssembly memory ${fmtBytes(msg.memoryBeforeBytes)} before, ${fmtBytes(msg.memoryBytes)} after`;
  $('#job-stats').textContent = stats;
  $('#run-stats').textContent = stats;
  try {
    render(result, current.options);
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
  const where = current ? `${current.file.name}: ` : '';
  showError(`${where}${message}`);
  status('The analysis failed.');
  if ($('#cancel')) $('#cancel').disabled = true;
  if (bytes !== undefined) body.dataset.bytes = bytes;
  setState('error');
}

function cancel() {
  worker.terminate();
  startWorker();
  pending = null;
  $('#cancel').disabled = true;
  status(`Cancelled ${current ? current.file.name : ''}. Ready.`);
  setState('ready');
}

// ---------------------------------------------------------------------------------------------
// Rendering. The result shapes are those of core (TraceSummary / trace.csv analysis); the page
// only draws what is there and never recomputes a figure.

function render(result, options) {
  if (isTraceSummary(result)) renderTrace(result);
  else if (options.start) renderWindow(result);
  else renderRecording(result);
}

function isTraceSummary(r) {
  return r && typeof r === 'object' && 'largest_ops_by_duration_sum' in r;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'style') e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c ?? ''));
  return e;
}

function num(x, digits = 3) {
  if (x === null || x === undefined) return 'n/a';
  if (typeof x !== 'number') return String(x);
  return Number.isInteger(x) ? x.toLocaleString('en-US') : x.toLocaleString('en-US', { maximumFractionDigits: digits });
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
  const events = cats.reduce((s, [, c]) => s + (c.events || 0), 0);
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

// trace.csv: the recording-level result and the window result. The field names follow
// core/src/window.rs; anything missing is simply not drawn.

function renderRecording(r) {
  recording = r;
  $('#csv-result').hidden = false;
  const marks = r.marks || [];
  const series = r.series || [];
  $('#csv-overview').textContent = `${r.source ?? ''} ${marks.length} marks, ${series.length} GPU series.`;
  fillPickers(marks);
  drawPlot(r, null);
  $('#window-table').hidden = true;
}

function markLabel(m) {
  return typeof m === 'string' ? m : m.label;
}

function markTime(m) {
  return typeof m === 'object' ? Number(m.t_mono_ns ?? m.ts_ns ?? m.t_ns) : NaN;
}

function fillPickers(marks) {
  const labels = [...new Set(marks.map(markLabel))];
  for (const [sel, idx] of [[$('#start-mark'), 0], [$('#end-mark'), labels.length - 1]]) {
    sel.replaceChildren(...labels.map((l) => el('option', { value: l }, l)));
    if (labels.length) sel.value = labels[Math.max(0, idx)];
  }
  $('#analyze-window').disabled = labels.length < 2;
}

function renderWindow(w) {
  if (recording) drawPlot(recording, current.options);
  const rows = windowRows(w);
  const tbody = $('#window-table tbody');
  tbody.replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v))));
  $('#window-table').hidden = false;
}

/// Flattens the window result into (label, value) rows: the headline figures first.
function windowRows(w) {
  const rows = [];
  const walk = (prefix, v) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else if (Array.isArray(v)) {
      rows.push([prefix, v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : x)).join(', ')]);
    } else {
      rows.push([prefix, num(v, 6)]);
    }
  };
  walk('', w);
  const first = (k) => /duration|energy|util|verdict/.test(k) ? 0 : 1;
  return rows.sort((a, b) => first(a[0]) - first(b[0]));
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
  const times = points.map((p) => Number(p.t_ns ?? p[0])).concat(marks.map(markTime)).filter(Number.isFinite);
  if (!times.length) {
    g.fillStyle = '#666';
    g.fillText('no samples to plot', pad.l + 8, pad.t + 20);
    return;
  }
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1);
  const maxW = Math.max(1, ...points.map((p) => Number(p.power_w_max ?? p.power_w ?? 0)).filter(Number.isFinite));
  const x = (t) => pad.l + ((t - t0) / (t1 - t0)) * W;
  const yW = (w) => pad.t + H - (w / maxW) * H;
  const yU = (u) => pad.t + H - (u / 100) * H;

  // The selected window, shaded.
  if (window && window.start) {
    const ts = marks.find((m) => markLabel(m) === window.start);
    const te = marks.find((m) => markLabel(m) === window.end);
    if (ts && te) {
      g.fillStyle = 'rgba(255, 196, 0, 0.22)';
      g.fillRect(x(markTime(ts)), pad.t, x(markTime(te)) - x(markTime(ts)), H);
    }
  }
  // Axes.
  g.strokeStyle = '#bbb';
  g.strokeRect(pad.l, pad.t, W, H);
  g.fillStyle = '#555';
  g.font = '11px system-ui, sans-serif';
  g.fillText(`${maxW.toFixed(0)} W`, 4, pad.t + 10);
  g.fillText('0', pad.l - 12, pad.t + H);
  g.fillText('100 %', cssW - pad.r + 4, pad.t + 10);
  g.fillText(`${((t1 - t0) / 1e9).toFixed(3)} s`, pad.l + W - 50, pad.t + H + 18);
  g.fillText('0 s', pad.l, pad.t + H + 18);

  const line = (pts, fy, color) => {
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    let started = false;
    for (const [t, v] of pts) {
      if (!Number.isFinite(v)) {
        started = false;
        continue;
      }
      if (started) g.lineTo(x(t), fy(v));
      else g.moveTo(x(t), fy(v));
      started = true;
    }
    g.stroke();
  };
  for (const s of series) {
    const pts = s.points || [];
    line(pts.map((p) => [Number(p.t_ns ?? p[0]), Number(p.power_w ?? p[1])]), yW, '#d1495b');
    line(pts.map((p) => [Number(p.t_ns ?? p[0]), Number(p.util_pct ?? p[2])]), yU, '#2e86ab');
  }
  // Marks.
  g.strokeStyle = '#333';
  g.setLineDash([3, 3]);
  g.fillStyle = '#333';
  for (const m of marks) {
    const t = markTime(m);
    if (!Number.isFinite(t)) continue;
    g.beginPath();
    g.moveTo(x(t), pad.t);
    g.lineTo(x(t), pad.t + H);
    g.stroke();
    g.save();
    g.translate(x(t) + 3, pad.t + 4);
    g.rotate(Math.PI / 2);
    g.fillText(markLabel(m), 0, 0);
    g.restore();
  }
  g.setLineDash([]);
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

function pick(file) {
  if (file) analyze(file, null);
}

$('#file-input').addEventListener('change', (ev) => {
  pick(ev.target.files[0]);
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
  pick(ev.dataTransfer && ev.dataTransfer.files[0]);
});
// A file dropped anywhere else must not make the browser navigate away from the page.
window.addEventListener('dragover', (ev) => ev.preventDefault());
window.addEventListener('drop', (ev) => ev.preventDefault());
$('#cancel').addEventListener('click', cancel);
$('#download').addEventListener('click', download);
$('#window-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const start = $('#start-mark').value;
  const end = $('#end-mark').value;
  if (current && start && end) analyze(current.file, { start, end });
});

startWorker();
