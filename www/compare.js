// The compare view (`flinch-trace diff A B`, docs/diff.md): two inputs, A the baseline and B the
// change, each a trace or a summary (`trace --json --mergeable`, `merge --json`), a trace
// optionally with its trace.csv (and that recording's sidecar). The core's diff job compares them
// in the analysis worker; this module holds the two pickers and draws the result: the verdict, the
// categories, the top changes, the pauses per device, the energy per annotation, and the median
// step's breakdown in A and B side by side when the result carries steps. It computes no figure.
import { el, num, stepOptions } from './dom.js';

const $ = (sel) => document.querySelector(sel);

/// The files chosen for each side: {trace, recording, sidecar} (recording and sidecar may be null).
const chosen = { a: null, b: null };

const isCsv = (f) => /\.csv(\.gz)?$/i.test(f.name);
const isSidecar = (f) => /\.meta\.json$/i.test(f.name);

/// One side's files sorted out: one input (a trace or a summary), at most one trace.csv, and that
/// trace.csv's sidecar (`<csv name>.meta.json`). Throws an Error saying what is wrong.
export function sideFiles(files) {
  files = [...(files || [])];
  const csv = files.filter(isCsv);
  const sidecars = files.filter(isSidecar);
  const inputs = files.filter((f) => !isCsv(f) && !isSidecar(f));
  if (inputs.length !== 1 || csv.length > 1 || sidecars.length > 1) {
    throw new Error('give one trace (or summary) a side, with at most one trace.csv and its sidecar');
  }
  const [sidecar = null] = sidecars;
  const [recording = null] = csv;
  if (sidecar && (!recording || sidecar.name !== `${recording.name}.meta.json`)) {
    throw new Error(recording
      ? `${sidecar.name} is not the sidecar of ${recording.name}: it would be named ${recording.name}.meta.json`
      : `${sidecar.name}: a sidecar comes with its trace.csv`);
  }
  return { trace: inputs[0], recording, sidecar };
}

function describe(side) {
  const s = chosen[side];
  $(`#compare-${side}-files`).textContent = s
    ? [s.trace, s.recording, s.sidecar].filter(Boolean).map((f) => f.name).join(' + ')
    : 'none';
  $('#compare-run').disabled = !(chosen.a && chosen.b);
}

/// Sets a side from files; a bad set of files is reported through `fail` and leaves the side as it was.
function setSide(side, files, fail) {
  try {
    chosen[side] = sideFiles(files);
  } catch (e) {
    fail(`${side.toUpperCase()}: ${e.message}`);
  }
  describe(side);
}

/// Two traces dropped together on the main drop zone: A the first, B the second (swap to turn).
export function offerCompare(traces) {
  chosen.a = { trace: traces[0], recording: null, sidecar: null };
  chosen.b = { trace: traces[1], recording: null, sidecar: null };
  describe('a');
  describe('b');
  $('#compare').scrollIntoView({ block: 'nearest' });
}

/// The job and the options of the chosen pair, for `start(job, options)` (app.js).
function compareJob() {
  const { a, b } = chosen;
  const diff = { source_a: a.trace.name, source_b: b.trace.name, limits: 'page', ...stepOptions() };
  // The worker adds the power source a recording's sidecar names.
  if (a.recording) diff.telemetry_a = {};
  if (b.recording) diff.telemetry_b = {};
  const names = (s) => [s.trace, s.recording, s.sidecar].filter(Boolean).map((f) => f.name).join(' + ');
  const job = {
    name: `${names(a)} vs ${names(b)}`,
    files: { a: a.trace, b: b.trace, 'a.telemetry': a.recording, 'b.telemetry': b.recording },
    sidecars: { a: a.sidecar, b: b.sidecar },
  };
  return { job, options: { kind: 'diff', source: job.name, diff } };
}

/// Wires the pickers: each side's file input and drop zone, Swap, and Compare, which calls
/// `start(job, options)`; `fail(message)` reports a bad choice of files.
export function initCompare({ start, fail }) {
  for (const side of ['a', 'b']) {
    const input = $(`#compare-${side}`);
    input.addEventListener('change', (ev) => {
      setSide(side, ev.target.files, fail);
      ev.target.value = '';
    });
    const zone = $(`#compare-${side}-zone`);
    for (const type of ['dragenter', 'dragover']) {
      zone.addEventListener(type, (ev) => {
        ev.preventDefault();
        zone.classList.add('over');
      });
    }
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (ev) => {
      ev.preventDefault();
      // Not the main drop zone's handler: this drop is for one side.
      ev.stopPropagation();
      zone.classList.remove('over');
      setSide(side, ev.dataTransfer && ev.dataTransfer.files, fail);
    });
  }
  $('#compare-swap').addEventListener('click', () => {
    [chosen.a, chosen.b] = [chosen.b, chosen.a];
    describe('a');
    describe('b');
  });
  $('#compare-run').addEventListener('click', () => {
    if (!(chosen.a && chosen.b)) return;
    const { job, options } = compareJob();
    start(job, options);
  });
  describe('a');
  describe('b');
}

