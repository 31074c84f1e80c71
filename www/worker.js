// The analysis worker: takes the (decoded) bytes from the inflate worker over a MessagePort,
// feeds them to the wasm Analyzer, and reports the result to the page; or summarizes a runs
// folder: the core asks for its files one by one and this worker only moves their bytes.
// In:  {type: 'analyze', options, port, sidecar?}   (options: see AnalyzerOptions in
//      core/src/analyzer/; sidecar: the trace.csv's .meta.json File)
//      {type: 'summarize', runs, files: [{path, file}]}   (paths start with `runs/`)
//      {type: 'join', options, recording, trace, sidecar?}   (Files; options: TraceJoinOptions in
//      core/src/join/options.rs; the core reads the recording, then the trace once, or again:
//      whole, or for a plain trace only the byte ranges the core names)
//      {type: 'diff', options, files, sidecars}   (options: DiffJobOptions in core/src/diff/options.rs;
//      files: {a, b, 'a.telemetry'?, 'b.telemetry'?}, Files by the names the core's diff job asks for;
//      sidecars: {a?, b?}, each recording's .meta.json)
// A sidecar's power source is read by the core's rule (the CLI's) into the `power_source` option.
// Out: {type: 'ready', memoryBytes}
//      {type: 'progress', bytes, total}   (summarize, join, diff)
//      {type: 'join', options, trace}   (options.trace_alone: a trace with its own power counters)
//      {type: 'done', json, bytes, seconds, memoryBeforeBytes, memoryBytes, message?, timeline?, powerSource?,
//       powerCounters?}   (powerCounters: the analyzed trace carries GPU power counters)
//      {type: 'error', message, bytes, fatal?}  (fatal: the analyzer could not load)
// Cancel = the page terminates both workers and starts fresh ones.
import init, { Analyzer, Diff, RunsFolder, TraceJoin, sidecarPowerSource } from './pkg/flinch_wasm.js';
import { simdNote } from './simd.js';

let wasm;
const ready = init().then(
  (exports) => {
    wasm = exports;
    postMessage({ type: 'ready', memoryBytes: memoryBytes() });
  },
  (e) => {
    // `fatal`: a new worker would fail the same way, so the page must not start one.
    postMessage({
      type: 'error',
      fatal: true,
      message: `could not load the analyzer: ${e.message || e}${simdNote()}`,
      bytes: 0,
    });
    throw e;
  },
);
const memoryBytes = () => wasm.memory.buffer.byteLength;

/// Larger than any sidecar the recorder writes (a few kB).
const MAX_SIDECAR_BYTES = 16 << 20;

/// The power source a sidecar File names (`instant`, `average` or `unknown`), by the core's rule.
async function sidecarSource(file) {
  if (file.size > MAX_SIDECAR_BYTES) throw new Error(`${file.name}: larger than 16 MiB, not a sidecar`);
  return sidecarPowerSource(new Uint8Array(await file.arrayBuffer()));
}

async function analyze(options, port, sidecar) {
  await ready;
  const memoryBeforeBytes = memoryBytes();
  const t0 = performance.now();
  let analyzer = null;
  const fail = (e) => {
    port.close();
    if (analyzer) analyzer.free();
    analyzer = null;
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e) });
  };
  // The port's messages wait (queued) until `onmessage` is set.
  let powerSource;
  try {
    if (sidecar) options = { ...options, power_source: (powerSource = await sidecarSource(sidecar)) };
  } catch (e) {
    fail(e);
    return;
  }
  port.onmessage = (ev) => {
    const m = ev.data;
    try {
      if (m.type === 'begin') {
        const json = JSON.stringify(options);
        analyzer = m.gzip ? Analyzer.decoded(json, true) : new Analyzer(json);
      } else if (m.type === 'data') {
        try {
          if (analyzer) analyzer.write(new Uint8Array(m.buf, m.offset, m.len));
        } finally {
          // The buffer goes back to the inflate worker for reuse (write copied it into wasm).
          port.postMessage({ type: 'ack', buf: m.buf }, [m.buf]);
        }
      } else if (m.type === 'end' && analyzer) {
        if (m.cut != null) analyzer.noteCutGzip(m.cut);
        if (m.warning) analyzer.noteGzipWarning(m.warning);
        const json = analyzer.end();
        // A trace that carries GPU power counters: the page joins it with them next.
        const powerCounters = analyzer.powerCounters();
        analyzer.free();
        analyzer = null;
        port.close();
        const seconds = (performance.now() - t0) / 1000;
        postMessage({ type: 'done', json, bytes: m.bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes(), powerSource, powerCounters });
      }
    } catch (e) {
      fail(e);
    }
  };
}

async function summarize(runs, files) {
  await ready;
  const memoryBeforeBytes = memoryBytes();
  const t0 = performance.now();
  const byPath = new Map(files.map((f) => [f.path, f.file]));
  const total = files.reduce((n, f) => n + f.file.size, 0);
  let bytes = 0;
  let folder = null;
  try {
    folder = new RunsFolder(runs, files.map((f) => f.path), false);
    for (let path = folder.nextFile(); path !== undefined; path = folder.nextFile()) {
      try {
        const reader = byPath.get(path).stream().getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          folder.write(value);
          bytes += value.length;
        }
      } catch (e) {
        folder.readError(e && e.message ? e.message : String(e));
      }
      folder.endFile();
      postMessage({ type: 'progress', bytes, total });
    }
    const json = folder.finish();
    const message = folder.message();
    const seconds = (performance.now() - t0) / 1000;
    postMessage({ type: 'done', json, message, bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes() });
  } catch (e) {
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e), bytes });
  } finally {
    if (folder) folder.free();
  }
}

