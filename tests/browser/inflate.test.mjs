// The page's wasm Inflater (core GzDecoder over miniz_oxide, built for wasm32 with the patch in
// vendor/README.md) against Node's zlib, in V8 without a browser: generated gzip files of several
// kinds (text, random bytes, long runs, matches reaching ~32 KiB back, every compression level,
// several members) fed whole, in random splits and 1 byte at a time near the start; then every
// corruption kind must be an error and every truncation a cut stream, never wrong output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync, gunzipSync } from 'node:zlib';
import { ROOT } from './harness.mjs';

const { default: init, Inflater } = await import(path.join(ROOT, 'www/pkg/flinch_wasm.js'));
const wasm = await init({ module_or_path: readFileSync(path.join(ROOT, 'www/pkg/flinch_wasm_bg.wasm')) });

/// A small deterministic PRNG (xorshift32).
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x % n;
  };
}

/// `len` bytes mixing JSON-like text, random bytes, runs, and blocks repeated ~32 000 bytes later.
function data(seed, len) {
  const r = rng(seed);
  const out = Buffer.alloc(len);
  const words = ['{"ph":"X",', '"ts":1712195495406752.8,', '"name":"kernel_', 'cpu_op', '},\n'].map((w) => Buffer.from(w));
  let i = 0;
  while (i < len) {
    const kind = r(4);
    const n = Math.min(len - i, 1 + r(kind === 3 ? 30000 : 3000));
    if (kind === 0) for (let k = 0; k < n; k++) out[i + k] = r(256);
    else if (kind === 1) out.fill(r(256), i, i + n);
    else if (kind === 2) {
      for (let k = 0; k < n;) { const w = words[r(words.length)]; const t = Math.min(w.length, n - k); w.copy(out, i + k, 0, t); k += t; }
    } else if (i >= 32000) out.copyWithin(i, i - 32000 + r(500), i - 32000 + r(500) + n);
    else for (let k = 0; k < n; k++) out[i + k] = 97 + r(3);
    i += n;
  }
  return out;
}

/// Decodes `gz` fed as `pieces`; returns {out, cut, error}.
function inflate(gz, pieceBytes) {
  const inf = new Inflater();
  const parts = [];
  try {
    for (let off = 0; off < gz.length;) {
      const n = pieceBytes(off);
      let rest = gz.subarray(off, Math.min(gz.length, off + n));
      off += rest.length;
      for (;;) {
        const k = inf.inflate(rest);
        rest = rest.subarray(inf.consumed());
        if (k) parts.push(Buffer.from(new Uint8Array(wasm.memory.buffer, inf.outputPtr(), k)));
        if (k < inf.outputCapacity() && rest.length === 0) break;
      }
    }
    const cut = inf.end();
    return { out: Buffer.concat(parts), cut: cut ?? null, error: null };
  } catch (e) {
    return { out: Buffer.concat(parts), cut: null, error: String(e.message || e) };
  } finally {
    inf.free();
  }
}

const cases = [
  { name: 'text, level 6', members: [[1, 3_000_000, 6]] },
  { name: 'every level', members: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((l) => [10 + l, 200_000, l]) },
  { name: 'empty and tiny members', members: [[30, 0, 6], [31, 1, 1], [32, 70_000, 9], [33, 0, 0]] },
];

for (const c of cases) {
  const members = c.members.map(([seed, len, level]) => gzipSync(data(seed, len), { level }));
  const gz = Buffer.concat(members);
  const want = gunzipSync(gz);
  test(`wasm Inflater equals zlib: ${c.name}`, () => {
    const r = rng(gz.length);
    const splits = [
      () => gz.length,
      () => 1 + r(70_000),
      () => 1 + r(300),
      (off) => (off < 5000 ? 1 : 65_536),
    ];
    for (const s of splits) {
      const got = inflate(gz, s);
      assert.equal(got.error, null);
      assert.equal(got.cut, null);
      assert.ok(got.out.equals(want), `${c.name}: output differs (${got.out.length} vs ${want.length} bytes)`);
    }
  });
}

test('wasm Inflater: truncations are cut streams with a prefix of the data, corruptions are errors', () => {
  const gz = gzipSync(data(40, 400_000), { level: 6 });
  const want = gunzipSync(gz);
  const r = rng(41);
  for (let i = 0; i < 40; i++) {
    const at = 1 + r(gz.length - 1);
    const got = inflate(gz.subarray(0, at), () => 1 + r(20_000));
    assert.equal(got.error, null, `cut at ${at}`);
    assert.equal(got.cut, at, 'a cut stream reports the compressed offset where it ended');
    assert.ok(want.subarray(0, got.out.length).equals(got.out), `cut at ${at}: not a prefix`);
  }
  let errors = 0;
  for (let i = 0; i < 40; i++) {
    const bad = Buffer.from(gz);
    const at = 10 + r(gz.length - 10);
    bad[at] ^= 1 << r(8);
    const got = inflate(bad, () => 1 + r(20_000));
    // A flipped bit is caught (corrupt deflate, CRC32 or ISIZE mismatch) or, rarely, decodes
    // to a different stream that then fails its CRC: never output that passes as the data.
    assert.ok(got.error !== null || got.cut !== null, `flip at ${at} went unnoticed`);
    if (got.error) {
      assert.match(got.error, /(corrupt deflate data|crc32 mismatch|isize mismatch)[^]*byte \d+/);
      errors++;
    }
  }
  assert.ok(errors > 0);
});