// ---------------------------------------------------------------------------------------------
// The result (DiffResult in core/src/diff/compare.rs).

const ms = (x) => (x == null ? 'n/a' : `${num(x)} ms`);
const signed = (x, unit = ' ms') => (x == null ? 'n/a' : `${x > 0 ? '+' : ''}${num(x)}${unit}`);
const ratio = (x) => (x == null ? '–' : `${num(x)}x`);
const cell = (text) => el('td', { class: 'n' }, text);

function table(sel, heads, rows) {
  $(`${sel} thead`).replaceChildren(el('tr', {}, ...heads.map((h) => el('th', {}, h))));
  $(`${sel} tbody`).replaceChildren(...rows);
}

function sideText(name, s) {
  const ranks = s.ranks > 1 ? `${num(s.ranks)} ranks, ` : '';
  const p50 = s.p50 === 'exact' ? 'p50 exact' : `p50 ${s.p50} (within ${num(100 * s.p50_relative_error, 4)} %)`;
  return `${name}: ${s.source} (${s.kind}, ${ranks}${num(s.events)} events, ${p50}${s.truncated ? ', truncated' : ''})`;
}

/// Draws the comparison.
export function renderDiff(r) {
  $('#diff-result').hidden = false;
  $('#diff-verdict').textContent = r.verdict;
  const c = r.ops_compared || {};
  $('#diff-overview').textContent = `${sideText('A', r.a)}; ${sideText('B', r.b)}. ` +
    `${num(c.both)} ops in both, ${num(c.only_a)} only in A, ${num(c.only_b)} only in B; ` +
    `threshold ${num(r.threshold_pct)} %.`;

  renderSteps(r.steps);

  const catRow = (x, total) => el('tr', total ? { class: 'total' } : {},
    el('td', {}, x.name), cell(ms(x.busy_union_ms_a)), cell(ms(x.busy_union_ms_b)), cell(signed(x.delta_busy_union_ms)),
    cell(ratio(x.ratio_busy_union)), cell(ms(x.duration_sum_ms_a)), cell(ms(x.duration_sum_ms_b)),
    cell(signed(x.delta_duration_sum_ms)), cell(`${num(x.events_a)} / ${num(x.events_b)}`));
  table('#diff-categories',
    ['category', 'busy A', 'busy B', 'Δ busy', 'B / A', 'sum A', 'sum B', 'Δ sum', 'events A / B'],
    [...(r.categories || []).map((x) => catRow(x, false)), catRow(r.totals, true)]);

  const side = (o, k) => (o ? o[k] : null);
  const status = { both: '', only_a: 'gone in B', only_b: 'new in B' };
  table('#diff-ops',
    ['Δ sum', 'B / A', 'category', 'name', 'n A', 'n B', 'sum A', 'sum B', 'mean A µs', 'mean B µs', 'p50 A µs', 'p50 B µs'],
    (r.ops || []).map((o) => el('tr', { class: `op-${o.status}` },
      cell(signed(o.delta_sum_ms)), cell(o.status === 'both' ? ratio(o.ratio_sum) : status[o.status]),
      el('td', {}, o.category), el('td', { class: 'op-name', title: o.name }, o.name),
      cell(num(side(o.a, 'n'))), cell(num(side(o.b, 'n'))), cell(ms(side(o.a, 'sum_ms'))), cell(ms(side(o.b, 'sum_ms'))),
      cell(num(side(o.a, 'mean_us'))), cell(num(side(o.b, 'mean_us'))),
      cell(num(side(o.a, 'p50_us'))), cell(num(side(o.b, 'p50_us'))))));

  const p = r.pauses;
  $('#diff-pauses-wrap').hidden = !(p && p.devices.length);
  $('#diff-pauses-note').textContent = !p
    ? 'No pause figures: both inputs are summaries.'
    : p.devices.length
      ? `Idle gaps of ${num(p.min_gap_ms_a ?? p.min_gap_ms_b)} ms or more between a device's first and last GPU event.`
      : 'No busy GPU event in the traces compared: no pauses.';
  const pauseCells = (d) => (d ? [cell(num(d.n)), cell(ms(d.total_ms))] : [cell('–'), cell('–')]);
  table('#diff-pauses', ['device', 'pauses A', 'total A', 'pauses B', 'total B'],
    (p ? p.devices : []).map((d) => el('tr', {}, cell(num(d.device)), ...pauseCells(d.a), ...pauseCells(d.b))));

  const energy = r.energy || null;
  $('#diff-energy-wrap').hidden = !energy;
  table('#diff-energy', ['category', 'name', 'spans A', 'spans B', 'GPU energy A', 'GPU energy B', 'Δ'],
    (energy || []).map((e) => el('tr', {}, el('td', {}, e.category), el('td', { class: 'op-name', title: e.name }, e.name),
      cell(num(e.n_a)), cell(num(e.n_b)), cell(e.gpu_energy_j_a == null ? 'n/a' : `${num(e.gpu_energy_j_a)} J`),
      cell(e.gpu_energy_j_b == null ? 'n/a' : `${num(e.gpu_energy_j_b)} J`), cell(signed(e.delta_j, ' J')))));

  const warnings = r.warnings || [];
  $('#diff-warnings').replaceChildren(...warnings.map((w) => el('li', {}, w)));
  $('#diff-warnings').hidden = !warnings.length;
}