/// Power points per GPU on the page's timeline (about one per CSS pixel).
const TIMELINE_BUCKETS = 1200;

async function join(options, files) {
  await ready;
  const memoryBeforeBytes = memoryBytes();
  const t0 = performance.now();
  // The trace is read a second time only when the core asks for it.
  // No recording for a trace alone (`trace_alone`): its own power counters stand in for one.
  let total = (files.recording ? files.recording.size : 0) + files.trace.size;
  let bytes = 0;
  let lastPost = 0;
  let j = null;
  let powerSource;
  try {
    if (files.sidecar) options = { ...options, power_source: (powerSource = await sidecarSource(files.sidecar)) };
    j = new TraceJoin(JSON.stringify(options));
    if (files.recording) j.recordingSizeHint(files.recording.size);
    // The core says which file it reads next: the recording, then the trace once or twice.
    let traceReads = 0;
    const give = async (blob) => {
      const reader = blob.stream().getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        j.write(value);
        bytes += value.length;
        const now = performance.now();
        if (now - lastPost > 100) {
          lastPost = now;
          postMessage({ type: 'progress', bytes, total });
        }
      }
    };
    for (let next = j.nextFile(); next !== undefined; next = j.nextFile()) {
      // A later read of a plain trace may need only some byte ranges (around listed pauses).
      const ranges = next === 'trace' && ++traceReads > 1 ? j.wantedRanges() : undefined;
      if (ranges) {
        for (let k = 0; k < ranges.length; k += 2) total += ranges[k + 1] - ranges[k];
        for (let k = 0; k < ranges.length; k += 2) {
          j.seek(ranges[k]);
          await give(files.trace.slice(ranges[k], ranges[k + 1]));
        }
      } else {
        if (next === 'trace' && traceReads > 1) total += files.trace.size;
        await give(files[next]);
      }
      j.endFile();
    }
    const json = j.resultJson();
    const timeline = j.timelineJson(TIMELINE_BUCKETS);
    const seconds = (performance.now() - t0) / 1000;
    postMessage({ type: 'done', json, timeline, bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes(), powerSource });
  } catch (e) {
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e), bytes });
  } finally {
    if (j) j.free();
  }
}

/// Two runs compared (`flinch-trace diff A B --json`): the core names each file it reads next (A's
/// recording, A, B's recording, B) and, where it needs only parts of one again, their byte ranges.
async function diff(options, files, sidecars) {
  await ready;
  const memoryBeforeBytes = memoryBytes();
  const t0 = performance.now();
  let total = Object.values(files).reduce((n, f) => n + (f ? f.size : 0), 0);
  let bytes = 0;
  let lastPost = 0;
  let d = null;
  const sources = [];
  try {
    for (const side of ['a', 'b']) {
      if (sidecars[side] && options[`telemetry_${side}`]) {
        const source = await sidecarSource(sidecars[side]);
        options = { ...options, [`telemetry_${side}`]: { power_source: source } };
        sources.push(`${side.toUpperCase()} ${source}`);
      }
    }
    d = new Diff(JSON.stringify(options));
    const give = async (blob) => {
      const reader = blob.stream().getReader();
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (e) {
          // The core fails the job with this message, naming the file (readError throws it).
          d.readError(e && e.message ? e.message : String(e));
          throw e;
        }
        if (chunk.done) break;
        d.write(chunk.value);
        bytes += chunk.value.length;
        const now = performance.now();
        if (now - lastPost > 100) {
          lastPost = now;
          postMessage({ type: 'progress', bytes, total });
        }
      }
    };
    const reads = {};
    for (let next = d.nextFile(); next !== undefined; next = d.nextFile()) {
      const file = files[next];
      if (!file) throw new Error(`the comparison needs ${next}, which was not given`);
      reads[next] = (reads[next] || 0) + 1;
      const ranges = d.wantedRanges();
      if (ranges) {
        for (let k = 0; k < ranges.length; k += 2) total += ranges[k + 1] - ranges[k];
        for (let k = 0; k < ranges.length; k += 2) {
          d.seek(ranges[k]);
          await give(file.slice(ranges[k], ranges[k + 1]));
        }
      } else {
        if (reads[next] > 1) total += file.size;
        await give(file);
      }
      d.endFile();
    }
    const json = d.resultJson();
    const seconds = (performance.now() - t0) / 1000;
    const powerSource = sources.length ? sources.join(', ') : undefined;
    postMessage({ type: 'done', json, bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes(), powerSource });
  } catch (e) {
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e), bytes });
  } finally {
    if (d) d.free();
  }
}

onmessage = (ev) => {
  if (ev.data.type === 'analyze') analyze(ev.data.options, ev.data.port, ev.data.sidecar);
  else if (ev.data.type === 'summarize') summarize(ev.data.runs, ev.data.files);
  else if (ev.data.type === 'join') {
    join(ev.data.options, { recording: ev.data.recording, trace: ev.data.trace, sidecar: ev.data.sidecar });
  } else if (ev.data.type === 'diff') diff(ev.data.options, ev.data.files, ev.data.sidecars);
};
