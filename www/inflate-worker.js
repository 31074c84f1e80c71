// The read/inflate worker: streams the File, and for gzip inflates it with the core GzDecoder
// (wasm Inflater), sending decoded buffers to the analysis worker over a MessagePort, so that
// inflating and scanning run on two cores. Plain files pass through. At most IN_FLIGHT buffers
// are unacknowledged at a time, so memory stays bounded whatever the file size.
// In:  {type: 'start', file, port}
// Out (page): {type: 'ready', memoryBytes}, {type: 'progress', bytes, total, memoryBytes},
//             {type: 'error', message, bytes}
// Out (port): {type: 'begin', gzip}, {type: 'data', buf, offset, len}, {type: 'end', cut}
// In (port):  {type: 'ack', buf} (the data buffer handed back, for reuse)
import init, { Inflater } from './pkg/flinch_wasm.js';

const PIECE_BYTES = 256 * 1024;
const IN_FLIGHT = 4;
let wasm;
const ready = init().then((exports) => {
  wasm = exports;
  postMessage({ type: 'ready', memoryBytes: wasm.memory.buffer.byteLength });
});

async function run(file, port) {
  await ready;
  let inflight = 0;
  let wake = null;
  // Buffers for decoded bytes come back with their ack and are reused: allocating (and zeroing)
  // a fresh 1 MiB ArrayBuffer per piece costs more CPU than the copy into it.
  const pool = [];
  port.onmessage = (ev) => {
    if (ev.data.type === 'ack') {
      inflight--;
      if (poolBytes && ev.data.buf && ev.data.buf.byteLength === poolBytes) pool.push(ev.data.buf);
      if (wake) { const w = wake; wake = null; w(); }
    }
  };
  const waitRoom = async () => {
    while (inflight >= IN_FLIGHT) await new Promise((r) => { wake = r; });
    inflight++;
  };
  // A chunk of a plain file: its own buffer moves to the analysis worker.
  const send = async (bytes) => {
    await waitRoom();
    port.postMessage({ type: 'data', buf: bytes.buffer, offset: bytes.byteOffset, len: bytes.length }, [bytes.buffer]);
  };
  // `len` decoded bytes at the inflater's output: copied into a pooled buffer.
  const sendDecoded = async (len) => {
    await waitRoom();
    const buf = pool.pop() || new ArrayBuffer(poolBytes);
    new Uint8Array(buf, 0, len).set(new Uint8Array(wasm.memory.buffer, inflater.outputPtr(), len));
    port.postMessage({ type: 'data', buf, offset: 0, len }, [buf]);
  };
  let poolBytes = 0;
  let bytes = 0;
  let inflater = null;
  let lastPost = 0;
  try {
    const reader = file.stream().getReader();
    let first = true;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (first) {
        first = false;
        const gzip = value.length >= 2 && value[0] === 0x1f && value[1] === 0x8b;
        if (gzip) {
          inflater = new Inflater();
          poolBytes = inflater.outputCapacity();
        }
        port.postMessage({ type: 'begin', gzip });
      }
      // Counted before `send`: it transfers the chunk's buffer, which leaves `value` empty.
      const read = value.length;
      if (!inflater) {
        await send(value);
      } else {
        for (let off = 0; off < value.length; off += PIECE_BYTES) {
          let rest = value.subarray(off, Math.min(value.length, off + PIECE_BYTES));
          for (;;) {
            const n = inflater.inflate(rest);
            rest = rest.subarray(inflater.consumed());
            if (n) await sendDecoded(n);
            if (n < inflater.outputCapacity() && rest.length === 0) break;
          }
        }
      }
      bytes += read;
      const now = performance.now();
      if (now - lastPost > 100) {
        lastPost = now;
        postMessage({ type: 'progress', bytes, total: file.size, memoryBytes: wasm.memory.buffer.byteLength });
      }
    }
    if (first) port.postMessage({ type: 'begin', gzip: false });
    const cut = inflater ? inflater.end() : null;
    const warning = inflater ? inflater.warning() : null;
    port.postMessage({ type: 'end', cut: cut ?? null, warning: warning ?? null, bytes });
  } catch (e) {
    postMessage({ type: 'error', message: e && e.message ? e.message : String(e), bytes });
  } finally {
    if (inflater) inflater.free();
  }
}

onmessage = (ev) => {
  if (ev.data.type === 'start') run(ev.data.file, ev.data.port);
};
