// A runs folder on the page: for every case under tests/summarize/cases, choosing the folder (the
// directory input) puts into #result-json exactly the bytes `flinch-trace summarize --runs <case>`
// writes, run beside the folder; a dropped folder (walked through its FileSystemEntry tree) too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ROOT, native, waitFinished, artifactPath, browserSession } from './harness.mjs';

const CASES = path.join(ROOT, 'tests/summarize/cases');
const scratch = mkdtempSync(path.join(tmpdir(), 'flinch-runs-'));

let server;
let browser;
let page;

browserSession((s) => ({ server, browser, page } = s), { page: true });

/// What native writes and prints for the case folder `name`.
function nativeSummary(name) {
  const out = path.join(scratch, `${name}.json`);
  const nat = native(['summarize', '--runs', name, '--out', out], CASES);
  assert.equal(nat.status, 0, nat.stderr);
  return { json: readFileSync(out, 'utf8'), line: nat.stdout.trim() };
}

/// Every file under `dir`, as paths relative to `base`.
function filesUnder(dir, base) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p, base) : [path.relative(base, p)];
  });
}

const cases = readdirSync(CASES).filter((n) => statSync(path.join(CASES, n)).isDirectory()).sort();

test('there are runs-folder cases with runs and traces', () => {
  assert.ok(cases.includes('basic') && cases.includes('traces') && cases.length >= 7, cases.join(', '));
});

for (const name of cases) {
  test(`a chosen runs folder equals native summarize byte for byte: ${name}`, async () => {
    const want = nativeSummary(name);
    await page.setInputFiles('#runs-input', path.join(CASES, name));
    assert.equal(await page.textContent('#job-name'), name);
    const state = await waitFinished(page);
    assert.equal(state, 'done', `page error: ${await page.textContent('#error')}`);
    assert.equal(await page.textContent('#result-json'), want.json);
    assert.match(await page.textContent('#runs-overview'), new RegExp(`^${want.line} \\(traces requested\\)\\.$`));
    const runs = Object.keys(JSON.parse(want.json).telemetry);
    assert.equal(await page.locator('#runs-table tbody tr').count(), runs.length);
  });
}

test('a dropped runs folder (entries walked as the browser gives them) equals native summarize', async () => {
  const name = 'traces';
  const want = nativeSummary(name);
  const files = filesUnder(path.join(CASES, name), CASES).map((rel) => ({
    rel, bytes: readFileSync(path.join(CASES, rel)).toString('base64'),
  }));
  // A DataTransfer cannot carry a folder when made by a script, so the drop event gets an object
  // with the same shape as the browser's: items[0].webkitGetAsEntry() -> a directory entry whose
  // reader gives its entries in batches, then an empty batch.
  await page.evaluate(({ name, files }) => {
    const dir = (fullPath) => ({ isDirectory: true, isFile: false, name: fullPath.split('/').pop(), fullPath, children: [] });
    const root = dir(`/${name}`);
    const dirs = new Map([[root.fullPath, root]]);
    const parent = (p) => {
      if (!dirs.has(p)) {
        const d = dir(p);
        dirs.set(p, d);
        parent(p.slice(0, p.lastIndexOf('/'))).children.push(d);
      }
      return dirs.get(p);
    };
    for (const { rel, bytes } of files) {
      const raw = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
      const fullPath = `/${rel}`;
      const file = new File([raw], fullPath.split('/').pop());
      parent(fullPath.slice(0, fullPath.lastIndexOf('/'))).children.push({
        isDirectory: false, isFile: true, name: file.name, fullPath, file: (ok) => setTimeout(() => ok(file)),
      });
    }
    for (const d of dirs.values()) {
      d.createReader = () => {
        let given = 0;
        return {
          readEntries: (ok) => setTimeout(() => {
            const batch = d.children.slice(given, given + 2);
            given += batch.length;
            ok(batch);
          }),
        };
      };
    }
    const ev = new Event('drop', { bubbles: true, cancelable: true });
    Object.defineProperty(ev, 'dataTransfer', { value: { items: [{ webkitGetAsEntry: () => root }], files: [] } });
    document.querySelector('#drop-zone').dispatchEvent(ev);
  }, { name, files });
  const state = await waitFinished(page);
  assert.equal(state, 'done', `page error: ${await page.textContent('#error')}`);
  assert.equal(await page.textContent('#job-name'), name);
  assert.equal(await page.textContent('#result-json'), want.json);
  assert.equal(await page.locator('#runs-traces tbody tr').count(), JSON.parse(want.json).traces.length);
  await page.screenshot({ path: artifactPath('page-runs.png'), fullPage: true });
});
