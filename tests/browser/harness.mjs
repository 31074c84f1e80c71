// Shared set-up for the browser tests: the native server (`flinch-trace web --port 0`), the system
// Chromium through playwright-core (never a downloaded browser), request recording, and helpers to
// feed files to the page through the file input or a synthetic drop.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = path.join(ROOT, 'tests/artifacts');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

/// The native binary: $FLINCH_TRACE, else target/debug (built by `cargo test --workspace`), else release.
export function nativeBinary() {
  if (process.env.FLINCH_TRACE) return process.env.FLINCH_TRACE;
  const targetDir = process.env.CARGO_TARGET_DIR || path.join(ROOT, 'target');
  for (const profile of ['debug', 'release']) {
    const p = path.join(targetDir, profile, 'flinch-trace');
    if (existsSync(p)) return p;
  }
  throw new Error('flinch-trace binary not found: run `cargo build -p flinch-trace` first');
}

/// Runs the native CLI in `cwd` and returns {status, stdout, stderr}.
export function native(args, cwd) {
  try {
    const stdout = execFileSync(nativeBinary(), args, { cwd, encoding: 'utf8', maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
    return { status: 0, stdout, stderr: '' };
  } catch (e) {
    return { status: e.status, stdout: e.stdout || '', stderr: e.stderr || '' };
  }
}

/// Starts `flinch-trace web --port 0 --dir www` (or another copy of the page, `dir`) and resolves
/// to {url, stop()}.
export async function startServer(dir = path.join(ROOT, 'www')) {
  if (!existsSync(path.join(dir, 'pkg/flinch_wasm_bg.wasm'))) {
    throw new Error(`${dir}/pkg is missing: run scripts/dev/build-web.sh first`);
  }
  const proc = spawn(nativeBinary(), ['web', '--port', '0', '--dir', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/at (http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`flinch-trace web exited with ${code}: ${out}`)));
  });
  return { url, stop: () => proc.kill('SIGTERM') };
}

/// Launches Chromium with a fresh profile. Every request any page or worker makes is recorded
/// in `requests`; requests leaving `origin` are recorded and aborted.
export async function startBrowser(origin) {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'flinch-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
  });
  const requests = [];
  const foreign = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    requests.push(url);
    if (!url.startsWith(origin)) {
      foreign.push(url);
      return route.abort();
    }
    return route.continue();
  });
  context.on('request', (req) => {
    if (!requests.includes(req.url())) requests.push(req.url());
    if (!req.url().startsWith(origin) && !foreign.includes(req.url())) foreign.push(req.url());
  });
  const close = async () => {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  };
  return { context, requests, foreign, close };
}

/// A test file's browser set-up, as node:test hooks: before its tests, the server and Chromium
/// start (and, with `{ page: true }`, the page opens once); after them, both stop. `assign` gets
/// {server, browser, page} once they are up, so the file keeps them in its own variables.
export function browserSession(assign, { page = false } = {}) {
  let server;
  let browser;
  before(async () => {
    server = await startServer();
    browser = await startBrowser(server.url.replace(/\/$/, ''));
    const opened = page ? await openPage(browser.context, server.url) : undefined;
    assign({ server, browser, page: opened });
  });
  after(async () => {
    await browser?.close();
    server?.stop();
  });
}

/// Opens the page and waits until the analyzer is loaded. Collects console errors in page.errors.
export async function openPage(context, url) {
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
  });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 30_000 });
  return page;
}

/// Waits for the analysis to end; returns the final data-state ("done" or "error").
export async function waitFinished(page, timeout = 60_000) {
  await page.waitForSelector('body[data-state="done"], body[data-state="error"]', { timeout });
  return page.evaluate(() => document.body.dataset.state);
}

/// Chooses `file` through the page's file input.
export async function chooseFile(page, file) {
  await page.setInputFiles('#file-input', file);
}

/// Drops `file` on the drop zone as a user would: a File in a DataTransfer, in a `drop` event.
export async function dropFile(page, file) {
  const bytes = readFileSync(file).toString('base64');
  await page.evaluate(
    ({ name, bytes }) => {
      const raw = Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([raw], name));
      const zone = document.querySelector('#drop-zone');
      for (const type of ['dragenter', 'dragover', 'drop']) {
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    },
    { name: path.basename(file), bytes },
  );
}

/// The page's result JSON, parsed.
export async function resultJson(page) {
  return JSON.parse(await page.textContent('#result-json'));
}

export function artifactPath(name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  return path.join(ARTIFACTS, name);
}
