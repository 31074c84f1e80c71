// CPU-time benchmark of the page's wasm Analyzer under Node's V8 (the engine Chromium uses),
// for a load-independent comparison with native: process CPU seconds, not wall time.
// Usage: node tests/browser/cpu-bench.mjs FILE [RUNS]
import { openSync, readSync, closeSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { default: init, Analyzer } = await import(path.join(root, 'www/pkg/flinch_wasm.js'));
const wasm = await init({ module_or_path: readFileSync(path.join(root, 'www/pkg/flinch_wasm_bg.wasm')) });

const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 3);
const size = statSync(file).size;
const buf = Buffer.alloc(2 << 20);
for (let r = 0; r < runs; r++) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const a = new Analyzer(JSON.stringify({ kind: 'auto', limits: 'page', source: path.basename(file) }));
  const fd = openSync(file, 'r');
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, null);
    if (!n) break;
    a.write(buf.subarray(0, n));
  }
  closeSync(fd);
  const json = a.end();
  a.free();
  const cpu = process.cpuUsage(cpu0);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpuS = (cpu.user + cpu.system) / 1e6;
  console.log(JSON.stringify({ run: r, file: path.basename(file), bytes: size, cpu_s: cpuS, wall_s: wall,
    mb_per_cpu_s: size / 1e6 / cpuS, wasm_memory_bytes: wasm.memory.buffer.byteLength, json_bytes: json.length }));
}
