// The analysis worker: takes the (decoded) bytes from the inflate worker over a MessagePort,
// feeds them to the wasm Analyzer, and reports the result to the page.
// In:  {type: 'analyze', options, port}   (options: see AnalyzerOptions in core/src/analyzer.rs)
// Out: {type: 'ready', memoryBytes}
//      {type: 'done', json, bytes, seconds, memoryBeforeBytes, memoryBytes}
//      {type: 'error', message, bytes, fatal?}  (fatal: the analyzer could not load)
// Cancel = the page terminates both workers and starts fresh ones.
import init, { Analyzer } from './pkg/flinch_wasm.js';
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

async function analyze(options, port) {
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
        if (m.cut) analyzer.noteCutGzip(m.cut);
        if (m.warning) analyzer.noteGzipWarning(m.warning);
        const json = analyzer.end();
        analyzer.free();
        analyzer = null;
        port.close();
        const seconds = (performance.now() - t0) / 1000;
        postMessage({ type: 'done', json, bytes: m.bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes() });
      }
    } catch (e) {
      fail(e);
    }
  };
}

onmessage = (ev) => {
  if (ev.data.type === 'analyze') analyze(ev.data.options, ev.data.port);
};