/// The step comparison (`StepsDiff` in core/src/diff/steps.rs): its line, the median step's
/// breakdown in A and B side by side (one stacked bar each, on one scale, the parts in the order
/// the result lists them), and a row per part, the most moved first (a part zero in every step of
/// both runs is named in a note instead). Nothing when the result has
/// no steps (absent, or null when a side had none: the warnings say why).
function renderSteps(steps) {
  const box = $('#diff-steps');
  box.hidden = !steps;
  $('#diff-step-line').textContent = '';
  $('#diff-step-legend').replaceChildren();
  $('#diff-step-bars').replaceChildren();
  $('#diff-step-parts tbody').replaceChildren();
  $('#diff-step-note').textContent = '';
  if (!steps) return;
  const interval = (ci, unit) => (ci ? `, 95 % CI ${signed(ci[0], unit)} to ${signed(ci[1], unit)}` : ', no interval');
  const words = (significant) => (significant ? 'a significant change' : 'no significant change');
  let line = `Median step ${ms(steps.median_ms_b)} in B vs ${ms(steps.median_ms_a)} in A ` +
    `(${num(steps.n_b)} and ${num(steps.n_a)} steps; ${signed(steps.change_pct, ' %')}${interval(steps.ci95_pct, ' %')}): ` +
    `${words(steps.significant)}.`;
  const e = steps.energy;
  if (e) {
    line += ` Energy per step ${num(e.median_j_b)} J in B vs ${num(e.median_j_a)} J in A ` +
      `(${signed(e.change_pct, ' %')}${interval(e.ci95_pct, ' %')}): ${words(e.significant)}.`;
    if (e.per_step) {
      line += ` The same ${num(e.per_step.steps)} steps: ${num(e.per_step.total_j_b)} J vs ${num(e.per_step.total_j_a)} J ` +
        `(${signed(e.per_step.change_pct, ' %')}).`;
    }
  }
  $('#diff-step-line').textContent = line;
  const a = steps.breakdown_ms_median_a || {};
  const b = steps.breakdown_ms_median_b || {};
  const parts = Object.keys(a);
  // One scale for both bars (drawing only: the figures shown are the result's).
  const width = (x) => parts.reduce((sum, k) => sum + (x[k] || 0), 0);
  const longest = Math.max(1e-9, width(a), width(b));
  const bar = (label, x, median) => el('div', { class: 'bar-row diff-step-row' },
    el('div', { class: 'bar-label' }, label),
    el('div', { class: 'bar-track stacked' }, ...parts.filter((k) => x[k] > 0).map((k) =>
      el('div', { class: `seg part-${k}`, style: `width:${(100 * x[k]) / longest}%`, title: `${k} ${num(x[k])} ms` }))),
    el('div', { class: 'bar-figures' }, `median step ${ms(median)}`));
  // The legend names the parts drawn; a part zero in every step of both runs (a CPU trace's
  // kernel time) is left out of the legend and the table, and the note says so.
  const drawn = parts.filter((k) => a[k] > 0 || b[k] > 0);
  $('#diff-step-legend').replaceChildren(...drawn.flatMap((k) => [el('span', { class: `key part-${k}` }), `${k} `]));
  $('#diff-step-bars').replaceChildren(bar('A', a, steps.median_ms_a), bar('B', b, steps.median_ms_b));
  const shown = (steps.parts || []).filter((p) => p.total_ms_a > 0 || p.total_ms_b > 0);
  const absent = (steps.parts || []).filter((p) => !shown.includes(p)).map((p) => p.part);
  $('#diff-step-note').textContent = 'Each bar: every part\'s median over that run\'s steps, stacked on one scale ' +
    '(medians of parts do not add up to the median step). Rows: the parts, the most moved first' +
    (absent.length ? `; zero in every step of both runs: ${absent.join(', ')}.` : '.');
  $('#diff-step-parts tbody').replaceChildren(...shown.map((p) => el('tr', {},
    el('td', {}, p.part), cell(ms(p.median_ms_a)), cell(ms(p.median_ms_b)), cell(signed(p.delta_median_ms)),
    cell(signed(p.delta_mean_ms)), cell(movedText(p)))));
}

/// In how many steps a part moved, and which (the result lists the first few, as the verdict does).
function movedText(p) {
  const count = `${num(p.steps_moved)} of ${num(p.of_steps)} ${p.moved_in.toUpperCase()} steps`;
  const listed = p.moved_steps || [];
  if (!listed.length) return count;
  return `${count}: ${listed.map((i) => `#${i}`).join(', ')}${p.steps_moved > listed.length ? ', …' : ''}`;
}
