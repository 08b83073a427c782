/**
 * End-to-end tests of the inspector page in a real browser: Debian's
 * Chromium driven by playwright-core (never a downloaded browser), the page
 * built by Vite (or the `dist/` that `pnpm test` has just built) and served
 * from an ephemeral localhost port.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = path.resolve(APP_DIR, '../../packages/conformance/fixtures');
const GOLDEN = path.join(FIXTURES, 'golden-6330.llmcp');
const CHROMIUM = process.env.LLMCP_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
};

const work = mkdtempSync(path.join(tmpdir(), 'llmcp-inspector-e2e-'));
let root = '';
let server: Server;
let origin = '';
let browser: Browser;
let page: Page;
const requests: string[] = [];

/** A loss.jsonl in the trainer's record layout: a falling loss over 60 steps. */
function writeLossLog(): string {
  const lines: string[] = [];
  for (let step = 1; step <= 60; step++) {
    const loss = 1.6 * Math.exp(-step / 25) + 0.4 + 0.03 * Math.sin(step);
    lines.push(JSON.stringify({ step, loss, learningRate: 0.01, gradientNorm: 0.5, clipped: false, tokens: 64 }));
  }
  const file = path.join(work, 'loss.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

function writeJob(): string {
  const file = path.join(work, 'job.json');
  const evaluations = [0, 10, 20, 30, 40, 50, 60].map((step) => ({ step, validationLoss: 1.7 * Math.exp(-step / 30) + 0.5, trainingLoss: null }));
  writeFileSync(file, JSON.stringify({ format: 'llmcp-job/1', step: 60, evaluations }));
  return file;
}

beforeAll(async () => {
  const dist = path.join(APP_DIR, 'dist');
  if (process.env.LLMCP_BUILT === '1' && existsSync(path.join(dist, 'index.html'))) {
    root = dist;
  } else {
    root = path.join(work, 'dist');
    await build({ root: APP_DIR, configFile: path.join(APP_DIR, 'vite.config.ts'), logLevel: 'warn', build: { outDir: root, emptyOutDir: true } });
  }
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const file = path.join(root, url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname));
    if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('request', (r) => requests.push(r.url()));
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  rmSync(work, { recursive: true, force: true });
});

/** Loads the page fresh and opens files through the file picker. */
async function openFiles(...files: string[]): Promise<void> {
  await page.goto(`${origin}/`);
  await page.setInputFiles('#file-input', files);
  await page.waitForSelector('body[data-ready]');
}

describe('inspector page', () => {
  it('opens the golden file: verdict valid, 38 descriptor rows from [2869,2870) to 6330', async () => {
    await openFiles(GOLDEN);
    const cp = page.locator('.checkpoint');
    await expect(cp.count()).resolves.toBe(1);
    const verdict = await cp.locator('[data-role=verdict]').textContent();
    expect(verdict).toContain('VALID');
    expect(verdict).toContain('fnv1a64:2b8b6097eaed6a91');
    const rows = cp.locator('[data-role=descriptors] tbody tr');
    await expect(rows.count()).resolves.toBe(38);
    await expect(rows.nth(0).locator('td.range').textContent()).resolves.toBe('[2869,2870)');
    await expect(rows.nth(37).locator('td.range').textContent()).resolves.toBe('[6170,6330)');
    await expect(cp.locator('[data-role=descriptors] tbody tr.bad-row').count()).resolves.toBe(0);
    // Fixed header with annotated hex, checksum stored vs computed.
    await expect(cp.locator('.hex-field').first().textContent()).resolves.toBe('4c 4c 4d 43 50 33 35 00magic');
    await expect(cp.locator('[data-role=checksum]').textContent()).resolves.toBe('Checksum: stored fnv1a64:2b8b6097eaed6a91, computed fnv1a64:2b8b6097eaed6a91 — match');
    // Byte map: fixed header, variable header, descriptor table, one tokenizer block, 11 parameters, 22 moments.
    await expect(cp.locator('svg.byte-map rect.seg').count()).resolves.toBe(3 + 1 + 11 + 22);
    await expect(cp.locator('svg.byte-map rect.seg-unaccounted').count()).resolves.toBe(0);
    // Tokenizer pieces, configuration, per-tensor statistics.
    await expect(cp.locator('[data-role=tokenizer] tbody tr').count()).resolves.toBe(5);
    expect(await cp.locator('[data-role=config]').textContent()).toContain('0x9e3779b97f4a7c38');
    const stats = cp.locator('[data-role=stats] tbody tr');
    await expect(stats.count()).resolves.toBe(33);
    expect(await stats.nth(0).textContent()).toContain('token_embedding.weight');
    await expect(stats.nth(0).locator('svg.hist rect').count()).resolves.toBe(24);
  });

  it('opens a malformed file: shows the failing rule and marks the broken row', async () => {
    await openFiles(path.join(FIXTURES, 'malformed/offset-plus-one.llmcp'));
    const cp = page.locator('.checkpoint');
    expect(await cp.locator('[data-role=verdict]').textContent()).toContain('INVALID');
    await expect(cp.locator('[data-role=error-code]').textContent()).resolves.toBe('FORMAT_LAYOUT');
    // Everything that parsed is still shown, and the failing row is marked.
    await expect(cp.locator('[data-role=descriptors] tbody tr').count()).resolves.toBe(38);
    const failing = cp.locator('[data-role=descriptors] tbody tr.failing-row');
    await expect(failing.count()).resolves.toBe(1);
    await expect(failing.getAttribute('data-index')).resolves.toBe('1');
    expect(await failing.textContent()).toContain('starts at 2871, previous ended at 2870 ◀ FORMAT_LAYOUT');
    await expect(cp.locator('svg.byte-map line.fail-mark').count()).resolves.toBe(1);
  });

  it('opens a truncated header: shows what parsed and where parsing stopped', async () => {
    await openFiles(path.join(FIXTURES, 'malformed/header-cut-60.llmcp'));
    const cp = page.locator('.checkpoint');
    await expect(cp.locator('[data-role=error-code]').textContent()).resolves.toBe('FORMAT_TRUNCATED');
    expect(await cp.locator('[data-role=issues]').textContent()).toContain('Parsing stopped: FORMAT_TRUNCATED');
    expect(await cp.locator('[data-role=variable-header]').textContent()).toContain('tokenizer kind');
  });

  it('opens loss.jsonl and job.json: the loss and validation curves render', async () => {
    await openFiles(writeLossLog(), writeJob());
    const chart = page.locator('[data-role=loss-chart]');
    await chart.locator('canvas').waitFor();
    expect(await page.locator('[data-role=loss]').textContent()).toContain('loss.jsonl: 60 steps');
    expect(await page.locator('[data-role=loss]').textContent()).toContain('job.json: 7 validation evaluations');
    const shot = await chart.screenshot();
    writeFileSync(path.join(work, 'loss-chart.png'), shot);
    expect(shot.length).toBeGreaterThan(2000);
    // The canvas holds drawn series: blue (training) and red (validation) pixels.
    const colored = await chart.locator('canvas').evaluate((c: HTMLCanvasElement) => {
      const data = (c.getContext('2d') as CanvasRenderingContext2D).getImageData(0, 0, c.width, c.height).data;
      let blue = 0;
      let red = 0;
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b, a] = [data[i] as number, data[i + 1] as number, data[i + 2] as number, data[i + 3] as number];
        if (a > 0 && b > 150 && r < 120) blue += 1;
        if (a > 0 && r > 150 && g < 90 && b < 90) red += 1;
      }
      return { blue, red };
    });
    expect(colored.blue).toBeGreaterThan(200);
    expect(colored.red).toBeGreaterThan(50);
  });

  it('opens two checkpoints together: shows the diff', async () => {
    await openFiles(GOLDEN, path.join(FIXTURES, 'malformed/second-moment-negative-zero.llmcp'));
    await expect(page.locator('.checkpoint').count()).resolves.toBe(2);
    const diff = page.locator('[data-role=diff]');
    await expect(diff.locator('[data-role=bit-identical]').textContent()).resolves.toBe('The files differ.');
    const fields = await diff.locator('[data-role=diff-fields] tbody tr td:first-child').allTextContents();
    expect(fields).toEqual(['checksum']);
    const records = diff.locator('[data-role=diff-records] tbody tr');
    await expect(records.count()).resolves.toBe(1);
    expect(await records.first().textContent()).toMatch(/second-moment.*1 of \d+ differ.*0x8000000000000000/);
  });

  it('opens a file dropped on the page (drag and drop)', async () => {
    await page.goto(`${origin}/`);
    const bytes = Array.from(readFileSync(GOLDEN));
    await page.evaluate((data) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(data)], 'dropped.llmcp'));
      const zone = document.getElementById('open') as HTMLElement;
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, bytes);
    await page.waitForSelector('body[data-ready]');
    expect(await page.locator('.checkpoint h2').textContent()).toContain('dropped.llmcp');
    expect(await page.locator('[data-role=verdict]').textContent()).toContain('VALID');
  });

  it('made no request outside its own origin', () => {
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((u) => !u.startsWith(origin))).toEqual([]);
  });
});
