// The analysis worker: streams a File through the wasm Analyzer and reports progress.
// Messages in:  {type: 'analyze', file, options}   (options: see AnalyzerOptions in core/src/analyzer.rs)
// Messages out: {type: 'ready', memoryBytes}
//               {type: 'progress', bytes, total, memoryBytes}
//               {type: 'done', json, bytes, seconds, memoryBeforeBytes, memoryBytes}
//               {type: 'error', message, bytes}
// Cancel = the page terminates this worker and starts a fresh one.
import init, { Analyzer } from './pkg/flinch_wasm.js';

const PIECE_BYTES = 256 * 1024;
let wasm;
const ready = init().then(
  (exports) => {
    wasm = exports;
    postMessage({ type: 'ready', memoryBytes: memoryBytes() });
  },
  (e) => {
    postMessage({ type: 'error', message: `could not load the analyzer: ${e.message || e}`, bytes: 0 });
    throw e;
  },
);
const memoryBytes = () => wasm.memory.buffer.byteLength;

async function analyze(file, options) {
  await ready;
  const memoryBeforeBytes = memoryBytes();
  const t0 = performance.now();
  let bytes = 0;
  let analyzer;
  try {
    analyzer = new Analyzer(JSON.stringify(options));
    const reader = file.stream().getReader();
    let lastPost = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // Pieces of at most 256 KiB: each write copies its piece into wasm memory, and bounded
      // piece sizes let the allocator reuse the same blocks (File.stream() chunks vary up to 2 MiB).
      for (let off = 0; off < value.length; off += PIECE_BYTES) {
        analyzer.write(value.subarray(off, Math.min(value.length, off + PIECE_BYTES)));
      }
      bytes += value.length;
      const now = performance.now();
      if (now - lastPost > 100) {
        lastPost = now;
        postMessage({ type: 'progress', bytes, total: file.size, memoryBytes: memoryBytes() });
      }
    }
    const json = analyzer.end();
    const seconds = (performance.now() - t0) / 1000;
    postMessage({ type: 'done', json, bytes, seconds, memoryBeforeBytes, memoryBytes: memoryBytes() });
  } catch (e) {
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e), bytes });
  } finally {
    if (analyzer) analyzer.free();
  }
}

onmessage = (ev) => {
  if (ev.data.type === 'analyze') analyze(ev.data.file, ev.data.options);
};

