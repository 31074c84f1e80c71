// Deterministic generator of Kineto-like traces (.json.gz) for the browser tests and the browser
// benchmark. Random hex in `args` keeps the compression ratio low (~2.5x), so a >= 200 MB .json.gz
// is quick to make. Usage as a script: node gen.mjs OUT.json.gz MIN_GZ_MEGABYTES
import { createWriteStream, existsSync, renameSync, statSync } from 'node:fs';
import { createGzip, constants } from 'node:zlib';
import { once } from 'node:events';

const CATS = ['kernel', 'cpu_op', 'cuda_runtime', 'gpu_memcpy', 'user_annotation'];
const NAMES = ['aten::linear', 'aten::matmul', 'ampere_sgemm_128x64_tn', 'cudaLaunchKernel', 'Memcpy HtoD',
  'aten::layer_norm', 'void at::native::vectorized_elementwise_kernel<4>', 'ProfilerStep#"quoted"', 'optimizer.step',
  'nccl:all_reduce'];

/// SplitMix64 over BigInt is slow; a 32-bit xorshift is plenty for test data.
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
}

/// Writes a trace whose .json.gz is at least `minGzBytes` long. Resolves to {events, jsonBytes, gzBytes}.
/// `events` counts the X events written (all have a numeric dur).
export async function generateTrace(outPath, minGzBytes, seed = 42) {
  const next = rng(seed);
  const tmp = `${outPath}.tmp`;
  const gz = createGzip({ level: 1, memLevel: 9, chunkSize: 1 << 20 });
  const file = createWriteStream(tmp);
  gz.pipe(file);
  let gzBytes = 0;
  gz.on('data', (d) => { gzBytes += d.length; });
  let jsonBytes = 0;
  const write = async (s) => {
    jsonBytes += Buffer.byteLength(s);
    if (!gz.write(s)) await once(gz, 'drain');
  };
  await write('{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"Fake GPU"}],\n"traceEvents":[\n');
  let events = 0;
  // ts = tsUs + tsFrac/1000 µs, kept in two Numbers (an f64 cannot hold the epoch value in ns).
  let tsUs = 1712195495406752;
  let tsFrac = 800;
  const hex = () => next().toString(16).padStart(8, '0');
  const hex128 = () => hex() + hex() + hex() + hex() + hex() + hex() + hex() + hex() + hex() + hex() + hex() + hex() +
    hex() + hex() + hex() + hex();
  while (gzBytes < minGzBytes) {
    let batch = '';
    for (let i = 0; i < 2000; i++) {
      const cat = CATS[next() % CATS.length];
      const name = NAMES[next() % NAMES.length];
      tsFrac += next() % 50_000;
      tsUs += Math.floor(tsFrac / 1000);
      tsFrac %= 1000;
      const ts = `${tsUs}.${String(tsFrac).padStart(3, '0')}`;
      const durNs = next() % 2_000_000;
      const dur = `${Math.floor(durNs / 1000)}.${String(durNs % 1000).padStart(3, '0')}`;
      batch += `${events ? ',' : ''}\n  {"ph": "X", "cat": "${cat}", "name": "${name.replace(/"/g, '\\"')}", ` +
        `"pid": ${next() % 4}, "tid": ${next() % 8}, "ts": ${ts}, "dur": ${dur},\n` +
        `   "args": {"External id": ${next() % 100000}, "correlation": "${hex()}${hex()}${hex()}${hex()}",\n` +
        `            "stack": "${hex128()}"}}`;
      events++;
    }
    await write(batch);
    // Let the compressor catch up so that gzBytes reflects what was written.
    await new Promise((r) => gz.flush(constants.Z_SYNC_FLUSH, r));
  }
  await write('\n],\n"traceName": "generated"}\n');
  gz.end();
  await once(file, 'close');
  renameSync(tmp, outPath);
  return { events, jsonBytes, gzBytes: statSync(outPath).size };
}

/// Generates once: reuses `outPath` when it exists with its metadata next to it.
export async function cachedTrace(outPath, minGzBytes) {
  const meta = `${outPath}.meta.json`;
  if (existsSync(outPath) && existsSync(meta)) {
    const m = JSON.parse((await import('node:fs')).readFileSync(meta, 'utf8'));
    if (m.gzBytes === statSync(outPath).size && m.minGzBytes === minGzBytes) return m;
  }
  const m = { ...(await generateTrace(outPath, minGzBytes)), minGzBytes };
  (await import('node:fs')).writeFileSync(meta, JSON.stringify(m));
  return m;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const [out, mb] = process.argv.slice(2);
  const t0 = Date.now();
  const m = await generateTrace(out, Number(mb) * 1e6);
  console.log(JSON.stringify({ ...m, seconds: (Date.now() - t0) / 1000 }));
}
